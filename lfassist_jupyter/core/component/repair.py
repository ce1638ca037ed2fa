"""Zero-call repairs: fix the mechanical mistakes of a failed component before spending a model call.

A failed validation normally costs a whole model round trip.  Many failures are mechanical,
the kind a linter's autofix repairs: ``DropdownInput(choices=[...])``, ``Message`` used but
not imported, an ``Output(method=...)`` one letter off its method.  This pass fixes those on
the code's concrete syntax tree (LibCST: comments and layout are kept), never running it,
and only where the fix is certain:

- the mistake is named by a finding of the validation report (lfx's own verdict), and
- the right spelling comes from the installed lfx, through the sandbox's trusted
  ``reference()`` (input classes and every keyword they accept, ``Component``'s attributes,
  where each lfx symbol is imported from); the kernel never imports lfx.

Every error finding must have exactly one fix, or nothing changes (``None``): two possible
fixes, or an error no rule covers, go to the model.  The caller validates the repaired code
again like any other attempt (``arepair_until_valid``) and keeps it only if it validates.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:
    import libcst as cst

MAX_ROUNDS = 3
"""A repair can uncover the next error (the smoke phase runs once the build passes): rounds, at most."""

# Keywords models borrow from other libraries, and lfx's name for the same thing.  A rename
# applies only when the class accepts the target and the call does not already set it.
KEYWORD_RENAMES = {
    "choices": "options",
    "default": "value",
    "description": "info",
    "tooltip": "info",
    "help": "info",
    "label": "display_name",
}
# Bounds written as keywords, and the RangeSpec field each one is.
RANGE_KEYWORDS = {
    "min_value": "min",
    "minimum": "min",
    "min": "min",
    "max_value": "max",
    "maximum": "max",
    "max": "max",
    "step": "step",
}
OUTPUT_TYPES = ("Message", "Data", "DataFrame")
"""The types an output method's return annotation may be inferred as (each return builds one)."""

_EXTRA_KEYWORD = "Extra inputs are not permitted"
_UNDEFINED = re.compile(r"name '(\w+)' is not defined")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_METHOD = re.compile(r"[Mm]ethod '(\w+)'")
_STR_FOR_MESSAGE = re.compile(r"\((\w+)\) returned str but is declared as Message\.")
_INPUT = re.compile(r"^input `(\w+)`")


class NoFix(Exception):
    """This mistake has no certain fix here: the model gets the original error."""


@dataclass
class Repair:
    """Repaired code and one line per change, for the user and the events."""

    code: str
    changes: list[str] = field(default_factory=list)


@dataclass
class Repaired:
    """A repair that validated: the code, what changed, and the report of the repaired code."""

    code: str
    changes: list[str]
    report: ValidationReport


