"""Test-only op modules for the sandbox's worker: what the code under validation could reach, seen
from inside a child by code of the worker's own (its frame walking is not the request's).

Loaded like the worker's own op modules (``OP_MODULES``, stdlib only, ``register(ops, facts)``):

- ``hook_parts``: how the judging hook is made (``make_hook``, as every child makes it) and the
  answer thread's loop: their functions' closures, keyword defaults, default values and the
  opcodes that would read a global or a cell;
- ``hook_frames``: a refused call and a blocked one, their tracebacks walked to the hook's frames
  (what ``bdb.Bdb().get_stack(None, tb)`` handed the code), everything those frames hold searched
  for a way to write the answer or silence a refusal -- and each one tried -- then a refused call
  again; its control: the same search over a hook made the old way (a closure) finds its cells;
- ``heap_scan`` (run without the hooks, see ``unarmed_ops``): whether this process's memory holds
  the given markers -- what a spare inherits of earlier requests;
- ``no_hook``: with no hook at all (its tables as empty as they can be), a shell run through
  ctypes' ``execv`` and a socket made through ctypes: only the kernel stands in the way.
"""

from __future__ import annotations

import os
import sys

HEX = frozenset(b"0123456789abcdef")


def _parts_facts(functions: tuple) -> list[dict]:
    import dis

    facts = []
    for fn in functions:
        ops = {i.opname for i in dis.get_instructions(fn)}
        code_ops = set()
        for const in fn.__code__.co_consts:  # comprehensions and generator expressions: their own code
            if hasattr(const, "co_code"):
                code_ops |= {i.opname for i in dis.get_instructions(const)}
        facts.append(
            {
                "name": fn.__name__,
                "closure": fn.__closure__ is not None,
                "kwdefaults": fn.__kwdefaults__ is not None,
                "globals": sorted(ops & {"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME"}),
                "cells": sorted(ops & {"LOAD_DEREF", "STORE_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE"}),
                "inner_globals": sorted(code_ops & {"LOAD_GLOBAL", "STORE_GLOBAL", "LOAD_NAME"}),
                "defaults": sorted({type(v).__name__ for v in fn.__defaults__ or ()}),
            }
        )
    return facts


def _search(values: list, seen: set[int], found: dict, depth: int = 0) -> None:
    """What ``values`` (a frame's locals) lead to: functions (and their closures' cells and
    defaults), secret-like bytes, containers the code could change."""
    import types

    for value in values:
        if id(value) in seen or depth > 6:
            continue
        seen.add(id(value))
        if isinstance(value, bytes) and len(value) == 32 and set(value) <= HEX:
            found["secrets"] += 1
        elif isinstance(value, types.FunctionType):
            found["functions"].append(value)
            if value.__closure__:
                found["cells"].extend(value.__closure__)
                _search([c.cell_contents for c in value.__closure__], seen, found, depth + 1)
            _search(list(value.__defaults__ or ()), seen, found, depth + 1)
        elif isinstance(value, list | dict | set | bytearray):
            found["mutable"].append(value)
        elif isinstance(value, tuple | frozenset):
            _search(list(value), seen, found, depth + 1)


def _name_of(value: object, observed: dict) -> str:
    """``OBSERVED`` for the child's own notes (a sink: the refusals are the zygote's), else the type."""
    if value is observed or any(value is v for v in observed.values()):
        return "OBSERVED"
    return type(value).__name__


def _refused(call) -> str:
    try:
        call()
    except BaseException as exc:
        return type(exc).__name__
    return "ran"


