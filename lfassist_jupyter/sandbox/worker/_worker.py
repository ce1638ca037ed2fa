"""The validation worker: a zygote that imports lfx once and forks one child per request.

This file runs as a *script* (``python -I _worker.py CONFIG``) in a configurable
interpreter, possibly one where lfassist_jupyter is not installed, so it imports only
the standard library and lfx.  On Linux the parent starts it inside bubblewrap (new user,
PID, network, IPC, UTS and mount namespaces; see ``_isolation.py``); elsewhere it runs
with the same code and only the in-process layers below ("reduced isolation").

Why a zygote: importing lfx costs seconds, forking a warm interpreter costs milliseconds.
Why a child per request: nothing generated code does (threads, detached children, patched
modules, a poisoned protocol channel, files in the scratch directory) outlives its request.

The protocol: JSON lines from the parent on stdin; answers on a private copy of stdout.
For each request the zygote forks a child that

- closes stdin and the zygote's channel, so it cannot read other requests nor forge
  their answers; it writes its single answer to a pipe of its own, which the zygote reads
  with a size cap (extra bytes, a second document or garbage: a "malformed" answer);
- arms the audit hook for its whole life (the hook's state lives in a closure, not in a
  module global the code could flip; there is no way to remove an audit hook);
- gets its fds 1 and 2 on a pipe the zygote drains and discards past a cap (a 100 MB
  print neither blocks nor fills a log that would poison the next request);
- runs in its own process group, with PR_SET_PDEATHSIG so it dies with the zygote;
- confines itself before anything of a request runs (Linux; see "confinement" below): a
  seccomp filter (it can signal only itself: not the zygote, not the spare child that
  waits for the next request) and Landlock (it can write only in its scratch directory,
  through ``open``, sqlite or any C library alike; see ``_confine.py``).

The zygote is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the child forks, even
a detached double-forked daemon, is re-parented to the zygote when its parent dies.  After
the answer (or the deadline) the zygote SIGKILLs the child's whole subtree -- found by a
/proc scan of its own descendants, repeated until none is left -- before the answer
leaves; it reaps them and removes what the request wrote (its scratch directory under
Landlock; else all of the writable directory, never entering the interpreter's read-only
binds) before it reads the next request.  So when the parent sees an answer, nothing of
that request can run another instruction, and the next request finds none of its files.  The zygote is non-dumpable
(PR_SET_DUMPABLE 0): a child cannot open its /proc/<pid>/mem or fds.

Ops: ``OPS`` maps an op name to ``fn(request) -> dict`` run in a fresh child.  Sibling
scripts listed in the config's ``op_modules`` (stdlib + lfx only, e.g. a future
``_run_flow.py``) are imported by path in the zygote before the first fork and may
register more ops with ``register(OPS, worker_module)``; the parent binds each such file
read-only into the sandbox.  ``reference`` is computed in the zygote before any
generated code ever ran and sent with the "ready" message.  An op module may also put
*facts* in ``FACTS`` (e.g. ``_flow_ops.py``'s ``flow_catalog``, lfx's bundled component
catalogue): answers the zygote computes (once, on first use) and sends itself when asked --
no child, no request's code involved.
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
import select
import signal
import stat
import sys
import time
import traceback
import types

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
# The writable directory of one request (the child chdirs there); HOME and TMPDIR are
# wiped between requests too.
SANDBOX_DIR = os.path.realpath(os.getcwd())
ANSWER_CAP = int(CONFIG.get("answer_cap", 4 * 1024 * 1024))
OUTPUT_CAP = 64 * 1024  # what the zygote keeps of a child's stdout/stderr (the rest is discarded)
STRING_CAP = 20_000  # a child truncates every string of its answer to this

# -- protocol channel --------------------------------------------------------------------

_proto_fd = os.dup(1)
_proto = os.fdopen(_proto_fd, "w", buffering=1, encoding="utf-8")
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 1)  # lfx's import-time chatter goes nowhere; children get their own pipe
os.dup2(_null, 2)
os.close(_null)
sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)


def send(msg: dict) -> None:
    _proto.write(json.dumps(msg, default=str) + "\n")
    _proto.flush()


# -- siblings ----------------------------------------------------------------------------
#
# This script runs with ``-I`` (its directory is not on sys.path) where lfassist_jupyter may
# not be installed: its sibling scripts are loaded by path from its own directory, which the
# parent binds read-only into the sandbox (kept out of sys.modules, as before the split).

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name: str, alias: str) -> types.ModuleType:
    """Load ``name``.py from this script's directory as module ``alias`` (not put in sys.modules)."""
    spec = importlib.util.spec_from_file_location(alias, os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# -- confinement (``_confine.py``): limits, prctl, seccomp, Landlock -----------------------

try:
    _CONFINEMENT = _sibling("_confine", "_lfassist_confine")
except Exception as exc:  # the worker's own files are incomplete: nothing can be confined
    send({"op": "fatal", "error": f"the confinement could not be loaded: {type(exc).__name__}: {exc}"})
    sys.exit(3)
_set_limit, _prctl = _CONFINEMENT._set_limit, _CONFINEMENT._prctl
_confine, _confinement = _CONFINEMENT._confine, _CONFINEMENT._confinement
CONFINE = _CONFINEMENT.CONFINE  # one dict, filled in place by the zygote, read by ``_confine``
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = _CONFINEMENT._PR_SET_PDEATHSIG, _CONFINEMENT._PR_SET_DUMPABLE
_PR_SET_CHILD_SUBREAPER = _CONFINEMENT._PR_SET_CHILD_SUBREAPER

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


try:  # the deny list the security scan reads too, next to this script
    POLICY = _sibling("policy", "_lfassist_policy")
except Exception as exc:  # the worker's own files are incomplete: nothing can be validated safely
    send({"op": "fatal", "error": f"the deny list could not be loaded: {type(exc).__name__}: {exc}"})
    sys.exit(3)

# Observations of the current request (read by the validation logic); the hook's *armed*
# state is not here: it is a closure variable of the hook, fixed for the child's life.
# ``refused``: (audit event, line in the component's code or None) of each refused call.
_STATE = {"network": False, "violations": [], "refused": []}
# The hook's tables come from the deny list the security scan reads too (``policy.py``).
_BLOCKED_EVENTS = set(POLICY.EVENTS)
_NETWORK_EVENTS = set(POLICY.NETWORK_EVENTS)
_PATH_EVENTS = set(POLICY.PATH_EVENTS)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_DENY_READ = tuple(os.path.realpath(p) for p in CONFIG.get("deny_read", []) if p)


def _make_hook(sandbox_dir: str, deny_read: tuple[str, ...]):
    """The hook for a child: armed from the start, no off switch anywhere.

    Its whole state (the directory, the deny list, the functions it calls) is bound in
    this closure when the child starts, so rebinding a module global (``SANDBOX_DIR``,
    ``os.path.realpath``...) from generated code changes nothing; the events that could
    reach the closure (``gc.get_referrers`` and friends) are refused.  ``dir_fd``-relative
    calls are refused outright (their audit arguments do not say where the directory is),
    and so are ctypes, fifos, xattrs and new processes.
    """
    realpath, fspath, fsdecode, getpid, isdir = os.path.realpath, os.fspath, os.fsdecode, os.getpid, os.path.isdir
    sep, devnull, path_like = os.sep, os.devnull, (str, bytes, os.PathLike)
    write_flags, state = _WRITE_FLAGS, _STATE
    blocked = frozenset(_BLOCKED_EVENTS | {"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
    network, path_events = frozenset(_NETWORK_EVENTS), frozenset(_PATH_EVENTS)
    violation, net_blocked = SandboxViolation, NetworkBlocked
    fresh_imports = frozenset(POLICY.FRESH_IMPORTS)
    getframe = sys._getframe

    def code_line() -> int | None:
        """The line of the component's code (lfx compiles it as "<string>") that made the call."""
        try:
            frame = getframe(2)
            while frame is not None:
                name = frame.f_code.co_filename
                if type(name) is str and name == "<string>":  # an exact str: no code of theirs runs here
                    return frame.f_lineno
                frame = frame.f_back
        except Exception:
            pass
        return None

    def real(path: object) -> str | None:
        if isinstance(path, bytes):
            path = fsdecode(path)
        if not isinstance(path, str | os.PathLike):
            return None
        return realpath(fspath(path))

    def inside(path: object) -> bool:
        if isinstance(path, int):
            return True  # an already-open descriptor
        where = real(path)
        return where is None or where in (devnull, sandbox_dir) or where.startswith(sandbox_dir + sep)

    def denied_read(path: object) -> bool:
        where = real(path)
        if where is None:
            return False
        if where.startswith("/proc/") and not where.startswith(f"/proc/{getpid()}/"):
            part = where.split("/")[2]
            if part.isdigit() or part == "thread-self":
                return True
        return any(where == d or where.startswith(d + sep) for d in deny_read) and not inside(where)

    # The events lfx and pydantic raise by the thousand per build (``id()`` alone ~2,300):
    # one set lookup and out, since every event costs a Python call while a hook exists.
    quiet = frozenset({"builtins.id", "object.__getattr__", "sys._getframe", "compile", "exec", "marshal.loads"})

    def hook(event: str, args: tuple) -> None:
        if event in quiet:
            return
        if event == "import" and args and str(args[0]).split(".")[0] in fresh_imports:
            # A fresh copy of a module whose dangerous functions were taken away (or ctypes).
            state["violations"].append(f"import {args[0]}")
            state["refused"].append((f"import {args[0]}", code_line()))
            raise violation(f"importing {args[0]} is not allowed inside a Langflow component validation sandbox")
        if event in blocked:
            state["violations"].append(event)
            state["refused"].append((event, code_line()))
            raise violation(f"'{event}' is not allowed inside a Langflow component validation sandbox")
        if event in network:
            state["network"] = True
            raise net_blocked(f"network access ('{event}') is disabled while validating")
        if event == "open" and len(args) >= 3:
            path, mode, flags = args[0], args[1], args[2]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & write_flags
            )
            if writing and not inside(path):
                state["violations"].append(f"write to {path}")
                raise violation(f"writing to {path} is not allowed while validating (only the sandbox directory)")
            # A directory descriptor from outside would let dir_fd-relative calls (whose
            # audit events do not carry the dir_fd) write there.
            if not inside(path) and isinstance(path, str | bytes | os.PathLike) and isdir(path):
                state["violations"].append(f"open of directory {path}")
                raise violation(f"opening the directory {path} is not allowed while validating")
            if denied_read(path):
                state["violations"].append(f"read of {path}")
                raise violation(f"reading {path} is not allowed while validating")
        elif event in path_events and args:
            if any(isinstance(a, int) and a != -1 for a in args[2:]):  # a dir_fd / src_dir_fd / dst_dir_fd
                state["violations"].append(f"{event} with dir_fd")
                raise violation(f"'{event}' relative to a directory descriptor is not allowed while validating")
            if not all(inside(a) for a in args[:2] if isinstance(a, path_like)):
                state["violations"].append(f"{event} {args[0]}")
                raise violation(f"'{event}' outside the sandbox directory is not allowed while validating")
        elif event in ("os.listdir", "os.scandir") and args and denied_read(args[0]):
            raise violation(f"listing {args[0]} is not allowed while validating")
        elif event == "sqlite3.connect" and args and isinstance(args[0], path_like):
            # sqlite opens (and creates) its file in C, with no "open" event; Landlock holds
            # below this where the kernel has it, this is for where it has not.
            database = fsdecode(fspath(args[0]))
            if database.startswith("file:"):
                database = database[5:].split("?", 1)[0]
            if database not in ("", ":memory:") and not inside(database):
                state["violations"].append(f"sqlite3.connect {database}")
                raise violation(f"a database at {database} is not allowed while validating (only the sandbox)")

    return hook


def _refuse_fork_exec(*args: object, **kwargs: object) -> None:
    raise SandboxViolation("creating processes or special files is not allowed inside a validation sandbox")


class _Timeout(BaseException):
    """Raised by SIGALRM; a BaseException so ``except Exception`` in generated code can't eat it."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout()


signal.signal(signal.SIGALRM, _on_alarm)


class _Armed:
    """The alarm and the CPU cap around generated code (the audit hook is always armed in a child).

    ``deadline`` (time.monotonic) is shared by every phase of one request, so the whole
    validation -- build, instantiation and every output -- fits in one timeout.  Code that
    swallows the alarm is killed by the zygote at the hard deadline.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __enter__(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout()
        signal.setitimer(signal.ITIMER_REAL, remaining)

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


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


def _line_offset(cls: type, code: str) -> int:
    """How far lfx shifted the code's lines when it compiled it (it prepends its default
    imports), measured on one of the class's own methods: frames say lfx's line, the user
    reads theirs."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for item in node.body:
                func = vars(cls).get(getattr(item, "name", ""))
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.decorator_list:
                    code_obj = getattr(func, "__code__", None)
                    if code_obj is not None:
                        return code_obj.co_firstlineno - item.lineno
    return 0


def _refused_finding(who: str, since: int, exc: BaseException | None) -> dict:
    """A call the audit hook refused, in the words of the static scan for the same call.

    An ``error`` (rule ``sandbox-refused``): generated code gets the same verdict whichever
    phase sees the behaviour, and a retry prompt that names the call and the line.  For code
    a user brings, the kernel turns it into a labelled ``policy`` finding (``sandbox._merge``).
    """
    refused = _STATE["refused"][since:]
    event, line = refused[0] if refused else ("?", None)
    if line is not None:
        line -= _STATE.get("line_offset", 0)
        line = line if line > 0 else None
    where = f" at line {line}" if line else ""
    detail = str(exc) if exc is not None else f"'{event}' is not allowed inside a Langflow component validation sandbox"
    if event.startswith("import "):
        module = event.split()[1]
        what, reason = f"imports `{module}`", POLICY.why(module) or "is refused by the sandbox"
    else:
        what, reason = f"calls `{event}`", POLICY.event_reason(event)
    return _finding(
        "error",
        "smoke",
        f"{who} {what}{where} ({reason}); the validation sandbox refused it, and "
        f"Langflow would run it with the server's secrets. Remove the call (it is refused however it is reached).",
        line=line,
        evidence=detail,
        rule="sandbox-refused",
    )


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
        refused_before = len(_STATE["refused"])
        try:
            with _Armed(deadline):
                result = _call(component, method_name)
        except _Timeout:
            raise
        except SandboxViolation as exc:
            findings.append(_refused_finding(f"output `{name}` ({method_name}())", refused_before, exc))
            report.update(smoke="skipped", smoke_reason=f"output '{name}' did something the sandbox refuses ({exc})")
            return
        except BaseException as exc:
            if len(_STATE["refused"]) > refused_before:  # refused, and the code turned it into another error
                findings.append(_refused_finding(f"output `{name}` ({method_name}())", refused_before, exc))
                report.update(smoke="skipped", smoke_reason=f"output '{name}' did something the sandbox refuses")
                return
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
        if len(_STATE["refused"]) > refused_before:  # refused, and the code swallowed the refusal
            _close_coroutines(result)
            findings.append(_refused_finding(f"output `{name}` ({method_name}())", refused_before, None))
            report.update(smoke="skipped", smoke_reason=f"output '{name}' did something the sandbox refuses")
            return
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


def _lfx_output_methods() -> frozenset[str]:
    """The methods lfx's own Component names in the outputs it adds itself (Tool Mode's
    ``component_as_tool`` output calls ``to_toolkit``): an output method by that name replaces it."""
    try:
        return frozenset({Component._build_tool_output(Component.__new__(Component)).method})
    except Exception:
        return frozenset()


# Names lfx's own Component gives a meaning a component must not override with an output
# method: the methods of lfx's own outputs, and the attributes and properties lfx reads
# (display_name, inputs, graph...).  Not methods such as ``run`` or ``build``: lfx never calls
# those while a flow runs, and components override them.
_TOOL_METHODS = _lfx_output_methods()
_RESERVED = _TOOL_METHODS | frozenset(
    n for n in dir(Component) if not n.startswith("_") and not callable(getattr(Component, n, None))
)


def _reserved_findings(cls: type, outputs: list[dict]) -> list[dict]:
    """Output methods the component defines under a name lfx's ``Component`` already uses."""
    found = []
    lfx_classes = set(Component.__mro__)
    for out in outputs:
        method = out.get("method")
        if method not in _RESERVED:
            continue
        owner = next((k for k in cls.__mro__ if method in vars(k)), None)
        if owner is None or owner in lfx_classes:
            continue  # it uses lfx's own (e.g. MCP's tool output points at Component.to_toolkit)
        what = (
            "the method Langflow calls for the component's tool output in Tool Mode"
            if method in _TOOL_METHODS
            else "an attribute Langflow reads"
        )
        found.append(
            _finding(
                "error",
                "runtime",
                f"output `{out.get('name')}` uses the method name '{method}', which overrides lfx's "
                f"Component.{method} ({what}); it breaks as soon as Langflow uses it. "
                f"Rename the method (e.g. `build_{out.get('name')}`).",
                evidence=f"{owner.__name__}.{method} overrides Component.{method}",
                rule="reserved-name",
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
    _STATE["refused"] = []
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
    _STATE["line_offset"] = _line_offset(cls, code)
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
    findings.extend(_reserved_findings(cls, report["outputs"]))
    if not report["outputs"]:
        legacy = not isinstance(instance, Component)
        if not legacy and not (callable(getattr(cls, "update_outputs", None)) and "update_outputs" in code):
            # An error for generated code (it is retried); the kernel makes it a warning for a user's code.
            findings.append(
                _finding(
                    "error",
                    "runtime",
                    "the component defines no outputs: nothing can connect to it. Add at least one "
                    "`Output(display_name=..., name=..., method=...)` to `outputs`.",
                    rule="no-outputs",
                )
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
        except BaseException as exc:
            if _STATE["network"]:  # the refusal, not the component, ended it
                report.update(smoke="skipped", smoke_reason="it uses the network (refused while validating)")
            elif isinstance(exc, _Timeout):
                report["smoke"] = "failed"
                message = f"an output did not finish within {timeout:g} s (infinite loop?)."
                findings.append(_finding("error", "smoke", message, rule="smoke-timeout"))
            elif _STATE["refused"]:
                report.update(smoke="skipped", smoke_reason="creating it did something the sandbox refuses")
                findings.append(_refused_finding("creating the component", 0, exc))
            else:
                report["smoke"] = "failed"
                message = f"it cannot be created with sample inputs: {_error_text(exc)}"
                findings.append(_finding("error", "smoke", message, evidence=_exc_traceback(exc), rule="smoke-init"))
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
        # Every keyword the class accepts (field names and their aliases): what the repair pass
        # (core/component/repair.py) needs to tell a misspelt keyword from a real one.
        fields = sorted({a for k, f in cls.model_fields.items() for a in (k, f.alias) if a and not a.startswith("_")})
        inputs.append({"name": name, "params": own, "doc": doc, "fields": fields})
    return {
        "lfx_version": LFX_VERSION,
        "common_params": _COMMON,
        "inputs": inputs,
        "component_attrs": _component_attrs(),
        "imports": _import_map(),
    }


# Where each symbol a component imports is importable, in order of preference (the module a
# model should write): the first module that has a name wins.
_IMPORT_HOMES = (
    "lfx.io",
    "lfx.schema.message",
    "lfx.schema.data",
    "lfx.schema.dataframe",
    "lfx.custom.custom_component.component",
    "lfx.field_typing.range_spec",
    "lfx.schema.dotdict",
    "lfx.schema",
)
_IMPORT_NAMES = {
    "lfx.schema.message": ("Message",),
    "lfx.schema.data": ("Data",),
    "lfx.schema.dataframe": ("DataFrame",),
    "lfx.custom.custom_component.component": ("Component",),
    "lfx.field_typing.range_spec": ("RangeSpec",),
    "lfx.schema.dotdict": ("dotdict",),
}


def _import_map() -> dict:
    """symbol -> the lfx module to import it from (lfx.io's exports, the schema types, Component)."""
    found: dict = {}
    for module_name in _IMPORT_HOMES:
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        names = _IMPORT_NAMES.get(module_name) or getattr(module, "__all__", ())
        for name in names:
            if isinstance(name, str) and name not in found and hasattr(module, name):
                found[name] = module_name
    return found


def _component_attrs() -> list:
    """The attributes and methods of lfx's ``Component``: names an input must not take."""
    return sorted(a for a in dir(Component) if not a.startswith("__"))


# -- the zygote -----------------------------------------------------------------------------

ZYGOTE_PID = os.getpid()
ROOT = SANDBOX_DIR  # the zygote's cwd: every entry under it is wiped after each request
HOME = os.path.join(ROOT, "home")
SCRATCH_MB = int(CONFIG.get("scratch_mb") or 0)  # the size of the sandbox's /tmp, when it has one


def _op_validate(req: dict) -> dict:
    return validate(req["code"], smoke=bool(req.get("smoke", True)), timeout=float(req.get("timeout", 10)))


def _op_ping(req: dict) -> dict:
    return {"pong": True, "pid": os.getpid()}


# The op registry.  Each op runs in a fresh child with the audit hook armed; its answer
# must be a JSON object.  Extension point: a sibling script named in CONFIG["op_modules"]
# defines ``register(ops, worker)`` and adds e.g. ``ops["run_flow"] = ...`` (see
# ``_run_component.py`` for the pattern); it is imported here, in the zygote, once.
OPS: dict = {"validate": _op_validate, "ping": _op_ping}
# Trusted facts: answers an op module provides (a value, or a function the zygote calls once
# on first use), e.g. ``flow_catalog``, lfx's bundled component registry.  The zygote computes
# and sends them itself: no child and no request's code is involved (none ever runs here).
FACTS: dict = {}


def _load_op_modules() -> list[str]:
    errors = []
    worker = sys.modules[__name__]
    for path in CONFIG.get("op_modules", []):
        try:
            name = "_lfassist_op_" + os.path.splitext(os.path.basename(path))[0].lstrip("_")
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            module.register(OPS, worker)
        except Exception as exc:
            errors.append(f"{os.path.basename(path)}: {type(exc).__name__}: {exc}")
    return errors


def _truncate(obj: object, depth: int = 0) -> object:
    """Every string capped, containers bounded: a child's answer stays small by itself."""
    if isinstance(obj, str):
        return obj if len(obj) <= STRING_CAP else obj[:STRING_CAP] + " [truncated]"
    if depth > 20:
        return None
    if isinstance(obj, dict):
        return {str(k)[:200]: _truncate(v, depth + 1) for k, v in list(obj.items())[:500]}
    if isinstance(obj, list | tuple):
        return [_truncate(v, depth + 1) for v in list(obj)[:500]]
    if obj is None or isinstance(obj, bool | int | float):
        return obj
    return _truncate(str(obj), depth + 1)


def _read_all(fd: int, cap: int) -> bytes:
    data = bytearray()
    while len(data) <= cap:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _child(req_r: int, answer_w: int, out_w: int, scratch: str) -> None:
    """A forked child: isolate itself from the zygote, wait for one request, answer, exit.

    Children are forked *ahead* (a spare waits for the next request), so the fork and
    this set-up are off the critical path; the request arrives on ``req_r``, a pipe only
    this child has.
    """
    global SANDBOX_DIR
    code = 0
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != ZYGOTE_PID:
            os._exit(70)
        os.dup2(req_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        # Everything else goes: the zygote's channel, other children's pipes.
        os.closerange(3, answer_w)
        os.closerange(answer_w + 1, 1 << 16)
        os.chdir(scratch)
        SANDBOX_DIR = scratch
        # Temporary files (tempfile, sqlite's) belong to the request too: its own directory.
        os.environ["TMPDIR"] = scratch
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
        try:
            _confine(scratch)  # seccomp + Landlock, before anything of a request exists here
        except BaseException:
            os._exit(72)
        signal.signal(signal.SIGALRM, _on_alarm)
        # _posixsubprocess.fork_exec raises no audit event: take it away (namespaces contain it anyway).
        # Neither do mkfifo and mknod.
        for name in ("_posixsubprocess", "subprocess", "os", "posix"):
            module = sys.modules.get(name)
            for attr in ("fork_exec", "_fork_exec", "mkfifo", "mknod"):
                if module is not None and hasattr(module, attr):
                    setattr(module, attr, _refuse_fork_exec)
        # While waiting anyway: a warm-up build copies the pages a build writes (refcounts,
        # caches) now, rather than one copy-on-write fault at a time during the request.
        # Not when requests come back to back (the build would compete with the request for
        # the CPU): only when none arrived within 50 ms, i.e. while someone waits for a model.
        if not select.select([0], [], [], 0.05)[0]:
            with contextlib.suppress(Exception):
                build_custom_component_template(Component(_code=_WARMUP))
        raw = _read_all(0, 64 * 1024 * 1024)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = None  # the zygote's reader (and whatever it buffered) is not ours
        req = json.loads(raw)
        timeout = min(max(float(req.get("timeout", 10)), 0.1), 3600.0)
        used = resource.getrusage(resource.RUSAGE_SELF)
        _set_limit(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + timeout) + 2)
        gc.enable()
        sys.addaudithook(_make_hook(scratch, _DENY_READ))  # from here on, no way back
        fn = OPS.get(req.get("op"))
        out = fn(req) if fn else {"error": f"unknown op {req.get('op')!r}"}
    except _Timeout:
        out = {"is_valid": False, "phase": "runtime", "error": "Validation timed out."}
    except BaseException as exc:
        out = {
            "is_valid": False,
            "phase": "runtime",
            "error": f"Validator error: {type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    try:
        signal.setitimer(signal.ITIMER_REAL, 0)
        data = json.dumps(_truncate(out if isinstance(out, dict) else {"result": out}), default=str).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(answer_w, view) :]
        os.close(answer_w)  # the zygote sees the end of the answer now, not after our teardown
    except BaseException:
        code = 71
    os._exit(code)


def _descendants(root: int) -> tuple[list[int], list[int]]:
    """(live, zombie) descendants of ``root``, from a /proc scan (Linux)."""
    children: dict[int, list[int]] = {}
    zombies = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        if fields[0] in (b"Z", b"X"):
            zombies.add(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return [p for p in found if p not in zombies], [p for p in found if p in zombies]


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_subtree(child: int, keep: frozenset[int] = frozenset(), *, wait: bool = True) -> None:
    """SIGKILL everything the request started, until nothing is left (then reap it all).

    Everything below the zygote but the ``keep`` pids (the next request's spare, which
    never ran anything) belongs to the request: its child, and orphans it left, which the
    subreaper setting re-parents to us.
    """
    with contextlib.suppress(OSError):
        os.killpg(child, signal.SIGKILL)
    if not os.path.isdir("/proc/self/task"):  # no /proc (macOS): the process group is all we have
        _reap()
        return
    end = time.monotonic() + 5
    while time.monotonic() < end:
        live, zombies = _descendants(ZYGOTE_PID)
        live = [p for p in live if p not in keep]
        zombies = [p for p in zombies if p not in keep]
        if not live and not zombies:
            return
        for pid in live:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not wait:
            return
        _reap()
        if live or zombies:
            time.sleep(0.001)


_WIPED = [0]  # directory entries the clean-up has looked at since the start (sent with every verdict)
ROOT_DEV = os.stat(ROOT).st_dev


def _clear(top: str, keep: frozenset[str] = frozenset()) -> None:
    """Remove everything below ``top`` that lives on the sandbox's own file system.

    Another mount -- the interpreter and its packages, bound read-only under the sandbox's
    /tmp when the venv lives in /tmp -- is never entered, and the directories that lead to one
    stay (their ``rmdir`` fails); so are the directories in ``keep``.  A directory a request
    made unreadable is opened up first.  Iterative: a request may nest directories thousands
    deep.
    """
    order, todo = [], [top]
    while todo:
        directory = todo.pop()
        order.append(directory)
        try:
            entries = list(os.scandir(directory))
        except PermissionError:
            try:
                os.chmod(directory, 0o700)
                entries = list(os.scandir(directory))
            except OSError:
                continue
        except OSError:
            continue
        for entry in entries:
            _WIPED[0] += 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_dev != ROOT_DEV:
                continue  # a mount point
            if stat.S_ISDIR(st.st_mode):
                if st.st_mode & 0o700 != 0o700:
                    with contextlib.suppress(OSError):
                        os.chmod(entry.path, 0o700)
                todo.append(entry.path)
                continue
            try:
                os.unlink(entry.path)
            except PermissionError:  # in a directory the request made read-only
                with contextlib.suppress(OSError):
                    os.chmod(directory, 0o700)
                    os.unlink(entry.path)
            except OSError:
                pass
    for directory in reversed(order[1:]):  # every directory after all below it
        if directory not in keep:
            with contextlib.suppress(OSError):
                os.rmdir(directory)


def _wipe(scratch: str, spare_scratch: str | None) -> None:
    """Remove what the request created, and nothing else.

    Under Landlock the request could create files only in its scratch directory: that
    directory is all there is to remove.  Without it (an older kernel), C-level code may
    have written anywhere in the sandbox's writable directory (HOME, the spare's scratch):
    all of it is emptied, the spare's directory kept, other mounts never entered.
    """
    if CONFINE["landlock"]:
        _clear(scratch)
        with contextlib.suppress(OSError):
            os.rmdir(scratch)
        return
    _clear(ROOT, frozenset({spare_scratch}) if spare_scratch else frozenset())
    os.makedirs(HOME, exist_ok=True)


def _scratch_full() -> bool:
    """Whether the sandbox's size-limited /tmp (``scratch_mb``) is (nearly) full."""
    if not SCRATCH_MB:
        return False
    try:
        st = os.statvfs(ROOT)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < max(st.f_blocks * st.f_frsize // 20, 1 << 20)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return signal.Signals(sig).name
        except ValueError:
            return f"signal {sig}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


class _Spare:
    """A child forked ahead of its request, waiting on its own request pipe."""

    _count = 0

    def __init__(self) -> None:
        _Spare._count += 1
        self.scratch = os.path.join(ROOT, f"req-{_Spare._count}")
        os.makedirs(self.scratch, exist_ok=True)
        req_r, self.req_w = os.pipe()
        self.answer_r, answer_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child never returns
            os.close(self.req_w)
            _child(req_r, answer_w, out_w, self.scratch)
        for fd in (req_r, answer_w, out_w):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(self.pid, self.pid)


def _new_spare() -> _Spare | None:
    try:
        return _Spare()
    except Exception:  # e.g. fork refused: the request will fork its own child
        return None


_NEXT: list[_Spare | None] = [None]  # the spare for the request after the current one
_CLEANUP: list = []  # what is left to do once the answer is sent


def _annotate(result: dict) -> dict:
    """What the zygote adds to a verdict: a full scratch space (the request's doing, whatever
    it answered) and how many entries clean-up has looked at so far."""
    if _scratch_full():
        result["scratch_full"] = f"{SCRATCH_MB} MB"
    result["wiped"] = _WIPED[0]
    return result


def serve(req: dict, child: _Spare | None) -> dict:
    """Hand ``req`` to a fresh child; return the zygote's verdict on what came back.

    The next request's spare is forked while this child works (the fork overlaps with the
    request on another core), and survives this request's clean-up.
    """
    timeout = min(max(float(req.get("timeout", 10)), 0.1), 3600.0)
    child = child or _Spare()
    pid, answer_r, out_r = child.pid, child.answer_r, child.out_r
    t0 = time.monotonic()
    with contextlib.suppress(OSError):  # a child that died meanwhile shows up as crashed below
        data = memoryview(json.dumps(req).encode())
        while data:
            data = data[os.write(child.req_w, data) :]
    os.close(child.req_w)
    _NEXT[0] = _new_spare()
    keep = frozenset({_NEXT[0].pid}) if _NEXT[0] else frozenset()
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)  # readable when the child exits
    buf = bytearray()
    kept_output = 0
    verdict, status, early = None, None, None
    deadline = t0 + timeout + 1.0  # the child's alarm fires at ``timeout``; this is for code that eats it
    watch = [answer_r, out_r] + ([pidfd] if pidfd is not None else [])
    while verdict is None and early is None:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        if status is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            verdict = "timeout"
            break
        readable, _, _ = select.select(watch, [], [], min(remaining, 0.05 if pidfd is None else remaining))
        for fd in readable:
            if fd == pidfd:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                watch.remove(fd)
                if fd == answer_r:  # a complete answer: the verdict does not wait for the exit
                    with contextlib.suppress(ValueError):
                        parsed = json.loads(bytes(buf))
                        early = parsed if isinstance(parsed, dict) else None
            elif fd == answer_r:
                buf += chunk
                if len(buf) > ANSWER_CAP:
                    verdict = "oversized"
            else:
                kept_output = min(OUTPUT_CAP, kept_output + len(chunk))  # drained and dropped
    spare_scratch = _NEXT[0].scratch if _NEXT[0] else None
    if early is not None and verdict is None:
        # Every process of the request gets SIGKILL (it cannot run another instruction)
        # before the answer leaves; reaping them and wiping their files happen after.
        _kill_subtree(pid, keep, wait=False)

        def cleanup() -> None:
            _kill_subtree(pid, keep)
            for fd in (answer_r, out_r, pidfd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            _wipe(child.scratch, spare_scratch)

        _CLEANUP.append(cleanup)
        result = {"elapsed_ms": round((time.monotonic() - t0) * 1000, 3), "status": "ok", "answer": early}
        return _annotate(result)
    if verdict is None:  # the child exited: take what is left in the pipe, without waiting on grandchildren
        os.set_blocking(answer_r, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while len(buf) <= ANSWER_CAP:
                chunk = os.read(answer_r, 1 << 16)
                if not chunk:
                    break
                buf += chunk
        if len(buf) > ANSWER_CAP:
            verdict = "oversized"
    _kill_subtree(pid, keep)
    if status is None:
        with contextlib.suppress(ChildProcessError):
            status = os.waitpid(pid, 0)[1]
    for fd in (answer_r, out_r, pidfd):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    result: dict = _annotate({})
    _wipe(child.scratch, spare_scratch)
    result["elapsed_ms"] = round((time.monotonic() - t0) * 1000, 3)
    if verdict is not None:
        return {**result, "status": verdict, "detail": f"{timeout:g} s" if verdict == "timeout" else str(len(buf))}
    if status is None or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return {**result, "status": "crashed", "detail": _status_text(status) if status is not None else "unknown"}
    try:
        answer = json.loads(bytes(buf))
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        detail = "no answer" if not buf else "not one JSON object"
        return {**result, "status": "malformed", "detail": detail}
    return {**result, "status": "ok", "answer": answer}


def main() -> None:
    t0 = time.perf_counter()
    # The first build costs ~1 s; pay it now.  A failure here shows up in the first real request.
    with contextlib.suppress(Exception):
        build_custom_component_template(Component(_code=_WARMUP))
    _prepare_lfx()  # lfx's settings service (~0.3 s), created before any component code is armed
    op_errors = _load_op_modules()
    try:  # computed here, before any generated code ever ran in this interpreter
        ref: dict | None = reference()
    except Exception:
        ref = None
    _prctl(_PR_SET_DUMPABLE, 0)  # children cannot open our /proc/<pid>/mem, fd/ or ptrace us
    subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    probe = os.path.join(ROOT, "confinement-probe")
    os.makedirs(os.path.join(probe, "in"), exist_ok=True)
    CONFINE.update(_confinement(probe))
    if CONFIG.get("landlock") is False:
        CONFINE["landlock"] = 0
    _clear(ROOT)  # what the warm-up wrote (never entering the read-only binds)
    os.makedirs(HOME, exist_ok=True)
    gc.freeze()  # the imported world is permanent: keep it out of every later collection
    gc.enable()
    send(
        {
            "op": "ready",
            "lfx_version": LFX_VERSION,
            "python": sys.executable,
            "pid": os.getpid(),
            "import_ms": round((t0 - STARTED) * 1000),
            "warmup_ms": round((time.perf_counter() - t0) * 1000),
            "subreaper": subreaper,
            "confinement": dict(CONFINE),
            "ops": sorted(OPS),
            "op_errors": op_errors,
            "reference": ref,
        }
    )
    spare = _new_spare()
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        if not isinstance(req, dict):
            continue
        if req.get("op") == "exit":
            break
        if req.get("op") in FACTS:  # a trusted fact: the zygote answers itself, no child involved
            try:
                if callable(FACTS[req["op"]]):  # computed once, on first use, here
                    FACTS[req["op"]] = FACTS[req["op"]]()
                send({"id": req.get("id"), "status": "ok", "answer": FACTS[req["op"]]})
            except Exception as exc:
                send({"id": req.get("id"), "status": "crashed", "detail": f"zygote: {type(exc).__name__}: {exc}"})
            continue
        _NEXT[0] = None
        try:
            out = serve(req, spare)
        except Exception as exc:  # the zygote's own failure (e.g. fork refused): report it, keep serving
            out = {"status": "crashed", "detail": f"zygote: {type(exc).__name__}: {exc}"}
        out["id"] = req.get("id")
        send(out)
        while _CLEANUP:
            _CLEANUP.pop()()
        spare = _NEXT[0] or _new_spare()
    if spare is not None:
        _kill_subtree(spare.pid)


if __name__ == "__main__":
    main()