# -- the tree -------------------------------------------------------------------------------


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node under ``node`` (itself included), in source order.  One visitor pass: reading
    ``.children`` node by node is an order of magnitude slower in LibCST."""
    import libcst as cst

    found: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            found.append(n)
            return True

    node.visit(_All())
    return found


def _replace(tree: cst.Module, edits: dict[int, Callable[[Any], Any]]) -> cst.Module:
    """``tree`` with each node whose ``id`` is in ``edits`` replaced by ``edits[id](updated node)``."""
    import libcst as cst

    class _Edit(cst.CSTTransformer):
        def on_leave(self, original_node: Any, updated_node: Any) -> Any:
            edit = edits.get(id(original_node))
            return edit(updated_node) if edit else updated_node

    return tree.visit(_Edit())


def _func_name(call: cst.Call) -> str | None:
    import libcst as cst

    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _string(node: cst.BaseExpression | None) -> str | None:
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _with_string(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """The same literal (prefix, quotes) holding ``value`` (an identifier: nothing to escape)."""
    quote = node.quote
    prefix = node.prefix
    return node.with_changes(value=f"{prefix}{quote}{value}{quote}")


def _component_class(tree: cst.Module, class_name: str | None) -> cst.ClassDef:
    import libcst as cst

    classes = [s for s in tree.body if isinstance(s, cst.ClassDef)]
    for cls in classes:
        if class_name and cls.name.value == class_name:
            return cls
    for cls in classes:
        for base in cls.bases:
            name = base.value.value if isinstance(base.value, cst.Name) else None
            if name and name.endswith("Component"):
                return cls
    raise NoFix("no component class")


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    import libcst as cst

    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


@functools.lru_cache(maxsize=8)
def _calls(node: cst.CSTNode) -> tuple[cst.Call, ...]:
    """The calls under ``node``.  Cached: each fix asks for the class's calls, and a LibCST walk is
    slow (nodes hash by identity, and the cache keeps them alive, so an entry is never stale)."""
    import libcst as cst

    return tuple(n for n in _walk(node) if isinstance(n, cst.Call))


def _outputs(cls: cst.ClassDef) -> list[cst.Call]:
    return [c for c in _calls(cls) if _func_name(c) == "Output"]


def _returns(func: cst.FunctionDef) -> list[cst.Return]:
    """The function's own ``return`` statements (not those of nested functions, lambdas or classes)."""
    import libcst as cst

    found: list[cst.Return] = []

    class _Own(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, cst.Return):
                found.append(n)
            return not isinstance(n, cst.FunctionDef | cst.ClassDef | cst.Lambda)

    func.body.visit(_Own())
    return found


def _bound_names(tree: cst.Module) -> set[str]:
    """Names the module binds at its top level (imports, classes, functions, assignments)."""
    import libcst as cst

    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, cst.ClassDef | cst.FunctionDef):
            names.add(stmt.name.value)
            continue
        for node in _walk(stmt):
            if isinstance(node, cst.ImportAlias):
                alias = node.asname.name if node.asname else node.name
                if isinstance(alias, cst.Name):
                    names.add(alias.value)
                elif isinstance(alias, cst.Attribute):
                    names.add(_dotted(alias).split(".")[0])
            elif isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
                names.add(node.target.value)
            elif isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
                names.add("*")
    return names


def _dotted(node: cst.BaseExpression) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _add_import(tree: cst.Module, name: str, module: str) -> cst.Module:
    """``from module import name``: appended to an existing import of that module, else a new line
    after the last top-level import."""
    import libcst as cst

    for stmt in tree.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.ImportFrom)
                and small.module is not None
                and not small.relative
                and _dotted(small.module) == module
                and not isinstance(small.names, cst.ImportStar)
            ):
                names = [*small.names]
                last = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                added = cst.ImportAlias(name=cst.Name(name))
                return _replace(tree, {id(small): lambda n, a=[*names[:-1], last, added]: n.with_changes(names=a)})
    line = cst.parse_statement(f"from {module} import {name}\n")
    body = list(tree.body)
    at = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body
        ):
            at = i + 1
    return tree.with_changes(body=[*body[:at], line, *body[at:]])


def _ensure_imported(tree: cst.Module, name: str, reference: dict[str, Any]) -> tuple[cst.Module, list[str]]:
    bound = _bound_names(tree)
    if name in bound or "*" in bound:
        return tree, []
    module = (reference.get("imports") or {}).get(name)
    if not module:
        raise NoFix(f"lfx's reference does not say where {name} is imported from")
    return _add_import(tree, name, module), [f"imported `{name}` from `{module}`"]


# -- the fixes, one per kind of finding --------------------------------------------------------


