"""Grouped sub-flows, opened the way lfx opens them before it builds a graph.

Langflow 1.0's canvas could group nodes into one ``GroupNode``: the node carries the inner
flow (``node.flow.data``), its fields are proxies of inner fields (``template[f].proxy``) and its
outputs of inner outputs (``outputs[i].proxy``). lfx does not build a group as such: its
``process_flow`` (``lfx/graph/graph/utils.py``) replaces each group by its inner nodes and edges
and re-targets the edges that touched the group through those proxies. ``ungroup`` does the
same on a copy (plain JSON, no lfx), so ``validate_flow`` checks what lfx will build.
"""

from __future__ import annotations

import copy
from typing import Any


def is_group(node: Any) -> bool:
    inner = ((node.get("data") or {}).get("node") or {}) if isinstance(node, dict) else {}
    flow = inner.get("flow") if isinstance(inner, dict) else None
    return isinstance(flow, dict) and isinstance((flow.get("data") or {}).get("nodes"), list)


def ungroup(flow: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``flow`` with every group (nested ones too) replaced by what it holds."""
    out = copy.deepcopy(flow)
    data = out.get("data", out)
    if not isinstance(data, dict) or not any(is_group(n) for n in data.get("nodes") or []):
        return out
    _open(data)
    return out


def _open(data: dict[str, Any]) -> None:
    todo = list(data.get("nodes") or [])
    done: set[str] = set()
    while todo:
        node = todo.pop(0)
        if not isinstance(node, dict) or node.get("id") in done:
            continue
        done.add(node.get("id"))
        if is_group(node):
            inner = node["data"]["node"]["flow"]["data"]
            _open(inner)
            todo.extend(_replace(node, data))


def _replace(group: dict[str, Any], base: dict[str, Any]) -> list[dict[str, Any]]:
    """Put the group's inner nodes and edges in its place; the inner nodes (to open in turn)."""
    node = group["data"]["node"]
    inner = node["flow"]["data"]
    g_nodes = [n for n in inner.get("nodes") or [] if isinstance(n, dict)]
    g_edges = [e for e in inner.get("edges") or [] if isinstance(e, dict)]
    gid = group["id"]
    by_id = {n.get("id"): n for n in g_nodes}
    for value in (node.get("template") or {}).values():  # the group's field values go to the inner fields
        proxy = value.get("proxy") if isinstance(value, dict) else None
        target = by_id.get(proxy.get("id")) if isinstance(proxy, dict) else None
        fields = (((target or {}).get("data") or {}).get("node") or {}).get("template")
        if isinstance(fields, dict) and isinstance(fields.get(proxy.get("field")), dict):
            child = fields[proxy["field"]]
            merged = {**value, "type": "code"} if child.get("type") == "code" else dict(value)
            for key in ("show", "advanced"):
                if key in child:
                    merged[key] = child[key]
            merged["display_name"] = child.get("display_name", child.get("name"))
            merged.pop("proxy", None)
            fields[proxy["field"]] = merged
    moved = []
    for edge in base.get("edges") or []:
        if not isinstance(edge, dict) or gid not in (edge.get("source"), edge.get("target")):
            continue
        new = copy.deepcopy(edge)
        ed = new.get("data") or {}
        if new.get("target") == gid:
            th = ed.get("targetHandle") or {}
            proxy = th.get("proxy") if isinstance(th, dict) else None
            if isinstance(proxy, dict) and proxy.get("id") in by_id:
                new["target"] = proxy["id"]
                ed["targetHandle"] = {**{k: v for k, v in th.items() if k != "proxy"}, "fieldName": proxy.get("field"),
                                      "id": proxy["id"]}  # fmt: skip
        if new.get("source") == gid:
            _retarget_source(new, node, g_nodes, g_edges)
        moved.append(new)
    base["nodes"] = [n for n in base.get("nodes") or [] if not (isinstance(n, dict) and n.get("id") == gid)] + g_nodes
    base["edges"] = (
        [e for e in base.get("edges") or [] if not (isinstance(e, dict) and gid in (e.get("source"), e.get("target")))]
        + g_edges
        + moved
    )
    return g_nodes


def _retarget_source(edge: dict[str, Any], group: dict[str, Any], g_nodes: list, g_edges: list) -> None:
    """An edge out of the group starts at the inner output its proxy names (else, as lfx does,
    at the output of the same name with the inner node's id as prefix, or at the last node)."""
    ed = edge.get("data") or {}
    sh = dict(ed.get("sourceHandle") or {})
    name = sh.get("name")
    proxy = next(
        (o.get("proxy") for o in group.get("outputs") or [] if isinstance(o, dict) and o.get("name") == name), None
    )
    ids = [n.get("id") for n in g_nodes]
    if not isinstance(proxy, dict) and isinstance(name, str):
        prefix = next((i for i in sorted(ids, key=len, reverse=True) if name.startswith(f"{i}_")), None)
        proxy = {"id": prefix, "name": name.removeprefix(f"{prefix}_")} if prefix else None
    if isinstance(proxy, dict) and proxy.get("id") in ids:
        source, sh["name"] = proxy["id"], proxy.get("name") or proxy.get("field") or name
    else:
        sources = {e.get("source") for e in g_edges}
        source = next((i for i in ids if i not in sources), None)
        if source is None:
            return
    node = next(n for n in g_nodes if n.get("id") == source)
    sh["id"] = source
    if (node.get("data") or {}).get("type"):
        sh["dataType"] = node["data"]["type"]
    edge["source"] = source
    ed["sourceHandle"] = sh
