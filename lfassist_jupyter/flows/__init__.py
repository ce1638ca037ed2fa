"""Flows: from lfx's compact spec to a validated Langflow flow, and back.

A low-level package: it imports ``lfassist_jupyter.errors``, the ports, the sandbox's typed
answers and the flow facts (``artifacts/flow.py``: shape, navigation, lfx's rules), and nothing of
the engine or the views. It never imports lfx, starts no process and picks no sandbox: everything
that needs lfx (the component catalogue, building a flow from a spec, which can run a node's code
through a real-time refresh, judging a node's code, the packages a flow needs) goes to the sandbox
the caller handed in -- the one its ``Catalog`` carries (``default_catalog(sandbox)``), a
``ports.FlowSandbox``.  The package root's ``build_flow``, ``validate_flow``,
``run_flow_for_real`` and ``default_catalog`` are these over the shared sandbox.  What runs here
is text and JSON work: finding a spec in a reply, checking a flow, repairing it.  Drawing it is a
view's job: ``lfassist_jupyter.flow_picture`` (``ui/render/picture.py``); nothing here imports a view.

Public API::

    default_catalog(sandbox) -> Catalog                               # that sandbox's lfx components (+ add())
    build_flow(text, *, catalog, repair=True) -> BuildResult          # spec or model reply -> flow JSON
    extract_spec(reply) -> str                                        # the spec inside a model reply
    flow_to_spec(flow, *, catalog) -> str                             # flow JSON -> spec text
    edit_flow(original, text, *, catalog) -> BuildResult              # an edited spec applied to the flow's JSON
    validate_flow(flow, *, catalog) -> FlowReport                     # dict, path or spec text
    repair_flow(flow, *, catalog) -> RepairResult                     # deterministic repairs of flow JSON
    run_flow_for_real(flow, text, *, catalog, env=None, allow_hosts=(), timeout=300) -> RealRun
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .results import BuildResult, Change, FlowProblem, FlowReport, FlowSpecError, Need, RepairResult

if TYPE_CHECKING:  # pragma: no cover
    from .catalog import Catalog

__all__ = [
    "BuildResult",
    "Catalog",
    "Change",
    "FlowProblem",
    "FlowReport",
    "FlowSpecError",
    "Need",
    "RepairResult",
    "build_flow",
    "default_catalog",
    "edit_flow",
    "extract_spec",
    "flow_to_spec",
    "repair_flow",
    "run_flow_for_real",
    "validate_flow",
]

_LAZY = {
    "Catalog": "catalog",
    "default_catalog": "catalog",
    "build_flow": "build",
    "extract_spec": "spec_text",
    "flow_to_spec": "build",
    "edit_flow": "build",
    "validate_flow": "validate",
    "repair_flow": "repair",
    "run_flow_for_real": "real_run",
}


def __getattr__(name: str) -> Any:
    """Import the modules on first use, so `import lfassist_jupyter.flows` stays fast."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)
