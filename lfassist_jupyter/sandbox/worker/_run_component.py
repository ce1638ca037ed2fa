"""Worker op ``run_component``: build a component and run its first output on one input text.

An op module of the worker package (stdlib + lfx only) that the zygote imports before its
first fork -- the pattern for further ops such as running a whole flow.  The op itself runs
in a fresh, sandboxed child like every validation.
"""

from __future__ import annotations

import time

from ._lfx import Component, Message, build_custom_component_template, call
from ._shared import Armed, Timeout, error_text

_TEXT_INPUTS = ("MessageTextInput", "MultilineInput", "MessageInput", "StrInput", "PromptInput", "HandleInput")


def _text_of(value: object) -> str:
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    get_text = getattr(value, "get_text", None)
    if callable(get_text):
        return str(get_text())
    to_string = getattr(value, "to_string", None)  # a DataFrame
    if callable(to_string):
        return str(to_string())
    return "" if value is None else str(value)


def register(ops: dict, facts: dict) -> None:
    """Add ``run_component`` to the worker's op registry."""

    def run_component(req: dict) -> dict:
        code, text = str(req["code"]), str(req.get("input_text", ""))
        deadline = time.monotonic() + float(req.get("timeout", 10))
        try:
            with Armed(deadline):
                template, instance = build_custom_component_template(Component(_code=code))
            cls = type(instance)
            values = {}
            for inp in getattr(instance, "inputs", None) or []:
                if type(inp).__name__ in _TEXT_INPUTS:
                    kind = type(inp).__name__
                    values[inp.name] = Message(text=text) if kind in ("MessageInput", "HandleInput") else text
                    break
            outputs = template.get("outputs", []) or []
            if not outputs:
                return {"ok": False, "error": "The component has no output."}
            with Armed(deadline):
                component = cls(_code=code, **values)
                result = call(component, outputs[0].get("method") or "")
            return {"ok": True, "text": _text_of(result), "output": outputs[0].get("name")}
        except Timeout:
            return {"ok": False, "error": "The component did not finish in time."}
        except BaseException as exc:
            return {"ok": False, "error": error_text(exc)}

    ops["run_component"] = run_component
