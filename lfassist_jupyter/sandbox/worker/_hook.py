"""The audit hooks a child arms for its whole life, its report channel, and the process calls it takes away.

Its tables come from the deny list the security scan reads too (``policy.py``), so a call
only one of them refuses cannot exist.  There is no way to remove an audit hook.

**Nothing the hook decides with can be changed.**  A refused call raises from the hook's own
frame, and that frame can reach the component (``bdb.Bdb().get_stack(None, tb)`` hands it over;
so can any library that walks a traceback): whatever it holds, the component holds too.  So the
judging hook (``make_hook``) holds nothing that writes the answer, and nothing it decides with is
mutable: every function of it is made here with its whole state bound as *positional default
values* -- builtins, frozensets, tuples, strings, numbers and its other functions -- never a
closure cell (cells are writable), a keyword-only default (a mutable dict) or a global (the module's
dict is mutable); a test reads their bytecode to hold that.  Replacing one of its functions'
``__code__`` or defaults is refused (it is audited), and the tables are frozen: rebinding
``DENY_READ``, ``os.path.realpath``, ``builtins.len`` or emptying a table changes nothing.

**A refusal is final.**  Before a refused call returns to the code, the refusal is written on
the child's report channel, where the zygote reads it; the kernel keeps that channel open and
writable for the child's whole life (the seccomp filter refuses closing it, ``dup2`` onto it,
shutting it down, making it non-blocking: ``_confine.VALIDATION_RULES``), so no later act of the
code can silence the next refusal either.  A refusal needs no proof of origin: a forged one only
fails its forger.

**The answer is the child's owner's.**  The answer frame alone carries a secret, made when the
child was set up and sent to the zygote in its first frame (``hello``).  The secret lives in a
thread of its own (``start_answerer``) and nowhere else: no Python signal handler runs on it (the
main thread runs them all, and hands each the frame it interrupted: a hook's, when it struck as
one started), it raises nothing and calls no method of anything it is given, and nothing refers
to it.  It sends only the answer of the child's own top-level frame (``owner``), which it reads
from that frame while the frame waits in ``await_answer``; nothing else can run in that frame.  A
frame the zygote cannot parse, or an answer without the secret, makes the report "tampered".

Frames: ``<tag> <kind> <length>\\n<payload>``: ``<secret> hello 0`` (the first, with the seccomp
listener's fd attached when the kernel notifies), ``- refused <n>`` (JSON: event, what, line) and
``<secret> answer <n>`` (the op's JSON answer).

What the code says of its *own* behaviour is its word: code that patches the validation it runs
under, or simply behaves otherwise when it finds itself in a sandbox, can make its own report say
anything about its outputs.  What it cannot do is hide a refusal (the hook's, or the kernel's, which
the zygote records itself), send a report in its owner's name, or speak for another request or
another node of a flow (each gets a process of its own).
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
ANSWER_EVENT = "lfassist.answer"  # the answer's old event: raised by the request's code, a forged answer
# Audited when a function's ``__code__``, defaults or other attributes are replaced or deleted.
SETTING_FUNCTIONS = frozenset({"object.__setattr__", "object.__delattr__"})

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
    # A debugger's stack is frames, from a traceback too (``Bdb().get_stack(None, tb)``).
    "bdb": frozenset({"get_stack"}),
    "pdb": frozenset({"setup"}),
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


def _frame_helpers() -> frozenset[tuple[str, str]]:
    """``(file, function)`` of each helper of ``_FRAME_HELPERS``, by the file its module is (or
    would be) loaded from: a helper the code imports later is looked through too."""
    import importlib.util

    out = set()
    for name, functions in _FRAME_HELPERS.items():
        path = getattr(sys.modules.get(name), "__file__", None)
        if path is None:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            path = getattr(spec, "origin", None)
        if isinstance(path, str):
            out |= {(path, function) for function in functions}
    return frozenset(out)


_HELPERS = _frame_helpers()


# -- the judging hook ---------------------------------------------------------------------------
#
# Every function below is made per child by ``make_hook`` with its whole state as *positional
# default values*: no closure cell, no global, no keyword-only default (``tests/sandbox/
# test_verdict.py`` reads their bytecode).  Builtins are defaults too (``type_=type``): the
# ``builtins`` module is the code's to rebind.


def make_hook(
    sandbox_dir: str,
    deny_read: tuple[str, ...],
    *,
    channel: int | None = None,
    root: str | None = None,
    trusted: tuple[str, ...] = (),
    c_writes_fenced: bool = True,
):
    """The judging hook for a child: armed from the start, no off switch anywhere, nothing in it
    that the code can change (see the module's docstring).

    The events that could reach into the interpreter (frames, ``gc.get_referrers`` and friends,
    new code objects) are refused to the request's code.  ``dir_fd``-relative calls are refused
    outright (their audit arguments do not say where the directory is), and so are ctypes,
    fifos, xattrs, new processes and loading code from a file the request could write (``root``:
    the sandbox's writable place).

    A refusal is reported on ``channel`` (the child's end of its report socket) before anything
    else happens, even before its message is built from the call's arguments: arguments whose
    methods raise are refused with a fixed message.  Returns ``(hook, parts)``: ``parts`` are
    the hook's functions, for the test that reads them.
    """
    import json
    import stat as stat_module

    base_exc, oserror, str_type, bytes_type, int_type, list_type, dict_type = (
        BaseException, OSError, str, bytes, int, list, dict)  # fmt: skip
    type_, isinst, length, memview = type, isinstance, len, memoryview
    decode, encoding = bytes.decode, sys.getfilesystemencoding()
    write, fstat, exit_, getpid = os.write, os.fstat, os._exit, os.getpid
    quote = json.encoder.c_encode_basestring_ascii
    append, get = list.append, dict.get
    function_type = type(make_hook)

    def resolve(path, getcwd=os.getcwd, lstat=os.lstat, readlink=os.readlink, is_link=stat_module.S_ISLNK,
                str_type=str_type, type_=type_, oserror=oserror):  # fmt: skip
        """``realpath`` from C functions only, bound now: ``posixpath``'s module globals (which the
        code may rebind) play no part in where the hook thinks a path leads."""
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        parts = path.split("/")
        done = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "" or part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join([*done, part])
            try:
                link = is_link(lstat(here).st_mode)
            except oserror:
                link = False
            if link and hops < 40:
                hops += 1
                try:
                    target = readlink(here)
                except oserror:
                    done.append(part)
                    continue
                if type_(target) is not str_type:
                    done.append(part)
                    continue
                if target.startswith("/"):
                    done = []
                parts = target.split("/") + parts
                continue
            done.append(part)
        return "/" + "/".join(done)

    def exact(value, type_=type_, isinst=isinst, str_type=str_type, bytes_type=bytes_type, to_str=str.__str__,
              to_bytes=bytes.__getitem__, everything=slice(None)):  # fmt: skip
        """``value`` as an exact ``str`` or ``bytes`` when it is one of a subclass -- the data the
        interpreter uses, never a method the code overrode (``__eq__``, ``__hash__``, ``__str__``)."""
        kind = type_(value)
        if kind is str_type or kind is bytes_type:
            return value
        if isinst(value, str_type):
            return to_str(value)
        if isinst(value, bytes_type):
            return to_bytes(value, everything)
        return value

    def real(path, exact=exact, resolve=resolve, fspath=os.fspath, type_=type_, str_type=str_type,
             bytes_type=bytes_type, decode=decode, encoding=encoding, type_error=TypeError):  # fmt: skip
        """Where ``path`` leads, or None when it is not a path.  An object is a path when
        ``os.fspath`` takes it -- the very lookup ``open`` makes, not ``os.PathLike`` (an abstract
        class, whose answer the code can change)."""
        path = exact(path)
        if type_(path) is not str_type and type_(path) is not bytes_type:
            try:
                path = exact(fspath(path))
            except type_error:
                return None
        if type_(path) is bytes_type:
            path = decode(path, encoding, "surrogateescape")
        if type_(path) is not str_type:
            return None
        return resolve(path)

    def inside(path, real=real, isinst=isinst, int_type=int_type, fixed=(os.devnull, sandbox_dir),
               prefix=sandbox_dir + os.sep):  # fmt: skip
        if isinst(path, int_type):
            return True  # an already-open descriptor
        where = real(path)
        return where is None or where in fixed or where.startswith(prefix)

    def is_dir(path, real=real, stat=os.stat, s_isdir=stat_module.S_ISDIR, oserror=oserror):
        where = real(path)
        try:
            return where is not None and s_isdir(stat(where).st_mode)
        except oserror:
            return False

    # Never a root that holds a whole denied directory (a Python whose prefix is HOME itself, a
    # notebook's folder that is the venv): its standard library and site directories, roots of
    # their own (``trusted_roots``), stay readable, and the rest of HOME or the folder does not.
    readable = tuple(
        p for p in trusted if p.startswith("/") and not any((d.rstrip("/") + "/").startswith(p) for d in deny_read)
    )

    def denied_read(path, opening=True, real=real, inside=inside, getpid=getpid, int_type=int_type,
                    denied=tuple(deny_read), denied_below=tuple(d + os.sep for d in deny_read),
                    readable=readable):  # fmt: skip
        where = real(path)
        if where is None:
            return False
        if where.startswith("/proc/"):
            parts = where.split("/")
            if (parts[2].isdigit() and int_type(parts[2]) != getpid()) or parts[2] == "thread-self":
                return True
            # Its own memory, and its own descriptors reopened.
            if opening and (parts[-1] == "mem" or "fd" in parts[3:] or "map_files" in parts[3:]):
                return True
        if not (where in denied or where.startswith(denied_below)):
            return False
        return not inside(where) and not where.startswith(readable)

    root_dev = os.stat(root).st_dev if root else None

    def writable_code(path, exact=exact, real=real, stat=os.stat, type_=type_, plain=(str_type, bytes_type),
                      root=root, below=(root or "/") + os.sep, root_dev=root_dev, oserror=oserror):  # fmt: skip
        """Whether ``path`` (a module being loaded) is a file the request could have written."""
        path = exact(path)
        if root is None or type_(path) not in plain or path[:1] in ("<", b"<"):
            return False
        where = real(path)
        if where is None or not (where == root or where.startswith(below)):
            return False
        try:
            return stat(where).st_dev == root_dev  # not a read-only bind below it (a venv in /tmp)
        except oserror:
            return True

    def frame(depth, getframe=sys._getframe):
        """The frame ``depth`` above this one.  Its own ``sys._getframe`` event carries this very
        frame (``args[0]``), which the hook knows by its code: no state says "the hook is asking"."""
        f = getframe(0)
        while depth and f is not None:
            f = f.f_back
            depth -= 1
        return f

    frame_code = frame.__code__

    def code_line(frame=frame, type_=type_, str_type=str_type, base_exc=base_exc):
        """The line of the component's code (lfx compiles it as "<string>") that made the call."""
        try:
            f = frame(4)  # frame() <- code_line <- refuse <- hook <- the caller
            while f is not None:
                name = f.f_code.co_filename
                if type_(name) is str_type and name == "<string>":  # an exact str: no code of theirs runs here
                    return f.f_lineno
                f = f.f_back
        except base_exc:
            pass
        return None

    def by_request_code(frame=frame, helpers=_HELPERS, type_=type_, str_type=str_type,
                        trusted=(*trusted, "<frozen ")):  # fmt: skip
        """Whether the event's caller (past the helpers that hand frames back) is not the
        interpreter's own code: the component's, or code compiled at run time."""
        f = frame(4)  # frame() <- by_request_code <- judge <- hook <- the caller
        while f is not None:
            code = f.f_code
            if (code.co_filename, code.co_name) not in helpers:
                break
            f = f.f_back
        if f is None:
            return False
        name = f.f_code.co_filename
        return not (type_(name) is str_type and name.startswith(trusted))

    def shown(value, exact=exact, real=real, type_=type_, str_type=str_type, bytes_type=bytes_type, decode=decode,
              encoding=encoding, length=length):  # fmt: skip
        """A path or name for a message, from its data only (no method of the object is called)."""
        value = exact(value)
        if type_(value) is bytes_type:
            value = decode(value, encoding, "replace")
        if type_(value) is str_type:
            return value if length(value) <= 300 else value[:300] + "..."
        where = real(value)
        return where if type_(where) is str_type else "a path object"

    ident = None
    if channel is not None:
        st = fstat(channel)
        ident = (st.st_dev, st.st_ino)

    def emit(payload, channel=channel, ident=ident, fstat=fstat, write=write, memview=memview, length=length,
             exit_=exit_, base_exc=base_exc, oserror=oserror):  # fmt: skip
        """One refusal frame on the channel, or the end of the child (a channel it cannot use is a
        failure; the kernel keeps it open, this is for where seccomp is not there)."""
        if channel is None:
            return
        try:
            now = fstat(channel)
            if (now.st_dev, now.st_ino) != ident:
                raise oserror("the report channel was replaced")
            view = memview(b"- refused %d\n" % length(payload) + payload)
            while view:
                view = view[write(channel, view) :]
        except base_exc:
            exit_(75)

    def refuse(what, event, message, emit=emit, code_line=code_line, quote=quote, state=OBSERVED, get=get,
               append=append, type_=type_, list_type=list_type, violation=SandboxViolation):  # fmt: skip
        """Report the refusal on the channel (before the code can run again), then raise."""
        line = code_line()
        emit(
            b'{"event": %s, "what": %s, "line": %s}'
            % (quote(event).encode(), quote(what).encode(), b"null" if line is None else b"%d" % line)
        )
        # The child's own notes for its report's words (the zygote has the refusal already).
        for key, value in (("violations", what), ("refused", (event, line))):
            seen = get(state, key)
            if type_(seen) is list_type:
                append(seen, value)
        raise violation(message)

    def judge(event, args, exact=exact, length=length, type_=type_, str_type=str_type, int_type=int_type,
              isinst=isinst, frame_events=_FRAME_EVENTS, frame_attrs=_FRAME_ATTRS,
              by_request_code=by_request_code, writable_code=writable_code, shown=shown, inside=inside,
              is_dir=is_dir, denied_read=denied_read, real=real,
              trusted=(*trusted, "<frozen "), fresh_imports=frozenset(policy.FRESH_IMPORTS),
              blocked=frozenset(_BLOCKED_EVENTS | {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}),
              path_events=frozenset(_PATH_EVENTS), write_flags=_WRITE_FLAGS, answer_event=ANSWER_EVENT,
              c_writes_fenced=c_writes_fenced):  # fmt: skip
        """(what, message) when the event is refused, else None (may run the code's methods)."""
        if event == "object.__getattr__":
            name = exact(args[1]) if length(args) > 1 else None
            if name in frame_attrs and by_request_code():
                return f"access to {name}", f"reading '{name}' is not allowed while validating"
            return None
        if event in frame_events:
            if by_request_code():
                return event, f"'{event}' (walking the interpreter's frames) is not allowed while validating"
            return None
        if event == answer_event:
            if by_request_code():  # the answer is the answer thread's; this one is a try at forging it
                return "a forged answer", "only the sandbox may send the validation's answer"
            return None
        if event == "compile":
            name = exact(args[1]) if length(args) > 1 else None
            if type_(name) is str_type and name.startswith(trusted) and by_request_code():
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
            writing = False
            if isinst(flags, int_type) and int_type.__and__(flags, write_flags):
                writing = True
            if type_(mode) is str_type:
                for c in "wax+":  # a loop, not ``any(... for ...)``: a generator would close over ``mode``
                    writing = writing or c in mode
            if writing and not inside(path):
                where = shown(path)
                message = f"writing to {where} is not allowed while validating (only the sandbox directory)"
                return f"write to {where}", message
            # A directory descriptor from outside would let dir_fd-relative calls (whose
            # audit events do not carry the dir_fd) write there.
            if not isinst(path, int_type) and not inside(path) and is_dir(path):
                where = shown(path)
                return f"open of directory {where}", f"opening the directory {where} is not allowed while validating"
            if denied_read(path):
                where = shown(path)
                return f"read of {where}", f"reading {where} is not allowed while validating"
        elif event in path_events and args:
            for a in args[2:]:
                if isinst(a, int_type) and a != -1:  # a dir_fd / src_dir_fd / dst_dir_fd
                    return (
                        f"{event} with dir_fd",
                        f"'{event}' relative to a directory descriptor is not allowed while validating",
                    )
            for a in args[:2]:
                if not inside(a):
                    return (
                        f"{event} {shown(args[0])}",
                        f"'{event}' outside the sandbox directory is not allowed while validating",
                    )
        elif event in ("os.listdir", "os.scandir") and args and denied_read(args[0], False):
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
        elif event == "sqlite3.connect" and args and real(args[0]) is not None:
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

    parts = (resolve, exact, real, inside, is_dir, denied_read, writable_code, frame, code_line, by_request_code,
             shown, emit, refuse, judge)  # fmt: skip

    # The events lfx and pydantic raise by the thousand per build (``id()`` alone ~2,300):
    # one set lookup and out, since every event costs a Python call while a hook exists.
    def hook(event, args, quiet=frozenset({"builtins.id", "exec", "marshal.loads"}), watched=_FRAME_ATTRS,
             type_=type_, str_type=str_type, exact=exact, frame_events=_FRAME_EVENTS, frame_code=frame_code,
             network=frozenset(_NETWORK_EVENTS), state=OBSERVED, dict_type=dict_type, net_blocked=NetworkBlocked,
             af_unix=1, judge=judge, refuse=refuse, base_exc=base_exc, length=length, isinst=isinst,
             int_type=int_type, setting=SETTING_FUNCTIONS, function_type=function_type,
             ours=frozenset((*parts, _answerer, await_answer, start_answerer))):  # fmt: skip
        if event in quiet:
            return
        if event == "object.__getattr__":  # ~1,200 per build (``__code__``): out at once unless it reads a frame
            name = args[1]
            if (name if type_(name) is str_type else exact(name)) not in watched:
                return
        if event in frame_events and args and args[0].f_code is frame_code:
            return  # the hook's own ``frame()``
        if event in setting and args and type_(args[0]) is function_type and args[0] in ours:
            refuse("changing the sandbox's audit hook", event, "the sandbox's audit hook cannot be changed")
        if event == "socket.__new__" and length(args) > 1 and isinst(args[1], int_type) and args[1] != af_unix:
            # Python's sockets (``socket.__new__``: family, type, proto): the network is blocked
            # here, before the kernel's no (which native code meets: ``socket`` is refused below).
            if type_(state) is dict_type:
                state["network"] = True
            raise net_blocked("network access ('socket') is disabled while validating")
        if event in network:
            if type_(state) is dict_type:
                state["network"] = True
            raise net_blocked(f"network access ('{event}') is disabled while validating")
        try:
            verdict = judge(event, args)
        except base_exc:  # the arguments' own methods raised (or a nested refusal): refused all the same
            verdict = (f"{event} with arguments the sandbox cannot read", f"'{event}' is not allowed while validating")
        if verdict is not None:
            refuse(verdict[0], event, verdict[1])

    return hook, (*parts, hook)


# -- the answer's thread -----------------------------------------------------------------------------


def _answerer(channel, secret, owner, await_code, gate_r, release_w, main, current=sys._current_frames, read=os.read,
              write=os.write, exit_=os._exit, type_=type, bytes_type=bytes, length=len, memview=memoryview,
              base_exc=BaseException):  # fmt: skip
    """The answer thread's loop (``start_answerer``): at each ring of the gate, the main thread's
    top frame must be ``await_answer`` called by ``owner`` -- the child's top-level frame, which
    nothing else can execute in -- and its ``data``, the answer, goes out with the secret; any
    other ring is a forged answer (a refusal frame), and the thread waits on.  It never raises:
    a failure ends the child."""
    try:
        while True:
            if not read(gate_r, 1):
                return  # the gate closed: the child is ending
            top = current().get(main)
            data = None
            if top is not None and top.f_code is await_code and top.f_back is owner:
                data = top.f_locals.get("data")
            if type_(data) is bytes_type:
                view = memview(b"%s answer %d\n" % (secret, length(data)) + data)
                while view:
                    view = view[write(channel, view) :]
                write(release_w, b"r")
                return
            forged = b'{"event": "lfassist.answer", "what": "a forged answer", "line": null}'
            view = memview(b"- refused %d\n" % length(forged) + forged)
            while view:
                view = view[write(channel, view) :]
    except base_exc:
        exit_(75)


def await_answer(data: bytes, gate_w: int, release_r: int) -> None:
    """Called by the child's top-level frame with its answer: ring the gate, and wait here while the
    answer thread takes ``data`` from this very frame."""
    os.write(gate_w, b"a")
    os.read(release_r, 1)


def start_answerer(channel: int, owner: object, secret: bytes) -> tuple[int, int]:
    """Start the thread that sends the child's answer, the only holder of ``secret``; returns the
    ``(gate_w, release_r)`` ends ``await_answer`` takes.

    A thread of its own, not a hook: the main thread runs every Python signal handler, at the
    start of whatever function is starting -- a hook's too, on every audit event -- and hands it
    that function's frame; no handler runs on this thread, which waits in ``read``, raises nothing
    and calls no method of anything it is given.  Nothing refers to its function and arguments but
    the thread itself (``_thread``: no ``Thread`` object).  Start it before any of the request's
    code exists, and drop ``secret``."""
    import _thread

    gate_r, gate_w = os.pipe()
    release_r, release_w = os.pipe()
    args = (channel, secret, owner, await_answer.__code__, gate_r, release_w, _thread.get_ident())
    _thread.start_new_thread(_answerer, args)
    return gate_w, release_r


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
