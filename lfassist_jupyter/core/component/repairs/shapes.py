"""Types: an output method whose returns contradict the type it declares, or that declares none.

lfx's output types take a value one way each: ``Message(text=...)`` from text,
``Data(data=...)`` from a dict, ``DataFrame(...)`` from a list of rows (dicts).  When the
smoke phase shows a method returning a plain value where one of those is declared, each return
whose shape the code alone proves to be that value (a literal, an f-string, a dict display, a
list of dict displays, a local name only ever assigned such values) is wrapped the way the
declared type takes it; a return the code does not tell is left as it is (validation says
whether it was the one).  When the value is a list of rows and the method declares ``Data``
(``Data(data=rows)`` fails in lfx), the output is re-declared a ``DataFrame``, the type that
holds rows.  No return of a known shape: the model's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lfassist_jupyter.core.component.repairs.names import ensure_imported
from lfassist_jupyter.core.component.repairs.tree import (
    Edits,
    NoFix,
    code_of,
    equal,
    func_name,
    kwarg,
    methods,
    outputs,
    replace,
    returns,
    string,
    walk,
)

if TYPE_CHECKING:
    import libcst as cst

OUTPUT_TYPES = ("Message", "Data", "DataFrame")
"""The types an output method's return annotation may be inferred as (each return builds one)."""

# How each output type takes a plain value: (the value's shape, the keyword it goes under).
TAKES = {"Message": ("text", "text"), "Data": ("dict", "data"), "DataFrame": ("rows", None)}
_PYTHON = {"str": "text", "dict": "dict", "list": "rows"}

_STR_METHODS = frozenset(
    {
        "upper", "lower", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase", "casefold", "replace",
        "join", "format", "center", "ljust", "rjust", "zfill", "removeprefix", "removesuffix", "expandtabs",
    }
)  # fmt: skip


def fix_annotation(tree: cst.Module, cls: cst.ClassDef, untyped: set[str]) -> tuple[cst.Module, list[str]]:
    """An output method with no return annotation, every return building one type: annotate it."""
    import libcst as cst

    defined = methods(cls)
    edits: Edits = {}
    changes: list[str] = []
    for out in outputs(cls):
        arg = kwarg(out, "method")
        name = string(arg.value) if arg else None
        func = defined.get(name or "")
        if func is None or name not in untyped or func.returns is not None:
            continue
        if kwarg(out, "types") is not None or kwarg(out, "type") is not None:
            continue
        built = set()
        for ret in returns(func):
            value = ret.value
            if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
                raise NoFix(f"{name} returns something other than a constructor call")
            built.add(value.func.value)
        if len(built) != 1 or next(iter(built)) not in OUTPUT_TYPES:
            raise NoFix(f"{name} returns {sorted(built)}: not one output type")
        kind = built.pop()
        edits[id(func)] = lambda n, k=kind: n.with_changes(returns=cst.Annotation(annotation=cst.Name(k)))
        changes.append(f"`{name}` annotated `-> {kind}` (every return builds a {kind})")
    if not changes:
        raise NoFix("no untyped output method with one return type")
    return replace(tree, edits), changes


def assignments(func: cst.FunctionDef) -> dict[str, list[Any]]:
    """name -> the values the function assigns to it (plain ``name = value`` only)."""
    import libcst as cst

    found: dict[str, list[Any]] = {}
    for node in walk(func.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(node.value)
        elif isinstance(node, cst.AugAssign | cst.AnnAssign) and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, []).append(getattr(node, "value", None))
    return found


def _appended(func: cst.FunctionDef, name: str) -> list[Any] | None:
    """What ``name.append(x)`` adds to the list ``name``; None when the list changes any other
    way (``extend``, ``insert``, ``+=``...), which leaves its rows unknown."""
    import libcst as cst

    added = []
    for node in walk(func.body):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value == name
        ):
            if node.func.attr.value != "append" or len(node.args) != 1:
                return None
            added.append(node.args[0].value)
    return added


def shape(value: Any, func: cst.FunctionDef, depth: int = 0) -> str | None:
    """The value's shape when the code alone proves it: "text", "dict", "rows" (a list of dicts),
    "list" (a list of unknown items), or None."""
    import libcst as cst

    if depth > 8 or value is None:
        return None
    if isinstance(value, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString):
        return "text"
    if isinstance(value, cst.Dict | cst.DictComp):
        return "dict"
    if isinstance(value, cst.ListComp):
        return "rows" if shape(value.elt, func, depth + 1) == "dict" else "list"
    if isinstance(value, cst.List):
        items = {shape(e.value, func, depth + 1) for e in value.elements}
        return "rows" if items == {"dict"} else "list"
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Name):
            return {"str": "text", "dict": "dict"}.get(value.func.value)
        return "text" if isinstance(value.func, cst.Attribute) and value.func.attr.value in _STR_METHODS else None
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        sides = {shape(value.left, func, depth + 1), shape(value.right, func, depth + 1)}
        return "text" if "text" in sides else None
    if isinstance(value, cst.IfExp):
        sides = {shape(value.body, func, depth + 1), shape(value.orelse, func, depth + 1)}
        return sides.pop() if len(sides) == 1 else None
    if isinstance(value, cst.Name):
        return _name_shape(value.value, func, depth)
    return None


