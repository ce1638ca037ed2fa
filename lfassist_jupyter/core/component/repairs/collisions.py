"""Names that collide: an input named like an attribute of lfx's ``Component``, an output named
like an input.  Each is renamed with every use, to a name nothing else in the code takes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lfassist_jupyter.core.component.repairs.tree import (
    Edits,
    NoFix,
    assigned_targets,
    calls,
    declared,
    func_name,
    kwarg,
    replace,
    self_attributes,
    string,
    walk,
    with_string,
)

if TYPE_CHECKING:
    import libcst as cst


def _taken(tree: cst.Module, name: str) -> bool:
    """Whether ``name`` is already used in the code, as an identifier or a string."""
    import libcst as cst

    return any(
        (isinstance(node, cst.Name) and node.value == name)
        or (isinstance(node, cst.SimpleString) and string(node) == name)
        for node in walk(tree)
    )


def fix_input_name(tree: cst.Module, cls: cst.ClassDef, name: str, facts: dict[str, Any]) -> tuple[Any, list[str]]:
    """An input named like a ``Component`` attribute: rename it ``<name>_value``, and its ``self.<name>`` reads."""
    import libcst as cst

    new = f"{name}_value"
    if new in set(facts.get("component_attrs") or []):
        raise NoFix(f"{new} is a Component attribute too")
    literals = [n for n in walk(cls) if isinstance(n, cst.SimpleString) and string(n) == name]
    written = [
        c
        for c in calls(cls)
        if (arg := kwarg(c, "name")) is not None and string(arg.value) == name and func_name(c) != "Output"
    ]
    if len(written) != 1 or len(literals) != 1:
        raise NoFix(f"{name!r} is used as a string elsewhere (a build_config key?): renaming would be a guess")
    if _taken(tree, new):
        raise NoFix(f"{new} is already used")
    reads = self_attributes(cls, name)
    assigned = assigned_targets(cls)
    if any(id(n) in assigned for n in reads):
        raise NoFix(f"the code assigns self.{name}: it means the component's own attribute too")
    edits: Edits = {id(literals[0]): lambda n: with_string(n, new)}
    for node in reads:
        edits[id(node)] = lambda n: n.with_changes(attr=cst.Name(new))
    uses = f", and its {len(reads)} `self.{name}` read{'s' * (len(reads) != 1)}" if reads else ""
    return replace(tree, edits), [f"input `{name}` renamed `{new}` (`{name}` is the component's own attribute){uses}"]


def fix_overlap(tree: cst.Module, cls: cst.ClassDef, names: list[str]) -> tuple[Any, list[str]]:
    """Outputs named like inputs (lfx refuses the class): each output renamed ``<name>_output``.

    The output, not the input: the code reads an input as ``self.<name>`` and in its build
    config, while an output's name is only its label in the flow."""
    inputs, outs = declared(cls, "inputs"), declared(cls, "outputs")
    edits: Edits = {}
    changes: list[str] = []
    for name in names:
        if name not in inputs or name not in outs:
            raise NoFix(f"{name!r} is not written as an input and an output")
        new = f"{name}_output"
        if _taken(tree, new):
            raise NoFix(f"{new} is already used")
        literal = next(a.value for a in outs[name].args if a.keyword is not None and a.keyword.value == "name")
        edits[id(literal)] = lambda n, v=new: with_string(n, v)
        changes.append(f"output `{name}` renamed `{new}` (an input has the name `{name}`)")
    if not changes:
        raise NoFix("no overlapping names")
    return replace(tree, edits), changes
