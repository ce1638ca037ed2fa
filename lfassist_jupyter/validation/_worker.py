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
    "google.oauth2": "google-auth",
    "OpenSSL": "pyOpenSSL",
    "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary",
    "zmq": "pyzmq",
    "telegram": "python-telegram-bot",
    "discord": "discord.py",
    "slack_sdk": "slack-sdk",
    "git": "GitPython",
}


def _module_available(name: str) -> bool:
    """Whether ``import name`` can succeed, judged the way lfx imports at build time: a
    ``langflow.X`` that is not installed falls back to ``lfx.X`` (``_get_module_fallbacks`` in
    ``lfx/custom/validate.py``), so it is not missing when ``lfx.X`` exists."""
    candidates = [name]
    if name.startswith("langflow."):
        candidates.append("lfx." + name[len("langflow.") :])
    for candidate in candidates:
        top = candidate.split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
            if spec is None:
                continue
            parts = candidate.split(".")
            if spec.origin is None and len(parts) > 1 and importlib.util.find_spec(".".join(parts[:2])) is None:
                continue  # a namespace package (google.*) without this sub-package
            # The fallback must exist as a module, not just its package.
            if candidate != name and importlib.util.find_spec(candidate) is None:
                continue
            return True
        except (ImportError, ValueError, AttributeError):
            continue
    return False


