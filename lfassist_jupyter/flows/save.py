"""The flow file we write: a Langflow 1.13 flow file, as ``lfx export`` normalises it.

Langflow 1.13's Flow DevOps commands work on flow files: ``lfx validate`` (levels 1-4) requires a
top-level ``id``, ``name`` and ``data{nodes, edges}``; ``lfx push`` upserts a flow by its stable
``id`` (``PUT /api/v1/flows/{id}``); ``lfx export`` normalises a file for git. Every flow the
project saves (``%%assist_flow --save``, the panel's Save, the MCP server's save tool) is written
here, so each is such a file:

- **A stable id.** The flow's own ``id`` when it has one (it was saved, registered, or loaded
  from a file or a Langflow); else the ``id`` of the flow file it overwrites (the file is the
  flow's previous version: re-running a ``%%assist_flow --save qa.json`` cell keeps the id);
  else a new UUID. A flow fresh from a build has no id (``build_flow`` gives none): an id is an
  identity, given once and then kept, so ``lfx push`` and our Register update one flow in
  Langflow instead of making a new one each time.
- **The fields of a flow Langflow answers, and only those** (the ``Flow`` model of the Langflow
  SDK, lfx's ``export`` and ``push`` read it; a test checks the list against it), less the
  instance-specific ones ``lfx export`` strips (``updated_at``, ``created_at``, ``user_id``,
  ``folder_id``, ``access_type``, ``gradient``), each of its type; ``data`` holds ``nodes``,
  ``edges`` and ``viewport``. Any other key of the given flow is left out: a flow comes from
  whoever made it, and a file holding its extra keys could be read as something else (an
  ``ipython_config.json`` with ``InteractiveShellApp.exec_lines`` ran in the next kernel).
  ``tags`` mark it as ours, so a pushed flow is found by Register like a registered one.
- **lfx export's normalisation** (``lfx export --keep-secrets``): node keys that change when a node
  is dragged (``positionAbsolute``, ``dragging``, ``selected``) removed, every object's keys
  sorted, two-space indent, non-ASCII kept, a final newline; and no key is ever written: the
  ``value`` of every ``password`` or ``load_from_db`` field is cleared, **except** a global
  variable's name (``load_from_db: true`` and an ``UPPER_SNAKE`` name such as
  ``MY_SERVICE_KEY``): that is Langflow's reference to the variable, which Langflow, ``lfx run``
  and ``%%assist_flow --run-local --env MY_SERVICE_KEY`` read the key from, so a saved flow runs
  and is edited again as it was (plain ``lfx export`` clears these names too).
  ``lfx export --keep-secrets FILE`` leaves such a file byte for byte as it is (the tests check it
  against the installed lfx).

Standard library only, and nothing here runs a node's code: a flow is JSON. Callers check what
leaves for Langflow (the security scan) before they write.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lfassist_jupyter.artifacts.flow import VARIABLE_REF
from lfassist_jupyter.errors import ConfigError

FLOW_TAGS = ("lfassist", "lfassist-flow")
"""The tags of a flow from a notebook (Register finds ours by them; ``langflow/flows.py``)."""

VOLATILE_FIELDS = frozenset({"updated_at", "created_at", "user_id", "folder_id", "access_type", "gradient"})
"""Top-level fields ``lfx export`` strips: they belong to one Langflow instance, not to the flow."""

VOLATILE_NODE_KEYS = frozenset({"positionAbsolute", "dragging", "selected"})
"""Node keys ``lfx export`` strips: they change whenever a node is dragged on the canvas."""

FLOW_FIELDS: dict[str, Any] = {
    "endpoint_name": None,
    "icon": None,
    "icon_bg_color": None,
    "is_component": False,
    "locked": False,
    "mcp_enabled": False,
    "webhook": False,
}
"""The other fields of a flow as Langflow answers it, with Langflow's defaults (a flow of ours
keeps what it already says)."""

_FIELD_TYPES: dict[str, type] = {
    "endpoint_name": str,
    "icon": str,
    "icon_bg_color": str,
    "action_name": str,  # Langflow's name and description of the flow as an MCP tool
    "action_description": str,
    "locked": bool,
    "mcp_enabled": bool,
    "webhook": bool,
}
"""The fields a flow file keeps from the given flow, with their type (a value of another type is
Langflow's default); ``id``, ``name``, ``description``, ``tags``, ``is_component`` and ``data`` are
written by ``flow_file`` itself."""

FLOW_FILE_FIELDS = frozenset({"id", "name", "description", "tags", "is_component", "data", *_FIELD_TYPES})
"""Every top-level field of a flow file we write."""

DATA_FIELDS = frozenset({"nodes", "edges", "viewport"})
"""The fields of a flow file's ``data``."""

MAX_ID_PEEK = 20_000_000
"""The most of an existing file read to find its id (a flow file is JSON of a few MB at most)."""


@dataclass(frozen=True)
class SavedFlow:
    """Where a flow file was written, and the id it holds."""

    path: Path
    id: str
    id_source: str  # "flow" (its own), "file" (the file it overwrote), "new"

    def __str__(self) -> str:
        return str(self.path)


def is_flow_id(value: Any) -> bool:
    """Whether ``value`` is an id ``lfx push`` accepts (a UUID, as Langflow's flow ids are)."""
    if not isinstance(value, str) or len(value) > 64:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _sorted(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _sorted(v) for k, v in sorted(obj.items())}
    if isinstance(obj, list):
        return [_sorted(v) for v in obj]
    return obj


def normal_node(node: Any) -> Any:
    """A node as ``lfx export`` writes it: no drag-state keys, no secret values (a variable's name
    kept), keys sorted (what "unchanged" means for a node of a saved file: an edit keeps every
    other node equal to this)."""
    return _sorted(_normal_node(node))


def names_variable(field: Mapping[str, object]) -> bool:
    """A field holding a global variable's name, as Langflow refers to one: ``load_from_db`` and an
    ``UPPER_SNAKE`` name (``MY_SERVICE_KEY``); Langflow and ``lfx run`` read the value from that
    variable (``lfx run``: the environment variable of that name).  A name, never a key."""
    value = field.get("value")
    return field.get("load_from_db") is True and isinstance(value, str) and bool(VARIABLE_REF.match(value))


def _normal_node(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node = {k: v for k, v in node.items() if k not in VOLATILE_NODE_KEYS}
    data = dict(node.get("data") or {})
    inner = dict(data.get("node") or {})
    template = dict(inner.get("template") or {})
    for name, field in template.items():
        secret = isinstance(field, dict) and (field.get("password") or field.get("load_from_db"))
        if secret and not names_variable(field):
            template[name] = {**field, "value": ""}
    inner["template"] = template
    data["node"] = inner
    node["data"] = data
    return node


def flow_file(flow: dict[str, Any], *, flow_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    """``flow`` as the content of a Langflow 1.13 flow file (see the module's docstring).

    ``flow`` is Langflow flow JSON (a dict with ``data.nodes``; a bare ``{nodes, edges}`` is taken
    too). ``flow_id`` is the id to write (default: the flow's own, else a new one); ``name``
    renames it. Raises ``ConfigError`` with one line for something that is not a flow."""
    if not isinstance(flow, dict):
        raise ConfigError("a flow must be Langflow flow JSON (a dict with data.nodes and data.edges).")
    data = flow.get("data", flow)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ConfigError("the flow has no data.nodes: is it Langflow flow JSON?")
    edges = data.get("edges") or []
    if not isinstance(edges, list):
        raise ConfigError("the flow's data.edges is not a list: is it Langflow flow JSON?")
    own = flow.get("id")
    the_id = flow_id or (own if is_flow_id(own) else None) or str(uuid.uuid4())
    if not is_flow_id(the_id):
        raise ConfigError(f"a flow id must be a UUID (lfx push upserts by it), not {str(the_id)[:60]!r}.")
    title = name or flow.get("name")
    viewport = data.get("viewport")
    given_tags = found if isinstance(found := flow.get("tags"), list) else []
    tags = [t for t in given_tags if isinstance(t, str)]
    body: dict[str, Any] = {
        **FLOW_FIELDS,
        **{k: v for k, v in flow.items() if k in _FIELD_TYPES and isinstance(v, _FIELD_TYPES[k])},
        "id": the_id,
        "name": (title.strip() if isinstance(title, str) and title.strip() else "Flow from a notebook"),
        "description": flow.get("description") if isinstance(flow.get("description"), str) else "",
        "is_component": False,
        "tags": [*tags, *(t for t in FLOW_TAGS if t not in tags)],
        "data": {
            "nodes": [_normal_node(copy.deepcopy(n)) for n in data["nodes"]],
            "edges": copy.deepcopy(edges),
            "viewport": _viewport(viewport),
        },
    }
    return _sorted(body)


def _viewport(given: object) -> dict[str, float]:
    """The canvas position (``x``, ``y``, ``zoom``: numbers), else Langflow's default."""
    out: dict[str, float] = {"x": 0, "y": 0, "zoom": 1}
    if isinstance(given, dict):
        out |= {k: given[k] for k in out if type(given.get(k)) in (int, float)}
    return out


def flow_file_text(content: dict[str, Any]) -> str:
    """The file's text, as ``lfx export`` serialises it (its ``flow_to_json``)."""
    return json.dumps(content, indent=2, ensure_ascii=False) + "\n"


def file_flow_id(path: str | Path) -> str | None:
    """The id held by the flow file at ``path``, or None (no such file, not a regular file, too
    large, not JSON, or no UUID id): the file a save overwrites lends the flow its identity."""
    try:
        fd = os.open(Path(path).expanduser(), os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ID_PEEK:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            content = json.loads(fh.read(MAX_ID_PEEK + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    found = content.get("id") if isinstance(content, dict) else None
    return found if is_flow_id(found) else None


def _replaceable(target: Path) -> bool:
    """Whether a save may put a flow file at ``target``: nothing is there, or not a regular file
    (a link or a FIFO is replaced, never written through), or a flow file (JSON with ``data``
    holding ``nodes``).  A file of the user's (``package.json``: a flow's name comes from whoever
    made the flow) is never replaced."""
    try:
        info = os.lstat(target)
    except OSError:
        return True
    if not stat.S_ISREG(info.st_mode):
        return True
    if info.st_size > MAX_ID_PEEK:
        return False
    try:  # no blocking and no following: something swapped in meanwhile is not read
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return False
            content = json.loads(fh.read(MAX_ID_PEEK + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    data = content.get("data") if isinstance(content, dict) else None
    return isinstance(data, dict) and isinstance(data.get("nodes"), list)


def flow_file_path(path: str | Path) -> Path:
    """``path`` with ``.json`` added when it has another suffix (a flow file is JSON)."""
    target = Path(path).expanduser()
    return target if target.suffix.lower() == ".json" else target.with_name(target.name + ".json")


def _mode(target: Path) -> int:
    """The permissions of the file being replaced, else what a new file gets under the umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mask = os.umask(0o022)  # read it back (and restore it): there is no getter
        os.umask(mask)
        return 0o666 & ~mask


def write_flow_file(flow: dict[str, Any], path: str | Path, *, name: str | None = None) -> SavedFlow:
    """Write ``flow`` to ``path`` as a Langflow 1.13 flow file, and say which id it holds.

    The id: the flow's own, else the overwritten file's, else a new one (the caller keeps it on
    the flow, so a later Save or Register uses it). The file is replaced in one step (written
    beside it, then renamed): a failed write never leaves half a flow. Raises ``ConfigError``
    with one line when ``flow`` is not a flow or the file cannot be written."""
    target = flow_file_path(path)
    if not _replaceable(target):
        raise ConfigError(f"{target} exists and is not a Langflow flow file: not overwritten (choose another name).")
    own = flow.get("id") if isinstance(flow, dict) else None
    if is_flow_id(own):
        the_id, source = str(own), "flow"
    elif (found := file_flow_id(target)) is not None:
        the_id, source = found, "file"
    else:
        the_id, source = str(uuid.uuid4()), "new"
    try:
        text = flow_file_text(flow_file(flow, flow_id=the_id, name=name))
    except RecursionError:  # legal JSON can nest deeper than a copy of it can recurse
        raise ConfigError("The flow is nested too deeply to be written as a flow file.") from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp, _mode(target))  # mkstemp's file is private (0600); a flow file is not
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ConfigError(f"Could not write {target}: {exc.strerror or exc}") from exc
    return SavedFlow(path=target.resolve(), id=the_id, id_source=source)
