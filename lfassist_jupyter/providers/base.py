"""The provider contract: stream text for a system prompt and a list of messages.

Providers implement one method, ``stream``; everything else (retry on validation,
memory, events) lives in the engine.  What a call cost comes back through the call itself
(``on_usage``), never as state on the provider: one provider serves concurrent requests
(the panel and a cell), and a shared "last usage" would bill one request for another's call.
SDK exceptions are translated into our ``ProviderError`` tree at this boundary
(``raise ... from exc``), with messages that say what to do and never carry a key.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from lfassist_jupyter import settings
from lfassist_jupyter.errors import ConfigError, ProviderHTTPError, ProviderModelNotFoundError, ProviderTimeoutError
from lfassist_jupyter.redaction import redact, without_credentials

DEFAULT_TIMEOUT: float = settings.FIELDS["timeout"].default
"""Seconds a model call may take to *start* answering (connection, SDK retries, first text),
overridable with ``LFASSIST_TIMEOUT`` or ``timeout=``.  A server that accepts the connection and
never answers is reported within this time, well inside a minute, instead of 120 s x 3 attempts."""
IDLE_TIMEOUT = 30.0
"""Longest silence between two pieces of a reply (the HTTP read timeout); capped by ``timeout``."""
MAX_CALL_SECONDS = 600.0
"""A whole reply (a long component from a slow local model) may stream for up to ten minutes."""
MAX_REPLY_CHARS = 1_000_000
"""A component is a few KB; a reply past a megabyte of text is a model that will not stop."""


def env_timeout(env: Mapping[str, str] | None = None) -> float:
    """``LFASSIST_TIMEOUT`` (seconds), else ``DEFAULT_TIMEOUT``; a bad value is a ``ConfigError``."""
    return check_timeout(settings.read("timeout", env))


def check_timeout(value: object) -> float:
    """A model timeout (``timeout=`` or ``LFASSIST_TIMEOUT``): checked as the setting is, then
    capped at ``MAX_CALL_SECONDS``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"The model timeout must be a positive number of seconds, not {value!r}.")
    settings.check("timeout", float(value), source="timeout")
    return float(min(value, MAX_CALL_SECONDS))


def check_base_url(url: str | None, display: str) -> str | None:
    """A provider's base URL, or a ``ConfigError`` naming what is wrong: a malformed URL
    (``http://[::1``) would otherwise surface as "Unexpected error (InvalidURL)" on the first
    request, and a URL without ``http://`` as a misleading "could not reach"; ``host:port``
    alone means plain HTTP."""
    if url is None or url == "":
        return None
    if not isinstance(url, str):
        raise ConfigError(f"The {display} base URL must be text, not {type(url).__name__}.")
    url = url.strip()
    scheme, sep, _ = url.partition("://")
    if not sep:  # "localhost:11434", as OLLAMA_HOST is often written: plain HTTP, as Ollama's clients assume
        url, scheme = f"http://{url}", "http"
    if scheme.lower() not in ("http", "https"):
        raise ConfigError(
            f"The {display} base URL {without_credentials(url)[:80]!r} must start with http:// or https:// "
            "(for example http://localhost:11434/v1)."
        )
    import httpx

    try:
        host = httpx.URL(url).host
    except (httpx.InvalidURL, ValueError) as exc:
        shown = without_credentials(url)[:80]
        raise ConfigError(f"The {display} base URL {shown!r} is not a valid URL ({redact(str(exc))}).") from None
    if not host:
        raise ConfigError(f"The {display} base URL {without_credentials(url)[:80]!r} has no host.")
    return url


@asynccontextmanager
async def _within(seconds: float):  # type: ignore[no-untyped-def]
    """``asyncio.timeout`` where it exists (3.11+), so the awaited step stays in this task."""
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(seconds):
            yield
    else:  # pragma: no cover - Python 3.10
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        handle = loop.call_later(seconds, task.cancel) if task else None
        try:
            yield
        except asyncio.CancelledError:
            if handle is not None and handle.when() <= loop.time():
                raise TimeoutError from None
            raise
        finally:
            if handle is not None:
                handle.cancel()


@dataclass
class Usage:
    """The tokens one model call used, as the provider's API reported them."""

    input_tokens: int = 0
    output_tokens: int = 0


UsageSink = Callable[[Usage], None]
"""Called by ``Provider.stream`` with the call's usage, once the API reports it (the SDKs send
it with the last chunk); a provider that cannot tell never calls it."""


@dataclass
class ModelInfo:
    name: str
    display_name: str


