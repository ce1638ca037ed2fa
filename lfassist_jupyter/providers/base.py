"""The provider contract: stream text for a system prompt and a list of messages.

Providers implement one method, ``stream``; everything else (retry on validation,
memory, events) lives in the engine.  SDK exceptions are translated into our
``ProviderError`` tree at this boundary (``raise ... from exc``), with messages that
say what to do and never carry a key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ModelInfo:
    name: str
    display_name: str


@dataclass
class Provider(ABC):
    """A configured model provider.

    ``default_model`` writes components; ``fast_model`` classifies intent (a cheaper,
    faster model is enough for a one-word answer).
    """

    name: str = "provider"
    display_name: str = "Provider"
    default_model: str = ""
    fast_model: str = ""
    models: list[ModelInfo] = field(default_factory=list)
    last_usage: Usage | None = None

    @abstractmethod
    def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int = 4096,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        """Yield the reply's text as it arrives.  Closing the iterator closes the HTTP stream."""

    async def complete(self, **kwargs) -> str:
        """The whole reply as one string (used for intent classification)."""
        parts = [chunk async for chunk in self.stream(**kwargs)]
        return "".join(parts)

    async def aclose(self) -> None:
        """Release network resources (the SDK client, when the provider made one)."""
        client = getattr(self, "_client", None)
        if client is not None:
            await client.close()
            self._client = None
