"""Edits that never destroy what they do not touch: the flow JSON stays the source of truth.

The compact spec is how a model reads and edits a flow, but it cannot say everything a flow
holds: positions, values left at their defaults, the exact code of a node made by an older
Langflow, a grouped sub-flow, a component this lfx does not ship.  Rebuilding a user's flow from
its spec loses all of that.  So an edit is a *difference* between two specs, applied to the
original JSON:

- ``spec_kinds`` names each node as the spec writes it: by the module or the code the node
  carries (the rule reuse uses), else by its type when that is the same component; a node no
  catalogue entry expresses (a group, an absent component, custom code of any type) becomes a
  catalogue entry of its own (its saved template), so the spec can name it and lfx's builder
  can wire new edges to its ports.
- ``merge_flow`` takes the original flow, the spec it was shown as, and the flow lfx built from
  the edited spec: a node the edit keeps (same spec id, same kind) is the original node, byte
  for byte, with only the config lines the edit changed applied; an edge the edit keeps is the
  original edge; new nodes and edges come from the build (their ids mapped onto the originals);
  what the edit removed is gone.  Nodes the spec does not list (notes) are kept.

Plain JSON work (stdlib only): nothing here runs a node's code.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lfassist_jupyter.artifacts import flow as facts

_SECTION = re.compile(r"^\s*(nodes|edges|config):\s*$")
_NODE = re.compile(r"^\s+([\w-]+)\s*:\s*(\S.*?)\s*$")
_EDGE = re.compile(r"^\s+([\w-]+)\.([\w-]+)\s*->\s*([\w-]+)\.([\w-]+)\s*$")
_CONFIG = re.compile(r"^(\s+)([\w-]+)\.([\w-]+)\s*:\s?(.*)$")


def components(flow: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The flow's component nodes (notes are canvas decorations), in the flow's order."""
    return [n for n in facts.components(flow) if "id" in n]


def spec_ids(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """Short spec ids (A, B, ... Z, A1 ...) in the order of the flow's nodes: node id -> spec id."""
    out = {}
    for i, node in enumerate(nodes):
        letter = chr(ord("A") + i % 26)
        out[node["id"]] = letter if i < 26 else f"{letter}{i // 26}"
    return out


# -- which catalogue entry a node is ---------------------------------------------------------


def _code(node_template: Mapping[str, Any]) -> str | None:
    field = (node_template.get("template") or {}).get("code")
    value = field.get("value") if isinstance(field, Mapping) else None
    return value if isinstance(value, str) and value else None


def spec_kinds(flow: Mapping[str, Any], catalog: Any) -> dict[str, str]:
    """Node id -> the catalogue key the spec writes for it, adding to ``catalog`` an entry of
    its own (the node's saved template) for each node no bundled entry expresses.

    In order: the builder's own note of the entry (``_flow_builder_registry_type``); the node's
    module (``metadata.module``), then its code, equal to a bundled component's; its type, when
    the bundled entry of that name is the same component (the same display name); else the
    node's own template, under its type, display name, or ``type id`` (the first free one).
    """
    registry = catalog.registry
    by_module: dict[str, str] = {}
    by_code: dict[str, str] = {}
    for key, entry in registry.items():
        if not isinstance(entry, Mapping) or entry.get("custom"):
            continue
        module = (entry.get("metadata") or {}).get("module")
        if module:
            by_module.setdefault(str(module), key)
        code = _code(entry)
        if code:
            by_code.setdefault(code, key)
    kinds: dict[str, str] = {}
    for node in components(flow):
        nd = facts.obj(node.get("data"))
        inner = nd.get("node") if isinstance(nd.get("node"), dict) else None
        kind = str(nd.get("type") or "")
        if inner is None:
            kinds[node["id"]] = kind
            continue
        noted = nd.get("_flow_builder_registry_type")
        module = facts.obj(inner.get("metadata")).get("module")
        code = _code(inner)
        same = registry.get(kind) if isinstance(registry.get(kind), Mapping) else None
        if noted and noted in registry:
            key = str(noted)
        elif module and str(module) in by_module and not inner.get("flow"):
            key = by_module[str(module)]
        elif code and code in by_code:
            key = by_code[code]
        elif (
            same is not None
            and not same.get("custom")
            and not inner.get("flow")
            and same.get("display_name") == inner.get("display_name")
        ):
            key = kind
        else:
            key = _own_entry(node, inner, kind, catalog)
        kinds[node["id"]] = key
    return kinds


def _own_entry(node: Mapping[str, Any], inner: Mapping[str, Any], kind: str, catalog: Any) -> str:
    """Register the node's saved template as a catalogue entry; its key."""
    template = copy.deepcopy(dict(inner))
    template.pop("flow", None)  # a group's inner flow stays in the node; the entry needs its ports only
    if not isinstance(template.get("template"), dict):  # a malformed saved node: validate_flow says so
        template["template"] = {}
    code = _code(inner)
    for key in (kind, str(inner.get("display_name") or ""), f"{kind} {node['id']}"):
        if not key or key == "CustomComponent":  # the type every custom node shares: never a key
            continue
        entry = catalog.registry.get(key)
        if entry is None:
            catalog.add(key, template)
            return key
        if entry.get("custom") and (
            _code(entry) == code if code is not None else entry.get("template") == template.get("template")
        ):
            return key  # the same component under the same name (this node again, or its twin)
    key = f"{kind} {node['id']}"
    catalog.add(key, template)
    return key


# -- reading a spec's lines -------------------------------------------------------------------


@dataclass
class SpecParts:
    """The nodes, edges and config lines of a spec, as written (values as their raw text)."""

    nodes: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str, str]] = field(default_factory=list)
    config: dict[tuple[str, str], str] = field(default_factory=dict)
    head: dict[str, str] = field(default_factory=dict)
    """``name:`` and ``description:``, when the spec has them."""


