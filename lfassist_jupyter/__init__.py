"""lfassist-jupyter: the Langflow Assistant inside Jupyter.

Describe a component in plain words (``%%assist`` or ``Assistant().run(...)``) and get
back Langflow component code that has been generated, validated in a sandbox, and
repaired when needed.  Heavy modules (the engine, provider SDKs, lfx) load on first
use, so ``%load_ext lfassist_jupyter`` stays fast.

One naming rule across the API: the plain name blocks, and its coroutine twin is the same
name with an ``a`` prefix (``Assistant.run``/``arun``, ``validate_component``/
``avalidate_component``, ``SandboxValidator.validate``/``avalidate``).

The root is an edge: its ``validate_component``, ``build_flow``, ``validate_flow``,
``run_flow_for_real`` and ``default_catalog`` use the sandbox given (``validator=``, or the one
``catalog`` carries) and else pick the shared one (``lfassist_jupyter.sandbox.shared()``); the
functions they call below the root take the sandbox they use and never look one up.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lfassist_jupyter.flows.catalog import Catalog
    from lfassist_jupyter.flows.results import BuildResult, FlowReport
    from lfassist_jupyter.sandbox.answers import RealRun
    from lfassist_jupyter.sandbox.client import SandboxValidator
    from lfassist_jupyter.validation.report import ValidationReport
    from lfassist_jupyter.validation.static import SecurityMode

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
    "FlowRun": "lfassist_jupyter.sandbox.answers",
    "RealRun": "lfassist_jupyter.sandbox.answers",
    "SandboxValidator": "lfassist_jupyter.sandbox.client",
    "ChainValidator": "lfassist_jupyter.langflow.validator",
    "RequestOptions": "lfassist_jupyter.core.options",
    "LangflowClient": "lfassist_jupyter.langflow.client",
    "ChatPanel": "lfassist_jupyter.ui.panel",
    "flow_picture": "lfassist_jupyter.ui.render.picture",  # drawing is a view's job
}

_EDGE = [
    "avalidate_component",
    "build_flow",
    "default_catalog",
    "run_flow_for_real",
    "validate_component",
    "validate_flow",
]
"""The functions defined here, over the shared sandbox unless given one (the probe run is
``SandboxValidator.probe_run``)."""

__all__ = sorted([*_LAZY, *_EDGE, "load_ipython_extension", "unload_ipython_extension"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lfassist_jupyter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# -- the public functions over the shared sandbox (the root is an edge) ---------------------------


def default_catalog(sandbox: SandboxValidator | None = None) -> Catalog:
    """A fresh catalogue of lfx's bundled components (``flows.Catalog``), ready for ``add``: of
    ``sandbox``, else of the shared sandbox.  It carries that sandbox: ``build_flow(spec,
    catalog=...)`` and ``validate_flow(flow, catalog=...)`` use it for everything they ask lfx."""
    from lfassist_jupyter.flows.catalog import default_catalog as catalog_of
    from lfassist_jupyter.sandbox import shared

    return catalog_of(sandbox if sandbox is not None else shared())


def build_flow(text: str, *, catalog: Catalog | None = None, repair: bool = True) -> BuildResult:
    """Langflow flow JSON from spec text or a model reply holding one, built by lfx in the sandbox
    ``catalog`` carries (default: the shared sandbox's catalogue).  See ``flows.build_flow``."""
    from lfassist_jupyter.flows.build import build_flow as build

    return build(text, catalog=catalog if catalog is not None else default_catalog(), repair=repair)


def validate_flow(
    flow: dict[str, Any] | str | Path,
    *,
    catalog: Catalog | None = None,
    provision: bool | None = None,
    probe: bool = False,
) -> FlowReport:
    """Validate flow JSON, a flow file or spec text (default catalogue: the shared sandbox's); never
    raises on bad input.  Three answers: sound, broken, not judged here; ``provision`` judges a flow
    the sandbox cannot in an environment built for it; ``probe`` also probe-runs a sound flow (models
    stubbed) and calls it broken where a node fails for the flow's own fault.  See
    ``flows.validate_flow``."""
    from lfassist_jupyter.flows.validate import validate_flow as validate

    catalog = catalog if catalog is not None else default_catalog()
    return validate(flow, catalog=catalog, provision=provision, probe=probe)


def run_flow_for_real(
    flow: dict[str, Any] | str | Path,
    input_text: str = "",
    *,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | Iterable[str] | None = None,
    allow_hosts: Iterable[str] = (),
    timeout: float = 300.0,
) -> RealRun:
    """The real run: ``flow`` run on ``input_text`` with its models called, with the keys and hosts
    you allowed (checked over ``catalog``, default: the shared sandbox's).  See
    ``flows.real_run.run_flow_for_real``."""
    from lfassist_jupyter.flows.real_run import run_flow_for_real as real_run

    return real_run(
        flow,
        input_text,
        catalog=catalog if catalog is not None else default_catalog(),
        env=env,
        allow_hosts=allow_hosts,
        timeout=timeout,
    )


def validate_component(
    code: str,
    *,
    smoke: bool = True,
    timeout: float = 10.0,
    security: SecurityMode | bool = "report",
    validator: SandboxValidator | None = None,
) -> ValidationReport:
    """Validate Langflow component code: static and security phases here, the runtime and smoke
    phases in ``validator`` (default: the shared sandbox).  See ``sandbox.client.validate_component``."""
    from lfassist_jupyter.sandbox import shared
    from lfassist_jupyter.sandbox.client import validate_component as validate

    return validate(
        code,
        smoke=smoke,
        timeout=timeout,
        security=security,
        validator=validator if validator is not None else shared(),
    )


async def avalidate_component(
    code: str,
    *,
    smoke: bool = True,
    timeout: float = 10.0,
    security: SecurityMode | bool = "report",
    validator: SandboxValidator | None = None,
) -> ValidationReport:
    """Async twin of ``validate_component``."""
    from lfassist_jupyter.sandbox import shared
    from lfassist_jupyter.sandbox.client import avalidate_component as avalidate

    return await avalidate(
        code,
        smoke=smoke,
        timeout=timeout,
        security=security,
        validator=validator if validator is not None else shared(),
    )


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