def _fix_keywords(tree: cst.Module, cls: cst.ClassDef, reference: dict[str, Any]) -> tuple[cst.Module, list[str]]:
    """Unknown keywords on input classes ("Extra inputs are not permitted") renamed to lfx's."""
    import libcst as cst

    accepted = {i["name"]: set(i.get("fields") or []) for i in reference.get("inputs") or [] if i.get("fields")}
    edits: dict[int, Callable[[Any], Any]] = {}
    changes: list[str] = []
    needs_range_spec = False
    for call in _calls(cls):
        kind = _func_name(call)
        fields = accepted.get(kind or "")
        if not fields:
            continue
        unknown = [a for a in call.args if a.keyword is not None and a.keyword.value not in fields]
        if not unknown:
            continue
        label = f"{kind} `{_string(_kwarg(call, 'name').value) if _kwarg(call, 'name') else '?'}`"
        present = {a.keyword.value for a in call.args if a.keyword is not None}
        renames: dict[int, str] = {}
        bounds: dict[str, cst.Arg] = {}
        for arg in unknown:
            word = arg.keyword.value  # type: ignore[union-attr]
            target = KEYWORD_RENAMES.get(word)
            if target and target in fields and target not in present and target not in renames.values():
                renames[id(arg)] = target
            elif word in RANGE_KEYWORDS and "range_spec" in fields and "range_spec" not in present:
                if RANGE_KEYWORDS[word] in bounds:
                    raise NoFix(f"two bounds for {RANGE_KEYWORDS[word]}")
                bounds[RANGE_KEYWORDS[word]] = arg
            else:
                raise NoFix(f"{kind} has no keyword {word!r} and no certain replacement")
        if bounds and not ("min" in bounds and "max" in bounds):
            raise NoFix("a range with one bound: the other would be a guess")
        for arg in unknown:
            if id(arg) in renames:
                target = renames[id(arg)]
                edits[id(arg)] = lambda n, t=target: n.with_changes(keyword=cst.Name(t))
                changes.append(f"{label}: `{arg.keyword.value}=` renamed `{target}=`")  # type: ignore[union-attr]
        if bounds:
            needs_range_spec = True
            parts = [f"min={_code(bounds['min'].value)}", f"max={_code(bounds['max'].value)}"]
            if "step" in bounds:
                parts.append(f"step={_code(bounds['step'].value)}")
            elif kind == "IntInput":
                parts.append("step=1")
            if kind == "IntInput":
                parts.append('step_type="int"')
            spec = cst.parse_expression(f"RangeSpec({', '.join(parts)})")
            first = min(bounds.values(), key=lambda a: call.args.index(a))
            dropped = {id(a) for a in bounds.values() if a is not first}
            words = ", ".join(f"`{a.keyword.value}=`" for a in bounds.values())  # type: ignore[union-attr]

            edits[id(call)] = _range_rebuild(call, first, dropped, spec)
            changes.append(f"{label}: {words} became `range_spec=RangeSpec({', '.join(parts)})`")
    if not changes:
        raise NoFix("no unknown keyword on an input class")
    tree = _replace(tree, edits)
    if needs_range_spec:
        tree, more = _ensure_imported(tree, "RangeSpec", reference)
        changes += more
    return tree, changes


def _range_rebuild(call: cst.Call, first: cst.Arg, dropped: set[int], spec: Any) -> Callable[[Any], Any]:
    """The call with the first bound replaced by ``range_spec=...`` and the other bounds removed.

    Arguments are matched by position in the original call (the transformer rebuilt them)."""
    import libcst as cst

    index = {i: a for i, a in enumerate(call.args)}
    first_at = call.args.index(first)

    def rebuild(updated: cst.Call) -> cst.Call:
        args = []
        for i, arg in enumerate(updated.args):
            if id(index[i]) in dropped:
                continue
            if i == first_at:
                arg = arg.with_changes(keyword=cst.Name("range_spec"), value=spec)
            args.append(arg)
        if args and updated.args and args[-1] is not updated.args[-1]:
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        return updated.with_changes(args=args)

    return rebuild


def _equal() -> Any:
    import libcst as cst

    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _code(node: cst.CSTNode) -> str:
    import libcst as cst

    return cst.Module(body=[]).code_for_node(node)


