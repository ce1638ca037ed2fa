"""A folder of flow JSON files as a ``FlowLibrary`` (the working directory, a shared folder).

A flow's id is its file name (``echo_qa.json``) and its listed name the file's stem
(``echo_qa``), so listing a folder reads no file: a folder holding big data files is as cheap
to list as an empty one.  ``aget_flow`` also takes a path (``~/flows/qa.json``, relative to the
folder or absolute), as a user types it.  A file is data from elsewhere: it is read by
``flows/load.py``, the one reader of flow files (only a regular file, at most ``MAX_FLOW_FILE``
bytes, shape-checked); anything else is one ``FlowFileError`` line naming the file and the field.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

from lfassist_jupyter.flows.load import read_flow_file
from lfassist_jupyter.ports import FlowEntry

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
