"""Which providers are configured, and building one.

Configuration comes from explicit arguments or the usual environment variables; the
first configured provider in ``PREFERRED_ORDER`` wins unless ``LFASSIST_PROVIDER`` says
otherwise.  Each provider has a generation model and a cheaper, faster model for intent
classification (model per task), both overridable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lfassist_jupyter import settings
from lfassist_jupyter.errors import ConfigError, NoProviderError
from lfassist_jupyter.providers.base import ModelInfo, Provider

PREFERRED_ORDER = ("openai", "anthropic", "ollama", "scripted")

_CATALOG: dict[str, dict[str, Any]] = {
    "openai": {
        "display_name": "OpenAI",
        "default_model": "gpt-4o",
        "fast_model": "gpt-4o-mini",
        "models": [
            ("gpt-4o", "GPT-4o"),
            ("gpt-4o-mini", "GPT-4o mini"),
            ("gpt-4.1", "GPT-4.1"),
            ("gpt-4.1-mini", "GPT-4.1 mini"),
            ("o4-mini", "o4-mini"),
        ],
    },
    "anthropic": {
        "display_name": "Anthropic",
        "default_model": "claude-sonnet-4-5",
        "fast_model": "claude-haiku-4-5",
        "models": [
            ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
            ("claude-haiku-4-5", "Claude Haiku 4.5"),
            ("claude-opus-4-1", "Claude Opus 4.1"),
        ],
    },
    "ollama": {
        "display_name": "Ollama",
        "default_model": "llama3.1",
        "fast_model": "",
        "models": [("llama3.1", "Llama 3.1"), ("qwen2.5-coder", "Qwen2.5 Coder")],
    },
    "scripted": {
        "display_name": "Scripted (offline demo)",
        "default_model": "scripted",
        "fast_model": "scripted",
        "models": [("scripted", "Scripted replies")],
    },
}

NO_PROVIDER_MESSAGE = (
    "No model provider is configured. Set OPENAI_API_KEY (OpenAI), ANTHROPIC_API_KEY (Anthropic), "
    "OPENAI_BASE_URL (any OpenAI-compatible server such as vLLM or LM Studio) or OLLAMA_HOST (Ollama), "
    "or LFASSIST_SCRIPT=<file.json> for the offline scripted demo provider."
)


@dataclass
class ProviderInfo:
    """A provider as configuration sees it (no secrets in ``repr``)."""

    name: str
    configured: bool
    display_name: str
    default_model: str
    fast_model: str
    models: list[ModelInfo] = field(default_factory=list)
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    script: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "configured": self.configured,
            "default_model": self.default_model,
            "models": [{"name": m.name, "display_name": m.display_name} for m in self.models],
        }


def _info(name: str, env: Mapping[str, str]) -> ProviderInfo:
    cat = _CATALOG[name]
    models = [ModelInfo(n, d) for n, d in cat["models"]]
    default, fast = cat["default_model"], cat["fast_model"]
    base_url = key = script = None
    if name == "openai":
        key = env.get("OPENAI_API_KEY") or None
        base_url = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or None
        configured = bool(key or base_url)
    elif name == "anthropic":
        key = env.get("ANTHROPIC_API_KEY") or None
        base_url = env.get("ANTHROPIC_BASE_URL") or None
        configured = bool(key)
    elif name == "ollama":
        host = env.get("OLLAMA_BASE_URL") or env.get("OLLAMA_HOST") or ""
        if host and not host.startswith("http"):
            host = f"http://{host}"
        base_url = host.rstrip("/") + "/v1" if host and not host.rstrip("/").endswith("/v1") else host or None
        configured = bool(host)
    else:
        script = settings.read("script", env)
        configured = bool(script)
    return ProviderInfo(
        name=name,
        configured=configured,
        display_name=cat["display_name"],
        default_model=default,
        fast_model=fast or default,
        models=models,
        base_url=base_url,
        api_key=key,
        script=script,
    )


def available_providers(env: Mapping[str, str] | None = None) -> list[ProviderInfo]:
    """Every known provider with its configuration state, in preference order."""
    env = os.environ if env is None else env
    infos = [_info(name, env) for name in PREFERRED_ORDER]
    preferred = settings.read("provider", env)
    if preferred:
        infos.sort(key=lambda i: i.name != preferred)
    return infos


def _model_override(env: Mapping[str, str], info: ProviderInfo) -> tuple[str, str]:
    """(generation model, intent model): env overrides, else the catalog's pair.  A
    provider without a known fast model (Ollama) classifies with the generation model,
    since that is the model the user is known to have."""
    model = settings.read("model", env) or info.default_model
    fast = _CATALOG[info.name]["fast_model"]
    return model, settings.read("intent_model", env) or fast or model


def check_config(env: Mapping[str, str] | None = None) -> dict[str, Any]:
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
        "default_model": _model_override(env, default)[0] if default else None,
    }


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
        configured = [i for i in available_providers(env) if i.configured]
        if api_key or base_url:
            name = "openai"
        elif not configured:
            raise NoProviderError(NO_PROVIDER_MESSAGE)
        else:
            name = configured[0].name
    name = name.lower()
    if name not in infos:
        raise ConfigError(f"Unknown provider: {name}. Known providers: {', '.join(PREFERRED_ORDER)}.")
    info = infos[name]
    if not info.configured and not (api_key or base_url):
        configured_names = [i.name for i in infos.values() if i.configured]
        hint = f" Available providers: {', '.join(configured_names)}." if configured_names else ""
        var = {
            "openai": "OPENAI_API_KEY",
            "anthropic": "ANTHROPIC_API_KEY",
            "ollama": "OLLAMA_HOST",
            "scripted": "LFASSIST_SCRIPT",
        }[name]
        raise ConfigError(f"Provider '{name}' is not configured: set {var} or pass it explicitly.{hint}")
    model, intent_model = _model_override(env, info)
    common = {"default_model": model, "fast_model": intent_model, "models": info.models}
    if name == "openai":
        from lfassist_jupyter.providers.openai import OpenAIProvider

        return OpenAIProvider(api_key=api_key or info.api_key, base_url=base_url or info.base_url, **common, **options)
    if name == "ollama":
        from lfassist_jupyter.providers.openai import OpenAIProvider

        return OpenAIProvider(
            name="ollama",
            display_name="Ollama",
            api_key=api_key,
            base_url=base_url or info.base_url,
            **common,
            **options,
        )
    if name == "anthropic":
        from lfassist_jupyter.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            api_key=api_key or info.api_key, base_url=base_url or info.base_url, **common, **options
        )
    from lfassist_jupyter.providers.scripted import ScriptedProvider

    return ScriptedProvider.from_file(info.script or "", **options)
