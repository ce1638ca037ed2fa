"""What lfx executes of a flow, found the way lfx finds it: the gate for what leaves for Langflow.

A flow's node says which code it runs in more places than its own ``template.code``, and lfx
(1.13; Langflow builds flows with it) decides in two steps which text becomes code:

1. **Preparation** (``Graph.add_nodes_and_edges`` -> ``process_flow`` in
   ``lfx/graph/graph/utils.py``).  Code lines exported as a list are joined first
   (``normalize_code_for_import``, top-level fields of type ``code``).  Then each grouped sub-flow
   (Langflow 1.0's ``GroupNode``: ``data.node.flow``) is opened in place by ``ungroup_node``, whose
   ``update_template`` copies every group template field that has a ``proxy`` onto the inner
   node's field it names -- ``code`` included (Langflow 1.0 exports carry ``code_<Node>`` fields),
   and a child field of type ``code`` stays of type ``code``.  Inner groups are opened in turn from
   the same queue.  ``prepare`` does exactly this on a copy (the edges are not redirected: no edge
   decides what code runs), keeping lfx's quirks: a proxied value keeps its ``proxy`` key, a node
   id seen before is not opened again, a group's ``data.id`` (not its node ``id``) is what leaves
   the node list.
2. **Parameters** (``ParameterHandler`` in ``lfx/graph/vertex/param_handler.py``, then
   ``instantiate_class``).  The ``code`` field is the class lfx ``exec``s, whatever its type;
   another field of type ``code`` is ``ast.literal_eval``-ed when that succeeds (a quoted string
   is the code it spells); a ``str`` field has every ``\\n`` turned into a newline
   (``unescape_string``).  ``effective_text`` applies the same.

``executed_fields`` lists, over the prepared flow *and* the flow as sent (a Langflow of another
version that opened groups differently would run those), every field lfx executes: each node's
class code, every field of type ``code``, and the fields lfx's own policy lists as code on its
code-execution components (``CODE_EXECUTION_FIELDS``: Python Function's ``function_code``, the
Python Interpreter's ``python_code`` and ``global_imports``...), on any node whatever its type
says (the type is the sender's to write).  What it cannot judge it refuses (``Unjudged``): a code
field that is not text, a proxy that names no node or no field, groups nested or flows larger
than a bound, a flow lfx could not prepare.

Standard library only, like ``flow.py``; ``tests/flows/test_executed_facts.py`` compares each
mirrored fact with lfx itself.
"""

from __future__ import annotations

import ast
import copy
from collections import deque
from dataclasses import dataclass
from typing import Any

from lfassist_jupyter.artifacts import flow as facts

# lfx/utils/flow_validation.py: built-ins that run Python they are given rather than their class code.
CODE_EXECUTION_COMPONENT_TYPES: frozenset[str] = frozenset(
    {
        "CSVAgent",
        "CodeAct Agent (Smolagents)",
        "CodeActAgentSmolagents",
        "Cuga",
        "LambdaFilterComponent",
        "OpenDsStar Agent",
        "OpenDsStarAgent",
        "Python Code Structured",
        "PythonCodeStructuredTool",
        "Python Function",
        "PythonFunction",
        "PythonFunctionComponent",
        "Python Interpreter",
        "PythonREPLComponent",
        "Python REPL",
        "PythonREPLToolComponent",
        "PythonREPLTool",
        "Smart Transform",
    }
)

CODE_EXECUTION_FIELDS: dict[str, str] = {
    "function_code": "python",  # Python Function: exec'd
    "python_code": "python",  # Python Interpreter / Python REPL tool: exec'd
    "tool_code": "python",  # Python Code Structured tool: exec'd
    "global_imports": "imports",  # the modules put into the Python Interpreter's namespace
    "filter_instruction": "runtime",  # Smart Transform: text for a model, whose answer lfx evals
    "allow_dangerous_code": "runtime",  # CSV agent: a switch letting its model's Python run
}
"""lfx's ``CODE_EXECUTION_FIELD_NAMES``, each with how it is judged: ``python`` is code (scanned
as generated code is), ``imports`` a comma-separated module list (each module judged as an
``import`` of it), ``runtime`` text that only makes a model write code while the flow runs --
nothing in the flow to judge, so it is left to Langflow's own settings (see docs/security.md, "Known limits")."""

