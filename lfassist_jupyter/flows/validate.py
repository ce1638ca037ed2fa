"""`validate_flow`: is this Langflow flow wired so it can run, and what must the user still provide?

Stricter than lfx's level 3 where it matters (an edge must name a real output and a real
input of a compatible type; a cycle must pass through a loop port Langflow supports), and
kinder than its level 4 where it does not: a missing model choice, API key, knowledge base,
file or typed-in value is a `Need`, not an error. `lfx validate --level 4` rejects every one
of Langflow's own starter projects for exactly that reason.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from lfassist_jupyter.sandbox.worker.flow_kit import conversion_hint, types_compatible

from .catalog import Catalog, default_catalog
from .checks import check as check_flow
from .groups import ungroup
from .models import FlowProblem, FlowReport, FlowSpecError, Need

# Inputs that only an edge can fill (a handle); empty and unconnected, they are wiring errors.
_HANDLE_INPUTS = {"HandleInput", "DataInput", "DataFrameInput", "MessageInput", "ToolsInput", "LinkInput"}


def _load(
    flow: dict[str, Any] | str | Path, catalog: Catalog
) -> tuple[dict[str, Any] | None, list[FlowProblem], list[str]]:
    """Flow JSON from a dict, a .json path, or spec text (built with `build_flow`)."""
    if isinstance(flow, dict):
        return flow, [], []
    if isinstance(flow, Path) or (isinstance(flow, str) and flow.strip().endswith(".json") and "\n" not in flow):
        path = Path(flow)
        try:
            return json.loads(path.read_text(encoding="utf-8")), [], []
        except OSError as exc:
            return None, [FlowProblem(code="structure", message=f"Cannot read {path}: {exc.strerror or exc}")], []
        except json.JSONDecodeError as exc:
            return None, [FlowProblem(code="structure", message=f"{path} is not JSON: {exc}")], []
    if isinstance(flow, str):
        from .spec import build_flow

        try:
            built = build_flow(flow, catalog=catalog, repair=False)
        except FlowSpecError as exc:
            return None, [FlowProblem(code="spec_syntax", message=str(exc))], []
        return built.flow, list(built.errors), list(built.warnings)
    return (
        None,
        [FlowProblem(code="structure", message=f"Expected flow JSON, a path or spec text, got {type(flow).__name__}.")],
        [],
    )


def _opened(flow: Any) -> Any:
    """A flow (dict or ``.json`` path) with its groups replaced by their nodes (``groups.ungroup``);
    anything else as it came (spec text; a path the loader cannot read reports itself)."""
    if isinstance(flow, Path) or (isinstance(flow, str) and flow.strip().endswith(".json") and "\n" not in flow):
        try:
            loaded = json.loads(Path(flow).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return flow
        return ungroup(loaded) if isinstance(loaded, dict) else flow
    return ungroup(flow) if isinstance(flow, dict) else flow


def _name(node: dict[str, Any]) -> str:
    nd = node.get("data") or {}
    return str((nd.get("node") or {}).get("display_name") or nd.get("type") or node.get("id"))


def validate_flow(flow: dict[str, Any] | str | Path, *, catalog: Catalog | None = None) -> FlowReport:
    """Validate Langflow flow JSON (a dict), a flow file, or spec text. Never raises on bad input."""
    catalog = catalog or default_catalog()
    flow = _opened(flow)  # grouped sub-flows, opened as lfx opens them before it builds
    # Before lfx reads it: duplicate ids, an empty flow, node code that does not parse or build.
    blocking, notes, code_needs = check_flow(flow, catalog)
    if blocking:
        return FlowReport(is_valid=False, errors=blocking, warnings=notes, needs=code_needs)
    loaded, errors, warnings = _load(flow, catalog)
    warnings += notes
    if loaded is None:
        return FlowReport(is_valid=False, errors=errors, warnings=warnings)
    data = loaded.get("data", loaded) if isinstance(loaded.get("data", loaded), dict) else {}
    raw_nodes, raw_edges = data.get("nodes"), data.get("edges")
    if not isinstance(raw_nodes, list) or not isinstance(raw_edges, list):
        errors.append(
            FlowProblem(code="structure", message="Not a Langflow flow: expected data.nodes and data.edges lists.")
        )
        return FlowReport(is_valid=False, errors=errors, warnings=warnings)
    # Notes (noteNode) are canvas decorations, not components.
    nodes = {
        n["id"]: n
        for n in raw_nodes
        if isinstance(n, dict) and "id" in n and n.get("type", "genericNode") == "genericNode"
    }
    needs: list[Need] = list(code_needs)
    seen = {e.message for e in errors}

    def add(err: FlowProblem) -> None:
        if err.message not in seen:
            seen.add(err.message)
            errors.append(err)

    _check_components(nodes, catalog, add, warnings)
    connected, loop_edges, graph = _check_edges(raw_edges, nodes, add)
    _check_cycles(nodes, graph, loop_edges, add)
    _check_loops(nodes, raw_edges, add)
    _check_inputs(nodes, raw_edges, connected, add, needs, warnings)
    if len(nodes) > 1:
        touched = {e.get("source") for e in raw_edges if isinstance(e, dict)} | {
            e.get("target") for e in raw_edges if isinstance(e, dict)
        }
        warnings += [f"{_name(n)} is not connected to anything." for i, n in nodes.items() if i not in touched]
    from .flow_model import model_nodes
    from .packages import missing_packages

    return FlowReport(
        missing_packages=missing_packages(loaded, catalog),
        is_valid=not errors,
        errors=errors,
        warnings=warnings,
        needs=needs,
        models=model_nodes(loaded),
        node_count=len(nodes),
        edge_count=len(raw_edges),
    )


def _check_components(nodes: dict[str, Any], catalog: Catalog, add, warnings: list[str]) -> None:
    for nid, node in nodes.items():
        nd = node.get("data") or {}
        kind = nd.get("type")
        template = (nd.get("node") or {}).get("template")
        has_code = isinstance(template, dict) and bool((template.get("code") or {}).get("value"))
        if kind in catalog:
            continue
        if has_code:
            # Langflow runs the code saved in the node: an older or server-only component is fine.
            if kind != "CustomComponent":
                warnings.append(f"{_name(node)} ({kind}) is not in the catalogue; the flow carries its code.")
            continue
        near = catalog.resolve(str(kind or ""))
        add(
            FlowProblem(
                code="unknown_component",
                node=_name(node),
                node_id=nid,
                message=f"Unknown component type {kind!r} and the node carries no code.",
                fix=f"Use {near!r}." if near else "Pick a component from the catalogue or generate one.",
            )
        )


def _check_edges(edges: list[Any], nodes: dict[str, Any], add):
    connected: set[tuple[str, str]] = set()
    loop_edges: set[int] = set()
    graph: dict[str, list[tuple[str, int]]] = {nid: [] for nid in nodes}
    for index, edge in enumerate(edges):
        if not isinstance(edge, dict):
            add(FlowProblem(code="structure", message=f"Edge #{index} is not an object."))
            continue
        ed = edge.get("data") or {}
        sh, th = ed.get("sourceHandle") or {}, ed.get("targetHandle") or {}
        src_id, tgt_id = edge.get("source"), edge.get("target")
        out_name, port = sh.get("name"), th.get("fieldName") or th.get("name")
        src, tgt = nodes.get(src_id), nodes.get(tgt_id)
        for side, nid, node in (("source", src_id, src), ("target", tgt_id, tgt)):
            if node is None:
                other = tgt if side == "source" else src
                add(
                    FlowProblem(
                        code="unknown_node",
                        node=_name(other) if other else None,
                        node_id=str(nid),
                        field=port if side == "target" else out_name,
                        message=f"An edge's {side} is node {nid!r}, which is not in the flow.",
                        fix="Remove the edge or add the missing node.",
                    )
                )
        if src is None or tgt is None:
            continue
        is_loop_edge = "fieldName" not in th
        connected.add((tgt_id, port))  # one error per cause: a wrong edge still means "meant to connect"
        if not is_loop_edge:
            graph[src_id].append((tgt_id, index))
        outputs = {o.get("name"): o for o in src["data"]["node"].get("outputs", []) if isinstance(o, dict)}
        output = outputs.get(out_name)
        if output is None:
            add(FlowProblem.missing_port("output", _name(src), src_id, str(out_name), list(outputs)))
            continue
        out_types = list(output.get("types") or [])
        template = tgt["data"]["node"].get("template", {})
        field = template.get(port) if "fieldName" in th else None
        if field is None and "fieldName" not in th:
            loop_out = next(
                (o for o in tgt["data"]["node"].get("outputs", []) if o.get("name") == port and o.get("allows_loop")),
                None,
            )
            if loop_out is not None:
                # A loop's feedback edge: it targets the loop's output port (Langflow's `allows_loop`).
                accepted = [loop_out.get("selected") or (loop_out.get("types") or ["Message"])[0]]
                accepted += list(loop_out.get("loop_types") or [])
                if not types_compatible(out_types, accepted):
                    add(_mismatch(src, tgt, out_name, port, out_types, accepted, tgt_id))
                loop_edges.add(index)
                graph[src_id].append((tgt_id, index))
                continue
            graph[src_id].append((tgt_id, index))  # not a loop port after all: an ordinary edge
        if not isinstance(field, dict):
            inputs = [k for k, v in template.items() if isinstance(v, dict) and v.get("input_types")]
            add(FlowProblem.missing_port("input", _name(tgt), tgt_id, str(port), inputs))
            continue
        accepted = list(field.get("input_types") or [])
        if not accepted:
            add(
                FlowProblem(
                    code="type_mismatch",
                    node=_name(tgt),
                    node_id=tgt_id,
                    field=str(port),
                    message=f"{_name(tgt)}.{port} takes no connection (it is set by value only).",
                    fix=f"Set {port} in config instead of connecting {_name(src)}.{out_name}.",
                )
            )
        elif not types_compatible(out_types, accepted):
            add(_mismatch(src, tgt, out_name, port, out_types, accepted, tgt_id))
    return connected, loop_edges, graph


def _mismatch(src, tgt, out_name, port, out_types, accepted, tgt_id) -> FlowProblem:
    hint = conversion_hint(_name(src), out_name, out_types, _name(tgt), port, accepted).strip()
    return FlowProblem(
        code="type_mismatch",
        node=_name(tgt),
        node_id=tgt_id,
        field=str(port),
        message=f"{_name(src)}.{out_name} gives {out_types} but {_name(tgt)}.{port} accepts {accepted}.",
        fix=hint.removeprefix("Fix: ") or f"Connect an output of type {'/'.join(accepted)} to {port}.",
    )


def _check_cycles(nodes: dict[str, Any], graph, loop_edges: set[int], add) -> None:
    """A cycle is allowed only through a loop feedback edge (into an `allows_loop` output)."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(nodes, white)
    stack_path: list[str] = []

    def visit(start: str) -> None:
        work = [(start, iter(graph.get(start, [])))]
        color[start] = grey
        stack_path.append(start)
        while work:
            nid, it = work[-1]
            for tgt, index in it:
                if index in loop_edges:
                    continue
                if color.get(tgt) == grey:
                    cycle = stack_path[stack_path.index(tgt) :]
                    names = " -> ".join(_name(nodes[c]) for c in [*cycle, tgt])
                    add(
                        FlowProblem(
                            code="cycle",
                            node=_name(nodes[tgt]),
                            node_id=tgt,
                            message=f"The flow has a cycle: {names}.",
                            fix="Remove one edge of the cycle, or iterate with a Loop component "
                            "(its feedback edge goes into the loop's item port).",
                        )
                    )
                    continue
                if color.get(tgt) == white:
                    color[tgt] = grey
                    stack_path.append(tgt)
                    work.append((tgt, iter(graph.get(tgt, []))))
                    break
            else:
                color[nid] = black
                stack_path.pop()
                work.pop()

    for nid in nodes:
        if color[nid] == white:
            visit(nid)


