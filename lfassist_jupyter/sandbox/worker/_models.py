"""A model node's selection, as lfx stores it, from what a spec writes (part of the ``flow_build`` op).

lfx's ``ModelInput`` (Language Model, Agent, Embedding Model...) stores its choice as
``[{"name", "provider", "metadata"...}]``, and lfx's own spec handling turns a bare name into
that shape only for the names in its model list (``normalize_model_names_to_dicts``): any
other name gets the provider ``"Unknown"`` and fails at run time ("The selected model is
missing a provider").  The user's model is often not in that list (a dated Claude name, a
local server's model, a fine-tune), and it is exactly the name the provider must receive.

So a spec may write a model three ways, and each ends as lfx's own shape with the user's
exact name (``get_llm`` builds the provider's client from the provider, whatever the name):

- ``M.model: gpt-4o-mini``: a name in lfx's list, lfx's own option (with its metadata);
- ``M.model: {"name": "my-model", "provider": "OpenAI"}``: any name, with its provider;
- ``M.model: my-model`` with ``M.provider: OpenAI`` (lfx's Provider Override field): the same.

A name lfx does not list and no provider is an error whose fix shows the second form.
stdlib + lfx only, like every worker module.
"""

from __future__ import annotations

import json
from typing import Any

_MODEL_TYPES = {"language": "llm", "embedding": "embeddings"}
"""A ``ModelInput``'s ``model_type`` -> the ``model_type`` of lfx's model catalogue."""


class SelectionError(ValueError):
    """The selection cannot be made; ``fix`` says how (the build reports it as a bad value)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def providers() -> list[str]:
    """The providers lfx can build a model for: its catalogue's and the bundles' registered ones."""
    from lfx.base.models.provider_registry import registered_provider_names
    from lfx.base.models.unified_models import get_model_providers

    return sorted({*get_model_providers(), *registered_provider_names()})


def canonical_provider(name: str) -> str | None:
    """lfx's spelling of a provider (``openai`` -> ``OpenAI``), or None when lfx has no such provider."""
    wanted = name.strip().lower()
    return next((p for p in providers() if p.lower() == wanted), None)


def _listed(name: str, provider: str, model_type: str) -> dict[str, Any] | None:
    """lfx's own option for ``name`` under ``provider``, when its model list has it."""
    from lfx.base.models.unified_models import get_unified_models_detailed, normalize_model_names_to_dicts

    kind = _MODEL_TYPES.get(model_type, "llm")
    for entry in get_unified_models_detailed(providers=[provider], model_type=kind):
        if any(m.get("model_name") == name for m in entry.get("models", [])):
            option = normalize_model_names_to_dicts(name)[0]
            if option.get("provider") == provider:
                return option
    return None


def wanted_selection(value: Any) -> tuple[str, str | None] | None:
    """``(name, provider or None)`` a spec value asks for, or None when it is not a model choice
    (an empty value, a connected model object)."""
    if isinstance(value, str) and value.strip().startswith(("{", "[")):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value.strip(), None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"].strip():
        provider = value.get("provider")
        return value["name"].strip(), provider.strip() if isinstance(provider, str) and provider.strip() else None
    if isinstance(value, str) and value.strip():
        return value.strip(), None
    return None


def selection(name: str, provider_hint: str | None, model_type: str) -> list[dict[str, Any]]:
    """The ``ModelInput`` value for ``name``: lfx's option when listed, else ``{name, provider}``
    with the provider the spec gave.  ``SelectionError`` when there is no provider to use."""
    if provider_hint:
        provider = canonical_provider(provider_hint)
        if provider is None:
            raise SelectionError(
                f"lfx has no model provider {provider_hint!r}.", f"Use one of {providers()} as the provider."
            )
        return [_listed(name, provider, model_type) or {"name": name, "provider": provider, "category": provider}]
    from lfx.base.models.unified_models import normalize_model_names_to_dicts

    option = normalize_model_names_to_dicts(name)[0]
    if option.get("provider") in (None, "", "Unknown"):
        raise SelectionError(
            f"{name!r} is not in lfx's model list, so lfx cannot tell its provider.",
            f'Name the provider with the model: {{"name": "{name}", "provider": "OpenAI"}} '
            f"(providers: {', '.join(providers())}), or set the node's provider field.",
        )
    return [option]


def chosen(template_field: dict[str, Any]) -> tuple[str, str] | None:
    """``(name, provider)`` a model field holds after the build, or None."""
    value = template_field.get("value")
    if isinstance(value, list) and value and isinstance(value[0], dict):
        name, provider = value[0].get("name"), value[0].get("provider")
        if isinstance(name, str) and isinstance(provider, str):
            return name, provider
    return None
