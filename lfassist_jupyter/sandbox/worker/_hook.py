"""The audit hook a child arms for its whole life, its report channel, and the process calls it takes away.

Its tables come from the deny list the security scan reads too (``policy.py``), so a call
only one of them refuses cannot exist.  The hook is built per child (``make_hook``) and its
whole state is bound in closures when the child starts: rebinding a module global here
(``DENY_READ``, ``os.path.realpath``, ``builtins.len``...) from generated code changes
nothing, and there is no way to remove an audit hook.

**A refusal is final.**  The hook is the only writer of the child's report channel (a
socket, so the code cannot reopen it through ``/proc/self/fd`` to read it back): before a
refused call returns to the code, the refusal is written there, where the zygote reads it;
nothing the code does afterwards can take it back.  Every frame carries a secret made by
the hook when it was armed (before any of the request's code ran) and held only in its
closure, so the code cannot forge a frame or swallow the hook's frames inside one of its
own: bytes without the secret make the whole report "tampered".  The answer is the last
frame, sent by the child's own top-level frame (``owner``) and nothing else; then the hook
shuts the channel for writing, so nothing can follow it.  A channel the code closed,
replaced or blocked ends the child at the next refusal.

Frames: ``<secret> <kind> <length>\\n<payload>``; kinds ``hello`` (the first, empty),
``refused`` (JSON: event, what, line) and ``answer`` (the op's JSON answer).
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
ANSWER_EVENT = "lfassist.answer"  # raised by the child's top-level frame only, with its answer

# Frames are reached through these (Python 3.11 audits each); ``f_back`` and ``f_locals``
# need a frame first.  Helpers whose job is to hand a frame to their caller are looked
# through: ``inspect.stack()`` called by the component is the component asking.
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys._getframemodulename"})
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# (``__code__`` is read ~1,200 times per lfx build: a code object alone is harmless here, since
# making one -- ``code.__new__``, ``replace`` -- is refused to the request's code below.)
_FRAME_HELPERS = {
    "inspect": frozenset({"currentframe", "stack", "trace", "getouterframes", "getinnerframes"}),
    "traceback": frozenset({"walk_stack", "walk_tb"}),
    "logging": frozenset({"<lambda>", "currentframe"}),
    "asyncio.base_tasks": frozenset({"_task_get_stack"}),
}


def trusted_roots(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Where the interpreter's own code lives (read-only in the sandbox): code whose file is
    below one of these is lfx, a package or the standard library, not the request's.

    Its prefixes, and also each directory it imports from on its own -- the standard library
    and the site directories (``sysconfig``'s paths, ``sys.path``'s site-packages) -- so that
    where a prefix cannot be exempt from the reduced sandbox's denied reads (one that holds
    HOME or the notebook's directory, see ``make_hook``) the interpreter still reads its own
    files, e.g. ``encodings/cp1252.py`` imported lazily by a probe run, and nothing else of it."""
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *extra}
    roots |= {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {p for p in sys.path if isinstance(p, str) and os.path.basename(p) in ("site-packages", "dist-packages")}
    out = set()
    for root in roots:
        if root and os.path.isabs(root):
            out |= {root.rstrip("/") + "/", os.path.realpath(root).rstrip("/") + "/"}
    return tuple(sorted(out))


def _frame_helpers() -> dict[str, frozenset[str]]:
    """The helpers of ``_FRAME_HELPERS`` by their file (the modules are imported in the zygote)."""
    out = {}
    for name, functions in _FRAME_HELPERS.items():
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            out[path] = functions
    return out


def _resolver(getcwd, lstat, readlink, s_islnk):
    """``realpath`` from C functions only, bound now: ``posixpath``'s module globals (which the
    code may rebind) play no part in where the hook thinks a path leads."""
    str_type = str

    def resolve(path: str) -> str:
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        parts = path.split("/")
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join([*done, part])
            try:
                link = s_islnk(lstat(here).st_mode)
            except OSError:
                link = False
            if link and hops < 40:
                hops += 1
                try:
                    target = readlink(here)
                except OSError:
                    done.append(part)
                    continue
                if type(target) is not str_type:
                    done.append(part)
                    continue
                if target.startswith("/"):
                    done = []
                parts = target.split("/") + parts
                continue
            done.append(part)
        return "/" + "/".join(done)

    return resolve


def _exact_text():
    """``exact(value)``: ``value`` as an exact ``str`` or ``bytes`` when it is one of a subclass --
    the data the interpreter uses, never a method the code overrode (``__eq__``, ``__hash__``,
    ``__str__``); a closure over bound builtins, made afresh for each hook."""
    type_, isinst, str_type, bytes_type = type, isinstance, str, bytes
    to_str, to_bytes, everything = str.__str__, bytes.__getitem__, slice(None)

    def exact(value: object) -> object:
        kind = type_(value)
        if kind is str_type or kind is bytes_type:
            return value
        if isinst(value, str_type):
            return to_str(value)
        if isinst(value, bytes_type):
            return to_bytes(value, everything)
        return value

    return exact


def _path_rules(sandbox_dir: str, deny_read: tuple[str, ...], root: str | None, resolve, readable: tuple[str, ...]):
    """``(real, inside, is_dir, denied_read, writable_code)``: where a path leads, judged with C
    functions bound now (``os.path``'s Python functions could be rewritten by the code under
    validation).  ``readable``: the interpreter's own directories, never a denied read (a Python
    installed under HOME reads its own sources for a traceback)."""
    import stat as stat_module

    fspath, getpid, stat, exact = os.fspath, os.getpid, os.stat, _exact_text()
    decode, encoding = bytes.decode, sys.getfilesystemencoding()
    type_, str_type, bytes_type, int_type, isinst, any_ = type, str, bytes, int, isinstance, any
    pathlike, s_isdir = os.PathLike, stat_module.S_ISDIR
    sep, devnull = os.sep, os.devnull
    root_dev = stat(root).st_dev if root else None

    def real(path: object) -> str | None:
        path = exact(path)
        if isinst(path, pathlike) and not isinst(path, str_type | bytes_type):
            path = exact(fspath(path))
        if type_(path) is bytes_type:
            path = decode(path, encoding, "surrogateescape")
        if type_(path) is not str_type:
            return None
        return resolve(path)

    def inside(path: object) -> bool:
        if isinst(path, int_type):
            return True  # an already-open descriptor
        where = real(path)
        return where is None or where in (devnull, sandbox_dir) or where.startswith(sandbox_dir + sep)

    def is_dir(path: object) -> bool:
        where = real(path)
        try:
            return where is not None and s_isdir(stat(where).st_mode)
        except OSError:
            return False

    def denied_read(path: object, opening: bool = True) -> bool:
        where = real(path)
        if where is None:
            return False
        if where.startswith("/proc/"):
            parts = where.split("/")
            if (parts[2].isdigit() and int_type(parts[2]) != getpid()) or parts[2] == "thread-self":
                return True
            # Its own memory (the hook's secret is in it), and its own descriptors reopened.
            if opening and (parts[-1] == "mem" or "fd" in parts[3:] or "map_files" in parts[3:]):
                return True
        if not any_(where == d or where.startswith(d + sep) for d in deny_read):
            return False
        return not inside(where) and not where.startswith(readable)

    def writable_code(path: object) -> bool:
        """Whether ``path`` (a module being loaded) is a file the request could have written."""
        path = exact(path)
        if root is None or type_(path) not in (str_type, bytes_type) or path[:1] in ("<", b"<"):
            return False
        where = real(path)
        if where is None or not (where == root or where.startswith(root + sep)):
            return False
        try:
            return stat(where).st_dev == root_dev  # not a read-only bind below it (a venv in /tmp)
        except OSError:
            return True

    return real, inside, is_dir, denied_read, writable_code


def make_hook(
    sandbox_dir: str,
    deny_read: tuple[str, ...],
    *,
    channel: int | None = None,
    owner: object = None,
    root: str | None = None,
    trusted: tuple[str, ...] = (),
    c_writes_fenced: bool = True,
):
    """The hook for a child: armed from the start, no off switch anywhere.

    Its whole state (the directory, the deny list, the channel and its secret, the functions
    it calls) is bound in this closure when the child starts, from C functions and closures
    made here: rebinding a module global (``SANDBOX_DIR``, ``os.path.realpath``,
    ``json.dumps``...) or a function's ``__code__`` from generated code changes nothing it
    does.  The events that could reach the closure (frames, ``gc.get_referrers`` and friends,
    new code objects) are refused to the request's code.  ``dir_fd``-relative calls are
    refused outright (their audit arguments do not say where the directory is), and so are
    ctypes, fifos, xattrs, new processes and loading code from a file the request could write
    (``root``: the sandbox's writable place).

    A refusal is reported on ``channel`` (the child's end of its report socket, see the
    module's docstring) before anything else happens, even before its message is built from
    the call's arguments: arguments whose methods raise are refused with a fixed message.
    ``owner``: the child's top-level frame, the only one whose ``lfassist.answer`` event is
    its answer.
    """
    import json
    import socket
    import stat as stat_module
    import threading

    exact = _exact_text()
    path_like = (str, bytes, os.PathLike)
    text_types = str | bytes | os.PathLike
    write_flags, state = _WRITE_FLAGS, OBSERVED
    blocked = frozenset(_BLOCKED_EVENTS | {"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
    network, path_events = frozenset(_NETWORK_EVENTS), frozenset(_PATH_EVENTS)
    violation, net_blocked = SandboxViolation, NetworkBlocked
    fresh_imports = frozenset(policy.FRESH_IMPORTS)
    frame_events, frame_attrs = _FRAME_EVENTS, _FRAME_ATTRS
    answer_event = ANSWER_EVENT
    helpers = _frame_helpers()
    getframe, get_ident, exit_ = sys._getframe, threading.get_ident, os._exit
    write, fstat, quote = os.write, os.fstat, json.encoder.c_encode_basestring_ascii
    memview, length, str_type, is_inst, type_ = memoryview, len, str, isinstance, type
    any_, all_, int_type, bytes_type = any, all, int, bytes
    decode, encoding = bytes.decode, sys.getfilesystemencoding()
    trusted_prefixes = (*trusted, "<frozen ")
    resolve = _resolver(os.getcwd, os.lstat, os.readlink, stat_module.S_ISLNK)
    # Never a root that holds a whole denied directory (a Python whose prefix is HOME itself, a
    # notebook's folder that is the venv): its standard library and site directories, roots of
    # their own (``trusted_roots``), stay readable, and the rest of HOME or the folder does not.
    readable = tuple(
        p for p in trusted if p.startswith("/") and not any((d.rstrip("/") + "/").startswith(p) for d in deny_read)
    )
    real, inside, is_dir, denied_read, writable_code = _path_rules(sandbox_dir, deny_read, root, resolve, readable)
    busy = [0]  # the thread id while the hook itself calls sys._getframe (its own event is not a request's)

    # -- the report channel -----------------------------------------------------------------
    secret = os.urandom(16).hex().encode()
    ident = shutdown = None
    shut_wr = socket.SHUT_WR
    if channel is not None:
        st = fstat(channel)
        ident = (st.st_dev, st.st_ino)
        shutdown = socket.socket(fileno=channel).shutdown  # the bound method keeps the object (and fd) alive

    def emit(kind: bytes, payload: bytes) -> None:
        """One frame on the channel, or the end of the child (a channel it cannot use is a failure)."""
        if channel is None:
            return
        try:
            now = fstat(channel)
            if (now.st_dev, now.st_ino) != ident:
                raise OSError("the report channel was replaced")
            view = memview(b"%s %s %d\n" % (secret, kind, length(payload)) + payload)
            while view:
                view = view[write(channel, view) :]
        except BaseException:
            exit_(75)

    emit(b"hello", b"")

    def frame(depth: int):
        busy[0] = get_ident()
        try:
            return getframe(depth)
        except ValueError:
            return None
        finally:
            busy[0] = 0

    def code_line() -> int | None:
        """The line of the component's code (lfx compiles it as "<string>") that made the call."""
        try:
            f = frame(4)  # frame() <- code_line <- refuse <- hook <- the caller
            while f is not None:
                name = f.f_code.co_filename
                if type_(name) is str_type and name == "<string>":  # an exact str: no code of theirs runs here
                    return f.f_lineno
                f = f.f_back
        except Exception:
            pass
        return None

    def by_request_code() -> bool:
        """Whether the event's caller (past the helpers that hand frames back) is not the
        interpreter's own code: the component's, or code compiled at run time."""
        f = frame(4)  # frame() <- by_request_code <- judge <- hook <- the caller
        while f is not None:
            code = f.f_code
            names = helpers.get(code.co_filename)
            if names is None or code.co_name not in names:
                break
            f = f.f_back
        if f is None:
            return False
        name = f.f_code.co_filename
        return not (type_(name) is str_type and name.startswith(trusted_prefixes))

    def shown(value: object) -> str:
        """A path or name for a message, from its data only (no method of the object is called)."""
        value = exact(value)
        if type_(value) is bytes_type:
            value = decode(value, encoding, "replace")
        if type_(value) is str_type:
            return value if length(value) <= 300 else value[:300] + "..."
        where = real(value) if is_inst(value, os.PathLike) else None
        return where if type_(where) is str_type else "a path object"

    def refuse(what: str, event: str, message: str) -> None:
        """Report the refusal on the channel (before the code can run again), then raise."""
        line = code_line()
        emit(
            b"refused",
            b'{"event": %s, "what": %s, "line": %s}'
            % (quote(event).encode(), quote(what).encode(), b"null" if line is None else b"%d" % line),
        )
        state["violations"].append(what)
        state["refused"].append((event, line))
        raise violation(message)

    def judge(event: str, args: tuple) -> tuple[str, str] | None:
        """(what, message) when the event is refused, else None (may run the code's methods)."""
        if event == "object.__getattr__":
            name = exact(args[1]) if length(args) > 1 else None
            if name in frame_attrs and busy[0] != get_ident() and by_request_code():
                return f"access to {name}", f"reading '{name}' is not allowed while validating"
            return None
        if event in frame_events:
            if busy[0] != get_ident() and by_request_code():
                return event, f"'{event}' (walking the interpreter's frames) is not allowed while validating"
            return None
        if event == "compile":
            name = exact(args[1]) if length(args) > 1 else None
            if type_(name) is str_type and name.startswith(trusted_prefixes) and by_request_code():
                # Code the request compiles under the name of the interpreter's own files would
                # pass for the interpreter's code (its frames, its calls): it keeps its own name.
                return (
                    f"compiling code as {name[:200]}",
                    "compiling code under the interpreter's file names is not allowed",
                )
            if length(args) > 1 and writable_code(args[1]):
                where = shown(args[1])
                return (
                    f"loading code from {where} (a file written while validating)",
                    "loading code from a file written while validating is not allowed",
                )
            return None
        if event == "code.__new__" or event == "function.__new__":
            if by_request_code():
                return event, f"'{event}' (making code objects) is not allowed while validating"
            return None
        if event == "import" and args:
            module = exact(args[0])
            top = module.split(".")[0] if type_(module) is str_type else ""
            if top in fresh_imports:
                # A fresh copy of a module whose dangerous functions were taken away (or ctypes).
                return (
                    f"import {module}",
                    f"importing {module} is not allowed inside a Langflow component validation sandbox",
                )
            if length(args) > 1 and args[1] is not None and writable_code(args[1]):
                where = shown(args[1])
                return (
                    f"loading {shown(module)} from {where} (a file written while validating)",
                    f"loading {shown(module)} from {where}, a file written while validating, is not allowed",
                )
            return None
        if event in blocked:
            return event, f"'{event}' is not allowed inside a Langflow component validation sandbox"
        if event == "open" and length(args) >= 3:
            path, mode, flags = args[0], exact(args[1]), args[2]
            writing = (type_(mode) is str_type and any_(c in mode for c in "wax+")) or (
                is_inst(flags, int_type) and int_type.__and__(flags, write_flags)
            )
            if writing and not inside(path):
                where = shown(path)
                message = f"writing to {where} is not allowed while validating (only the sandbox directory)"
                return f"write to {where}", message
            # A directory descriptor from outside would let dir_fd-relative calls (whose
            # audit events do not carry the dir_fd) write there.
            if not inside(path) and is_inst(path, text_types) and is_dir(path):
                where = shown(path)
                return f"open of directory {where}", f"opening the directory {where} is not allowed while validating"
            if denied_read(path):
                where = shown(path)
                return f"read of {where}", f"reading {where} is not allowed while validating"
        elif event in path_events and args:
            if any_(is_inst(a, int_type) and a != -1 for a in args[2:]):  # a dir_fd / src_dir_fd / dst_dir_fd
                return (
                    f"{event} with dir_fd",
                    f"'{event}' relative to a directory descriptor is not allowed while validating",
                )
            if not all_(inside(a) for a in args[:2] if is_inst(a, path_like)):
                return (
                    f"{event} {shown(args[0])}",
                    f"'{event}' outside the sandbox directory is not allowed while validating",
                )
        elif event in ("os.listdir", "os.scandir") and args and denied_read(args[0], opening=False):
            where = shown(args[0])
            return f"listing {where}", f"listing {where} is not allowed while validating"
        elif event == "sqlite3.connect" and not c_writes_fenced:
            # sqlite writes files in C wherever SQL names them (ATTACH, VACUUM INTO on an
            # in-memory database too), and no event says where: with neither Landlock nor a
            # mount namespace to fence them (the reduced sandbox on a kernel without Landlock,
            # macOS), sqlite could plant a file anywhere -- a .pth in site-packages, say.
            return (
                "sqlite3.connect (no Landlock here)",
                "sqlite is not allowed here: without Landlock nothing fences the files it writes",
            )
        elif event == "sqlite3.connect" and args and is_inst(args[0], path_like):
            # sqlite opens (and creates) its file in C, with no "open" event; Landlock holds
            # below this where the kernel has it, this is for where it has not.
            database = shown(args[0])
            if database.startswith("file:"):
                database = database[5:].split("?", 1)[0]
            if database not in ("", ":memory:") and not inside(database):
                return (
                    f"sqlite3.connect {database}",
                    f"a database at {database} is not allowed while validating (only the sandbox)",
                )
        return None

    # The events lfx and pydantic raise by the thousand per build (``id()`` alone ~2,300):
    # one set lookup and out, since every event costs a Python call while a hook exists.
    quiet = frozenset({"builtins.id", "exec", "marshal.loads"})

    watched = frame_attrs

    def hook(event: str, args: tuple) -> None:
        if event in quiet:
            return
        if event == "object.__getattr__":  # ~1,200 per build (``__code__``): out at once unless it reads a frame
            name = args[1]
            if (name if type_(name) is str_type else exact(name)) not in watched:
                return
        if event == answer_event:
            if busy[0] != get_ident() and frame(2) is owner and args and type_(args[0]) is bytes_type:
                emit(b"answer", args[0])
                if shutdown is not None:
                    try:
                        shutdown(shut_wr)  # nothing can follow the answer on the channel
                    except BaseException:
                        exit_(75)
                return
            refuse("a forged answer", event, "only the sandbox may send the validation's answer")
        if event in network:
            state["network"] = True
            raise net_blocked(f"network access ('{event}') is disabled while validating")
        try:
            verdict = judge(event, args)
        except BaseException:  # the arguments' own methods raised (or a nested refusal): refused all the same
            verdict = (f"{event} with arguments the sandbox cannot read", f"'{event}' is not allowed while validating")
        if verdict is not None:
            refuse(verdict[0], event, verdict[1])

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