def _imports(code: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(module-level imports lfx performs at build time, every other import), as (module, line).

    lfx runs only the ``import``/``from`` statements directly in the module body
    (``prepare_global_scope``); an import inside a method (or a ``try:``) runs when that
    code runs, so a missing package there never stops Langflow from building the component.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [], []
    top_level = {id(n) for n in tree.body}
    build, run = [], []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != "__future__":
            names = [node.module]
        for name in names:
            (build if id(node) in top_level else run).append((name, node.lineno))
    return build, run


def _package(module: str) -> dict:
    """What to install for ``module``: its top-level name, or ``ns.sub`` for a namespace package."""
    parts = module.split(".")
    depth = 3 if parts[:2] == ["google", "cloud"] else 2 if parts[0] in _NAMESPACES else 1
    top = ".".join(parts[:depth])
    dist = _DIST_ALIASES.get(top, top.replace("_", "-").replace(".", "-"))
    return {"module": top, "distribution": dist, "fix": f"%pip install {dist}"}


_NAMESPACES = {"google", "azure"}


def _missing_packages(code: str, *, when: str = "build") -> list[dict]:
    """Packages the code imports that are not installed: ``when="build"`` for the imports lfx
    performs while building (module level), ``"run"`` for those inside methods."""
    build, run = _imports(code)
    seen, missing = set(), []
    for name, _line in build if when == "build" else run:
        top = name.split(".")[0]
        if top in _STDLIB or name in seen:
            continue
        seen.add(name)
        pkg = _package(name)
        if not _module_available(name) and pkg["distribution"] not in {m["distribution"] for m in missing}:
            missing.append(pkg)
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
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return top
    if spec.origin is None and "." in name:
        # A namespace package (google, azure): each sub-package is its own distribution,
        # so "No module named 'google.auth'" means google-auth is missing, not a wrong path.
        return ".".join(name.split(".")[:2])
    return None  # an installed package with a wrong submodule is a wrong path


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


# Not SyntaxError: the component's own code compiled when lfx built it, so a SyntaxError while an
# output runs comes from compiling *data* (a code input given our sample text).
_BUG_TYPES = (NameError, AttributeError, ImportError, TypeError, AssertionError, RecursionError)
_CALL_ERRORS = (
    "required positional argument",
    "unexpected keyword argument",
    "positional argument",
    "is not callable",
    "takes no arguments",
    "missing",
    "got multiple values",
)
# Input classes whose value has one declared Python type in Langflow: an AttributeError on such
# a value (``.text`` on a MessageTextInput's str) fails on every real value, not just on ours.
_DECLARED_VALUE_TYPES = {
    "MessageTextInput": str,
    "StrInput": str,
    "MultilineInput": str,
    "PromptInput": str,
    "IntInput": int,
    "FloatInput": float,
    "SliderInput": float,
    "BoolInput": bool,
    "DictInput": dict,
}


def _declared_input(obj: object, probes: dict) -> str | None:
    """The input whose sample value ``obj`` is, when that input declares one value type."""
    for name, (kind, value) in probes.items():
        declared = _DECLARED_VALUE_TYPES.get(kind)
        if declared is None:
            continue
        same = obj is value or (type(obj) is type(value) and isinstance(obj, str | int | float) and obj == value)
        if same and isinstance(obj, declared | list):
            return name
    return None


def _is_bug(exc: BaseException, component: object, probes: dict | None = None) -> bool:
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover
        ValidationError = ()  # type: ignore[assignment]
    if isinstance(exc, ValidationError):  # e.g. Data(data=[...])
        return True
    if isinstance(exc, AttributeError):
        # On the component, a class or a module the attribute is missing whatever the input;
        # on an input value of its declared type (a MessageTextInput's str) likewise; on
        # another value it may come from the fake data.
        obj = getattr(exc, "obj", None)
        if obj is component or isinstance(obj, type | types.ModuleType):
            return True
        if obj is not None and probes and _declared_input(obj, probes):
            return True
        return obj is None and f"'{type(component).__name__}' object has no attribute" in str(exc)
    if isinstance(exc, TypeError):
        return any(s in str(exc) for s in _CALL_ERRORS)
    return isinstance(exc, _BUG_TYPES)


def _holds_coroutine(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is, or holds (in a list, tuple, dict or Data), an un-awaited coroutine."""
    if inspect.iscoroutine(value) or isinstance(value, asyncio.Future):
        return True
    if depth >= 2:
        return False
    if isinstance(value, list | tuple | set):
        return any(_holds_coroutine(v, depth + 1) for v in list(value)[:50])
    if isinstance(value, dict):
        return any(_holds_coroutine(v, depth + 1) for v in list(value.values())[:50])
    data = getattr(value, "data", None) if isinstance(value, Data) else None
    return isinstance(data, dict) and _holds_coroutine(data, depth + 1)


def _close_coroutines(value: object, depth: int = 0) -> None:
    """Close what ``_holds_coroutine`` found, so Python does not warn 'never awaited' later."""
    if inspect.iscoroutine(value):
        value.close()
    elif depth < 2 and isinstance(value, list | tuple | set):
        for v in list(value)[:50]:
            _close_coroutines(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in list(value.values())[:50]:
            _close_coroutines(v, depth + 1)


def _call(component: object, method_name: str) -> object:
    """Call an output method the way Langflow does (``Component._get_output_result``): an
    ``async def`` (or a declared async delegate) is awaited; a plain method's return value is
    used as is -- so a coroutine it returns stays un-awaited, as it would in a flow."""
    method = getattr(component, method_name)
    target = None
    with contextlib.suppress(Exception):
        from lfx.utils.async_helpers import async_delegate_target

        target = async_delegate_target(component, method_name)
    if target is None and not inspect.iscoroutinefunction(method):
        return method()
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete((target or method)())
    finally:
        loop.close()


def _finding(severity: str, phase: str, message: str, **extra: object) -> dict:
    return {"severity": severity, "phase": phase, "message": message, **{k: v for k, v in extra.items() if v}}


def _first_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return " ".join(msg[:3])[:500] if msg else ""


def _smoke(cls: type, code: str, instance: object, template: dict, report: dict, deadline: float) -> None:
    findings = report["findings"]
    inputs = list(getattr(instance, "inputs", None) or [])
    secrets = [i.name for i in inputs if "Secret" in type(i).__name__]
    if secrets:
        report.update(smoke="skipped", smoke_reason=f"it needs a secret (input '{secrets[0]}')")
        return
    values, probes = {}, {}
    for inp in inputs:
        value = _probe(inp)
        if value is _UNPROBEABLE:
            kinds = ", ".join(getattr(inp, "input_types", None) or [type(inp).__name__])
            report.update(smoke="skipped", smoke_reason=f"input '{inp.name}' needs a connection ({kinds})")
            return
        if value is not None:
            values[inp.name] = value
            probes[inp.name] = (type(inp).__name__, value)
    outputs = [o for o in template.get("outputs", []) or [] if o.get("method")]
    if not outputs:
        reason = (
            "its outputs are created at run time (update_outputs)"
            if callable(getattr(cls, "update_outputs", None)) and "update_outputs" in code
            else "it has no output method to call"
        )
        report.update(smoke="skipped", smoke_reason=reason)
        return
    _STATE["network"] = False
    with _Armed(deadline):
        component = cls(_code=code, **values)
    for out in outputs:
        name, method_name, declared = out.get("name"), out.get("method"), list(out.get("types") or [])
        if getattr(component, method_name or "", None) is None:
            continue
        try:
            with _Armed(deadline):
                result = _call(component, method_name)
        except _Timeout:
            raise
        except SandboxViolation as exc:
            report.update(smoke="skipped", smoke_reason=f"output '{name}' did something the sandbox refuses ({exc})")
            findings.append(
                _finding(
                    "policy",
                    "smoke",
                    f"output `{name}` ({method_name}) did something the validation sandbox refuses: {exc}",
                    rule="sandbox",
                )
            )
            return
        except BaseException as exc:
            if _STATE["network"]:
                report.update(smoke="skipped", smoke_reason=f"output '{name}' uses the network")
                return
            if isinstance(exc, SystemExit | KeyboardInterrupt):
                findings.append(
                    _finding(
                        "error",
                        "smoke",
                        f"output `{name}` ({method_name}) tried to stop the process ({type(exc).__name__}).",
                        evidence=traceback.format_exc(),
                        rule="smoke-crash",
                    )
                )
                report["smoke"] = "failed"
                return
            module = _missing_module(exc) if isinstance(exc, ImportError) else None
            if module:
                pkg = _package(module)
                report.update(smoke="skipped", smoke_reason=f"output '{name}' needs {module} ({pkg['fix']})")
                return
            if _is_bug(exc, component, probes):
                which = _declared_input(getattr(exc, "obj", None), probes) if isinstance(exc, AttributeError) else None
                hint = ""
                if which:
                    kind, value = probes[which]
                    hint = (
                        f" Input '{which}' is a {kind}, whose value is a {type(value).__name__}: "
                        "every value it receives in a flow fails the same way."
                    )
                findings.append(
                    _finding(
                        "error",
                        "smoke",
                        f"output `{name}` crashes when called: {method_name}() raised {type(exc).__name__} "
                        f"with sample inputs: {_first_line(exc)}{hint}",
                        evidence=traceback.format_exc(),
                        rule="smoke-crash",
                    )
                )
                report["smoke"] = "failed"
                return
            findings.append(
                _finding(
                    "warning",
                    "smoke",
                    f"Output '{name}' raised {type(exc).__name__} on sample inputs ({str(exc)[:160]}); "
                    "this may be caused by the fake data, so it was not counted as a failure.",
                    rule="smoke-probe",
                )
            )
            continue
        if _STATE["network"]:
            report.update(smoke="skipped", smoke_reason=f"output '{name}' uses the network")
            return
        if _holds_coroutine(result):
            _close_coroutines(result)
            findings.append(
                _finding(
                    "error",
                    "smoke",
                    f"output `{name}` returns an un-awaited coroutine: {method_name}() is a plain method that "
                    "calls an async helper without `await`; Langflow passes the coroutine on as the value. "
                    f"Make it `async def {method_name}` and `await` the helper.",
                    rule="coroutine",
                )
            )
            report["smoke"] = "failed"
            return
        ok = _type_ok(result, declared)
        if ok is False:
            got = type(result).__name__
            hint = " Wrap the text: Message(text=...)." if got == "str" and "Message" in declared else ""
            findings.append(
                _finding(
                    "error",
                    "smoke",
                    f"output `{name}` returns the wrong type: Output '{name}' ({method_name}) returned {got} "
                    f"but is declared as {' | '.join(declared)}.{hint}",
                    rule="wrong-type",
                )
            )
            report["smoke"] = "failed"
            return
        if result is None:
            findings.append(
                _finding("warning", "smoke", f"Output '{name}' returned None for the sample inputs.", rule="none")
            )
    report["smoke"] = "passed"


def _self_reads(code: str) -> set[str]:
    """Names the code reads as ``self.<name>``."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Load)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }


def _input_name_findings(code: str, instance: object) -> list[dict]:
    """Inputs whose value the component can never read, proven on the real class.

    ``Component.__getattr__`` serves input values only when normal attribute lookup fails,
    so an input named like a class attribute anywhere in the MRO (``display_name``,
    ``description``, a base's ``manager_llm = None``) is silently ignored by ``self.<name>``;
    and lfx's ``set_attributes`` refuses, when the flow runs, an input named like an
    attribute the instance sets itself (``inputs``, ``status``) -- "a reserved word".
    Each case is tried on the instance: set the value as Langflow does, read it back.
    """
    found: list[dict] = []
    reads = _self_reads(code)
    cls = type(instance)
    for inp in list(getattr(instance, "inputs", None) or []):
        name = getattr(inp, "name", None)
        if not isinstance(name, str) or name.startswith("_"):
            continue
        in_dict = name in getattr(instance, "__dict__", {})
        in_class = any(name in vars(k) for k in cls.__mro__)
        if not in_dict and not in_class:
            continue
        if in_class and callable(getattr(cls, name, None)) and not isinstance(getattr(cls, name, None), type):
            continue  # a method: lfx itself refuses it at build time
        sample = f"lfassist-probe-{name}" if _DECLARED_VALUE_TYPES.get(type(inp).__name__) is str else _probe(inp)
        if sample is None or sample is _UNPROBEABLE:
            continue
        try:
            instance.set_attributes({name: sample})  # type: ignore[attr-defined]
        except ValueError as exc:
            if "reserved" in str(exc):
                found.append(
                    _finding(
                        "error",
                        "runtime",
                        f"input `{name}` cannot receive a value: when the flow runs, lfx refuses it "
                        f"({_first_line(exc)}). Rename the input (e.g. `{name}_value`).",
                        evidence=str(exc),
                        rule="input-reserved",
                    )
                )
            continue
        except Exception:
            continue
        got = getattr(instance, name, None)
        if got is sample or (isinstance(got, str | int | float) and got == sample):
            continue
        shown = repr(got)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        message = (
            f"input `{name}` is ignored: `self.{name}` returns the component's own `{name}` ({shown}), "
            f"not the value set in Langflow. Rename the input (e.g. `{name}_value`)"
        )
        if name in reads:
            found.append(
                _finding(
                    "error",
                    "runtime",
                    message + ".",
                    evidence=f"set {name}={sample!r} as Langflow does; self.{name} is still {shown}",
                    rule="input-ignored",
                )
            )
        else:
            found.append(
                _finding(
                    "warning",
                    "runtime",
                    message + f", or keep reading it another way (this code never reads `self.{name}`).",
                    rule="input-ignored",
                )
            )
    return found


def _output_findings(cls: type, outputs: list[dict]) -> list[dict]:
    found = []
    for out in outputs:
        if out["method"] is None:
            continue  # a legacy component built by its build() method
        if not callable(getattr(cls, out["method"], None)):
            found.append(
                _finding(
                    "error",
                    "runtime",
                    f"output `{out['name']}` points to method '{out['method']}', which does not exist.",
                    rule="missing-method",
                )
            )
        elif not out["types"]:
            found.append(
                _finding(
                    "error",
                    "runtime",
                    f"output `{out['name']}` has no type: give method '{out['method']}' a return annotation "
                    "(or the Output `types=[...]`), or it can be connected to nothing.",
                    rule="output-untyped",
                )
            )
    return found


def _finish(report: dict) -> dict:
    """``is_valid``, ``phase``, ``error`` and ``warnings`` from ``builds`` and the findings."""
    findings = report["findings"]
    errors = [f for f in findings if f["severity"] == "error"]
    report["is_valid"] = report.get("builds") is True and not errors
    report["warnings"] = [f["message"][:1].upper() + f["message"][1:] for f in findings if f["severity"] == "warning"]
    if errors:
        first = errors[0]
        message = first["message"]
        report["phase"] = first["phase"]
        if report.get("builds") is True:
            report["error"] = f"Langflow accepts this, but {message[:1].lower()}{message[1:]}"
        else:
            report["error"] = message
        if first.get("evidence") and first["phase"] == "smoke":
            report.setdefault("traceback", first["evidence"])
    return report


# -- requests ------------------------------------------------------------------------------

_LFX_READY: list[bool] = []


def _prepare_lfx() -> None:
    """Create lfx's own lazy services (trusted code) before any component code is armed.

    lfx creates its settings service on first use, and creating it sets ``USER_AGENT`` in
    ``os.environ`` (``os.putenv``), which the audit hook refuses while generated code runs.
    A component that merely *imports* an lfx module using the settings (the MCP components)
    would then fail to build here while Langflow builds it.  A worker should call this while
    warming up; ``validate`` calls it too, and it costs nothing after the first time.
    """
    if _LFX_READY:
        return
    _LFX_READY.append(True)
    with contextlib.suppress(Exception):
        from lfx.services.deps import get_settings_service

        get_settings_service()


def validate(code: str, *, smoke: bool, timeout: float) -> dict:
    """Build ``code`` exactly as Langflow's ``POST /api/v1/custom_component`` does (``builds``),
    then look for what will break when it is used (``findings``) and smoke-run its outputs."""
    report: dict = {
        "is_valid": False,
        "builds": None,
        "findings": [],
        "phase": None,
        "warnings": [],
        "phases_run": ["runtime"],
        "smoke": "not_run",
        "timings_ms": {},
        "lfx_version": LFX_VERSION,
    }
    findings = report["findings"]
    _prepare_lfx()
    _STATE["violations"] = []
    _STATE["network"] = False
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    try:
        with _Armed(deadline):
            template, instance = build_custom_component_template(Component(_code=code))
    except _Timeout:
        findings.append(
            _finding(
                "error",
                "runtime",
                f"Building the component took longer than {timeout:g} s (infinite loop?).",
                rule="build-timeout",
            )
        )
        report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
        return _finish(report)
    except BaseException as exc:
        report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
        text = _error_text(exc)
        report["traceback"] = _exc_traceback(exc)
        if isinstance(exc, SystemExit):
            findings.append(
                _finding("error", "runtime", "The component's code called sys.exit() while being loaded.", rule="build")
            )
        elif _STATE["violations"] or _STATE["network"]:
            # The sandbox refused something the code does while loading: what Langflow would
            # answer is unknown (it would let it happen), so ``builds`` stays None.
            findings.append(
                _finding(
                    "error",
                    "runtime",
                    f"While loading, the code did something the validation sandbox refuses, so whether Langflow "
                    f"builds it is unknown: {text}",
                    evidence="; ".join(map(str, _STATE["violations"][:5])) or "network access",
                    rule="build-sandbox",
                )
            )
        else:
            report["builds"] = False
            module = _missing_module(exc)
            if module:  # a module-level import (or one inside lfx) needs a package that is not installed
                missing = _missing_packages(code, when="build")
                if _package(module)["distribution"] not in {m["distribution"] for m in missing}:
                    missing.insert(0, _package(module))
                report["missing_packages"] = missing
                fixes = " ".join(m["fix"] for m in missing)
                names = ", ".join(m["module"] for m in missing)
                text = f"{text} Langflow needs {names} installed to build it: {fixes}"
            findings.append(_finding("error", "runtime", f"Langflow rejects this: {text}", rule="build"))
        return _finish(report)
    report["builds"] = True
    report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
    cls = type(instance)
    report["class_name"] = cls.__name__
    report["display_name"] = template.get("display_name")
    report["description"] = template.get("description")
    report["inputs"], report["outputs"] = _field_summaries(instance, template)
    run_missing = _missing_packages(code, when="run")
    for m in run_missing:
        findings.append(
            _finding(
                "warning",
                "runtime",
                f"needs {m['module']} to run: a method imports it and it is not installed here. Fix: {m['fix']}",
                rule="needs-package",
            )
        )
    report["missing_packages"] = run_missing
    findings.extend(_output_findings(cls, report["outputs"]))
    with contextlib.suppress(Exception):
        findings.extend(_input_name_findings(code, instance))
    if not report["outputs"]:
        legacy = not isinstance(instance, Component)
        if not legacy and not (callable(getattr(cls, "update_outputs", None)) and "update_outputs" in code):
            findings.append(
                _finding("warning", "runtime", "the component defines no outputs: nothing can connect to it.")
            )
    if smoke and not any(f["severity"] == "error" for f in findings):
        report["phases_run"].append("smoke")
        t1 = time.perf_counter()
        try:
            if not isinstance(instance, Component):
                report.update(
                    smoke="skipped",
                    smoke_reason="it is a legacy CustomComponent: Langflow calls its build() with the flow's values",
                )
            else:
                _smoke(cls, code, instance, template, report, deadline)
        except _Timeout:
            if _STATE["network"]:
                report.update(smoke="skipped", smoke_reason="it uses the network (refused while validating)")
            else:
                report["smoke"] = "failed"
                findings.append(
                    _finding(
                        "error",
                        "smoke",
                        f"an output did not finish within {timeout:g} s (infinite loop?).",
                        rule="smoke-timeout",
                    )
                )
        except BaseException as exc:
            if _STATE["network"]:
                report.update(smoke="skipped", smoke_reason="it uses the network (refused while validating)")
            else:
                report["smoke"] = "failed"
                findings.append(
                    _finding(
                        "error",
                        "smoke",
                        f"it cannot be created with sample inputs: {_error_text(exc)}",
                        evidence=_exc_traceback(exc),
                        rule="smoke-init",
                    )
                )
        report["timings_ms"]["smoke"] = round((time.perf_counter() - t1) * 1000, 3)
    return _finish(report)


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
    _prepare_lfx()  # lfx's settings service (~0.3 s), created before any component code is armed
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
