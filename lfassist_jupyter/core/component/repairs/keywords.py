"""Keywords an input class does not accept ("Extra inputs are not permitted").

lfx names neither the keyword nor the class, so every input call is checked against the
keywords its class accepts (the zygote's reference: each class's pydantic fields and aliases).
Each unknown keyword has candidate fixes, and is fixed only when it has exactly one:

- lfx's own spelling of a word other libraries use (``choices`` -> ``options``,
  ``default`` -> ``value``, ``help`` -> ``info``...), when the class accepts it;
- the accepted keyword one edit away (``display_nam`` -> ``display_name``);
- bounds written as keywords (``min_value=``/``max_value=``...) -> ``range_spec=RangeSpec(...)``;
- the sibling class that accepts every keyword of the call: the classes of lfx holding the same
  kind of value (``MessageTextInput(multiline=True)`` -> ``MultilineInput``; a
  ``StrInput(options=...)`` could be a Dropdown or a Multiselect: two candidates, the model's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lfassist_jupyter.core.component.repairs.names import ensure_imported
from lfassist_jupyter.core.component.repairs.tree import (
    Edits,
    NoFix,
    calls,
    code_of,
    func_name,
    kwarg,
    one_edit,
    replace,
    string,
)

if TYPE_CHECKING:
    import libcst as cst

# Keywords models borrow from other libraries (gradio, streamlit, click, argparse), and lfx's
# name for the same thing.  A rename applies only when the class accepts the target and the
# call does not already set it.
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


def fix_keywords(tree: cst.Module, cls: cst.ClassDef, facts: dict[str, Any]) -> tuple[cst.Module, list[str]]:
    """Every input call with a keyword its class does not accept, fixed when each such keyword
    has one certain fix; else ``NoFix`` (the model)."""
    classes = {i["name"]: i for i in facts.get("inputs") or [] if i.get("fields")}
    edits: Edits = {}
    changes: list[str] = []
    imports: list[str] = []
    for call in calls(cls):
        kind = func_name(call) or ""
        if kind not in classes:
            continue
        fields = set(classes[kind]["fields"])
        unknown = [a for a in call.args if a.keyword is not None and a.keyword.value not in fields]
        if not unknown:
            continue
        named = kwarg(call, "name")
        label = f"{kind} `{string(named.value) if named else '?'}`"
        sibling = _sibling(call, kind, classes)
        renames = {id(a): _renames(_keyword(a), call, fields) for a in unknown}
        bounds = [(a, RANGE_KEYWORDS[_keyword(a)]) for a in unknown if _keyword(a) in RANGE_KEYWORDS]
        if sibling and not any(renames.values()) and not bounds:
            edits[id(call)] = lambda n, s=sibling: n.with_changes(func=_renamed_func(n.func, s))
            words = ", ".join(f"`{_keyword(a)}=`" for a in unknown)
            changes.append(f"{label}: {kind} takes no {words}; {sibling}, its sibling that does, is used")
            imports.append(sibling)
            continue
        if sibling:
            raise NoFix(f"{kind}: a sibling class and a renamed keyword are both possible")
        changes += _rename_keywords(call, label, unknown, renames, bounds, fields, edits, imports)
    if not changes:
        raise NoFix("no unknown keyword on an input class")
    tree = replace(tree, edits)
    for name in imports:
        tree, more = ensure_imported(tree, name, facts)
        changes += more
    return tree, changes


def _renames(word: str, call: cst.Call, fields: set[str]) -> list[str]:
    """The accepted keywords ``word`` can become: lfx's spelling, or one edit away."""
    present = {a.keyword.value for a in call.args if a.keyword is not None}
    found = {t for t in [KEYWORD_RENAMES.get(word)] if t in fields}
    found |= {f for f in fields if one_edit(word, f)}
    return sorted(found - present)


