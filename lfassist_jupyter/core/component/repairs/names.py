"""Names: an import that is missing or points to the wrong module, an attribute one edit off.

Each rule asks lfx's facts (the zygote's reference), never a list of cases:

- a name lfx reports undefined gets its import when it is a standard-library module (the
  sandbox interpreter's ``sys.stdlib_module_names``) or a public lfx name (lfx defines it in
  exactly one module), and not both;
- a name imported from an lfx module that lacks it (or from a module lfx does not have) is
  imported from where lfx defines it;
- ``self.<x>``, which lfx reports missing, becomes the declared input or output one edit away
  from it, when exactly one is;
- an ``Output(method=...)`` one letter off a method becomes that method, when exactly one is close.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.core.component.repairs.tree import (
    Edits,
    NoFix,
    add_import,
    add_module_import,
    assigned_targets,
    bound_names,
    declared,
    dotted,
    kwarg,
    methods,
    one_edit,
    outputs,
    replace,
    self_attributes,
    string,
    with_string,
)

if TYPE_CHECKING:
    import libcst as cst

Facts = dict[str, Any]


def lfx_module(module: str) -> str:
    """lfx's name for a module (lfx maps ``langflow.*`` imports to ``lfx.*`` when it builds)."""
    return "lfx" + module[len("langflow") :] if module.split(".")[0] == "langflow" else module


def ensure_imported(tree: cst.Module, name: str, facts: Facts) -> tuple[cst.Module, list[str]]:
    """``name`` imported from where lfx keeps it (a name the module already binds: nothing to do)."""
    bound = bound_names(tree)
    if name in bound or "*" in bound:
        return tree, []
    module = (facts.get("imports") or {}).get(name)
    if not module:
        raise NoFix(f"lfx's reference does not say where {name} is imported from")
    return add_import(tree, name, module), [f"imported `{name}` from `{module}`"]


def fix_undefined(tree: cst.Module, name: str, facts: Facts) -> tuple[cst.Module, list[str]]:
    """A name used but never bound: a stdlib module gets ``import name``, an lfx public name its
    ``from <home> import name``; a name that could be either is left to the model."""
    bound = bound_names(tree)
    if name in bound or "*" in bound:
        return tree, []  # bound, yet undefined where it is used: not an import to add
    stdlib = name in set(facts.get("stdlib_modules") or [])
    home = (facts.get("imports") or {}).get(name)
    if stdlib and home:
        raise NoFix(f"{name} is a stdlib module and an lfx name: two imports could be meant")
    if stdlib:
        return add_module_import(tree, name), [f"imported `{name}` (a standard-library module)"]
    if home:
        return add_import(tree, name, home), [f"imported `{name}` from `{home}` (where lfx defines it)"]
    raise NoFix(f"{name} is neither a stdlib module nor a name lfx defines in one place")


def fix_import_home(tree: cst.Module, module: str, name: str | None, facts: Facts) -> tuple[cst.Module, list[str]]:
    """``from <module> import ...`` where lfx has no such module (``name`` None) or the module
    lacks ``name``: each imported name lfx keeps elsewhere is imported from there.

    A name lfx's reference places is one object wherever lfx exposes it (one module defines it),
    so moving a name the module did hold changes nothing; a name it cannot place stays, unless
    the module does not exist (then nothing is certain)."""
    import libcst as cst

    module = lfx_module(module)
    if module.split(".")[0] != "lfx":
        raise NoFix(f"{module} is not an lfx module")
    homes = facts.get("imports") or {}
    if name is not None and homes.get(name) in (None, module):
        raise NoFix(f"lfx's reference does not place {name} elsewhere")
    edits: Edits = {}
    changes: list[str] = []
    for stmt in tree.body:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if not isinstance(small, cst.ImportFrom) or small.module is None or small.relative:
            continue
        written = dotted(small.module)
        here = lfx_module(written)
        if here != module and not (name is None and here.startswith(module + ".")):
            continue
        if isinstance(small.names, cst.ImportStar):
            raise NoFix("a star import")
        if name is not None and name not in {dotted(a.name) for a in small.names}:
            continue
        lines, moved = _regroup(small, written, homes, keep_unknown=name is not None)
        replacement = cst.parse_module("\n".join(lines) + "\n").body
        edits[id(stmt)] = lambda n, r=replacement: cst.FlattenSentinel(
            [r[0].with_changes(leading_lines=n.leading_lines), *r[1:]]
        )
        why = f"lfx has no module `{module}`" if name is None else f"`{module}` has no `{name}`"
        changes.append(f"`from {written} import {', '.join(moved)}` → `{'`; `'.join(lines)}` ({why})")
    if not changes:
        raise NoFix(f"no `from {module} import` line to point elsewhere")
    return replace(tree, edits), changes


