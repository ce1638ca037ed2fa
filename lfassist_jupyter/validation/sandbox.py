"""The sandboxed validator: a warm worker process that runs generated code, never the kernel.

``SandboxValidator`` owns one worker (``_worker.py``) started in its own session with a
scrubbed environment (no API keys or tokens), a private temporary directory, resource
limits and a per-validation deadline.  Whatever the generated code does -- loop forever,
``os._exit``, exhaust memory, fork, segfault -- the worst outcome is a failed report and
a restarted worker; the kernel is untouched.

Blocking I/O on pipes (with ``select`` deadlines) and a lock keep it independent of any
event loop, so the same worker serves the engine's background loop, a blocking
``validate_component`` call in a cell and the benchmarks.  ``validate`` (async) runs
the blocking call in a thread.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import math
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

from lfassist_jupyter._secrets import is_secret_name
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.validation.report import Finding, ValidationReport
from lfassist_jupyter.validation.static import SecurityMode, validate_static

WORKER_SCRIPT = Path(__file__).with_name("_worker.py")
MAX_TIMEOUT = 3600.0  # validate_component's bound on ``timeout``: an hour is already a hang
STARTUP_TIMEOUT = 120.0  # a cold lfx import takes 2-4 s here; slow CI disks can take far longer
_ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "TZ", "SYSTEMROOT")
_ENV_ALLOW_PREFIX = ("LC_",)


def scrubbed_env(sandbox_dir: str) -> dict[str, str]:
    """An allow-listed environment: locale and PATH, nothing that could hold a secret."""
    env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIX)}
    env = {k: v for k, v in env.items() if not is_secret_name(k)}
    env.update(
        HOME=sandbox_dir,
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


class _WorkerDied(Exception):
    pass


class _WorkerTimeout(Exception):
    pass


class SandboxValidator:
    """Runtime + smoke validation in an isolated, warm worker process.

    Args:
        python: the interpreter to run the worker with (default: this one).  Point it at
            your Langflow server's environment to validate against *its* lfx.
        timeout: seconds one validation may take before the worker is killed.
        memory_mb: address-space limit of the worker.
        smoke: whether to call every output with sample inputs.
    """

    def __init__(
        self, python: str | None = None, *, timeout: float = 10.0, memory_mb: int = 4096, smoke: bool = True
    ) -> None:
        self.python = python or os.environ.get("LFASSIST_VALIDATOR_PYTHON") or sys.executable
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.smoke = smoke
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None
        self._buf = b""
        self._ready: dict[str, Any] | None = None
        self._fatal: str | None = None
        self._lock = threading.RLock()
        self._next_id = 0
        self._reference: dict[str, Any] | None = None
        self.restarts = 0
        self.started_at: float | None = None
        atexit.register(self.close)

    # -- process management -----------------------------------------------------------

    @property
    def pid(self) -> int | None:
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
        self._dir = tempfile.mkdtemp(prefix="lfassist-sandbox-")
        config = json.dumps({"memory_mb": self.memory_mb})
        self._proc = subprocess.Popen(
            [self.python, "-I", "-u", str(WORKER_SCRIPT), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self._dir,
            env=scrubbed_env(self._dir),
            start_new_session=True,  # its own process group: a kill takes its children too
            close_fds=True,
        )
        self._buf = b""
        self._ready = None
        self._fatal = None
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
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _WorkerTimeout
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                with contextlib.suppress(Exception):
                    proc.wait(timeout=2)
                raise _WorkerDied(_signal_name(proc.poll()))
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _wait_ready(self) -> None:
        if self._ready is not None:
            return
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()
        msg = self._readline(time.monotonic() + STARTUP_TIMEOUT)
        if msg.get("op") == "fatal":
            self._fatal = msg.get("error", "unknown error")
            self._kill()
            raise _WorkerDied("fatal")
        self._ready = msg

    def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request/answer; the lock keeps the wire strictly sequential."""
        with self._lock:
            self._wait_ready()
            assert self._proc is not None and self._proc.stdin is not None
            self._next_id += 1
            payload = {**payload, "id": self._next_id}
            try:
                self._proc.stdin.write(json.dumps(payload).encode() + b"\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise _WorkerDied(_signal_name(self._proc.poll())) from exc
            while True:
                answer = self._readline(time.monotonic() + timeout)
                if answer.get("id") == payload["id"]:
                    return answer

    def _unavailable_report(self) -> ValidationReport:
        return ValidationReport(
            is_valid=False,
            phase="runtime",
            retryable=False,
            error=(
                f"Runtime validation is unavailable: lfx could not be imported by {self.python} ({self._fatal}). "
                "Install it with `%pip install lfx`, or point LFASSIST_VALIDATOR_PYTHON at an environment that has it."
            ),
        )

    # -- validation ---------------------------------------------------------------------

    def validate_sync(self, code: str, *, smoke: bool | None = None, timeout: float | None = None) -> ValidationReport:
        """Runtime (+ smoke) phases in the worker.  Never raises for bad code: returns a report."""
        timeout = self.timeout if timeout is None else timeout
        smoke = self.smoke if smoke is None else smoke
        t0 = time.perf_counter()
        try:
            # The worker enforces ``timeout`` for the whole request itself (SIGALRM); the
            # margin covers code that swallows the alarm, after which we kill it.
            answer = self._request({"op": "validate", "code": code, "smoke": smoke, "timeout": timeout}, timeout + 3)
        except _WorkerTimeout:
            self.restart()
            return ValidationReport(
                is_valid=False,
                phase="runtime",
                error=f"Validation did not finish within {timeout:g} s (an infinite loop or a blocking call?); "
                "the sandbox was restarted.",
                timings_ms={"total": round((time.perf_counter() - t0) * 1000, 3)},
            )
        except _WorkerDied as exc:
            if self._fatal:
                return self._unavailable_report()
            how = str(exc)
            self.restart()
            return ValidationReport(
                is_valid=False,
                phase="runtime",
                error=f"The component crashed the validation sandbox ({how}); it was restarted. "
                "Remove calls that exit the process or touch native memory.",
                timings_ms={"total": round((time.perf_counter() - t0) * 1000, 3)},
            )
        answer.pop("id", None)
        answer.setdefault("timings_ms", {})["total"] = round((time.perf_counter() - t0) * 1000, 3)
        return ValidationReport.model_validate(answer)

    async def validate(self, code: str) -> ValidationReport:
        """The engine's ``Validator`` interface (runtime + smoke; static ran before)."""
        return await asyncio.to_thread(self.validate_sync, code)

    def reference_sync(self) -> dict[str, Any] | None:
        """What the worker's lfx offers (input classes and parameters), for the prompt."""
        if self._reference is None:
            try:
                answer = self._request({"op": "reference"}, 30)
            except (_WorkerDied, _WorkerTimeout):
                return None
            answer.pop("id", None)
            self._reference = answer if "inputs" in answer else None
        return self._reference

    async def reference(self) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.reference_sync)

    def info(self) -> dict[str, Any]:
        """State for ``%assist status``: interpreter, lfx version, pid, restarts."""
        ready = self._ready or {}
        return {
            "state": self.state,
            "python": self.python,
            "lfx_version": ready.get("lfx_version"),
            "pid": self.pid,
            "restarts": self.restarts,
            "timeout": self.timeout,
            "memory_mb": self.memory_mb,
            "error": self._fatal,
        }


