"""The provider contract: stream text for a system prompt and a list of messages.

Providers implement one method, ``stream``, which takes one ``ModelCall`` (what a call needs:
prompt, model, task, limits, where its usage goes); everything else (retry on validation,
memory, events) lives in the engine.  What a call cost comes back through the call itself
(``ModelCall.on_usage``), never as state on the provider: one provider serves concurrent requests
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
from lfassist_jupyter.errors import (
    ConfigError,
    ProviderError,
    ProviderHTTPError,
    ProviderModelNotFoundError,
    ProviderTimeoutError,
)
from lfassist_jupyter.providers.table import ProviderSpec, Task, TaskModels, model_setting, task_models
from lfassist_jupyter.redaction import redact, without_credentials

DEFAULT_TIMEOUT: float = settings.ProcessSettings.timeout
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
async def _within(seconds: float) -> AsyncIterator[None]:
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


@dataclass(frozen=True)
class ModelCall:
    """What one model call needs, as one value: every caller builds one, every provider takes one."""

    system: str
    messages: list[dict[str, str]]
    model: str
    """The model asked for; ``""``: none is named, the provider picks from its server's own list."""
    task: Task = "component"
    """What the call is for: an error about its model names the setting of that task."""
    max_tokens: int = 4096
    temperature: float = 0.2
    on_usage: UsageSink | None = field(default=None, compare=False, repr=False)
    """Receives the call's token usage when the provider reports it."""


@dataclass
class ModelFallback:
    """One substitution the provider made: a model it did not know (404 / retired), or the model
    it picked from its server's list because none was named (``requested`` is ``""``)."""

    requested: str
    used: str
    provider: str
    display_name: str
    where: str = ""
    """`` at http://...``: the server, when it is the user's own."""

    @property
    def message(self) -> str:
        if not self.requested:
            return (
                f"No model is named for {self.display_name}{self.where}: used '{self.used}', from the models "
                f"the server lists (`%assist models`). Set {model_setting('component')} to choose."
            )
        return (
            f"{self.display_name}{self.where} does not know the model '{self.requested}' (not found or retired): "
            f"used '{self.used}', the next {self.display_name} model in `%assist models`."
        )


