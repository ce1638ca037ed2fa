"""The security scan: which expressions can evaluate to something the deny list refuses.

A scan of *calls* (``os.system(...)``) misses every indirection a model or a red team
writes: ``run = os.system``, ``m = os; m.system``, a container entry, a default argument,
a returned or yielded module, a lambda, a conditional expression, a loop target, a walrus,
``getattr(m, "system")``, ``sys.modules["os"]``, ``vars(builtins)["eval"]``, ``from os
import *``.  So this pass judges *references*: any expression that may evaluate to a
refused module attribute or built-in is a finding, wherever it appears (a direct reference
in a container, a default or a return is already one), and names are followed through a
small symbol table to what they may be bound to.

Like Bandit (``bandit/core/utils.py``: an import-alias map and the qualified name of a
call's ``Name``/``Attribute`` chain), names resolve to qualified names (``m.system`` ->
``os.system``); unlike it, every binding feeds the map -- assignments, loop and
comprehension targets, ``with ... as``, walrus, parameters (from their defaults and from
the arguments of each call to a function of that name), attribute stores (``self.m = os``)
and what a function returns or yields -- with Python's scoping (module, function, class;
``global``).  It is flow-insensitive: a name may be anything it is bound to anywhere in its
scope.  That over-approximates (a name rebound to something harmless still counts), which
is the right side to err on for code that leaves the sandbox.

``getattr`` is judged by the attribute: ``getattr(os, "path")`` is ``os.path`` (fine);
``getattr(os, name)`` with a name computed at runtime, on a module some attribute of which
is refused, is a finding.  Nothing is executed; the deny list is ``policy.py``, shared
with the sandbox's audit hook.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass, field

from lfassist_jupyter.artifacts import policy

_BUILTIN_NAMES = frozenset(dir(builtins))
# Calls that hand back (an element of) their first argument: containers, iterators.
_PASSTHROUGH = frozenset({"list", "tuple", "set", "frozenset", "iter", "next", "reversed", "sorted", "dict"})
_LOOKUP_METHODS = frozenset({"get", "pop", "setdefault"})
_VIEW_METHODS = frozenset({"values", "items", "copy"})
_ANY_MODULE = "*"  # sys.modules[<computed>]: any module at all
_BUILTINS_NS = "@builtins"  # __builtins__ (a module or its dict, depending on where code runs)
_ANY_GLOBAL = "@module.*"  # globals()[<computed>]: any global, __builtins__ included
_ANY_ATTR = "*"  # the attribute table's entry for values stored under a computed name
# An attribute of a module named like one of these is that module (``json.codecs.sys`` is ``sys``):
# modules re-export what they import, so a chain of public attributes reaches any of them.
_MODULE_NAMES = frozenset({"sys", "os", "builtins", "importlib", "gc", "inspect", "operator", "pkgutil", "pydoc"})
_MAX_FINDINGS = 200
SCAN_STEPS = 1_000_000
"""Work units one scan may spend (an expression resolved, a binding followed, a node walked).
The costliest of 1,100 real components (lfx's own, third-party ones, the custom code of 113
exported flows) takes 12,600; hostile code built to make the scan's alias-following explode
(31 KB that kept a kernel thread busy for hours) stops here, in a few seconds."""
SCAN_SECONDS = 10.0
"""Wall-clock bound of one scan, whatever its step count (a loaded machine)."""


class ScanLimit(Exception):
    """The scan gave up: the code is too large or too tangled to judge within its bounds."""


class _Budget:
    def __init__(self) -> None:
        import time

        self.left = SCAN_STEPS
        self.clock = time.monotonic
        self.seconds = SCAN_SECONDS
        self.deadline = self.clock() + self.seconds

    def spend(self, steps: int = 1) -> None:
        before = self.left
        self.left -= steps
        if self.left < 0:
            raise ScanLimit(f"more than {SCAN_STEPS:,} steps")
        if before // 4096 != self.left // 4096 and self.clock() > self.deadline:
            raise ScanLimit(f"more than {self.seconds:g} s")


Source = tuple[ast.AST, "Scope"]


class _Imported(ast.expr):
    """What an import binds: a module or ``module.attr`` by its qualified name."""

    _fields = ()

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


@dataclass(eq=False)
class Scope:
    """One Python scope: its bindings (name -> the expressions it may be bound to)."""

    kind: str  # "module", "function", "class"
    parent: Scope | None
    bindings: dict[str, list[Source | None]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    returns: list[Source] = field(default_factory=list)  # functions: what they return or yield
    params: list[str] = field(default_factory=list)
    in_class: bool = False  # a function defined directly in a class body (a method)
    wildcards: list[str] = field(default_factory=list)  # module scope: `from X import *`

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


class _Collector(ast.NodeVisitor):
    """Pass 1: scopes, bindings, returns, call sites and attribute stores."""

    def __init__(self, tree: ast.Module) -> None:
        self.root = Scope("module", None)
        self.scope = self.root
        self.scope_of: dict[int, Scope] = {}  # id(expression) -> its scope
        self.functions: dict[str, list[Scope]] = {}  # def name -> scopes
        self.lambdas: dict[int, Scope] = {}  # id(Lambda) / id(FunctionDef) -> scope
        self.by_id: dict[int, Scope] = {}  # id(scope) -> scope (for fn:<id> values)
        self.calls: list[tuple[ast.Call, Scope]] = []
        self.attrs: dict[str, list[Source]] = {}  # attribute name -> values stored into it
        self.imports: list[tuple[int, str]] = []  # (line, text) of refused imports
        self.imported: set[str] = set()  # refused modules the code imports (the import is the finding)
        self.exempt: set[int] = set()  # ids of `globals` names in `globals()[k] = v`
        self.call_funcs: set[int] = set()
        self.visit(tree)

    # -- bindings --------------------------------------------------------------------------

    def bind(self, name: str, source: Source | None, scope: Scope | None = None) -> None:
        scope = scope or self.scope
        if name in scope.globals:
            scope = scope.module()
        scope.bindings.setdefault(name, []).append(source)
        if scope.kind == "class" and source is not None:  # class attributes are reachable as self.<name>
            self.attrs.setdefault(name, []).append(source)

    def bind_target(self, target: ast.AST, value: ast.AST | None) -> None:
        source = (value, self.scope) if value is not None else None
        if isinstance(target, ast.Name):
            self.bind(target.id, source)
        elif isinstance(target, ast.Starred):
            self.bind_target(target.value, value)
        elif isinstance(target, ast.Tuple | ast.List):
            pairwise = (
                isinstance(value, ast.Tuple | ast.List)
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in (*value.elts, *target.elts))
            )
            for i, elt in enumerate(target.elts):
                self.bind_target(elt, value.elts[i] if pairwise else value)  # type: ignore[union-attr]
        elif isinstance(target, ast.Attribute):
            if source is not None:
                self.attrs.setdefault(target.attr, []).append(source)
        elif isinstance(target, ast.Subscript):
            # d["k"] = os: the container may now hold os.
            base = target.value
            if isinstance(base, ast.Name):
                self.bind(base.id, source)
            elif isinstance(base, ast.Attribute) and source is not None:
                self.attrs.setdefault(base.attr, []).append(source)
            if (
                isinstance(base, ast.Call)
                and isinstance(base.func, ast.Name)
                and base.func.id == "globals"
                and not base.args
            ):
                self.exempt.add(id(base.func))  # defining names, not reaching __builtins__

    # -- scopes ------------------------------------------------------------------------------

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        for default in (*args.defaults, *[d for d in args.kw_defaults if d is not None]):
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for deco in node.decorator_list:
                self.visit(deco)
        scope = Scope("function", self.scope, in_class=self.scope.kind == "class")
        self.lambdas[id(node)] = scope
        self.by_id[id(scope)] = scope
        positional = [*args.posonlyargs, *args.args]
        scope.params = [a.arg for a in positional]
        for arg in (*positional, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                scope.bindings.setdefault(arg.arg, [])
        # Defaults: the last len(defaults) positional parameters.
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
            scope.bindings[arg.arg].append((default, self.scope))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if default is not None:
                scope.bindings[arg.arg].append((default, self.scope))
        outer, self.scope = self.scope, scope
        if isinstance(node, ast.Lambda):
            scope.returns.append((node.body, scope))
            self.visit(node.body)
        else:
            for stmt in node.body:
                self.visit(stmt)
        self.scope = outer
        if not isinstance(node, ast.Lambda):
            self.functions.setdefault(node.name, []).append(scope)
            self.bind(node.name, (node, self.scope))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.scope_of[id(node)] = self.scope
        self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in (*node.bases, *(k.value for k in node.keywords), *node.decorator_list):
            self.visit(expr)
        outer, self.scope = self.scope, Scope("class", self.scope)
        for stmt in node.body:
            self.visit(stmt)
        self.scope = outer
        self.bind(node.name, None)

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        pass  # bound in the enclosing function: lookups from here reach it anyway

    # -- statements that bind ----------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            top = a.name.split(".")[0]
            self.bind(a.asname or top, (_Imported(a.name if a.asname else top), self.scope))
            if top in policy.MODULES:
                self.imported.add(top)
                self.imports.append((node.lineno, f"import of `{a.name}` ({policy.MODULES[top]})"))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            for a in node.names:
                self.bind(a.asname or a.name, None)
            return
        top = node.module.split(".")[0]
        if top in policy.MODULES:
            self.imported.add(top)
            self.imports.append((node.lineno, f"import from `{node.module}` ({policy.MODULES[top]})"))
        for a in node.names:
            if a.name == "*":
                self.root.wildcards.append(node.module)
                if top not in policy.MODULES and policy.has_banned_attrs(node.module):
                    self.imports.append(
                        (
                            node.lineno,
                            f"wildcard import from `{node.module}` (brings refused names such as "
                            f"{_example(node.module)} into scope)",
                        )
                    )
                continue
            qualified = f"{node.module}.{a.name}"
            self.bind(a.asname or a.name, (_Imported(qualified), self.scope))
            why = policy.why(qualified)
            if why and top not in policy.MODULES:
                self.imports.append((node.lineno, f"import of `{qualified}` ({why})"))

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self.bind_target(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self.bind_target(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        self.bind_target(node.target, node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        scope = self.scope
        self.bind(node.target.id, (node.value, scope))

    def _loop(self, node: ast.For | ast.AsyncFor) -> None:
        self.generic_visit(node)
        self.bind_target(node.target, node.iter)

    visit_For = _loop
    visit_AsyncFor = _loop

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.generic_visit(node)
        self.bind_target(node.target, node.iter)

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        self.generic_visit(node)
        for item in node.items:
            if item.optional_vars is not None:
                self.bind_target(item.optional_vars, item.context_expr)

    visit_With = _with
    visit_AsyncWith = _with

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.generic_visit(node)
        if node.name:
            self.bind(node.name, None)

    def _returned(self, node: ast.Return | ast.Yield | ast.YieldFrom) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self.scope.returns.append((node.value, self.scope))

    visit_Return = _returned
    visit_Yield = _returned
    visit_YieldFrom = _returned

    # -- expressions ---------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        self.scope_of[id(node)] = self.scope
        self.call_funcs.add(id(node.func))
        self.calls.append((node, self.scope))
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in ("setattr", "__setattr__") and len(node.args) >= 2:
            # setattr(obj, "m", os) stores like obj.m = os; with a computed name, into any attribute.
            value, attr = node.args[-1], node.args[-2]
            key = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else _ANY_ATTR
            self.attrs.setdefault(key, []).append((value, self.scope))
        self.generic_visit(node)

    def _expr(self, node: ast.expr) -> None:
        self.scope_of[id(node)] = self.scope
        self.generic_visit(node)

    visit_Name = _expr
    visit_Attribute = _expr
    visit_Subscript = _expr


def _example(module: str) -> str:
    names = [k for k in policy.ATTRS if k.startswith(module + ".")]
    return f"`{names[0]}`" if names else "refused functions"


class _Resolver:
    """Pass 2: what each expression may evaluate to, as qualified names.

    Values: ``os``, ``os.system``, ``builtins.eval``; ``ns:os`` (the namespace dict of
    ``os``: ``vars(os)``, ``os.__dict__``; ``ns:@module`` is ``globals()``); ``fn:<id>`` (a
    function of this code); ``os.*`` (any attribute of ``os``); ``*`` (any module).
    """

    def __init__(self, collected: _Collector, budget: _Budget | None = None) -> None:
        self.c = collected
        self.budget = budget or _Budget()
        self.memo: dict[int, frozenset[str]] = {}
        self.busy: set[int] = set()
        self.param_sources: dict[int, dict[str, list[Source]]] = {}
        self.folded: dict[int, frozenset[str] | None] = {}
        self.looked_up: dict[tuple[int, str], frozenset[str]] = {}
        self.cut = 0  # how many times following an alias met an expression being resolved (a cycle)
        self._any_attr: frozenset[str] | None = None
        self._bind_call_sites()

    def _bind_call_sites(self) -> None:
        """Arguments flow into the parameters of every function of the called name."""
        for call, scope in self.c.calls:
            func = call.func
            if isinstance(func, ast.Lambda):
                targets = [self.c.lambdas[id(func)]]
                method_call = False
            else:
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                targets = self.c.functions.get(name or "", [])
                method_call = isinstance(func, ast.Attribute)
            for target in targets:
                self.budget.spend(1 + len(call.args) + len(call.keywords))
                offset = 1 if target.in_class and method_call else 0
                for i, arg in enumerate(call.args):
                    if isinstance(arg, ast.Starred):
                        break
                    if i + offset < len(target.params):
                        target.bindings.setdefault(target.params[i + offset], []).append((arg, scope))
                for kw in call.keywords:
                    if kw.arg and kw.arg in target.bindings:
                        target.bindings[kw.arg].append((kw.value, scope))

    # -- names -------------------------------------------------------------------------------

    def binding_scope(self, name: str, scope: Scope) -> Scope | None:
        """The scope a name read in ``scope`` is bound in (None: a builtin or a wildcard import)."""
        start: Scope | None = scope
        current: Scope | None = scope
        while current is not None:
            if name in current.globals:
                current = current.module()
            if name in current.bindings and (current is start or current.kind != "class"):
                return current
            current = current.parent
        return None

    def is_self(self, node: ast.AST, scope: Scope) -> bool:
        """Whether ``node`` is a method's own ``self`` (or ``cls``): its first parameter, bound
        to nothing else anywhere (no default, no assignment, no argument of a call by name)."""
        if not isinstance(node, ast.Name):
            return False
        home = self.binding_scope(node.id, scope)
        return (
            home is not None
            and home.kind == "function"
            and home.in_class
            and bool(home.params)
            and home.params[0] == node.id
            and not home.bindings.get(node.id)
        )

    def fold(self, node: ast.AST | None, scope: Scope) -> str | None:
        """The one text ``node`` always evaluates to when the code spells it out, else None."""
        texts = self.texts(node, scope)
        return next(iter(texts)) if texts is not None and len(texts) == 1 else None

    def texts(self, node: ast.AST | None, scope: Scope, depth: int = 0) -> frozenset[str] | None:
        """Every text ``node`` may evaluate to, when the code spells each out -- literals, literals
        joined with ``+`` or in an f-string, either branch of a conditional, the elements of a
        literal tuple or list a loop walks, a name bound only to such texts -- else None (a text
        computed at runtime).  ``getattr(store, "search" if q else "metadata_search")`` and ``for
        attr in ("text", "content"): getattr(value, attr)`` name their attributes as surely as a
        literal does."""
        if node is None or depth > 20:
            return None
        key = id(node)
        if key in self.folded:
            return self.folded[key]
        self.budget.spend()
        self.folded[key] = None  # a name bound to itself folds to nothing
        out: frozenset[str] | None = None
        parts: list[frozenset[str] | None]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out = frozenset({node.value})
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            out = self._joined([self.texts(node.left, scope, depth + 1), self.texts(node.right, scope, depth + 1)])
        elif isinstance(node, ast.JoinedStr):
            parts = [
                self.texts(v.value if isinstance(v, ast.FormattedValue) and not v.format_spec else v, scope, depth + 1)
                for v in node.values
            ]
            out = self._joined(parts)
        elif isinstance(node, ast.IfExp):
            out = self._any_of([self.texts(node.body, scope, depth + 1), self.texts(node.orelse, scope, depth + 1)])
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
            out = self._any_of([self.texts(e, scope, depth + 1) for e in node.elts])
        elif isinstance(node, ast.Name):
            home = self.binding_scope(node.id, scope)
            sources = home.bindings.get(node.id, []) if home is not None else []
            out = self._any_of([self.texts(src[0], src[1], depth + 1) if src else None for src in sources] or [None])
        self.folded[key] = out
        return out

    @staticmethod
    def _any_of(parts: list[frozenset[str] | None]) -> frozenset[str] | None:
        if any(p is None for p in parts):
            return None
        out = frozenset().union(*parts)  # type: ignore[arg-type]
        return out if 0 < len(out) <= 64 else None

    @staticmethod
    def _joined(parts: list[frozenset[str] | None]) -> frozenset[str] | None:
        out: frozenset[str] | None = frozenset({""})
        for part in parts:
            if out is None or part is None or len(out) * len(part) > 64:
                return None
            out = frozenset(a + b for a in out for b in part)
        return out

    def any_attribute(self) -> frozenset[str]:
        """What an attribute read by a computed name on ``self`` may be: anything the code stores
        into any attribute (``self.m = os``, a class attribute, ``setattr(self, name, v)``)."""
        if self._any_attr is None:
            self._any_attr = frozenset()
            found: set[str] = set()
            for sources in list(self.c.attrs.values()):
                for source in sources:
                    found |= self.resolve(*source)
            self._any_attr = frozenset(found)
        return self._any_attr

    def lookup(self, name: str, scope: Scope) -> frozenset[str]:
        """What ``name`` read in ``scope`` may be bound to (remembered per scope and name: a name
        bound a thousand times and read a thousand times is followed once)."""
        key = (id(scope), name)
        if key in self.looked_up:
            return self.looked_up[key]
        cut = self.cut
        found = self._lookup(name, scope)
        if self.cut == cut:  # complete: no alias cycle was cut short while following it
            self.looked_up[key] = found
        return found

    def _lookup(self, name: str, scope: Scope) -> frozenset[str]:
        start = scope
        while scope is not None:
            if name in scope.globals:
                scope = scope.module()
            if name in scope.bindings and (scope is start or scope.kind != "class"):
                out: set[str] = set()
                self.budget.spend(len(scope.bindings[name]))
                for source in scope.bindings[name]:
                    if source is not None:
                        out |= self.resolve(*source)
                return frozenset(out)
            scope = scope.parent  # type: ignore[assignment]
        if name == "__builtins__":
            return frozenset({_BUILTINS_NS})
        root = start.module()
        wild = {f"{m}.{name}" for m in root.wildcards if policy.why(f"{m}.{name}")}
        if name in _BUILTIN_NAMES:
            wild.add(f"builtins.{name}")
        return frozenset(wild)

    # -- expressions -----------------------------------------------------------------------------

    def resolve(self, node: ast.AST, scope: Scope) -> frozenset[str]:
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if key in self.busy:
            self.cut += 1
            return frozenset()
        self.busy.add(key)
        self.budget.spend()
        try:
            out = frozenset(self._resolve(node, scope))
        finally:
            self.busy.discard(key)
        self.memo[key] = out
        return out

    def _union(self, nodes: list, scope: Scope) -> set[str]:
        out: set[str] = set()
        for n in nodes:
            if n is not None:
                out |= self.resolve(n, scope)
        return out

    def _resolve(self, node: ast.AST, scope: Scope) -> set[str]:
        if isinstance(node, _Imported):
            top, _, rest = node.name.partition(".")
            return {policy.MODULE_ALIASES.get(top, top) + (f".{rest}" if rest else "")}
        if isinstance(node, ast.Name):
            return set(self.lookup(node.id, scope))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return {f"fn:{id(self.c.lambdas[id(node)])}"}
        if isinstance(node, ast.Attribute):
            out: set[str] = set()
            for value in self.resolve(node.value, scope):
                if value == _BUILTINS_NS:
                    value = "builtins"
                if _is_name(value):
                    out.add(f"ns:{value}" if node.attr == "__dict__" else f"{value}.{node.attr}")
                    if node.attr in _MODULE_NAMES or node.attr in policy.MODULES:
                        out.add(policy.MODULE_ALIASES.get(node.attr, node.attr))  # json.codecs.sys is sys
            for source in (*self.c.attrs.get(node.attr, []), *self.c.attrs.get(_ANY_ATTR, [])):
                out |= self.resolve(*source)  # self.m = os ... self.m.system
            return out
        if isinstance(node, ast.Subscript):
            return self._item(self.resolve(node.value, scope), self.fold(node.slice, scope), scope)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.IfExp):
            return self._union([node.body, node.orelse], scope)
        if isinstance(node, ast.BoolOp):
            return self._union(node.values, scope)
        if isinstance(node, ast.NamedExpr | ast.Starred | ast.Await):
            return set(self.resolve(node.value, scope))
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return self._union(node.elts, scope)
        if isinstance(node, ast.Dict):
            return self._union(node.values, scope)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return set(self.resolve(node.elt, scope))
        if isinstance(node, ast.DictComp):
            return set(self.resolve(node.value, scope))
        return set()

    def _item(self, bases: frozenset[str], key: str | None, scope: Scope) -> set[str]:
        """``base[key]``: a module from sys.modules, a name from a namespace, or a container's element."""
        out: set[str] = set()
        for base in bases:
            if base == "sys.modules":
                out.add(policy.MODULE_ALIASES.get(key, key) if key else _ANY_MODULE)
            elif base == "ns:@module":
                out |= self.lookup(key, scope.module()) if key else {_ANY_GLOBAL}
            elif base == _BUILTINS_NS:
                out.add(f"builtins.{key}" if key else "builtins.*")
            elif base.startswith("ns:"):
                out.add(f"{base[3:]}.{key}" if key else f"{base[3:]}.*")
            else:
                out.add(base)  # an element of a container that may hold it
        return out

    def _call(self, node: ast.Call, scope: Scope) -> set[str]:
        funcs = self.resolve(node.func, scope)
        args = node.args
        out: set[str] = set()
        target: tuple[ast.AST, ast.AST | None] | None = None
        if "builtins.getattr" in funcs and len(args) >= 2:
            target = (args[0], args[1])
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("__getattribute__", "__getattr__") and args:
            # type(m).__getattribute__(m, "system") / m.__getattribute__("system"): getattr by another name
            target = (args[0], args[1]) if len(args) >= 2 else (node.func.value, args[0])
        elif funcs & {"inspect.getattr_static"} and len(args) >= 2:
            target = (args[0], args[1])
        if target is not None:
            names = self.texts(target[1], scope)
            for value in self.resolve(target[0], scope):
                if _is_name(value):
                    for attr in names if names is not None else ["*"]:
                        out.add(f"{value}.{attr}")
                        if attr in _MODULE_NAMES or attr in policy.MODULES:
                            out.add(policy.MODULE_ALIASES.get(attr, attr))
            for attr in names or ():
                for source in (*self.c.attrs.get(attr, []), *self.c.attrs.get(_ANY_ATTR, [])):
                    out |= self.resolve(*source)  # getattr(self, "m") is self.m
            if names is None and self.is_self(target[0], scope):
                out |= self.any_attribute()
        if "builtins.vars" in funcs and args:
            out |= {f"ns:{v}" for v in self.resolve(args[0], scope) if _is_name(v)}
        if "builtins.globals" in funcs:
            out.add("ns:@module")
        if funcs & {"builtins.__import__", "importlib.import_module"} and args:
            name = self.fold(args[0], scope)
            out.add(name.split(".")[0] if name and "builtins.__import__" in funcs else name or _ANY_MODULE)
        if funcs & {"pkgutil.resolve_name", "pydoc.locate"} and args:
            name = self.fold(args[0], scope)  # "os:system", "os.system": the object it names
            if name:
                top, _, rest = name.replace(":", ".").partition(".")
                out.add(policy.MODULE_ALIASES.get(top, top) + (f".{rest}" if rest else ""))
            else:
                out.add(_ANY_MODULE)
        if any(f in funcs for f in (f"builtins.{p}" for p in _PASSTHROUGH)):
            out |= self._union([*args, *(k.value for k in node.keywords)], scope)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _LOOKUP_METHODS | _VIEW_METHODS:
            bases = self.resolve(node.func.value, scope)
            if node.func.attr in _LOOKUP_METHODS:
                out |= self._item(bases, self.fold(args[0], scope) if args else None, scope)
            else:
                views = {"sys.modules": _ANY_MODULE, "ns:@module": _ANY_GLOBAL}
                for b in bases:  # vars(os).items(): every attribute of os
                    out.add(views.get(b, f"{b[3:]}.*" if b.startswith("ns:") else b))
        for func in funcs:
            if func.startswith("fn:"):
                target = self.c.by_id.get(int(func[3:]))
                if target is not None:
                    for source in target.returns:
                        out |= self.resolve(*source)
        return out


