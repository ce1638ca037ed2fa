"""The lfx facts ``artifacts/executed.py`` mirrors (what lfx executes of a flow), compared with lfx.

The outgoing gate judges a flow as lfx will build it without importing lfx (the kernel never
does), so it mirrors three things, each compared here with lfx itself (imported in this test
process only, as ``test_flow_facts.py`` does): lfx's lists of code-execution components and
fields; ``process_flow`` (groups opened, proxied fields applied) over the grouped flows of the
real-flow corpus and over groups built to probe its edges (a proxied class code, a child field
of type ``code`` a group field of another type replaces, a group in a group, a repeated node id,
a group whose ``data.id`` is not its node id); and what ``ParameterHandler`` hands a component
for a field (a literal in a ``code`` field, ``\\n`` in a ``str`` one).  A change in lfx fails a
test here rather than letting code past the gate.
"""

from __future__ import annotations

import copy
import json

import pytest
from _support.corpus import corpus_flow

from lfassist_jupyter.artifacts import executed
from lfassist_jupyter.artifacts import flow as facts

GROUPED_CORPUS = ["Jcnok__jcnok1", "Jcnok__submission_3", "Jcnok__submission_4"]


def test_the_code_execution_lists_are_lfx_s():
    from lfx.utils.flow_validation import CODE_EXECUTION_COMPONENT_TYPES, CODE_EXECUTION_FIELD_NAMES

    assert executed.CODE_EXECUTION_COMPONENT_TYPES == CODE_EXECUTION_COMPONENT_TYPES
    assert set(executed.CODE_EXECUTION_FIELDS) == CODE_EXECUTION_FIELD_NAMES, "a new lfx code field: judge it"


def test_every_code_field_of_lfx_s_catalogue_is_judged():
    """Each built-in's field of type ``code``, and each code-execution field of a code-execution
    built-in, is one the gate reads (``runtime`` ones excepted: text only a model reads).  Langflow
    1.13's trigger components are among them (lfx builds a trigger's class code like any node's)."""
    from lfx.graph.flow_builder.builder import load_local_registry

    registry = load_local_registry()
    assert {"ScheduleTrigger", "InboundWebhookTrigger"} <= set(registry)
    missed = []
    for kind, entry in registry.items():
        for name, field in (entry.get("template") or {}).items():
            listed = kind in executed.CODE_EXECUTION_COMPONENT_TYPES and name in executed.CODE_EXECUTION_FIELDS
            is_code = isinstance(field, dict) and field.get("type") == "code"
            judged = executed.CODE_EXECUTION_FIELDS.get(name) != "runtime"
            if (is_code or listed) and judged and executed.field_kind(name, field) is None:
                missed.append(f"{kind}.{name}")
    assert missed == []


def _node(node_id: str, fields: dict, *, kind: str = "Custom", display: str = "") -> dict:
    template = {name: {"show": True, "advanced": False, "name": name, **field} for name, field in fields.items()}
    return {
        "id": node_id,
        "type": "genericNode",
        "data": {"id": node_id, "type": kind, "node": {"display_name": display or node_id, "template": template}},
    }


def _group(group_id: str, inner: list, proxies: dict, *, data_id: str | None = None) -> dict:
    node = _node(group_id, {}, kind="GroupNode", display="Group " + group_id)
    node["data"]["id"] = data_id or group_id
    node["data"]["node"]["template"] = proxies
    node["data"]["node"]["flow"] = {"data": {"nodes": inner, "edges": []}}
    return node


def _proxy(node_id: str, field: str, value: str, kind: str = "code") -> dict:
    return {
        "type": kind,
        "value": value,
        "show": False,
        "advanced": True,
        "name": field,
        "display_name": field,
        "proxy": {"id": node_id, "field": field},
    }


CLASS = "class X(Component):\n    pass\n"
PAYLOAD = "import os\nos.system('id')\n" + CLASS