MAX_GROUP_DEPTH = 8
"""Groups nested deeper are refused: Langflow's canvas nests two or three, and lfx re-opens every
inner flow once per enclosing group (``process_flow`` recurses into each before opening it), so
the work doubles with each level."""
MAX_NODES = 5_000
"""Nodes in a flow, groups' inner nodes included."""
MAX_FIELD_CHARS = 1_000_000
"""One code field (as ``MAX_CODE_CHARS`` for a component)."""
MAX_TOTAL_CHARS = 8_000_000
"""All the code a flow carries."""


class Unjudged(ValueError):
    """The flow's code cannot be judged as lfx will run it; the message is one line saying why."""


@dataclass(frozen=True)
class ExecutedField:
    """One text lfx executes when it builds the flow."""

    node: str
    """The node's name (``node_name``)."""
    node_id: str
    field: str
    kind: str
    """``class`` (the node's component code), ``python`` (code it runs), ``imports`` (modules)."""
    text: str
    """What lfx executes: the value after lfx's own preparation and parameter handling."""
    via: str = ""
    """Where the text came from when a group's proxy put it there (``Group.code_ChatOutput-x``)."""
    node_type: str = ""
    """The node's type as the flow says it (the sender's to write: identity is never taken from it
    alone)."""

    @property
    def where(self) -> str:
        return f"{self.node}.{self.field}" + (f" (set by {self.via})" if self.via else "")


# -- step 1: lfx's preparation ------------------------------------------------------------------


def prepare(flow: Any) -> dict[str, Any]:
    """The flow's graph (``nodes``, ``edges``) as lfx's ``process_flow`` leaves it: a copy, every
    group opened and its proxied fields applied.  ``Unjudged`` when it is beyond the bounds or lfx
    could not prepare it."""
    prepared, _ = _prepare(flow)
    return prepared


def _prepare(flow: Any) -> tuple[dict[str, Any], dict[int, str]]:
    graph = facts.graph(flow)
    _check_bounds(graph)
    if not _needs_preparing(graph):  # no group, no code as lines: lfx changes nothing
        return graph, {}
    normalized = copy.deepcopy(graph)
    for node in facts.nodes(normalized):  # normalize_code_for_import: top-level type-code fields
        for name, field in facts.fields(node).items():
            if isinstance(field, dict) and field.get("type") == "code" and isinstance(field.get("value"), list):
                if not all(isinstance(line, str) for line in field["value"]):
                    raise Unjudged(f"{facts.node_name(node)}.{name} holds code lines that are not all text")
                field["value"] = "\n".join(field["value"])
    via: dict[int, str] = {}
    try:
        return _process_flow(normalized, via), via
    except Unjudged:
        raise
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise Unjudged(f"lfx could not open its groups ({type(exc).__name__}: {str(exc)[:120]})") from None


def _needs_preparing(graph: dict[str, Any]) -> bool:
    for node in facts.nodes(graph):
        if facts.frontend_node(node).get("flow"):
            return True
        if any(isinstance(f, dict) and isinstance(f.get("value"), list) for f in facts.fields(node).values()):
            return True
    return False


def _check_bounds(graph: dict[str, Any]) -> None:
    """Nodes, nesting and code size within bounds (a loop: the nesting is the sender's choice)."""
    count, chars = 0, 0
    todo: list[tuple[dict[str, Any], int]] = [(graph, 0)]
    while todo:
        inner, depth = todo.pop()
        if depth > MAX_GROUP_DEPTH:
            raise Unjudged(f"its groups nest more than {MAX_GROUP_DEPTH} deep")
        for node in facts.nodes(inner):
            count += 1
            for field in facts.fields(node).values():
                value = field.get("value") if isinstance(field, dict) else None
                lines = value if isinstance(value, list) else [value]
                chars += sum(len(line) for line in lines if isinstance(line, str))
            sub = facts.frontend_node(node).get("flow")
            if isinstance(sub, dict):
                todo.append((facts.graph(sub), depth + 1))
        if count > MAX_NODES:
            raise Unjudged(f"it has more than {MAX_NODES:,} nodes")
        if chars > MAX_TOTAL_CHARS:
            raise Unjudged(f"it carries more than {MAX_TOTAL_CHARS // 1_000_000} MB of field values")


