"""Static and security phases: pure AST, nothing executed, runs in the calling process.

These catch in about a millisecond what would otherwise cost a worker round trip, and
they are the only phases that run *before* any generated code executes anywhere, which
is why the security scan lives here: generated code that calls ``os.system`` never
reaches the sandbox at all.  The sandbox (``sandbox/client.py``) remains the real defence; this
scan gives the model a precise, early error to fix.

Two audiences, one scan (``security=``):
- ``"reject"`` (the default, what the engine uses for *generated* code): unsafe calls are
  ``error`` findings and the code is refused;
- ``"report"`` (what ``validate_component`` uses for code a *user* brings): they are
  ``policy`` findings -- shown prominently, not a verdict, since Langflow runs such code.

Everything here is a fact the AST proves.  Whether lfx builds the code is the worker's
question; the static phase only says "it does not build" when that is certain (a syntax
error, no class lfx can find), so it never contradicts Langflow.
"""

from __future__ import annotations

import ast
import sys
import time
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from lfassist_jupyter.artifacts.component import (
    MAX_CODE_CHARS,
    dotted_name,
    find_component_class,
    is_component_base,
    lfx_component_class,
)
from lfassist_jupyter.validation.report import FieldSummary, Finding, ValidationReport

SecurityMode = Literal["reject", "report", "off"]

# The deny list lives in ``policy.py`` (read by the sandbox's audit hook too); the scan
# that follows references to it through aliases is ``security.py``.


