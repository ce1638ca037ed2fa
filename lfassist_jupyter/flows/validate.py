"""`validate_flow`: is this Langflow flow wired so it can run, and what must the user still provide?

Stricter than lfx's level 3 where it matters (an edge must name a real output and a real
input of a compatible type; a cycle must pass through a loop port Langflow supports), and
kinder than its level 4 where it does not: a missing model choice, API key, knowledge base,
file or typed-in value is a `Need`, not an error. `lfx validate --level 4` rejects every one
of Langflow's own starter projects for exactly that reason.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import conversion_hint, node_name, types_compatible

from . import connections, triggers
from .catalog import Catalog
from .code_checks import check as check_flow
from .code_checks import outgoing_code_problems
from .groups import ungroup
from .load import is_flow_path, load_flow_file
from .results import FlowProblem, FlowReport, FlowSpecError, MissingPackage, Need

# Inputs that only an edge can fill (a handle); empty and unconnected, they are wiring errors.
_HANDLE_INPUTS = {"HandleInput", "DataInput", "DataFrameInput", "MessageInput", "ToolsInput", "LinkInput"}


def _shaped(flow: Any, source: str | None) -> tuple[dict[str, Any] | None, list[FlowProblem], list[str]]:
    """``flow`` when it has the shape of flow JSON; else the one line that says what is wrong."""
    problem = facts.shape_problem(flow)
    if problem is None:
        return flow, [], []
    where = f"{source} is not a Langflow flow" if source else "Not a Langflow flow"
    return None, [FlowProblem(code="structure", message=f"{where}: {problem}.")], []


def _load(
    flow: dict[str, Any] | str | Path, catalog: Catalog | None
) -> tuple[dict[str, Any] | None, list[FlowProblem], list[str]]:
    """Flow JSON from a dict, a .json path, or spec text (built with `build_flow` over ``catalog``:
    spec text without one is a problem), shape-checked."""
    if isinstance(flow, dict):
        return _shaped(flow, None)
    if is_flow_path(flow):
        data, why = load_flow_file(flow)
        if why is not None:
            return None, [FlowProblem(code="structure", message=f"Cannot read {flow}: {why}.")], []
        return _shaped(data, str(flow))
    if isinstance(flow, str):
        from .build import build_flow

        if catalog is None:
            why = "spec text is built over a catalogue of components; give one (catalog=default_catalog(sandbox))"
            return None, [FlowProblem(code="structure", message=f"Not built: {why}.")], []

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


def validate_flow(
    flow: dict[str, Any] | str | Path, *, catalog: Catalog, provision: bool | None = None, probe: bool = False
) -> FlowReport:
    """Validate Langflow flow JSON (a dict), a flow file, or spec text over ``catalog``, whose
    sandbox judges the nodes' code and finds the packages they need. Never raises on bad input.
    (``lfassist_jupyter.validate_flow`` is this over the shared sandbox's catalogue.)

    Three answers (``report.verdict``): ``sound``, ``broken`` (each error names the node and the
    reason), or ``not_judged`` when the sandbox's environment lacks what judging it takes (a
    package, a model provider's bundle): never valid then.  Such a flow can be judged in a separate
    environment with lfx and the packages it needs (``sandbox.provision``: built with uv, cached,
    never the kernel's): ``provision=True`` builds it (or reuses it) and judges the flow there,
    ``False`` never does, and None follows ``LFASSIST_PROVISION`` (``ask``, the default, shows what
    would be installed and its size in ``report.provision``; ``yes`` builds; ``no`` neither).
    ``report.judged_in`` says which environment gave the verdict.

    ``probe=True`` also probe-runs a flow found sound (in the environment that judged it; models
    stubbed, no network: ``flows.probed``), and a node that fails there for the flow's own fault
    (code that no longer fits this lfx or its packages) makes it broken, naming the node and lfx's
    error; a run stopped by the sandbox, a key, a file or a service changes nothing."""
    report, loaded = _judge(flow, catalog)
    report.judged_in = _where(catalog)
    if report.verdict == "not_judged" and loaded is not None:
        from .provisioned import judge_elsewhere

        report = judge_elsewhere(loaded, report, catalog, provision, _judge)
    if probe and report.verdict == "sound" and loaded is not None:
        report = _probed(report, loaded, catalog)
    return report


def _probed(report: FlowReport, flow: dict[str, object], catalog: Catalog) -> FlowReport:
    """``report`` with the probe run's finding (``flows.probed``), run where the flow was judged."""
    from .needs import explain_run
    from .probed import PROBE_INPUT, with_probe
    from .provisioned import sandbox_that_judged

    sandbox = sandbox_that_judged(report) or catalog.sandbox
    if sandbox is None:
        return report
    run = explain_run(flow, sandbox.probe_run(flow, PROBE_INPUT))
    return with_probe(report, flow, run)


def _where(catalog: Catalog) -> str | None:
    python = getattr(getattr(catalog, "sandbox", None), "python", None)
    return f"the sandbox's environment ({python})" if python else None


def _judge(flow: dict[str, Any] | str | Path, catalog: Catalog) -> tuple[FlowReport, dict[str, Any] | None]:
    """The report over ``catalog``'s sandbox, and the flow JSON it judged (None when there was none)."""
    spec_text = isinstance(flow, str) and not is_flow_path(flow)
    notes: list[str] = []
    code_needs: list[Need] = []
    unjudged: list[str] = []
    if spec_text:  # before lfx reads it: duplicate ids, an empty spec, code that does not parse or build
        blocking, notes, code_needs, unjudged = check_flow(flow, catalog)
        if blocking:
            return FlowReport(is_valid=False, errors=blocking, warnings=notes, needs=code_needs), None
    loaded, errors, warnings = _load(flow, catalog)
    if loaded is None:
        return FlowReport(is_valid=False, errors=errors, warnings=warnings + notes), None
    # What lfx would execute, judged as it leaves for Langflow: the gate of Save, Register and a
    # real run, so that validate_flow says what they will.
    unsafe = outgoing_code_problems(loaded, catalog)
    if not spec_text:
        # Grouped sub-flows, opened as lfx opens them before it builds (their nodes are checked too).
        loaded, errors, warnings = _shaped(ungroup(loaded), str(flow) if is_flow_path(flow) else None)
        if loaded is None:
            return FlowReport(is_valid=False, errors=unsafe + errors, warnings=warnings), None
        # The same checks on the JSON: duplicate ids, an empty flow, node code.
        blocking, notes, code_needs, unjudged = check_flow(loaded, catalog)
        if blocking:
            return FlowReport(
                is_valid=False, errors=_besides(unsafe, blocking), warnings=notes, needs=code_needs
            ), loaded
    errors = _besides(unsafe, errors)
    warnings += notes
    raw_edges = facts.edges(loaded)
    # Notes (noteNode) are canvas decorations, not components.
    nodes = facts.by_id(facts.components(loaded))
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
    _check_chat_inputs(nodes, raw_edges, add)
    _check_inputs(nodes, raw_edges, connected, add, needs, warnings)
    connections.check(nodes, connected, add, needs)
    triggers.check(nodes, add)
    if len(nodes) > 1:
        # A trigger fires the whole flow; its event output may stay unwired (lfx/base/triggers).
        touched = {e.get("source") for e in raw_edges} | {e.get("target") for e in raw_edges}
        warnings += [
            f"{node_name(n)} is not connected to anything."
            for i, n in nodes.items()
            if i not in touched and triggers.trigger_kind(n) is None
        ]
    from .model_nodes import model_nodes

    missing = _packages(loaded, catalog, needs)
    report = FlowReport(
        missing_packages=missing,
        not_judged=unjudged,
        is_valid=not errors and not missing and not unjudged,
        errors=errors,
        warnings=warnings,
        needs=needs,
        models=model_nodes(loaded),
        node_count=len(nodes),
        edge_count=len(raw_edges),
    )
    return report, loaded


def _besides(unsafe: list[FlowProblem], others: list[FlowProblem]) -> list[FlowProblem]:
    """The gate's problems, then the others; a field the gate names (code that does not parse,
    or that the sandbox refused to build) is named once, by the gate."""
    named = {(u.node_id, u.field) for u in unsafe if u.node_id}
    return unsafe + [e for e in others if not (e.node_id and (e.node_id, e.field) in named)]


def _packages(flow: dict[str, Any], catalog: Catalog, needs: list[Need]) -> list[MissingPackage]:
    """The packages the flow needs that the sandbox's environment lacks, as lfx's requirements
    logic finds them before anything runs (the ``flow_packages`` op: what lfx's dependency
    preflight refuses a run for), each also a ``package`` need of the nodes that need it (added
    to ``needs``); a node whose load failed for want of a package (its need is already there)
    adds that package too.  Needs, not errors: the flow is not broken, this environment is
    short of it."""
    from .packages import install_line, packages_needed

    packages, found = packages_needed(flow, catalog)
    have = {(n.node_id, n.package) for n in needs if n.kind == "package"}
    needs += [n for n in found if (n.node_id, n.package) not in have]
    listed = {p.distribution: p for p in packages}
    for need in needs:
        dist = need.package
        if need.kind != "package" or not dist:
            continue
        if dist not in listed:
            python = catalog.sandbox.python if catalog.sandbox is not None else None
            listed[dist] = MissingPackage(module=dist, distribution=dist, fix=install_line([dist], python))
        if need.node not in listed[dist].nodes:
            listed[dist].nodes.append(need.node)
    return [listed[d] for d in sorted(listed)]


def _check_components(nodes: dict[str, Any], catalog: Catalog, add, warnings: list[str]) -> None:
    for nid, node in nodes.items():
        kind = facts.node_type(node)
        saved = facts.frontend_node(node)
        lacking = [
            part for part, shape in (("template", dict), ("outputs", list)) if not isinstance(saved.get(part), shape)
        ]
        if lacking:  # lfx refuses the whole flow ("Failed to load graph"): a line here, never a traceback
            add(
                FlowProblem(
                    code="structure",
                    node=node_name(node),
                    node_id=nid,
                    message=f"{node_name(node)}'s saved node has no {' and no '.join(map(repr, lacking))}; "
                    "lfx cannot load the flow ('Failed to load graph').",
                    fix=f"Replace {node_name(node)} with a fresh copy of its component (or re-export the flow "
                    "from Langflow).",
                )
            )
            continue
        code = facts.fields(node).get("code")
        has_code = isinstance(code, dict) and bool(code.get("value"))
        if kind in catalog:
            continue
        if has_code:
            # Langflow runs the code saved in the node: an older or server-only component is fine.
            if kind != "CustomComponent":
                warnings.append(f"{node_name(node)} ({kind}) is not in the catalogue; the flow carries its code.")
            continue
        near = catalog.resolve(str(kind or ""))
        add(
            FlowProblem(
                code="unknown_component",
                node=node_name(node),
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
        _, th = facts.handles(edge)
        src_id, out_name, tgt_id, port = facts.ports(edge)
        src, tgt = nodes.get(src_id), nodes.get(tgt_id)
        for side, nid, node in (("source", src_id, src), ("target", tgt_id, tgt)):
            if node is None:
                other = tgt if side == "source" else src
                add(
                    FlowProblem(
                        code="unknown_node",
                        node=node_name(other) if other else None,
                        node_id=str(nid),
                        field=port if side == "target" else out_name,
                        message=f"An edge's {side} is node {nid!r}, which is not in the flow.",
                        fix="Remove the edge or add the missing node.",
                    )
                )
        if src is None or tgt is None:
            continue
        is_loop_edge = facts.is_loop_target(th)
        connected.add((tgt_id, port))  # one error per cause: a wrong edge still means "meant to connect"
        if not is_loop_edge:
            graph[src_id].append((tgt_id, index))
        outputs = {o.get("name"): o for o in facts.outputs(src)}
        output = outputs.get(out_name)
        if output is None:
            add(FlowProblem.missing_port("output", node_name(src), src_id, str(out_name), list(outputs)))
            continue
        out_types = list(output.get("types") or [])
        template = facts.fields(tgt)
        field = None if is_loop_edge else template.get(port)
        if is_loop_edge:
            loop = facts.loop_port(facts.frontend_node(tgt), port)
            if loop is not None:
                # A loop's feedback edge: it targets the loop's output port (Langflow's `allows_loop`).
                accepted = loop[1]
                if not types_compatible(out_types, accepted):
                    add(_mismatch(src, tgt, out_name, port, out_types, accepted, tgt_id))
                loop_edges.add(index)
                graph[src_id].append((tgt_id, index))
                continue
            graph[src_id].append((tgt_id, index))  # not a loop port after all: an ordinary edge
        if not isinstance(field, dict):
            inputs = [k for k, v in template.items() if isinstance(v, dict) and v.get("input_types")]
            add(FlowProblem.missing_port("input", node_name(tgt), tgt_id, str(port), inputs))
            continue
        accepted = list(field.get("input_types") or [])
        if not accepted:
            add(
                FlowProblem(
                    code="type_mismatch",
                    node=node_name(tgt),
                    node_id=tgt_id,
                    field=str(port),
                    message=f"{node_name(tgt)}.{port} takes no connection (it is set by value only).",
                    fix=f"Set {port} in config instead of connecting {node_name(src)}.{out_name}.",
                )
            )
        elif not types_compatible(out_types, accepted):
            add(_mismatch(src, tgt, out_name, port, out_types, accepted, tgt_id))
    return connected, loop_edges, graph


def _mismatch(src, tgt, out_name, port, out_types, accepted, tgt_id) -> FlowProblem:
    hint = conversion_hint(node_name(src), out_name, out_types, node_name(tgt), port, accepted).strip()
    return FlowProblem(
        code="type_mismatch",
        node=node_name(tgt),
        node_id=tgt_id,
        field=str(port),
        message=f"{node_name(src)}.{out_name} gives {out_types} but {node_name(tgt)}.{port} accepts {accepted}.",
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
                    names = " -> ".join(node_name(nodes[c]) for c in [*cycle, tgt])
                    add(
                        FlowProblem(
                            code="cycle",
                            node=node_name(nodes[tgt]),
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
    wires = []
    for e in edges:
        source, output, target, port = facts.ports(e)
        if source in nodes and target in nodes:
            wires.append((source, output, target, port, facts.handles(e)[1]))

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
        ports = facts.loop_port(facts.frontend_node(node))
        if ports is None:
            continue
        item, accepted = ports
        name = node_name(node)
        at_loop = partial(FlowProblem, node=name, node_id=nid, field=item)  # every problem names the loop's port
        back = {s for s, _, t, p, th in wires if t == nid and p == item and facts.is_loop_target(th)}
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


def _check_chat_inputs(nodes: dict[str, Any], edges: list[Any], add) -> None:
    """lfx/graph/graph/utils.py ``sort_chat_inputs_first``, run by ``graph.prepare()`` before any
    node runs: a run starts at the Chat Input nothing feeds, and there may be only one; with two,
    lfx refuses the flow ("Only one chat input is allowed in the graph").  lfx tells a Chat Input
    by its node id (``"ChatInput" in vertex_id``), as here; those nothing feeds all sit in its
    first layer, so a fed one never ends the search before the second unfed one is found."""
    fed = {target for source, _, target, _ in map(facts.ports, edges) if source in nodes}
    starts = [nid for nid in nodes if "ChatInput" in nid and nid not in fed]
    if len(starts) < 2:
        return
    names = ", ".join(f"{node_name(nodes[nid])} ({nid})" for nid in starts)
    add(
        FlowProblem(
            code="structure",
            node=node_name(nodes[starts[1]]),
            node_id=starts[1],
            message=f"The flow has {len(starts)} Chat Inputs that nothing feeds ({names}); a run starts at "
            "one Chat Input, and lfx refuses the flow: 'Only one chat input is allowed in the graph'.",
            fix="Keep one Chat Input and remove the others (a second text to type in can be a Text Input).",
        )
    )


def _in_tool_mode(node: dict[str, Any], edges: list[Any]) -> bool:
    if facts.frontend_node(node).get("tool_mode"):
        return True
    return any(facts.ports(e)[:2] == (node["id"], "component_as_tool") for e in edges)


def _check_inputs(nodes, edges, connected, add, needs: list[Need], warnings: list[str]) -> None:
    for nid, node in nodes.items():
        name = node_name(node)
        tool_mode = _in_tool_mode(node, edges)
        template = facts.fields(node)
        custom_fields = facts.frontend_node(node).get("custom_fields") or {}
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
            if field.get("type") == connections.FIELD_TYPE:
                continue  # a named connection: connections.check
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
