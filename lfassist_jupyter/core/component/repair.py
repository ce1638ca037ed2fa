"""Zero-call repairs: fix the mechanical mistakes of a failed component before spending a model call.

A failed validation normally costs a whole model round trip.  Many failures are mechanical,
the kind a linter's autofix repairs: ``DropdownInput(choices=[...])``, ``Message`` used but
not imported, an ``Output(method=...)`` one letter off its method.  This pass fixes those on
the code's concrete syntax tree (LibCST: comments and layout are kept), never running it,
and only where the fix is certain:

- the mistake is named by a finding of the validation report (lfx's own verdict), and
- the fix follows from lfx's facts, through the sandbox's trusted ``reference()`` (each input
  class's keywords and kind of value, ``Component``'s attributes, where lfx defines every
  public name, what its output types are called) and the standard library's module list; the
  kernel never imports lfx.

One rule per kind of mistake, each in ``repairs/``: ``names`` (imports, modules, ``self.<x>``
one edit off, output methods), ``keywords`` (lfx's spelling, the keyword one edit away, the
sibling class), ``shapes`` (returns wrapped the way the declared type takes them, a missing
annotation), ``collisions`` (an input named like a ``Component`` attribute, an output named like
an input).  Every error finding must have exactly one fix, or nothing changes (``None``): two
possible fixes, or an error no rule covers, go to the model with the original error.  The
caller validates the repaired code again like any other attempt (``arepair_until_valid``) and
keeps it only if it validates.  The pass is a pure function of (code, report, facts).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.core.component.repairs.collisions import fix_input_name, fix_overlap
from lfassist_jupyter.core.component.repairs.keywords import fix_keywords
from lfassist_jupyter.core.component.repairs.names import (
    fix_import_home,
    fix_output_method,
    fix_self_typo,
    fix_undefined,
)
from lfassist_jupyter.core.component.repairs.shapes import fix_annotation, fix_returns, fix_rows_in_data
from lfassist_jupyter.core.component.repairs.tree import NoFix, component_class, kwarg, outputs, string
from lfassist_jupyter.core.component.repairs.tree import methods as defined_methods
from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.answers import Reference

MAX_ROUNDS = 4
"""A repair can uncover the next error (the smoke phase runs once the build passes, and reaches
one output at a time): rounds, at most."""

_EXTRA_KEYWORD = "Extra inputs are not permitted"
_UNDEFINED = re.compile(r"name '(\w+)' is not defined")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_CANNOT_IMPORT = re.compile(r"[Cc]annot import name '(\w+)' from '([\w.]+)'")
_NO_ATTRIBUTE = re.compile(r"\bAttribute (\w+) not found in \w+")
_METHOD = re.compile(r"[Mm]ethod '(\w+)'")
_WRONG_TYPE = re.compile(r"\((\w+)\) returned (\w+) but is declared as ([\w |]+?)\.")
_DATA_REFUSED = re.compile(r"crashes when called: (\w+)\(\) raised ValidationError .*valid dictionary")
_INPUT = re.compile(r"^input `(\w+)`")
_OVERLAP = re.compile(r"overlapping names: ([\w, ]+?)[.\n]")


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


# -- the pass -------------------------------------------------------------------------------


Fix = Callable[..., tuple[Any, list[str]]]
"""A fix: (tree, component class) -> (new tree, change lines); raises ``NoFix``."""


def _plan(errors: list[Any], facts: dict[str, Any]) -> dict[str, Fix] | None:
    """One fix per distinct error (by key), or None when an error has no rule: decided on the
    messages alone, so a failure no rule covers costs no parse."""
    missing = {m for f in errors if f.rule == "missing-method" for m in _METHOD.findall(f.message)}
    untyped = {m for f in errors if f.rule == "output-untyped" for m in _METHOD.findall(f.message)}
    plan: dict[str, Fix] = {}
    for finding in errors:
        message, rule = finding.message, finding.rule or ""
        if _EXTRA_KEYWORD in message and rule == "build":
            plan["keywords"] = lambda t, c: fix_keywords(t, c, facts)
        elif found := _OVERLAP.search(message + "\n"):
            names = sorted({n.strip().strip("'{}") for n in found[1].split(",")} - {""})
            plan["overlap"] = lambda t, c, n=names: fix_overlap(t, c, n)
        elif (found := _NO_MODULE.search(message)) and rule == "build":
            plan["module:" + found[1]] = lambda t, c, m=found[1]: fix_import_home(t, m, None, facts)
        elif found := _CANNOT_IMPORT.search(message):
            key = f"import:{found[2]}:{found[1]}"
            plan[key] = lambda t, c, n=found[1], m=found[2]: fix_import_home(t, m, n, facts)
        elif found := _UNDEFINED.search(message):
            plan["name:" + found[1]] = lambda t, c, n=found[1]: fix_undefined(t, n, facts)
        elif rule == "smoke-crash" and (found := _NO_ATTRIBUTE.search(message)):
            plan["attr:" + found[1]] = lambda t, c, a=found[1]: fix_self_typo(t, c, a)
        elif rule == "smoke-crash" and (found := _DATA_REFUSED.search(message)):
            plan["rows:" + found[1]] = lambda t, c, m=found[1]: fix_rows_in_data(t, c, m, facts)
        elif rule == "missing-method":
            plan["method"] = lambda t, c: fix_output_method(t, c, missing)
        elif rule == "output-untyped":
            plan["untyped"] = lambda t, c: fix_annotation(t, c, untyped)
        elif rule == "wrong-type" and (found := _WRONG_TYPE.search(message)):
            declared = [t.strip() for t in found[3].split("|")]
            plan["type:" + found[1]] = lambda t, c, m=found[1], g=found[2], d=declared: fix_returns(
                t, c, m, g, d, facts
            )
        elif rule in ("input-reserved", "input-ignored") and (found := _INPUT.search(message)):
            plan["input:" + found[1]] = lambda t, c, n=found[1]: fix_input_name(t, c, n, facts)
        else:
            return None  # an error no rule covers: the repaired code could not validate
    return plan


Facts = dict[str, Any]
"""lfx's facts as the rules read them: the sandbox's ``Reference`` as JSON, because a round runs
in a worker process (``core/offload.py``) that gets its arguments as JSON."""


def facts_of(reference: Reference | Facts | None) -> Facts | None:
    """``SandboxValidator.reference()``'s typed answer as the rules' ``Facts`` (facts pass as they are)."""
    if reference is None or isinstance(reference, dict):
        return reference
    return reference.model_dump()


def repair_component(code: str, report: ValidationReport, reference: Reference | Facts | None) -> Repair | None:
    """One repair round for ``report``'s errors, or None when any of them has no certain fix.

    Pure: nothing is executed, the code is only parsed (LibCST) and rewritten."""
    reference = facts_of(reference)
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
            tree, more = fix(tree, component_class(tree, report.class_name))
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


def unprompted_changes(code: str, reference: Reference | Facts) -> list[str]:
    """What the code-driven fixes would change if their finding were claimed everywhere, each on
    its own: unknown keywords on every input call, a missing method and a missing annotation for
    every output, a plain value returned where each typed output method declares its type.  On
    code that validates this must be empty: the check that the pass never touches a working
    component (tests, benchmark).  The other rules act only on a name, a module or an attribute
    lfx itself reported missing, which working code never has."""
    import libcst as cst

    reference = facts_of(reference) or {}
    try:
        tree = cst.parse_module(code)
        cls = component_class(tree, None)
    except (NoFix, cst.ParserSyntaxError):
        return []
    methods = {name for out in outputs(cls) if (arg := kwarg(out, "method")) and (name := string(arg.value))}
    fixes: list[Callable[..., tuple[Any, list[str]]]] = [
        lambda: fix_keywords(tree, cls, reference),
        lambda: fix_output_method(tree, cls, methods),
        lambda: fix_annotation(tree, cls, methods),
    ]
    for name, func in defined_methods(cls).items():
        annotation = func.returns.annotation if func.returns is not None else None
        declared = annotation.value if isinstance(annotation, cst.Name) and name in methods else None
        for got in ("str", "dict", "list") if declared in ("Message", "Data", "DataFrame") else ():
            fixes.append(lambda m=name, g=got, d=declared: fix_returns(tree, cls, m, g, [d], reference))
    changes: list[str] = []
    for fix in fixes:
        with contextlib.suppress(NoFix):
            changes += fix()[1]
    return changes


async def arepair_until_valid(
    code: str,
    report: ValidationReport,
    reference: Reference | Facts | None,
    validate: Callable[[str], Awaitable[ValidationReport]],
    on_repair: Callable[[list[str]], None] | None = None,
    repair: Callable[[str, ValidationReport, Facts | None], Awaitable[Repair | None]] | None = None,
) -> Repaired | None:
    """Repair, validate, and repeat while each round fixes what the last validation found.

    Returns the repaired code only when it validates; None sends the original code and error
    to the model.  ``on_repair`` hears each round's changes (the pipeline's progress event).
    ``repair`` runs one round (``repair_component``'s arguments) where the caller wants it: the
    pipeline runs it in a worker process with a deadline (``core/offload.py``), so hostile
    code never blocks the event loop; without it the round runs here."""
    reference = facts_of(reference)  # once: JSON, for the worker
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


REPAIR_DEADLINE = 5.0
"""Seconds one round of the repair pass may take in the worker process (``core/offload.py``).
A component's repair takes milliseconds; a hostile reply (211 KB of deep expressions) took
LibCST 10-75 s."""


def repair_until_valid(
    code: str,
    report: ValidationReport,
    reference: Reference | Facts | None,
    validate: Callable[[str], ValidationReport],
    *,
    repair: Callable[[str, ValidationReport, Facts | None], Repair | None] | None = None,
) -> Repaired | None:
    """``arepair_until_valid`` for a blocking caller (``%%assist_validate --fix``, the benchmark).
    ``repair`` runs one round where the caller wants it (the magic: the worker process, with its
    deadline); without it, here."""
    reference = facts_of(reference)
    changes: list[str] = []
    current = code
    for _ in range(MAX_ROUNDS):
        fix = repair(current, report, reference) if repair else repair_component(current, report, reference)
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
    stopped: str = ""
    """Why the repair pass was stopped before it answered (its deadline), or ""."""

    @property
    def headline(self) -> str:
        if self.stopped:
            return f"No repair: the repair pass was stopped ({self.stopped})."
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
    reference: Reference | Facts | None,
    repair: Callable[[str, ValidationReport, Facts | None], Repair | None] | None = None,
) -> FixResult:
    """The repair pass for a user's own component (``%%assist_validate --fix``); ``report`` is
    the cell's validation, ``validate`` checks the repaired code the same way, ``repair`` runs
    one round (``repair_until_valid``)."""
    if report.is_valid:
        return FixResult(code=code, changes=[], report=report)
    repaired = repair_until_valid(code, report, reference, validate, repair=repair)
    if repaired is None:
        return FixResult(code=code, changes=[], report=report)
    return FixResult(code=repaired.code, changes=repaired.changes, report=repaired.report, repaired=True)
