"""A spec's text, read as a person reads it: the spec inside a model reply (``extract_spec``) and
the lines of its ``nodes:`` section (``spec_nodes``).

Plain text work (``re`` only), below both the builder (``build.py``: it builds what it finds
here) and the checks (``code_checks.py``: a duplicated id is found in these lines, before lfx's
parser keeps only the last of it), so that neither imports the other.
"""

from __future__ import annotations

import re

from .results import FlowSpecError

__all__ = ["extract_spec", "spec_nodes"]

# The closing fence starts a line (CommonMark: at most three spaces before it): a value of the
# spec that holds a fence of its own (a prompt asking for ```markdown) is indented in its `|`
# block, so it never closes the spec's fence.
_FENCE = re.compile(r"```[ \t]*([\w.+-]*)[^\n]*\n(.*?)^ {0,3}```", re.DOTALL | re.MULTILINE)
_SECTION = re.compile(r"^\s*(nodes|edges|config):\s*$", re.MULTILINE)
_NODE_LINE = re.compile(r"^\s*([\w-]+)\s*:\s*(\S.*?)\s*$")


def extract_spec(reply: str) -> str:
    """The spec text in a model reply: the first fenced block with a `nodes:` section, or the bare spec."""
    if not isinstance(reply, str) or not reply.strip():
        raise FlowSpecError("The reply is empty: expected a flow spec with a 'nodes:' section.")
    for match in _FENCE.finditer(reply):
        if re.search(r"^\s*nodes:\s*$", match.group(2), re.MULTILINE):
            return match.group(2).strip("\n")
    first = _SECTION.search(reply)
    if first is None or not re.search(r"^\s*nodes:\s*$", reply, re.MULTILINE):
        raise FlowSpecError(
            "No flow spec found: expected a 'nodes:' section (ID: ComponentType lines), "
            "then 'edges:' (A.output -> B.input) and optionally 'config:' (B.field: value)."
        )
    # A bare spec: start at a name:/description: line just above the first section, if any.
    lines = reply[: first.start()].splitlines()
    head: list[str] = []
    for line in reversed(lines):
        if re.match(r"^\s*(name|description):", line):
            head.insert(0, line.strip())
        elif line.strip():
            break
    body = reply[first.start() :].rstrip()
    return "\n".join([*head, body]).strip("\n")


def spec_nodes(text: str) -> list[tuple[str, str, int]] | None:
    """(id, component type, line) of each line of the spec's ``nodes:`` section, read the way a
    person reads them (lfx's parser keeps only the last of a duplicated id); None: not a spec."""
    try:
        spec = extract_spec(text)
    except FlowSpecError:
        return None  # not a spec: the loader says so
    nodes: list[tuple[str, str, int]] = []
    section = None
    for number, line in enumerate(spec.splitlines(), 1):
        head = _SECTION.match(line)
        if head:
            section = head.group(1)
            continue
        if section != "nodes" or not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _NODE_LINE.match(line)
        if match:
            nodes.append((match.group(1), match.group(2), number))
    return nodes
