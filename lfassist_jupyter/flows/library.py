"""A folder of flow JSON files as a ``FlowLibrary`` (the working directory, a shared folder).

A flow's id is its file name (``echo_qa.json``) and its listed name the file's stem
(``echo_qa``), so listing a folder reads no file: a folder holding big data files is as cheap
to list as an empty one.  ``aget_flow`` also takes a path (``~/flows/qa.json``, relative to the
folder or absolute), as a user types it.  A file is data from elsewhere: only a regular file
is read (a FIFO would block, a link to ``/dev/zero`` would never end), at most
``MAX_FLOW_FILE`` bytes, and what it holds must be flow JSON (``data.nodes``); anything else is
one ``ConfigError`` line naming the file.
"""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.ports import FlowEntry

MAX_FLOW_FILE = 20_000_000
MAX_ENTRIES = 1000


class FolderLibrary:
    """The ``*.json`` files of ``folder`` (not its subfolders) as stored flows."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        self.where = f"the folder {self.folder}"

    async def alist_flows(self) -> list[FlowEntry]:
        return await asyncio.to_thread(self._list)

    async def aget_flow(self, flow_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(read_flow_file, self.path(flow_id))

    async def astarters(self) -> list[FlowEntry]:
        return []  # a folder has no templates of its own

    def path(self, flow_id: str) -> Path:
        """Where the flow ``flow_id`` (a file name, or a path) is."""
        raw = Path(flow_id).expanduser()
        return raw if raw.is_absolute() else self.folder / raw

    def _list(self) -> list[FlowEntry]:
        try:
            paths = sorted(self.folder.glob("*.json"))[:MAX_ENTRIES]
        except OSError:
            return []
        return [FlowEntry(id=p.name, name=p.stem) for p in paths if _is_file(p)]


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):  # gone, no permission, a name no file system takes
        return False


def read_flow_file(path: Path) -> dict[str, Any]:
    """The flow JSON in ``path``, or a ``ConfigError`` line saying why not."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path} is not a regular file, so it is not read as a flow.")
        if info.st_size > MAX_FLOW_FILE:
            raise ConfigError(f"{path} is too large to be a flow.")
        with path.open("rb") as handle:
            data = json.loads(handle.read(MAX_FLOW_FILE + 1))
    except (OSError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"Could not read the flow file {path}: {exc}") from None
    inner = data.get("data", data) if isinstance(data, dict) else None
    if not isinstance(inner, dict) or not isinstance(inner.get("nodes"), list):
        raise ConfigError(f"{path} is not a Langflow flow (no data.nodes).")
    return data
