"""Anthropic's Messages API with streaming through the official ``anthropic`` SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from lfassist_jupyter.providers._errors import cut_stream_error, map_sdk_error, sdk_errors
from lfassist_jupyter.providers.base import IDLE_TIMEOUT, Provider, Usage, check_base_url, check_timeout, env_timeout


@dataclass
class AnthropicProvider(Provider):
    name: str = "anthropic"
    display_name: str = "Anthropic"
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    timeout: float = field(default_factory=env_timeout)
    """Seconds to the first text of a reply (``LFASSIST_TIMEOUT``); silences between pieces are
    limited to ``min(30, timeout)`` and a whole reply to ten minutes (see ``providers.base``)."""
    http_retries: int = 2
    """Retries of one HTTP call on 429/5xx, done by the SDK (not generation attempts: those are
    the assistant's ``max_retries``)."""
    _client: Any = field(default=None, init=False, repr=False)

    def _get_client(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self._http_timeout(),
                max_retries=self.http_retries,
            )
        return self._client

    def __post_init__(self) -> None:
        self.timeout = check_timeout(self.timeout)
        self.base_url = check_base_url(self.base_url, self.display_name)

    def _http_timeout(self) -> Any:
        # The SDK's own Timeout class: anthropic 2.x runs on httpx2 and rejects httpx objects.
        from anthropic import Timeout

        idle = min(IDLE_TIMEOUT, self.timeout)
        return Timeout(connect=min(10.0, self.timeout), read=idle, write=idle, pool=idle)

    def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int = 4096,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        where = f" at {self.base_url}" if self.base_url else ""
        raw = self._raw_stream(
            system=system, messages=messages, model=model, max_tokens=max_tokens, temperature=temperature
        )
        return self._guarded(raw, timeout=self.timeout, where=where)

    async def _raw_stream(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int = 4096,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        # The 2.x SDK and current Claude models take no sampling parameters: temperature is ignored.
        client = self._get_client()
        import anthropic

        self.last_usage = None
        try:
            async with client.messages.stream(
                model=model, system=system, messages=messages, max_tokens=max_tokens
            ) as stream:
                finished = False
                async for event in stream:
                    if event.type == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
                        if event.delta.text:
                            yield event.delta.text
                    elif event.type == "message_stop":
                        finished = True
                final = stream.current_message_snapshot
                if final is not None and final.usage is not None:
                    self.last_usage = Usage(final.usage.input_tokens or 0, final.usage.output_tokens or 0)
            if not finished:
                raise cut_stream_error(self.display_name, self.name)
        except sdk_errors(anthropic.APIError) as exc:
            raise map_sdk_error(
                exc, provider=self.name, display=self.display_name, model=model, base_url=self.base_url
            ) from exc
