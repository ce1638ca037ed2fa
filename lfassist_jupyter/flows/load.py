"""Flow JSON where it enters: read from a file, or handed over as a dict, and shape-checked once.

A flow file may come from anyone (a colleague, a download, a shared folder), and a dict from
any caller: before any code walks it, it passes ``artifacts.flow.shape_problem``, so what is
wrong is said in one line naming the file and the field (``flow.json is not a Langflow flow:
data.edges[0].data.sourceHandle is a string, expected an object (a handle)``) instead of a
``KeyError`` three modules later. Every entry point that takes a flow file or flow JSON reads
it here: ``%%assist_flow FILE``, ``%assist flow load``, ``Assistant.load_flow``, the run
intent's file lookup, ``validate_flow``, ``run_flow_for_real``/``run_plan``, ``flow_picture``,
``flow_to_spec`` and ``repair_flow``. A Langflow server's flows are checked with the same rule
in ``langflow/flows.py``, and flows kept in a session file in ``core/session.py``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, TypeGuard

from lfassist_jupyter.artifacts.flow import shape_problem
from lfassist_jupyter.errors import FlowFileError

MAX_FLOW_FILE = 20_000_000
"""A flow carries its nodes' code (tens of KB a node): a file past 20 MB is not a flow of ours."""


def is_flow_path(value: Any) -> TypeGuard[str | Path]:
    """A ``Path``, or one line of text ending in ``.json``: what a flow argument means as a file."""
    return isinstance(value, Path) or (isinstance(value, str) and value.strip().endswith(".json") and "\n" not in value)


def load_flow_file(path: str | Path) -> tuple[Any, str | None]:
    """``(the file's JSON, None)``, or ``(None, why it cannot be read)``: missing, not a regular
    file (a FIFO would block, a link to ``/dev/zero`` would never end), too large, or not JSON.
    The file is opened without blocking and judged by what was opened (no race with a swap), and
    read with a cap. The shape is not checked here (``read_flow_file`` does both)."""
    try:
        target = Path(path).expanduser()
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "No such flow file"
    except (OSError, ValueError) as exc:  # ValueError: a name no file system takes (a NUL)
        return None, str(getattr(exc, "strerror", None) or exc)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "it is not a regular file, so it is not read as a flow"
        raw = b""
        while info.st_size <= MAX_FLOW_FILE and len(raw) <= MAX_FLOW_FILE:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            raw += chunk
    except OSError as exc:
        return None, str(exc.strerror or exc)
    finally:
        os.close(fd)
    if info.st_size > MAX_FLOW_FILE or len(raw) > MAX_FLOW_FILE:
        return None, f"it is larger than {MAX_FLOW_FILE // 1_000_000} MB, too large to be a flow"
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "it is not JSON (not UTF-8 text)"
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
