"""Conversation memory per session, persisted to the user's data directory.

A follow-up ("now make it lowercase too") only works if the generator sees the earlier
component, so each session keeps its turns.  Long sessions keep a recent window verbatim
plus a running summary of what came before (built locally, with no extra model call, so
memory never costs tokens or latency of its own).  Sessions are JSON files written
atomically; at most ``MAX_SESSIONS`` are kept.  A file is read only when it is a regular file
under ``MAX_SESSION_BYTES`` (``datadir.read_regular_file``: a FIFO, a link to ``/dev/zero``
or a device in the folder is never opened), then checked against a pydantic schema, restore
points included: one that fails (not JSON, or JSON with wrong types such as
``"content": 12345``, ``"updated": "yesterday"`` or a restore point's ``"version": "two"``)
is set aside as ``<name>.corrupt-<n>`` with one warning and that session starts fresh, while
every other session keeps working -- never a crash, a freeze or a silent overwrite.  When a
conversation cannot be saved (a read-only data directory, a full disk) ``try_save`` says so
once, as a warning the user sees.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lfassist_jupyter.artifacts.flow import shape_problem
from lfassist_jupyter.core.datadir import default_data_dir, read_regular_file, set_aside, why, write_atomic
from lfassist_jupyter.ports import one_line

log = logging.getLogger("lfassist_jupyter")

MAX_SESSIONS = 10
SESSION_PREFIX = "agentic_"  # as in Langflow, so sessions never mix with Playground ones
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_STEM = 100  # file names stay far below the 255-byte limit of common file systems
MAX_RESTORE_POINTS = 5
"""Flow versions kept for ``%assist undo`` (each holds a flow's JSON, tens of KB)."""
MAX_SESSION_BYTES = 50_000_000
"""A session file holds ten turns and a 2,000-character summary: a few KB, plus the JSON of
its flows (a flow carries its nodes' code, tens of KB per node).  A file past this is not
ours (or is damaged) and is set aside rather than read into memory."""


def new_session_id() -> str:
    return f"{SESSION_PREFIX}{uuid.uuid4().hex[:12]}"


@dataclass
class Turn:
    role: str  # user | assistant
    content: str
    kind: str = "text"  # text | component | flow | answer | cancelled
    class_name: str | None = None
    validated: bool | None = None
    ts: float = field(default_factory=time.time)
    original: str | None = None  # what the user typed, when the model was given a translation
    attempts: int | None = None  # validation attempts of a component turn (None: not recorded)
    flow: dict[str, Any] | None = None  # a flow turn's Langflow JSON (``content`` holds its spec)
    reduced_isolation: str | None = None
    """Why the sandbox that validated this turn's component or flow had reduced isolation (no
    OS-level layer), so a restored card says "validated (reduced isolation: ...)" as the live one
    did; None under full isolation, and in session files written before it was recorded."""


@dataclass
class Session:
    id: str
    title: str = ""
    turns: list[Turn] = field(default_factory=list)
    summary: str = ""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    restore_points: list[dict[str, Any]] = field(default_factory=list)
    """Earlier versions of the flow, oldest first (``version``, ``spec``, ``flow``, ``validated``):
    each flow edit keeps the one it replaced, as Langflow's Assistant saves a restore point."""
    flow_version: int = 0
    """The number of the current flow version (1 for the first flow of the session)."""
    flow_versions: int = 0
    """How many flow versions this session made (an undone number is never given again)."""

    @property
    def last_component(self) -> Turn | None:
        return next((t for t in reversed(self.turns) if t.kind == "component"), None)

    @property
    def last_flow(self) -> Turn | None:
        """The flow a follow-up edits: the newest turn of kind ``flow`` (its spec in ``content``)."""
        return next((t for t in reversed(self.turns) if t.kind == "flow"), None)

    def add(self, turn: Turn, *, window: int) -> None:
        if not self.title and turn.role == "user":
            text = (turn.original or turn.content).strip()
            self.title = text.splitlines()[0][:60] if text else ""
        if turn.kind == "flow":
            previous = self.last_flow
            if previous is not None:
                point = {"version": self.flow_version or 1, "spec": previous.content, "flow": previous.flow}
                said = {"validated": previous.validated, "reduced_isolation": previous.reduced_isolation}
                self.restore_points = [*self.restore_points, {**point, **said}]
                self.restore_points = self.restore_points[-MAX_RESTORE_POINTS:]
            self.flow_versions = max(self.flow_versions, self.flow_version) + 1
            self.flow_version = self.flow_versions
        self.turns.append(turn)
        self.updated = time.time()
        self._fold(window)

    def undo(self, *, window: int) -> Turn | None:
        """Make the flow before the last edit the current one again (None: nothing to undo).

        The restored version becomes a new flow turn (what a follow-up edits) after a user
        turn that says so, so the conversation tells which version is current.
        """
        if not self.restore_points:
            return None
        point = self.restore_points.pop()
        undone = self.flow_version
        self.flow_version = int(point.get("version") or 1)
        self.turns.append(Turn(role="user", content=f"(undo: back from flow version {undone})"))
        turn = Turn(
            role="assistant",
            content=str(point.get("spec") or ""),
            kind="flow",
            flow=point.get("flow"),
            validated=point.get("validated"),
            reduced_isolation=point.get("reduced_isolation"),
        )
        self.turns.append(turn)
        self.updated = time.time()
        self._fold(window)
        return turn

    def _fold(self, window: int) -> None:
        """Move turns beyond the recent window into the summary -- but never the last component."""
        keep = max(2, window * 2)
        while len(self.turns) > keep:
            # The flow a follow-up edits stays in the window (the next-oldest turn goes instead).
            old = self.turns.pop(1 if self.turns[0] is self.last_flow else 0)
            if old.role == "user":
                line = f"- The user asked: {old.content.strip()[:160]}"
            elif old.kind == "component":
                state = "validated" if old.validated else "not validated"
                line = f"- You wrote the component {old.class_name or '(unnamed)'} ({state})."
            elif old.kind == "flow":
                state = "validated" if old.validated else "not validated"
                line = f"- You built a flow ({state})."
            else:
                line = f"- You answered: {old.content.strip()[:120]}"
            lines = [*self.summary.splitlines(), line]
            while sum(len(x) + 1 for x in lines) > 2000:
                lines.pop(0)
            self.summary = "\n".join(lines)

    def messages(self) -> list[dict[str, str]]:
        """The conversation for a model call: summary first, then the recent turns."""
        msgs: list[dict[str, str]] = []
        if self.summary:
            msgs.append({"role": "user", "content": f"Summary of our earlier conversation:\n{self.summary}"})
            msgs.append({"role": "assistant", "content": "Understood."})
        for t in self.turns:
            if t.kind == "cancelled":
                continue
            if t.kind == "component":
                content = f"```python\n{t.content.rstrip()}\n```"
            elif t.kind == "flow":
                content = f"```yaml\n{t.content.rstrip()}\n```"
            else:
                content = t.content
            if msgs and msgs[-1]["role"] == t.role:  # providers want alternating roles
                msgs[-1] = {"role": t.role, "content": msgs[-1]["content"] + "\n\n" + content}
            else:
                msgs.append({"role": t.role, "content": content})
        return msgs

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Session:
        """A session from its JSON; ``ValidationError`` when any field has the wrong type."""
        model = _SessionFile.model_validate(data)
        return cls(
            id=model.id,
            title=model.title,
            turns=[Turn(**t.model_dump()) for t in model.turns],
            summary=model.summary,
            created=model.created if model.created is not None else time.time(),
            updated=model.updated if model.updated is not None else time.time(),
            restore_points=[p.model_dump() for p in model.restore_points],
            flow_version=model.flow_version,
            flow_versions=model.flow_versions,
        )


def _flow_of_shape(flow: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored flow must have the shape of flow JSON (the views and the next edit walk it)."""
    problem = shape_problem(flow) if flow is not None else None
    if problem is not None:
        raise ValueError(f"not a Langflow flow: {problem}")
    return flow


class _TurnFile(BaseModel):
    """The schema of one stored turn (strict: a number is not text, text is not a time)."""

    model_config = ConfigDict(strict=True, extra="ignore")
    role: Literal["user", "assistant"]
    content: str
    kind: str = "text"
    class_name: str | None = None
    validated: bool | None = None
    ts: float = Field(default_factory=time.time)
    original: str | None = None
    attempts: int | None = None
    flow: dict[str, Any] | None = None  # a flow turn's Langflow JSON: data, shown as stored, never rebuilt
    reduced_isolation: str | None = Field(default=None, max_length=500)  # absent in older files

    _flow_shape = field_validator("flow")(_flow_of_shape)


class _RestorePointFile(BaseModel):
    """The schema of one restore point (``Session.add`` writes them; ``Session.undo`` reads them)."""

    model_config = ConfigDict(strict=True, extra="ignore")
    version: int = Field(default=1, ge=1)
    spec: str
    flow: dict[str, Any] | None = None
    validated: bool | None = None
    reduced_isolation: str | None = Field(default=None, max_length=500)

    _flow_shape = field_validator("flow")(_flow_of_shape)


class _SessionFile(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    id: str
    title: str = ""
    turns: list[_TurnFile] = Field(default_factory=list)
    summary: str = ""
    created: float | None = None
    updated: float | None = None
    restore_points: list[_RestorePointFile] = Field(default_factory=list)
    flow_version: int = Field(default=0, ge=0)
    flow_versions: int = Field(default=0, ge=0)


_UNREADABLE = (OSError, ValueError, TypeError, KeyError, ValidationError, RecursionError)


LIST_LIMIT = 500
"""``list`` reads at most this many files, the newest: we keep ``max_sessions`` of our own, and a
damaged one is set aside when read, so more is another program's, or a flood."""


class SessionStore:
    """Sessions as JSON files in one directory, the newest ``max_sessions`` kept."""

    def __init__(self, directory: str | Path | None = None, *, max_sessions: int = MAX_SESSIONS) -> None:
        self.directory = Path(directory) if directory is not None else default_data_dir() / "sessions"
        self.max_sessions = max_sessions

        self._unsaved_told = False

    def _path(self, session_id: str) -> Path:
        """The file of ``session_id``: its safe characters, and for a very long name a prefix plus a
        hash (two long names never share a file, and none fails with "file name too long")."""
        stem = _SAFE_ID.sub("_", session_id)
        if len(stem) > _MAX_STEM:
            digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            stem = f"{stem[: _MAX_STEM - 17]}-{digest}"
        return self.directory / f"{stem}.json"

    def _read(self, path: Path) -> Session:
        return Session.from_json(json.loads(read_regular_file(path, MAX_SESSION_BYTES).decode("utf-8")))

    def _set_aside(self, path: Path, exc: BaseException) -> None:
        """Rename a file that fails its schema to ``<name>.corrupt-<n>`` (kept for the user to look at)."""
        set_aside(path, "Session file", why(exc))

    def load(self, session_id: str) -> Session:
        """The stored session, or a fresh one (a file that fails its schema is set aside)."""
        path = self._path(session_id)
        try:
            session = self._read(path)
        except FileNotFoundError:
            return Session(id=session_id)
        except _UNREADABLE as exc:
            self._set_aside(path, exc)
            return Session(id=session_id)
        session.id = session_id  # the file is this session's, whatever id it claims
        return session

    def try_save(self, session: Session) -> str | None:
        """Save, and on failure return a warning for the user -- once, until saving works again
        (a read-only data directory would otherwise lose every conversation silently)."""
        try:
            self.save(session)
        except OSError as exc:
            log.warning("Could not save session %s: %s", session.id, exc)
            if self._unsaved_told:
                return None
            self._unsaved_told = True
            reason = exc.strerror or type(exc).__name__
            return (
                f"This conversation is not being saved: the session could not be written to {self.directory} "
                f"({reason}). Set LFASSIST_DATA_DIR to a writable folder to keep it."
            )
        self._unsaved_told = False
        return None

    def save(self, session: Session) -> None:
        """Atomic write (temp file + rename), then prune to the newest sessions."""
        write_atomic(self._path(session.id), json.dumps(session.to_json(), ensure_ascii=False))
        self._prune()

    def list(self) -> list[dict[str, Any]]:
        """Stored sessions, newest first: id, title, updated, number of turns.  A file that fails
        its schema is set aside with a warning; the others are listed as usual."""
        out = []
        try:
            paths = list(self.directory.glob("*.json"))
        except OSError:
            return []
        if len(paths) > LIST_LIMIT:  # a shared folder may hold any number of files: read the newest
            paths = _newest(paths)[:LIST_LIMIT]
        for p in paths:
            try:
                session = self._read(p)
            except FileNotFoundError:
                continue  # removed meanwhile (another kernel pruned it)
            except _UNREADABLE as exc:
                self._set_aside(p, exc)
                continue
            out.append(
                # a title read from a file is one line (a shared folder's file may hold any text)
                {
                    "id": session.id,
                    "title": one_line(session.title, 80),
                    "updated": session.updated,
                    "turns": len(session.turns),
                }
            )
        return sorted(out, key=lambda d: d["updated"], reverse=True)

    def delete(self, session_id: str) -> bool:
        try:
            self._path(session_id).unlink()
            return True
        except FileNotFoundError:
            return False

    def _prune(self) -> None:
        """Remove all but the newest sessions (regular files only: what is not ours stays)."""
        for old in _newest(list(self.directory.glob("*.json")), regular_only=True)[self.max_sessions :]:
            old.unlink(missing_ok=True)


def _newest(paths: list[Path], *, regular_only: bool = False) -> list[Path]:
    """``paths`` most recently modified first (by ``lstat``: a link is not followed); with
    ``regular_only``, regular files only (what ``SessionStore._prune`` may remove).  (Outside the
    class: its ``list`` method would shadow the type in its annotations.)"""
    stamped = []
    for p in paths:
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not regular_only or stat.S_ISREG(st.st_mode):
            stamped.append((st.st_mtime, p))
    return [p for _, p in sorted(stamped, key=lambda x: x[0], reverse=True)]