def _regroup(small: Any, written: str, homes: dict[str, str], *, keep_unknown: bool) -> tuple[list[str], list[str]]:
    """The import lines the statement becomes: each name under its home (names with no home
    stay, when allowed), in the order the statement had them."""
    import libcst as cst

    grouped: dict[str, list[str]] = {}
    moved: list[str] = []
    for alias in small.names:
        symbol = dotted(alias.name)
        home = homes.get(symbol)
        if not home and not keep_unknown:
            raise NoFix(f"lfx's reference does not know {symbol}")
        asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
        grouped.setdefault(home or written, []).append(f"{symbol} as {asname}" if asname else symbol)
        if home and home != written:
            moved.append(symbol)
    if not moved:
        raise NoFix("every name is already imported from its home")
    return [f"from {home} import {', '.join(names)}" for home, names in grouped.items()], moved


def fix_self_typo(tree: cst.Module, cls: cst.ClassDef, attr: str) -> tuple[cst.Module, list[str]]:
    """``self.<attr>``, which lfx says the component has not, is one edit from exactly one
    declared input or output: every ``self.<attr>`` becomes ``self.<that name>``."""
    import libcst as cst

    names = set(declared(cls, "inputs")) | set(declared(cls, "outputs"))
    near = sorted(n for n in names if one_edit(attr, n))
    if len(near) != 1:
        raise NoFix(f"self.{attr}: {len(near)} declared names one edit away")
    reads = self_attributes(cls, attr)
    written = assigned_targets(cls)
    if not reads or any(id(n) in written for n in reads) or attr in methods(cls):
        raise NoFix(f"self.{attr} is also assigned or defined: the code means an attribute of its own")
    edits: Edits = {id(n): lambda n, v=near[0]: n.with_changes(attr=cst.Name(v)) for n in reads}
    plural = "s" * (len(reads) > 1)
    return replace(tree, edits), [
        f"`self.{attr}` (no such attribute) → `self.{near[0]}`, the declared name one edit away "
        f"({len(reads)} use{plural})"
    ]


def fix_output_method(tree: cst.Module, cls: cst.ClassDef, missing: set[str]) -> tuple[cst.Module, list[str]]:
    """``Output(method="build_outputs")`` where only ``build_output`` is close: point it there."""
    defined = methods(cls)
    used = {string(arg.value) for o in outputs(cls) if (arg := kwarg(o, "method"))}
    candidates = [m for m in defined if not m.startswith("__") and m not in used]
    edits: Edits = {}
    changes: list[str] = []
    for out in outputs(cls):
        arg = kwarg(out, "method")
        method = string(arg.value) if arg else None
        if arg is None or method is None or method in defined or method not in missing:
            continue
        close = difflib.get_close_matches(method, candidates, n=2, cutoff=0.8)
        if len(close) != 1:
            raise NoFix(f"method {method!r}: {len(close)} near misses")
        edits[id(arg.value)] = lambda n, m=close[0]: with_string(n, m)
        name = kwarg(out, "name")
        changes.append(f"Output `{string(name.value) if name else '?'}`: "
                       f"method `{method}` (not defined) → `{close[0]}`")  # fmt: skip
    if not changes:
        raise NoFix("no output names a near miss of a method")
    return replace(tree, edits), changes
