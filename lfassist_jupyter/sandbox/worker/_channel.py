"""What both zygotes share: their package, their channel to the kernel, the processes below them.

The validation zygote (``_worker.py``) and the real runner (``_runner.py``) are scripts started
with ``python -I`` where lfassist_jupyter may not be installed; each makes this directory a
package of its own (``_lfassist_worker``) and calls, before anything else:

- ``open_channel``: fd 1 becomes a private copy that carries only the protocol (one JSON object a
  line); fds 1 and 2 go to /dev/null, so lfx's import-time chatter (and anything a later import
  prints) cannot corrupt it;
- ``bind_module``: a stdlib-only module of ``artifacts/`` the kernel shares (``policy``, ``flow``),
  loaded from the read-only path the config names as a module of the package;
- ``descendants``: every process below a zygote, and whether each has entered its exit, from a
  /proc scan (the zygote is their subreaper: a detached daemon is found too); ``reap_exited``
  collects the ones that have ended.

Stdlib only; importing it does nothing (the scripts call these functions from ``main``).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
import types

PACKAGE = "_lfassist_worker"


class Channel:
    """The protocol channel: ``channel(msg)`` writes one JSON object a line; ``close`` lets go of it
    (the real runner's zygote, once its server holds the channel)."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def __call__(self, msg: dict) -> None:
        self._file.write(json.dumps(msg, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def open_channel() -> Channel:
    """Make fd 1 the protocol channel (a private duplicate) and fds 1 and 2 /dev/null; returns the
    channel (``send``), which writes one JSON object a line."""
    channel = Channel(os.dup(1))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)  # lfx's import-time chatter goes nowhere; children get their own pipe
    os.dup2(null, 2)
    os.close(null)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)
    return channel


def bind_module(name: str, path: str) -> types.ModuleType:
    """The stdlib-only file ``path`` (``artifacts/flow.py``, ``artifacts/policy.py``, bound read-only
    into the sandbox) loaded as ``_lfassist_worker.<name>``, so siblings import it as ``from . import
    flow``.  Nothing else of lfassist_jupyter is imported, here or by those files."""
    spec = importlib.util.spec_from_file_location(f"{PACKAGE}.{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    setattr(sys.modules[PACKAGE], name, module)
    return module


# A task flag of the kernel (include/linux/sched.h), field 9 of /proc/<pid>/task/<tid>/stat: set
# when the thread enters do_exit, which a killed thread does once its last system call is done.
PF_EXITING = 0x4


def reap_exited() -> None:
    """Reap every child that has exited, without waiting: a zygote is the subreaper of whatever a
    request or a run left behind, so their zombies are its to collect."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def exiting(pid: int) -> bool:
    """Whether every thread of ``pid`` has entered its exit (or is gone): it cannot run another
    instruction of its own, make a system call (write a file, fork) or be anything but reaped."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue  # that thread is gone
        fields = data[data.rindex(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X") and not int(fields[6]) & PF_EXITING:
            return False
    return True


def _children(pid: int) -> list[int] | None:
    """The children of ``pid`` (of each of its threads), from /proc/<pid>/task/<tid>/children; None
    where the kernel has no such file (it needs CONFIG_PROC_CHILDREN)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found  # gone
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                found += [int(x) for x in fh.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # that thread is gone
            return None
        except (OSError, ValueError):
            continue
    return found


def _scan_children() -> dict[int, list[int]]:
    """Every process's children, from a scan of all of /proc (where there is no children file)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
            fields = data[data.rindex(b")") + 2 :].split()
            children.setdefault(int(fields[1]), []).append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return children


def descendants(root: int) -> list[tuple[int, bool]]:
    """``(pid, exiting)`` of every descendant of ``root`` (Linux); ``exiting``: each of its threads has
    entered its exit or is a zombie (``exiting``).  Walked down from ``root`` through each process's
    children file -- a few reads, however many processes the machine has -- else from a scan of all
    of /proc."""
    table: dict[int, list[int]] | None = None
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = _children(pid) if table is None else None
        if kids is None:
            table = table if table is not None else _scan_children()
            kids = table.get(pid, [])
        if pid != root:
            found.append(pid)
        todo.extend(kids)
    return [(pid, exiting(pid)) for pid in found]
