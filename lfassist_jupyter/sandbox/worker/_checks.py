"""What is wrong with a component Langflow builds, proven on the built class without calling it.

Outputs that point nowhere or have no type, output methods that override what lfx's own
``Component`` uses, inputs whose value the component can never read -- each checked on the
real class the child just built (trusted lfx code, the component's code under the hook).
"""

from __future__ import annotations

import ast

from ._lfx import Component
from ._shared import finding, first_line
from ._smoke import DECLARED_VALUE_TYPES, UNPROBEABLE, probe


def field_summaries(instance: object, template: dict) -> tuple[list[dict], list[dict]]:
    inputs = []
    for inp in getattr(instance, "inputs", None) or []:
        inputs.append(
            {"name": inp.name, "display_name": getattr(inp, "display_name", None), "type": type(inp).__name__}
        )
    outputs = []
    for out in template.get("outputs", []) or []:
        types = list(out.get("types") or [])
        outputs.append(
            {
                "name": out.get("name"),
                "display_name": out.get("display_name"),
                "method": out.get("method"),
                "types": types,
                "type": " | ".join(types) or None,
            }
        )
    return inputs, outputs


def line_offset(cls: type, code: str) -> int:
    """How far lfx shifted the code's lines when it compiled it (it prepends its default
    imports), measured on one of the class's own methods: frames say lfx's line, the user
    reads theirs."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for item in node.body:
                func = vars(cls).get(getattr(item, "name", ""))
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.decorator_list:
                    code_obj = getattr(func, "__code__", None)
                    if code_obj is not None:
                        return code_obj.co_firstlineno - item.lineno
    return 0


def _self_reads(code: str) -> set[str]:
    """Names the code reads as ``self.<name>``."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Load)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }


def input_name_findings(code: str, instance: object) -> list[dict]:
    """Inputs whose value the component can never read, proven on the real class.

    ``Component.__getattr__`` serves input values only when normal attribute lookup fails,
    so an input named like a class attribute anywhere in the MRO (``display_name``,
    ``description``, a base's ``manager_llm = None``) is silently ignored by ``self.<name>``;
    and lfx's ``set_attributes`` refuses, when the flow runs, an input named like an
    attribute the instance sets itself (``inputs``, ``status``) -- "a reserved word".
    Each case is tried on the instance: set the value as Langflow does, read it back.
    """
    found: list[dict] = []
    reads = _self_reads(code)
    cls = type(instance)
    for inp in list(getattr(instance, "inputs", None) or []):
        name = getattr(inp, "name", None)
        if not isinstance(name, str) or name.startswith("_"):
            continue
        in_dict = name in getattr(instance, "__dict__", {})
        in_class = any(name in vars(k) for k in cls.__mro__)
        if not in_dict and not in_class:
            continue
        if in_class and callable(getattr(cls, name, None)) and not isinstance(getattr(cls, name, None), type):
            continue  # a method: lfx itself refuses it at build time
        sample = f"lfassist-probe-{name}" if DECLARED_VALUE_TYPES.get(type(inp).__name__) is str else probe(inp)
        if sample is None or sample is UNPROBEABLE:
            continue
        try:
            instance.set_attributes({name: sample})  # type: ignore[attr-defined]
        except ValueError as exc:
            if "reserved" in str(exc):
                found.append(
                    finding(
                        "error",
                        "runtime",
                        f"input `{name}` cannot receive a value: when the flow runs, lfx refuses it "
                        f"({first_line(exc)}). Rename the input (e.g. `{name}_value`).",
                        evidence=str(exc),
                        rule="input-reserved",
                    )
                )
            continue
        except Exception:
            continue
        got = getattr(instance, name, None)
        if got is sample or (isinstance(got, str | int | float) and got == sample):
            continue
        shown = repr(got)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        message = (
            f"input `{name}` is ignored: `self.{name}` returns the component's own `{name}` ({shown}), "
            f"not the value set in Langflow. Rename the input (e.g. `{name}_value`)"
        )
        if name in reads:
            found.append(
                finding(
                    "error",
                    "runtime",
                    message + ".",
                    evidence=f"set {name}={sample!r} as Langflow does; self.{name} is still {shown}",
                    rule="input-ignored",
                )
            )
        else:
            found.append(
                finding(
                    "warning",
                    "runtime",
                    message + f", or keep reading it another way (this code never reads `self.{name}`).",
                    rule="input-ignored",
                )
            )
    return found


def _lfx_output_methods() -> frozenset[str]:
    """The methods lfx's own Component names in the outputs it adds itself (Tool Mode's
    ``component_as_tool`` output calls ``to_toolkit``): an output method by that name replaces it."""
    try:
        return frozenset({Component._build_tool_output(Component.__new__(Component)).method})
    except Exception:
        return frozenset()


# Names lfx's own Component gives a meaning a component must not override with an output
# method: the methods of lfx's own outputs, and the attributes and properties lfx reads
# (display_name, inputs, graph...).  Not methods such as ``run`` or ``build``: lfx never calls
# those while a flow runs, and components override them.
_TOOL_METHODS = _lfx_output_methods()
_RESERVED = _TOOL_METHODS | frozenset(
    n for n in dir(Component) if not n.startswith("_") and not callable(getattr(Component, n, None))
)


def reserved_findings(cls: type, outputs: list[dict]) -> list[dict]:
    """Output methods the component defines under a name lfx's ``Component`` already uses."""
    found = []
    lfx_classes = set(Component.__mro__)
    for out in outputs:
        method = out.get("method")
        if method not in _RESERVED:
            continue
        owner = next((k for k in cls.__mro__ if method in vars(k)), None)
        if owner is None or owner in lfx_classes:
            continue  # it uses lfx's own (e.g. MCP's tool output points at Component.to_toolkit)
        what = (
            "the method Langflow calls for the component's tool output in Tool Mode"
            if method in _TOOL_METHODS
            else "an attribute Langflow reads"
        )
        found.append(
            finding(
                "error",
                "runtime",
                f"output `{out.get('name')}` uses the method name '{method}', which overrides lfx's "
                f"Component.{method} ({what}); it breaks as soon as Langflow uses it. "
                f"Rename the method (e.g. `build_{out.get('name')}`).",
                evidence=f"{owner.__name__}.{method} overrides Component.{method}",
                rule="reserved-name",
            )
        )
    return found


def output_findings(cls: type, outputs: list[dict]) -> list[dict]:
    found = []
    for out in outputs:
        if out["method"] is None:
            continue  # a legacy component built by its build() method
        if not callable(getattr(cls, out["method"], None)):
            found.append(
                finding(
                    "error",
                    "runtime",
                    f"output `{out['name']}` points to method '{out['method']}', which does not exist.",
                    rule="missing-method",
                )
            )
        elif not out["types"]:
            found.append(
                finding(
                    "error",
                    "runtime",
                    f"output `{out['name']}` has no type: give method '{out['method']}' a return annotation "
                    "(or the Output `types=[...]`), or it can be connected to nothing.",
                    rule="output-untyped",
                )
            )
    return found
