"""The real local run's process: the runner under bubblewrap behind the egress fence.

``flows.local`` decides what a run may have (the plan: allowed variables and hosts); this module
starts the process that runs it (``_local_runner.py`` by path, in a network namespace of its own
whose one way out is ``_egress.EgressProxy``), waits with a time cap, and returns the capped,
redacted answer. Nothing here imports lfx.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter import settings
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.redaction import redact_text
from lfassist_jupyter.sandbox import _isolation
from lfassist_jupyter.sandbox.answers import RealRun, Refused
from lfassist_jupyter.sandbox.egress import EgressProxy
from lfassist_jupyter.sandbox.zygote import scrubbed_env

if TYPE_CHECKING:
    from lfassist_jupyter.flows.local import RunPlan

RUNNER = Path(__file__).with_name("_local_runner.py")
MAX_ANSWER_BYTES = 1_000_000


def run(flow: dict[str, Any], input_text: str, plan: RunPlan, timeout: float) -> RealRun:
    """Run the prepared ``flow`` in a process of its own with only ``plan``'s variables and hosts.

    The caller (``flows.local.run_flow_for_real``) has loaded, validated and planned the flow; this is the
    part that starts a process, which is why it lives in the sandbox package.
    """
    variables = plan.allowed
    python = settings.read("validator_python") or sys.executable
    mode, reason = _isolation.probe(python, settings.read("sandbox"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lfassist-run-") as tmp:
        os.makedirs(os.path.join(tmp, "home"), exist_ok=True)
        fence = os.path.join(tmp, "egress")  # only this directory is bound into the sandbox
        os.makedirs(fence, mode=0o700)
        try:
            proxy = EgressProxy(plan.hosts, os.path.join(fence, "proxy.sock"), kernel_ports=plan.kernel_ports).start()
        except OSError as exc:  # e.g. a TMPDIR too long for a Unix socket's path
            raise ConfigError(f"Not run: the network fence could not start ({exc.strerror or exc}).") from exc
        env = scrubbed_env(tmp)  # the keys go on stdin: a command line is visible to `ps`
        argv = ["-I", "-u", str(RUNNER)]
        if mode == "full":
            env["HOME"], env["TMPDIR"] = _isolation.SANDBOX_HOME, _isolation.SANDBOX_TMP
            # No --share-net: a network namespace of its own, loopback only; the proxy's socket
            # is the one way out.
            cmd = _isolation.bwrap_command(
                _isolation.bwrap_binary() or "bwrap", python, argv, env=env, extra_ro=(str(RUNNER), fence)
            )
            popen_env: dict[str, str] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        else:
            cmd, popen_env = [python, *argv], env
        out_path, err_path = os.path.join(tmp, "answer"), os.path.join(tmp, "log")
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    cwd=tmp,
                    env=popen_env,
                    start_new_session=True,  # a kill takes whatever the flow started
                    close_fds=True,
                )
                timed_out = False
                try:
                    request = {
                        "flow": flow,
                        "input": input_text,
                        "env": {**plan.config, **variables},
                        "proxy": proxy.socket_path,
                    }
                    proc.communicate(json.dumps(request).encode(), timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:  # also on KeyboardInterrupt: the stop button leaves nothing running
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        finally:
            proxy.stop()
        answer = _read_capped(out_path)
        log_tail = _read_capped(err_path, tail=True)

    def clean(text: Any) -> str:
        return redact_text(str(text or ""), extra=tuple(variables.values()))[:20_000]

    if timed_out:
        answered: dict[str, Any] = {"error": f"the run did not finish within {timeout:g} s and was stopped."}
    else:
        answered = _answer(answer, log_tail, proc.returncode, clean)
    fenced = "network through the allow-list only" if mode == "full" else "the network is NOT fenced"
    where = dict(
        variables=sorted(variables),
        hosts=[str(h) for h in plan.hosts],
        refused=[Refused.model_validate({**r, "host": clean(r["host"])}) for r in proxy.refused],
        isolation=f"bubblewrap ({fenced})" if mode == "full" else f"process only ({reason}; {fenced})",
        seconds=time.perf_counter() - started,
    )
    if answered.get("ok"):
        return RealRun(**answered, **where)
    return RealRun.failed(answered.get("error") or "the run failed.", component=answered.get("component"), **where)


def _answer(answer: str, log_tail: str, returncode: int | None, clean: Any) -> dict[str, Any]:
    """The runner's answer line as ``RealRun`` fields, every text redacted and capped."""
    try:
        parsed = json.loads(answer) if answer else None
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        last = log_tail.strip().splitlines()[-1:] or [f"exit code {returncode}"]
        return {"error": clean(f"the run ended without an answer ({last[0]}).")}
    return {
        "ok": parsed.get("ok") is True,
        "text": clean(parsed.get("text")),
        "component": clean(parsed.get("component")) or None,
        "error": clean(parsed.get("error")) or None,
    }


def _read_capped(path: str, *, tail: bool = False) -> str:
    with open(path, "rb") as fh:
        if tail:
            fh.seek(max(0, os.path.getsize(path) - 4096))
        data = fh.read(MAX_ANSWER_BYTES)
    return data.decode("utf-8", "replace")
