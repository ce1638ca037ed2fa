"""Malformed flow JSON, made systematically from a real Langflow starter flow.

Each structural field of the flow (the document, ``data``, ``nodes``, ``edges``, one node and
one edge and each field of theirs the code navigates: ids, types, templates, outputs, ports,
handles) is replaced by each JSON type it is not (object, array, string, number, null). The
node is the target of the first edge and the template field the one that edge fills, so a
broken node is also reached through the wiring. The issue's examples (``{"data": []}``, a
handle that is a string or a list, a node id that is a list) are among the cases; a file that
is not JSON at all is one more.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

WRONG: dict[str, Any] = {"object": {"k": 1}, "array": [1, "a"], "string": "x", "number": 7, "null": None}

_NODE_FIELDS: list[tuple[Any, ...]] = [
    (),
    ("id",),
    ("type",),
    ("data",),
    ("data", "type"),
    ("data", "node"),
    ("data", "node", "display_name"),
    ("data", "node", "template"),
    ("data", "node", "outputs"),
    ("data", "node", "outputs", 0),
    ("data", "node", "outputs", 0, "name"),
    ("data", "node", "outputs", 0, "types"),
    ("data", "node", "template", "{port}"),
    ("data", "node", "template", "{port}", "input_types"),
    ("data", "node", "template", "{port}", "type"),
    ("data", "node", "template", "code"),
    ("data", "node", "template", "code", "value"),
]
_EDGE_FIELDS: list[tuple[Any, ...]] = [
    (),
    ("id",),
    ("source",),
    ("target",),
    ("sourceHandle",),
    ("targetHandle",),
    ("data",),
    ("data", "sourceHandle"),
    ("data", "targetHandle"),
    ("data", "sourceHandle", "id"),
    ("data", "sourceHandle", "name"),
    ("data", "sourceHandle", "dataType"),
    ("data", "sourceHandle", "output_types"),
    ("data", "targetHandle", "id"),
    ("data", "targetHandle", "fieldName"),
    ("data", "targetHandle", "type"),
    ("data", "targetHandle", "inputTypes"),
]


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "number"


def structural_paths(flow: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The paths (keys and list indexes from the document's root) of the fields mutated."""
    edges = flow["data"]["edges"]
    edge = edges[0]
    port = edge["data"]["targetHandle"]["fieldName"]
    node_index = next(i for i, n in enumerate(flow["data"]["nodes"]) if n["id"] == edge["target"])
    paths: list[tuple[Any, ...]] = [(), ("name",), ("description",), ("data",), ("data", "nodes"), ("data", "edges")]
    for field in _NODE_FIELDS:
        paths.append(("data", "nodes", node_index, *(port if f == "{port}" else f for f in field)))
    for field in _EDGE_FIELDS:
        paths.append(("data", "edges", 0, *field))
    return paths


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def mutate(flow: dict[str, Any], path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``flow`` whose field at ``path`` is ``value``."""
    if not path:
        return copy.deepcopy(value)
    out = copy.deepcopy(flow)
    _get(out, path[:-1])[path[-1]] = copy.deepcopy(value)
    return out


def label(path: tuple[Any, ...], kind: str) -> str:
    where = ".".join(str(p) for p in path) or "<document>"
    return f"{where}={kind}"


def malformed_cases(starter: Path) -> list[tuple[str, str]]:
    """``(label, file text)`` for every structural field of ``starter`` x every JSON type it is not."""
    flow = json.loads(starter.read_text(encoding="utf-8"))
    cases = []
    for path in structural_paths(flow):
        original = _json_type(_get(flow, path))
        for kind, value in WRONG.items():
            if kind != original:
                cases.append((label(path, kind), json.dumps(mutate(flow, path, value))))
    cases.append(("<not JSON>", '{"data": {"nodes": [ '))
    return cases