def _sibling(call: cst.Call, kind: str, classes: dict[str, Any]) -> str | None:
    """The one other class of ``kind``'s family (same kind of value) that accepts every keyword
    of the call, or None (none, or several)."""
    family = classes[kind].get("family")
    given = {a.keyword.value for a in call.args if a.keyword is not None}
    takes = sorted(
        name
        for name, info in classes.items()
        if name != kind and family and info.get("family") == family and given <= set(info["fields"])
    )
    return takes[0] if len(takes) == 1 else None


def _renamed_func(func: Any, name: str) -> Any:
    import libcst as cst

    if isinstance(func, cst.Attribute):
        return func.with_changes(attr=cst.Name(name))
    return cst.Name(name)


def _rename_keywords(
    call: cst.Call,
    label: str,
    unknown: list[cst.Arg],
    renames: dict[int, list[str]],
    bounds: list[tuple[cst.Arg, str]],
    fields: set[str],
    edits: Edits,
    imports: list[str],
) -> list[str]:
    """Each unknown keyword renamed to its one candidate, bounds gathered into a RangeSpec."""
    import libcst as cst

    changes: list[str] = []
    present = {a.keyword.value for a in call.args if a.keyword is not None}
    targets: list[str] = []
    ranged = "range_spec" in fields and "range_spec" not in present
    bound_ids = {id(a) for a, _ in bounds} if ranged else set()
    for arg in unknown:
        word = _keyword(arg)
        candidates = renames[id(arg)]
        if id(arg) in bound_ids:
            if candidates:
                raise NoFix(f"{word!r}: a bound or a keyword, two readings")
            continue
        if len(candidates) != 1 or candidates[0] in targets:
            raise NoFix(f"{label} has no keyword {word!r}: {len(candidates)} candidates")
        targets.append(candidates[0])
        edits[id(arg)] = lambda n, t=candidates[0]: n.with_changes(keyword=cst.Name(t))
        changes.append(f"{label}: `{word}=` renamed `{candidates[0]}=`")
    if bound_ids:
        changes.append(_range_spec(call, label, bounds, edits))
        imports.append("RangeSpec")
    return changes


def _range_spec(call: cst.Call, label: str, bounds: list[tuple[cst.Arg, str]], edits: Edits) -> str:
    """``min_value=0, max_value=1`` -> ``range_spec=RangeSpec(min=0, max=1)`` (both bounds, or none)."""
    import libcst as cst

    by_field: dict[str, cst.Arg] = {}
    for arg, field in bounds:
        if field in by_field:
            raise NoFix(f"two bounds for {field}")
        by_field[field] = arg
    if not ("min" in by_field and "max" in by_field):
        raise NoFix("a range with one bound: the other would be a guess")
    kind = func_name(call)
    parts = [f"min={code_of(by_field['min'].value)}", f"max={code_of(by_field['max'].value)}"]
    if "step" in by_field:
        parts.append(f"step={code_of(by_field['step'].value)}")
    elif kind == "IntInput":
        parts.append("step=1")
    if kind == "IntInput":
        parts.append('step_type="int"')
    spec = cst.parse_expression(f"RangeSpec({', '.join(parts)})")
    first = min(by_field.values(), key=lambda a: call.args.index(a))
    dropped = {id(a) for a in by_field.values() if a is not first}
    words = ", ".join(f"`{_keyword(a)}=`" for a in by_field.values())
    edits[id(call)] = _range_rebuild(call, first, dropped, spec)
    return f"{label}: {words} became `range_spec=RangeSpec({', '.join(parts)})`"


def _range_rebuild(call: cst.Call, first: cst.Arg, dropped: set[int], spec: Any) -> Any:
    """The call with the first bound replaced by ``range_spec=...`` and the other bounds removed.

    Arguments are matched by position in the original call (the transformer rebuilt them);
    keyword renames on the same call were applied to its arguments first."""
    import libcst as cst

    index = dict(enumerate(call.args))
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


def _keyword(arg: cst.Arg) -> str:
    """The keyword of an argument this module only ever takes from the keyword arguments."""
    return arg.keyword.value if arg.keyword is not None else ""
