"""Facts about the artifacts the assistant produces (component code), shared by the engine's
extraction and the validator's static phase, so both agree on what a component is."""

from lfassist_jupyter.artifacts.component import (
    COMPONENT_BASE,
    MAX_CODE_CHARS,
    defines_component,
    find_component_class,
    guess_class_name,
    is_component_base,
    lfx_component_class,
)

__all__ = [
    "COMPONENT_BASE",
    "MAX_CODE_CHARS",
    "defines_component",
    "find_component_class",
    "guess_class_name",
    "is_component_base",
    "lfx_component_class",
]