def read_spec(text: str) -> SpecParts:
    """The spec's lines, read as ``flow_to_spec`` writes them and as lfx's parser reads them:
    a config value may go on over more-indented lines (a ``|`` block)."""
    parts = SpecParts()
    section = None
    current: tuple[str, str] | None = None
    indent: int | None = None
    for line in (text or "").splitlines():
        head = _SECTION.match(line)
        if head:
            section, current = head.group(1), None
            continue
        if section == "config":
            match = _CONFIG.match(line)
            depth = len(line) - len(line.lstrip())
            if match and (indent is None or depth <= indent):
                indent = depth if indent is None else indent
                current = (match.group(2), match.group(3))
                parts.config[current] = match.group(4).rstrip()
            elif current is not None and (not line.strip() or depth > (indent or 0)):
                parts.config[current] += "\n" + line.rstrip()
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        top = re.match(r"^(name|description):\s*(.*?)\s*$", line)
        if section is None and top:
            parts.head[top.group(1)] = top.group(2)
            continue
        if section == "nodes":
            match = _NODE.match(line)
            if match:
                parts.nodes[match.group(1)] = match.group(2)
        elif section == "edges":
            match = _EDGE.match(line)
            if match:
                parts.edges.append((match.group(1), match.group(2), match.group(3), match.group(4)))
    parts.config = {k: v.strip() for k, v in parts.config.items()}
    return parts


# -- applying an edit ------------------------------------------------------------------------


def _edge_key(edge: dict[str, Any], sids: Mapping[str, str]) -> tuple[str, str, str, str] | None:
    source, output, target, port = facts.ports(edge)
    src, tgt = sids.get(str(source)), sids.get(str(target))
    if src is None or tgt is None:
        return None
    return src, str(output), tgt, str(port)


@dataclass
class Merged:
    """A merged flow and what the edit did to the original: node ids kept, added, removed."""

    flow: dict[str, Any]
    node_ids: dict[str, str]
    kept: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)