def _is_name(value: str) -> bool:
    return not value.startswith(("ns:", "fn:", "@")) and value != _ANY_MODULE and not value.endswith(".*")


def _const(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _refusal(value: str) -> str | None:
    """Why a value is refused (None: it is not)."""
    if value == _ANY_MODULE:
        return "reaches any module by a name computed at runtime"
    if value == _BUILTINS_NS:
        return "reaches `__builtins__`, which escapes the component's scope"
    if value == _ANY_GLOBAL:
        return "reads the module's namespace by a name computed at runtime, `__builtins__` included"
    if value.endswith(".*"):
        module = value[:-2]
        if "." not in module and policy.has_banned_attrs(module):
            return f"reaches into a system module by name: an attribute of `{module}` named at runtime"
        return None
    if not _is_name(value):
        return None
    return policy.why(value)


def _spelling(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed tree
        return "?"
    return text if len(text) <= 60 else text[:57] + "..."


def scan(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, description) of each reference to something the deny list refuses, in source order.

    Bounded: past ``SCAN_STEPS`` work units or ``SCAN_SECONDS`` (code built to make alias
    following explode), or on nesting deeper than the interpreter's recursion allows, it raises
    ``ScanLimit`` -- the code is not judged, and a caller that needs a verdict refuses it."""
    budget = _Budget()
    try:
        return _scan(tree, budget)
    except RecursionError:
        raise ScanLimit("nesting deeper than the scan can follow") from None
    except MemoryError:
        raise ScanLimit("more memory than the scan may use") from None


def _scan(tree: ast.Module, budget: _Budget) -> list[tuple[int, str]]:
    collected = _Collector(tree)
    resolver = _Resolver(collected, budget)
    names = _Names(tree, budget)
    issues: list[tuple[int, str]] = list(collected.imports)
    for node in _expressions(tree):
        if len(issues) >= _MAX_FINDINGS:
            break
        budget.spend()
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in policy.DUNDER_ESCAPES:
            issues.append((line, f"access to `{node.attr}` ({policy.DUNDER_ESCAPES[node.attr]})"))
            continue
        if isinstance(node, ast.Name) and node.id == "__builtins__":
            issues.append((line, "access to `__builtins__` (escapes the component's scope)"))
            continue
        scope = collected.scope_of.get(id(node))
        if isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load) and scope:
            issues.extend(_import_path_store(node, resolver, scope))
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load) or id(node) in collected.exempt:
            continue
        if scope is None:
            continue
        values = resolver.resolve(node, scope)
        called = id(node) in collected.call_funcs
        if isinstance(node, ast.Call):
            issues.extend(_patching(node, resolver, scope))
            issues.extend(_code_files(node, resolver, scope, collected, names))
            issues.extend(_reflection(node, resolver, scope))
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _LOOKUP_METHODS and node.args:
                issues.extend(_computed_lookup(node, func.value, node.args[0], resolver, scope))
            if (
                "builtins.globals" in resolver.resolve(node.func, scope)
                and id(node.func) not in collected.exempt
                and not _defines_only(node, names)
            ):
                issues.append(
                    (line, f"call to `{_spelling(node)}` (reaches the module's namespace, `__builtins__` included)")
                )
        elif not called:
            issues.extend(_reflection_as_value(node, values))
        if isinstance(node, ast.Subscript):
            issues.extend(_computed_lookup(node, node.value, node.slice, resolver, scope))
        for value in sorted(values):
            top = value.split(".")[0]
            if top in collected.imported and (isinstance(node, ast.Name) or not called):
                continue  # the module's import is the finding (subprocess.PIPE is no second one)
            why = _refusal(value)
            if why is None:
                continue
            spelt = _spelling(node)
            verb = "call to" if called else "reference to"
            if spelt == value or not _is_name(value):
                issues.append((line, f"{verb} `{spelt}` ({why})"))
            else:
                issues.append((line, f"{verb} `{spelt}`, which is `{value}` ({why})"))
    return sorted(dict.fromkeys(issues), key=lambda i: i[0])


_COMPUTED = "reflection by a name computed at runtime: what it reaches cannot be judged"


def _reflection(node: ast.Call, resolver: _Resolver, scope: Scope) -> Iterator[tuple[int, str]]:
    """A reflective call (``policy.REFLECTION``, or ``x.__getattribute__``) judged by its name
    argument: spelt out in the code, it is judged as that name (a frame's ``f_locals``, an
    ``attrgetter("system")``); computed at runtime, it is refused -- except an attribute of the
    method's own ``self``, which reaches nothing ``self.<name>`` would not."""
    funcs = resolver.resolve(node.func, scope)
    args = node.args
    unpacked = any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in node.keywords)
    kinds = {policy.REFLECTION[f] for f in funcs if f in policy.REFLECTION}
    method = isinstance(node.func, ast.Attribute) and node.func.attr in policy.REFLECTION_METHODS
    if method:
        kinds.add("attr")
    if not kinds:
        return
    spelt = _spelling(node)
    if "attr" in kinds:
        if method and len(args) == 1:  # os.__getattribute__(name)
            obj, name = node.func.value, args[0]  # type: ignore[union-attr]
        else:
            obj, name = (args[0], args[1]) if len(args) >= 2 else (None, None)
        texts = None if unpacked else resolver.texts(name, scope)
        if texts is None and not (obj is not None and not unpacked and resolver.is_self(obj, scope)):
            yield node.lineno, f"call to `{spelt}` ({_COMPUTED})"
        for text in sorted(texts or ()):
            if text in policy.DUNDER_ESCAPES:
                yield node.lineno, f"call to `{spelt}`, which reads `{text}` ({policy.DUNDER_ESCAPES[text]})"
    if "names" in kinds:
        given = args[:1] if "operator.methodcaller" in funcs else args
        sets = [resolver.texts(a, scope) for a in given]
        if unpacked or not sets or any(t is None for t in sets):
            yield node.lineno, f"call to `{spelt}` ({_COMPUTED})"
        else:
            parts = sorted({p for t in sets for text in t or () for p in text.split(".")})
            why = next(((p, w) for p in parts if (w := policy.refused_attribute(p))), None)
            if why:
                part, (entry, reason) = why
                named = f"`{part}`" if entry == part else f"`{part}` (as in `{entry}`)"
                yield node.lineno, f"call to `{spelt}`, which reaches {named} ({reason})"
    if "object" in kinds and (unpacked or not args or resolver.texts(args[0], scope) is None):
        yield node.lineno, f"call to `{spelt}` ({_COMPUTED})"


def _reflection_as_value(node: ast.AST, values: frozenset[str]) -> Iterator[tuple[int, str]]:
    """A reflective function referenced without being called (``map(getattr, ...)``, ``f =
    getattr``, ``partial(getattr, os)``, ``[attrgetter]``): where it is called, and with what
    name, is out of the scan's sight."""
    line = getattr(node, "lineno", 0)
    method = isinstance(node, ast.Attribute) and node.attr in policy.REFLECTION_METHODS
    if method or any(v in policy.REFLECTION for v in values):
        yield line, f"reference to `{_spelling(node)}` used as a value (passed, stored or aliased: {_COMPUTED})"


def _computed_lookup(
    node: ast.AST, base: ast.AST, key: ast.AST | None, resolver: _Resolver, scope: Scope
) -> Iterator[tuple[int, str]]:
    """A module, a namespace or ``sys.modules`` read by a key computed at runtime (``vars(m)[name]``,
    ``sys.modules[name]``): reflection as much as ``getattr(m, name)`` is."""
    if resolver.texts(key, scope) is not None:
        return
    bases = resolver.resolve(base, scope)
    spaces = any(b == "sys.modules" or b == _BUILTINS_NS or b.startswith("ns:") for b in bases)
    # vars(x) / x.__dict__ of any object but self: its attributes by a computed name, as getattr does.
    owner = (
        base.args[0]
        if isinstance(base, ast.Call) and base.args and "builtins.vars" in resolver.resolve(base.func, scope)
        else base.value
        if isinstance(base, ast.Attribute) and base.attr == "__dict__"
        else None
    )
    if spaces or (owner is not None and not resolver.is_self(owner, scope)):
        yield getattr(node, "lineno", 0), f"lookup `{_spelling(node)}` ({_COMPUTED})"


def _patching(node: ast.Call, resolver: _Resolver, scope: Scope) -> Iterator[tuple[int, str]]:
    """setattr/delattr on a module with refused attributes: patching the interpreter."""
    funcs = resolver.resolve(node.func, scope)
    if not (funcs & {"builtins.setattr", "builtins.delattr"}) or not node.args:
        return
    for value in resolver.resolve(node.args[0], scope):
        if _is_name(value) and "." not in value and policy.has_banned_attrs(value):
            yield node.lineno, f"call to `{_spelling(node.func)}` on `{value}` (patches a system module)"


def _defines_only(call: ast.Call, names: _Names) -> bool:
    """Whether ``globals()`` only *defines* names: ``globals().update(...)``, or bound to a name
    that is only ever updated or assigned into (``g = globals(); g.update(local)``, as lfx's own
    SearXNG tool does).  Any read through it -- ``g["__builtins__"]``, ``g.get(k)``, passing ``g``
    on -- reaches ``__builtins__`` and is a finding, as Langflow's scan makes every ``globals()``."""
    parents = names.parents()

    def writes_into(node: ast.AST) -> bool:
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr == "update":
            grand = parents.get(id(parent))
            return isinstance(grand, ast.Call) and grand.func is parent
        return isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store) and parent.value is node

    if writes_into(call):
        return True
    parent = parents.get(id(call))
    if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1):
        return False
    target = parent.targets[0]
    if not isinstance(target, ast.Name):
        return False
    # Every use of that name anywhere (a nested function reading it counts too): writes only.
    return all(isinstance(n.ctx, ast.Store) or writes_into(n) for n in names.uses(target.id))