def probes() -> dict[str, dict]:
    """Grouped flows built to probe ``process_flow``'s edges."""
    plain = _node("Out-1", {"code": {"type": "code", "value": CLASS}, "text": {"type": "str", "value": "a"}})
    repl = _node("Repl-1", {"code": {"type": "code", "value": CLASS}, "python_code": {"type": "str", "value": "1"}})
    func = _node("Func-1", {"code": {"type": "code", "value": CLASS}, "function_code": {"type": "code", "value": ""}})
    flows = {
        "class code through a proxy": [
            _group("G1", [copy.deepcopy(plain)], {"code_Out-1": _proxy("Out-1", "code", PAYLOAD)})
        ],
        "a str group field onto a code child": [
            _group("G1", [copy.deepcopy(func)], {"f": _proxy("Func-1", "function_code", "x = 1", kind="str")})
        ],
        "a code group field onto a str child": [
            _group("G1", [copy.deepcopy(repl)], {"p": _proxy("Repl-1", "python_code", "import os")})
        ],
        "a group in a group": [
            _group(
                "G1",
                [_group("G2", [copy.deepcopy(plain)], {"code_Out-1": _proxy("Out-1", "code", CLASS + "# inner\n")})],
                {"code_G2": _proxy("G2", "code_Out-1", PAYLOAD)},
            )
        ],
        "a repeated node id": [
            copy.deepcopy(plain),
            _group("Out-1", [copy.deepcopy(func)], {"f": _proxy("Func-1", "function_code", "y = 2")}),
        ],
        "a group whose data id is not its id": [
            _group("G1", [copy.deepcopy(plain)], {"code_Out-1": _proxy("Out-1", "code", PAYLOAD)}, data_id="G9")
        ],
        "a proxied field lfx cannot read (no show)": [
            _group(
                "G1",
                [_group("G2", [copy.deepcopy(plain)], {"c": {"type": "code", "value": CLASS}})],
                {"code_G2": _proxy("G2", "c", PAYLOAD)},
            )
        ],
        "a proxy naming no node (lfx skips it)": [
            _group("G1", [copy.deepcopy(plain)], {"code_X": _proxy("Nope-1", "code", PAYLOAD)})
        ],
    }
    return {name: {"data": {"nodes": nodes, "edges": []}} for name, nodes in flows.items()}


def _lfx_nodes(flow: dict) -> list | str:
    """The nodes lfx's process_flow leaves, or the name of the error it raises."""
    from lfx.graph.graph.utils import process_flow

    try:
        return process_flow(copy.deepcopy(facts.graph(flow)))["nodes"]
    except Exception as exc:
        return type(exc).__name__


def _ours(flow: dict) -> list | str:
    try:
        return executed.prepare(flow)["nodes"]
    except executed.Unjudged:
        return "refused"


def _same(flow: dict) -> None:
    """Ours is lfx's, node for node; where lfx fails to prepare the flow, ours refuses it."""
    theirs, ours = _lfx_nodes(flow), _ours(flow)
    if isinstance(theirs, str):
        assert ours == "refused", theirs
    else:
        assert json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True)


@pytest.mark.parametrize("name", GROUPED_CORPUS)
def test_groups_of_real_flows_open_as_lfx_opens_them(name):
    flow = corpus_flow(name)
    assert any(facts.group_flow(n) for n in facts.nodes(flow))  # the corpus still has its groups
    assert not isinstance(_lfx_nodes(flow), str)
    _same(flow)


@pytest.mark.parametrize("name", [n for n in probes() if "naming no node" not in n])
def test_groups_built_to_probe_lfx_open_as_lfx_opens_them(name):
    _same(probes()[name])


def test_a_proxy_naming_no_node_is_skipped_by_lfx_and_refused_here():
    flow = probes()["a proxy naming no node (lfx skips it)"]
    assert "os.system" not in json.dumps(_lfx_nodes(flow))  # lfx drops it today...
    with pytest.raises(executed.Unjudged, match="names node 'Nope-1'"):
        executed.prepare(flow)  # ...another lfx could resolve it otherwise: not judged, refused


FIELDS = {
    "quoted": {"type": "code", "value": repr("import os\nos.system('id')\n")},
    "plain_code": {"type": "code", "value": "def f():\n    return 1\n"},
    "a_number": {"type": "code", "value": "None"},
    "escaped": {"type": "str", "value": "x = 1 # \\nimport os"},
    "listed": {"type": "str", "value": "a\\nb"},
}


def test_fields_reach_the_component_as_lfx_hands_them_over():
    """What ``ParameterHandler`` gives the component for each field (lfx builds the vertex's
    parameters; no component is instantiated) is what the gate scans."""
    from lfx.graph.graph.base import Graph

    node = _node("N-1", {"code": {"type": "code", "value": CLASS}, **FIELDS})
    node["data"]["node"]["template"]["_type"] = "Component"
    node["data"]["node"]["outputs"] = []
    graph = Graph.from_payload({"nodes": [node], "edges": []}, flow_id="f", instantiate_components=False)
    params = graph.get_vertex("N-1").params
    for name, field in FIELDS.items():
        assert executed.effective_text(name, field) == params.get(name), name
    assert executed.effective_text("code", node["data"]["node"]["template"]["code"]) == params["code"]


def test_code_lines_are_joined_as_lfx_joins_them():
    from lfx.utils.flow_code import normalize_code_for_import

    lines = ["import os", "os.system('id')", CLASS]
    flow = {"data": {"nodes": [_node("N-1", {"code": {"type": "code", "value": lines}})], "edges": []}}
    theirs = normalize_code_for_import(flow)["data"]["nodes"][0]["data"]["node"]["template"]["code"]["value"]
    ours = next(f for f in executed.executed_fields(flow) if f.field == "code")
    assert ours.text == theirs
