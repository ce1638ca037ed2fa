"""Edits that never destroy what they do not touch: the flow JSON stays the source of truth.

The compact spec is how a model reads and edits a flow, but it cannot say everything a flow
holds: positions, values left at their defaults, the exact code of a node made by an older
Langflow, a grouped sub-flow, a component this lfx does not ship.  Rebuilding a user's flow from
its spec loses all of that.  So an edit is a *difference* between two specs, applied to the
original JSON:

- ``spec_ids`` names each node by its own id (``ChatInput-jFwUm`` is ``jFwUm``), never by its
  place in the list, so a spec names the same nodes after an edit removed or added others.
- ``spec_kinds`` names each node as the spec writes it: by the code or the module the node
  carries, else by its type as lfx knows it in any Langflow version (``Catalog.known``), when
  that component has the ports the node's edges use; a node no catalogue entry expresses (a
  group, an absent component, custom code of any type) becomes a catalogue entry of its own (its
  saved template), so the spec can name it and lfx's builder can wire new edges to its ports.
- ``merge_flow`` takes the original flow, the spec it was shown as, and the flow lfx built from
  the edited spec: a node the edit keeps (same spec id, a name that means it) is the original node, byte
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
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.artifacts import flow as facts

if TYPE_CHECKING:
    from .catalog import Catalog

_SECTION = re.compile(r"^\s*(nodes|edges|config):\s*$")
_NODE = re.compile(r"^\s+([\w-]+)\s*:\s*(\S.*?)\s*$")
_EDGE = re.compile(r"^\s+([\w-]+)\.([\w-]+)\s*->\s*([\w-]+)\.([\w-]+)\s*$")
_CONFIG = re.compile(r"^(\s+)([\w-]+)\.([\w-]+)\s*:\s?(.*)$")


def components(flow: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The flow's component nodes (notes are canvas decorations), in the flow's order."""
    return [n for n in facts.components(flow) if "id" in n]


_SPEC_ID = re.compile(r"^\w+$", re.ASCII)


def _full_id(node_id: str) -> str:
    r"""A node id as a spec id (``\w+``: lfx's parser reads ``Node.field`` with ``\w``)."""
    return re.sub(r"\W+", "_", node_id, flags=re.ASCII).strip("_") or "node"


def spec_ids(nodes: list[dict[str, Any]]) -> dict[str, str]:
    r"""Each node's spec id, from its own id: node id -> spec id.

    A node id is ``<type>-<suffix>`` (Langflow's ``ChatInput-jFwUm``; a built node's
    ``ChatInput-A``, ``node_id_for``): its spec id is the suffix, else (no ``-``, a suffix
    that is not ``\w+``, or one another node shares) the whole id with ``_`` for what a spec id
    cannot hold.  Derived from the node alone, never from its place in the list, so a node keeps
    its spec id whatever an edit removes or adds: a spec written for a flow still names the same
    nodes after the flow was edited and saved over (``merge_flow``, a re-run cell)."""
    suffixes: dict[str, int] = {}
    for node in nodes:
        tail = str(node["id"]).rsplit("-", 1)[-1] if "-" in str(node["id"]) else ""
        suffixes[tail] = suffixes.get(tail, 0) + 1
    out: dict[str, str] = {}
    taken: set[str] = set()
    for node in nodes:
        nid = str(node["id"])
        tail = nid.rsplit("-", 1)[-1] if "-" in nid else ""
        sid = tail if tail and _SPEC_ID.match(tail) and suffixes[tail] == 1 else _full_id(nid)
        base, n = sid, 2
        while sid in taken:
            sid, n = f"{base}_{n}", n + 1
        taken.add(sid)
        out[nid] = sid
    return out