def _check_loops(nodes: dict[str, Any], edges: list[Any], add) -> None:
    """A Loop runs its body only through its feedback edge: the body starts at the loop's
    ``item`` output and its result comes back into the loop's ``item`` handle. Without that
    edge the body never runs (the run answers an empty string); when ``done`` leads back into
    the body, the run never ends."""
    from .control import loop_ports

    wires = []
    for e in edges:
        if isinstance(e, dict) and e.get("source") in nodes and e.get("target") in nodes:
            ed = e.get("data") or {}
            sh, th = ed.get("sourceHandle") or {}, ed.get("targetHandle") or {}
            wires.append((e["source"], sh.get("name"), e["target"], th.get("fieldName") or th.get("name"), th))

    nexts: dict[str, list[str]] = {}
    for s, _, t, _, _ in wires:
        nexts.setdefault(s, []).append(t)

    def reach(starts: list[str], avoid: str) -> set[str]:
        seen: set[str] = set()
        todo = [s for s in starts if s != avoid]
        while todo:
            nid = todo.pop()
            if nid not in seen:
                seen.add(nid)
                todo += [t for t in nexts.get(nid, ()) if t != avoid and t not in seen]
        return seen

    for nid, node in nodes.items():
        ports = loop_ports((node.get("data") or {}).get("node") or {})
        if ports is None:
            continue
        item, accepted = ports
        name = _name(node)
        at_loop = partial(FlowProblem, node=name, node_id=nid, field=item)  # every problem names the loop's port
        back = {s for s, _, t, p, th in wires if t == nid and p == item and "fieldName" not in th}
        body = reach([t for s, o, t, _, _ in wires if s == nid and o == item], avoid=nid)
        after = reach([t for s, o, t, _, _ in wires if s == nid and o != item], avoid=nid)
        if not back:
            add(
                at_loop(
                    code="structure",
                    message=f"{name} has no feedback edge: nothing goes back into its {item!r} handle, "
                    "so the loop body never runs.",
                    fix=f"Connect the body's last output (type {'/'.join(accepted)}) to {name}.{item}; "
                    f"the body starts at {name}.{item}.",
                )
            )
            continue
        if back - body:
            add(
                at_loop(
                    code="structure",
                    message=f"{name}'s feedback edge comes from a node its {item!r} output never reaches.",
                    fix=f"Start the body at {name}.{item} and feed the body's result back into {name}.{item}.",
                )
            )
        if back & after:
            add(
                at_loop(
                    code="cycle",
                    message=f"{name}'s collected results lead back into its own body: the loop would never end.",
                    fix=f"Only {name}.{item} feeds the body; connect the other output to what comes after the loop.",
                )
            )