def _name_shape(name: str, func: cst.FunctionDef, depth: int) -> str | None:
    assigned = assignments(func).get(name) or []
    shapes = {shape(v, func, depth + 1) for v in assigned}
    if not assigned or len(shapes) != 1:
        return None
    found = shapes.pop()
    if found != "list":
        return found
    added = _appended(func, name)  # rows = [] ... rows.append({...})
    if added is None or not added:
        return None
    return "rows" if {shape(v, func, depth + 1) for v in added} == {"dict"} else None


def fix_returns(
    tree: cst.Module, cls: cst.ClassDef, method: str, got: str, declared: list[str], facts: dict[str, Any]
) -> tuple[cst.Module, list[str]]:
    """``method`` returned a plain ``got`` (str, dict, list) where ``declared`` output types are:
    wrap each plain return the way its type takes it, or re-declare Data holding rows."""
    names = facts.get("output_types") or {}
    kinds = {names.get(t, t) for t in declared} & set(TAKES)
    wanted = _PYTHON.get(got)
    fits = [k for k in sorted(kinds) if TAKES[k][0] == wanted]
    if len(fits) == 1:
        return _wrap(tree, cls, method, fits[0], facts)
    if kinds == {"Data"} and wanted == "rows":
        return _redeclare_rows(tree, cls, method, facts)
    raise NoFix(f"{method} returned {got}, declared {declared}: no one type takes it")


def _wrap(tree: cst.Module, cls: cst.ClassDef, method: str, kind: str, facts: dict[str, Any]) -> tuple[Any, list[str]]:
    import libcst as cst

    func = methods(cls).get(method)
    if func is None:
        raise NoFix(f"method {method!r} not found")
    wanted, keyword = TAKES[kind]
    edits: Edits = {}
    for ret in returns(func):
        value = ret.value
        if value is None or (isinstance(value, cst.Name) and value.value == "None"):
            continue
        if shape(value, func) != wanted:
            continue  # an lfx type already, or a value the code alone does not tell: left as is
        arg = (
            cst.Arg(value=value) if keyword is None else cst.Arg(keyword=cst.Name(keyword), value=value, equal=equal())
        )
        edits[id(ret)] = lambda n, a=arg: n.with_changes(
            value=cst.Call(func=cst.Name(kind), args=[a.with_changes(value=n.value)])
        )
    if not edits:
        raise NoFix(f"{method} has no return known to be {_WORDS[wanted]}")
    plural = "s" * (len(edits) > 1)
    tree = replace(tree, edits)
    tree, more = ensure_imported(tree, kind, facts)
    how = f"{kind}({keyword}=...)" if keyword else f"{kind}(...)"
    return tree, [f"`{method}` wraps its {_WORDS[wanted]} in `{how}` ({len(edits)} return{plural})", *more]


_WORDS = {"text": "plain text", "dict": "dict", "rows": "list of rows"}


def fix_rows_in_data(tree: cst.Module, cls: cst.ClassDef, method: str, facts: dict[str, Any]) -> tuple[Any, list[str]]:
    """``Data(data=rows)`` (lfx refuses: Data holds a dict) with rows a list of dicts, in a method
    declared ``-> Data``: re-declared ``-> DataFrame``, each such return ``DataFrame(rows)``."""
    return _redeclare_rows(tree, cls, method, facts)


def _redeclare_rows(tree: cst.Module, cls: cst.ClassDef, method: str, facts: dict[str, Any]) -> tuple[Any, list[str]]:
    import libcst as cst

    func = methods(cls).get(method)
    if func is None or func.returns is None:
        raise NoFix(f"method {method!r} not found or not annotated")
    annotation = func.returns.annotation
    if not (isinstance(annotation, cst.Name) and annotation.value == "Data"):
        raise NoFix(f"{method} is not declared `-> Data`")
    for out in outputs(cls):
        arg = kwarg(out, "method")
        if arg and string(arg.value) == method and (kwarg(out, "types") or kwarg(out, "type")):
            raise NoFix(f"the output of {method} declares its types itself")
    edits: Edits = {}
    for ret in returns(func):
        value = ret.value
        if value is None or (isinstance(value, cst.Name) and value.value == "None"):
            continue
        rows = value
        if isinstance(value, cst.Call) and func_name(value) == "Data" and len(value.args) == 1:
            data = value.args[0]
            if data.keyword is not None and data.keyword.value != "data":
                raise NoFix(f"{method} builds Data from {data.keyword.value}=")
            rows = data.value
        if shape(rows, func) != "rows":
            raise NoFix(f"{method} returns {code_of(value)!r}, not certainly a list of rows")
        edits[id(ret)] = lambda n, r=rows: n.with_changes(
            value=cst.Call(func=cst.Name("DataFrame"), args=[cst.Arg(value=r)])
        )
    if not edits:
        raise NoFix(f"{method} returns no rows")
    edits[id(func)] = lambda n: n.with_changes(returns=n.returns.with_changes(annotation=cst.Name("DataFrame")))
    tree = replace(tree, edits)
    tree, more = ensure_imported(tree, "DataFrame", facts)
    return tree, [
        f"`{method}` returns a list of rows: re-declared `-> DataFrame`, each return `DataFrame(rows)`",
        *more,
    ]