def node_id_for(built_id: str, spec_id: str) -> str:
    """The id of a node built from the spec line ``spec_id: Type``: lfx's ``<Type>-<random>``
    with the spec id for the random part (``ChatInput-A``), so building a spec twice gives the
    same flow, and ``spec_ids`` of the flow gives the spec its ids back."""
    prefix = built_id.rsplit("-", 1)[0] if "-" in built_id else built_id
    return f"{prefix}-{spec_id}"


def rename_nodes(flow: object, renamed: Mapping[str, str]) -> None:
    """Give nodes new ids (old id -> new id), in place: the node, its ``data.id``, and every edge
    that names it (ends, handles, the encoded handles, the edge id as ``add_connection`` writes it)."""
    if not renamed:
        return
    for node in facts.nodes(flow):
        new = renamed.get(str(node.get("id")))
        if new is not None:
            node["id"] = new
            if isinstance(node.get("data"), dict) and "id" in node["data"]:
                node["data"]["id"] = new
    for edge in facts.edges(flow):
        src, tgt = str(edge.get("source")), str(edge.get("target"))
        if src not in renamed and tgt not in renamed:
            continue
        standard = edge.get("id") == f"reactflow__edge-{src}{edge.get('sourceHandle')}-{tgt}{edge.get('targetHandle')}"
        data = facts.obj(edge.get("data"))
        for key, old in (("sourceHandle", src), ("targetHandle", tgt)):
            if old not in renamed:
                continue
            handle = data.get(key)
            if isinstance(handle, dict) and handle.get("id") == old:
                handle["id"] = renamed[old]
            if isinstance(edge.get(key), str):
                edge[key] = edge[key].replace(f"\u0153{old}\u0153", f"\u0153{renamed[old]}\u0153")
        edge["source"], edge["target"] = renamed.get(src, src), renamed.get(tgt, tgt)
        if standard:
            ends = f"{edge['source']}{edge['sourceHandle']}-{edge['target']}{edge['targetHandle']}"
            edge["id"] = f"reactflow__edge-{ends}"


# -- which catalogue entry a node is ---------------------------------------------------------


def _code(node_template: Mapping[str, Any]) -> str | None:
    field = (node_template.get("template") or {}).get("code")
    value = field.get("value") if isinstance(field, Mapping) else None
    return value if isinstance(value, str) and value else None


def _ports_used(flow: object) -> dict[str, tuple[set[str], set[str]]]:
    """Node id -> (the outputs its edges leave from, the inputs its edges arrive at)."""
    used: dict[str, tuple[set[str], set[str]]] = {}
    for edge in facts.edges(flow):
        source, output, target, port = facts.ports(edge)
        used.setdefault(str(source), (set(), set()))[0].add(str(output))
        used.setdefault(str(target), (set(), set()))[1].add(str(port))
    return used


def node_names(node: Mapping[str, object], kind: str, catalog: Catalog) -> set[str]:
    """Every name a spec may give an existing node and still mean that node (``merge_flow`` keeps
    it): the name ``spec_kinds`` gives it now, its type, display name and ``<type> <id>`` (the
    names its own entry may have had), and lfx's name for its type.  What a node is named can
    change when an edit rewires it (an old File whose ``data`` output is no longer used is lfx's
    File again): a spec written before still names the same node."""
    data = facts.obj(node.get("data"))
    inner = facts.obj(data.get("node"))
    kind_of = str(data.get("type") or "")
    names = {kind, kind_of, str(inner.get("display_name") or ""), f"{kind_of} {node.get('id')}"}
    known = catalog.known(kind_of) if kind_of else None
    return {n for n in [*names, known] if n}


