"""The sandboxed validator: generated code runs in a fresh, isolated process, never the kernel.

``SandboxValidator`` owns one *zygote* (``_worker.py``): a process that imports lfx once
and forks a fresh child for every request (see the worker's docstring).  On Linux the
zygote runs inside bubblewrap (``_isolation.py``): its own user, PID, network, IPC and
mount namespaces, the interpreter bound read-only, a private tmpfs for HOME and /tmp,
no view of the user's files, the kernel's /proc or the network.  Where that is not
possible the same worker runs with its in-process layers only, and ``info()`` and every
report say "reduced isolation" with the reason.

Nothing that comes back is trusted: each answer line is read with a size cap, must be
the zygote's verdict on the request we sent (``ok`` with a report, or ``crashed``,
``timeout``, ``malformed``, ``oversized``), and the report is schema-checked with
pydantic and redacted (secret-looking environment values, also hex and base64 encoded)
before anyone sees it.  Whatever the generated code does, the worst outcome is a failed
report for *that* component; the kernel is untouched and the next validation is clean.

Blocking I/O on pipes (with ``select`` deadlines) and a lock keep it independent of any
event loop, so the same worker serves the engine's background loop, a blocking
``validate_component`` call in a cell and the benchmarks.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
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
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.redaction import is_secret_name, redact, redact_fragments, secret_values
from lfassist_jupyter.sandbox import _isolation
from lfassist_jupyter.validation.report import Finding, ValidationReport
from lfassist_jupyter.validation.static import SecurityMode, security_mode, validate_static

WORKER_DIR = Path(__file__).with_name("worker")  # bound read-only into bwrap as a whole
WORKER_SCRIPT = WORKER_DIR / "_worker.py"
# Sibling op scripts the worker imports by path (stdlib + lfx only).
OP_MODULES: tuple[Path, ...] = (
    WORKER_DIR / "_run_component.py",
    WORKER_DIR / "_run_flow.py",
    WORKER_DIR / "_flow_ops.py",
)
MAX_TIMEOUT = 3600.0  # validate_component's bound on ``timeout``: an hour is already a hang
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


# -- redaction of everything that comes back ---------------------------------------------


def _encoded_forms(secret: str) -> list[str]:
    """Hex and base64 spellings of ``secret``, as they would appear inside a longer text.

    base64 of a substring depends on its offset modulo 3, so each of the three alignments
    gets its stable middle part (the first and last groups mix in neighbouring bytes).
    """
    raw = secret.encode()
    forms = [raw.hex(), raw.hex().upper()]
    for pad in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * pad + raw).decode().rstrip("=")
            core = text[4 if pad else 0 : -4]
            if len(core) >= 8:
                forms.append(core)
    return forms


def redact_text(text: str, extra: tuple[str, ...] = ()) -> str:
    """``_secrets.redact`` plus the hex and base64 forms of secret environment values (and of
    ``extra``: keys given to a real run that are not in this process's environment)."""
    if not text:
        return text
    for value in secret_values(extra):
        if len(value) >= 8:
            for form in (*_encoded_forms(value), *_encoded_forms(value[::-1]), value[::-1]):
                text = text.replace(form, "***")
    return redact_fragments(redact(text, extra), extra)  # a passed key split or reversed, too


def _redact_tree(obj: Any) -> Any:
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        return {k: _redact_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact_tree(v) for v in obj]
    return obj


# -- what the zygote may say ---------------------------------------------------------------


class _ReferenceInput(BaseModel):
    name: str = Field(max_length=80)
    params: list[str] = Field(default_factory=list, max_length=80)
    doc: str = Field(default="", max_length=300)
    fields: list[Annotated[str, Field(max_length=80)]] = Field(default_factory=list, max_length=120)
    """Every keyword the class accepts (the repair pass tells a misspelt keyword from a real one)."""


class _Reference(BaseModel):
    """The lfx reference for prompts and the repair pass, as the zygote computed it before any fork."""

    lfx_version: str | None = Field(default=None, max_length=40)
    common_params: list[str] = Field(default_factory=list, max_length=40)
    inputs: list[_ReferenceInput] = Field(default_factory=list, max_length=300)
    component_attrs: list[Annotated[str, Field(max_length=80)]] = Field(default_factory=list, max_length=1000)
    """Attributes and methods of lfx's ``Component``: names an input must not take."""
    imports: dict[Annotated[str, Field(max_length=80)], Annotated[str, Field(max_length=120)]] = Field(
        default_factory=dict, max_length=500
    )
    """symbol -> the lfx module it is imported from (lfx.io's exports, the schema types, Component)."""


class _Stubbed(BaseModel):
    node: str = Field(max_length=200)
    name: str = Field(max_length=200)
    reason: str = Field(max_length=200)


class _FlowOutput(BaseModel):
    component: str = Field(default="", max_length=200)
    text: str = ""


class FlowRun(BaseModel):
    """What ``run_flow`` answers: the flow's chat output for one input text, and what was stubbed."""

    ok: bool
    text: str | None = None
    error: str | None = None
    stubbed: list[_Stubbed] = Field(default_factory=list, max_length=500)
    outputs: list[_FlowOutput] = Field(default_factory=list, max_length=100)
    seconds: float | None = None


class ComponentRun(BaseModel):
    """What ``run_component`` answers: the first output's text for one input text."""

    ok: bool
    text: str | None = None
    error: str | None = None
    output: str | None = None


CATALOG_CAP = 64 * 1024 * 1024  # the inflated component catalogue (lfx 1.13's is 2 MB)
FLOW_CAP = 64 * 1024 * 1024  # an inflated built flow
_CATALOG_MAX_ENTRIES = 5000


class _BuildError(BaseModel):
    code: str = Field(max_length=40)
    node: str | None = Field(default=None, max_length=500)
    node_id: str | None = Field(default=None, max_length=500)
    field: str | None = Field(default=None, max_length=500)
    message: str = Field(max_length=20_000)
    fix: str = Field(default="", max_length=20_000)


class _BuildChange(BaseModel):
    kind: str = Field(max_length=40)
    node: str = Field(default="", max_length=500)
    field: str | None = Field(default=None, max_length=500)
    before: Any = None
    after: Any = None
    message: str = Field(max_length=2_000)


class FlowBuild(BaseModel):
    """What ``build_flow_sync`` answers: the flow lfx built from a spec, and every problem on the way.

    ``error`` (with ``ok`` False and no flow) is the sandbox's own failure (a timeout, a crash)."""

    ok: bool
    flow: dict[str, Any] | None = None
    spec: str = ""
    errors: list[_BuildError] = Field(default_factory=list, max_length=5_000)
    warnings: list[str] = Field(default_factory=list, max_length=5_000)
    changes: list[_BuildChange] = Field(default_factory=list, max_length=5_000)
    node_ids: dict[str, str] = Field(default_factory=dict)
    error: str | None = None


def _check_catalog(registry: Any) -> dict[str, dict[str, Any]]:
    """The catalogue's shape: ``{type name: node template with a 'template' dict}``, bounded."""
    if not isinstance(registry, dict) or not registry or len(registry) > _CATALOG_MAX_ENTRIES:
        raise ValueError("not a component catalogue")
    for name, entry in registry.items():
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValueError("a catalogue entry has no usable name")
        if not isinstance(entry, dict) or not isinstance(entry.get("template"), dict):
            raise ValueError(f"catalogue entry {name[:80]!r} has no template")
        if not isinstance(entry.get("outputs", []), list):
            raise ValueError(f"catalogue entry {name[:80]!r} has no outputs list")
    return registry


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
    """Runtime + smoke validation in an isolated zygote that forks a child per request.

    Args:
        python: the interpreter to run the worker with (default: this one).  Point it at
            your Langflow server's environment to validate against *its* lfx.
        timeout: seconds one validation may take before its child is killed.
        memory_mb: address-space limit of the worker (and so of each child).
        smoke: whether to call every output with sample inputs.
        scratch_mb: the size of the sandbox's private /tmp, the only place a request can
            write (default: an eighth of ``memory_mb``); a request that fills it fails with
            a report that names the limit.  Full isolation only: the reduced sandbox has
            no file system of its own (files there are capped at 64 MB each).
    """

    def __init__(
        self,
        python: str | None = None,
        *,
        timeout: float = 10.0,
        memory_mb: int = 4096,
        smoke: bool = True,
        scratch_mb: int | None = None,
    ) -> None:
        self.python = python or os.environ.get("LFASSIST_VALIDATOR_PYTHON") or sys.executable
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.scratch_mb = int(scratch_mb) if scratch_mb else max(16, memory_mb // 8)
        self.smoke = smoke
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None  # the host directory of a reduced sandbox (None under bwrap)
        self._buf = b""
        self._ready: dict[str, Any] | None = None
        self._fatal: str | None = None
        self._lock = threading.RLock()
        self._next_id = 0
        self._reference: dict[str, Any] | None = None
        self._flow_catalog: dict[str, dict[str, Any]] | None = None  # cached: it depends on the interpreter only
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
        mode, reason = _isolation.probe(self.python)
        self.isolation, self.isolation_reason = mode, reason
        ops = [str(p) for p in OP_MODULES if p.exists()]
        config: dict[str, Any] = {"memory_mb": self.memory_mb, "op_modules": ops}
        if os.environ.get("LFASSIST_SANDBOX_LANDLOCK", "").strip().lower() in ("0", "off"):
            config["landlock"] = False  # what a kernel without Landlock gets (the tests of that path)
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
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=popen_env,
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
                raise _WorkerDied("an oversized answer")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _WorkerTimeout
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                with contextlib.suppress(Exception):
                    proc.wait(timeout=2)
                raise _WorkerDied(_signal_name(proc.poll()))
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise _WorkerDied("a malformed answer") from exc
        if not isinstance(msg, dict):
            raise _WorkerDied("a malformed answer")
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
            raise _WorkerDied("fatal")
        if msg.get("op") != "ready":
            self._kill()
            raise _WorkerDied("an unexpected first message")
        try:
            ref = msg.get("reference")
            self._reference = _redact_tree(_Reference.model_validate(ref).model_dump()) if ref else None
        except ValidationError:
            self._reference = None
        keys = ("lfx_version", "pid", "import_ms", "warmup_ms", "ops", "subreaper", "confinement")
        self._ready = {k: msg.get(k) for k in keys}

    def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request and the zygote's verdict; the lock keeps the wire strictly sequential."""
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
                "Install it with `%pip install lfx`, or point LFASSIST_VALIDATOR_PYTHON at an environment that has it."
            ),
        )

    def _isolation_warning(self) -> str | None:
        if self.isolation == "reduced":
            return f"reduced isolation: {self.isolation_reason}"
        return None

    def _call(self, payload: dict[str, Any], timeout: float) -> tuple[dict[str, Any] | None, str | None]:
        """(answer, None) when a child answered well-formed JSON, else (None, why it failed)."""
        try:
            verdict = self._request(payload, timeout)
        except _WorkerTimeout:
            self.restart()
            return None, f"The validation sandbox did not answer within {timeout:g} s; it was restarted."
        except _WorkerDied as exc:
            if self._fatal:
                return None, "fatal"
            self.restart()
            return None, f"The validation sandbox stopped ({exc}); it was restarted."
        status = verdict.get("status")
        detail = redact_text(str(verdict.get("detail", ""))[:200])
        if isinstance(verdict.get("wiped"), int):
            self._cleanup_entries = verdict["wiped"]
        if verdict.get("scratch_full"):  # whatever the child answered: it filled the space
            limit = redact_text(str(verdict["scratch_full"])[:40])
            return None, (
                f"The component filled the sandbox's scratch space (its limit is {limit}); "
                "writing that much is not allowed while validating."
            )
        if status == "ok" and isinstance(verdict.get("answer"), dict):
            return verdict["answer"], None
        if status == "timeout":
            return None, (
                f"Validation did not finish within {timeout:g} s (an infinite loop or a blocking call?); "
                "its process was killed."
            )
        if status == "crashed":
            return None, (
                f"The component crashed the validation sandbox ({detail}); only its own process died. "
                "Remove calls that exit the process or touch native memory."
            )
        if status == "oversized":
            return None, "The validation answer was larger than the sandbox accepts; it was discarded."
        return None, f"The validation sandbox returned a malformed answer ({detail}); it was discarded."

    # -- validation ---------------------------------------------------------------------

    def validate_sync(self, code: str, *, smoke: bool | None = None, timeout: float | None = None) -> ValidationReport:
        """Runtime (+ smoke) phases in a fresh child.  Never raises for bad code: returns a report."""
        timeout = self.timeout if timeout is None else timeout
        smoke = self.smoke if smoke is None else smoke
        t0 = time.perf_counter()
        answer, failure = self._call({"op": "validate", "code": code, "smoke": smoke, "timeout": timeout}, timeout)
        total = round((time.perf_counter() - t0) * 1000, 3)
        if failure == "fatal":
            return self._unavailable_report()
        report: ValidationReport | None = None
        if answer is not None:
            answer.pop("id", None)
            try:
                report = ValidationReport.model_validate(_redact_tree(answer))
            except ValidationError:
                failure = "The validation sandbox returned something that is not a validation report; it was discarded."
        if report is None:
            report = ValidationReport(is_valid=False, phase="runtime", error=failure)
        report.timings_ms["total"] = total
        warning = self._isolation_warning()
        if warning:
            report.warnings.append(warning)
        return report

    async def validate(self, code: str) -> ValidationReport:
        """The engine's ``Validator`` interface (runtime + smoke; static ran before)."""
        return await asyncio.to_thread(self.validate_sync, code)

    def run_component_sync(self, code: str, input_text: str, timeout: float | None = None) -> dict[str, Any]:
        """Run the component's first output with ``input_text`` in a fresh child; its text comes back.

        Returns ``{"ok", "text", "error", "output"}`` (see ``ComponentRun``), redacted; never raises.
        """
        timeout = self.timeout if timeout is None else timeout
        answer, failure = self._call(
            {"op": "run_component", "code": code, "input_text": input_text, "timeout": timeout}, timeout
        )
        if failure == "fatal":
            return ComponentRun(ok=False, error=self._unavailable_report().error).model_dump()
        if answer is not None:
            try:
                return ComponentRun.model_validate(_redact_tree(answer)).model_dump()
            except ValidationError:
                failure = "The sandbox's answer was not a component run; it was discarded."
        return ComponentRun(ok=False, error=failure).model_dump()

    def run_flow_sync(self, flow: dict[str, Any], input_text: str, timeout: float | None = None) -> dict[str, Any]:
        """Probe-run ``flow`` (Langflow flow JSON) on ``input_text`` in a fresh sandboxed child.

        Model and keyed-API nodes are replaced by deterministic stubs first (here: it is data
        work, no code of the flow runs in this process), so the child needs no key and no
        network; lfx's own runner runs the rest. Returns ``{"ok", "text", "error", "stubbed":
        [{"node", "name", "reason"}], "outputs", "seconds"}`` (see ``FlowRun``), schema-checked
        and redacted; never raises: a flow that fails is ``ok=False`` with the reason.
        """
        from lfassist_jupyter.flows.run import stub_flow

        timeout = self.timeout if timeout is None else timeout
        if not isinstance(flow, dict):
            return FlowRun(ok=False, error="run_flow needs a Langflow flow JSON object (a dict).").model_dump()
        try:
            probe, stubs = stub_flow(flow)
        except Exception as exc:  # a malformed flow: its shape, not ours
            return FlowRun(ok=False, error=f"The flow could not be prepared for a run: {exc}").model_dump()
        stubbed = [{"node": s["node_id"], "name": s["name"], "reason": s["reason"]} for s in stubs]
        answer, failure = self._call(
            {"op": "run_flow", "flow": probe, "input_text": str(input_text), "timeout": timeout}, timeout
        )
        if failure == "fatal":
            return FlowRun(ok=False, error=self._unavailable_report().error, stubbed=stubbed).model_dump()
        if answer is not None:
            answer.pop("id", None)
            try:
                return FlowRun.model_validate({**_redact_tree(answer), "stubbed": stubbed}).model_dump()
            except ValidationError:
                failure = "The sandbox's answer was not a flow run; it was discarded."
        return FlowRun(ok=False, error=failure, stubbed=stubbed).model_dump()

    def component_template_sync(self, code: str, timeout: float | None = None) -> dict[str, Any]:
        """The node template lfx builds for ``code`` (built in a sandboxed child, never here).

        Returns ``{"ok": True, "template": {...}}`` (the frontend node a flow's custom node
        carries; its ``code`` value is the code we sent, not what came back) or ``{"ok": False,
        "error": ...}``; redacted, never raises.
        """
        timeout = self.timeout if timeout is None else timeout
        answer, failure = self._call({"op": "component_template", "code": code, "timeout": timeout}, timeout)
        if failure == "fatal":
            return {"ok": False, "error": self._unavailable_report().error}
        if answer is not None:
            template = answer.get("template")
            if answer.get("ok") and isinstance(template, dict) and isinstance(template.get("template"), dict):
                template = _redact_tree(template)
                if isinstance(template["template"].get("code"), dict):
                    template["template"]["code"]["value"] = code
                return {"ok": True, "template": template}
            failure = redact_text(str(answer.get("error") or "lfx built no template for the component.")[:2000])
        return {"ok": False, "error": failure}

    def flow_catalog_sync(self) -> dict[str, dict[str, Any]]:
        """lfx's bundled components (``{type: node template}``), for flows; never computed here.

        The zygote read them when it started, before any request's code ran, and sends them
        itself (a *fact*, see ``_flow_ops.py``); the answer is inflated with a size cap,
        shape-checked and cached on this validator. Raises ``ConfigError`` with the reason when
        the sandbox cannot give it (lfx missing, the worker dead).
        """
        from lfassist_jupyter.sandbox.worker.flow_kit import unpack

        with self._lock:
            if self._flow_catalog is not None:
                return self._flow_catalog
            answer, failure = self._call({"op": "flow_catalog", "timeout": STARTUP_TIMEOUT}, STARTUP_TIMEOUT)
            if failure == "fatal":
                why = str(self._unavailable_report().error)
                raise ConfigError(why.replace("Runtime validation", "The flow catalogue"))
            if answer is None:
                raise ConfigError(f"The flow catalogue is unavailable: {failure}")
            try:
                registry = _check_catalog(unpack(answer.get("z"), CATALOG_CAP))
            except ValueError as exc:
                raise ConfigError(f"The sandbox sent no usable flow catalogue ({exc}).") from None
            self._flow_catalog = registry
            return registry

    def build_flow_sync(
        self,
        spec: str,
        *,
        extra: dict[str, dict[str, Any]] | None = None,
        repair: bool = True,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Build Langflow flow JSON from spec text with lfx's builder, in a fresh sandboxed child.

        Building runs a node's code when a real-time-refresh field is set (Langflow's form
        update), so it never happens in this process. ``extra`` holds the catalogue entries
        beyond lfx's bundled ones (generated components, a Langflow server's). Returns a
        ``FlowBuild`` as a dict (schema-checked; texts redacted); never raises: a failure of the
        sandbox itself is ``ok=False`` with ``error``.
        """
        from lfassist_jupyter.sandbox.worker.flow_kit import unpack

        timeout = max(self.timeout, 30.0) if timeout is None else timeout
        payload = {"op": "flow_build", "spec": str(spec), "extra": extra or {}, "repair": bool(repair)}
        answer, failure = self._call({**payload, "timeout": timeout}, timeout)
        if failure == "fatal":
            return FlowBuild(ok=False, spec=spec, error=self._unavailable_report().error).model_dump()
        if answer is not None and not answer.get("ok"):
            failure = redact_text(str(answer.get("error") or "The flow could not be built.")[:2000])
        elif answer is not None:
            try:
                built = unpack(answer.get("z"), FLOW_CAP)
                if not isinstance(built, dict):
                    raise ValueError("not an object")
                for key in ("errors", "warnings", "changes"):
                    built[key] = _redact_tree(built.get(key) or [])
                return FlowBuild.model_validate(built).model_dump()
            except (ValueError, ValidationError):
                failure = "The sandbox's answer was not a built flow; it was discarded."
        return FlowBuild(ok=False, spec=spec, error=failure).model_dump()

    def reference_sync(self) -> dict[str, Any] | None:
        """What the worker's lfx offers (input classes and parameters), for the prompt.

        Computed by the zygote before its first fork (no generated code ever ran there),
        schema-checked and redacted here.
        """
        with self._lock:
            try:
                self._wait_ready()
            except (_WorkerDied, _WorkerTimeout):
                return None
            return self._reference

    async def reference(self) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.reference_sync)

    def info(self) -> dict[str, Any]:
        """State for ``%assist status``: interpreter, lfx version, pid, restarts, isolation."""
        ready = self._ready or {}
        if self.isolation is None:
            self.isolation, self.isolation_reason = _isolation.probe(self.python)
        return {
            "state": self.state,
            "python": self.python,
            "lfx_version": ready.get("lfx_version"),
            "pid": self.pid,
            "restarts": self.restarts,
            "timeout": self.timeout,
            "memory_mb": self.memory_mb,
            "error": self._fatal,
            "isolation": self.isolation,
            "isolation_reason": self.isolation_reason,
            "confinement": _confinement_text(ready.get("confinement")),
            "scratch_mb": self.scratch_mb if self.isolation == "full" else None,
        }


def _confinement_text(found: object) -> str | None:
    """The kernel layers each child runs under, as the zygote found them ("seccomp, Landlock ABI 7")."""
    if not isinstance(found, dict):
        return None
    layers = ["seccomp"] if found.get("seccomp") is True else []
    if isinstance(found.get("landlock"), int) and found["landlock"] > 0:
        layers.append(f"Landlock ABI {found['landlock']}")
    return ", ".join(layers) or "none"


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


def _merge(
    static: ValidationReport, runtime: ValidationReport, security: SecurityMode | bool = "reject"
) -> ValidationReport:
    """One report: Langflow's verdict (``builds``, from the worker) and every finding, static
    ones first; a fact both phases found (same ``rule``) is kept once, with its line.

    The worker judges as for generated code (a call its sandbox refused is an ``error``, like
    the static finding for the same call; no outputs is an ``error``).  For code a user brings
    (``security`` ``"report"`` or ``"off"``) those become what the static scan says for it: a
    labelled ``policy`` finding, and a warning."""
    if security_mode(security) != "reject":
        _as_users_code(runtime)
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


def _as_users_code(report: ValidationReport) -> None:
    """Runtime verdicts that are refusals for generated code and notes for a user's own code."""
    for finding in report.findings:
        if finding.severity != "error":
            continue
        if finding.rule == "sandbox-refused":
            what = finding.message.split("; the validation sandbox refused it")[0]
            finding.severity = "policy"
            finding.message = (
                f"Refused at runtime: {what}. Langflow allows it; the validation sandbox refused it, "
                "so the smoke run stopped there."
            )
        elif finding.rule == "no-outputs":
            finding.severity = "warning"
            text = finding.message[:1].upper() + finding.message[1:]
            if text not in report.warnings:
                report.warnings.append(text)
    if report.builds is True and not report.by_severity("error"):
        report.error = None  # settle() recomputes the verdict from what is left


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
    return _merge(static, runtime, security)


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