def _process_flow(flow_object: dict[str, Any], via: dict[int, str]) -> dict[str, Any]:
    """lfx's ``process_flow``, on ``flow_object`` itself (the caller copied it).  lfx also calls
    itself on each group's inner flow first and drops the result (it works on a copy): that opens
    nothing the queue below does not open again, so it is not repeated here."""
    processed: set[Any] = set()
    queue = deque(flow_object["nodes"])
    while queue:
        node = queue.popleft()
        node_id = node.get("id")
        if node_id in processed:
            continue
        if node.get("data") and node["data"].get("node") and node["data"]["node"].get("flow"):
            queue.extend(_ungroup_node(node["data"], flow_object, via))
        processed.add(node_id)
    return flow_object


def _ungroup_node(group_node_data: dict[str, Any], base_flow: dict[str, Any], via: dict[int, str]) -> list[Any]:
    """lfx's ``ungroup_node`` (the edges are kept, not redirected); answers all of the base's
    nodes, as lfx's does."""
    template, flow = group_node_data["node"]["template"], group_node_data["node"]["flow"]
    frozen = group_node_data["node"].get("frozen", False)
    parent_node_id = group_node_data["id"]
    g_nodes = flow["data"]["nodes"]
    for node in g_nodes:
        node["parent_node_id"] = parent_node_id
    for node in g_nodes:
        node["data"]["node"]["frozen"] = frozen
    g_edges = flow["data"]["edges"]
    name = facts.one_line(group_node_data.get("node", {}).get("display_name"), 60)
    apply_proxies(template, g_nodes, strict=True, via=via, group=name, own_id=parent_node_id)
    nodes = [n for n in base_flow["nodes"] if n["id"] != parent_node_id] + g_nodes
    edges = [e for e in base_flow["edges"] if parent_node_id not in (e["target"], e["source"])] + g_edges
    base_flow["nodes"] = nodes
    base_flow["edges"] = edges
    return nodes


def apply_proxies(
    template: dict[str, Any],
    g_nodes: list[Any],
    *,
    strict: bool,
    via: dict[int, str] | None = None,
    group: str = "",
    own_id: Any = None,
) -> None:
    """lfx's ``update_template``: copy each group field that has a ``proxy`` onto the inner node's
    field it names -- the group's field (its ``proxy`` kept), typed ``code`` when the child field
    is, with the child's ``show``, ``advanced`` and display name.

    ``strict`` (the gate): a malformed proxy raises as lfx's code would, and a proxy naming no
    inner node is ``Unjudged`` -- lfx skips it, another lfx could resolve it -- except one naming
    the group itself (``own_id``), which lfx's own kept ``proxy`` key makes of an enclosing
    group's value in a group of a group, and which lfx skips by design.  Otherwise (the wiring
    checks of ``flows/groups.py``) whatever does not fit is skipped."""
    for name, value in template.items():
        if not strict and not isinstance(value, dict):
            continue
        if not value.get("proxy"):
            continue
        proxy_dict = value["proxy"]
        if not strict and not (isinstance(proxy_dict, dict) and "field" in proxy_dict and "id" in proxy_dict):
            continue
        field, id_ = proxy_dict["field"], proxy_dict["id"]
        node_index = next((i for i, n in enumerate(g_nodes) if n["id"] == id_), -1)
        child_template = g_nodes[node_index]["data"]["node"]["template"] if node_index != -1 else {}
        if node_index == -1 or field not in child_template:
            if not strict or (node_index == -1 and id_ == own_id):
                continue
            what = f"names node {id_!r}, not in it" if node_index == -1 else f"names no field of {id_!r}"
            raise Unjudged(f"group {group or '?'}'s field {facts.one_line(name, 80)} {what}")
        child_field = child_template[field]
        if not strict and not isinstance(child_field, dict):
            continue
        if strict:  # lfx reads them unguarded (a KeyError stops its build)
            kept = {"show": child_field["show"], "advanced": child_field["advanced"]}
            display_name = child_field["display_name"] if "display_name" in child_field else child_field["name"]
        else:
            kept = {k: child_field[k] for k in ("show", "advanced") if k in child_field}
            display_name = child_field.get("display_name", child_field.get("name"))
        child_template[field] = {**value, "type": "code"} if child_field.get("type") == "code" else value
        child_template[field].update(kept)
        child_template[field]["display_name"] = display_name
        if via is not None:
            via.setdefault(id(child_template[field]), via.get(id(value), f"{group or 'a group'}.{name}"))