def _fits(entry: Mapping[str, Any], used: tuple[set[str], set[str]]) -> bool:
    """Whether every port the node's edges use is a port of ``entry``: an output it has (or its tool
    output, when it can be a tool), an input it has (a prompt's variables become inputs, so an
    entry with a prompt field takes any), or a loop's feedback port.  A node written as ``entry``
    keeps its edges when lfx builds the spec."""
    outs = {str(o.get("name")) for o in entry.get("outputs") or [] if isinstance(o, Mapping)}
    fields = facts.obj(entry.get("template"))
    # lfx/graph/flow_builder/connect.py ``_declares_tool_mode``: an edge from ``component_as_tool``
    # puts such a component in tool mode.
    if entry.get("add_tool_output") or any(isinstance(f, Mapping) and f.get("tool_mode") for f in fields.values()):
        outs.add("component_as_tool")
    prompt = any(isinstance(f, Mapping) and f.get("type") in ("prompt", "mustache") for f in fields.values())
    loops = {str(o.get("name")) for o in entry.get("outputs") or [] if isinstance(o, Mapping) and o.get("allows_loop")}
    outputs, inputs = used
    return outputs <= outs and all(port in fields or port in loops or prompt for port in inputs)


def _is_it(entry: object, inner: Mapping[str, object], used: tuple[set[str], set[str]]) -> bool:
    """Whether a loaded node (its ``inner`` template, the ports ``used`` by its edges) may be
    written as the catalogue entry ``entry``: an lfx component (not custom), the node no group, its
    code not edited by its author into something else, and every port its edges use on the entry."""
    if not isinstance(entry, Mapping) or entry.get("custom") or inner.get("flow"):
        return False
    code = _code(inner)
    if inner.get("edited") and code is not None and code != _code(entry):
        return False  # its author changed the code: their own component now
    return _fits(entry, used)


def spec_kinds(flow: Mapping[str, Any], catalog: Catalog) -> dict[str, str]:
    """Node id -> the catalogue key the spec writes for it, adding to ``catalog`` an entry of
    its own (the node's saved template) for each node no bundled entry expresses.

    In order: the builder's own note of the entry (``_flow_builder_registry_type``); the node's
    code equal to a bundled component's; its module (``metadata.module``); its type, as lfx knows
    it in any Langflow version (``Catalog.known``: ``Prompt`` of Langflow 1.0-1.12 is today's
    ``Prompt Template``, ``OpenAIModel`` the installed bundle's) -- each but the code only when the
    entry has every port the node's edges use, and never for code its author edited (``edited``)
    into something else.  Else the node's own template, under a name no lfx component has: a
    component this lfx lacks, custom code or a group is carried with its code, never retyped.
    """
    # lfx's own entries only: what a loaded node is must not depend on what else this catalogue
    # holds (a session's components, a connected Langflow's), or a fresh kernel would name it
    # otherwise and an edit of it would not be reproduced there.
    registry = {k: e for k, e in catalog.registry.items() if k not in catalog.added}
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
    used_by = _ports_used(flow)
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
        used = used_by.get(str(node["id"]), (set(), set()))
        by_module_entry = registry.get(by_module.get(str(module), "")) if module else None
        known = catalog.known(kind) if kind != "CustomComponent" else None
        if noted and noted in registry:
            key = str(noted)
        elif code and code in by_code and not inner.get("flow"):
            key = by_code[code]
        elif module and _is_it(by_module_entry, inner, used):
            key = by_module[str(module)]
        elif known and _is_it(registry.get(known), inner, used):
            key = known
        else:
            key = _own_entry(node, inner, kind, catalog)
        kinds[node["id"]] = key
    return kinds