_default: SandboxValidator | None = None
_default_lock = threading.Lock()


def default_validator() -> SandboxValidator:
    """The process-wide validator (configured by ``LFASSIST_VALIDATOR_*`` variables)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SandboxValidator(
                timeout=float(os.environ.get("LFASSIST_VALIDATOR_TIMEOUT", "10")),
                memory_mb=int(os.environ.get("LFASSIST_VALIDATOR_MEMORY_MB", "4096")),
            )
        return _default


def warm_up() -> SandboxValidator:
    """Start the default worker now so the first validation does not pay the lfx import."""
    validator = default_validator()
    validator.start()
    return validator


_PHASE_ORDER = {"static": 0, "security": 1, "runtime": 2, "smoke": 3}


def _merge(static: ValidationReport, runtime: ValidationReport) -> ValidationReport:
    """One report: Langflow's verdict (``builds``, from the worker) and every finding, static
    ones first; a fact both phases found (same ``rule``) is kept once, with its line."""
    runtime.phases_run = [*static.phases_run, *runtime.phases_run]
    runtime.timings_ms = {**static.timings_ms, **runtime.timings_ms}
    if not runtime.class_name:
        runtime.class_name = static.class_name
    if runtime.builds is None and static.builds is False:
        runtime.builds = False
    if not runtime.findings and not runtime.is_valid and runtime.error:
        # The sandbox itself answered (timeout, crash, lfx missing): keep that as a finding.
        runtime.findings.append(Finding(severity="error", phase=runtime.phase or "runtime", message=runtime.error))
    static_rules = {f.rule for f in static.findings if f.rule and f.rule != "security"}
    kept = [f for f in runtime.findings if not (f.rule and f.rule in static_rules)]
    runtime.findings = sorted([*static.findings, *kept], key=lambda f: _PHASE_ORDER.get(f.phase, 9))
    runtime.warnings = list(dict.fromkeys([*static.warnings, *runtime.warnings]))
    return settle(runtime)


def settle(report: ValidationReport) -> ValidationReport:
    """``is_valid``, ``phase`` and ``error`` from ``builds`` and the findings.

    ``error`` says whose verdict it is: "Langflow rejects this: ..." (lfx's own message) or
    "Langflow accepts this, but ..." (our finding, with its evidence in the finding)."""
    errors = [f for f in report.findings if f.severity == "error"]
    report.is_valid = report.builds is True and not errors
    if report.is_valid:
        report.phase, report.error = None, None
        return report
    first = errors[0] if errors else None
    if report.builds is False:
        first = next((f for f in errors if f.rule == "build"), first)
    if first is None:
        return report
    report.phase = first.phase
    message = first.message
    if report.builds is True and not message.startswith("Langflow"):
        message = f"Langflow accepts this, but {message[:1].lower()}{message[1:]}"
    report.error = message
    return report


def _check_arguments(code: object, timeout: object, smoke: object) -> float:
    """Usage mistakes get a ConfigError that says what is expected, never a traceback from deep inside."""
    if not isinstance(code, str):
        raise ConfigError(
            f"validate_component expects the component's source code as a str, not {type(code).__name__}"
            + (" (decode the bytes first, e.g. code.decode('utf-8'))." if isinstance(code, bytes | bytearray) else ".")
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ConfigError(f"timeout must be a number of seconds, not {type(timeout).__name__}.")
    if not math.isfinite(timeout) or timeout <= 0 or timeout > MAX_TIMEOUT:
        raise ConfigError(f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, not {timeout!r}.")
    if not isinstance(smoke, bool):
        raise ConfigError(f"smoke must be True or False, not {smoke!r}.")
    return float(timeout)


def validate_component(
    code: str,
    *,
    smoke: bool = True,
    timeout: float = 10.0,
    security: SecurityMode | bool = "report",
    validator: SandboxValidator | None = None,
) -> ValidationReport:
    """Validate Langflow component code: static and security phases here, then the runtime
    (lfx builds it, as Langflow's ``POST /api/v1/custom_component`` does) and smoke phases in
    the sandboxed worker.  Never runs the code in this process.

    ``report.builds`` is Langflow's verdict; ``report.findings`` are ours (``error``: it will
    break when used; ``warning``; ``policy``).  ``security="report"`` (the default here, for
    code a user brings) lists unsafe calls as policy findings; ``"reject"`` refuses them, as
    the engine does for generated code; ``"off"`` skips the scan.

    Raises ``ConfigError`` for a usage mistake (code that is not a str, a timeout that is not
    a positive finite number); bad *code* always gets a report.
    """
    timeout = _check_arguments(code, timeout, smoke)
    static = validate_static(code, security=security)
    if static.builds is False or (static.builds is None and not static.class_name and not static.is_valid):
        return static  # certain without lfx (syntax error, no component class, too large)
    runtime = (validator or default_validator()).validate_sync(code, smoke=smoke, timeout=timeout)
    return _merge(static, runtime)


async def avalidate_component(
    code: str,
    *,
    smoke: bool = True,
    timeout: float = 10.0,
    security: SecurityMode | bool = "report",
    validator: SandboxValidator | None = None,
) -> ValidationReport:
    """Async twin of ``validate_component``."""
    _check_arguments(code, timeout, smoke)
    return await asyncio.to_thread(
        validate_component, code, smoke=smoke, timeout=timeout, security=security, validator=validator
    )
