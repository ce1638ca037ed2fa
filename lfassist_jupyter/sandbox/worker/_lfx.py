"""lfx, imported once in the zygote: the names every op uses, its version, the warm-up.

Importing lfx costs seconds; the zygote pays it here, once, before its first fork, and every
child inherits the warm interpreter.  ``_worker.py`` imports this module inside the ``try``
that turns a missing or broken lfx into the "fatal" message the kernel shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect

from lfx.custom.custom_component.component import Component
from lfx.custom.utils import build_custom_component_template
from lfx.schema.data import Data
from lfx.schema.dataframe import DataFrame
from lfx.schema.message import Message

__all__ = [
    "LFX_VERSION",
    "WARMUP",
    "Component",
    "Data",
    "DataFrame",
    "Message",
    "build_custom_component_template",
    "call",
    "prepare_lfx",
]

try:
    from importlib.metadata import version as _dist_version

    LFX_VERSION = _dist_version("lfx")
except Exception:
    LFX_VERSION = None

WARMUP = """
from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class WarmupComponent(Component):
    display_name = "Warmup"
    inputs = [MessageTextInput(name="input_text", display_name="Text")]
    outputs = [Output(display_name="Output", name="output", method="build_output")]

    def build_output(self) -> Message:
        return Message(text=self.input_text)
"""

_LFX_READY: list[bool] = []


def prepare_lfx() -> None:
    """Create lfx's own lazy services (trusted code) before any component code is armed.

    lfx creates its settings service on first use, and creating it sets ``USER_AGENT`` in
    ``os.environ`` (``os.putenv``), which the audit hook refuses while generated code runs.
    A component that merely *imports* an lfx module using the settings (the MCP components)
    would then fail to build here while Langflow builds it.  A worker should call this while
    warming up; ``validate`` calls it too, and it costs nothing after the first time.
    """
    if _LFX_READY:
        return
    _LFX_READY.append(True)
    with contextlib.suppress(Exception):
        from lfx.services.deps import get_settings_service

        get_settings_service()


def call(component: object, method_name: str) -> object:
    """Call an output method the way Langflow does (``Component._get_output_result``): an
    ``async def`` (or a declared async delegate) is awaited; a plain method's return value is
    used as is -- so a coroutine it returns stays un-awaited, as it would in a flow."""
    method = getattr(component, method_name)
    target = None
    with contextlib.suppress(Exception):
        from lfx.utils.async_helpers import async_delegate_target

        target = async_delegate_target(component, method_name)
    if target is None and not inspect.iscoroutinefunction(method):
        return method()
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete((target or method)())
    finally:
        loop.close()
