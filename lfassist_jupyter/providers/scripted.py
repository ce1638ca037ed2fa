"""An offline provider that replays scripted replies -- for demos and engine unit tests.

It is *not* a model: it answers from a list.  It exists so the demo notebook runs with
no API key and no network, and so engine tests can drive exact conversations.  A reply
is a string, or a dict::

    {"match": "regex", "reply": "text", "repeat": false}
    {"match": "regex", "error": "rate_limit" | "auth" | "server" | "timeout"}

``match`` is searched (case-insensitively) in the system prompt plus the last user
message; the first unused entry that matches answers.  ``repeat: true`` keeps an entry
for later calls.  Load a script from a JSON file with ``ScriptedProvider.from_file`` or
the ``LFASSIST_SCRIPT`` environment variable.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from lfassist_jupyter.errors import (
    ConfigError,
    ProviderAuthError,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimitError,
    ProviderTimeoutError,
)
from lfassist_jupyter.providers.base import ModelCall, ModelInfo, Provider
from lfassist_jupyter.providers.table import find

_ERRORS: dict[str, ProviderError] = {
    "rate_limit": ProviderRateLimitError("Rate limit exceeded at Scripted. Please wait a moment and try again."),
    "auth": ProviderAuthError("Scripted rejected the API key (401)."),
    "server": ProviderHTTPError("Scripted had a server error (500). Try again in a moment.", status_code=500),
    "timeout": ProviderTimeoutError("Scripted did not answer in time."),
}


class ScriptedCall(TypedDict):
    """One request the scripted provider answered (``ScriptedProvider.calls``), for tests to read back."""

    system: str
    messages: list[dict[str, str]]
    model: str


@dataclass
class ScriptedProvider(Provider):
    name: str = "scripted"
    display_name: str = "Scripted (offline demo)"
    model: str = "scripted"
    replies: list[object] = field(default_factory=list)
    """Each a string or a dict (see above), as a script's JSON has them: narrowed where read."""
    chunk_size: int = 12
    delay: float = 0.0
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.models = [ModelInfo("scripted", "Scripted replies")]
        self.spec = self.spec or find("scripted")

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedProvider:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Could not read the scripted replies in {path}: {exc}") from exc
        replies = data.get("replies", []) if isinstance(data, dict) else data
        if isinstance(data, dict):
            kwargs.setdefault("delay", float(data.get("delay", 0.0)))
        return cls(replies=list(replies), **kwargs)

    def _take(self, haystack: str) -> object:
        for i, entry in enumerate(self.replies):
            pattern = entry.get("match") if isinstance(entry, dict) else None
            if pattern is None or re.search(pattern, haystack, re.I | re.S):
                if not (isinstance(entry, dict) and entry.get("repeat")):
                    self.replies.pop(i)
                return entry
        raise ProviderHTTPError(
            "The scripted provider has no reply left for this request. Add one to the script.",
            provider=self.name,
        )

    async def stream(self, call: ModelCall) -> AsyncIterator[str]:
        """The next scripted reply (scripted replies cost no tokens: ``call.on_usage`` is never called)."""
        last_user = next((m["content"] for m in reversed(call.messages) if m["role"] == "user"), "")
        self.calls.append({"system": call.system, "messages": [dict(m) for m in call.messages], "model": call.model})
        entry = self._take(f"{call.system}\n{last_user}")
        if isinstance(entry, dict) and entry.get("error"):
            raise _ERRORS.get(entry["error"], _ERRORS["server"])
        text = entry.get("reply", "") if isinstance(entry, dict) else str(entry)
        for i in range(0, len(text), self.chunk_size):
            if self.delay:
                await asyncio.sleep(self.delay)
            else:
                await asyncio.sleep(0)
            yield text[i : i + self.chunk_size]
