"""Static and security phases: pure AST, nothing executed, runs in the calling process.

These catch in about a millisecond what would otherwise cost a worker round trip, and
they are the only phases that run *before* any generated code executes anywhere, which
is why the security scan lives here: code that calls ``os.system`` never reaches the
sandbox at all.  The sandbox (``sandbox.py``) remains the real defence; this scan gives
the model a precise, early error to fix.
"""

from __future__ import annotations

import ast
import sys
import time
from collections.abc import Iterable

from lfassist_jupyter.core.extract import _COMPONENT_BASE
from lfassist_jupyter.validation.report import FieldSummary, ValidationReport

# Input/output names that clash with attributes a Component instance sets itself; lfx
# rejects them at run time ("is a reserved word") or silently shadows a method.
RESERVED_NAMES = frozenset(
    {
        "add_tool_output",
        "build",
        "build_parameters",
        "cache",
        "code",
        "ctx",
        "description",
        "display_name",
        "field_config",
        "field_order",
        "frozen",
        "function",
        "graph",
        "icon",
        "inputs",
        "is_input",
        "is_output",
        "log",
        "name",
        "outputs",
        "repr_value",
        "run",
        "set",
        "selected_output",
        "status",
        "trace_type",
        "user_id",
        "vertex",
    }
)

_DANGEROUS_MODULES = {
    "subprocess": "runs shell commands",
    "ctypes": "calls native code",
    "cffi": "calls native code",
    "pickle": "executes code while loading data",
    "cPickle": "executes code while loading data",
    "dill": "executes code while loading data",
    "marshal": "loads raw bytecode",
    "shelve": "unpickles data",
    "multiprocessing": "spawns processes",
    "pty": "spawns terminals",
    "code": "runs an interactive interpreter",
    "codeop": "compiles code dynamically",
}
_DANGEROUS_BUILTINS = {
    "exec": "executes arbitrary code",
    "eval": "executes arbitrary code",
    "compile": "compiles arbitrary code",
    "__import__": "imports code dynamically",
    "breakpoint": "stops the process",
}
_DANGEROUS_ATTRS = {
    ("os", "system"): "runs shell commands",
    ("os", "popen"): "runs shell commands",
    ("os", "fork"): "spawns processes",
    ("os", "forkpty"): "spawns processes",
    ("os", "kill"): "kills processes",
    ("os", "killpg"): "kills processes",
    ("os", "_exit"): "kills the process",
    ("os", "abort"): "kills the process",
    ("os", "setuid"): "changes privileges",
    ("os", "chmod"): "changes file permissions",
    ("os", "chown"): "changes file ownership",
    ("os", "rmdir"): "deletes directories",
    ("os", "removedirs"): "deletes directories",
    ("shutil", "rmtree"): "deletes directory trees",
    ("sys", "exit"): "stops the process",
    ("sys", "settrace"): "tampers with the interpreter",
    ("sys", "setprofile"): "tampers with the interpreter",
    ("sys", "addaudithook"): "tampers with the interpreter",
    ("builtins", "exec"): "executes arbitrary code",
    ("importlib", "import_module"): "imports code dynamically",
    ("importlib", "reload"): "imports code dynamically",
    ("importlib", "__import__"): "imports code dynamically",
    ("importlib", "exec_module"): "executes a module from a file",
    ("importlib", "spec_from_file_location"): "loads code from a file",
    ("importlib", "module_from_spec"): "loads code from a file",
    ("importlib", "SourceFileLoader"): "loads code from a file",
    ("builtins", "eval"): "executes arbitrary code",
}
_DANGEROUS_PREFIXES = {
    ("os", "exec"): "replaces the process",
    ("os", "spawn"): "spawns processes",
    ("os", "posix_spawn"): "spawns processes",
}
# Reading __mro__ or __bases__ is introspection; these reach objects outside the component.
_DUNDER_ESCAPES = {"__subclasses__", "__globals__", "__builtins__", "__code__"}


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_component_base(base: ast.expr) -> bool:
    name = _dotted(base)
    if name is None and isinstance(base, ast.Subscript):
        name = _dotted(base.value)
    return bool(name) and bool(_COMPONENT_BASE.search(f" {name} "))


def find_component_class(tree: ast.Module) -> ast.ClassDef | None:
    """The last top-level class with a ``...Component`` base (the last wins, as in Langflow,
    because helper classes are usually defined first)."""
    found = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_is_component_base(b) for b in node.bases):
            found = node
    return found


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