@dataclass
class ModelFallback:
    """One substitution made because the provider did not know a model (404 / retired)."""

    requested: str
    used: str
    provider: str
    display_name: str

    @property
    def message(self) -> str:
        return (
            f"{self.display_name} does not know the model '{self.requested}' (not found or retired): "
            f"used '{self.used}', the next {self.display_name} model in `%assist models`."
        )


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
    substitutions: dict[str, str] = field(default_factory=dict)
    """Models this provider did not know, and the model of its own list used instead (sticky:
    once ``gpt-4o`` is gone, every later call goes straight to its substitute)."""
    fallbacks: list[ModelFallback] = field(default_factory=list)
    """Every substitution made, in order; views show the ones made during their request."""

    @abstractmethod
    def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int = 4096,
        temperature: float = 0.2,
        on_usage: UsageSink | None = None,
    ) -> AsyncIterator[str]:
        """Yield the reply's text as it arrives.  Closing the iterator closes the HTTP stream.
        ``on_usage`` receives the call's token usage when the provider reports it."""

    async def _guarded(self, chunks: AsyncIterator[str], *, timeout: float, where: str = "") -> AsyncIterator[str]:
        """``chunks`` with a deadline to the first text, a silence limit between pieces, a
        total duration and a size cap -- each ending in a clear ``ProviderError``.  The
        SDK's own read timeout covers a silent socket; this also covers a server that keeps
        the connection alive without ever sending text, and one that never stops."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        idle = min(IDLE_TIMEOUT, timeout)
        size = 0
        first = True
        it = chunks.__aiter__()
        try:
            while True:
                limit = timeout if first else idle
                remaining = MAX_CALL_SECONDS - (loop.time() - start)
                if remaining <= 0:
                    raise ProviderTimeoutError(
                        f"{self.display_name}{where} was still sending after {MAX_CALL_SECONDS:.0f} s; the reply "
                        "was stopped. Try again, or ask for something smaller.",
                        provider=self.name,
                    )
                try:
                    async with _within(min(limit, remaining)):
                        chunk = await it.__anext__()
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    what = "start answering" if first else "send the rest of its reply"
                    raise ProviderTimeoutError(
                        f"{self.display_name}{where} did not {what} within {limit:.0f} s. Check that the server "
                        "is up and the model loaded, or raise the limit (LFASSIST_TIMEOUT=seconds).",
                        provider=self.name,
                    ) from None
                first = False
                size += len(chunk)
                if size > MAX_REPLY_CHARS:
                    raise ProviderHTTPError(
                        f"{self.display_name}{where} sent more than {MAX_REPLY_CHARS:,} characters without "
                        "finishing; the reply was stopped. Try again, or ask for something smaller.",
                        provider=self.name,
                    )
                yield chunk
        finally:
            aclose = getattr(it, "aclose", None)
            if aclose is not None:
                await aclose()

    def _next_model(self, requested: str, tried: list[str]) -> str | None:
        """The next model of this provider's own list after ``requested`` (wrapping round),
        skipping the ones tried; None when the list is exhausted.  Never another provider's.

        Only a model of the list falls back: a name the user typed that the server does not
        know (a typo, a local server's model) is an error to fix, not a reason to send the
        request to a model they did not choose."""
        names = [m.name for m in self.models]
        if requested not in names:
            return None
        i = names.index(requested)
        return next((n for n in names[i + 1 :] + names[:i] if n not in tried), None)

    async def _with_fallback(self, model: str, make: Callable[[str], AsyncIterator[str]]) -> AsyncIterator[str]:
        """``make(model)``'s stream; when the provider answers "model not found" before any text,
        the same call on the next model of this provider's list (``%assist models``), once per
        model.  It happens inside one call, so the engine never sees the 404 and no validation
        attempt is spent; ``fallbacks`` says what was substituted, for the views to tell."""
        use = self.substitutions.get(model, model)
        tried: list[str] = []
        first_error: ProviderModelNotFoundError | None = None
        while True:
            it = make(use).__aiter__()
            started = False
            try:
                async for chunk in it:
                    started = True
                    yield chunk
                return
            except ProviderModelNotFoundError as exc:
                if started:
                    raise
                first_error = first_error or exc
                tried.append(use)
                nxt = self._next_model(model, tried)
                if nxt is None:
                    if len(tried) == 1:
                        raise
                    also = ", ".join(tried[1:])
                    raise ProviderModelNotFoundError(
                        f"{first_error} Also tried {also}: none of them was found.",
                        provider=self.name,
                        status_code=first_error.status_code,
                    ) from exc
                self.substitutions[model] = nxt
                self.fallbacks.append(ModelFallback(model, nxt, self.name, self.display_name))
                use = nxt
            finally:
                aclose = getattr(it, "aclose", None)
                if aclose is not None:
                    await aclose()

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
