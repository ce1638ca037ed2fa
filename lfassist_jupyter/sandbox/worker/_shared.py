"""What the worker's modules share: the configuration, one request's observations, the op
registries, the timeout around generated code, and the words of a report.

Stdlib only, imported by ``_worker.py`` before anything else of the worker (lfx included),
so the hook, the ops and the fork server name these things instead of reaching into the
script.  Module state here lives in the zygote and is inherited by each forked child; a
child changes only its own copy (``SANDBOX_DIR``, ``OBSERVED``).
"""

from __future__ import annotations

import os
import signal
import time
import traceback

CONFIG: dict = {}  # the zygote's command line (``configure``), before its other modules are imported
# The writable directory of one request: the zygote's cwd, then in a child its scratch
# directory (``_serve._child`` rebinds it; read it as ``_shared.SANDBOX_DIR``).
SANDBOX_DIR = os.path.realpath(os.getcwd())
ANSWER_CAP = int(CONFIG.get("answer_cap", 4 * 1024 * 1024))
OUTPUT_CAP = 64 * 1024  # what the zygote keeps of a child's stdout/stderr (the rest is discarded)
STRING_CAP = 20_000  # a child truncates every string of its answer to this

# Observations of the current request (read by the validation logic); the hook's *armed*
# state is not here: it is a closure variable of the hook, fixed for the child's life.
# ``refused``: (audit event, line in the component's code or None) of each refused call.
OBSERVED: dict = {"network": False, "violations": [], "refused": []}

# The op registry.  Each op runs in a fresh child with the audit hook armed; its answer
# must be a JSON object.  Extension point: a sibling module named in CONFIG["op_modules"]
# defines ``register(ops, facts)`` and adds e.g. ``ops["probe_run"] = ...`` (see
# ``_run_component.py`` for the pattern); the zygote imports it once, before any fork.
OPS: dict = {}
# Trusted facts: answers an op module provides (a value, or a function the zygote calls once
# on first use), e.g. ``flow_catalog``, lfx's bundled component registry.  The zygote computes
# and sends them itself: no child and no request's code is involved (none ever runs there).
FACTS: dict = {}


class SandboxViolation(PermissionError):
    """Raised inside generated code for an operation the sandbox does not allow."""


class NetworkBlocked(ConnectionRefusedError):
    """Raised inside generated code for any network access."""


class Timeout(BaseException):
    """Raised by SIGALRM; a BaseException so ``except Exception`` in generated code can't eat it."""


def on_alarm(signum: int, frame: object) -> None:
    raise Timeout()


def configure(config: dict) -> None:
    """Set the zygote's configuration (its command line's JSON) and the alarm's handler: called by
    the script, once, before the modules that read ``CONFIG`` are imported (never on import, so
    importing the package -- as a documentation tool does -- changes nothing)."""
    global ANSWER_CAP
    CONFIG.update(config)
    ANSWER_CAP = int(CONFIG.get("answer_cap", 4 * 1024 * 1024))
    signal.signal(signal.SIGALRM, on_alarm)


class Armed:
    """The alarm and the CPU cap around generated code (the audit hook is always armed in a child).

    ``deadline`` (time.monotonic) is shared by every phase of one request, so the whole
    validation -- build, instantiation and every output -- fits in one timeout.  Code that
    swallows the alarm is killed by the zygote at the hard deadline.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __enter__(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout()
        signal.setitimer(signal.ITIMER_REAL, remaining)

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


def error_text(exc: BaseException) -> str:
    detail = getattr(exc, "detail", None)  # lfx raises fastapi's HTTPException with a dict
    if isinstance(detail, dict) and detail.get("error"):
        return str(detail["error"])
    if isinstance(detail, str) and detail:
        return detail
    return f"{type(exc).__name__}: {exc}"


def exc_traceback(exc: BaseException) -> str:
    detail = getattr(exc, "detail", None)
    if isinstance(detail, dict) and detail.get("traceback"):
        return str(detail["traceback"])
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def finding(severity: str, phase: str, message: str, **extra: object) -> dict:
    return {"severity": severity, "phase": phase, "message": message, **{k: v for k, v in extra.items() if v}}


def first_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return " ".join(msg[:3])[:500] if msg else ""
