"""Facts about a Langflow flow as JSON: its shape, how to walk it, and the lfx rules it obeys.

One module, standard library only, read by two interpreters:

- the kernel (``flows/``, ``core/``, ``langflow/``, ``ui/``), which handles a flow as text and
  JSON and never imports lfx;
- the sandbox's worker, which builds flows with lfx and applies the same repairs. It does not
  import ``lfassist_jupyter`` (its interpreter may not have it): the parent binds this file
  read-only into the sandbox next to the worker's directory and the zygote loads it as the
  worker package's module ``_lfassist_worker.flow`` (``sandbox/_isolation.py``, ``bound_modules``).
  So nothing here imports anything but the standard library.

What is here:

- **Shape** (``shape_problem``): the one check where flow JSON enters (a file, a Langflow
  server's answer, a session file, a dict given to a public function). A flow that passes it
  can be walked by the accessors below without a ``KeyError`` or a ``TypeError``; one that
  does not gets one line naming the field (``data.nodes[2].data.node.template is a list,
  expected an object``).
- **Navigation**: ``nodes``, ``components``, ``edges``, ``node_id``, ``node_type``,
  ``frontend_node`` (``node["data"]["node"]``, Langflow's name for it), ``fields`` (its
  ``template``), ``outputs``, ``group_flow`` (a grouped sub-flow's inner flow), ``node_name`` (the
  one rule for what a node is called), the edge's ``handles`` (``set_handle`` writes one) and
  ``ports``, ``parse_handle``. Every accessor is total: on a malformed
  flow it answers empty rather than raising, so a view never breaks on one.
- **lfx's rules, mirrored** (each names its lfx 1.13 source; ``tests/flows/test_flow_facts.py``
  compares each with lfx itself over lfx's component catalogue and the edges of Langflow's
  starter projects, so a change in lfx fails a test): type migrations and compatibility, the
  conversion hint, the handle encoding and the edge lfx's ``add_connection`` writes, a loop
  port's accepted types, an edge's target port and loop shape, how a spec value is read.
- **Names, key fields and repairs** shared by the kernel's ``repair_flow`` and the worker's
  build: component-name resolution, which field may read a variable, unquoting, value
  coercion, port renaming.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

# -- shape ------------------------------------------------------------------------------------

_MISSING = object()

MAX_DEPTH = 200
"""How deep a flow's JSON may nest.  Langflow's flows nest a few dozen levels (a group in a group
adds about ten); JSON nested near Python's recursion limit parses, then makes every copy of the
flow (a save, a session, an edit) fail with a RecursionError, so it is refused where it enters."""


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects deeper than ``limit`` (a loop, no recursion)."""
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            todo.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False


