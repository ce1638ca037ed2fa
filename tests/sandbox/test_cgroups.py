"""A real run's cgroup (``sandbox/_cgroups.py``) ends every process in it at once, however fast they
fork -- the guarantee that holds where a run gets no PID namespace of its own -- and is gone after.
The real runs through it are in ``test_real_runner.py``; here, a group of this machine and a plain
process, no runner."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lfassist_jupyter.sandbox import _cgroups

HOPPER = """
import ctypes, os, sys, time
sys.stdin.readline()  # in its group before it starts
ctypes.CDLL(None).prctl(15, b"lfassist-hop2", 0, 0, 0)
os.setsid()
while True:
    try:
        if os.fork():
            os._exit(0)
    except OSError:  # at its bound: it waits for the dead to be reaped, and goes on
        time.sleep(0.01)
        continue
    try:
        os.write(1, b"h")
    except OSError:
        pass
    time.sleep(0.003)
"""


def _hoppers() -> list[int]:
    found = []
    for path in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if path.read_text().strip() == "lfassist-hop2":
                state = (path.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in ("Z", "X"):
                    found.append(int(path.parent.name))
    return found


def test_a_group_ends_a_hopper_at_once_and_is_removed():
    bounds, why = _cgroups.probe()
    if bounds is None:
        pytest.skip(f"no cgroup here: {why}")
    group = bounds.new_group(256, 32)
    hopper = subprocess.Popen([sys.executable, "-c", HOPPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        group.add([hopper.pid])
        hopper.stdin.write(b"go\n")  # type: ignore[union-attr]
        hopper.stdin.flush()  # type: ignore[union-attr]
        out = hopper.stdout.fileno()  # type: ignore[union-attr]
        hops = 0
        while hops < 20:
            hops += len(os.read(out, 64))
        assert hopper.wait(5) == 0  # the control: it hops (its first process is long gone)

        group.end()

        # Every process holding the pipe's other end is gone: it ends (however fast they forked).
        deadline = time.monotonic() + 2
        while select.select([out], [], [], max(deadline - time.monotonic(), 0))[0] and os.read(out, 1 << 16):
            pass
        assert time.monotonic() < deadline, "a process of the group is still writing"
        assert _hoppers() == []
    finally:
        group.end()
        hopper.kill()
        hopper.wait()
    deadline = time.monotonic() + 5
    while any(d.exists() for d in group.dirs.values()) and time.monotonic() < deadline:
        time.sleep(0.01)  # removed in the background, once empty
    assert not any(d.exists() for d in group.dirs.values())
