"""The validation worker: a warm, isolated process that builds and smoke-runs components.

This file runs as a *script* (``python -I _worker.py CONFIG``) in a configurable
interpreter, possibly one where lfassist_jupyter is not installed, so it imports only
the standard library and lfx.  It speaks JSON lines: one request on stdin, one answer on
a private copy of stdout.  File descriptors 1 and 2 are pointed at files in the private
working directory, so whatever generated code prints never corrupts the protocol and
never reaches the notebook.

Defences, in depth (the parent adds a wall-clock kill and restarts a dead worker):
- resource limits: address space, file size, no core dumps, a CPU-time cap per request;
- an audit hook, armed only while generated code runs, that refuses process creation,
  signals, rlimit changes, writes/deletes outside the private directory, and network
  access (recorded, so a component that needs the network is "not smoke-tested", not failed);
- SIGALRM for a soft per-request timeout that keeps the worker alive when it can.
"""

from __future__ import annotations

import gc

# Importing lfx allocates millions of objects; collecting while importing is wasted work
# (~15% of the start-up here).  Re-enabled after the warm-up, with the warm heap frozen.
gc.disable()

import ast
import asyncio
import contextlib
import importlib.util
import inspect
import io
import json
import os
import re
import resource
import signal
import sys
import time
import traceback
import types

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
SANDBOX_DIR = os.path.realpath(os.getcwd())

# -- protocol channel and output capture ------------------------------------------------

_proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
_out_fd = os.open(os.path.join(SANDBOX_DIR, "component-output.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
os.dup2(_out_fd, 1)
os.dup2(_out_fd, 2)
sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)


def send(msg: dict) -> None:
    _proto.write(json.dumps(msg, default=str) + "\n")
    _proto.flush()


# -- limits ----------------------------------------------------------------------------


def _set_limit(which: int, soft: int, hard: int | None = None) -> None:
    try:
        _cur_soft, cur_hard = resource.getrlimit(which)
        hard = cur_hard if hard is None else hard
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass


_set_limit(resource.RLIMIT_CORE, 0, 0)
if CONFIG.get("memory_mb"):
    _mem = int(CONFIG["memory_mb"]) * 1024 * 1024
    _set_limit(resource.RLIMIT_AS, _mem, _mem)
_set_limit(resource.RLIMIT_FSIZE, 64 * 1024 * 1024, 64 * 1024 * 1024)

# -- the audit hook -------------------------------------------------------------------


class SandboxViolation(PermissionError):
    """Raised inside generated code for an operation the sandbox does not allow."""


class NetworkBlocked(ConnectionRefusedError):
    """Raised inside generated code for any network access."""


_STATE = {"armed": False, "network": False, "violations": []}
_BLOCKED_EVENTS = {
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.killpg",
    "subprocess.Popen",
    "pty.spawn",
    "resource.setrlimit",
    "resource.prlimit",
    "os.setuid",
    "sys.addaudithook",
    "os.startfile",
    "os.putenv",
    "os.unsetenv",
    "signal.pthread_kill",
}
_NETWORK_EVENTS = {
    "socket.connect",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.sendto",
    "socket.bind",
}
_PATH_EVENTS = {
    "os.remove",
    "os.rmdir",
    "os.rename",
    "os.chmod",
    "os.chown",
    "os.truncate",
    "shutil.rmtree",
    "os.link",
    "os.symlink",
    "os.mkdir",
    "os.utime",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _inside(path: object) -> bool:
    if isinstance(path, int):
        return True  # an already-open descriptor
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str | os.PathLike):
        return True
    real = os.path.realpath(os.fspath(path))
    return real == os.devnull or real == SANDBOX_DIR or real.startswith(SANDBOX_DIR + os.sep)


def _audit(event: str, args: tuple) -> None:
    if not _STATE["armed"]:
        return
    if event in _BLOCKED_EVENTS:
        _STATE["violations"].append(event)
        raise SandboxViolation(f"'{event}' is not allowed inside a Langflow component validation sandbox")
    if event in _NETWORK_EVENTS:
        _STATE["network"] = True
        raise NetworkBlocked(f"network access ('{event}') is disabled while validating")
    if event == "open" and len(args) >= 3:
        path, mode, flags = args[0], args[1], args[2]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing and not _inside(path):
            _STATE["violations"].append(f"write to {path}")
            raise SandboxViolation(f"writing to {path} is not allowed while validating (only the sandbox directory)")
    elif event in _PATH_EVENTS and args and not all(_inside(a) for a in args[:2] if isinstance(a, str | bytes)):
        _STATE["violations"].append(f"{event} {args[0]}")
        raise SandboxViolation(f"'{event}' outside the sandbox directory is not allowed while validating")


class _Timeout(BaseException):
    """Raised by SIGALRM; a BaseException so ``except Exception`` in generated code can't eat it."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout()


signal.signal(signal.SIGALRM, _on_alarm)


class _Armed:
    """Arms the audit hook, the alarm and the CPU cap around generated code.

    ``deadline`` (time.monotonic) is shared by every phase of one request, so the whole
    validation -- build, instantiation and every output -- fits in one timeout and the
    parent can use a tight kill deadline.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __enter__(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout()
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(used.ru_utime + used.ru_stime)
        _set_limit(resource.RLIMIT_CPU, cpu + int(remaining) + 2)
        signal.setitimer(signal.ITIMER_REAL, remaining)
        _STATE["armed"] = True

    def __exit__(self, *exc: object) -> None:
        _STATE["armed"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        _set_limit(resource.RLIMIT_CPU, resource.RLIM_INFINITY)


# -- lfx ---------------------------------------------------------------------------------

STARTED = time.perf_counter()
try:
    from lfx.custom.custom_component.component import Component
    from lfx.custom.utils import build_custom_component_template
    from lfx.schema.data import Data
    from lfx.schema.dataframe import DataFrame
    from lfx.schema.message import Message

    try:
        from importlib.metadata import version as _dist_version

        LFX_VERSION = _dist_version("lfx")
    except Exception:
        LFX_VERSION = None
except Exception as exc:
    send({"op": "fatal", "error": f"{type(exc).__name__}: {exc}", "python": sys.executable})
    sys.exit(3)

_WARMUP = """
from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class WarmupComponent(Component):
    display_name = "Warmup"
    inputs = [MessageTextInput(name="input_text", display_name="Text")]
    outputs = [Output(display_name="Output", name="output", method="build_output")]

    def build_output(self) -> Message:
        return Message(text=self.input_text)
"""

# -- helpers -----------------------------------------------------------------------------

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_DIST_ALIASES = {
    "sklearn": "scikit-learn",
    "cv2": "opencv-python",
    "PIL": "Pillow",
    "yaml": "PyYAML",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "fitz": "PyMuPDF",
    "Crypto": "pycryptodome",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "magic": "python-magic",
    "serial": "pyserial",
    "usb": "pyusb",
    "skimage": "scikit-image",
    "attr": "attrs",
    "google": "google-api-python-client",
    "OpenSSL": "pyOpenSSL",
    "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary",
    "zmq": "pyzmq",
    "telegram": "python-telegram-bot",
    "discord": "discord.py",
    "slack_sdk": "slack-sdk",
    "git": "GitPython",
}


def _missing_packages(code: str) -> list[dict]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    seen, missing = set(), []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module.split(".")[0]]
        for name in names:
            if name in seen or name in _STDLIB:
                continue
            seen.add(name)
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                dist = _DIST_ALIASES.get(name, name.replace("_", "-"))
                missing.append({"module": name, "distribution": dist, "fix": f"%pip install {dist}"})
    return missing


def _missing_module(exc: BaseException) -> str | None:
    """The top-level module a ModuleNotFoundError (possibly wrapped by lfx) names."""
    name = None
    seen: BaseException | None = exc
    while seen is not None and name is None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            name = seen.name
        seen = seen.__cause__ or seen.__context__
    if name is None:
        match = re.search(r"No module named '([\w.]+)'", _error_text(exc))
        name = match.group(1) if match else None
    if name is None:
        return None
    top = name.split(".")[0]
    try:
        installed = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        installed = False
    return None if installed else top  # an installed package with a wrong submodule is a wrong path


def _error_text(exc: BaseException) -> str:
    detail = getattr(exc, "detail", None)  # lfx raises fastapi's HTTPException with a dict
    if isinstance(detail, dict) and detail.get("error"):
        return str(detail["error"])
    if isinstance(detail, str) and detail:
        return detail
    return f"{type(exc).__name__}: {exc}"


def _exc_traceback(exc: BaseException) -> str:
    detail = getattr(exc, "detail", None)
    if isinstance(detail, dict) and detail.get("traceback"):
        return str(detail["traceback"])
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _field_summaries(instance: object, template: dict) -> tuple[list[dict], list[dict]]:
    inputs = []
    for inp in getattr(instance, "inputs", None) or []:
        inputs.append(
            {"name": inp.name, "display_name": getattr(inp, "display_name", None), "type": type(inp).__name__}
        )
    outputs = []
    for out in template.get("outputs", []) or []:
        types = list(out.get("types") or [])
        outputs.append(
            {
                "name": out.get("name"),
                "display_name": out.get("display_name"),
                "method": out.get("method"),
                "types": types,
                "type": " | ".join(types) or None,
            }
        )
    return inputs, outputs


# -- smoke probes ------------------------------------------------------------------------

_UNPROBEABLE = object()
_TEXT = "hello world"


def _probe(inp: object) -> object:
    kind = type(inp).__name__
    default = getattr(inp, "value", None)
    options = getattr(inp, "options", None) or []
    is_list = bool(getattr(inp, "is_list", False))

    def listify(v: object) -> object:
        return [v] if is_list and not isinstance(v, list) else v

    if "Secret" in kind:
        return _UNPROBEABLE
    if kind == "BoolInput":
        return default if isinstance(default, bool) else True
    if kind == "IntInput":
        return default if isinstance(default, int) and not isinstance(default, bool) and default else 3
    if kind in ("FloatInput", "SliderInput"):
        return default if isinstance(default, int | float) and default else 0.5
    if kind in ("DropdownInput", "TabInput"):
        return default if default in options else (options[0] if options else default)
    if kind == "MultiselectInput":
        return default if default else options[:1]
    types = getattr(inp, "input_types", None) or []
    # lfx 1.13 renamed Data to JSON and DataFrame to Table (DataInput *is* JSONInput): go by the
    # types an input accepts, not by its class name alone.
    if kind in ("DataInput", "JSONInput") and ("Data" in types or "JSON" in types or kind == "DataInput"):
        return listify(Data(data={"text": _TEXT, "value": 1}))
    if kind == "DataFrameInput":
        return DataFrame([{"text": _TEXT, "value": 1}, {"text": "second row", "value": 2}])
    if kind == "MessageInput":
        return listify(Message(text=_TEXT))
    if kind in ("DictInput", "NestedDictInput", "JSONInput"):  # a JSONInput that takes no Data: a dict
        return default if isinstance(default, dict) and default else {"key": "value"}
    if kind == "FileInput":
        path = os.path.join(SANDBOX_DIR, "probe.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"{_TEXT}\nsecond line\n")
        return path
    if kind == "HandleInput":
        if "Message" in types:
            return listify(Message(text=_TEXT))
        if "Data" in types or "JSON" in types:
            return listify(Data(data={"text": _TEXT, "value": 1}))
        if "DataFrame" in types or "Table" in types:
            return DataFrame([{"text": _TEXT, "value": 1}])
        if "Text" in types or "str" in types:
            return listify(_TEXT)
        return _UNPROBEABLE
    if kind in (
        "TableInput",
        "ToolsInput",
        "McpInput",
        "ModelInput",
        "ConnectionRefInput",
        "DBProviderInput",
    ):
        return _UNPROBEABLE if getattr(inp, "required", False) else None
    if isinstance(default, str) and default:
        return listify(default)
    return listify(_TEXT)


_TYPE_NAMES = {
    "Message": "Message",
    "Data": "Data",
    "JSON": "Data",  # lfx 1.13's new name for Data
    "DataFrame": "DataFrame",
    "Table": "DataFrame",  # ... and for DataFrame
    "str": "str",
    "Text": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "dict": "dict",
    "list": "list",
}
_PY_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list}


def _type_ok(value: object, declared: list[str]) -> bool | None:
    """True/False when the declared types can be checked, None when they cannot."""
    classes = []
    for name in declared:
        key = _TYPE_NAMES.get(name)
        if key is None:
            return None
        classes.append({"Message": Message, "Data": Data, "DataFrame": DataFrame}.get(key) or _PY_TYPES[key])
    items = value if isinstance(value, list) and list not in classes else [value]
    return all(isinstance(v, tuple(classes)) for v in items)


_BUG_TYPES = (NameError, AttributeError, ImportError, TypeError, SyntaxError, AssertionError, RecursionError)
_CALL_ERRORS = (
    "required positional argument",
    "unexpected keyword argument",
    "positional argument",
    "is not callable",
    "takes no arguments",
    "missing",
    "got multiple values",
)


def _is_bug(exc: BaseException, component: object) -> bool:
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover
        ValidationError = ()  # type: ignore[assignment]
    if isinstance(exc, ValidationError):  # e.g. Data(data=[...])
        return True
    if isinstance(exc, AttributeError):
        # On the component, a class or a module the attribute is missing whatever the input;
        # on a value (None, a str) it may come from the fake data.
        obj = getattr(exc, "obj", None)
        if obj is component or isinstance(obj, type | types.ModuleType):
            return True
        return obj is None and f"'{type(component).__name__}' object has no attribute" in str(exc)
    if isinstance(exc, TypeError):
        return any(s in str(exc) for s in _CALL_ERRORS)
    return isinstance(exc, _BUG_TYPES)


def _call(method: object) -> object:
    result = method()  # type: ignore[operator]
    if inspect.isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            result = loop.run_until_complete(result)
        finally:
            loop.close()
    return result


def _smoke(cls: type, code: str, instance: object, template: dict, report: dict, deadline: float) -> None:
    inputs = list(getattr(instance, "inputs", None) or [])
    secrets = [i.name for i in inputs if "Secret" in type(i).__name__]
    if secrets:
        report.update(smoke="skipped", smoke_reason=f"it needs a secret (input '{secrets[0]}')")
        return
    values = {}
    for inp in inputs:
        value = _probe(inp)
        if value is _UNPROBEABLE:
            kinds = ", ".join(getattr(inp, "input_types", None) or [type(inp).__name__])
            report.update(smoke="skipped", smoke_reason=f"input '{inp.name}' needs a connection ({kinds})")
            return
        if value is not None:
            values[inp.name] = value
    _STATE["network"] = False
    with _Armed(deadline):
        component = cls(_code=code, **values)
    for out in template.get("outputs", []) or []:
        name, method_name, declared = out.get("name"), out.get("method"), list(out.get("types") or [])
        method = getattr(component, method_name or "", None)
        if method is None:
            continue
        try:
            with _Armed(deadline):
                result = _call(method)
        except _Timeout:
            raise
        except SandboxViolation as exc:
            report.update(
                smoke="failed",
                error=f"Output '{name}' ({method_name}) did something not allowed: {exc}",
                traceback=traceback.format_exc(),
            )
            return
        except BaseException as exc:
            if _STATE["network"]:
                report.update(smoke="skipped", smoke_reason=f"output '{name}' uses the network")
                return
            if isinstance(exc, SystemExit | KeyboardInterrupt):
                report.update(
                    smoke="failed",
                    error=f"Output '{name}' ({method_name}) tried to stop the process ({type(exc).__name__}).",
                    traceback=traceback.format_exc(),
                )
                return
            if _is_bug(exc, component):
                msg = str(exc).strip().splitlines()
                first = " ".join(msg[:3])[:500] if msg else ""
                report.update(
                    smoke="failed",
                    error=f"Output '{name}' ({method_name}) raised {type(exc).__name__} "
                    f"when called with sample inputs: {first}",
                    traceback=traceback.format_exc(),
                )
                return
            report["warnings"].append(
                f"Output '{name}' raised {type(exc).__name__} on sample inputs ({str(exc)[:160]}); "
                "this may be caused by the fake data, so it was not counted as a failure."
            )
            continue
        if _STATE["network"]:
            report.update(smoke="skipped", smoke_reason=f"output '{name}' uses the network")
            return
        ok = _type_ok(result, declared)
        if ok is False:
            got = type(result).__name__
            hint = " Wrap the text: Message(text=...)." if got == "str" and "Message" in declared else ""
            report.update(
                smoke="failed",
                error=f"Output '{name}' ({method_name}) returned {got} but is declared as "
                f"{' | '.join(declared)}.{hint}",
            )
            return
        if result is None:
            report["warnings"].append(f"Output '{name}' returned None for the sample inputs.")
    report["smoke"] = "passed"


# -- requests ------------------------------------------------------------------------------


def validate(code: str, *, smoke: bool, timeout: float) -> dict:
    report: dict = {
        "is_valid": False,
        "phase": None,
        "warnings": [],
        "phases_run": ["runtime"],
        "smoke": "not_run",
        "timings_ms": {},
        "lfx_version": LFX_VERSION,
    }
    _STATE["violations"] = []
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    missing = _missing_packages(code)
    if missing:
        names = ", ".join(m["module"] for m in missing)
        fixes = " ".join(m["fix"] for m in missing)
        report.update(
            phase="runtime",
            missing_packages=missing,
            error=f"ModuleNotFoundError: No module named {names!r} is installed. Install it ({fixes}) "
            "or use only the standard library and lfx.",
        )
        report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
        return report
    try:
        with _Armed(deadline):
            template, instance = build_custom_component_template(Component(_code=code))
    except _Timeout:
        report.update(phase="runtime", error=f"Building the component took longer than {timeout:g} s (infinite loop?).")
        return report
    except BaseException as exc:
        text = _error_text(exc)
        if isinstance(exc, SystemExit):
            text = "The component's code called sys.exit() while being loaded."
        report.update(phase="runtime", error=text, traceback=_exc_traceback(exc))
        module = _missing_module(exc)
        if module:  # an import deeper down (e.g. inside lfx) needs a package that is not installed
            dist = _DIST_ALIASES.get(module, module.replace("_", "-"))
            report["missing_packages"] = [{"module": module, "distribution": dist, "fix": f"%pip install {dist}"}]
        return report
    finally:
        report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
    cls = type(instance)
    report["class_name"] = cls.__name__
    report["display_name"] = template.get("display_name")
    report["description"] = template.get("description")
    report["inputs"], report["outputs"] = _field_summaries(instance, template)
    problems = []
    for out in report["outputs"]:
        if out["method"] is None:
            continue  # a legacy component built by its build() method
        if not out["types"]:
            problems.append(f"Output '{out['name']}' has no type: give method '{out['method']}' a return annotation.")
        if not callable(getattr(cls, out["method"], None)):
            problems.append(f"Output '{out['name']}' points to method '{out['method']}', which does not exist.")
    if problems:
        report.update(phase="runtime", error=" ".join(problems))
        return report
    if smoke:
        report["phases_run"].append("smoke")
        t1 = time.perf_counter()
        try:
            _smoke(cls, code, instance, template, report, deadline)
        except _Timeout:
            report.update(smoke="failed", error=f"An output did not finish within {timeout:g} s (infinite loop?).")
        except BaseException as exc:
            report.update(
                smoke="failed",
                error=f"Instantiating with sample inputs failed: {_error_text(exc)}",
                traceback=_exc_traceback(exc),
            )
        report["timings_ms"]["smoke"] = round((time.perf_counter() - t1) * 1000, 3)
        if report["smoke"] == "failed":
            report["phase"] = "smoke"
            return report
    report["is_valid"] = True
    return report


_INPUT_NOISE = {
    "field_type",
    "override_skip",
    "dynamic",
    "title_case",
    "track_in_telemetry",
    "trace_as_input",
    "trace_as_metadata",
    "api_editable",
    "show",
    "list_add_label",
    "refresh_button_text",
    "real_time_refresh",
    "refresh_button",
    "helper_text",
    "helper_text_metadata",
    "load_from_db",
    "conditional_options",
    "options_metadata",
    "dialog_inputs",
    "toggle_value",
    "toggle_disable",
    "button_metadata",
    "connection_link",
    "search_category",
    "temp_file",
    "auth_tooltip",
}
_COMMON = ["name", "display_name", "info", "value", "required", "advanced", "placeholder", "input_types"]


def reference() -> dict:
    """The input classes lfx.io exports, with the parameters each adds to the common ones."""
    import lfx.io as lfx_io
    from lfx.inputs.input_mixin import BaseInputMixin

    base = set(BaseInputMixin.model_fields)
    inputs = []
    for name in sorted(getattr(lfx_io, "__all__", [])):
        cls = getattr(lfx_io, name, None)
        if name == "Output" or not isinstance(cls, type) or not hasattr(cls, "model_fields"):
            continue
        own = [f for f in cls.model_fields if f not in base and f not in _INPUT_NOISE and not f.startswith("_")]
        doc = (inspect.getdoc(cls) or "").strip().split("\n")[0][:100]
        inputs.append({"name": name, "params": own, "doc": doc})
    return {"lfx_version": LFX_VERSION, "common_params": _COMMON, "inputs": inputs}


def main() -> None:
    t0 = time.perf_counter()
    # The first build costs ~1 s; pay it now.  A failure here shows up in the first real request.
    with contextlib.suppress(Exception):
        build_custom_component_template(Component(_code=_WARMUP))
    gc.freeze()  # the imported world is permanent: keep it out of every later collection
    gc.enable()
    sys.addaudithook(_audit)
    send(
        {
            "op": "ready",
            "lfx_version": LFX_VERSION,
            "python": sys.executable,
            "pid": os.getpid(),
            "import_ms": round((t0 - STARTED) * 1000),
            "warmup_ms": round((time.perf_counter() - t0) * 1000),
        }
    )
    stdin = sys.stdin
    for line in stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        op = req.get("op")
        try:
            if op == "validate":
                out = validate(req["code"], smoke=bool(req.get("smoke", True)), timeout=float(req.get("timeout", 10)))
            elif op == "reference":
                out = reference()
            elif op == "ping":
                out = {"pong": True}
            elif op == "exit":
                break
            else:
                out = {"error": f"unknown op {op!r}"}
        except _Timeout:
            out = {"is_valid": False, "phase": "runtime", "error": "Validation timed out."}
        except BaseException as exc:
            out = {
                "is_valid": False,
                "phase": "runtime",
                "error": f"Validator error: {type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
        out["id"] = req.get("id")
        send(out)


if __name__ == "__main__":
    main()