def register(ops: dict, facts: dict) -> None:
    hook_module = sys.modules[__name__.rsplit(".", 1)[0] + "._hook"]
    shared = sys.modules[__name__.rsplit(".", 1)[0] + "._shared"]

    def hook_parts(req: dict) -> dict:
        _hook, parts = hook_module.make_hook(shared.SANDBOX_DIR, (), channel=None, root=None)
        return {"parts": _parts_facts((*parts, hook_module._answerer))}

    def hook_frames(req: dict) -> dict:
        import socket

        frames, raised = [], []
        for attempt in (lambda: os.chdir("/"), lambda: socket.create_connection(("10.1.2.3", 80), timeout=0.1)):
            try:
                attempt()
            except BaseException as exc:
                raised.append(type(exc).__name__)
                tb = exc.__traceback__
                while tb is not None:
                    if tb.tb_frame.f_code.co_filename == hook_module.__file__:
                        frames.append(tb.tb_frame)
                    tb = tb.tb_next
        found = {"secrets": 0, "functions": [], "cells": [], "mutable": []}
        seen: set[int] = set()
        for frame in frames:
            _search([v for k, v in frame.f_locals.items() if k not in ("args", "event")], seen, found, 0)
        # Each way to change what the hook does, tried on everything found.
        tries = []
        noop = (lambda *a, **k: None).__code__
        for fn in found["functions"][:10]:  # (the zygote keeps 50 refusals: room for what follows)
            tries.append(_refused(lambda fn=fn: setattr(fn, "__code__", noop)))
            tries.append(_refused(lambda fn=fn: setattr(fn, "__defaults__", None)))
            tries.append(_refused(lambda fn=fn: setattr(fn, "__kwdefaults__", {})))
        for cell in found["cells"]:
            tries.append(_refused(lambda cell=cell: setattr(cell, "cell_contents", None)))
        # Still refused (and reported: the zygote's list shows it)?  A refused call, native code, a shell.
        after = {
            "chdir": _refused(lambda: os.chdir("/")),
            "ctypes": _refused(lambda: __import__("ctypes").CDLL(None).getpid()),
            "system": _refused(lambda: os.system("true")),
        }
        # The control: a hook made the old way (its state in a closure) gives its cells and secret away.
        old = _old_style_hook()
        control = {"secrets": 0, "functions": [], "cells": [], "mutable": []}
        _search([old], set(), control, 0)
        return {
            "raised": raised,
            "hook_frames": len(frames),
            "secrets": found["secrets"],
            "cells": len(found["cells"]),
            "functions": len(found["functions"]),
            # The only mutable things: the child's own notes of what was refused (``OBSERVED``), a sink.
            "mutable": sorted({_name_of(v, shared.OBSERVED) for v in found["mutable"]}),
            "tries": sorted(set(tries)),
            "after": after,
            "control": {"secrets": control["secrets"], "cells": len(control["cells"])},
        }

    def heap_scan(req: dict) -> dict:
        """Which markers (sent reversed) this process's writable memory holds.  A marker is looked
        for as its two halves, adjacent: this process holds each half (its needles), never the
        whole, unless its memory held the whole before."""
        halves = []
        for rev in (m for m in req.get("reversed") or [] if isinstance(m, str)):
            cut = len(rev) // 2  # the marker's first half is the reversed one's last, reversed
            halves.append((rev[cut:][::-1].encode(), rev[:cut][::-1].encode()))
        found = set()
        scanned = 0
        with open("/proc/self/maps") as fh:
            regions = fh.read().splitlines()
        fd = os.open("/proc/self/mem", os.O_RDONLY)
        try:
            for line in regions:
                fields = line.split()
                if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5] not in ("[heap]",)):
                    continue  # the heap and anonymous memory: where a process's objects live
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                for start in range(lo, hi, 1 << 22):
                    try:
                        chunk = os.pread(fd, min(1 << 22, hi - start) + 256, start)
                    except OSError:
                        try:
                            chunk = os.pread(fd, min(1 << 22, hi - start), start)
                        except OSError:
                            continue
                    scanned += len(chunk)
                    for i, (head, tail) in enumerate(halves):
                        at = chunk.find(head)
                        while at >= 0 and i not in found:
                            if chunk[at + len(head) : at + len(head) + len(tail)] == tail:
                                found.add(i)
                            at = chunk.find(head, at + 1)
        finally:
            os.close(fd)
        return {"found": sorted(found), "scanned_mb": scanned >> 20}

    def no_hook(req: dict) -> dict:
        """No hook: ctypes runs ``/bin/sh -c 'echo ran > MARKER'`` (in a process of its own, so that
        this one answers) and makes a socket to ``port`` on 127.0.0.1; and the report channel is
        closed and replaced.  What the kernel says to each."""
        import ctypes
        import errno
        import time

        libc = ctypes.CDLL(None, use_errno=True)
        marker = os.path.join(os.getcwd(), "MARKER")
        out: dict = {}
        pid = os.fork()
        if pid == 0:
            argv = (ctypes.c_char_p * 4)(b"/bin/sh", b"-c", f"echo ran > {marker}".encode(), None)
            libc.execv(b"/bin/sh", argv)
            os._exit(100 + ctypes.get_errno())
        _, status = os.waitpid(pid, 0)
        out["exec"] = errno.errorcode.get(os.waitstatus_to_exitcode(status) - 100, os.waitstatus_to_exitcode(status))
        time.sleep(0.05)
        out["marker"] = os.path.exists(marker)
        sock = libc.socket(2, 1, 0)  # AF_INET, SOCK_STREAM
        out["socket"] = "made" if sock >= 0 else errno.errorcode.get(ctypes.get_errno())
        if sock >= 0:
            address = (ctypes.c_ubyte * 16)(2, 0, *int(req.get("port", 9)).to_bytes(2, "big"), 127, 0, 0, 1)
            out["connect"] = "connected" if libc.connect(sock, address, 16) == 0 else "failed"
        sockets = []
        for name in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                    sockets.append(int(name))
            except OSError:
                pass  # the listing's own descriptor
        out["channel"] = {}
        for fd in sockets:
            for name, call in (("dup2", lambda fd=fd: os.dup2(0, fd)), ("close", lambda fd=fd: os.close(fd))):
                try:
                    call()
                    out["channel"][name] = "done"
                except OSError as exc:
                    out["channel"][name] = errno.errorcode.get(exc.errno)
        return out

    ops.update(hook_parts=hook_parts, hook_frames=hook_frames, heap_scan=heap_scan, no_hook=no_hook)


def _old_style_hook():
    """A hook made as it was before: its secret and writer in a closure (the control's subject)."""
    secret = os.urandom(16).hex().encode()
    refused: list = []

    def emit(kind: bytes, payload: bytes) -> bytes:
        return secret + kind + payload

    def hook(event: str, args: tuple) -> None:
        if event == "os.system":
            refused.append(emit(b"refused", b"{}"))

    return hook
