"""Control-flow inference: the loop and branch wiring models get wrong, fixed before building.

Langflow's Loop iterates through its ``item`` output: the body starts at ``item`` and its
result must come back into the Loop's ``item`` *handle* (an output flagged ``allows_loop``,
which lfx's describe tool also lists as the loop's feedback input); ``done`` carries the
collected results on. If-Else (``ConditionalRouter``) has two outputs, ``true_result`` and
``false_result``. Models write these wrong in a few recurring ways, and each has one right
reading:

* the body's result fed into the Loop's ``data`` input (a plain cycle): it is the feedback;
* ``done`` into the body (or ``item`` and ``done`` swapped): the node that leads back to the
  Loop takes ``item``, the node that does not takes ``done``;
* no feedback edge at all: the one output of the body's last node that nothing consumes yet
  and whose type ``item`` takes feeds ``item`` (several such outputs: the problem lists them);
* branch edges from ``R.true`` / ``R.if_false`` / ``R.output``: mapped to the outputs they mean.

A rule fires only when its reading is the only one. When two edges would land on the same
port, or a branch would disappear (both branches from a non-existent ``R.result``), nothing
is changed and the problem is returned as a ``FlowProblem`` for the model to fix: the sandbox
build's generic port repair would otherwise map both onto ``true_result`` and lose a branch.

Pure data work over the spec text (or flow JSON) and the catalogue's templates: no lfx here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import input_ports, loop_port, output_ports, types_compatible

from .results import Change, FlowProblem

__all__ = ["ControlResult", "branch_ports", "control_flow_json", "infer_control_flow"]

_EDGE = re.compile(r"^(\s*)(\w+)\.(\w+)\s*(?:->|→|=>)\s*(\w+)\.(\w+)\s*$")
_NODE = re.compile(r"^\s*(\w+)\s*:\s*(\S.*?)\s*$")
_SECTION = re.compile(r"^\s*(nodes|edges|config)\s*:\s*$")
_TRUE_WORDS = {"true", "yes", "then", "if", "match", "matched", "truecase", "iftrue", "ontrue"}
_FALSE_WORDS = {"false", "no", "else", "otherwise", "nomatch", "falsecase", "iffalse", "onfalse", "notmatched"}
_GENERIC_WORDS = {"output", "out", "result", "results", "message", "text", "response", "value", "route", "routed"}
_DEAD_END_TYPES = ("ChatOutput", "TextOutput")


@dataclass
class _Edge:
    src: str
    out: str
    tgt: str
    port: str
    line: int | None = None  # the spec line it came from (None: added)
    dropped: bool = False


@dataclass
class ControlResult:
    """The rewired spec (or flow), what changed, and what is left for the model."""

    spec: str
    changes: list[Change]
    errors: list[FlowProblem]


def branch_ports(template: dict[str, Any]) -> tuple[str, str] | None:
    """A router's true and false outputs (If-Else's ``true_result`` / ``false_result``)."""
    names = [str(o.get("name")) for o in template.get("outputs") or [] if isinstance(o, dict)]
    true = [n for n in names if "true" in n.lower()]
    false = [n for n in names if "false" in n.lower()]
    if len(true) == 1 and len(false) == 1:
        return true[0], false[0]
    return None


def _word(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


def _branch_of(name: str) -> str | None:
    """'true', 'false', 'generic' or None (a name that means something else)."""
    word = _word(name)
    if word in _TRUE_WORDS or ("true" in word and "false" not in word):
        return "true"
    if word in _FALSE_WORDS or ("false" in word and "true" not in word):
        return "false"
    if word in _GENERIC_WORDS:
        return "generic"
    return None


class _Graph:
    def __init__(self, types: dict[str, str], templates: dict[str, dict[str, Any]], edges: list[_Edge]) -> None:
        self.types, self.templates, self.edges = types, templates, edges
        self.changes: list[Change] = []
        self.errors: list[FlowProblem] = []
        self.held: list[int] = []  # edges (by id) no other repair may map: they are the model's to fix

    def live(self) -> list[_Edge]:
        return [e for e in self.edges if not e.dropped]

    def reach(self, starts: Iterable[str], avoid: str, *, backwards: bool = False) -> set[str]:
        """Nodes reachable from ``starts`` along edges (or against them), never through ``avoid``.

        One adjacency pass, then a walk: linear in the edges, whatever the spec holds."""
        nexts: dict[str, list[str]] = {}
        for e in self.live():
            a, b = (e.tgt, e.src) if backwards else (e.src, e.tgt)
            nexts.setdefault(a, []).append(b)
        seen: set[str] = set()
        todo = [s for s in starts if s != avoid]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            todo += [n for n in nexts.get(node, ()) if n != avoid and n not in seen]
        return seen

    def outputs(self, node: str) -> dict[str, list[str]]:
        return output_ports(self.templates.get(node) or {})

    def accepts(self, node: str, port: str) -> list[str] | None:
        """The types an input takes (None: not known here, e.g. a prompt's variable)."""
        return input_ports(self.templates.get(node) or {}).get(port)

    def fits(self, src: str, out: str, tgt: str, port: str) -> bool:
        produced, wanted = self.outputs(src).get(out), self.accepts(tgt, port)
        return produced is None or wanted is None or types_compatible(produced, wanted)

    def fits_loop(self, edge: _Edge, accepted: list[str]) -> bool:
        produced = self.outputs(edge.src).get(edge.out)
        return produced is None or types_compatible(produced, accepted)

    def taken(self, edge: _Edge, out: str, port: str | None = None) -> bool:
        """Another edge already runs from ``edge.src``.``out`` to the same target port."""
        port = port or edge.port
        return any(
            e is not edge and e.src == edge.src and e.out == out and e.tgt == edge.tgt and e.port == port
            for e in self.live()
        )

    def move(self, edge: _Edge, *, out: str | None = None, tgt: str | None = None, port: str | None = None) -> None:
        before = f"{edge.src}.{edge.out} -> {edge.tgt}.{edge.port}"
        edge.out, edge.tgt, edge.port = out or edge.out, tgt or edge.tgt, port or edge.port
        after = f"{edge.src}.{edge.out} -> {edge.tgt}.{edge.port}"
        self.changes.append(Change(kind="edge", node=edge.src, field=None, before=before, after=after, message=""))

    def note(self, reason: str) -> None:
        change = self.changes[-1]
        change.message = f"{change.before} rewired to {change.after}: {reason}"

    def error(self, node: str, field: str | None, message: str, fix: str, code: str = "structure") -> None:
        self.errors.append(FlowProblem(code=code, node=node, field=field, message=message, fix=fix))


def _fix_branches(g: _Graph) -> None:
    for node, template in g.templates.items():
        ports = branch_ports(template)
        if ports is None:
            continue
        true_port, false_port = ports
        known = set(g.outputs(node))
        mine = [e for e in g.live() if e.src == node]
        wrong = [e for e in mine if e.out not in known]
        if not wrong:
            continue
        used = {e.out for e in mine if e.out in known}
        generic: list[_Edge] = []
        for edge in wrong:
            kind = _branch_of(edge.out)
            if kind in ("true", "false"):
                port = true_port if kind == "true" else false_port
                if g.taken(edge, port):
                    continue
                wrong_name = edge.out
                g.move(edge, out=port)
                g.note(f"the branch {wrong_name!r} is If-Else's {kind} output {port!r}")
                used.add(port)
            elif kind == "generic":
                generic.append(edge)
        if not generic:
            continue
        free = [p for p in (true_port, false_port) if p not in used]
        names = sorted({e.out for e in generic})
        if len(generic) == 1 and free:
            edge = generic[0]
            g.move(edge, out=free[0])
            label = "the one left" if len(free) == 1 else "the output when the condition holds"
            g.note(f"{names[0]!r} -> {free[0]!r} ({label})")
            continue
        g.held += [id(e) for e in generic]
        g.error(
            node,
            names[0],
            f"{node} has no output {names[0]!r}, and {len(generic)} edges use it: which branch each is "
            "cannot be told (mapping them would lose a branch)."
            if len(generic) > 1
            else f"{node} has no output {names[0]!r}, and both of its branches are already connected.",
            f"Connect the branch taken when the condition holds from {node}.{true_port} and the other "
            f"from {node}.{false_port}.",
            code="missing_output",
        )


def _fix_loops(g: _Graph) -> None:
    for loop, template in g.templates.items():
        ports = loop_port(template)
        if ports is None:
            continue
        item, accepted = ports
        others = [n for n in g.outputs(loop) if n != item]
        done = others[0] if len(others) == 1 else None

        def feedback(loop: str = loop, item: str = item) -> list[_Edge]:
            return [e for e in g.live() if e.tgt == loop and e.port == item]

        # 1. The body's result into the loop's data input: a cycle, meant as the feedback.
        body_of_all = g.reach([e.tgt for e in g.live() if e.src == loop], avoid=loop)
        into_data = [e for e in g.live() if e.tgt == loop and e.port != item and e.src in body_of_all]
        if into_data and not feedback():
            if len(into_data) == 1 and g.fits_loop(into_data[0], accepted):
                edge = into_data[0]
                g.move(edge, port=item)
                g.note(f"the body's result goes back into {loop}'s feedback handle {item!r}, not its input")
            else:
                edge = into_data[0]
                g.error(
                    loop,
                    edge.port,
                    f"{edge.src}.{edge.out} -> {loop}.{edge.port} closes a cycle through the loop's input.",
                    f"Feed the body's result back into {loop}.{item} (the loop's feedback handle).",
                    code="cycle",
                )
                continue

        # 2. done into the body / item and done swapped (needs a feedback edge to know the body).
        back = {e.src for e in feedback()}
        if back and done:
            leads_back = _leads_to(g, back, loop)
            for edge in [e for e in g.live() if e.src == loop and e.out == done and e.tgt in leads_back]:
                if g.taken(edge, item):
                    continue
                g.move(edge, out=item)
                g.note(f"{done!r} into the loop body: the body starts at {item!r}")
            leads_back = _leads_to(g, back, loop) | {loop}
            for edge in [e for e in g.live() if e.src == loop and e.out == item and e.tgt not in leads_back]:
                if not g.fits(loop, done, edge.tgt, edge.port) or g.taken(edge, done):
                    continue
                g.move(edge, out=done)
                g.note(f"{item!r} into a node that never leads back to the loop: after the loop comes {done!r}")

        # 3. No feedback edge: the one output of the body's last node that can feed item.
        if feedback():
            continue
        starts = [e.tgt for e in g.live() if e.src == loop and e.out == item]
        if not starts:
            continue
        body = g.reach(starts, avoid=loop)
        fits = _feedback_candidates(g, body, accepted)
        if len(fits) == 1:
            end, out = fits[0]
            g.edges.append(_Edge(src=end, out=out, tgt=loop, port=item))
            g.changes.append(
                Change(
                    kind="edge",
                    node=end,
                    before=None,
                    after=f"{end}.{out} -> {loop}.{item}",
                    message=f"added {end}.{out} -> {loop}.{item}: the loop's feedback edge (the body's result "
                    "goes back into the loop)",
                )
            )
            if done:
                for edge in [e for e in g.live() if e.src == loop and e.out == done and e.tgt in body]:
                    if not g.taken(edge, item):
                        g.move(edge, out=item)
                        g.note(f"{done!r} into the loop body: the body starts at {item!r}")
            continue
        listed = ", ".join(f"{n}.{o}" for n, o in fits)
        g.error(
            loop,
            item,
            f"{loop} has no feedback edge: nothing goes back into {loop}.{item}, so the loop body never runs"
            + (f"; {len(fits)} outputs of the body could feed it ({listed}): which one is meant?" if fits else "."),
            f"Add an edge from the body's last node into {loop}.{item} (an output of type "
            f"{'/'.join(accepted)}{', one of ' + listed if fits else ''}); take the collected results from "
            f"{loop}.{done or 'done'}.",
        )


def _feedback_candidates(g: _Graph, body: set[str], accepted: list[str]) -> list[tuple[str, str]]:
    """The (node, output) pairs that could close a loop without a feedback edge: the outputs of
    the body's last nodes (those whose results go only to Chat/Text Outputs showing a step, or
    nowhere) that nothing consumes yet and whose type the loop's item takes."""
    consumers: dict[str, set[str]] = {}
    consumed = set()
    for e in g.live():
        consumers.setdefault(e.src, set()).add(e.tgt)
        consumed.add((e.src, e.out))

    def dead_end(node: str) -> bool:
        return str(g.types.get(node, "")).endswith(_DEAD_END_TYPES)

    ends = sorted(n for n in body if not dead_end(n) and all(dead_end(t) for t in consumers.get(n, ())))
    return [
        (n, out)
        for n in ends
        for out, types in g.outputs(n).items()
        if (n, out) not in consumed and types_compatible(types, accepted)
    ]


def _leads_to(g: _Graph, back: set[str], loop: str) -> set[str]:
    """Nodes from which a feedback source is reachable without passing the loop."""
    return g.reach(back, avoid=loop, backwards=True)


def _read_spec(text: str) -> tuple[list[str], dict[str, str], list[_Edge], int | None]:
    lines = text.splitlines()
    types: dict[str, str] = {}
    edges: list[_Edge] = []
    section = None
    last_edge: int | None = None
    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
            if section == "edges":
                last_edge = i
            continue
        if section == "nodes":
            n = _NODE.match(line)
            if n:
                types[n.group(1)] = n.group(2)
        elif section == "edges":
            e = _EDGE.match(line)
            if e:
                edges.append(_Edge(e.group(2), e.group(3), e.group(4), e.group(5), line=i))
                last_edge = i
    return lines, types, edges, last_edge


def infer_control_flow(spec: str, catalog: Any) -> ControlResult:
    """Fix a spec's loop and branch wiring; the rewritten spec, the changes, the problems left.

    ``catalog`` is a ``Catalog`` (its templates tell which node is a Loop or a router). A spec
    without a Loop or a router comes back unchanged.
    """
    lines, raw_types, edges, last_edge = _read_spec(spec)
    types: dict[str, str] = {}
    templates: dict[str, dict[str, Any]] = {}
    for node, kind in raw_types.items():
        key = kind if kind in catalog else catalog.resolve(kind)
        if key is not None:
            types[node], templates[node] = key, catalog.registry[key]
    g = _Graph(types, templates, edges)
    if not any(loop_port(t) or branch_ports(t) for t in templates.values()):
        return ControlResult(spec=spec, changes=[], errors=[])
    _fix_branches(g)
    _fix_loops(g)
    if not g.changes:
        return ControlResult(spec=spec, changes=[], errors=g.errors)
    indent = "  "
    for edge in g.edges:
        if edge.line is not None:
            written = _EDGE.match(lines[edge.line])
            indent = written.group(1) if written else indent
            lines[edge.line] = f"{indent}{edge.src}.{edge.out} -> {edge.tgt}.{edge.port}"
    added = [f"{indent}{e.src}.{e.out} -> {e.tgt}.{e.port}" for e in g.edges if e.line is None]
    if added:
        if last_edge is None:
            lines += ["edges:", *added]
        else:
            lines[last_edge + 1 : last_edge + 1] = added
    out = "\n".join(lines) + ("\n" if spec.endswith("\n") else "")
    return ControlResult(spec=out, changes=g.changes, errors=g.errors)


def control_flow_json(flow: dict[str, Any]) -> tuple[set[int], list[Change]]:
    """The same inference on Langflow flow JSON, in place (``repair_flow`` passes a copy).

    The nodes' own templates tell the ports (a flow carries them). Returns the indexes of the
    edges left for the model (no other repair may map them) and the changes. Moved edges get
    handles as lfx's ``add_connection`` writes them (an output-shaped target for a feedback edge).
    """
    nodes = facts.by_id(facts.nodes(flow))
    templates = {k: facts.frontend_node(n) for k, n in nodes.items()}
    if not any(loop_port(t) or branch_ports(t) for t in templates.values()):
        return set(), []
    raw = facts.edges(flow)
    edges: list[_Edge] = []
    for i, edge in enumerate(raw):
        source, out, target, port = facts.ports(edge)
        if source in nodes and target in nodes and out and port:
            edges.append(_Edge(str(source), str(out), str(target), str(port), line=i))
    before = {id(e): (e.out, e.tgt, e.port) for e in edges}
    g = _Graph({k: str(facts.node_type(n)) for k, n in nodes.items()}, templates, edges)
    _fix_branches(g)
    _fix_loops(g)
    held = {e.line for e in edges if id(e) in g.held and e.line is not None}
    for e in g.edges:
        if e.line is not None and before[id(e)] == (e.out, e.tgt, e.port):
            continue
        if e.line is None:
            facts.add_edge(flow, facts.new_edge(nodes[e.src], e.out, nodes[e.tgt], e.port))
        else:
            facts.rewire(raw[e.line], nodes[e.src], e.out, nodes[e.tgt], e.port)
    return held, g.changes
