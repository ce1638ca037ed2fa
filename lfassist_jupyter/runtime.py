"""A private event loop on a daemon thread, for driving async code from blocking code.

A Jupyter kernel already runs an event loop on its main thread, so ``asyncio.run`` there
fails ("cannot be called from a running event loop") and nesting loops (nest_asyncio)
breaks other libraries.  Instead, coroutines run on this one background loop and the
caller's thread waits on a thread-safe queue -- so the caller stays interruptible and
display calls still happen on the caller's thread, inside the right cell.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_guard = threading.Lock()
_DONE = object()


def get_loop() -> asyncio.AbstractEventLoop:
    """The background loop, started on first use."""
    global _loop, _thread
    with _guard:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def _serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            _thread = threading.Thread(target=_serve, name="lfassist-loop", daemon=True)
            _thread.start()
            ready.wait()
            _loop = loop
        return _loop


def in_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and wait for its result."""
    if in_loop_thread():
        coro.close()
        raise RuntimeError("run_sync() was called from the assistant's own loop thread; await the coroutine instead.")
    future = asyncio.run_coroutine_threadsafe(coro, get_loop())
    try:
        return future.result(timeout)
    except KeyboardInterrupt:
        future.cancel()
        raise


def blocking_twin(coroutine_function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The blocking twin of ``afoo``: ``foo``, with the same parameters, run on the background loop
    (so it works inside a running Jupyter kernel).

    One definition serves both names of the naming rule (the plain name blocks, its coroutine
    twin has the ``a`` prefix), so their parameters cannot drift apart; ``help()`` and
    ``inspect.signature`` show the coroutine's."""
    name = coroutine_function.__name__.removeprefix("a")

    @functools.wraps(coroutine_function)
    def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(coroutine_function(*args, **kwargs))

    twin.__name__ = twin.__qualname__ = name  # (module-level functions: the naming rule's pairs)
    twin.__doc__ = f"Blocking twin of ``{coroutine_function.__name__}`` (works inside a running Jupyter kernel)."
    return twin


def iterate_in_background(
    agen: AsyncIterator[T], *, on_interrupt: Callable[[], bool] | None = None, interrupt_grace: float = 5.0
) -> Iterator[T]:
    """Iterate an async generator on the background loop from this (blocking) thread.

    On ``KeyboardInterrupt`` ``on_interrupt`` is called (e.g. ``Assistant.cancel``, which
    returns whether it cancelled something), the remaining items (normally a ``cancelled``
    event) are still delivered, and the interrupt is re-raised once the generator has finished.
    """
    if in_loop_thread():
        raise RuntimeError("Use the async API (stream/arun) from inside the assistant's loop.")
    items: queue.Queue[Any] = queue.Queue()

    async def pump() -> None:
        try:
            async for item in agen:
                items.put(item)
        except BaseException as exc:
            items.put(exc)
        finally:
            with contextlib.suppress(BaseException):
                await agen.aclose()  # type: ignore[attr-defined]
            items.put(_DONE)

    future = asyncio.run_coroutine_threadsafe(pump(), get_loop())
    interrupted = False
    deadline_hit = False
    while True:
        try:
            item = items.get(timeout=0.1) if not interrupted else items.get(timeout=interrupt_grace)
        except queue.Empty:
            if interrupted:  # the generator did not wind down in time: stop waiting
                future.cancel()
                deadline_hit = True
                break
            continue
        except KeyboardInterrupt:
            interrupted = True
            # on_interrupt says whether it stopped something; if the work has not started yet
            # (nothing in flight to cancel), stop the pump itself so the interrupt is not lost.
            if on_interrupt is None or not on_interrupt():
                future.cancel()
            continue
        if item is _DONE:
            break
        if isinstance(item, BaseException):
            if isinstance(item, asyncio.CancelledError):
                break
            raise item
        try:
            yield item
        except GeneratorExit:
            future.cancel()
            raise
    with contextlib.suppress(Exception):
        if not deadline_hit:
            future.result(timeout=1)
    if interrupted:
        raise KeyboardInterrupt
