"""OpenAI and every OpenAI-compatible server (Ollama, vLLM, LM Studio, Groq, OpenRouter)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from lfassist_jupyter.providers._errors import cut_stream_error, map_sdk_error, sdk_errors
from lfassist_jupyter.providers.base import IDLE_TIMEOUT, Provider, Usage, check_base_url, check_timeout, env_timeout


@dataclass
class OpenAIProvider(Provider):
    """Chat completions with streaming through the official ``openai`` SDK.

    Retries on 429/5xx are the SDK's own (bounded by ``http_retries``, exponential
    backoff, ``Retry-After`` honoured); we translate what is left into friendly errors.
    """

    name: str = "openai"
    display_name: str = "OpenAI"
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
            import openai

            self._client = openai.AsyncOpenAI(
                # Local OpenAI-compatible servers need no key, but the SDK insists on one.
                api_key=self.api_key or "not-needed",
                base_url=self.base_url,
                timeout=self._http_timeout(),
                max_retries=self.http_retries,
            )
        return self._client

    def _params(self, model: str, max_tokens: int, temperature: float) -> dict[str, Any]:
        params: dict[str, Any] = {"stream_options": {"include_usage": True}}
        # Reasoning models reject temperature; everything else gets a low one for code.
        if not model.startswith(("o1", "o3", "o4", "gpt-5")):
            params["temperature"] = temperature
        if self.base_url:  # compatible servers default to short replies without it
            params["max_tokens"] = max_tokens
        return params

    def __post_init__(self) -> None:
        self.timeout = check_timeout(self.timeout)
        self.base_url = check_base_url(self.base_url, self.display_name)

    def _http_timeout(self) -> Any:
        # The SDK's own Timeout class: anthropic 2.x runs on httpx2 and rejects httpx objects.
        from openai import Timeout

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
        client = self._get_client()
        import openai

        self.last_usage = None
        try:
            response = await client.chat.completions.create(
                model=model,
                messages=[{"role": "system", "content": system}, *messages],
                stream=True,
                **self._params(model, max_tokens, temperature),
            )
            finished = False
            async with response:  # closes the HTTP stream on cancel or early exit
                async for chunk in response:
                    if getattr(chunk, "usage", None):
                        self.last_usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
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
                exc, provider=self.name, display=self.display_name, model=model, base_url=self.base_url
            ) from exc
