"""Which providers are configured, and building one: the provider table (``table.py``) read
against the environment.

Configuration comes from explicit arguments or the variables the table names for each provider;
the first configured provider in the table's order wins unless ``LFASSIST_PROVIDER`` says
otherwise (a name the table does not have is an error, never ignored).  The model of each task
is the table's ``task_models``: on the vendor's API, a generation model and a cheaper one that
classifies; on a server of the user's own, the model they named for every task, or the one the
server lists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from lfassist_jupyter import settings
from lfassist_jupyter.errors import ConfigError, NoProviderError
from lfassist_jupyter.providers.base import ModelInfo, Provider, check_base_url
from lfassist_jupyter.providers.table import (
    ASSISTANT_PROVIDERS,
    PREFERRED_ORDER,
    ProviderSpec,
    TaskModels,
    configured_base_url,
    own_server,
    sdk_base_url,
    spec,
    task_models,
)


def _no_provider_message() -> str:
    """What to set, for each provider of the table (one sentence)."""
    ways = []
    for p in ASSISTANT_PROVIDERS:
        if p.needs == "script":
            ways.append(f"{settings.env_name('script')}=<file.json> for the offline scripted demo provider")
        elif p.needs == "url":
            ways.append(f"{p.base_url_variable} ({p.display_name}) with {settings.env_name('model')}")
        else:
            ways.append(f"{p.key_variable} ({p.display_name})")
            if p.needs == "key_or_url":
                ways.append(
                    f"{p.base_url_variable} (any {p.display_name}-compatible server such as vLLM, LM Studio or a "
                    f"gateway) with {settings.env_name('model')}"
                )
    return "No model provider is configured. Set " + ", ".join(ways[:-1]) + ", or " + ways[-1] + "."


NO_PROVIDER_MESSAGE = _no_provider_message()


def check_environment(env: Mapping[str, str] | None = None) -> None:
    """Every ``LFASSIST_*`` variable checked at once (``settings.check_all``), with the provider
    table's names for those that name a provider: the first bad one is a ``ConfigError`` line.
    Every entry point calls this first."""
    settings.check_all(env, providers=PREFERRED_ORDER)


class ModelEntry(TypedDict):
    """One model of a provider's list, as ``/check-config`` shows it."""

    name: str
    display_name: str


class ProviderEntry(TypedDict):
    """A provider as ``/check-config`` shows it (``ProviderInfo.to_dict``): never its key."""

    name: str
    configured: bool
    default_model: str
    base_url: str | None
    models: list[ModelEntry]


class ConfigAnswer(TypedDict):
    """The Langflow spec's ``/check-config`` answer (``check_config``)."""

    configured: bool
    configured_providers: list[str]
    providers: list[ProviderEntry]
    default_provider: str | None
    default_model: str | None


class _Common(TypedDict):
    """What ``create_provider`` gives either SDK provider, whichever it builds."""

    name: str
    display_name: str
    api_key: str | None
    base_url: str | None
    spec: ProviderSpec
    own_server: bool
    model: str
    intent_model: str
    models: list[ModelInfo]


@dataclass
class ProviderInfo:
    """A provider as configuration sees it (no secrets in ``repr``)."""

    name: str
    configured: bool
    display_name: str
    models: list[ModelInfo] = field(default_factory=list)
    """The vendor's list; on a server of the user's own, ask the provider (``alist_models``)."""
    base_url: str | None = None
    """What its SDK is given (Ollama's ``/v1`` included)."""
    base_url_variable: str | None = None
    """The variable that set ``base_url``."""
    api_key: str | None = field(default=None, repr=False)
    script: str | None = None
    spec: ProviderSpec | None = field(default=None, repr=False)
    own_server: bool = False
    task_models: TaskModels = field(default_factory=TaskModels)
    """The model of each task as the environment sets them (``""``: the server is asked)."""

    @property
    def default_model(self) -> str:
        return self.task_models.main

    def to_dict(self) -> ProviderEntry:
        return {
            "name": self.name,
            "configured": self.configured,
            "default_model": self.default_model,
            "base_url": self.base_url if self.own_server else None,
            "models": [{"name": m.name, "display_name": m.display_name} for m in self.models],
        }


