"""Conversation memory per session, persisted to the user's data directory.

A follow-up ("now make it lowercase too") only works if the generator sees the earlier
component, so each session keeps its turns.  Long sessions keep a recent window verbatim
plus a running summary of what came before (built locally, with no extra model call, so
memory never costs tokens or latency of its own).  Sessions are JSON files written
atomically; at most ``MAX_SESSIONS`` are kept; a corrupted file is set aside with a
warning and the session starts fresh -- never a crash, never a silent overwrite.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("lfassist_jupyter")

MAX_SESSIONS = 10
SESSION_PREFIX = "agentic_"  # as in Langflow, so sessions never mix with Playground ones
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


def default_data_dir() -> Path:
    """``$LFASSIST_DATA_DIR`` or the platform's per-user data directory."""
    env = os.environ.get("LFASSIST_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("lfassist-jupyter", appauthor=False))


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


@dataclass
class Session:
    id: str
    title: str = ""
    turns: list[Turn] = field(default_factory=list)
    summary: str = ""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

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
        self.turns.append(turn)
        self.updated = time.time()
        self._fold(window)

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
    def from_json(cls, data: dict[str, Any]) -> Session:
        turns = [Turn(**t) for t in data.get("turns", [])]
        return cls(
            id=str(data["id"]),
            title=str(data.get("title", "")),
            turns=turns,
            summary=str(data.get("summary", "")),
            created=float(data.get("created", time.time())),
            updated=float(data.get("updated", time.time())),
        )


class SessionStore:
    """Sessions as JSON files in one directory, the newest ``max_sessions`` kept."""

    def __init__(self, directory: str | Path | None = None, *, max_sessions: int = MAX_SESSIONS) -> None:
        self.directory = Path(directory) if directory is not None else default_data_dir() / "sessions"
        self.max_sessions = max_sessions

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{_SAFE_ID.sub('_', session_id)}.json"

    def load(self, session_id: str) -> Session:
        """The stored session, or a fresh one (a corrupted file is renamed ``*.corrupt``)."""
        path = self._path(session_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Session.from_json(data)
        except FileNotFoundError:
            return Session(id=session_id)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            aside = path.with_suffix(f".{int(time.time())}.corrupt")
            try:
                path.replace(aside)
            except OSError:
                aside = path
            log.warning(
                "Session file %s could not be read (%s); it was set aside as %s and a new session started.",
                path,
                type(exc).__name__,
                aside.name,
            )
            return Session(id=session_id)

    def save(self, session: Session) -> None:
        """Atomic write (temp file + rename), then prune to the newest sessions."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(session.id)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(session.to_json(), fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._prune()

    def list(self) -> list[dict[str, Any]]:
        """Stored sessions, newest first: id, title, updated, number of turns."""
        out = []
        for p in self.directory.glob("*.json"):
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
                out.append(
                    {
                        "id": data["id"],
                        "title": data.get("title", ""),
                        "updated": data.get("updated", 0),
                        "turns": len(data.get("turns", [])),
                    }
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return sorted(out, key=lambda d: d["updated"], reverse=True)

    def delete(self, session_id: str) -> bool:
        try:
            self._path(session_id).unlink()
            return True
        except FileNotFoundError:
            return False

    def _prune(self) -> None:
        files = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[self.max_sessions :]:
            old.unlink(missing_ok=True)
