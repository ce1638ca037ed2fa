"""What counts as a Langflow component class, decided the same way on a parsed tree and on raw text.

Two readers need this fact: the engine, which pulls code out of a model reply that may not
even parse, and the static validation phase, which has an AST.  Both must name the *same*
class, and the one lfx builds: ``lfx.custom.validate.extract_class_name`` takes the **first**
top-level class whose base looks like a component (it never sees nested classes), so we do too.

The text scanner must stay linear on hostile input (a 300 KB reply, 100,000 blank lines,
1 MB of junk): a regex that lets ``\\s*`` cross newlines under ``re.M`` retries from every
line and goes quadratic, and it holds the GIL, so the stop button cannot interrupt it.
Here every repetition is bounded to one line (``[ \\t]``) or to a fixed span, so the cost
is O(size) with a small constant.
"""

from __future__ import annotations

import ast
import re

# Component code is a few KB; a reply or a cell of a megabyte is not a component, and
# parsing it would only cost time (and, for pathological shapes, memory).
MAX_CODE_CHARS = 1_000_000

# A base whose last dotted name *ends* with "Component": Component, CustomComponent,
# lfx.custom.Component, LCModelComponent, Base[T] style subscripts -- but not ComponentFactory.
COMPONENT_BASE = re.compile(r"(?:^|\.)\w*Component$")

# The head of one top-level class statement.  Its base list is then read with ``str.find``
# over a bounded span: a regex ``[^)]*`` would rescan the rest of the text from every
# "class X(" line (quadratic on "class A(\n" * 100_000).
_CLASS_HEAD = re.compile(r"^class[ \t]+(\w+)[ \t]*([(:])", re.M)
_MAX_BASES = 400
_SUBSCRIPT = re.compile(r"\[[^\]]{0,200}\]")


def is_component_base(name: str) -> bool:
    """Whether a base written as ``name`` (``lfx.custom.Component``, ``Base[T]``) looks like a component."""
    name = _SUBSCRIPT.sub("", name).strip()
    return bool(name) and COMPONENT_BASE.search(name) is not None


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name (a base class, a called function), else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _base_name(base: ast.expr) -> str | None:
    if isinstance(base, ast.Subscript):
        base = base.value
    return dotted_name(base)


def find_component_class(tree: ast.Module) -> ast.ClassDef | None:
    """The component class of a parsed module: the first top-level class with a ``...Component``
    base -- the one lfx builds when it is given this code."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(is_component_base(_base_name(b) or "") for b in node.bases):
            return node
    return None


def _scan(code: str) -> tuple[str | None, str | None]:
    """(first component class, first class at all), from the text alone (syntax errors tolerated)."""
    first_any = None
    code = code[:MAX_CODE_CHARS]
    for match in _CLASS_HEAD.finditer(code):
        name = match.group(1)
        first_any = first_any or name
        if match.group(2) != "(":
            continue
        end = code.find(")", match.end(), match.end() + _MAX_BASES)
        if end < 0:
            continue
        bases = code[match.end() : end]
        # Split on top-level commas only; keyword arguments (metaclass=...) are not bases.
        for base in _SUBSCRIPT.sub("", bases).split(","):
            base = base.strip()
            if base and "=" not in base and is_component_base(base):
                return name, first_any
    return None, first_any


def defines_component(code: str) -> bool:
    """Whether ``code`` declares a top-level class with a ``...Component`` base (linear time)."""
    return isinstance(code, str) and _scan(code)[0] is not None


def guess_class_name(code: str) -> str | None:
    """The component class's name in ``code`` -- the class ``find_component_class`` would pick
    when the code parses -- else the first top-level class, else ``None``."""
    if not isinstance(code, str):
        return None
    component, first = _scan(code)
    return component or first


def lfx_component_class(tree: ast.Module) -> ast.ClassDef | None:
    """The class lfx itself picks (``lfx.custom.validate.extract_class_name``, lfx 1.13): the first
    top-level class with a base written as a plain name that contains "Component" or "LC".

    It differs from ``find_component_class`` at the edges -- lfx cannot see
    ``class A(lfx.custom.Component)`` and does see ``class A(ComponentWithCache)`` -- and the
    static phase uses it to say "Langflow will not find your class" only when that is true.
    """
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = [b.id for b in node.bases if isinstance(b, ast.Name)]
            if any(p in n for n in names for p in ("Component", "LC")):
                return node
    return None
