"""Grouped sub-flows, opened the way lfx opens them before it builds a graph.

Langflow 1.0's canvas could group nodes into one ``GroupNode``: the node carries the inner
flow (``node.flow.data``), its fields are proxies of inner fields (``template[f].proxy``) and its
outputs of inner outputs (``outputs[i].proxy``). lfx does not build a group as such: its
``process_flow`` (``lfx/graph/graph/utils.py``) replaces each group by its inner nodes and edges
and re-targets the edges that touched the group through those proxies. ``ungroup`` does the
same on a copy (plain JSON, no lfx), so ``validate_flow`` checks what lfx will build.  The field
values go to the inner fields by the same function the outgoing gate uses
(``artifacts/executed.py``, compared with lfx by a drift test); that gate, not this module, judges
the code they carry.
"""

from __future__ import annotations

import copy
from typing import Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.executed import apply_proxies


def is_group(node: Any) -> bool:
    return isinstance(node, dict) and facts.group_flow(node) is not None


def ungroup(flow: dict[str, Any]) -> dict[str, Any]:
    """``flow`` with every group (nested ones too) replaced by what it holds: a copy when it has
    a group, else ``flow`` itself (nothing to open, nothing copied: validating a large flow
    stays cheap)."""
    if not any(is_group(n) for n in facts.nodes(flow)):
        return flow
    out = copy.deepcopy(flow)
    _open(facts.graph(out))
    return out


def _open(data: dict[str, Any]) -> None:
    todo = facts.nodes(data)
    done: set[str] = set()
    while todo:
        node = todo.pop(0)
        if facts.node_id(node) in done:
            continue
        done.add(facts.node_id(node))
        inner = facts.group_flow(node)
        if inner is not None:
            _open(facts.graph(inner))
            todo.extend(_replace(node, data))


def _replace(group: dict[str, Any], base: dict[str, Any]) -> list[dict[str, Any]]:
    """Put the group's inner nodes and edges in its place; the inner nodes (to open in turn)."""
    inner = facts.group_flow(group) or {}
    g_nodes, g_edges = facts.nodes(inner), facts.edges(inner)
    gid = facts.node_id(group)
    by_id = facts.by_id(g_nodes)
    # The group's field values go to the inner fields, as lfx's update_template puts them (one
    # implementation: the outgoing gate's, which judges the code they carry; lenient here).
    openable = [n for n in g_nodes if "id" in n and isinstance(facts.frontend_node(n).get("template"), dict)]
    apply_proxies(facts.fields(group), openable, strict=False)
    touches = [e for e in facts.edges(base) if gid in (e.get("source"), e.get("target"))]
    moved = []
    for edge in touches:
        new = copy.deepcopy(edge)
        if new.get("target") == gid:
            th = facts.handles(new)[1]
            to = th.get("proxy")
            if isinstance(to, dict) and to.get("id") in by_id:
                new["target"] = to["id"]
                handle = {k: v for k, v in th.items() if k != "proxy"}
                facts.set_handle(new, "targetHandle", {**handle, "fieldName": to.get("field"), "id": to["id"]})
        if new.get("source") == gid:
            _retarget_source(new, group, g_nodes, g_edges)
        moved.append(new)
    base["nodes"] = [n for n in facts.nodes(base) if facts.node_id(n) != gid] + g_nodes
    kept = [e for e in facts.edges(base) if gid not in (e.get("source"), e.get("target"))]
    base["edges"] = kept + g_edges + moved
    return g_nodes


def _retarget_source(edge: dict[str, Any], group: dict[str, Any], g_nodes: list, g_edges: list) -> None:
    """An edge out of the group starts at the inner output its proxy names (else, as lfx does,
    at the output of the same name with the inner node's id as prefix, or at the last node)."""
    sh = dict(facts.handles(edge)[0])
    name = sh.get("name")
    proxy = next((o.get("proxy") for o in facts.outputs(group) if o.get("name") == name), None)
    ids = [facts.node_id(n) for n in g_nodes]
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
    node = next(n for n in g_nodes if facts.node_id(n) == source)
    sh["id"] = source
    if facts.node_type(node):
        sh["dataType"] = facts.node_type(node)
    edge["source"] = source
    facts.set_handle(edge, "sourceHandle", sh)
