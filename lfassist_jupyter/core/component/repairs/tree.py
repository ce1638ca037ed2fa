"""The concrete syntax tree the repairs edit (LibCST: comments and layout are kept), and the
few questions every repair asks of it: the component class, its inputs and outputs, a method's
own returns, the names the module binds, an import added where a person would add it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import libcst as cst


class NoFix(Exception):
    """This mistake has no certain fix here: the model gets the original error."""


Edits = dict[int, Callable[..., Any]]
"""Node ``id`` -> what the node becomes (given its updated self): one ``replace`` pass applies them."""


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
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


def replace(tree: cst.Module, edits: Edits) -> cst.Module:
    """``tree`` with each node whose ``id`` is in ``edits`` replaced by ``edits[id](updated node)``."""
    import libcst as cst

    class _Edit(cst.CSTTransformer):
        def on_leave(self, original_node: Any, updated_node: Any) -> Any:
            edit = edits.get(id(original_node))
            return edit(updated_node) if edit else updated_node

    return tree.visit(_Edit())


def func_name(call: cst.Call) -> str | None:
    import libcst as cst

    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def string(node: cst.BaseExpression | None) -> str | None:
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def with_string(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """The same literal (prefix, quotes) holding ``value`` (an identifier: nothing to escape)."""
    quote = node.quote
    prefix = node.prefix
    return node.with_changes(value=f"{prefix}{quote}{value}{quote}")


def component_class(tree: cst.Module, class_name: str | None) -> cst.ClassDef:
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
    declaring = [cls for cls in classes if declared(cls, "inputs") or declared(cls, "outputs")]
    if len(declaring) == 1:  # a base lfx names otherwise (LCEmbeddingsModel...): the class with the fields
        return declaring[0]
    raise NoFix("no component class")


def methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    import libcst as cst

    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


@functools.lru_cache(maxsize=8)
def calls(node: cst.CSTNode) -> tuple[cst.Call, ...]:
    """The calls under ``node``.  Cached: each fix asks for the class's calls, and a LibCST walk is
    slow (nodes hash by identity, and the cache keeps them alive, so an entry is never stale)."""
    import libcst as cst

    return tuple(n for n in walk(node) if isinstance(n, cst.Call))


def outputs(cls: cst.ClassDef) -> list[cst.Call]:
    return [c for c in calls(cls) if func_name(c) == "Output"]


def returns(func: cst.FunctionDef) -> list[cst.Return]:
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


def bound_names(tree: cst.Module) -> set[str]:
    """Names the module binds at its top level (imports, classes, functions, assignments)."""
    import libcst as cst

    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, cst.ClassDef | cst.FunctionDef):
            names.add(stmt.name.value)
            continue
        for node in walk(stmt):
            if isinstance(node, cst.ImportAlias):
                alias = node.asname.name if node.asname else node.name
                if isinstance(alias, cst.Name):
                    names.add(alias.value)
                elif isinstance(alias, cst.Attribute):
                    names.add(dotted(alias).split(".")[0])
            elif isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
                names.add(node.target.value)
            elif isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
                names.add("*")
    return names


def dotted(node: cst.BaseExpression) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def add_import(tree: cst.Module, name: str, module: str) -> cst.Module:
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
                and dotted(small.module) == module
                and not isinstance(small.names, cst.ImportStar)
            ):
                names = [*small.names]
                last = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                added = cst.ImportAlias(name=cst.Name(name))
                return replace(tree, {id(small): lambda n, a=[*names[:-1], last, added]: n.with_changes(names=a)})
    line = cst.parse_statement(f"from {module} import {name}\n")
    body = list(tree.body)
    at = _after_imports(body)
    return tree.with_changes(body=[*body[:at], line, *body[at:]])


def add_module_import(tree: cst.Module, module: str) -> cst.Module:
    """``import module`` on a new line after the last top-level import."""
    import libcst as cst

    line = cst.parse_statement(f"import {module}\n")
    body = list(tree.body)
    return tree.with_changes(body=[*body[: _after_imports(body)], line, *body[_after_imports(body) :]])


def _after_imports(body: list[Any]) -> int:
    import libcst as cst

    at = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body
        ):
            at = i + 1
    return at


def equal() -> Any:
    """``=`` with no spaces, as keyword arguments are written."""
    import libcst as cst

    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def code_of(node: cst.CSTNode) -> str:
    import libcst as cst

    return cst.Module(body=[]).code_for_node(node)


def declared(cls: cst.ClassDef, attr: str) -> dict[str, cst.Call]:
    """The class's ``inputs`` or ``outputs`` list as written: name -> its call (literal names only)."""
    import libcst as cst

    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.Assign)
                and any(isinstance(t.target, cst.Name) and t.target.value == attr for t in small.targets)
                and isinstance(small.value, cst.List)
            ):
                found = {}
                for element in small.value.elements:
                    call = element.value
                    if isinstance(call, cst.Call) and (arg := kwarg(call, "name")) and (name := string(arg.value)):
                        found[name] = call
                return found
    return {}


def self_attributes(node: cst.CSTNode, name: str | None = None) -> list[cst.Attribute]:
    """Every ``self.<attr>`` under ``node`` (only ``self.<name>`` when a name is given)."""
    import libcst as cst

    return [
        n
        for n in walk(node)
        if isinstance(n, cst.Attribute)
        and isinstance(n.value, cst.Name)
        and n.value.value == "self"
        and (name is None or n.attr.value == name)
    ]


def assigned_targets(node: cst.CSTNode) -> set[int]:
    """The ids of every node written to under ``node``: what an assignment, ``del``, ``for`` or
    ``as`` binds (the elements of a tuple target too), not what is read inside a target
    (``rows[self.key] = ...`` writes ``rows[...]``, and reads ``self.key``)."""
    import libcst as cst

    targets: set[int] = set()

    def bind(target: Any) -> None:
        if isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                bind(element.value)
        elif isinstance(target, cst.StarredElement):
            bind(target.value)
        elif target is not None:
            targets.add(id(target))

    for n in walk(node):
        if isinstance(n, cst.AssignTarget | cst.AnnAssign | cst.AugAssign | cst.For):
            bind(n.target)
        elif isinstance(n, cst.AsName):
            bind(n.name)
        elif isinstance(n, cst.Del):
            bind(n.target)
    return targets


def one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one edit apart: a letter added, dropped or changed, or two
    neighbours swapped (optimal string alignment distance 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]
