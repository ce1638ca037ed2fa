"""Deterministic repairs, tried before spending a model call on a repair round.

Each repair is safe because it is unambiguous: a port is renamed only when exactly one port
of the node fits the edge's types; a component only when one catalogue name is a near miss;
a value only when the field's type says how to read it. Anything else is left for the model.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from .catalog import Catalog, default_catalog
from .models import Change, RepairResult

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def fix_component_name(name: str, catalog: Catalog) -> str | None:
    """The catalogue component a near-miss name means (`ChatInputs`, `prompt template`), or None."""
    return catalog.resolve(name)


def coerce_value(field: dict[str, Any], value: Any) -> Any:
    """A value read as its field's type: "3" -> 3 for an int, "true" -> True for a bool, "0.5" -> 0.5."""
    kind = field.get("type")
    options = field.get("options")
    if isinstance(value, str) and isinstance(options, list) and options and all(isinstance(o, dict) for o in options):
        # A sortable list (Text Operations' operation) holds the chosen option objects:
        # "Case Conversion" -> [{"name": "Case Conversion", "icon": "type"}].
        wanted = value.strip().lower()
        match = [o for o in options if str(o.get("name", "")).lower() == wanted]
        if match and kind == "sortableList":
            return match[:1]
    if isinstance(value, str) and value.strip()[:1] in "[{" and kind not in ("str", "prompt", "mustache", "code"):
        import json

        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, str):
        text = value.strip()
        if kind == "bool":
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
        elif kind == "int":
            try:
                return int(text)
            except ValueError:
                try:
                    as_float = float(text)
                except ValueError:
                    return value
                return int(as_float) if as_float.is_integer() else value
        elif kind == "float":
            try:
                return float(text)
            except ValueError:
                return value
    elif kind == "str" and isinstance(value, (int, float)) and not isinstance(value, bool) and not field.get("list"):
        # A dropdown of strings given a number ("1" parsed as 1 by the spec reader).
        if isinstance(options, list) and str(value) in options:
            return str(value)
    elif kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _input_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    return {
        k: list(v.get("input_types") or [])
        for k, v in node.get("template", {}).items()
        if isinstance(v, dict) and v.get("input_types") and v.get("show", True)
    }


def _output_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    return {str(o.get("name")): list(o.get("types") or []) for o in node.get("outputs", []) if isinstance(o, dict)}


def _pick(wrong: str, candidates: list[str]) -> str | None:
    """The single candidate, or the one a near miss of the wrong name points to."""
    if len(candidates) == 1:
        return candidates[0]
    close = difflib.get_close_matches(wrong, candidates, n=2, cutoff=0.6)
    if len(close) == 1 or (
        len(close) == 2 and close[0] != close[1] and _ratio(wrong, close[0]) > _ratio(wrong, close[1])
    ):
        return close[0]
    return None


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def fix_edge_ports(
    source: dict[str, Any], output: str, target: dict[str, Any], input_name: str
) -> tuple[str, str, list[Change]]:
    """Rename an edge's unknown output or input when the types leave one port that fits.

    ``source`` and ``target`` are the nodes' templates (``node["data"]["node"]``).
    """
    from lfx.graph.edge.base import types_compatible

    changes: list[Change] = []
    outputs, inputs = _output_ports(source), _input_ports(target)
    loop_inputs = {n for n, o in ((o.get("name"), o) for o in source.get("outputs", [])) if o.get("allows_loop")}
    target_is_loop = input_name in {o.get("name") for o in target.get("outputs", []) if o.get("allows_loop")}
    if output not in outputs:
        wanted = inputs.get(input_name)
        fits = [n for n, t in outputs.items() if wanted is None or types_compatible(t, wanted)]
        fits = [n for n in fits if n not in loop_inputs or wanted is not None]
        chosen = _pick(output, fits)
        if chosen:
            changes.append(
                Change(kind="port", node="", field="output", before=output, after=chosen, message="output renamed")
            )
            output = chosen
    if input_name not in target.get("template", {}) and not target_is_loop:
        produced = outputs.get(output)
        fits = [n for n, t in inputs.items() if produced is None or types_compatible(produced, t)]
        chosen = _pick(input_name, fits)
        if chosen:
            changes.append(
                Change(kind="port", node="", field="input", before=input_name, after=chosen, message="input renamed")
            )
            input_name = chosen
    return output, input_name, changes


def repair_flow(flow: dict[str, Any], *, catalog: Catalog | None = None) -> RepairResult:
    """Deterministic repairs on Langflow flow JSON; returns a repaired copy and what changed.

    Fixes edges whose port name is wrong but whose types fit exactly one port, node types that
    are a near miss of a catalogue name (the node's template is replaced by the catalogue's),
    and field values of the wrong type. The input is never modified.
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

    for edge in data.get("edges", []):
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
    from lfx.graph.flow_builder.connect import _scaped_json_stringify

    out_types = _output_ports(src["data"]["node"]).get(out, [])
    field = tgt["data"]["node"].get("template", {}).get(port, {})
    sh = {"dataType": src["data"].get("type"), "id": src["id"], "name": out, "output_types": out_types}
    th = {"fieldName": port, "id": tgt["id"], "inputTypes": field.get("input_types") or [], "type": field.get("type")}
    edge["data"]["sourceHandle"], edge["data"]["targetHandle"] = sh, th
    edge["sourceHandle"], edge["targetHandle"] = _scaped_json_stringify(sh), _scaped_json_stringify(th)
    edge["id"] = f"reactflow__edge-{src['id']}{edge['sourceHandle']}-{tgt['id']}{edge['targetHandle']}"
