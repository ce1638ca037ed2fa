"""lfassist-jupyter: the Langflow Assistant inside Jupyter.

Describe a component in plain words (``%%assist`` or ``Assistant().run(...)``) and get
back Langflow component code that has been generated, validated in a sandbox, and
repaired when needed.  Heavy modules (the engine, provider SDKs, lfx) load on first
use, so ``%load_ext lfassist_jupyter`` stays fast.

One naming rule across the API: the plain name blocks, and its coroutine twin is the same
name with an ``a`` prefix (``Assistant.run``/``arun``, ``validate_component``/
``avalidate_component``, ``SandboxValidator.validate``/``avalidate``).
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

__version__ = "0.1.0"

# A library never prints its logs on its own: without this, Python's last-resort handler
# would put every warning (e.g. "assistant.validation.failed") into the notebook as stderr.
logging.getLogger("lfassist_jupyter").addHandler(logging.NullHandler())

_LAZY = {
    "Assistant": "lfassist_jupyter.core.assistant",
    "ComponentValidator": "lfassist_jupyter.ports",
    "FlowLibrary": "lfassist_jupyter.ports",
    "AssistResult": "lfassist_jupyter.core.result",
    "ProgressEvent": "lfassist_jupyter.core.events",
    "TokenEvent": "lfassist_jupyter.core.events",
    "CompleteEvent": "lfassist_jupyter.core.events",
    "ErrorEvent": "lfassist_jupyter.core.events",
    "CancelledEvent": "lfassist_jupyter.core.events",
    "Event": "lfassist_jupyter.core.events",
    "check_config": "lfassist_jupyter.providers",
    "stats": "lfassist_jupyter.metrics",
    "ScriptedProvider": "lfassist_jupyter.providers.scripted",
    "ValidationReport": "lfassist_jupyter.validation.report",
    "validate_component": "lfassist_jupyter.sandbox.client",
    "avalidate_component": "lfassist_jupyter.sandbox.client",
    "build_flow": "lfassist_jupyter.flows.build",
    "validate_flow": "lfassist_jupyter.flows.validate",
    "run_flow_for_real": "lfassist_jupyter.flows.real_run",  # the probe run is SandboxValidator.probe_run
    "FlowRun": "lfassist_jupyter.sandbox.answers",
    "RealRun": "lfassist_jupyter.sandbox.answers",
    "SandboxValidator": "lfassist_jupyter.sandbox.client",
    "ChainValidator": "lfassist_jupyter.validation.chain",
    "LangflowClient": "lfassist_jupyter.langflow.client",
    "ChatPanel": "lfassist_jupyter.ui.panel",
    "flow_picture": "lfassist_jupyter.ui.render.picture",  # drawing is a view's job
}

__all__ = [*sorted(_LAZY), "load_ipython_extension", "unload_ipython_extension"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lfassist_jupyter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# The composition root wires the views: inside a running IPython shell (a kernel, a terminal) the
# package's objects display through the views' formatters from the first import on, %load_ext
# or not.  ui/formats.py is standard library only and registers by name: nothing heavy loads.
if "IPython" in sys.modules:
    from lfassist_jupyter.ui.formats import register_in_running_shell

    register_in_running_shell()


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lfassist_jupyter``: register the magics and the display formatters, and warm
    the validator up."""
    from lfassist_jupyter.ui.magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from lfassist_jupyter.ui.magics import unload_ipython_extension as _unload

    _unload(ipython)