# -- step 2: what each field hands the component ------------------------------------------------


def effective_text(name: str, field: dict[str, Any]) -> str | None:
    """The text lfx executes for field ``name`` (None: nothing), as ``ParameterHandler`` hands it
    over: a ``code``-typed field other than ``code`` through ``ast.literal_eval`` when that
    succeeds, a ``str`` field with ``\\n`` unescaped; lines (a list of text) joined.  ``Unjudged``
    when the value is not text."""
    value = field.get("value")
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        value = "\n".join(value)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Unjudged(f"its field {name} holds a {type(value).__name__}, not text")
    if len(value) > MAX_FIELD_CHARS:
        raise Unjudged(f"its field {name} holds {len(value):,} characters (at most {MAX_FIELD_CHARS:,})")
    kind = field.get("type")
    if kind == "code" and name != "code":
        try:
            literal = ast.literal_eval(value)
        except Exception:  # lfx: the text itself, when it is not a literal
            return value
        if literal is None or literal == "":
            return None
        if not isinstance(literal, str):
            raise Unjudged(f"its field {name} evaluates to a {type(literal).__name__}, not code")
        return literal
    if kind == "str":
        return value.replace("\\n", "\n")
    return value


def field_kind(name: str, field: Any) -> str | None:
    """How lfx uses a field's text: ``class``, ``python``, ``imports`` (``CODE_EXECUTION_FIELDS``),
    or None (data, or text only a model reads)."""
    if name == "code":
        return "class"
    kind = CODE_EXECUTION_FIELDS.get(name)
    if kind in ("python", "imports"):
        return kind
    if isinstance(field, dict) and field.get("type") == "code":
        return "python"
    return None


def executed_fields(flow: Any) -> list[ExecutedField]:
    """Every text lfx executes when it builds ``flow``: over the prepared flow (groups opened,
    proxies applied) and over every node as sent (groups' inner nodes too), each once.
    ``Unjudged`` when one cannot be judged."""
    prepared, via = _prepare(flow)
    found: dict[tuple[str, str, str], ExecutedField] = {}
    for nodes, proxied in ((facts.components(prepared), True), (facts.built_nodes(flow), False)):
        for node in nodes:
            if not facts.is_component(node):
                continue
            for name, field in facts.fields(node).items():
                kind = field_kind(name, field)
                if kind is None:
                    continue
                if not isinstance(field, dict):
                    raise Unjudged(f"{facts.node_name(node)}.{name} is a {type(field).__name__}, not a field")
                try:
                    text = effective_text(name, field)
                except Unjudged as exc:
                    raise Unjudged(f"{facts.node_name(node)}: {exc}") from None
                if text is None:
                    continue
                key = (facts.node_id(node), name, text)
                if key not in found:
                    origin = via.get(id(field), "") if proxied else ""
                    found[key] = ExecutedField(
                        facts.node_name(node), facts.node_id(node), name, kind, text, origin, facts.node_type(node)
                    )
    return list(found.values())