def _base_name(base: ast.expr) -> str:
    return dotted_name(base.value if isinstance(base, ast.Subscript) else base) or ""


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _const_str(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _class_list(cls: ast.ClassDef, attr: str) -> list[ast.Call] | None:
    for stmt in cls.body:
        targets: Iterable[ast.expr] = ()
        value = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = (stmt.target,), stmt.value
        if any(isinstance(t, ast.Name) and t.id == attr for t in targets) and isinstance(value, ast.List | ast.Tuple):
            return [e for e in value.elts if isinstance(e, ast.Call)]
    return None


def _own_nodes(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterable[ast.AST]:
    """The function's nodes, without those of nested functions, lambdas and classes."""
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                stack.append(child)


def _returns_value(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        (isinstance(n, ast.Return) and n.value is not None) or isinstance(n, ast.Yield | ast.YieldFrom)
        for n in _own_nodes(func)
    )


def _raises(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, ast.Raise) for n in _own_nodes(func))


def imported_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """Top-level module names imported anywhere in the code, with their line numbers."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name.split(".")[0], node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def security_findings(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, description) of each reference to a refused module, function or escape hatch,
    followed through aliases, containers, returns and ``getattr`` (see ``security.py``)."""
    from lfassist_jupyter.validation.security import scan

    return scan(tree)


def security_issues(tree: ast.Module) -> list[str]:
    """The security findings as "line N: ..." strings (kept for callers of the old API)."""
    return [f"line {line}: {text}" for line, text in security_findings(tree)]


def _syntax_error(exc: SyntaxError) -> str:
    where = f" (line {exc.lineno})" if exc.lineno else ""
    return f"SyntaxError: {exc.msg}{where}"


def security_mode(security: SecurityMode | bool) -> SecurityMode:
    if security is True:
        return "reject"
    if security is False:
        return "off"
    if security not in ("reject", "report", "off"):
        from lfassist_jupyter.errors import ConfigError

        raise ConfigError(f"security must be 'reject', 'report' or 'off', not {security!r}.")
    return security


def _check_class(cls: ast.ClassDef, report: ValidationReport) -> None:
    """Facts the AST proves about the component class: names, outputs and their methods."""

    def error(rule: str, message: str, line: int | None, evidence: str | None = None) -> None:
        report.findings.append(
            Finding(severity="error", phase="static", rule=rule, message=message, line=line, evidence=evidence)
        )

    inputs = _class_list(cls, "inputs") or []
    outputs = _class_list(cls, "outputs") or []
    named_inputs = [(n, c) for c in inputs if (n := _const_str(_kw(c, "name")))]
    named_outputs = [(n, c) for c in outputs if (n := _const_str(_kw(c, "name")))]
    report.inputs = [FieldSummary(name=n, type=dotted_name(c.func)) for n, c in named_inputs]

    # Linear: a Counter, not names.count(n) per name (20,000 inputs must stay instant).
    for kind, named in (("input", named_inputs), ("output", named_outputs)):
        counts = Counter(n for n, _ in named)
        dupes = sorted(n for n, k in counts.items() if k > 1)
        if dupes:
            line = next(c.lineno for n, c in named if counts[n] > 1)
            error(
                f"duplicate-{kind}",
                f"Duplicate {kind} names: {', '.join(dupes[:10])}. Each {kind} needs a unique name; "
                f"Langflow keeps only one {kind} per name, so the other is lost.",
                line,
            )
    out_names = {n for n, _ in named_outputs}
    overlap = sorted({n for n, _ in named_inputs} & out_names)
    if overlap:
        line = next(c.lineno for n, c in named_inputs if n in out_names)
        error(
            "name-overlap",
            f"Inputs and outputs have overlapping names: {', '.join(overlap[:10])}. Rename one of each pair.",
            line,
            "lfx refuses it: Component.__init__ raises 'Inputs and outputs have overlapping names'.",
        )

    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    # Only when every base is a plain Component is the class the whole story: any other
    # base (ComponentWithCache, LCModelComponent, ...) may supply methods; the worker
    # then decides with the real MRO.
    plain = all(_base_name(b).split(".")[-1] in ("Component", "CustomComponent") for b in cls.bases)
    for out in outputs:
        method = _const_str(_kw(out, "method"))
        name = _const_str(_kw(out, "name")) or "?"
        if method is None:
            continue
        report.outputs.append(FieldSummary(name=name, method=method))
        func = methods.get(method)
        if func is None:
            if plain:
                error(
                    "missing-method",
                    f"Output '{name}' points to method '{method}', which the class does not define.",
                    out.lineno,
                )
            continue
        typed = _kw(out, "types") is not None or _kw(out, "type") is not None
        if func.returns is None and not typed:
            error(
                "output-untyped",
                f"Method '{method}' (output '{name}') has no return annotation; add one such as `-> Message`, "
                "`-> Data` or `-> DataFrame` (or `types=[...]` on the Output) so Langflow knows the output type.",
                func.lineno,
                "Langflow types an output from its method's return annotation; without one it can connect to nothing.",
            )
        elif not _returns_value(func) and not _raises(func):
            # A method that raises (a retired component's `raise SomeError(...)`) is deliberate.
            error(
                "never-returns",
                f"Method '{method}' (output '{name}') never returns a value, so the output is always None.",
                func.lineno,
            )


def validate_static(code: str, *, security: SecurityMode | bool = "reject") -> ValidationReport:
    """Run the static and security phases on ``code``.

    A report with ``is_valid=True`` means "nothing wrong that can be seen without running
    it"; the runtime and smoke phases decide the rest.  ``builds`` is ``False`` only when
    lfx certainly cannot build the code (syntax error, no class it can find), else ``None``.

    ``security``: ``"reject"`` (default; unsafe calls are errors -- for generated code),
    ``"report"`` (they are ``policy`` findings -- for code a user validates) or ``"off"``.
    ``True``/``False`` mean ``"reject"``/``"off"``.  Never raises for bad code.
    """
    mode = security_mode(security)
    t0 = time.perf_counter()
    report = ValidationReport(is_valid=False, phases_run=["static"])

    def done() -> ValidationReport:
        errors = report.by_severity("error")
        report.is_valid = not errors and report.builds is not False
        report.phase = errors[0].phase if errors else ("static" if report.builds is False else None)
        report.error = errors[0].message if errors else None
        report.timings_ms["static"] = round((time.perf_counter() - t0) * 1000, 3)
        return report

    def fail(message: str, *, builds: bool | None = False, line: int | None = None) -> ValidationReport:
        report.builds = builds
        report.findings.append(Finding(severity="error", phase="static", message=message, line=line))
        return done()

    if not isinstance(code, str):
        return fail(f"Expected the component's code as a str, got {type(code).__name__}.", builds=None)
    if len(code) > MAX_CODE_CHARS:
        return fail(
            f"The code is {len(code):,} characters; a component is at most {MAX_CODE_CHARS:,}. "
            "Nothing was parsed or run.",
            builds=None,
        )
    if not code.strip():
        return fail("The code is empty.")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return fail(_syntax_error(exc), line=exc.lineno)
    except ValueError as exc:  # e.g. NUL bytes
        return fail(f"SyntaxError: {exc}")
    except (MemoryError, RecursionError) as exc:
        # Python's own parser gives up on very deep nesting ("-" * 100000 + "1"); so does lfx.
        return fail(
            f"The code is nested too deeply for Python to parse ({type(exc).__name__}); "
            "it cannot be a working component."
        )

    try:
        cls = lfx_component_class(tree)
        if cls is None:
            ours = find_component_class(tree)
            if ours is not None:
                return fail(
                    f"Langflow cannot find the component class: lfx only recognises a base written as a plain "
                    f"name (`class {ours.name}(Component):`), not `{_base_name(ours.bases[0]) or '...'}`. "
                    "Import the base class and use its bare name.",
                    line=ours.lineno,
                )
            return fail(
                "Could not find a class that inherits from Component. Define "
                "`class MyComponent(Component):` with `from lfx.custom.custom_component.component import Component`."
            )
        report.class_name = cls.name
        if any(is_component_base(_base_name(b)) for b in cls.bases) or not cls.bases:
            _check_class(cls, report)
        else:  # e.g. ComponentWithCache: the worker checks it against the real class
            _check_class_lightly(cls, report)

        if mode != "off":
            _security_phase(tree, mode, report)
    except (MemoryError, RecursionError) as exc:
        report.findings.append(
            Finding(
                severity="error",
                phase="static",
                message=f"The code is too large or too deeply nested to analyse ({type(exc).__name__}).",
            )
        )
    return done()


def _security_phase(tree: ast.Module, mode: SecurityMode, report: ValidationReport) -> None:
    """The security phase: unsafe calls are one error (``reject``: generated code must not
    make them) or ``policy`` findings (``report``: the user's own code, which Langflow runs)."""
    from lfassist_jupyter.validation.security import ScanLimit

    report.phases_run.append("security")
    try:
        issues = security_findings(tree)
    except ScanLimit as exc:
        report.findings.append(
            Finding(
                severity="error",
                phase="security",
                rule="security",
                message=f"The security scan could not judge this code: it gave up after {exc}. "
                "A component is far smaller and simpler; remove what makes the code this large or tangled.",
            )
        )
        return
    if issues and mode == "reject":
        items = "; ".join(f"line {line}: {text}" for line, text in issues[:5])
        report.findings.append(
            Finding(
                severity="error",
                phase="security",
                rule="security",
                message=f"Unsafe code is not allowed in a component: {items}. Remove these calls.",
                line=issues[0][0],
            )
        )
    for line, text in issues if mode == "report" else ():
        report.findings.append(
            Finding(
                severity="policy",
                phase="security",
                rule="security",
                message=f"Line {line}: {text}. Langflow allows it; validation runs it only in the sandbox.",
                line=line,
            )
        )


def _check_class_lightly(cls: ast.ClassDef, report: ValidationReport) -> None:
    """For a class whose base is not obviously a component: only what no base can change."""
    probe = ValidationReport(is_valid=False)
    _check_class(cls, probe)
    report.inputs, report.outputs = probe.inputs, probe.outputs
    report.findings += [f for f in probe.findings if f.rule in ("duplicate-input", "duplicate-output", "name-overlap")]


def stdlib_modules() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names)