def _kind(value: Any) -> str:
    """A JSON value's type, as a sentence says it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _key(name: str) -> str:
    """A key or id from the file as the line may show it: plain names as they are, anything else
    (a newline, a control character, 80 characters of noise) quoted and cut."""
    return name if re.fullmatch(r"[\w.-]{1,80}", name) else repr(name[:80])


class _Bad(Exception):
    """The first shape problem found (its text is the line the user sees)."""


def _expect(value: Any, where: str, kind: type | tuple[type, ...], wanted: str, *, required: bool = False) -> None:
    """``value`` (at ``where``) is of ``kind``; missing is fine unless ``required``."""
    if value is _MISSING:
        if required:
            raise _Bad(f"{where} is missing (expected {wanted})")
        return
    if not isinstance(value, kind):  # the kinds asked for are never int, so a boolean never passes as one
        raise _Bad(f"{where} is {_kind(value)}, expected {wanted}")


def _strings(value: Any, where: str) -> None:
    """A list of type names (or null)."""
    if value is _MISSING or value is None:
        return
    _expect(value, where, list, "a list of type names")
    for i, item in enumerate(value):
        _expect(item, f"{where}[{i}]", str, "a type name (a string)")


def _check_node(node: Any, where: str) -> None:
    _expect(node, where, dict, "an object (a node)")
    nid = node.get("id", _MISSING)
    _expect(nid, f"{where}.id", str, "a string", required=True)
    if isinstance(nid, str) and nid:
        where = f"{where} ({nid[:80]!r})"  # repr: a newline in an id stays on the one line
    _expect(node.get("type", _MISSING), f"{where}.type", str, "a string ('genericNode' or 'noteNode')")
    data = node.get("data", _MISSING)
    _expect(data, f"{where}.data", dict, "an object", required=True)
    _expect(data.get("type", _MISSING), f"{where}.data.type", (str, type(None)), "a component type (a string)")
    is_component = node.get("type", "genericNode") == "genericNode"
    front = data.get("node", _MISSING)
    _expect(front, f"{where}.data.node", dict, "an object (the component)", required=is_component)
    if front is _MISSING:
        return
    _expect(front.get("display_name", _MISSING), f"{where}.data.node.display_name", (str, type(None)), "a string")
    template = front.get("template", _MISSING)
    _expect(template, f"{where}.data.node.template", dict, "an object (the fields)")
    for name, field in (template if isinstance(template, dict) else {}).items():
        if isinstance(field, dict):
            at = f"{where}.data.node.template.{_key(name)}"
            _strings(field.get("input_types", _MISSING), f"{at}.input_types")
            _expect(field.get("type", _MISSING), f"{at}.type", (str, type(None)), "a string")
    _expect(front.get("custom_fields", _MISSING), f"{where}.data.node.custom_fields", (dict, type(None)), "an object")
    outs = front.get("outputs", _MISSING)
    _expect(outs, f"{where}.data.node.outputs", (list, type(None)), "a list of outputs")
    for i, out in enumerate(outs if isinstance(outs, list) else []):
        at = f"{where}.data.node.outputs[{i}]"
        _expect(out, at, dict, "an object (an output)")
        _expect(out.get("name", _MISSING), f"{at}.name", str, "a string")
        _strings(out.get("types", _MISSING), f"{at}.types")
        _strings(out.get("loop_types", _MISSING), f"{at}.loop_types")
        _expect(out.get("selected", _MISSING), f"{at}.selected", (str, type(None)), "a type name (a string)")


def _check_handle(handle: Any, where: str) -> None:
    _expect(handle, where, dict, "an object (a handle)")
    for key in ("id", "name", "fieldName"):
        _expect(handle.get(key, _MISSING), f"{where}.{key}", str, "a string")
    for key in ("dataType", "type"):
        _expect(handle.get(key, _MISSING), f"{where}.{key}", (str, type(None)), "a string")
    for key in ("output_types", "inputTypes"):
        _strings(handle.get(key, _MISSING), f"{where}.{key}")


def _check_edge(edge: Any, where: str) -> None:
    _expect(edge, where, dict, "an object (an edge)")
    for key in ("source", "target"):
        _expect(edge.get(key, _MISSING), f"{where}.{key}", str, "a node id (a string)", required=True)
    _expect(edge.get("id", _MISSING), f"{where}.id", str, "a string")
    for key in ("sourceHandle", "targetHandle"):  # Langflow's encoded copy of the handle (``handle_json``)
        _expect(edge.get(key, _MISSING), f"{where}.{key}", (str, type(None)), "a string (an encoded handle)")
    data = edge.get("data", _MISSING)
    _expect(data, f"{where}.data", dict, "an object")
    if isinstance(data, dict):
        for key in ("sourceHandle", "targetHandle"):
            if key in data:
                _check_handle(data[key], f"{where}.data.{key}")


def shape_problem(flow: Any) -> str | None:
    """What keeps ``flow`` from being Langflow flow JSON, as one line naming the field; None if nothing.

    Checked: the document and its ``data`` are objects with ``nodes`` and ``edges`` lists (a
    bare ``{"nodes", "edges"}`` graph is accepted too); every node an object with a string
    ``id`` and an object ``data`` (``data.node``, ``template``, ``outputs`` of the right kinds,
    type names as strings); every edge an object naming its ``source`` and ``target`` by id,
    with object handles whose ports and types are strings. Only kinds are checked, never
    values: whether the wiring makes sense is ``validate_flow``'s question.
    """
    try:
        _expect(flow, "the JSON", dict, "an object with data.nodes and data.edges")
        if _too_deep(flow):
            raise _Bad(f"the JSON nests deeper than {MAX_DEPTH} levels, which no Langflow flow does")
        for key in ("name", "description"):
            _expect(flow.get(key, _MISSING), key, (str, type(None)), "a string")
        prefix, graph_ = "", flow  # a bare {"nodes", "edges"} graph
        if "data" in flow or "nodes" not in flow:
            prefix, graph_ = "data.", flow.get("data", _MISSING)
            if graph_ is _MISSING:
                raise _Bad("data.nodes is missing (expected a list of nodes in data)")
            _expect(graph_, "data", dict, "an object with nodes and edges")
        node_list, edge_list = graph_.get("nodes", _MISSING), graph_.get("edges", _MISSING)
        _expect(node_list, f"{prefix}nodes", list, "a list of nodes", required=True)
        _expect(edge_list, f"{prefix}edges", list, "a list of edges", required=True)
        for i, node in enumerate(node_list):
            _check_node(node, f"{prefix}nodes[{i}]")
        for i, edge in enumerate(edge_list):
            _check_edge(edge, f"{prefix}edges[{i}]")
    except _Bad as bad:
        return str(bad)
    return None


# -- navigation -------------------------------------------------------------------------------


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object (a dict), else an empty one: a step into untrusted JSON
    that needs no check of its own (``obj(obj(node.get("data")).get("node"))``)."""
    return _obj(value)


