"""Anthropic's Messages API with streaming through the official ``anthropic`` SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from lfassist_jupyter.providers._errors import cut_stream_error, map_sdk_error, sdk_errors
from lfassist_jupyter.providers._sdk import SDKProvider
from lfassist_jupyter.providers.base import ModelCall, Usage


@dataclass
class AnthropicProvider(SDKProvider):
    """Claude through the official ``anthropic`` SDK (its own retries on 429/5xx, like OpenAI's)."""

    name: str = "anthropic"
    display_name: str = "Anthropic"

    @staticmethod
    def _sdk() -> ModuleType:
        import anthropic

        return anthropic

    def _make_client(self, sdk: ModuleType, **limits: Any) -> Any:
        return sdk.AsyncAnthropic(api_key=self.api_key, base_url=self.base_url, **limits)

    async def _raw_stream(self, call: ModelCall, model: str) -> AsyncIterator[str]:
        # The 2.x SDK and current Claude models take no sampling parameters: temperature is ignored.
        client = self._get_client()
        import anthropic

        on_usage = call.on_usage
        try:
            async with client.messages.stream(
                model=model, system=call.system, messages=call.messages, max_tokens=call.max_tokens
            ) as stream:
                finished = False
                async for event in stream:
                    if event.type == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
                        if event.delta.text:
                            yield event.delta.text
                    elif event.type == "message_stop":
                        finished = True
                final = stream.current_message_snapshot
                if final is not None and final.usage is not None and on_usage is not None:
                    on_usage(Usage(final.usage.input_tokens or 0, final.usage.output_tokens or 0))
            if not finished:
                raise cut_stream_error(self.display_name, self.name)
        except sdk_errors(anthropic.APIError) as exc:
            raise map_sdk_error(
                exc, provider=self.name, display=self.display_name, model=model, base_url=self.base_url
            ) from exc