def _in_tool_mode(node: dict[str, Any], edges: list[Any]) -> bool:
    if (node["data"].get("node") or {}).get("tool_mode"):
        return True
    return any(
        isinstance(e, dict)
        and e.get("source") == node["id"]
        and ((e.get("data") or {}).get("sourceHandle") or {}).get("name") == "component_as_tool"
        for e in edges
    )


def _check_inputs(nodes, edges, connected, add, needs: list[Need], warnings: list[str]) -> None:
    for nid, node in nodes.items():
        name = _name(node)
        tool_mode = _in_tool_mode(node, edges)
        template = (node["data"].get("node") or {}).get("template") or {}
        custom_fields = (node["data"].get("node") or {}).get("custom_fields") or {}
        prompt_vars = {v for names in custom_fields.values() if isinstance(names, list) for v in names}
        for fname, field in template.items():
            if fname.startswith("_") or not isinstance(field, dict) or not field.get("show", True):
                continue
            empty = field.get("value") in (None, "", [], {})
            if (nid, fname) in connected:
                continue
            if field.get("password") or field.get("display_password"):
                if empty:
                    needs.append(
                        Need(kind="secret", node=name, node_id=nid, field=fname, message=f"{name} needs {fname}.")
                    )
                elif field.get("load_from_db"):
                    needs.append(
                        Need(
                            kind="secret",
                            node=name,
                            node_id=nid,
                            field=fname,
                            message=f"{name}.{fname} reads the global variable {field.get('value')!r}.",
                        )
                    )
                continue
            if fname in prompt_vars and empty:
                warnings.append(f"{name}: the prompt variable {{{fname}}} is neither connected nor set.")
                continue
            if not field.get("required") or not empty:
                continue
            if tool_mode and field.get("tool_mode"):
                continue  # an agent fills it when it calls the component as a tool
            kind = field.get("type")
            itype = field.get("_input_type")
            if kind == "model":
                needs.append(
                    Need(kind="model", node=name, node_id=nid, field=fname, message=f"Choose a model for {name}.")
                )
            elif kind == "file" or itype == "FileInput":
                needs.append(
                    Need(kind="file", node=name, node_id=nid, field=fname, message=f"Give {name} a file ({fname}).")
                )
            elif itype in _HANDLE_INPUTS or kind == "other":
                types = "/".join(field.get("input_types") or []) or "a matching type"
                add(
                    FlowProblem(
                        code="required_input",
                        node=name,
                        node_id=nid,
                        field=fname,
                        message=f"{name}.{fname} is required but not connected.",
                        fix=f"Connect an output of type {types} to {name}.{fname}.",
                    )
                )
            elif itype == "DropdownInput" or field.get("options") is not None:
                needs.append(
                    Need(kind="choice", node=name, node_id=nid, field=fname, message=f"Choose {fname} for {name}.")
                )
            else:
                needs.append(Need(kind="value", node=name, node_id=nid, field=fname, message=f"Set {fname} on {name}."))
