"""The real run's process: a warm runner, under bubblewrap, behind the egress fence.

``flows.real_run`` decides what a run may have (the plan: allowed variables and hosts); this module
runs it. ``RealRunner`` keeps one process warm (``worker/_runner.py``: lfx imported once, a
confined child forked per run, see there), starts the run's egress proxy (``egress.EgressProxy``,
on a Unix socket in a *fence* directory that is bound into the sandbox), hands the run over and
returns the capped, redacted answer. Real runs and validations never share a process: the
validation sandbox (``zygote.ZygoteProcess`` under ``client.SandboxValidator``) has no network and
no variables; this runner has the proxy and only the variables the user allowed, per run.

A run's variables go on the runner's stdin (a command line is visible to ``ps``) and are read by
the run's own child, never by the runner; what comes back has them redacted (also reversed,
split, recased, rot13'd, hex or base64) and is capped. Nothing here imports lfx.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lfassist_jupyter import settings
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.redaction import redact_text
from lfassist_jupyter.sandbox import _cgroups, _isolation
from lfassist_jupyter.sandbox.answers import RealRun, Refused
from lfassist_jupyter.sandbox.egress import Allowed, EgressProxy
from lfassist_jupyter.sandbox.lfx_check import LFX_INSTALL
from lfassist_jupyter.sandbox.worker._channel import descendants
from lfassist_jupyter.sandbox.zygote import (
    STARTUP_TIMEOUT,
    WORKER_DIR,
    WorkerDiedError,
    WorkerTimeoutError,
    ZygoteProcess,
    scrubbed_env,
)

RUNNER = WORKER_DIR / "_runner.py"  # beside the validation worker, bound with it
RUN_PROCESSES = 512
"""How many processes and threads one real run may have at once, all of them together."""
MAX_BODY_BYTES = 64 * 1024 * 1024  # the runner's own cap on a run's request
SANDBOX_UID = 1000
"""The user id inside a real run's bubblewrap when the kernel runs as root: a run's child makes a
user namespace of its own, which cannot map the sandbox's root without a capability it lacks."""