def _own_entry(node: Mapping[str, Any], inner: Mapping[str, Any], kind: str, catalog: Catalog) -> str:
    """Register the node's saved template as a catalogue entry; its key: the name lfx's builder
    made the node from (``_flow_builder_registry_type``: a generated component's, as the spec that
    built it named it), else its type, display name, or ``<type> <node id>``."""
    template = copy.deepcopy(dict(inner))
    template.pop("flow", None)  # a group's inner flow stays in the node; the entry needs its ports only
    if not isinstance(template.get("template"), dict):  # a malformed saved node: validate_flow says so
        template["template"] = {}
    code = _code(inner)
    noted = facts.registry_type(node) or ""
    for key in (noted, kind, str(inner.get("display_name") or ""), f"{kind} {node['id']}"):
        if not key or key == "CustomComponent":  # the type every custom node shares: never a key
            continue
        if key in catalog.names_of or (key in catalog.registry and key not in catalog.added):
            continue  # a name lfx knows for one of its components: a fresh kernel would read it so
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
    names: Mapping[str, set[str]] | None = None,
    entries: Mapping[str, Mapping[str, object]] | None = None,
) -> Merged:
    """The original flow with the edit from ``old_spec`` to ``new_spec`` applied (see the module
    docstring); ``built`` is lfx's build of ``new_spec`` and ``built_ids`` its spec id -> node id.
    A node is kept when the new spec gives its spec id the same component, or one of ``names``
    (spec id -> the names that still mean that node: ``node_names``); ``entries`` (the catalogue's
    templates) tell a field a refresh added from one the component has anyway."""
    old, new = read_spec(old_spec), read_spec(new_spec)
    out = copy.deepcopy(dict(original))
    data = facts.graph(out)
    orig_nodes = components(original)
    sids = spec_ids(orig_nodes)
    by_sid = {sid: nid for nid, sid in sids.items()}
    built_nodes = {n["id"]: n for n in components(built)}
    names = names or {}
    kept = {
        sid
        for sid, kind in new.nodes.items()
        if sid in by_sid and (old.nodes.get(sid) == kind or kind in names.get(sid, set()))
    }
    final_ids = {sid: by_sid[sid] for sid in kept}
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
            built_node = built_nodes.get(built_ids.get(sid, ""))
            changed = _apply_config(node, old, new, sid, built_node, entries or {})
            if changed:
                merged.changed[node["id"]] = changed
            nodes.append(node)
            merged.kept.append(node["id"])
        else:
            merged.removed.append(node["id"])
    taken = {facts.node_id(n) for n in nodes if isinstance(n, dict)}  # a removed node's id is free again
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
    node: dict[str, Any],
    old: SpecParts,
    new: SpecParts,
    sid: str,
    built_node: Mapping[str, Any] | None,
    entries: Mapping[str, Mapping[str, object]],
) -> list[str]:
    """Set on ``node`` the config values the edit changed (as lfx's build coerced them).

    A changed field with ``real_time_refresh`` is one whose new value reshapes the node's form
    (the component's ``update_build_config``, which the build ran in the sandbox, as Langflow's UI
    runs it when the value changes): the fields that refresh added -- in the build, and in neither
    the node nor its component's catalogue template (a field today's component has and an old
    export lacks is no refresh's) -- are added too.  The node's other fields stay as they were."""
    changed = []
    refreshed = False
    built_fields = facts.fields(dict(built_node)) if built_node is not None else {}
    for (nsid, fname), text in new.config.items():
        if nsid != sid or old.config.get((sid, fname)) == text or built_node is None:
            continue
        built_field = built_fields.get(fname)
        template = facts.frontend_node(node).setdefault("template", {})
        if not isinstance(built_field, Mapping):
            continue
        own = template.get(fname)
        refreshed = refreshed or bool(built_field.get("real_time_refresh"))
        refreshed = refreshed or (isinstance(own, dict) and bool(own.get("real_time_refresh")))
        if isinstance(own, dict):
            own["value"] = copy.deepcopy(built_field.get("value"))
        else:
            template[fname] = copy.deepcopy(dict(built_field))
        changed.append(fname)
    if refreshed and built_node is not None:
        template = facts.frontend_node(node).setdefault("template", {})
        own_kind = facts.registry_type(built_node)
        defaults = facts.obj(facts.obj(entries.get(own_kind or "")).get("template"))
        for fname, built_field in built_fields.items():
            if fname not in template and fname not in defaults and isinstance(built_field, Mapping):
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