class _Names:
    """Every ``Name`` node of the tree by its identifier, indexed once (not a walk of the whole
    tree per question: hostile code asks it thousands of times)."""

    def __init__(self, tree: ast.AST, budget: _Budget) -> None:
        self.tree = tree
        self.budget = budget
        self.index: dict[str, list[ast.Name]] | None = None
        self._parents: dict[int, ast.AST] | None = None
        self.code_names: dict[tuple[int, ...], list[str]] = {}

    def parents(self) -> dict[int, ast.AST]:
        """Each node's parent, by the child's id (built on the first ``globals()``, not for every scan)."""
        if self._parents is None:
            self._parents = {id(c): p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}
            self.budget.spend(len(self._parents))
        return self._parents

    def uses(self, name: str) -> list[ast.Name]:
        if self.index is None:
            self.index = {}
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Name):
                    self.index.setdefault(node.id, []).append(node)
            self.budget.spend(sum(len(v) for v in self.index.values()))
        return self.index.get(name, [])


def _import_path_store(
    node: ast.Attribute | ast.Subscript, resolver: _Resolver, scope: Scope
) -> Iterator[tuple[int, str]]:
    """``sys.path = [...]``, ``sys.path[0] = d``, ``sys.path += [d]``: the import path, changed."""
    base = node.value
    if isinstance(node, ast.Attribute):
        values = {f"{v}.{node.attr}" for v in resolver.resolve(base, scope) if _is_name(v)}
    else:
        values = set(resolver.resolve(base, scope))
    for value in sorted(values & set(policy.IMPORT_PATH)):
        yield node.lineno, f"assignment to `{_spelling(node)}` ({policy.IMPORT_PATH[value]})"


