"""The audit hook a child arms for its whole life, and the process calls it takes away.

Its tables come from the deny list the security scan reads too (``policy.py``), so a call
only one of them refuses cannot exist.  The hook is built per child (``make_hook``) and its
whole state is bound in closures when the child starts: rebinding a module global here
(``DENY_READ``, ``os.path.realpath``...) from generated code changes nothing, and there is
no way to remove an audit hook.
"""

from __future__ import annotations

import os
import sys

from . import policy
from ._shared import CONFIG, OBSERVED, NetworkBlocked, SandboxViolation

_BLOCKED_EVENTS = set(policy.EVENTS)
_NETWORK_EVENTS = set(policy.NETWORK_EVENTS)
_PATH_EVENTS = set(policy.PATH_EVENTS)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# The directories reads are refused from (reduced isolation: the real HOME, the notebook's).
DENY_READ = tuple(os.path.realpath(p) for p in CONFIG.get("deny_read", []) if p)


def _path_rules(sandbox_dir: str, deny_read: tuple[str, ...]):
    """``(inside, denied_read)``: where a path resolves, judged with functions bound now."""
    realpath, fspath, fsdecode, getpid = os.path.realpath, os.fspath, os.fsdecode, os.getpid
    sep, devnull = os.sep, os.devnull

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

    return inside, denied_read


def make_hook(sandbox_dir: str, deny_read: tuple[str, ...]):
    """The hook for a child: armed from the start, no off switch anywhere.

    Its whole state (the directory, the deny list, the functions it calls) is bound in
    this closure when the child starts, so rebinding a module global (``SANDBOX_DIR``,
    ``os.path.realpath``...) from generated code changes nothing; the events that could
    reach the closure (``gc.get_referrers`` and friends) are refused.  ``dir_fd``-relative
    calls are refused outright (their audit arguments do not say where the directory is),
    and so are ctypes, fifos, xattrs and new processes.
    """
    fspath, fsdecode, isdir = os.fspath, os.fsdecode, os.path.isdir
    path_like = (str, bytes, os.PathLike)
    write_flags, state = _WRITE_FLAGS, OBSERVED
    blocked = frozenset(_BLOCKED_EVENTS | {"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
    network, path_events = frozenset(_NETWORK_EVENTS), frozenset(_PATH_EVENTS)
    violation, net_blocked = SandboxViolation, NetworkBlocked
    fresh_imports = frozenset(policy.FRESH_IMPORTS)
    getframe = sys._getframe
    inside, denied_read = _path_rules(sandbox_dir, deny_read)

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


def refuse_fork_exec(*args: object, **kwargs: object) -> None:
    raise SandboxViolation("creating processes or special files is not allowed inside a validation sandbox")


def take_away_process_creation() -> None:
    """Replace the calls that raise no audit event: ``_posixsubprocess.fork_exec``, ``mkfifo``, ``mknod``.

    The namespaces contain a new process anyway; this makes it a clear refusal in the report.
    """
    for name in ("_posixsubprocess", "subprocess", "os", "posix"):
        module = sys.modules.get(name)
        for attr in ("fork_exec", "_fork_exec", "mkfifo", "mknod"):
            if module is not None and hasattr(module, attr):
                setattr(module, attr, refuse_fork_exec)
