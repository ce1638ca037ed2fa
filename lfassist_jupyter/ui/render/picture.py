"""A picture of a flow: self-contained inline SVG, laid out left to right by topological layer.

Plain SVG inside HTML, with no script, no stylesheet link and no external reference, so it
renders the same in JupyterLab, in an exported HTML file and in VS Code's notebook view, and
survives notebook trust rules. Every text is escaped.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

from lfassist_jupyter.artifacts import flow as facts

_W, _H = 180, 56  # node box
_GAP_X, _GAP_Y = 90, 34
_PAD = 20
_MAX_LABEL = 24


def _label(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def _layers(ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layers over the graph without its back edges (found by depth-first search).

    Loop feedback edges are left out by the caller; any other cycle still lays out because
    its closing edge is a back edge of the search.
    """
    succ: dict[str, list[str]] = defaultdict(list)
    for s, t in edges:
        succ[s].append(t)
    state: dict[str, int] = {}
    order: list[str] = []
    forward: dict[str, list[str]] = defaultdict(list)
    for root in ids:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            nid, it = stack[-1]
            for t in it:
                if state.get(t) == 1:
                    continue  # back edge: ignored for layering
                forward[nid].append(t)
                if t not in state:
                    state[t] = 1
                    stack.append((t, iter(succ[t])))
                    break
            else:
                state[nid] = 2
                order.append(nid)
                stack.pop()
    layer = dict.fromkeys(ids, 0)
    for nid in reversed(order):  # reverse post-order is a topological order of the forward edges
        for t in forward[nid]:
            layer[t] = max(layer[t], layer[nid] + 1)
    return layer


class FlowPicture:
    """The SVG of a flow; displays itself in a notebook (`_repr_html_`)."""

    def __init__(self, svg: str, title: str = "") -> None:
        self.svg = svg
        self.title = title

    def _repr_html_(self) -> str:
        return self.html()

    def html(self) -> str:
        caption = f'<div style="font:600 13px sans-serif;margin:4px 0">{escape(self.title)}</div>' if self.title else ""
        return f'<div class="lfassist-flow-picture" style="overflow-x:auto">{caption}{self.svg}</div>'


def flow_picture(flow: dict[str, Any] | str | Path) -> FlowPicture:
    """Draw a Langflow flow (flow JSON or a flow file): nodes as boxes with their display names,
    edges labelled with their type. ``FlowFileError`` (one line) when it is not a flow."""
    from lfassist_jupyter.flows.load import flow_argument

    flow = flow_argument(flow)
    nodes = facts.components(flow)
    by_id = facts.by_id(nodes)
    ids = list(by_id)
    pairs = [e for e in facts.edges(flow) if e.get("source") in by_id and e.get("target") in by_id]
    # A loop's feedback edge targets the loop's output port (no fieldName): drawn back, not layered.
    forward = [e for e in pairs if not facts.is_loop_target(facts.handles(e)[1])]
    layer = _layers(ids, [(e["source"], e["target"]) for e in forward])
    columns: dict[int, list[str]] = defaultdict(list)
    for nid in ids:
        columns[layer[nid]].append(nid)
    rows = max((len(c) for c in columns.values()), default=1)
    width = _PAD * 2 + (max(columns, default=0) + 1) * (_W + _GAP_X) - _GAP_X
    height = _PAD * 2 + rows * (_H + _GAP_Y) - _GAP_Y + (_GAP_Y if len(forward) < len(pairs) else 0)
    pos: dict[str, tuple[float, float]] = {}
    for col, members in columns.items():
        offset = (rows - len(members)) * (_H + _GAP_Y) / 2
        for row, nid in enumerate(members):
            pos[nid] = (_PAD + col * (_W + _GAP_X), _PAD + offset + row * (_H + _GAP_Y))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family="sans-serif">',
        f"<title>{escape(str(flow.get('name') or 'flow'))}</title>",
        '<defs><marker id="lfa-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker></defs>',
    ]
    for e in pairs:
        sx, sy = pos[e["source"]]
        tx, ty = pos[e["target"]]
        x1, y1, x2, y2 = sx + _W, sy + _H / 2, tx, ty + _H / 2
        sh, th = facts.handles(e)
        kind = "/".join(sh.get("output_types") or []) or "?"
        port = facts.target_port(th) or ""
        back = x2 <= x1
        if back:  # a loop's feedback edge: arc below the boxes
            low = max(sy, ty) + _H + _GAP_Y / 2
            d = f"M{x1 - _W / 2},{sy + _H} C{x1 - _W / 2},{low} {x2 + _W / 2},{low} {x2 + _W / 2},{ty + _H}"
            lx, ly = (x1 + x2) / 2, low
        else:
            mid = (x1 + x2) / 2
            d = f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"
            lx, ly = mid, (y1 + y2) / 2 - 4
        parts.append(
            f'<path d="{d}" fill="none" stroke="#64748b" stroke-width="1.5" marker-end="url(#lfa-arrow)">'
            f"<title>{escape(str(sh.get('name')))} -&gt; {escape(str(port))} ({escape(kind)})</title></path>"
        )
        parts.append(
            f'<text x="{lx}" y="{ly}" font-size="10" fill="#475569" text-anchor="middle">{escape(kind)}</text>'
        )
    for nid in ids:
        x, y = pos[nid]
        name = facts.node_name(by_id[nid])
        kind = facts.node_type(by_id[nid]) or ""
        parts.append(
            f'<g><title>{escape(nid)}</title><rect x="{x}" y="{y}" width="{_W}" height="{_H}" rx="8" '
            'fill="#f8fafc" stroke="#7c3aed" stroke-width="1.5"/>'
            f'<text x="{x + _W / 2}" y="{y + 24}" font-size="13" font-weight="600" fill="#0f172a" '
            f'text-anchor="middle">{escape(_label(name))}</text>'
            f'<text x="{x + _W / 2}" y="{y + 42}" font-size="10" fill="#64748b" '
            f'text-anchor="middle">{escape(_label(kind))}</text></g>'
        )
    parts.append("</svg>")
    return FlowPicture("".join(parts), title=str(flow.get("name") or ""))