def graph(flow: Any) -> dict[str, Any]:
    """The part holding ``nodes`` and ``edges``: ``flow["data"]``, or the flow itself when bare."""
    flow = _obj(flow)
    return _obj(flow["data"]) if "data" in flow else flow


def nodes(flow: Any) -> list[dict[str, Any]]:
    """Every node, components and notes (a new list; the nodes are the flow's own)."""
    found = graph(flow).get("nodes")
    return [n for n in found if isinstance(n, dict)] if isinstance(found, list) else []


def is_component(node: dict[str, Any]) -> bool:
    """A component, not a canvas note: lfx skips only ``type == "noteNode"`` and builds every other
    node from its code (``Graph._build_vertices``), whatever its ``type`` says."""
    return node.get("type", "genericNode") != "noteNode"


def components(flow: Any) -> list[dict[str, Any]]:
    """The nodes that are components (notes left out)."""
    return [n for n in nodes(flow) if is_component(n)]


def edges(flow: Any) -> list[dict[str, Any]]:
    """Every edge (a new list: add one with ``add_edge``)."""
    found = graph(flow).get("edges")
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def add_edge(flow: dict[str, Any], edge: dict[str, Any]) -> None:
    """Append ``edge`` to the flow's own edge list (``edges`` answers a copy)."""
    graph(flow).setdefault("edges", []).append(edge)


def built_nodes(flow: Any) -> list[dict[str, Any]]:
    """Every node whose code lfx runs when it builds ``flow``: each component (any type but
    ``noteNode``) and, in every node that carries a grouped sub-flow, that flow's nodes in turn
    (lfx's ``process_flow`` opens a ``data.node.flow`` whatever the node's type). What leaves for
    Langflow is judged on this list, not on the top-level components only."""
    found: list[dict[str, Any]] = []
    todo = nodes(flow)
    while todo:  # a loop, not recursion: nesting depth is the sender's choice
        node = todo.pop()
        if is_component(node):
            found.append(node)
        inner = frontend_node(node).get("flow")
        if isinstance(inner, dict):
            todo.extend(nodes(inner))
    return found