def _fix_output_method(tree: cst.Module, cls: cst.ClassDef, missing: set[str]) -> tuple[cst.Module, list[str]]:
    """``Output(method="build_outputs")`` where only ``build_output`` is close: point it there."""
    methods = _methods(cls)
    used = {_string(_kwarg(o, "method").value) for o in _outputs(cls) if _kwarg(o, "method")}
    candidates = [m for m in methods if not m.startswith("__") and m not in used]
    edits: dict[int, Callable[[Any], Any]] = {}
    changes: list[str] = []
    for out in _outputs(cls):
        arg = _kwarg(out, "method")
        method = _string(arg.value) if arg else None
        if arg is None or method is None or method in methods or method not in missing:
            continue
        close = difflib.get_close_matches(method, candidates, n=2, cutoff=0.8)
        if len(close) != 1:
            raise NoFix(f"method {method!r}: {len(close)} near misses")
        edits[id(arg.value)] = lambda n, m=close[0]: _with_string(n, m)
        changes.append(f"Output `{_string(_kwarg(out, 'name').value) if _kwarg(out, 'name') else '?'}`: "
                       f"method `{method}` (not defined) → `{close[0]}`")  # fmt: skip
    if not changes:
        raise NoFix("no output names a near miss of a method")
    return _replace(tree, edits), changes


def _fix_annotation(tree: cst.Module, cls: cst.ClassDef, untyped: set[str]) -> tuple[cst.Module, list[str]]:
    """An output method with no return annotation, every return building one type: annotate it."""
    import libcst as cst

    methods = _methods(cls)
    edits: dict[int, Callable[[Any], Any]] = {}
    changes: list[str] = []
    for out in _outputs(cls):
        arg = _kwarg(out, "method")
        name = _string(arg.value) if arg else None
        func = methods.get(name or "")
        if func is None or name not in untyped or func.returns is not None:
            continue
        if _kwarg(out, "types") is not None or _kwarg(out, "type") is not None:
            continue
        built = set()
        for ret in _returns(func):
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
    return _replace(tree, edits), changes


_STR_METHODS = frozenset(
    {
        "upper", "lower", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase", "casefold", "replace",
        "join", "format", "center", "ljust", "rjust", "zfill", "removeprefix", "removesuffix", "expandtabs",
    }
)  # fmt: skip


def _assignments(func: cst.FunctionDef) -> dict[str, list[Any]]:
    """name -> the values the function assigns to it (plain ``name = value`` only)."""
    import libcst as cst

    found: dict[str, list[Any]] = {}
    for node in _walk(func.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(node.value)
        elif isinstance(node, cst.AugAssign | cst.AnnAssign) and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, []).append(getattr(node, "value", None))
    return found


def _is_text(value: Any, assigned: dict[str, list[Any]], depth: int = 0) -> bool:
    """Whether ``value`` is certainly a ``str``: a literal, an f-string, ``str(...)``, a str method's
    result, text joined with ``+``, or a local name only ever assigned such values."""
    import libcst as cst

    if depth > 8:
        return False
    if isinstance(value, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString):
        return True
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Name):
            return value.func.value == "str"
        return isinstance(value.func, cst.Attribute) and value.func.attr.value in _STR_METHODS
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _is_text(value.left, assigned, depth + 1) or _is_text(value.right, assigned, depth + 1)
    if isinstance(value, cst.IfExp):
        return _is_text(value.body, assigned, depth + 1) and _is_text(value.orelse, assigned, depth + 1)
    if isinstance(value, cst.Name) and assigned.get(value.value):
        return all(v is not None and _is_text(v, assigned, depth + 1) for v in assigned[value.value])
    return False


def _fix_str_returns(
    tree: cst.Module, cls: cst.ClassDef, method: str, reference: dict[str, Any]
) -> tuple[cst.Module, list[str]]:
    """A method declared ``-> Message`` that returns plain text: wrap each such return."""
    import libcst as cst

    func = _methods(cls).get(method)
    if func is None:
        raise NoFix(f"method {method!r} not found")
    edits: dict[int, Callable[[Any], Any]] = {}
    for ret in _returns(func):
        value = ret.value
        if value is None or (isinstance(value, cst.Name) and value.value == "None"):
            continue
        if isinstance(value, cst.Call) and _func_name(value) == "Message":
            continue
        if not _is_text(value, _assignments(func)):
            raise NoFix(f"{method} returns {_code(value)!r}, which may not be text")
        edits[id(ret)] = lambda n: n.with_changes(
            value=cst.Call(
                func=cst.Name("Message"), args=[cst.Arg(keyword=cst.Name("text"), value=n.value, equal=_equal())]
            )
        )
    if not edits:
        raise NoFix(f"{method} has no plain return to wrap")
    plural = "s" * (len(edits) > 1)
    tree = _replace(tree, edits)
    tree, more = _ensure_imported(tree, "Message", reference)
    return tree, [f"`{method}` wraps its plain text in `Message(text=...)` ({len(edits)} return{plural})", *more]


