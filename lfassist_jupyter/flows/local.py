"""A real run of a flow on this machine: the user's explicit choice, with only the keys it needs.

The probe run (``flows.run``) proves the wiring with models stubbed, no keys and no network.
A real run calls the models, so it gets the network and the API keys -- but only the keys
the flow reads (its ``load_from_db`` fields name global variables, which lfx resolves from
the environment when it has no database), never the rest of the kernel's environment. It
still never runs in the user's kernel: a flow may hold generated components, so it runs in
a fresh process of its own, under bubblewrap where available (no view of the user's files,
a private HOME and /tmp, nothing surviving the run), and what comes back is capped and has
the passed keys redacted, like everything else that comes out of a generated component.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lfassist_jupyter.errors import ConfigError

RUNNER = Path(__file__).with_name("_local_runner.py")
MAX_ANSWER_BYTES = 1_000_000
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def flow_variables(flow: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(variable, node, node id, field)`` for every field that reads a global variable: what a
    real run must be given. A field typed by hand (a key pasted into the flow) needs nothing."""
    data = flow.get("data", flow) if isinstance(flow, dict) else {}
    found = []
    for node in data.get("nodes") or []:
        if not isinstance(node, dict) or not isinstance(node.get("data"), dict):
            continue
        info = node["data"].get("node") or {}
        name = str(info.get("display_name") or node["data"].get("type") or node.get("id"))
        for fname, field in (info.get("template") or {}).items():
            if isinstance(field, dict) and field.get("load_from_db") and isinstance(field.get("value"), str):
                value = field["value"].strip()
                if value:
                    found.append((value, name, str(node.get("id")), fname))
    return found


def run_flow(
    flow: dict[str, Any] | str | Path,
    input_text: str = "",
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """Run ``flow`` for real on ``input_text``: models are called, with the keys it needs.

    ``flow`` is flow JSON, a ``.json`` file or spec text. The variables the flow reads are
    taken from ``env`` (default: this process's environment) and passed alone; a missing one
    is a ``ConfigError`` naming it. Returns the probe run's shape, ``{"ok", "text",
    "component", "error", "seconds"}``, plus ``"real": True``, ``"variables"`` (the names
    passed, never their values) and ``"isolation"``. A failing flow is reported, not raised.
    """
    from .catalog import default_catalog
    from .validate import _load, validate_flow

    if not isinstance(input_text, str):
        raise ConfigError(f"The input must be text, not {type(input_text).__name__}.")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"timeout must be a positive number of seconds, not {timeout!r}.")
    catalog = default_catalog()
    loaded, errors, _ = _load(flow, catalog)
    if loaded is None:
        raise ConfigError(f"Not run: {errors[0] if errors else 'no flow'}")
    report = validate_flow(loaded, catalog=catalog)
    problems = [*errors, *report.errors]  # what the builder dropped (an unknown component) counts too
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"Not run: the flow has errors: {problems[0]}{more}")

    reads = flow_variables(loaded)
    read_fields = {(nid, fname) for _, _, nid, fname in reads}
    unset = [
        f"{n.node}.{n.field} ({n.kind})"
        for n in report.needs
        if n.kind == "model" or (n.kind == "secret" and (n.node_id, n.field) not in read_fields)
    ]
    if unset:
        raise ConfigError(
            f"Not run: the flow still needs {', '.join(unset)}. Choose them in the spec's config "
            "(or in Langflow) first; a key can name a variable, e.g. `M.api_key: OPENAI_API_KEY`."
        )
    source = os.environ if env is None else env
    variables: dict[str, str] = {}
    missing: list[str] = []
    for name, node, _, fname in reads:
        if not _ENV_NAME.match(name):
            raise ConfigError(f"Not run: {node}.{fname} reads {name!r}, which is not a variable name.")
        value = source.get(name)
        if value:
            variables[name] = value
        elif f"{name} ({node}.{fname})" not in missing:
            missing.append(f"{name} ({node}.{fname})")
    if missing:
        raise ConfigError(
            f"Not run: the flow needs {', '.join(missing)}. Set it in the environment or pass env={{...}}."
        )
    return _run(loaded, input_text, variables, timeout)


def _run(flow: dict[str, Any], input_text: str, variables: dict[str, str], timeout: float) -> dict[str, Any]:
    from lfassist_jupyter.validation import _isolation
    from lfassist_jupyter.validation.sandbox import redact_text, scrubbed_env

    python = os.environ.get("LFASSIST_VALIDATOR_PYTHON") or sys.executable
    mode, reason = _isolation.probe(python)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lfassist-run-") as tmp:
        os.makedirs(os.path.join(tmp, "home"), exist_ok=True)
        env = scrubbed_env(tmp)  # the keys go on stdin: a command line is visible to `ps`
        argv = ["-I", "-u", str(RUNNER)]
        if mode == "full":
            env["HOME"], env["TMPDIR"] = _isolation.SANDBOX_HOME, _isolation.SANDBOX_TMP
            cmd = _isolation.bwrap_command(
                _isolation.bwrap_binary() or "bwrap", python, argv, env=env, extra_ro=(str(RUNNER),), network=True
            )
            popen_env: dict[str, str] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        else:
            cmd, popen_env = [python, *argv], env
        out_path, err_path = os.path.join(tmp, "answer"), os.path.join(tmp, "log")
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
                request = {"flow": flow, "input": input_text, "env": variables}
                proc.communicate(json.dumps(request).encode(), timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:  # also on KeyboardInterrupt: the stop button leaves nothing running
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        answer = _read_capped(out_path)
        log_tail = _read_capped(err_path, tail=True)

    def clean(text: Any) -> str:
        return redact_text(str(text or ""), extra=tuple(variables.values()))[:20_000]

    result: dict[str, Any] = {"ok": False, "text": "", "component": None, "error": None}
    if timed_out:
        result["error"] = f"the run did not finish within {timeout:g} s and was stopped."
    else:
        try:
            parsed = json.loads(answer) if answer else None
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            result.update(
                ok=parsed.get("ok") is True,
                text=clean(parsed.get("text")),
                component=clean(parsed.get("component")) or None,
                error=clean(parsed.get("error")) or None,
            )
        else:
            last = log_tail.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            result["error"] = clean(f"the run ended without an answer ({last[0]}).")
    result.update(
        real=True,
        variables=sorted(variables),
        isolation="bubblewrap (network allowed)" if mode == "full" else f"process only ({reason})",
        seconds=time.perf_counter() - started,
    )
    return result


def _read_capped(path: str, *, tail: bool = False) -> str:
    with open(path, "rb") as fh:
        if tail:
            fh.seek(max(0, os.path.getsize(path) - 4096))
        data = fh.read(MAX_ANSWER_BYTES)
    return data.decode("utf-8", "replace")
