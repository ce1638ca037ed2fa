"""Deterministic repairs, tried before spending a model call on a repair round.

Each repair is safe because it is unambiguous: a port is renamed only when exactly one port
of the node fits the edge's types; a component only when one catalogue name is a near miss;
a value only when the field's type says how to read it. Anything else is left for the model.
"""

from __future__ import annotations

import copy
from typing import Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import coerce_value, node_name

from .catalog import Catalog
from .load import require_flow
from .results import Change, RepairResult

__all__ = ["coerce_value", "fix_component_name", "fix_edge_ports", "repair_flow"]


def fix_component_name(name: str, catalog: Catalog) -> str | None:
    """The catalogue component a near-miss name means (`ChatInputs`, `prompt template`), or None."""
    return catalog.resolve(name)


def fix_edge_ports(
    source: dict[str, Any], output: str, target: dict[str, Any], input_name: str
) -> tuple[str, str, list[Change]]:
    """Rename an edge's unknown output or input when the types leave one port that fits.

    ``source`` and ``target`` are the nodes' frontend nodes (``node["data"]["node"]``). The rule
    is ``artifacts.flow.fix_edge_ports``, the one the sandbox's build applies too.
    """
    output, input_name, changes = facts.fix_edge_ports(source, output, target, input_name)
    return output, input_name, [Change(node="", **c) for c in changes]


def repair_flow(flow: dict[str, Any], *, catalog: Catalog) -> RepairResult:
    """Deterministic repairs on Langflow flow JSON; returns a repaired copy and what changed.

    Fixes loop and branch wiring (``control.py``), edges whose port name is wrong but whose
    types fit exactly one port, node types that are a near miss of a catalogue name (the node's
    template is replaced by the catalogue's), and field values of the wrong type. The input is
    never modified. ``FlowFileError`` (one line naming the field) when ``flow`` is not flow JSON.
    """
    flow = copy.deepcopy(require_flow(flow))
    changes: list[Change] = []
    nodes = facts.by_id(facts.nodes(flow))

    for node in nodes.values():
        kind = facts.node_type(node)
        if not facts.is_component(node) or not kind:
            continue
        name = node_name(node)
        code = facts.fields(node).get("code")
        has_code = isinstance(code, dict) and bool(code.get("value"))
        if kind not in catalog and kind != "CustomComponent" and not has_code:
            fixed = fix_component_name(kind, catalog)
            if fixed:
                old_fields = facts.fields(node)
                node["data"]["type"] = fixed
                node["data"]["node"] = copy.deepcopy(catalog.registry[fixed])
                node["data"]["node"].pop("custom", None)
                for fname, field in facts.fields(node).items():
                    old = old_fields.get(fname)
                    if isinstance(field, dict) and isinstance(old, dict) and "value" in old:
                        field["value"] = old["value"]
                changes.append(
                    Change(kind="component", node=name, before=kind, after=fixed, message=f"{kind!r} -> {fixed!r}")
                )
        for fname, field in facts.fields(node).items():
            if not isinstance(field, dict) or "value" not in field or fname.startswith("_"):
                continue
            coerced = coerce_value(field, field["value"])
            if coerced != field["value"] or type(coerced) is not type(field["value"]):
                changes.append(
                    Change(
                        kind="value",
                        node=name,
                        field=fname,
                        before=field["value"],
                        after=coerced,
                        message="value coerced",
                    )
                )
                field["value"] = coerced

    # Loop and branch wiring first (flows/control.py); the edges it leaves for the model stay as they are.
    from .control import control_flow_json

    held, control_changes = control_flow_json(flow)
    changes += control_changes
    for index, edge in enumerate(facts.edges(flow)):
        if index in held:
            continue
        source, out, target, port = facts.ports(edge)
        src, tgt = nodes.get(source), nodes.get(target)
        if not src or not tgt or not out or not port:
            continue
        new_out, new_port, edge_changes = fix_edge_ports(facts.frontend_node(src), out, facts.frontend_node(tgt), port)
        if not edge_changes:
            continue
        for ch in edge_changes:
            ch.node = node_name(src if ch.field == "output" else tgt)
        changes += edge_changes
        facts.rewire(edge, src, new_out, tgt, new_port)
    return RepairResult(flow=flow, changes=changes)