def _fix_input_name(
    tree: cst.Module, cls: cst.ClassDef, name: str, reference: dict[str, Any]
) -> tuple[cst.Module, list[str]]:
    """An input named like a ``Component`` attribute: rename it ``<name>_value``, and its ``self.<name>`` reads."""
    import libcst as cst

    new = f"{name}_value"
    if new in set(reference.get("component_attrs") or []):
        raise NoFix(f"{new} is a Component attribute too")
    literals = [n for n in _walk(cls) if isinstance(n, cst.SimpleString) and _string(n) == name]
    declared = [
        c
        for c in _calls(cls)
        if (arg := _kwarg(c, "name")) is not None and _string(arg.value) == name and _func_name(c) != "Output"
    ]
    if len(declared) != 1 or len(literals) != 1:
        raise NoFix(f"{name!r} is used as a string elsewhere (a build_config key?): renaming would be a guess")
    for node in _walk(tree):
        taken = isinstance(node, cst.Name) and node.value == new
        if taken or (isinstance(node, cst.SimpleString) and _string(node) == new):
            raise NoFix(f"{new} is already used")
    targets: set[int] = set()
    for node in _walk(cls):
        if isinstance(node, cst.AssignTarget | cst.AnnAssign | cst.AugAssign | cst.Del | cst.For | cst.AsName):
            holder = node.name if isinstance(node, cst.AsName) else node.target
            if holder is not None:
                targets.update(id(n) for n in _walk(holder))
    reads = [
        n
        for n in _walk(cls)
        if isinstance(n, cst.Attribute)
        and isinstance(n.value, cst.Name)
        and n.value.value == "self"
        and n.attr.value == name
    ]
    if any(id(n) in targets for n in reads):
        raise NoFix(f"the code assigns self.{name}: it means the component's own attribute too")
    edits: dict[int, Callable[[Any], Any]] = {id(literals[0]): lambda n: _with_string(n, new)}
    for node in reads:
        edits[id(node)] = lambda n: n.with_changes(attr=cst.Name(new))
    uses = f", and its {len(reads)} `self.{name}` read{'s' * (len(reads) != 1)}" if reads else ""
    return _replace(tree, edits), [f"input `{name}` renamed `{new}` (`{name}` is the component's own attribute){uses}"]


def _fix_module(tree: cst.Module, missing: str, reference: dict[str, Any]) -> tuple[cst.Module, list[str]]:
    """``from lfx.schema.messages import Message``: lfx has no such module, but has Message elsewhere."""
    import libcst as cst

    if not missing.startswith(("lfx.", "langflow.")):
        raise NoFix(f"{missing} is not an lfx module")
    homes = reference.get("imports") or {}
    edits: dict[int, Callable[[Any], Any]] = {}
    changes: list[str] = []
    for stmt in tree.body:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if not isinstance(small, cst.ImportFrom) or small.module is None or small.relative:
            continue
        module = _dotted(small.module)
        if module != missing and not module.startswith(missing + "."):
            continue
        if isinstance(small.names, cst.ImportStar):
            raise NoFix("a star import")
        grouped: dict[str, list[str]] = {}
        for alias in small.names:
            symbol = _dotted(alias.name)
            home = homes.get(symbol)
            if not home:
                raise NoFix(f"lfx's reference does not know {symbol}")
            asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
            grouped.setdefault(home, []).append(f"{symbol} as {asname}" if asname else symbol)
        lines = [f"from {home} import {', '.join(names)}" for home, names in grouped.items()]
        replacement = cst.parse_module("\n".join(lines) + "\n").body
        edits[id(stmt)] = lambda n, r=replacement: cst.FlattenSentinel(
            [r[0].with_changes(leading_lines=n.leading_lines), *r[1:]]
        )
        changes.append(f"`from {module} import ...` → `{'`; `'.join(lines)}` (lfx has no module `{missing}`)")
    if not changes:
        raise NoFix(f"no `from {missing} import` line")
    return _replace(tree, edits), changes


