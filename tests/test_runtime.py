"""Driving async work from blocking code: the interrupt path of the background loop."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time

import pytest

from lfassist_jupyter.runtime import iterate_in_background, run_sync


def test_an_interrupt_before_the_work_started_still_stops_it(kernel_sigint):
    """The stop button pressed before anything is in flight must not be forgotten."""
    closed = threading.Event()

    async def slow_start():
        try:
            await asyncio.sleep(30)  # nothing "in flight" that on_interrupt could cancel yet
            yield "late"
        finally:
            closed.set()

    threading.Timer(0.3, _thread.interrupt_main).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(iterate_in_background(slow_start(), on_interrupt=lambda: False))
    assert time.monotonic() - t0 < 3
    assert closed.wait(2)


def test_run_sync_refuses_to_deadlock_its_own_loop():
    async def inner():
        coro = asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="own loop thread"):
            run_sync(coro)

    run_sync(inner())