def merge_flow(
    original: Mapping[str, Any],
    old_spec: str,
    new_spec: str,
    built: Mapping[str, Any],
    built_ids: Mapping[str, str],
) -> Merged:
    """The original flow with the edit from ``old_spec`` to ``new_spec`` applied (see the module
    docstring); ``built`` is lfx's build of ``new_spec`` and ``built_ids`` its spec id -> node id."""
    old, new = read_spec(old_spec), read_spec(new_spec)
    out = copy.deepcopy(dict(original))
    data = facts.graph(out)
    orig_nodes = components(original)
    sids = spec_ids(orig_nodes)
    by_sid = {sid: nid for nid, sid in sids.items()}
    built_nodes = {n["id"]: n for n in components(built)}
    kept = {sid for sid, kind in new.nodes.items() if old.nodes.get(sid) == kind and sid in by_sid}
    final_ids = {sid: by_sid[sid] for sid in kept}
    taken = {facts.node_id(n) for n in facts.nodes(out)}
    merged = Merged(flow=out, node_ids=final_ids)
    for key in ("name", "description"):  # a spec that renames the flow renames it
        if key in new.head and new.head[key] != old.head.get(key) and built.get(key):
            out[key] = built[key]

    nodes: list[Any] = []
    for node in data.get("nodes") or []:
        nid = node.get("id") if isinstance(node, dict) else None
        sid = sids.get(nid) if isinstance(nid, str) else None
        if sid is None:
            nodes.append(node)  # a note, or what the spec never listed: untouched
        elif sid in kept:
            changed = _apply_config(node, old, new, sid, built_nodes.get(built_ids.get(sid, "")))
            if changed:
                merged.changed[node["id"]] = changed
            nodes.append(node)
            merged.kept.append(node["id"])
        else:
            merged.removed.append(node["id"])
    for sid in new.nodes:
        if sid in kept or built_ids.get(sid) not in built_nodes:
            continue
        node = copy.deepcopy(built_nodes[built_ids[sid]])
        nid = str(node["id"])
        while nid in taken:
            nid += "x"
        node["id"] = nid
        if isinstance(node.get("data"), dict):
            node["data"]["id"] = nid
        taken.add(nid)
        final_ids[sid] = nid
        nodes.append(node)
        merged.added.append(nid)
    data["nodes"] = nodes
    data["edges"] = _merge_edges(facts.edges(out), sids, kept, old, new, built, built_ids, final_ids, nodes)
    return merged


def _apply_config(
    node: dict[str, Any], old: SpecParts, new: SpecParts, sid: str, built_node: Mapping[str, Any] | None
) -> list[str]:
    """Set on ``node`` the config values the edit changed (as lfx's build coerced them)."""
    changed = []
    for (nsid, fname), text in new.config.items():
        if nsid != sid or old.config.get((sid, fname)) == text or built_node is None:
            continue
        built_field = facts.fields(dict(built_node)).get(fname)
        template = facts.frontend_node(node).setdefault("template", {})
        if not isinstance(built_field, Mapping):
            continue
        if isinstance(template.get(fname), dict):
            template[fname]["value"] = copy.deepcopy(built_field.get("value"))
        else:
            template[fname] = copy.deepcopy(dict(built_field))
        changed.append(fname)
    return changed


def _merge_edges(
    edges: list[Any],
    sids: Mapping[str, str],
    kept: set[str],
    old: SpecParts,
    new: SpecParts,
    built: Mapping[str, Any],
    built_ids: Mapping[str, str],
    final_ids: Mapping[str, str],
    nodes: list[Any],
) -> list[Any]:
    wanted = set(new.edges)
    out: list[Any] = []
    have: set[tuple[str, str, str, str]] = set()
    for edge in edges:
        if not isinstance(edge, dict):
            continue
        key = _edge_key(edge, sids)
        ends = {sids.get(str(edge.get("source"))), sids.get(str(edge.get("target")))}
        if key is None and not (ends - {None}):
            out.append(edge)  # between nodes the spec does not list: untouched
        elif key is not None and key in wanted and key[0] in kept and key[2] in kept:
            out.append(edge)
            have.add(key)
    built_sids = {nid: sid for sid, nid in built_ids.items()}
    by_id = {n["id"]: n for n in nodes if isinstance(n, dict) and "id" in n}
    for edge in facts.edges(dict(built)):
        key = _edge_key(edge, built_sids)
        if key is None or key in have or key not in wanted:
            continue
        if key[0] not in final_ids or key[2] not in final_ids:
            continue
        if final_ids[key[0]] in by_id and final_ids[key[2]] in by_id:
            out.append(_remap_edge(edge, final_ids[key[0]], final_ids[key[2]], by_id))
        have.add(key)
    return out


def _remap_edge(edge: Mapping[str, Any], src: str, tgt: str, nodes: Mapping[str, Any]) -> dict[str, Any]:
    """A built edge between the final nodes, written as lfx's ``add_connection`` writes one, from
    the final nodes' own ports (an untouched node keeps its saved ports)."""
    _, output, _, port = facts.ports(edge)
    return facts.new_edge(nodes[src], str(output), nodes[tgt], str(port))


def same_node(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Byte for byte (the JSON text a save writes)."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)