@dataclass
class Provider(ABC):
    """A configured model provider.

    ``model`` and ``intent_model`` are what the user named for it (``LFASSIST_MODEL``,
    ``LFASSIST_INTENT_MODEL``, or arguments); ``task_models`` turns them into the model of each
    task (``providers.table.task_models``, the one place a model is chosen).  ``own_server``: it
    runs on a server of the user's (a base URL that is not the vendor's, Ollama), whose models are
    its own list, asked (``alist_models``), never the vendor's guessed.
    """

    name: str = "provider"
    display_name: str = "Provider"
    model: str = ""
    intent_model: str = ""
    models: list[ModelInfo] = field(default_factory=list)
    """The vendor's models (``%assist models`` off a server of the user's own)."""
    spec: ProviderSpec | None = field(default=None, repr=False)
    own_server: bool = False
    substitutions: dict[str, str] = field(default_factory=dict)
    """Models this provider did not know, and the model of its own list used instead (sticky:
    once ``gpt-4o`` is gone, every later call goes straight to its substitute)."""
    picked: dict[str, str] = field(default_factory=dict)
    """Task -> the model its server's list gave it, for the tasks no model was named for."""
    fallbacks: list[ModelFallback] = field(default_factory=list)
    """Every substitution made, in order; views show the ones made during their request."""

    def task_models(self, model: str | None = None, intent_model: str | None = None) -> TaskModels:
        """The model of each task, ``model``/``intent_model`` (a request's, ``%config``'s) over the
        provider's own (the environment's): see ``providers.table.task_models``."""
        return task_models(
            self.spec,
            own=self.own_server,
            model=model or self.model,
            intent_model=intent_model or self.intent_model,
            default=self.model,
        )

    @property
    def default_model(self) -> str:
        """The generation model (``""`` when the server is to be asked)."""
        return self.task_models().main

    @property
    def fast_model(self) -> str:
        """The classification model."""
        return self.task_models().intent

    def model_in_use(self, model: str, task: Task = "component") -> str:
        """The model that answers for ``model`` now (after a fallback, or the pick of an unnamed one)."""
        model = model or self.picked.get(task, "")
        return self.substitutions.get(model, model)

    @property
    def where(self) -> str:
        """`` at <base URL>`` for a server of the user's own, else ``""`` (for messages)."""
        url = getattr(self, "base_url", None)
        return f" at {without_credentials(url)}" if url and self.own_server else ""

    async def alist_models(self) -> list[str]:
        """The models the provider offers: its server's own list when it runs on one of the user's
        (asked once, then kept), else the vendor's list.  ``ProviderError`` when the server
        cannot say."""
        return [m.name for m in self.models]

    @abstractmethod
    def stream(self, call: ModelCall) -> AsyncIterator[str]:
        """Yield the reply's text as it arrives.  Closing the iterator closes the HTTP stream.
        ``call.on_usage`` receives the call's token usage when the provider reports it."""

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

    async def _fallback_list(self) -> list[str]:
        """The models a fallback may go to: the server's own list on a server of the user's, else
        the vendor's (never another provider's)."""
        if not self.own_server:
            return [m.name for m in self.models]
        try:
            return await self.alist_models()
        except ProviderError:
            return []

    async def _next_model(self, requested: str, tried: list[str]) -> str | None:
        """The next model of the list after ``requested`` (wrapping round), skipping the ones tried;
        None when the list is exhausted, or when ``requested`` is not on it.

        Only a model of the list falls back: a name the user typed that the server does not
        know (a typo, a model not pulled) is an error to fix, not a reason to send the request to
        a model they did not choose."""
        names = await self._fallback_list()
        if requested not in names:
            return None
        i = names.index(requested)
        return next((n for n in names[i + 1 :] + names[:i] if n not in tried), None)

    async def _pick(self, task: Task) -> str:
        """The model for a call that names none (a server of the user's and no ``LFASSIST_MODEL``):
        the vendor's model for the task if the server lists it, else the first it lists.  The
        server is asked, never guessed; when it cannot say, the error names the setting."""
        setting = model_setting(task)
        try:
            listed = await self.alist_models()
        except ProviderError as exc:
            raise ProviderModelNotFoundError(
                f"No model is named for {self.display_name}{self.where}, and the server's list could not be "
                f"read ({exc}). Set {setting} to the model to use.",
                provider=self.name,
            ) from exc
        if not listed:
            raise ProviderModelNotFoundError(
                f"No model is named for {self.display_name}{self.where}, and the server lists none. "
                f"Set {setting} to the model to use (pull or load one first).",
                provider=self.name,
            )
        return self.pick_from(listed, task) or listed[0]

    def pick_from(self, listed: list[str], task: Task) -> str | None:
        """The model a task that names none takes from a server's list: the vendor's model for the
        task if listed, else the first listed; None for an empty list."""
        vendor = self.spec.default_models.get(task) if self.spec else None
        return vendor if vendor in listed else (listed[0] if listed else None)

    async def _not_found(self, model: str, task: Task, first: ProviderModelNotFoundError, tried: list[str]) -> str:
        """The line for a model the provider does not know: what was tried, the server's own
        models when it runs on one of the user's, and the setting that fixes it."""
        also = f" Also tried {', '.join(tried[1:])}: none of them was found." if len(tried) > 1 else ""
        setting = model_setting(task)
        if task == "intent":  # classification runs on the model unless an intent model is named
            setting = f"{model_setting('component')} (or {setting}, the model that classifies requests)"
        listed = await self._fallback_list() if self.own_server else []
        if listed:
            shown = ", ".join(listed[:8]) + (f" (and {len(listed) - 8} more)" if len(listed) > 8 else "")
            fix = f" It lists: {shown}. Set {setting} to one of them."
        else:
            fix = f" Set {setting} to a model it has (`%assist models`)."
        return f"Model '{model}' was not found at {self.display_name}{self.where}.{also}{fix}"

    async def _with_fallback(self, call: ModelCall, make: Callable[[str], AsyncIterator[str]]) -> AsyncIterator[str]:
        """``make(model)``'s stream; when the provider answers "model not found" before any text,
        the same call on the next model of its list (the server's own on a server of the user's,
        else the vendor's: ``%assist models``), once per model.  A call that names no model gets
        the one its server lists (``_pick``).  It happens inside one call, so the engine never sees
        the 404 and no validation attempt is spent; ``fallbacks`` says what was substituted, for
        the views to tell."""
        model = call.model or self.picked.get(call.task, "")
        if not model:
            model = self.picked[call.task] = await self._pick(call.task)
            vendor = self.spec.default_models.get(call.task) if self.spec else None
            said = {f.used for f in self.fallbacks if not f.requested}
            if model != vendor and model not in said:  # the server's own pick is told, once
                self.fallbacks.append(ModelFallback("", model, self.name, self.display_name, self.where))
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
                nxt = await self._next_model(model, tried)
                if nxt is None:
                    raise ProviderModelNotFoundError(
                        await self._not_found(tried[0], call.task, first_error, tried),
                        provider=self.name,
                        status_code=first_error.status_code,
                    ) from exc
                self.substitutions[model] = nxt
                self.fallbacks.append(ModelFallback(model, nxt, self.name, self.display_name, self.where))
                use = nxt
            finally:
                aclose = getattr(it, "aclose", None)
                if aclose is not None:
                    await aclose()

    async def complete(self, call: ModelCall) -> str:
        """The whole reply as one string (used for intent classification)."""
        parts = [chunk async for chunk in self.stream(call)]
        return "".join(parts)

    async def aclose(self) -> None:
        """Release network resources (the SDK client, when the provider made one)."""
        client = getattr(self, "_client", None)
        if client is not None:
            await client.close()
            self._client = None
