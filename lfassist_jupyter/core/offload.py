"""CPU-heavy pure work on model replies, in a child process: off the event loop, with a deadline.

The pipelines parse what a model sent: extraction and the static phase (``ast``), the zero-call
repair pass (LibCST).  On hostile input that is seconds to minutes of CPU: a 211 KB reply of
deep but legal expressions kept LibCST busy for 10-75 s, ``ast.parse`` for 1-5 s.  On the event
loop that froze the request (progress, the panel's Stop) for as long; in a worker thread it
still did, for seconds at a time, because both parsers are native code that holds the GIL
while it parses.  A child process holds no lock of ours: the loop stays responsive, and the
child can be *killed* -- on the deadline (``Skipped``: the caller goes on as if the work gave no
answer) or when the request is cancelled (Stop, ``Assistant.cancel``, Ctrl-C), so nothing keeps
burning CPU after the request ended.

A worker is started on first use and kept warm (it imports LibCST once); one that was killed is
simply replaced next time.  It runs only the functions named in ``_JOBS``, each given JSON on
stdin and answering one JSON line; it executes nothing of the code it reads, and runs isolated
(``python -I`` in ``/``: it imports the interpreter's packages, never a file of the notebook's
folder), with a minimal environment (no key reaches it) and an address-space limit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lfassist_jupyter.core.component.repair import Repair
    from lfassist_jupyter.validation.report import ValidationReport

MAX_WORKER_BYTES = 2 << 30
"""The worker's address-space limit: a parse that wants more ends in "no repair", not a swap storm."""
START_TIMEOUT = 60.0
"""Seconds a new worker may take to import LibCST (a loaded machine); not part of the deadline."""
_MAX_IDLE = 1

_idle: list[subprocess.Popen[bytes]] = []
_lock = threading.Lock()


class Skipped(Exception):
    """The work gave no answer in time (or its worker died); the message says which."""


_BOOT = "import sys; sys.path.append(sys.argv[1]); from lfassist_jupyter.core.offload import main; main()"
"""The worker's start: the interpreter's own import path, then the directory holding this package
(a source checkout), *after* it -- so nothing a notebook's folder holds shadows a module it imports."""


def _start() -> subprocess.Popen[bytes]:
    """A new worker, isolated (``python -I``): no ``PYTHON*`` variable, no user site-packages, and
    neither the notebook's folder nor the kernel's ``sys.path`` on its import path (a ``libcst.py``
    next to the notebook is not imported), started in ``/``."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", _BOOT, package_root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=os.path.abspath(os.sep),
        close_fds=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        _kill(proc)
        raise Skipped(f"the worker did not start (exit code {proc.poll()})")
    return proc


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(5)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()


def _checkout() -> subprocess.Popen[bytes] | None:
    with _lock:
        while _idle:
            proc = _idle.pop()
            if proc.poll() is None:
                return proc
            _kill(proc)
    return None


def _checkin(proc: subprocess.Popen[bytes]) -> None:
    with _lock:
        if proc.poll() is None and len(_idle) < _MAX_IDLE:
            _idle.append(proc)
            return
    _kill(proc)


@atexit.register
def _shutdown() -> None:
    with _lock:
        while _idle:
            _kill(_idle.pop())


def _ask(proc: subprocess.Popen[bytes], request: bytes) -> bytes:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    return proc.stdout.readline()


async def call(job: str, *args: Any, deadline: float) -> Any:
    """``_JOBS[job](*args)`` in a warm worker process (JSON in, JSON out), awaited without
    blocking the loop.

    Raises ``Skipped`` when it takes longer than ``deadline`` seconds (the worker is killed) or
    the worker dies; a cancellation of the awaiting task kills the worker too, at once."""
    request = (json.dumps({"job": job, "args": args}) + "\n").encode("utf-8")
    proc = _checkout()
    done = False
    try:
        if proc is None:
            proc = await asyncio.wait_for(asyncio.to_thread(_start), START_TIMEOUT)
        try:
            line = await asyncio.wait_for(asyncio.to_thread(_ask, proc, request), deadline)
        except (TimeoutError, asyncio.TimeoutError):
            raise Skipped(f"it took longer than {deadline:g} s") from None
        except OSError as exc:  # the worker's pipe broke
            raise Skipped(f"the worker stopped ({exc})") from None
        if not line:
            raise Skipped(f"the worker stopped (exit code {proc.poll()})")
        answer = json.loads(line)
        done = True
    finally:
        # A killed worker ends the thread still reading its answer (end of file); a worker that
        # answered is kept warm for the next call.
        if proc is not None:
            if done:
                _checkin(proc)
            else:
                _kill(proc)
    if not isinstance(answer, dict) or "error" in answer:
        raise Skipped(f"the worker failed ({str(answer.get('error') if isinstance(answer, dict) else answer)[:200]})")
    return answer.get("value")


async def repair_round(
    code: str, report: ValidationReport, reference: dict[str, Any] | None, *, deadline: float
) -> Repair | None:
    """One round of the repair pass (``repair_component``) in the worker: a ``Repair`` or None;
    ``Skipped`` past ``deadline``.  LibCST never parses in the kernel."""
    from lfassist_jupyter.core.component.repair import Repair

    answer = await call("repair", code, report.model_dump(mode="json"), reference, deadline=deadline)
    if not isinstance(answer, dict) or not isinstance(answer.get("code"), str):
        return None
    changes = answer.get("changes")
    return Repair(code=answer["code"], changes=[str(c) for c in changes]) if isinstance(changes, list) else None


# -- the worker's side ---------------------------------------------------------------------


def _repair(code: str, report: dict[str, Any], reference: dict[str, Any] | None) -> dict[str, Any] | None:
    from lfassist_jupyter.core.component.repair import repair_component
    from lfassist_jupyter.validation.report import ValidationReport

    fix = repair_component(code, ValidationReport.model_validate(report), reference)
    return None if fix is None else {"code": fix.code, "changes": fix.changes}


def _extract(reply: str) -> str | None:
    from lfassist_jupyter.core.component.extract import extract_component_code

    return extract_component_code(reply)


def _static(code: str) -> dict[str, Any]:
    from lfassist_jupyter.validation.static import validate_static

    return validate_static(code).model_dump(mode="json")


_JOBS: dict[str, Callable[..., Any]] = {"repair": _repair, "extract": _extract, "static": _static}


def main() -> None:
    """The worker: one JSON request per line on stdin, one JSON answer per line on stdout."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MAX_WORKER_BYTES, MAX_WORKER_BYTES))
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # nothing but answers goes to the parent's pipe (not a stray print, not C code)
    sys.stdout = sys.stderr
    # Imported before "ready": the first call does not pay for them.
    import libcst  # noqa: F401

    import lfassist_jupyter.core.component.extract
    import lfassist_jupyter.core.component.repair
    import lfassist_jupyter.validation.static  # noqa: F401

    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            answer = {"value": _JOBS[request["job"]](*request["args"])}
        except Exception as exc:  # a request it cannot serve: an answer saying so, never a dead worker
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer).encode("utf-8") + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
