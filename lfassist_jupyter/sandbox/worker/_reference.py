"""Facts about lfx for the prompts: its input classes, ``Component``'s names, where symbols live.

Computed by the zygote once, before any generated code ever ran in its interpreter, and sent
with the "ready" message (the kernel never imports lfx), so a prompt never drifts from the
lfx that validates the answer.
"""

from __future__ import annotations

import importlib
import inspect

from ._lfx import LFX_VERSION, Component

_INPUT_NOISE = {
    "field_type",
    "override_skip",
    "dynamic",
    "title_case",
    "track_in_telemetry",
    "trace_as_input",
    "trace_as_metadata",
    "api_editable",
    "show",
    "list_add_label",
    "refresh_button_text",
    "real_time_refresh",
    "refresh_button",
    "helper_text",
    "helper_text_metadata",
    "load_from_db",
    "conditional_options",
    "options_metadata",
    "dialog_inputs",
    "toggle_value",
    "toggle_disable",
    "button_metadata",
    "connection_link",
    "search_category",
    "temp_file",
    "auth_tooltip",
}
_COMMON = ["name", "display_name", "info", "value", "required", "advanced", "placeholder", "input_types"]


def reference() -> dict:
    """The input classes lfx.io exports, with the parameters each adds to the common ones."""
    import lfx.io as lfx_io
    from lfx.inputs.input_mixin import BaseInputMixin

    base = set(BaseInputMixin.model_fields)
    inputs = []
    for name in sorted(getattr(lfx_io, "__all__", [])):
        cls = getattr(lfx_io, name, None)
        if name == "Output" or not isinstance(cls, type) or not hasattr(cls, "model_fields"):
            continue
        own = [f for f in cls.model_fields if f not in base and f not in _INPUT_NOISE and not f.startswith("_")]
        doc = (inspect.getdoc(cls) or "").strip().split("\n")[0][:100]
        # Every keyword the class accepts (field names and their aliases): what the repair pass
        # (core/component/repair.py) needs to tell a misspelt keyword from a real one.
        fields = sorted({a for k, f in cls.model_fields.items() for a in (k, f.alias) if a and not a.startswith("_")})
        inputs.append({"name": name, "params": own, "doc": doc, "fields": fields})
    return {
        "lfx_version": LFX_VERSION,
        "common_params": _COMMON,
        "inputs": inputs,
        "component_attrs": _component_attrs(),
        "imports": _import_map(),
    }


# Where each symbol a component imports is importable, in order of preference (the module a
# model should write): the first module that has a name wins.
_IMPORT_HOMES = (
    "lfx.io",
    "lfx.schema.message",
    "lfx.schema.data",
    "lfx.schema.dataframe",
    "lfx.custom.custom_component.component",
    "lfx.field_typing.range_spec",
    "lfx.schema.dotdict",
    "lfx.schema",
)
_IMPORT_NAMES = {
    "lfx.schema.message": ("Message",),
    "lfx.schema.data": ("Data",),
    "lfx.schema.dataframe": ("DataFrame",),
    "lfx.custom.custom_component.component": ("Component",),
    "lfx.field_typing.range_spec": ("RangeSpec",),
    "lfx.schema.dotdict": ("dotdict",),
}


def _import_map() -> dict:
    """symbol -> the lfx module to import it from (lfx.io's exports, the schema types, Component)."""
    found: dict = {}
    for module_name in _IMPORT_HOMES:
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        names = _IMPORT_NAMES.get(module_name) or getattr(module, "__all__", ())
        for name in names:
            if isinstance(name, str) and name not in found and hasattr(module, name):
                found[name] = module_name
    return found


def _component_attrs() -> list:
    """The attributes and methods of lfx's ``Component``: names an input must not take."""
    return sorted(a for a in dir(Component) if not a.startswith("__"))
