"""OpenAI and every OpenAI-compatible server (Ollama, vLLM, LM Studio, Groq, OpenRouter)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypedDict

from lfassist_jupyter.providers._errors import cut_stream_error, map_sdk_error, sdk_errors
from lfassist_jupyter.providers._sdk import SDKProvider
from lfassist_jupyter.providers.base import ModelCall, Usage
from lfassist_jupyter.settings import NO_KEY  # re-exported: the providers' errors name it


class _StreamOptions(TypedDict):
    include_usage: bool


class _Params(TypedDict, total=False):
    """The request's parameters beyond model, messages and ``stream``: which ones depends on the model
    and the server."""

    stream_options: _StreamOptions
    temperature: float
    max_tokens: int


@dataclass
class OpenAIProvider(SDKProvider):
    """Chat completions with streaming through the official ``openai`` SDK.

    Retries on 429/5xx are the SDK's own (bounded by ``http_retries``, exponential
    backoff, ``Retry-After`` honoured); we translate what is left into friendly errors.
    """

    name: str = "openai"
    display_name: str = "OpenAI"

    @staticmethod
    def _sdk() -> ModuleType:
        import openai

        return openai

    def _make_client(self, sdk: ModuleType, **limits: Any) -> Any:
        return sdk.AsyncOpenAI(api_key=self.api_key or NO_KEY, base_url=self.base_url, **limits)

    def _params(self, model: str, max_tokens: int, temperature: float) -> _Params:
        params: _Params = {"stream_options": {"include_usage": True}}
        # Reasoning models reject temperature; everything else gets a low one for code.
        if not model.startswith(("o1", "o3", "o4", "gpt-5")):
            params["temperature"] = temperature
        if self.base_url:  # compatible servers default to short replies without it
            params["max_tokens"] = max_tokens
        return params

    async def _raw_stream(self, call: ModelCall, model: str) -> AsyncIterator[str]:
        client = self._get_client()
        import openai

        on_usage = call.on_usage
        try:
            response = await client.chat.completions.create(
                model=model,
                messages=[{"role": "system", "content": call.system}, *call.messages],
                stream=True,
                **self._params(model, call.max_tokens, call.temperature),
            )
            finished = False
            async with response:  # closes the HTTP stream on cancel or early exit
                async for chunk in response:
                    if getattr(chunk, "usage", None) and on_usage is not None:
                        on_usage(Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0))
                    for choice in chunk.choices or ():
                        finished = finished or choice.finish_reason is not None
                        text = getattr(choice.delta, "content", None)
                        if text:
                            yield text
            if not finished:
                # A dropped connection can end the body cleanly: without a finish_reason the
                # reply is truncated, and half a component must not be validated as whole.
                raise cut_stream_error(self.display_name, self.name)
        except sdk_errors(openai.APIError) as exc:
            raise map_sdk_error(
                exc,
                provider=self.name,
                display=self.display_name,
                model=model,
                base_url=self.base_url,
                key_given=bool(self.api_key),
            ) from exc
