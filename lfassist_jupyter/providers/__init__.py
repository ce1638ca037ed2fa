"""Model providers: one table of what each is (``table.py``), one small async streaming contract
(``Provider.stream(ModelCall)``), one module per SDK.

Only this package imports ``openai`` and ``anthropic``, and only when a provider of that
kind is created, so ``%load_ext`` stays fast.
"""

from lfassist_jupyter.providers._registry import (
    NO_PROVIDER_MESSAGE,
    ProviderInfo,
    available_providers,
    check_config,
    check_environment,
    create_provider,
)
from lfassist_jupyter.providers.base import ModelCall, ModelFallback, Provider, Usage
from lfassist_jupyter.providers.scripted import ScriptedProvider
from lfassist_jupyter.providers.table import PROVIDERS, ProviderSpec, Task, TaskModels

__all__ = [
    "NO_PROVIDER_MESSAGE",
    "PROVIDERS",
    "ModelCall",
    "ModelFallback",
    "Provider",
    "ProviderInfo",
    "ProviderSpec",
    "ScriptedProvider",
    "Task",
    "TaskModels",
    "Usage",
    "available_providers",
    "check_config",
    "check_environment",
    "create_provider",
]