_FILE_WRITERS = frozenset(
    {"builtins.open", "io.open", "os.open", "codecs.open", "shutil.copy", "shutil.copyfile", "shutil.copy2",
     "shutil.move", "os.rename", "os.replace", "os.link", "os.symlink"}
)  # fmt: skip
_PATH_WRITERS = frozenset({"write_bytes", "write_text", "touch", "symlink_to", "hardlink_to", "rename", "replace"})


def _code_names(node: ast.AST, collected: _Collector, names: _Names, depth: int = 0) -> list[str]:
    """File names in ``node`` (constants, f-string tails, names bound to them) that a module
    or a native library would have: ``"evil.so"``, ``f"{d}/mod.py"``, ``name`` = ``"x.pyd"``.
    Remembered per node and depth: a name bound a thousand times, read by a thousand writes,
    is followed once."""
    key = (id(node), depth)
    if key in names.code_names:
        return names.code_names[key]
    names.code_names[key] = []
    found: list[str] = []
    for sub in ast.walk(node):
        names.budget.spend()
        text = None
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
        elif isinstance(sub, ast.JoinedStr) and sub.values:
            last = sub.values[-1]
            text = last.value if isinstance(last, ast.Constant) and isinstance(last.value, str) else None
        elif isinstance(sub, ast.Name) and depth < 2:
            scope = collected.scope_of.get(id(sub))
            while scope is not None:
                if sub.id in scope.bindings:
                    found += [n for n in _bound_code_names(scope, sub.id, collected, names, depth) if n not in found]
                    break
                scope = scope.parent
        if (text and text.strip().lower().endswith(policy.CODE_SUFFIXES)) or (text and ".so." in text.lower()):
            found.append(text.strip())
    names.code_names[key] = found
    return found