def node_id(node: Mapping[str, Any]) -> str:
    return str(node.get("id"))


def by_id(node_list: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Nodes by id (the last of a duplicated id wins, as in Langflow)."""
    return {str(n["id"]): n for n in node_list if isinstance(n.get("id"), str) and n["id"]}


def node_type(node: Mapping[str, Any]) -> str | None:
    """The component type (``data.type``): a catalogue name, or ``CustomComponent``."""
    kind = _obj(node.get("data")).get("type")
    return kind if isinstance(kind, str) else None


def registry_type(node: Mapping[str, Any]) -> str | None:
    """The catalogue name the node was made from: lfx's builder records it as
    ``data._flow_builder_registry_type`` (a custom node's ``data.type`` is ``CustomComponent``)."""
    data = _obj(node.get("data"))
    recorded = data.get("_flow_builder_registry_type")
    return recorded if isinstance(recorded, str) and recorded else node_type(node)


def frontend_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """``node["data"]["node"]``: the component as the node carries it (display name, fields, outputs)."""
    return _obj(_obj(node.get("data")).get("node"))


def fields(node: Mapping[str, Any]) -> dict[str, Any]:
    """The node's template fields by name (values may be non-objects such as ``_type``)."""
    return _obj(frontend_node(node).get("template"))


def outputs(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = frontend_node(node).get("outputs")
    return [o for o in found if isinstance(o, dict)] if isinstance(found, list) else []


def group_flow(node: dict[str, Any]) -> dict[str, Any] | None:
    """The inner flow a grouped sub-flow carries (Langflow 1.0's ``GroupNode``: ``data.node.flow``,
    holding ``data.nodes`` and ``data.edges``); None when the node is not a group."""
    inner = frontend_node(node).get("flow")
    return inner if isinstance(inner, dict) and isinstance(graph(inner).get("nodes"), list) else None


NAME_LIMIT = 120


def one_line(text: object, limit: int) -> str:
    """``text`` as one line of at most ``limit`` characters: line breaks and tabs become spaces,
    other control and format characters (NUL, escape sequences, bidi overrides, zero-width
    joiners) go, runs of spaces collapse, and a cut ends with "…".  For text that comes from
    elsewhere (a server's flow names, a flow file's node names) and goes where a newline would
    start a line of its own (an error line, a run plan, a prompt)."""
    raw = "" if text is None else str(text)
    kept = "".join(" " if ch.isspace() else ch for ch in raw if ch.isspace() or unicodedata.category(ch)[0] != "C")
    flat = " ".join(kept.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def node_name(node: dict[str, Any]) -> str:
    """What a node is called wherever we name it: its display name, else its type, else its id,
    as one line (``one_line``): the name comes from whoever wrote the flow file."""
    return one_line(frontend_node(node).get("display_name") or node_type(node) or node.get("id"), NAME_LIMIT)


def parse_handle(text: Any) -> dict[str, Any] | None:
    """An encoded handle (``{œnameœ:œmessageœ,...}``) as its object: Langflow's frontend
    ``scapeJSONParse`` (quotes written as ``œ``); None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text.replace("\u0153", '"'))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def handles(edge: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An edge's source and target handles: ``data.sourceHandle``/``data.targetHandle``, else
    the encoded copies on the edge itself (older files), else empty."""
    data = _obj(edge.get("data"))
    pair = []
    for key in ("sourceHandle", "targetHandle"):
        handle = data.get(key)
        pair.append(handle if isinstance(handle, dict) else parse_handle(edge.get(key)) or {})
    return pair[0], pair[1]


def set_handle(edge: dict[str, Any], key: str, handle: dict[str, Any]) -> None:
    """Write ``handle`` as the edge's ``data.sourceHandle`` or ``data.targetHandle`` (``key``), the
    copy ``handles`` reads first (``data`` is made when the edge has none)."""
    data = edge.get("data")
    if not isinstance(data, dict):
        data = edge["data"] = {}
    data[key] = handle


def target_port(target_handle: dict[str, Any]) -> Any:
    """lfx/graph/flow_builder/connect.py ``add_connection`` (its duplicate check): the port an edge
    fills is the target handle's ``fieldName``, or ``name`` for a loop's feedback edge."""
    return target_handle.get("fieldName") or target_handle.get("name")


def is_loop_target(target_handle: dict[str, Any]) -> bool:
    """lfx/graph/edge/base.py ``Edge.__init__``: a target handle with a ``name`` is output-shaped,
    the feedback edge into a loop's ``allows_loop`` output."""
    return "name" in target_handle


def ports(edge: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    """``(source id, output, target id, input)`` of an edge, as its handles name them."""
    sh, th = handles(edge)
    return edge.get("source"), sh.get("name"), edge.get("target"), target_port(th)


# -- lfx's rules, mirrored ------------------------------------------------------------------

# lfx/graph/edge/base.py: TYPE_MIGRATIONS
TYPE_MIGRATIONS: dict[str, str] = {"Data": "JSON", "DataFrame": "Table"}


def types_compatible(output_types: list[str], input_types: list[str]) -> bool:
    """lfx/graph/edge/base.py ``types_compatible``: an output fits an input when any type
    matches, directly or through a migration (Data <-> JSON, DataFrame <-> Table)."""
    for out in output_types:
        migrated_out = TYPE_MIGRATIONS.get(out, out)
        for inp in input_types:
            migrated_in = TYPE_MIGRATIONS.get(inp, inp)
            if inp in {out, migrated_out} or migrated_in in {out, migrated_out}:
                return True
    return False


_DATA_LIKE = frozenset({"Data", "JSON", "DataFrame", "Table"})


def conversion_hint(
    source: str, output: str, source_types: list[str], target: str, port: str, target_types: list[str]
) -> str:
    """lfx/graph/flow_builder/connect.py ``_conversion_hint``: the converter edge that fixes the
    two common Data <-> Message mismatches ("" for any other)."""
    src, tgt = set(source_types or []), set(target_types or [])
    if "Message" in tgt and src & _DATA_LIKE:
        return (
            f" Fix: insert a ParserComponent between them \u2014 {source}.{output} -> ParserComponent.input_data, "
            f"ParserComponent.parsed_text -> {target}.{port}."
        )
    if "Message" in src and tgt & _DATA_LIKE:
        converter = "data_output" if tgt & {"Data", "JSON"} else "dataframe_output"
        return (
            f" Fix: insert a TypeConverterComponent between them \u2014 {source}.{output} -> "
            f"TypeConverterComponent.input_data, TypeConverterComponent.{converter} -> {target}.{port}."
        )
    return ""


def _stringify(obj: Any) -> str:
    """lfx/graph/flow_builder/connect.py ``_custom_stringify`` (Langflow's frontend customStringify)."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, (int, float)):
        return str(obj)
    if isinstance(obj, str):
        return json.dumps(obj)
    if isinstance(obj, list):
        return "[" + ",".join(_stringify(item) for item in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ",".join(f'"{k}":{_stringify(obj[k])}' for k in sorted(obj)) + "}"
    return str(obj)


def handle_json(obj: Any) -> str:
    """lfx/graph/flow_builder/connect.py ``_scaped_json_stringify``: an edge handle as Langflow
    writes it in ``sourceHandle``/``targetHandle`` (sorted keys, compact, quotes as ``œ``)."""
    return _stringify(obj).replace('"', "\u0153")


def loop_port(node: dict[str, Any], port: str | None = None) -> tuple[str, list[str]] | None:
    """lfx/graph/flow_builder/connect.py ``_resolve_loop_target``: a Loop-like node's feedback
    handle (its ``allows_loop`` output, the one named ``port`` if given) and the types it
    accepts, ``[selected or types[0], *loop_types]`` as Langflow's canvas reads them. ``node``
    is a frontend node (``data.node``)."""
    for out in node.get("outputs") or []:
        if isinstance(out, dict) and out.get("allows_loop") and (port is None or out.get("name") == port):
            types = out.get("types") or []
            selected = out.get("selected") or (types[0] if types else "Message")
            return str(out.get("name")), [str(t) for t in [selected, *(out.get("loop_types") or [])]]
    return None


def new_edge(source: dict[str, Any], output: str, target: dict[str, Any], port: str) -> dict[str, Any]:
    """lfx/graph/flow_builder/connect.py ``add_connection``: the edge it writes from ``source``'s
    ``output`` to ``target``'s ``port`` (handles, their encoded copies and the edge id), with the
    types read from the nodes as ``_resolve_output_types``/``_resolve_input_types`` read them and
    an output-shaped target handle for a loop's feedback port (``_resolve_loop_target``).

    Only the keys that carry meaning: lfx adds canvas flags (``animated``, ``selected``...)."""
    src_id, tgt_id = node_id(source), node_id(target)
    out = next((o for o in outputs(source) if o.get("name") == output), {})
    sh = {
        "dataType": node_type(source) or (src_id.rsplit("-", 1)[0] if "-" in src_id else src_id),
        "id": src_id,
        "name": output,
        "output_types": copy.deepcopy(out.get("types", ["Message"])),
    }
    field = fields(target).get(port, {})
    loop = None if isinstance(field, dict) and field else loop_port(frontend_node(target), port)
    if loop is not None:
        th: dict[str, Any] = {
            "dataType": node_type(target) or (tgt_id.rsplit("-", 1)[0] if "-" in tgt_id else ""),
            "id": tgt_id,
            "name": port,
            "output_types": loop[1],
        }
    else:
        field = _obj(field)
        th = {
            "fieldName": port,
            "id": tgt_id,
            "inputTypes": copy.deepcopy(field.get("input_types", ["Message"])),
            "type": field.get("type", "str"),
        }
    s_json, t_json = handle_json(sh), handle_json(th)
    return {
        "source": src_id,
        "target": tgt_id,
        "sourceHandle": s_json,
        "targetHandle": t_json,
        "data": {"sourceHandle": sh, "targetHandle": th},
        "id": f"reactflow__edge-{src_id}{s_json}-{tgt_id}{t_json}",
    }


def rewire(edge: dict[str, Any], source: dict[str, Any], output: str, target: dict[str, Any], port: str) -> None:
    """Point ``edge`` (in place) from ``source``'s ``output`` to ``target``'s ``port``, with the
    handles and id ``new_edge`` writes; the edge's other keys (canvas flags) stay."""
    new = new_edge(source, output, target, port)
    data = edge.get("data")
    edge["data"] = {**(data if isinstance(data, dict) else {}), **new.pop("data")}
    edge.update(new)


def spec_scalar(text: str) -> Any:
    """lfx/graph/flow_builder/spec.py ``_coerce_value``: how lfx reads an unquoted spec value."""
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low in ("null", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# -- key fields -------------------------------------------------------------------------------

VARIABLE_REF = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
"""A key field's value that names a variable (``MY_SERVICE_KEY``) rather than being the key."""


def is_key_field(field: dict[str, Any]) -> bool:
    """A password field (``SecretStrInput``): the only kind of field that may read a variable."""
    return field.get("password") is True or field.get("_input_type") == "SecretStrInput"


def name_variable(field: dict[str, Any]) -> None:
    """A key field holding an UPPER_SNAKE name reads that variable: ``load_from_db``, as a
    Langflow global variable is read (lfx's ``configure_component`` writes every value as a
    literal).  So ``M.api_key: MY_SERVICE_KEY`` means the variable in Langflow too, never a key
    that reads "MY_SERVICE_KEY"."""
    value = field.get("value")
    if is_key_field(field) and isinstance(value, str) and VARIABLE_REF.match(value.strip()):
        field["load_from_db"] = True


# -- ports of a component ---------------------------------------------------------------------


def input_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    """The inputs an edge can fill and the types each takes (``node`` is a frontend node)."""
    return {
        k: list(v.get("input_types") or [])
        for k, v in _obj(node.get("template")).items()
        if isinstance(v, dict) and v.get("input_types") and v.get("show", True)
    }


def output_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    """The outputs and the types each gives (``node`` is a frontend node)."""
    return {str(o.get("name")): list(o.get("types") or []) for o in node.get("outputs") or [] if isinstance(o, dict)}


# -- component names --------------------------------------------------------------------------


def norm(name: str) -> str:
    """Case, spaces, underscores and a trailing 'Component' do not distinguish two names."""
    n = re.sub(r"[\s_\-]", "", name).lower()
    return n.removesuffix("component") or n


def resolve(name: str, registry: dict[str, Any]) -> str | None:
    """The registry name meant by ``name``: exact, case-insensitive, display name, or a near miss."""
    name = (name or "").strip().strip("`'\"*")
    if not name:
        return None
    if name in registry:
        return name
    by_norm: dict[str, str] = {}
    for key, entry in registry.items():
        by_norm.setdefault(norm(key), key)
        if isinstance(entry, dict):
            by_norm.setdefault(norm(str(entry.get("display_name") or "")), key)
    if norm(name) in by_norm:
        return by_norm[norm(name)]
    close = difflib.get_close_matches(norm(name), list(by_norm), n=1, cutoff=0.8)
    return by_norm[close[0]] if close else None


# -- deterministic repairs (shared by the kernel's repair_flow and the worker's build) --------

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def unquote(value: Any) -> tuple[Any, bool]:
    """`" -- "` -> ` -- `: matching quotes around a whole value delimit a literal string."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            try:
                return json.loads(value), True  # honours \n, \" ... as a model would mean them
            except json.JSONDecodeError:
                pass
        return inner, True
    return value, False


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
            return copy.deepcopy(match[:1])
    if isinstance(value, str) and value.strip()[:1] in "[{" and kind not in ("str", "prompt", "mustache", "code"):
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


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


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


def fix_edge_ports(
    source: dict[str, Any], output: str, target: dict[str, Any], input_name: str
) -> tuple[str, str, list[dict[str, Any]]]:
    """Rename an edge's unknown output or input when the types leave one port that fits.

    ``source`` and ``target`` are frontend nodes (``frontend_node(node)``); the changes are
    plain dicts (``kind``, ``field``, ``before``, ``after``, ``message``).
    """
    changes: list[dict[str, Any]] = []
    outs, inputs = output_ports(source), input_ports(target)
    loop_inputs = {o.get("name") for o in source.get("outputs") or [] if isinstance(o, dict) and o.get("allows_loop")}
    target_is_loop = input_name in {
        o.get("name") for o in target.get("outputs") or [] if isinstance(o, dict) and o.get("allows_loop")
    }
    if output not in outs:
        wanted = inputs.get(input_name)
        fits = [n for n, t in outs.items() if wanted is None or types_compatible(t, wanted)]
        fits = [n for n in fits if n not in loop_inputs or wanted is not None]
        chosen = _pick(output, fits)
        if chosen:
            changes.append(
                {"kind": "port", "field": "output", "before": output, "after": chosen, "message": "output renamed"}
            )
            output = chosen
    if input_name not in _obj(target.get("template")) and not target_is_loop:
        produced = outs.get(output)
        fits = [n for n, t in inputs.items() if produced is None or types_compatible(produced, t)]
        chosen = _pick(input_name, fits)
        if chosen:
            changes.append(
                {"kind": "port", "field": "input", "before": input_name, "after": chosen, "message": "input renamed"}
            )
            input_name = chosen
    return output, input_name, changes
