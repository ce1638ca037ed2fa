"""The sandbox's process: one *zygote* (``worker/_worker.py``) that imports lfx once and forks a
fresh child for every request, and the line-by-line wire to it.

On Linux the zygote runs inside bubblewrap (``_isolation.py``): its own user, PID, network, IPC
and mount namespaces, the interpreter bound read-only, a private tmpfs for HOME and /tmp, no view
of the user's files, the kernel's /proc or the network.  Where that is not possible the same
worker runs with its in-process layers only, and every report says "reduced isolation" with the
reason.

Nothing that comes back is trusted: each answer line is read with a size cap and must be the
zygote's verdict on the request we sent (``ok`` with an answer, or ``crashed``, ``timeout``,
``malformed``, ``oversized``); ``ZygoteProcess._call`` turns every other outcome into one
sentence.  What an answer *means* (a report, a run, a build) is ``client.SandboxValidator``'s
business; this module only keeps the process alive and the wire honest.

Blocking I/O on pipes (with ``select`` deadlines) and a lock keep it independent of any event
loop, so the same process serves the engine's background loop, a blocking call in a cell and the
benchmarks.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lfassist_jupyter import settings
from lfassist_jupyter.redaction import is_secret_name, redact_text, redact_tree
from lfassist_jupyter.sandbox import _isolation
from lfassist_jupyter.sandbox.answers import Reference
from lfassist_jupyter.sandbox.lfx_check import LFX_INSTALL
from lfassist_jupyter.validation.report import ValidationReport

WORKER_DIR = Path(__file__).with_name("worker")  # bound read-only into bwrap as a whole
WORKER_SCRIPT = WORKER_DIR / "_worker.py"
# Op modules of the worker package, loaded in the zygote (stdlib + lfx only).
OP_MODULES: tuple[Path, ...] = (
    WORKER_DIR / "_run_component.py",
    WORKER_DIR / "_probe_run.py",
    WORKER_DIR / "_flow_ops.py",
    WORKER_DIR / "_packages.py",
)
# Settings the kernel adds to every worker's config; empty but in the tests, which use them for
# the controls of what the sandbox holds: ``{"forker": False}`` (spares forked by the zygote
# itself, whose heap has held earlier requests) and ``{"unarmed_ops": [...]}`` (test ops run with
# no judging hook, so that only the kernel's layers stand).
WORKER_OPTIONS: dict[str, Any] = {}
STARTUP_TIMEOUT = 120.0  # a cold lfx import takes 2-4 s here; slow CI disks can take far longer
LINE_CAP = 8 * 1024 * 1024  # the longest line we read from the zygote (its own caps are lower)
_ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "TZ", "SYSTEMROOT")
_ENV_ALLOW_PREFIX = ("LC_",)


def scrubbed_env(sandbox_dir: str) -> dict[str, str]:
    """An allow-listed environment: locale and PATH, nothing that could hold a secret."""
    env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIX)}
    env = {k: v for k, v in env.items() if not is_secret_name(k)}
    env.update(
        HOME=os.path.join(sandbox_dir, "home"),
        TMPDIR=sandbox_dir,
        PYTHONDONTWRITEBYTECODE="1",
        DO_NOT_TRACK="true",
        LANGFLOW_DO_NOT_TRACK="true",
        PYTHONIOENCODING="utf-8",
    )
    return env


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class WorkerDiedError(Exception):
    """The zygote exited (or never started); ``SandboxValidator`` restarts it or reports why."""


class WorkerTimeoutError(Exception):
    """The zygote did not answer in time; it is restarted."""


class ZygoteProcess:
    """The zygote's owner: spawns it (under bubblewrap when possible), restarts it when it dies or
    hangs, and speaks its line protocol.  ``SandboxValidator`` adds what the requests mean.

    Args:
        python: the interpreter to run the worker with (default: ``LFASSIST_VALIDATOR_PYTHON``,
            else this one).  ``LFASSIST_SANDBOX`` and ``LFASSIST_SANDBOX_LANDLOCK`` are read here
            too, once: a bad value is a ``ConfigError`` now, not a surprise at the first request.
        memory_mb: address-space limit of the worker (and so of each child).
        scratch_mb: the size of the sandbox's private /tmp (default: an eighth of ``memory_mb``).
    """

    def __init__(self, python: str | None = None, *, memory_mb: int = 4096, scratch_mb: int | None = None) -> None:
        self.python = python or settings.read("validator_python") or sys.executable
        self.sandbox_mode: str = settings.read("sandbox")
        self.landlock: bool = settings.read("sandbox_landlock")
        self.memory_mb = memory_mb
        self.scratch_mb = int(scratch_mb) if scratch_mb else max(16, memory_mb // 8)
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None  # the host directory of a reduced sandbox (None under bwrap)
        self._buf = b""
        self._ready: dict[str, Any] | None = None
        self._fatal: str | None = None
        self._lock = threading.RLock()
        self._next_id = 0
        self._reference: Reference | None = None
        self.isolation: str | None = None
        self.isolation_reason = ""
        self.restarts = 0
        self.started_at: float | None = None
        self._cleanup_entries = 0  # directory entries the zygote's clean-up has visited (tests)
        atexit.register(self.close)

    # -- process management -----------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The pid of the sandbox's outermost process (bwrap, or the zygote when reduced)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def state(self) -> str:
        """``stopped``, ``starting``, ``ready`` or ``unavailable`` (lfx missing) -- for status displays."""
        if self._fatal:
            return "unavailable"
        if self._proc is None or self._proc.poll() is not None:
            return "stopped"
        return "ready" if self._ready else "starting"

    def start(self) -> None:
        """Spawn the worker if it is not running; returns at once (it warms up by itself)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            self._spawn()

    def _spawn(self) -> None:
        self._cleanup_dir()
        mode, reason = _isolation.probe(self.python, self.sandbox_mode)
        self.isolation, self.isolation_reason = mode, reason
        ops = [str(p) for p in OP_MODULES if p.exists()]
        config: dict[str, Any] = {
            "memory_mb": self.memory_mb,
            "op_modules": ops,
            "bound_modules": _isolation.bound_modules(),  # artifacts/flow.py, policy.py (stdlib only)
        }
        if not self.landlock:
            config["landlock"] = False  # what a kernel without Landlock gets (the tests of that path)
        config.update(WORKER_OPTIONS)
        argv = ["-I", "-u", str(WORKER_SCRIPT)]
        if mode == "full":
            env = scrubbed_env(_isolation.SANDBOX_TMP)
            env["HOME"] = _isolation.SANDBOX_HOME
            config["scratch_mb"] = self.scratch_mb
            cmd = _isolation.bwrap_command(
                _isolation.bwrap_binary() or "bwrap",
                self.python,
                [*argv, json.dumps(config)],
                env=env,
                extra_ro=(*_isolation.worker_files(), *ops),
                scratch_mb=self.scratch_mb,
            )
            cwd, popen_env = None, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        else:
            self._dir = os.path.realpath(tempfile.mkdtemp(prefix="lfassist-sandbox-"))
            # The in-process layer refuses reads of the real HOME and of the notebook's directory.
            config["deny_read"] = [os.path.expanduser("~"), os.getcwd()]
            cmd = [self.python, *argv, json.dumps(config)]
            cwd, popen_env = self._dir, scrubbed_env(self._dir)
        self._launch(cmd, cwd, popen_env)

    def _launch(self, cmd: list[str], cwd: str | None, env: dict[str, str]) -> None:
        """Start the zygote's process (``cmd``); it speaks the line protocol on its stdin and stdout."""
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own process group: a kill takes its children too
            close_fds=True,
        )
        self._buf = b""
        self._ready = None
        self._fatal = None
        self._reference = None
        self.started_at = time.perf_counter()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.kill()
        with contextlib.suppress(Exception):
            proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]

    def restart(self) -> None:
        """Kill the worker and start a fresh one in the background."""
        with self._lock:
            self._kill()
            self.restarts += 1
            self._spawn()

    def _cleanup_dir(self) -> None:
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def close(self) -> None:
        """Stop the worker and remove its directory (also runs at interpreter exit)."""
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(Exception):
                    proc.stdin.write(b'{"op": "exit"}\n')  # type: ignore[union-attr]
                    proc.stdin.flush()  # type: ignore[union-attr]
                    proc.wait(timeout=2)
            self._kill()
            self._cleanup_dir()

    # -- the wire -----------------------------------------------------------------------

    def _readline(self, deadline: float) -> dict[str, Any]:
        """One JSON object from the zygote, at most ``LINE_CAP`` bytes; anything else kills it."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            if len(self._buf) > LINE_CAP:
                raise WorkerDiedError("an oversized answer")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeoutError
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                with contextlib.suppress(Exception):
                    proc.wait(timeout=2)
                raise WorkerDiedError(_signal_name(proc.poll()))
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise WorkerDiedError("a malformed answer") from exc
        if not isinstance(msg, dict):
            raise WorkerDiedError("a malformed answer")
        return msg

    def _wait_ready(self) -> None:
        if self._ready is not None:
            return
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()
        msg = self._readline(time.monotonic() + STARTUP_TIMEOUT)
        if msg.get("op") == "fatal":
            self._fatal = redact_text(str(msg.get("error", "unknown error"))[:2000])
            self._kill()
            raise WorkerDiedError("fatal")
        if msg.get("op") != "ready":
            self._kill()
            raise WorkerDiedError("an unexpected first message")
        try:
            ref = msg.get("reference")
            checked = Reference.model_validate(ref).model_dump() if ref else None
            self._reference = Reference.model_validate(redact_tree(checked)) if checked else None
        except ValidationError:
            self._reference = None
        keys = ("lfx_version", "pid", "import_ms", "warmup_ms", "ops", "subreaper", "confinement", "huge_pages_mb",
                "forker")  # fmt: skip
        self._ready = {k: msg.get(k) for k in keys}

    def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request and the zygote's verdict; the lock keeps the wire strictly sequential."""
        with self._lock:
            self._wait_ready()
            assert self._proc is not None and self._proc.stdin is not None
            self._next_id += 1
            payload = {**payload, "id": self._next_id}
            # A small header the zygote reads, then the request, which only the child parses.
            body = json.dumps(payload).encode()
            header = {"op": payload.get("op"), "id": self._next_id, "timeout": timeout, "size": len(body)}
            try:
                self._proc.stdin.write(json.dumps(header).encode() + b"\n" + body)
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise WorkerDiedError(_signal_name(self._proc.poll())) from exc
            # The zygote kills the child at ``timeout`` + 1 s and cleans up; beyond that it is stuck.
            deadline = time.monotonic() + timeout + 10
            while True:
                answer = self._readline(deadline)
                if answer.get("id") == payload["id"]:
                    return answer

    def _unavailable_report(self) -> ValidationReport:
        return ValidationReport(
            is_valid=False,
            phase="runtime",
            retryable=False,
            error=(
                f"Runtime validation is unavailable: lfx could not be imported by {self.python} ({self._fatal}). "
                f"Install the extra with `{LFX_INSTALL}`, or point LFASSIST_VALIDATOR_PYTHON at an environment "
                "that has lfx."
            ),
        )

    def _isolation_warning(self) -> str | None:
        if self.isolation == "reduced":
            return f"reduced isolation: {self.isolation_reason}"
        return None

    def _call(self, payload: dict[str, Any], timeout: float) -> tuple[dict[str, Any] | None, str | None]:
        """(answer, None) when a child answered well-formed JSON, else (None, why it failed).

        The answer carries ``sandbox_refused``: what the sandbox's runtime layer refused while
        the child ran, as the zygote read it from the hook (not from the child's answer, which
        may say anything about itself); an op that judges code must fail on any of them."""
        answer, failure, refused = self._call_checked(payload, timeout)
        if answer is not None:
            answer["sandbox_refused"] = refused
        return answer, failure

    def _call_checked(
        self, payload: dict[str, Any], timeout: float
    ) -> tuple[dict[str, Any] | None, str | None, list[dict[str, Any]]]:
        """``_call`` with the zygote's list of refusals apart: (answer, failure, refused)."""
        try:
            verdict = self._request(payload, timeout)
        except WorkerTimeoutError:
            self.restart()
            return None, f"The validation sandbox did not answer within {timeout:g} s; it was restarted.", []
        except WorkerDiedError as exc:
            if self._fatal:
                return None, "fatal", []
            self.restart()
            return None, f"The validation sandbox stopped ({exc}); it was restarted.", []
        status = verdict.get("status")
        detail = redact_text(str(verdict.get("detail", ""))[:200])
        refused = refusals(verdict.get("refused"))
        before = f" Before that, the sandbox refused {refused_text(refused[0])}." if refused else ""
        if isinstance(verdict.get("wiped"), int):
            self._cleanup_entries = verdict["wiped"]
        if verdict.get("scratch_full"):  # whatever the child answered: it filled the space
            limit = redact_text(str(verdict["scratch_full"])[:40])
            return (
                None,
                f"The component filled the sandbox's scratch space (its limit is {limit}); "
                "writing that much is not allowed while validating.",
                refused,
            )
        if status == "ok" and isinstance(verdict.get("answer"), dict):
            answer = verdict["answer"]
            answer.pop("sandbox_refused", None)  # the child's word on it counts for nothing
            return answer, None, refused
        if status == "timeout":
            return (
                None,
                f"Validation did not finish within {timeout:g} s (an infinite loop or a blocking call?); "
                f"its process was killed.{before}",
                refused,
            )
        if status == "crashed":
            return (
                None,
                f"The component crashed the validation sandbox ({detail}); only its own process died. "
                f"Remove calls that exit the process or touch native memory.{before}",
                refused,
            )
        if status == "unfinished":
            return (
                None,
                "The component ended its validation before the sandbox's report was complete (it exited "
                f"or stopped its own process); that is a failed validation.{before}",
                refused,
            )
        if status == "tampered":
            return (
                None,
                f"The component interfered with the validation sandbox's report ({detail}); the report was "
                f"discarded and the validation failed.{before}",
                refused,
            )
        if status == "oversized":
            return (
                None,
                f"The validation answer was larger than the sandbox accepts; it was discarded.{before}",
                refused,
            )
        return None, f"The validation sandbox returned a malformed answer ({detail}); it was discarded.", refused


def refusals(raw: object) -> list[dict[str, Any]]:
    """The zygote's list of what the runtime layer refused, shape-checked and redacted."""
    out: list[dict[str, Any]] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("event"), str):
            continue
        line = item.get("line")
        out.append(
            {
                "event": redact_text(item["event"][:200]),
                "what": redact_text(str(item.get("what") or item["event"])[:500]),
                "line": line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None,
            }
        )
    return out[:50]


def refused_text(item: dict[str, Any]) -> str:
    """One refusal in words: "`os.system` (line 12 of the code as lfx compiled it)"."""
    where = f" (line {item['line']} of the code as lfx compiled it)" if item.get("line") else ""
    return f"`{item['what']}`{where}"
