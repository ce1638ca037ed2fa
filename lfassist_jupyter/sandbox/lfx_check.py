"""Whether the sandbox's interpreter has lfx, asked before anything is spent on a request.

lfx is the ``[lfx]`` extra: without it nothing can be built or validated.  The worker finds out
when it starts (its import fails), but a request would have paid for model calls by then; this
asks the interpreter where lfx would be found (``importlib.util.find_spec``, in a short process
of that interpreter, isolated as the worker is: nothing is imported) and says how to install the
extra.  A found lfx is remembered; a missing one is asked again, so ``%pip install`` is seen.
"""

from __future__ import annotations

import subprocess
import sys
import threading

LFX_INSTALL = '%pip install "lfassist-jupyter[lfx]"'
"""The advice when lfx is missing: the extra, which brings lfx and the provider bundles it needs."""

_FOUND: set[str] = set()
_LOCK = threading.Lock()
_ASK = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('lfx') else 3)"


def lfx_missing_message(python: str) -> str:
    """The one line for an interpreter without lfx."""
    return (
        f"lfx is not installed for the validation sandbox ({python}): nothing can be built or validated. "
        f"Install the extra: {LFX_INSTALL}, then restart the kernel (or point LFASSIST_VALIDATOR_PYTHON at an "
        "environment that has lfx)."
    )


def lfx_missing(python: str | None = None) -> str | None:
    """The one-line advice when ``python`` (default: this interpreter) cannot import lfx, else None."""
    python = python or sys.executable
    with _LOCK:
        if python in _FOUND:
            return None
    try:
        done = subprocess.run([python, "-I", "-c", _ASK], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"The validation sandbox's interpreter {python} could not be run ({type(exc).__name__}). " + (
            f"Point LFASSIST_VALIDATOR_PYTHON at an environment that has lfx, or install the extra: {LFX_INSTALL}."
        )
    if done.returncode == 0:
        with _LOCK:
            _FOUND.add(python)
        return None
    return lfx_missing_message(python)