def _info(provider: ProviderSpec, env: Mapping[str, str]) -> ProviderInfo:
    key = env.get(provider.key_variable) or None if provider.key_variable else None
    variable, url = configured_base_url(provider, env)
    script = settings.read("script", env) if provider.needs == "script" else None
    configured = {
        "key": bool(key),
        "key_or_url": bool(key or url),
        "url": bool(url),
        "script": bool(script),
    }.get(provider.needs, False)
    base_url = sdk_base_url(provider, url) if url else None
    own = own_server(provider, base_url)
    models = [] if own else [ModelInfo(n, d) for n, d in provider.models]
    return ProviderInfo(
        name=provider.name,
        configured=configured,
        display_name=provider.display_name,
        models=models,
        base_url=base_url,
        base_url_variable=variable,
        api_key=key,
        script=script,
        spec=provider,
        own_server=own,
        task_models=task_models(
            provider,
            own=own,
            model=settings.read("model", env),
            intent_model=settings.read("intent_model", env),
        ),
    )


def available_providers(env: Mapping[str, str] | None = None) -> list[ProviderInfo]:
    """Every provider the assistant can use, with its configuration state, in preference order.
    ``LFASSIST_PROVIDER`` puts its provider first; a name the table does not have is a
    ``ConfigError`` line (it is never ignored)."""
    env = os.environ if env is None else env
    infos = [_info(p, env) for p in ASSISTANT_PROVIDERS]
    preferred = settings.read("provider", env, providers=PREFERRED_ORDER)
    if preferred:
        infos.sort(key=lambda i: i.name != preferred.lower())
    return infos


def check_config(env: Mapping[str, str] | None = None) -> ConfigAnswer:
    """The Langflow spec's ``/check-config`` answer for this environment."""
    env = os.environ if env is None else env
    infos = available_providers(env)
    configured = [i for i in infos if i.configured]
    default = configured[0] if configured else None
    return {
        "configured": bool(configured),
        "configured_providers": [i.name for i in configured],
        "providers": [i.to_dict() for i in infos if i.configured or i.name != "scripted"],
        "default_provider": default.name if default else None,
        "default_model": default.default_model or None if default else None,
    }


def _not_configured(provider: ProviderSpec, infos: dict[str, ProviderInfo]) -> ConfigError:
    configured_names = [i.name for i in infos.values() if i.configured]
    hint = f" Available providers: {', '.join(configured_names)}." if configured_names else ""
    var = {
        "script": settings.env_name("script"),
        "url": provider.base_url_variable,
    }.get(provider.needs, provider.key_variable)
    return ConfigError(f"Provider '{provider.name}' is not configured: set {var} or pass it explicitly.{hint}")


def create_provider(
    name: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> Provider:
    """Build a provider by name, or the first configured one when ``name`` is None."""
    env = os.environ if env is None else env
    infos = {i.name: i for i in available_providers(env)}
    if name is None:
        configured = [i for i in infos.values() if i.configured]
        if api_key or base_url:
            name = PREFERRED_ORDER[0]
        elif not configured:
            raise NoProviderError(NO_PROVIDER_MESSAGE)
        else:
            name = next(i.name for i in available_providers(env) if i.configured)
    provider = spec(name)
    info = infos[provider.name]
    if not info.configured and not (api_key or base_url):
        raise _not_configured(provider, infos)
    if provider.sdk == "scripted":
        from lfassist_jupyter.providers.scripted import ScriptedProvider

        return ScriptedProvider.from_file(info.script or "", **options)
    url = base_url or info.base_url
    if base_url and provider.url_form == "ollama":
        url = sdk_base_url(provider, base_url)
    own = own_server(provider, check_base_url(url, provider.display_name))
    common: _Common = {
        "name": provider.name,
        "display_name": provider.display_name,
        "api_key": api_key or info.api_key,
        "base_url": url,
        "spec": provider,
        "own_server": own,
        "model": settings.read("model", env) or "",
        "intent_model": settings.read("intent_model", env) or "",
        "models": [] if own else [ModelInfo(n, d) for n, d in provider.models],
    }
    if provider.sdk == "anthropic":
        from lfassist_jupyter.providers.anthropic import AnthropicProvider

        return AnthropicProvider(**common, **options)
    from lfassist_jupyter.providers.openai import OpenAIProvider

    return OpenAIProvider(**common, **options)
