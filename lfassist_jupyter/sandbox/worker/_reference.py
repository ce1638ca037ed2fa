"""Facts about lfx for the prompts and the repair pass: its input classes, ``Component``'s
names, where every public name lives, its output types, and the standard library's modules.

Computed by the zygote once, before any generated code ever ran in its interpreter, and sent
with the "ready" message (the kernel never imports lfx), so a prompt or a repair never drifts
from the lfx that validates the answer.
"""

from __future__ import annotations

import bisect
import importlib
import inspect
import os
import re
import sys

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
        inputs.append({"name": name, "params": own, "doc": doc, "fields": fields, "family": _family(cls)})
    return {
        "lfx_version": LFX_VERSION,
        "common_params": _COMMON,
        "inputs": inputs,
        "component_attrs": _component_attrs(),
        "imports": _facade_homes(),
        "stdlib_modules": sorted(m for m in sys.stdlib_module_names if not m.startswith("_")),
        "output_types": _output_types(),
    }


def _family(cls: type) -> str:
    """The kind of value an input class holds, as lfx declares it (its ``field_type``), with
    ``/secret`` for the classes that mask it: the classes of one family are the siblings a
    misplaced keyword may belong to (``multiline`` belongs to MultilineInput, not to
    MultilineSecretInput, which holds a secret)."""
    from lfx.inputs.input_mixin import BaseInputMixin

    if not issubclass(cls, BaseInputMixin):
        return ""  # a prompt's field class lfx.io also exports: not an input a component declares
    fields = getattr(cls, "model_fields", {})
    kind = getattr(fields.get("field_type"), "default", None)
    kind = getattr(kind, "value", kind)
    secret = getattr(fields.get("password"), "default", None) is True
    return f"{kind}{'/secret' if secret else ''}"


def _output_types() -> dict:
    """The name each lfx output type goes by -> the class a component builds it with: lfx 1.13
    calls Data "JSON" and DataFrame "Table" in its outputs' types."""
    from lfx.schema.data import Data
    from lfx.schema.dataframe import DataFrame
    from lfx.schema.message import Message

    found = {}
    for name, cls in (("Message", Message), ("Data", Data), ("DataFrame", DataFrame)):
        found[name] = name
        found[cls.__name__] = name
    return found


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


def _facade_homes() -> dict:
    """symbol -> the lfx module a component should import it from: lfx.io's exports, the schema
    types, Component, RangeSpec (the modules the prompt names).  Cheap: sent with "ready"."""
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


def names() -> dict:
    """The fact ``lfx_names``: where every public lfx name lives, for the repair pass.

    The facade homes above, then every other public name lfx defines in exactly one of its
    modules; a name two modules define is left out (which one is meant is not certain), even
    when lfx.io exports one of them.  Read from lfx's source (~900 files, a tenth of a second or
    more), so the zygote computes it on first use rather than before "ready", and sends it itself
    (``SandboxValidator.reference`` merges it)."""
    found = _facade_homes()
    for name, homes in _definitions().items():
        if len(homes) > 1 and not any(name in fixed for fixed in _IMPORT_NAMES.values()):
            found.pop(name, None)
        elif name not in found and len(homes) == 1:
            found[name] = homes.pop()
    return {"imports": found}


# A top-level definition: ``def name``, ``class name``, ``name = ...`` or ``name: T = ...`` at the
# start of a line, outside the triple-quoted strings (docstrings, code templates).  On lfx 1.13 this
# finds exactly what an ``ast`` walk of every module's body finds (tests/sandbox/test_sandbox.py),
# in a tenth of the time: parsing all ~900 modules would add seconds to the zygote's start.
_TOP_LEVEL = re.compile(rb"\n(?:(?:async[ \t]+)?def[ \t]+(\w+)|class[ \t]+(\w+)|(\w+)[ \t]*(?::[^=\n]*)?=(?!=))")
_TRIPLE_QUOTE = re.compile(rb"\"\"\"|\'\'\'")


def _top_level_names(source: bytes) -> list:
    """The names ``source`` defines at its top level (the regex above, minus what sits inside a
    triple-quoted string: the quotes pair up in order, each closed by its own kind)."""
    source = b"\n" + source
    bounds: list = []
    opened = None
    for quote in _TRIPLE_QUOTE.finditer(source):
        if opened is None:
            opened = quote.group()
            bounds.append(quote.start())
        elif quote.group() == opened:
            opened = None
            bounds.append(quote.end())
    return [
        (m[1] or m[2] or m[3]).decode()
        for m in _TOP_LEVEL.finditer(source)
        if bisect.bisect_right(bounds, m.start()) % 2 == 0
    ]


def _definitions() -> dict:
    """Public name -> the lfx modules that define it at their top level (a class, a function, an
    assignment), read from lfx's source without importing it (importing every module would pull
    in every optional dependency)."""
    import lfx

    root = os.path.dirname(lfx.__file__)
    parent = os.path.dirname(root)
    found: dict = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        for file in sorted(files):
            if not file.endswith(".py") or (file.startswith("_") and file != "__init__.py"):
                continue
            path = os.path.join(folder, file)
            parts = os.path.relpath(path, parent)[:-3].split(os.sep)
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            try:
                with open(path, "rb") as f:
                    names = _top_level_names(f.read())
            except OSError:
                continue
            for name in names:
                if not name.startswith("_"):
                    found.setdefault(name, set()).add(module)
    return found


def _component_attrs() -> list:
    """The attributes and methods of lfx's ``Component``: names an input must not take."""
    return sorted(a for a in dir(Component) if not a.startswith("__"))
