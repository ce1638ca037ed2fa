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
  /proc scan (the zygote is their subreaper: a detached daemon is found too).

Stdlib only; importing it does nothing (the scripts call these functions from ``main``).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
import types
from collections.abc import Callable

PACKAGE = "_lfassist_worker"


def open_channel() -> Callable[[dict], None]:
    """Make fd 1 the protocol channel (a private duplicate) and fds 1 and 2 /dev/null; returns ``send``,
    which writes one JSON object a line on the channel."""
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)  # lfx's import-time chatter goes nowhere; children get their own pipe
    os.dup2(null, 2)
    os.close(null)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)

    def send(msg: dict) -> None:
        proto.write(json.dumps(msg, default=str) + "\n")
        proto.flush()

    return send


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


def descendants(root: int) -> list[tuple[int, bool]]:
    """``(pid, exiting)`` of every descendant of ``root``, from a /proc scan (Linux); ``exiting``:
    each of its threads has entered its exit or is a zombie (``exiting``)."""
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
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return [(pid, exiting(pid)) for pid in found]
