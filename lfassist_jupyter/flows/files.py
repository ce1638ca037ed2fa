"""Flow JSON where it enters: read from a file, or handed over as a dict, and shape-checked once.

A flow file may come from anyone (a colleague, a download, a shared folder), and a dict from
any caller: before any code walks it, it passes ``artifacts.flow.shape_problem``, so what is
wrong is said in one line naming the file and the field (``flow.json is not a Langflow flow:
data.edges[0].data.sourceHandle is a string, expected an object (a handle)``) instead of a
``KeyError`` three modules later. Every entry point that takes a flow file or flow JSON reads
it here: ``%%assist_flow FILE``, ``%assist flow load``, ``Assistant.load_flow``, the run
intent's file lookup, ``validate_flow``, ``run_flow``/``run_plan``, ``flow_picture``,
``flow_to_spec`` and ``repair_flow``. A Langflow server's flows are checked with the same rule
in ``langflow/flows.py``, and flows kept in a session file in ``core/session.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lfassist_jupyter.artifacts.flow import shape_problem
from lfassist_jupyter.errors import FlowFileError

MAX_FLOW_FILE = 20_000_000
"""A flow carries its nodes' code (tens of KB a node): a file past 20 MB is not a flow of ours."""


def is_flow_path(value: Any) -> bool:
    """A ``Path``, or one line of text ending in ``.json``: what a flow argument means as a file."""
    return isinstance(value, Path) or (isinstance(value, str) and value.strip().endswith(".json") and "\n" not in value)


def load_flow_file(path: str | Path) -> tuple[Any, str | None]:
    """``(the file's JSON, None)``, or ``(None, why it cannot be read)``: missing, not a regular
    file (a FIFO would block, a device never ends), too large, or not JSON. The shape is not
    checked here (``read_flow_file`` does both)."""
    try:
        target = Path(path).expanduser()
        if not target.exists():
            return None, "No such flow file"
        if not target.is_file():
            return None, "it is not a regular file"
        if target.stat().st_size > MAX_FLOW_FILE:
            return None, f"it is larger than {MAX_FLOW_FILE // 1_000_000} MB, too large to be a flow"
        text = target.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:  # ValueError: a name no file system takes (a NUL)
        if isinstance(exc, UnicodeDecodeError):
            return None, "it is not JSON (not UTF-8 text)"
        return None, str(getattr(exc, "strerror", None) or exc)
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        return None, f"it is not JSON ({exc})"


def require_flow(flow: Any, source: str | None = None) -> dict[str, Any]:
    """``flow`` itself when it has the shape of Langflow flow JSON, else ``FlowFileError``
    naming ``source`` (a file, a server) and the field that is wrong."""
    problem = shape_problem(flow)
    if problem is not None:
        where = f"{source} is not a Langflow flow" if source else "Not a Langflow flow"
        raise FlowFileError(f"{where}: {problem}.")
    return flow


def read_flow_file(path: str | Path) -> dict[str, Any]:
    """The flow in the file at ``path``, shape-checked; ``FlowFileError`` with one line otherwise."""
    data, why = load_flow_file(path)
    if why is not None:
        raise FlowFileError(f"Could not read the flow file {path}: {why}.")
    return require_flow(data, str(path))


def flow_argument(flow: Any) -> dict[str, Any]:
    """What a public function's ``flow`` argument holds: a file (a path) read, or a dict checked."""
    return read_flow_file(flow) if is_flow_path(flow) else require_flow(flow)