# -- the pass -------------------------------------------------------------------------------


Fix = Callable[[Any, Any], tuple[Any, list[str]]]
"""A fix: (tree, component class) -> (new tree, change lines); raises ``NoFix``."""


def _plan(errors: list[Any], reference: dict[str, Any]) -> dict[str, Fix] | None:
    """One fix per distinct error (by key), or None when an error has no rule: decided on the
    messages alone, so a failure no rule covers costs no parse."""
    missing = {m for f in errors if f.rule == "missing-method" for m in _METHOD.findall(f.message)}
    untyped = {m for f in errors if f.rule == "output-untyped" for m in _METHOD.findall(f.message)}
    plan: dict[str, Fix] = {}
    for finding in errors:
        message, rule = finding.message, finding.rule or ""
        if _EXTRA_KEYWORD in message and rule == "build":
            plan["keywords"] = lambda t, c: _fix_keywords(t, c, reference)
        elif (found := _NO_MODULE.search(message)) and rule == "build":
            plan["module:" + found[1]] = lambda t, c, m=found[1]: _fix_module(t, m, reference)
        elif found := _UNDEFINED.search(message):
            plan["name:" + found[1]] = lambda t, c, n=found[1]: _ensure_imported(t, n, reference)
        elif rule == "missing-method":
            plan["method"] = lambda t, c: _fix_output_method(t, c, missing)
        elif rule == "output-untyped":
            plan["untyped"] = lambda t, c: _fix_annotation(t, c, untyped)
        elif rule == "wrong-type" and (found := _STR_FOR_MESSAGE.search(message)):
            plan["str:" + found[1]] = lambda t, c, m=found[1]: _fix_str_returns(t, c, m, reference)
        elif rule in ("input-reserved", "input-ignored") and (found := _INPUT.search(message)):
            plan["input:" + found[1]] = lambda t, c, n=found[1]: _fix_input_name(t, c, n, reference)
        else:
            return None  # an error no rule covers: the repaired code could not validate
    return plan


def repair_component(code: str, report: ValidationReport, reference: dict[str, Any] | None) -> Repair | None:
    """One repair round for ``report``'s errors, or None when any of them has no certain fix.

    Pure: nothing is executed, the code is only parsed (LibCST) and rewritten."""
    errors = [f for f in report.findings if f.severity == "error"]
    if not errors or not reference or not isinstance(code, str):
        return None
    plan = _plan(errors, reference)
    if not plan:
        return None
    try:
        import libcst as cst

        tree = cst.parse_module(code)
        changes: list[str] = []
        for fix in plan.values():
            tree, more = fix(tree, _component_class(tree, report.class_name))
            if not more:
                return None  # e.g. "not defined" for a name that is imported: not ours to fix
            changes += more
        repaired = tree.code
    except NoFix:
        return None
    except Exception:  # a parser or tree error: never worse than no repair
        return None
    if repaired == code or not changes:
        return None
    return Repair(code=repaired, changes=changes)


def unprompted_changes(code: str, reference: dict[str, Any]) -> list[str]:
    """What the code-driven fixes (keywords, output methods, return annotations) would change if
    their finding were claimed for every output, each on its own.  On code that validates this
    must be empty: the check that the pass never touches a working component (tests, benchmark)."""
    import libcst as cst

    try:
        tree = cst.parse_module(code)
        cls = _component_class(tree, None)
    except (NoFix, cst.ParserSyntaxError):
        return []
    methods = {_string(arg.value) for out in _outputs(cls) if (arg := _kwarg(out, "method"))} - {None}
    changes: list[str] = []
    fixes = (
        lambda: _fix_keywords(tree, cls, reference),
        lambda: _fix_output_method(tree, cls, methods),  # type: ignore[arg-type]
        lambda: _fix_annotation(tree, cls, methods),  # type: ignore[arg-type]
    )
    for fix in fixes:
        with contextlib.suppress(NoFix):
            changes += fix()[1]
    return changes