def _returns_value(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
    return False


def imported_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """Top-level module names imported anywhere in the code, with their line numbers."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name.split(".")[0], node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def security_issues(tree: ast.Module) -> list[str]:
    """Human-readable findings of dangerous calls and imports, with line numbers."""
    issues: list[str] = []
    aliases: dict[str, str] = {}  # local name -> "module" or "module.attr"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                aliases[a.asname or top] = a.name if a.asname else top
                if top in _DANGEROUS_MODULES:
                    issues.append(f"line {node.lineno}: import of `{a.name}` ({_DANGEROUS_MODULES[top]})")
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in _DANGEROUS_MODULES:
                issues.append(f"line {node.lineno}: import from `{node.module}` ({_DANGEROUS_MODULES[top]})")
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                why = _DANGEROUS_ATTRS.get((top, a.name)) or _DANGEROUS_BUILTINS.get(a.name)
                if why:
                    issues.append(f"line {node.lineno}: import of `{node.module}.{a.name}` ({why})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name is None:
                continue
            head, _, rest = name.partition(".")
            resolved = aliases.get(head, head) + (f".{rest}" if rest else "")
            mod, _, attr = resolved.rpartition(".")
            why = None
            if not mod and resolved in _DANGEROUS_BUILTINS:
                why = _DANGEROUS_BUILTINS[resolved]
            elif mod:
                top = mod.split(".")[0]
                why = _DANGEROUS_ATTRS.get((top, attr)) or next(
                    (w for (m, p), w in _DANGEROUS_PREFIXES.items() if m == top and attr.startswith(p)), None
                )
                if why is None and top in _DANGEROUS_MODULES:
                    why = _DANGEROUS_MODULES[top]
            if resolved in ("getattr", "setattr") and len(node.args) >= 2:
                target = _dotted(node.args[0])
                if target and aliases.get(target, target).split(".")[0] in (
                    "os",
                    "sys",
                    "builtins",
                    "subprocess",
                ):
                    why = "reaches into a system module by name"
            if why:
                issues.append(f"line {node.lineno}: call to `{resolved}` ({why})")
        elif isinstance(node, ast.Attribute) and node.attr in _DUNDER_ESCAPES:
            issues.append(f"line {node.lineno}: access to `{node.attr}` (escapes the component's scope)")
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            issues.append(f"line {node.lineno}: access to `__builtins__` (escapes the component's scope)")
    return list(dict.fromkeys(issues))


def _syntax_error(exc: SyntaxError) -> str:
    where = f" (line {exc.lineno})" if exc.lineno else ""
    return f"SyntaxError: {exc.msg}{where}"


def validate_static(code: str, *, security: bool = True) -> ValidationReport:
    """Run the static and security phases on ``code``.

    A report with ``is_valid=True`` means "nothing wrong that can be seen without running
    it"; the runtime and smoke phases decide the rest.
    """
    t0 = time.perf_counter()
    report = ValidationReport(is_valid=False, phases_run=["static"])

    def done(phase: str | None, error: str | None) -> ValidationReport:
        report.is_valid = error is None
        report.phase = phase if error else None  # type: ignore[assignment]
        report.error = error
        report.timings_ms["static"] = round((time.perf_counter() - t0) * 1000, 3)
        return report

    if not code or not code.strip():
        return done("static", "The code is empty.")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return done("static", _syntax_error(exc))
    except ValueError as exc:  # e.g. NUL bytes
        return done("static", f"SyntaxError: {exc}")

    cls = find_component_class(tree)
    if cls is None:
        return done(
            "static",
            "Could not find a class that inherits from Component. Define "
            "`class MyComponent(Component):` with `from lfx.custom.custom_component.component import Component`.",
        )
    report.class_name = cls.name

    inputs = _class_list(cls, "inputs") or []
    outputs = _class_list(cls, "outputs") or []
    in_names = [n for c in inputs if (n := _const_str(_kw(c, "name")))]
    out_names = [n for c in outputs if (n := _const_str(_kw(c, "name")))]
    report.inputs = [FieldSummary(name=n, type=_dotted(c.func)) for c in inputs if (n := _const_str(_kw(c, "name")))]

    problems: list[str] = []
    for kind, names in (("input", in_names), ("output", out_names)):
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            problems.append(f"Duplicate {kind} names: {', '.join(dupes)}. Each {kind} needs a unique name.")
    overlap = sorted(set(in_names) & set(out_names))
    if overlap:
        problems.append(f"Inputs and outputs have overlapping names: {', '.join(overlap)}. Rename one of each pair.")
    reserved = sorted((set(in_names) | set(out_names)) & RESERVED_NAMES)
    if reserved:
        problems.append(
            f"Reserved names used for inputs or outputs: {', '.join(reserved)}. "
            "These are Component attributes; choose other names (e.g. 'input_text', 'result')."
        )

    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    # Only check methods when every base is a plain Component: other bases may supply them.
    plain_bases = all((_dotted(b) or "").split(".")[-1] in ("Component", "CustomComponent") for b in cls.bases)
    for out in outputs:
        method = _const_str(_kw(out, "method"))
        name = _const_str(_kw(out, "name")) or "?"
        if method is None:
            if plain_bases:
                problems.append(f"Output '{name}' has no method=...; name the method that builds it.")
            continue
        report.outputs.append(FieldSummary(name=name, method=method))
        func = methods.get(method)
        if func is None:
            if plain_bases:
                problems.append(f"Output '{name}' points to method '{method}', which the class does not define.")
            continue
        if func.returns is None:
            problems.append(
                f"Method '{method}' (output '{name}') has no return annotation; add one such as `-> Message`, "
                "`-> Data` or `-> DataFrame` so Langflow knows the output type."
            )
        elif not _returns_value(func):
            problems.append(f"Method '{method}' (output '{name}') never returns a value.")
    if plain_bases and not outputs:
        problems.append("The component defines no outputs; add `outputs = [Output(name=..., method=...)]`.")
    if problems:
        return done("static", " ".join(problems))

    if security:
        report.phases_run.append("security")
        issues = security_issues(tree)
        if issues:
            return done(
                "security",
                "Unsafe code is not allowed in a component: " + "; ".join(issues[:5]) + ". Remove these calls.",
            )
    return done(None, None)


def stdlib_modules() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names)
