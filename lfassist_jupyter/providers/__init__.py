"""Model providers: one small async streaming contract, one module per SDK.

Only this package imports ``openai`` and ``anthropic``, and only when a provider of that
kind is created, so ``%load_ext`` stays fast.
"""

from lfassist_jupyter.providers._registry import (
    NO_PROVIDER_MESSAGE,
    ProviderInfo,
    available_providers,
    check_config,
    create_provider,
)
from lfassist_jupyter.providers.base import Provider, Usage
from lfassist_jupyter.providers.scripted import ScriptedProvider

__all__ = [
    "NO_PROVIDER_MESSAGE",
    "Provider",
    "ProviderInfo",
    "ScriptedProvider",
    "Usage",
    "available_providers",
    "check_config",
    "create_provider",
]
