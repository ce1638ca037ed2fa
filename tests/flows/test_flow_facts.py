"""The lfx rules ``artifacts/flow.py`` mirrors, compared with lfx itself.

The kernel never imports lfx, so a few of lfx's small rules are written again in
``lfassist_jupyter/artifacts/flow.py``, each naming its lfx 1.13 source. Here lfx is the ground
truth (imported in the test process only): every mirrored rule is run side by side with lfx's
own function over lfx's component catalogue (every type an output gives or an input takes) and
over the real edges of Langflow's starter projects, so a change in lfx fails a test here
instead of a user's flow later. ``test_every_mirrored_rule_is_compared_here`` keeps the list
honest: a new mirror without a comparison fails.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import math

import pytest

from lfassist_jupyter.artifacts import flow as facts

COMPARED = {
    "TYPE_MIGRATIONS": "test_type_migrations_are_lfx_s",
    "types_compatible": "test_type_compatibility_is_lfx_s_over_every_catalogue_type",
    "conversion_hint": "test_the_conversion_hint_is_lfx_s_over_every_catalogue_type",
    "_stringify": "test_handles_encode_as_lfx_writes_them_and_decode_back",
    "handle_json": "test_handles_encode_as_lfx_writes_them_and_decode_back",
    "target_port": "test_edges_read_as_lfx_reads_them",
    "is_loop_target": "test_edges_read_as_lfx_reads_them",
    "loop_port": "test_loop_ports_are_lfx_s_over_the_catalogue",
    "new_edge": "test_a_new_edge_is_the_one_lfx_add_connection_writes",
    "spec_scalar": "test_spec_values_read_as_lfx_reads_them",
}


@pytest.fixture(scope="module")
def registry() -> dict[str, dict]:
    from lfx.graph.flow_builder.builder import load_local_registry

    return load_local_registry()


@pytest.fixture(scope="module")
def starters() -> dict[str, dict]:
    from _support.langflow_env import starter_projects

    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in starter_projects()}


def catalogue_types(registry: dict[str, dict]) -> tuple[list[list[str]], list[list[str]]]:
    """Every distinct list of types an output gives and an input takes, plus each type alone."""
    outs = {tuple(o.get("types") or []) for e in registry.values() for o in e.get("outputs") or []}
    ins = {
        tuple(f.get("input_types") or [])
        for e in registry.values()
        for f in (e.get("template") or {}).values()
        if isinstance(f, dict) and f.get("input_types")
    }
    single = {(t,) for group in outs | ins for t in group} | {(t,) for t in facts.TYPE_MIGRATIONS.values()}
    return [list(t) for t in sorted(outs | single)], [list(t) for t in sorted(ins | single)]


def starter_edges(starters: dict[str, dict]) -> list[tuple[str, dict, dict]]:
    return [(name, flow, edge) for name, flow in starters.items() for edge in flow["data"]["edges"]]


def test_every_mirrored_rule_is_compared_here():
    """Each function of artifacts/flow.py whose docstring names an lfx source has a comparison below."""
    mirrored = {
        name
        for name, fn in inspect.getmembers(facts, inspect.isfunction)
        if fn.__module__ == facts.__name__ and (fn.__doc__ or "").lstrip().startswith("lfx/")
    }
    assert mirrored | {"TYPE_MIGRATIONS"} == set(COMPARED), "a mirrored lfx rule without a drift test"
    assert all(callable(globals()[test]) for test in COMPARED.values())


def _imports(path) -> tuple[set[str], set[str]]:
    """(top-level modules imported absolutely, sibling modules imported relatively) by a file."""
    import ast

    absolute, relative = set(), set()
    for item in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(item, ast.Import):
            absolute |= {a.name.split(".")[0] for a in item.names}
        elif isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
            absolute.add(item.module.split(".")[0])
        elif isinstance(item, ast.ImportFrom):
            relative |= {item.module.split(".")[0]} if item.module else {a.name for a in item.names}
    return absolute, relative


def test_the_shared_modules_and_the_worker_import_nothing_else_of_the_project():
    """artifacts/flow.py and policy.py are the standard library only (the sandbox loads them where
    lfassist_jupyter may not be installed); the worker package imports the standard library, lfx,
    (with lfx's own dependencies), its own files and those two -- nothing else of the project."""
    import sys
    from pathlib import Path

    from lfassist_jupyter.artifacts import policy
    from lfassist_jupyter.sandbox import _isolation

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for module in (facts, policy):
        absolute, relative = _imports(Path(module.__file__))
        assert absolute <= stdlib and not relative, module.__name__
    bound = set(_isolation.bound_modules())
    assert bound == {"flow", "policy"} and {Path(p).name for p in _isolation.worker_files()[1:]} == {
        "flow.py",
        "policy.py",
    }
    worker = _isolation.WORKER_DIR
    own = {p.stem for p in worker.glob("*.py")}
    for path in worker.glob("*.py"):
        absolute, relative = _imports(path)
        assert "lfassist_jupyter" not in absolute, path.name  # the sandbox's interpreter may not have it
        assert relative <= own | bound, (path.name, relative - own - bound)
    package = Path(facts.__file__).parent.parent
    outside = [p for p in package.rglob("*.py") if package / "sandbox" not in p.parents]
    assert outside and not [p for p in outside if "sandbox.worker" in p.read_text(encoding="utf-8")]


def test_type_migrations_are_lfx_s():
    from lfx.graph.edge.base import TYPE_MIGRATIONS

    assert facts.TYPE_MIGRATIONS == TYPE_MIGRATIONS


def test_type_compatibility_is_lfx_s_over_every_catalogue_type(registry):
    from lfx.graph.edge.base import types_compatible

    outs, ins = catalogue_types(registry)
    pairs = list(itertools.product(outs, ins))
    assert len(pairs) > 1000
    differ = [(o, i) for o, i in pairs if facts.types_compatible(o, i) != types_compatible(o, i)]
    assert not differ, differ[:5]
    assert any(facts.types_compatible(o, i) for o, i in pairs) and not all(
        facts.types_compatible(o, i) for o, i in pairs
    )  # both answers occur: the comparison decides something


def test_the_conversion_hint_is_lfx_s_over_every_catalogue_type(registry):
    from lfx.graph.flow_builder.connect import _conversion_hint

    outs, ins = catalogue_types(registry)
    pairs = list(itertools.product(outs, ins))
    differ = [
        (o, i)
        for o, i in pairs
        if facts.conversion_hint("A", "out", o, "B", "port", i) != _conversion_hint("A", "out", o, "B", "port", i)
    ]
    assert not differ, differ[:5]
    hints = {facts.conversion_hint("A", "out", o, "B", "port", i).split(" \u2014")[0] for o, i in pairs}
    assert len(hints) == 3  # none, ParserComponent, TypeConverterComponent: every branch compared


@pytest.mark.langflow
def test_handles_encode_as_lfx_writes_them_and_decode_back(starters):
    from lfx.graph.flow_builder.connect import _scaped_json_stringify
    from lfx.utils.util import escape_json_dump

    edges = starter_edges(starters)
    assert len(edges) > 100
    for name, _, edge in edges:
        for key in ("sourceHandle", "targetHandle"):
            handle = edge["data"][key]
            assert facts.handle_json(handle) == _scaped_json_stringify(handle), (name, key)
            # Langflow's files carry the handle a second time, encoded (json.dumps style): it decodes
            # to the same object, as do both of lfx's encodings.
            assert facts.parse_handle(edge[key]) == handle, (name, key)
            assert facts.parse_handle(escape_json_dump(handle)) == handle
            assert facts.parse_handle(facts.handle_json(handle)) == handle
    # An edge with no data object is read from the encoded copies.
    _, _, edge = edges[0]
    bare = {k: v for k, v in edge.items() if k != "data"}
    assert facts.handles(bare) == (edge["data"]["sourceHandle"], edge["data"]["targetHandle"])


@pytest.mark.langflow
def test_edges_read_as_lfx_reads_them(starters):
    """lfx's ``list_connections`` names each edge's ports as ``ports`` does; lfx's Graph treats an
    edge as a loop's feedback edge (its target handle's ``type`` is None) exactly when
    ``is_loop_target`` says so."""
    from lfx.graph.flow_builder.connect import list_connections
    from lfx.graph.graph.base import Graph

    for name, flow in starters.items():
        theirs = [
            (c["source_id"], c["source_output"], c["target_id"], c["target_input"]) for c in list_connections(flow)
        ]
        assert [facts.ports(e) for e in facts.edges(flow)] == theirs, name
    loops = [f for f in starters.values() if any(facts.is_loop_target(facts.handles(e)[1]) for e in facts.edges(f))]
    assert loops, "no starter project has a loop: the loop rule would go unchecked"
    for flow in loops:
        graph = Graph.from_payload(copy.deepcopy(flow["data"]), flow_id="drift")
        by_id = {e["id"]: e for e in facts.edges(flow)}
        assert len(graph.edges) == len(by_id)
        for lfx_edge in graph.edges:
            ours = by_id[lfx_edge._data["id"]]
            assert facts.is_loop_target(facts.handles(ours)[1]) == (lfx_edge.target_handle.type is None)
            assert facts.ports(ours)[3] == lfx_edge.target_param


def test_loop_ports_are_lfx_s_over_the_catalogue(registry):
    from lfx.graph.flow_builder.connect import _resolve_loop_target

    def variants(entry: dict) -> list[dict]:
        """The entry, and its loop outputs with each ``selected`` and ``loop_types`` a canvas may save."""
        out = [entry]
        for i, o in enumerate(entry.get("outputs") or []):
            if o.get("allows_loop"):
                for selected, loop_types in itertools.product([None, "", *o.get("types", [])], [None, [], ["Data"]]):
                    changed = copy.deepcopy(entry)
                    changed["outputs"][i].update(selected=selected, loop_types=loop_types)
                    out.append(changed)
        return out

    compared = 0
    for kind, base in registry.items():
        for entry in variants(base):
            for out in entry.get("outputs") or []:
                node = {"id": f"{kind}-x1", "data": {"type": kind, "node": entry}}
                theirs = _resolve_loop_target({"data": {"nodes": [node], "edges": []}}, f"{kind}-x1", out.get("name"))
                ours = facts.loop_port(entry, out.get("name"))
                assert (ours[1] if ours else None) == (theirs[0] if theirs else None), (kind, out.get("name"))
                compared += theirs is not None
    assert compared > 10  # the Loop component is in the catalogue: its feedback port was compared, varied


@pytest.mark.langflow
def test_a_new_edge_is_the_one_lfx_add_connection_writes(starters, registry):
    """Every starter edge, removed and added again by lfx's ``add_connection`` and by ``new_edge``:
    the same handles, the same encoded copies, the same edge id."""
    from lfx.graph.flow_builder.connect import add_connection

    edges = starter_edges(starters)
    loops = 0
    for name, flow, edge in edges:
        source, output, target, port = facts.ports(edge)
        alone = copy.deepcopy(flow)
        alone["data"]["edges"] = []
        theirs = add_connection(alone, source, output, target, port, registry=registry)
        # Read after lfx ran: for a ``component_as_tool`` edge lfx first switches the source into
        # tool mode (its outputs change), and the handle is written from the node as it is then.
        nodes = facts.by_id(facts.nodes(alone))
        ours = facts.new_edge(nodes[source], output, nodes[target], port)
        for key in ("source", "target", "sourceHandle", "targetHandle", "id"):
            assert ours[key] == theirs[key], (name, key)
        assert ours["data"] == theirs["data"], name
        loops += facts.is_loop_target(ours["data"]["targetHandle"])
    assert len(edges) > 100 and loops  # every starter edge, a loop's feedback edge among them


def test_spec_values_read_as_lfx_reads_them(registry):
    from lfx.graph.flow_builder.spec import _coerce_value

    texts = {"true", "True", "FALSE", "null", "None", "none", "0", "-3", "1.5", "1e3", "nan", "inf", "-inf"}
    texts |= {"0x10", "1_000", " 7 ", "07", "+2", ".5", "5.", "", "text", "NULL", "tRuE", "1/2", "１２"}
    for entry in registry.values():
        for field in (entry.get("template") or {}).values():
            if not isinstance(field, dict):
                continue
            value = field.get("value")
            if isinstance(value, (str, int, float, bool)) and len(str(value)) < 200:
                texts.add(str(value))
            texts |= {o for o in field.get("options") or [] if isinstance(o, str)}
    assert len(texts) > 250

    def same(a: object, b: object) -> bool:
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
            return math.isnan(b)
        return type(a) is type(b) and a == b

    differ = [t for t in texts if not same(facts.spec_scalar(t), _coerce_value(t))]
    assert not differ, differ[:5]
