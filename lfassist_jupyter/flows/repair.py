"""Deterministic repairs, tried before spending a model call on a repair round.

Each repair is safe because it is unambiguous: a port is renamed only when exactly one port
of the node fits the edge's types; a component only when one catalogue name is a near miss;
a value only when the field's type says how to read it. Anything else is left for the model.
"""

from __future__ import annotations

import copy
from typing import Any

from lfassist_jupyter.sandbox.worker import flow_kit as kit
from lfassist_jupyter.sandbox.worker.flow_kit import coerce_value, handle_json

from .catalog import Catalog, default_catalog
from .models import Change, RepairResult

__all__ = ["coerce_value", "fix_component_name", "fix_edge_ports", "repair_flow"]


def fix_component_name(name: str, catalog: Catalog) -> str | None:
    """The catalogue component a near-miss name means (`ChatInputs`, `prompt template`), or None."""
    return catalog.resolve(name)


def fix_edge_ports(
    source: dict[str, Any], output: str, target: dict[str, Any], input_name: str
) -> tuple[str, str, list[Change]]:
    """Rename an edge's unknown output or input when the types leave one port that fits.

    ``source`` and ``target`` are the nodes' templates (``node["data"]["node"]``). The rule is
    ``flow_kit.fix_edge_ports``, the one the sandbox's build applies too.
    """
    output, input_name, changes = kit.fix_edge_ports(source, output, target, input_name)
    return output, input_name, [Change(node="", **c) for c in changes]


def _output_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    return kit.output_ports(node)


def repair_flow(flow: dict[str, Any], *, catalog: Catalog | None = None) -> RepairResult:
    """Deterministic repairs on Langflow flow JSON; returns a repaired copy and what changed.

    Fixes loop and branch wiring (``control.py``), edges whose port name is wrong but whose
    types fit exactly one port, node types that are a near miss of a catalogue name (the node's
    template is replaced by the catalogue's), and field values of the wrong type. The input is
    never modified.
    """
    catalog = catalog or default_catalog()
    flow = copy.deepcopy(flow)
    data = flow.get("data", flow)
    changes: list[Change] = []
    nodes = {n.get("id"): n for n in data.get("nodes", []) if isinstance(n, dict)}

    for node in nodes.values():
        nd = node.get("data") or {}
        kind = nd.get("type")
        if node.get("type", "genericNode") != "genericNode" or not kind:
            continue
        name = (nd.get("node") or {}).get("display_name") or node.get("id")
        has_code = bool(((nd.get("node") or {}).get("template") or {}).get("code", {}).get("value"))
        if kind not in catalog and kind != "CustomComponent" and not has_code:
            fixed = fix_component_name(kind, catalog)
            if fixed:
                nd["type"] = fixed
                old_template = (nd.get("node") or {}).get("template") or {}
                nd["node"] = copy.deepcopy(catalog.registry[fixed])
                nd["node"].pop("custom", None)
                for fname, field in nd["node"].get("template", {}).items():
                    old = old_template.get(fname)
                    if isinstance(field, dict) and isinstance(old, dict) and "value" in old:
                        field["value"] = old["value"]
                changes.append(
                    Change(kind="component", node=str(name), before=kind, after=fixed, message=f"{kind!r} -> {fixed!r}")
                )
        for fname, field in ((nd.get("node") or {}).get("template") or {}).items():
            if not isinstance(field, dict) or "value" not in field or fname.startswith("_"):
                continue
            coerced = coerce_value(field, field["value"])
            if coerced != field["value"] or type(coerced) is not type(field["value"]):
                changes.append(
                    Change(
                        kind="value",
                        node=str(name),
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
    for index, edge in enumerate(data.get("edges", [])):
        if index in held:
            continue
        src, tgt = nodes.get(edge.get("source")), nodes.get(edge.get("target"))
        if not src or not tgt:
            continue
        ed = edge.setdefault("data", {})
        sh, th = ed.get("sourceHandle") or {}, ed.get("targetHandle") or {}
        out, port = sh.get("name"), th.get("fieldName") or th.get("name")
        if not out or not port:
            continue
        new_out, new_port, edge_changes = fix_edge_ports(src["data"]["node"], out, tgt["data"]["node"], port)
        if not edge_changes:
            continue
        for ch in edge_changes:
            ch.node = str(
                (src if ch.field == "output" else tgt)["data"]["node"].get("display_name") or edge.get("source")
            )
        changes += edge_changes
        _rewire(edge, src, tgt, new_out, new_port)
    return RepairResult(flow=flow, changes=changes)


def _rewire(edge: dict[str, Any], src: dict[str, Any], tgt: dict[str, Any], out: str, port: str) -> None:
    """Rebuild an edge's handles for new port names, the way lfx's add_connection writes them."""
    out_types = _output_ports(src["data"]["node"]).get(out, [])
    field = tgt["data"]["node"].get("template", {}).get(port, {})
    sh = {"dataType": src["data"].get("type"), "id": src["id"], "name": out, "output_types": out_types}
    th = {"fieldName": port, "id": tgt["id"], "inputTypes": field.get("input_types") or [], "type": field.get("type")}
    edge["data"]["sourceHandle"], edge["data"]["targetHandle"] = sh, th
    edge["sourceHandle"], edge["targetHandle"] = handle_json(sh), handle_json(th)
    edge["id"] = f"reactflow__edge-{src['id']}{edge['sourceHandle']}-{tgt['id']}{edge['targetHandle']}"