@dataclass
class RunPlan:
    """What a real run of a flow would be given and reach, shown before it runs.

    ``flows.real_run.run_plan`` makes it from the flow and what the user allowed; this module's runner
    takes it: the one value that crosses from the deciding side to the running side."""

    variables: list[tuple[str, str]] = field(default_factory=list)
    """``(variable, "Node.field")`` the flow's key fields name."""
    hosts: list[Allowed] = field(default_factory=list)
    """The allow-list: provider hosts, configured base URLs, yours."""
    config: dict[str, str] = field(default_factory=dict)
    """Non-secret settings passed along (``OPENAI_BASE_URL``, ``OLLAMA_HOST``) for the flow's providers."""
    notes: list[str] = field(default_factory=list)
    """Fields ignored, hosts the flow names that are not allowed, providers with no known host."""
    allowed: dict[str, str] = field(default_factory=dict, repr=False)
    """The wanted variables the user allowed, with their values (never shown)."""
    missing: list[str] = field(default_factory=list)
    """Wanted variables not allowed (or allowed but unset), as ``NAME (Node.field)``."""
    kernel_ports: frozenset[int] = frozenset()
    """The Jupyter kernel's own ports (its connection file): never reached unless named with their port."""

    @property
    def ready(self) -> bool:
        return not self.missing

    def summary(self) -> str:
        wants = ", ".join(f"{v} ({where})" for v, where in self.variables) or "none"
        reach = ", ".join(f"{h} ({h.why})" for h in self.hosts) or "nothing"
        return f"variables wanted: {wants}; network: {reach}"

    def __str__(self) -> str:
        lines = [f"Variables the flow wants: {', '.join(f'{v} ({w})' for v, w in self.variables) or 'none'}"]
        if self.variables:
            lines.append(f"  allowed: {', '.join(sorted(self.allowed)) or 'none'}")
        lines.append("Hosts it may reach: " + (", ".join(f"{h} ({h.why})" for h in self.hosts) or "none"))
        lines += [f"Note: {n}" for n in self.notes]
        if self.missing:
            lines.append(f"Not allowed yet: {', '.join(self.missing)}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


class RealRunner(ZygoteProcess):
    """The warm real runner: one process that imported lfx, a confined child forked per run.

    Started on the first real run (or by ``warm_up``), kept until the kernel exits. Each run gets
    a child forked ahead of it, in namespaces of its own (a loopback whose one way out is this
    run's proxy; a scratch tmpfs of ``scratch_mb``), under Landlock (it reads the interpreter and
    the system, writes its scratch), with only the run's allowed variables; see
    ``worker/_runner.py``. Runs are one at a time.

    Each run is bounded as a whole where the machine offers a cgroup (``_cgroups``): its
    processes (threads count) and their memory together, and ended at once (frozen, then killed);
    where not, per process (RLIMIT_AS) and by RLIMIT_NPROC inside the run's user namespace. The
    run's answer says which (``RealRun.isolation``).

    Args:
        python: the interpreter (default: ``LFASSIST_VALIDATOR_PYTHON``, else this one).
        memory_mb: the address-space limit of the runner and of each process of a run (default:
            ``LFASSIST_VALIDATOR_MEMORY_MB``, as for a validation).
        scratch_mb: the size of a run's scratch space (default: an eighth of ``memory_mb``, as for
            a validation).
        run_memory_mb: the memory of all of a run's processes together (default: ``memory_mb``).
        processes: how many processes and threads a run may have at once (default: 512).
    """

    def __init__(
        self,
        python: str | None = None,
        *,
        memory_mb: int | None = None,
        scratch_mb: int | None = None,
        run_memory_mb: int | None = None,
        processes: int = RUN_PROCESSES,
    ):
        super().__init__(python, memory_mb=memory_mb or settings.read("validator_memory_mb"), scratch_mb=scratch_mb)
        self._fence: str | None = None
        self.run_memory_mb = int(run_memory_mb or self.memory_mb)
        self.processes = max(int(processes), 16)
        self.bounds, self.bounds_reason = _cgroups.probe()
        self._spare: dict[str, Any] | None = None  # the next run's processes, as the runner announced them

    def _spawn(self) -> None:
        self._cleanup_dir()
        mode, reason = _isolation.probe(self.python, self.sandbox_mode)
        self.isolation, self.isolation_reason = mode, reason
        # Only this directory of the host is shared with the runner: it holds the proxy's socket.
        self._fence = os.path.realpath(tempfile.mkdtemp(prefix="lfassist-fence-"))
        config: dict[str, Any] = {
            "memory_mb": self.memory_mb,
            "scratch_mb": self.scratch_mb,
            "processes": self.processes,
            "bound_modules": _isolation.bound_modules(),
            "read": list(_isolation.interpreter_paths(self.python)),
        }
        argv = ["-I", "-u", str(RUNNER)]
        if mode == "full":
            env = scrubbed_env(_isolation.SANDBOX_TMP)
            env["HOME"] = _isolation.SANDBOX_HOME
            config["scratch_text"] = f"the sandbox's /tmp of {self.scratch_mb} MB"
            config["root"] = _isolation.SANDBOX_TMP
            cmd = _isolation.bwrap_command(
                _isolation.bwrap_binary() or "bwrap",
                self.python,
                [*argv, json.dumps(config)],
                env=env,
                extra_ro=(*_isolation.worker_files(), self._fence),
                scratch_mb=self.scratch_mb,
                uid=os.getuid() or SANDBOX_UID,
            )
            cwd, popen_env = None, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        else:
            self._dir = os.path.realpath(tempfile.mkdtemp(prefix="lfassist-realrun-"))
            config["root"] = self._dir
            cmd = [self.python, *argv, json.dumps(config)]
            cwd, popen_env = self._dir, scrubbed_env(self._dir)
        self._spare = None
        self._launch(cmd, cwd, popen_env)
        if self.bounds is not None:
            self.bounds.make_ahead(self.run_memory_mb, self.processes)  # the first run's group

    def warm(self) -> None:
        """Start the runner in the background unless it runs; never waits (a run in progress holds the
        lock for its whole length, and the runner is warm then anyway)."""
        if self._lock.acquire(blocking=False):
            try:
                self.start()
            finally:
                self._lock.release()

    def _kill(self) -> None:
        """Also every process a run left (reduced isolation: no PID namespace takes them down)."""
        proc = self._proc
        if proc is not None and sys.platform.startswith("linux"):
            for pid, _ in descendants(proc.pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        super()._kill()

    def close(self) -> None:
        super().close()
        if self.bounds is not None:
            self.bounds.close()

    def _cleanup_dir(self) -> None:
        super()._cleanup_dir()
        if self._fence:
            shutil.rmtree(self._fence, ignore_errors=True)
            self._fence = None

    def run(self, flow: dict[str, Any], input_text: str, plan: RunPlan, timeout: float) -> RealRun:
        """Run ``flow`` on ``input_text`` with only ``plan``'s variables and hosts; never raises for the
        flow's doing (a failing flow is a failed ``RealRun``), ``ConfigError`` when the fence cannot start."""
        variables = plan.allowed
        started = time.perf_counter()
        with self._lock:
            try:
                self._wait_ready()
                spare = self._take_spare(time.monotonic() + STARTUP_TIMEOUT)
            except (WorkerDiedError, WorkerTimeoutError) as exc:
                why = self._fatal or str(exc) or "it did not start in time"
                if not self._fatal:
                    self.restart()
                return self._result({"error": _unavailable(self.python, why)}, plan, None, started)
            assert self._fence is not None
            self._next_id += 1
            rid = self._next_id
            socket_path = os.path.join(self._fence, f"run-{rid}.sock")
            try:
                proxy = EgressProxy(plan.hosts, socket_path, kernel_ports=plan.kernel_ports).start()
            except OSError as exc:  # e.g. a TMPDIR too long for a Unix socket's path
                raise ConfigError(f"Not run: the network fence could not start ({exc.strerror or exc}).") from exc
            env = {**plan.config, **variables}
            body = json.dumps({"flow": flow, "input": input_text, "env": env, "proxy": socket_path}).encode()
            if len(body) > MAX_BODY_BYTES:
                proxy.stop()
                raise ConfigError(f"Not run: the flow is larger than a real run takes ({MAX_BODY_BYTES >> 20} MB).")
            header = json.dumps({"id": rid, "timeout": timeout, "size": len(body)}).encode() + b"\n"
            # The run's first two processes exist, confined and waiting: into its group before it starts.
            group, unbounded = self._group(spare)
            try:
                verdict = self._exchange(header + body, rid, timeout)
            except BaseException:  # KeyboardInterrupt (the stop button): nothing of the run goes on
                self.restart()
                raise
            finally:
                proxy.stop()
                del body, env
                reached = group.end() if group is not None else []  # frozen, killed, removed
                if self.bounds is not None:
                    self.bounds.make_ahead(self.run_memory_mb, self.processes)  # the next run's
            if verdict.get("desync"):
                self.restart()  # the runner could not tell where the next request starts
        bounds = self._bounds_text(group, unbounded, verdict.get("confinement"), reached)
        return self._result(verdict, plan, proxy, started, timeout=timeout, bounds=bounds)

    def _take_spare(self, deadline: float) -> dict[str, Any]:
        """The next run's processes, as the runner announced them once they were confined and waiting."""
        while self._spare is None:
            msg = self._readline(deadline)
            if msg.get("op") == "spare":
                self._spare = msg
        spare, self._spare = self._spare, None
        return spare

    def _group(self, spare: dict[str, Any]) -> tuple[_cgroups.RunGroup | None, str]:
        """A cgroup with the run's two processes in it (its spare and its init), or why there is none."""
        if self.bounds is None:
            return None, f"no cgroup here: {self.bounds_reason}"
        wanted = [spare.get("pid"), spare.get("init")]
        if not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in wanted):
            return None, "the runner did not say which processes the run has"
        pids: list[int] = wanted  # type: ignore[assignment]
        if self.isolation == "full" and self._proc is not None:  # bubblewrap's PID namespace numbers them
            found = _cgroups.host_pids(self._proc.pid, set(pids))
            if len(found) != len(pids):
                return None, "the run's processes were not found"
            pids = [found[p] for p in pids]
        group = None
        try:
            group = self.bounds.take(self.run_memory_mb, self.processes)
            group.add(pids)
        except OSError as exc:
            if group is not None:
                group.end()
            return None, f"its cgroup could not be made ({exc.strerror or exc})"
        return group, ""

    def _bounds_text(
        self, group: _cgroups.RunGroup | None, unbounded: str, confinement: Any, reached: list[str]
    ) -> str:
        """How the run was bounded, in words (the run's answer says it)."""
        if group is not None and self.bounds is not None:
            text = f"bounded as a whole ({self.bounds.text}): {self.processes} processes and threads, "
            text += f"{self.run_memory_mb} MB"
        else:
            nproc = confinement.get("nproc") if isinstance(confinement, dict) else None
            text = f"bounded per process only: {self.memory_mb} MB each, "
            if isinstance(nproc, int) and nproc > 0:
                text += f"{nproc} processes and threads in its user namespace ({unbounded})"
            elif nproc == 0:  # set in its user namespace, where the kernel does not apply it to root
                text += f"processes not bounded: the kernel exempts the root user ({unbounded})"
            else:
                text += f"processes not bounded ({unbounded})"
        return "; ".join([text, *reached])

    def _exchange(self, data: bytes, rid: int, timeout: float) -> dict[str, Any]:
        """Send one run (header and body, from a thread: a body larger than the pipe is read by the
        run's child while we wait) and read the runner's verdict on it."""
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin

        def write() -> None:
            with contextlib.suppress(OSError, ValueError):
                stdin.write(data)
                stdin.flush()

        writer = threading.Thread(target=write, name="lfassist-real-run-request", daemon=True)
        writer.start()
        deadline = time.monotonic() + timeout + 15  # the runner stops the run at ``timeout``
        try:
            while True:
                answer = self._readline(deadline)
                if answer.get("op") == "spare":  # the next run's, early
                    self._spare = answer
                elif answer.get("id") == rid or answer.get("id") is None:
                    return answer
        except WorkerTimeoutError:
            self.restart()
            return {"status": "timeout"}
        except WorkerDiedError as exc:
            self.restart()
            return {"status": "crashed", "detail": f"the runner stopped ({exc})"}
        finally:
            writer.join(5)

    def _result(
        self,
        verdict: dict[str, Any],
        plan: RunPlan,
        proxy: EgressProxy | None,
        started: float,
        *,
        timeout: float = 0.0,
        bounds: str = "",
    ) -> RealRun:
        """The runner's verdict as a ``RealRun``: every text redacted (the run's own variables too) and capped."""
        variables = plan.allowed

        def clean(text: Any) -> str:
            return redact_text(str(text or ""), extra=tuple(variables.values()))[:20_000]

        status = verdict.get("status")
        answer = verdict.get("answer") if status == "ok" and isinstance(verdict.get("answer"), dict) else None
        if answer is not None:
            answered: dict[str, Any] = {
                "ok": answer.get("ok") is True,
                "text": clean(answer.get("text")),
                "component": clean(answer.get("component")) or None,
                "error": clean(answer.get("error")) or None,
            }
        elif status == "timeout":
            answered = {"error": f"the run did not finish within {timeout:g} s and was stopped."}
        elif "error" in verdict:
            answered = {"error": clean(verdict["error"])}
        else:
            last = clean(verdict.get("log")).strip().splitlines()[-1:] or [clean(verdict.get("detail")) or str(status)]
            answered = {"error": f"the run ended without an answer ({last[0][:300]})."}
        confinement = verdict.get("confinement") if isinstance(verdict.get("confinement"), dict) else {}
        where = dict(
            variables=sorted(variables),
            hosts=[str(h) for h in plan.hosts],
            refused=[Refused.model_validate({**r, "host": clean(r["host"])}) for r in (proxy.refused if proxy else [])],
            isolation=self._isolation_text(confinement, bounds),
            seconds=time.perf_counter() - started,
        )
        if answered.get("ok"):
            return RealRun(**answered, **where)
        return RealRun.failed(answered.get("error") or "the run failed.", component=answered.get("component"), **where)

    def _isolation_text(self, confinement: dict[str, Any], bounds: str = "") -> str:
        """How the run was isolated, as the run's init found it before the run (the flow cannot forge
        it), and how it was bounded."""
        fenced = self.isolation == "full" or confinement.get("netns") is True
        parts = ["network through the allow-list only" if fenced else "the network is NOT fenced"]
        scratch = confinement.get("scratch")
        if isinstance(scratch, str) and scratch:
            parts.append(f"scratch: {scratch[:80]}")
        if not confinement.get("landlock"):
            parts.append("no Landlock: it can read what you can")
        if confinement and not confinement.get("seccomp"):
            parts.append("no seccomp filter: it can reach other processes' priorities, limits and IPC")
        if confinement and not confinement.get("pidns"):
            parts.append("no PID namespace of its own")
        if bounds:
            parts.append(bounds)
        if self.isolation == "full":
            return f"bubblewrap ({'; '.join(parts)})"
        return f"process only ({self.isolation_reason}; {'; '.join(parts)})"


def _unavailable(python: str, why: str) -> str:
    return (
        f"the real runner could not start: {redact_text(why)[:500]}. It needs lfx in {python} "
        f"(`{LFX_INSTALL}`, or point LFASSIST_VALIDATOR_PYTHON at an environment that has it)."
    )


_runners: dict[tuple[str, str], RealRunner] = {}
_runners_lock = threading.Lock()


def real_runner() -> RealRunner:
    """The kernel's warm real runner for the configured interpreter and isolation (one each)."""
    key = (settings.read("validator_python") or sys.executable, settings.read("sandbox"))
    with _runners_lock:
        runner = _runners.get(key)
        if runner is None:
            runner = _runners[key] = RealRunner(key[0])
        return runner


def warm_up() -> RealRunner:
    """Start the real runner now (in the background), so the first real run does not pay lfx's import:
    what the panel does when it shows a real run's plan."""
    runner = real_runner()
    runner.warm()
    return runner


def run(flow: dict[str, Any], input_text: str, plan: RunPlan, timeout: float) -> RealRun:
    """Run the prepared ``flow`` in the warm runner with only ``plan``'s variables and hosts.

    The caller (``flows.real_run.run_flow_for_real``) has loaded, validated and planned the flow."""
    return real_runner().run(flow, input_text, plan, timeout)


__all__ = ["RealRunner", "RunPlan", "real_runner", "run", "warm_up"]