def _bound_code_names(scope: Scope, name: str, collected: _Collector, names: _Names, depth: int) -> list[str]:
    """``_code_names`` of everything ``name`` is bound to in ``scope``, once per (scope, name)."""
    key = (id(scope), hash(name), depth)
    if key not in names.code_names:
        names.code_names[key] = []
        found: list[str] = []
        for source in scope.bindings[name]:
            if source is not None:
                found += [n for n in _code_names(source[0], collected, names, depth + 1) if n not in found]
        names.code_names[key] = found
    return names.code_names[key]


def _code_files(
    node: ast.Call, resolver: _Resolver, scope: Scope, collected: _Collector, names: _Names
) -> Iterator[tuple[int, str]]:
    """Writing a file named like a module or a native library: the way code the component wrote
    gets imported or loaded (in the sandbox its scratch space is noexec; in Langflow it is not)."""
    funcs = resolver.resolve(node.func, scope)
    target: list[ast.AST] = []
    if funcs & _FILE_WRITERS:
        mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
        flags = node.args[1] if "os.open" in funcs and len(node.args) > 1 else None
        reading = (
            "os.open" not in funcs
            and funcs & {"builtins.open", "io.open", "codecs.open"}
            and (mode is None or (isinstance(mode, ast.Constant) and not set(str(mode.value)) & set("wax+")))
        )
        if "os.open" in funcs and isinstance(flags, ast.Attribute) and flags.attr == "O_RDONLY":
            reading = True
        if not reading:
            target = [*node.args, *(k.value for k in node.keywords)]
    elif isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_WRITERS:
        target = [node.func.value, *node.args]
    for expr in target:
        for name in _code_names(expr, collected, names):
            yield (
                node.lineno,
                f"writes `{name[-60:]}`, a file named like a module or a native library (loading code it wrote)",
            )
            return


def _expressions(tree: ast.AST) -> Iterator[ast.AST]:
    """Every Name, Attribute, Subscript and Call, iteratively (deep code must not recurse here)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))