async def arepair_until_valid(
    code: str,
    report: ValidationReport,
    reference: dict[str, Any] | None,
    validate: Callable[[str], Awaitable[ValidationReport]],
    on_repair: Callable[[list[str]], None] | None = None,
    repair: Callable[[str, ValidationReport, dict[str, Any] | None], Awaitable[Repair | None]] | None = None,
) -> Repaired | None:
    """Repair, validate, and repeat while each round fixes what the last validation found.

    Returns the repaired code only when it validates; None sends the original code and error
    to the model.  ``on_repair`` hears each round's changes (the pipeline's progress event).
    ``repair`` runs one round (``repair_component``'s arguments) where the caller wants it: the
    pipeline runs it in a worker process with a deadline (``repair_process.py``), so hostile
    code never blocks the event loop; without it the round runs here."""
    changes: list[str] = []
    current = code
    for _ in range(MAX_ROUNDS):
        fix = await repair(current, report, reference) if repair else repair_component(current, report, reference)
        if fix is None:
            return None
        if on_repair is not None:
            on_repair(fix.changes)
        current, changes = fix.code, [*changes, *fix.changes]
        report = await validate(current)
        if report.is_valid:
            return Repaired(code=current, changes=changes, report=report)
    return None


def repair_until_valid(
    code: str,
    report: ValidationReport,
    reference: dict[str, Any] | None,
    validate: Callable[[str], ValidationReport],
) -> Repaired | None:
    """``arepair_until_valid`` for a blocking caller (``%%assist_validate --fix``)."""
    changes: list[str] = []
    current = code
    for _ in range(MAX_ROUNDS):
        fix = repair_component(current, report, reference)
        if fix is None:
            return None
        current, changes = fix.code, [*changes, *fix.changes]
        report = validate(current)
        if report.is_valid:
            return Repaired(code=current, changes=changes, report=report)
    return None


@dataclass
class FixResult:
    """What ``%%assist_validate --fix`` shows: the repaired code and its changes, or why there are none."""

    code: str
    """The repaired code, or the cell's own when nothing was repaired."""
    changes: list[str]
    report: ValidationReport
    """The report of ``code``."""
    repaired: bool = False

    @property
    def headline(self) -> str:
        if self.repaired:
            plural = "s" * (len(self.changes) != 1)
            return f"Repaired without a model call ({len(self.changes)} change{plural}); the repaired code validates."
        if self.report.is_valid:
            return "Nothing to repair: the component validates."
        return "No certain repair: these errors need a person (or %%assist) to fix them."

    def __repr__(self) -> str:
        """What changed and the repaired code, then the report's one-line summary (IPython draws
        the whole report card through the views' formatters, ``ui/formats.py``)."""
        lines = [self.headline, *(f"  - {c}" for c in self.changes)]
        if self.repaired:
            lines += ["", self.code.rstrip()]
        return "\n".join([*lines, "", self.report.summary])


def fix_component(
    code: str,
    report: ValidationReport,
    validate: Callable[[str], ValidationReport],
    reference: dict[str, Any] | None,
) -> FixResult:
    """The repair pass for a user's own component (``%%assist_validate --fix``); ``report`` is
    the cell's validation, ``validate`` checks the repaired code the same way."""
    if report.is_valid:
        return FixResult(code=code, changes=[], report=report)
    repaired = repair_until_valid(code, report, reference, validate)
    if repaired is None:
        return FixResult(code=code, changes=[], report=report)
    return FixResult(code=repaired.code, changes=repaired.changes, report=repaired.report, repaired=True)
