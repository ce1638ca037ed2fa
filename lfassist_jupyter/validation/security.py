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

    def __init__(self, collected: _Collector) -> None:
        self.c = collected
        self.memo: dict[int, frozenset[str]] = {}
        self.busy: set[int] = set()
        self.param_sources: dict[int, dict[str, list[Source]]] = {}
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

    def lookup(self, name: str, scope: Scope) -> frozenset[str]:
        start = scope
        while scope is not None:
            if name in scope.globals:
                scope = scope.module()
            if name in scope.bindings and (scope is start or scope.kind != "class"):
                out: set[str] = set()
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
            return frozenset()
        self.busy.add(key)
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
            for source in self.c.attrs.get(node.attr, []):  # self.m = os ... self.m.system
                out |= self.resolve(*source)
            return out
        if isinstance(node, ast.Subscript):
            return self._item(self.resolve(node.value, scope), _const(node.slice), scope)
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
        if target is not None:
            attr = _const(target[1])
            for value in self.resolve(target[0], scope):
                if _is_name(value):
                    out.add(f"{value}.{attr}" if attr else f"{value}.*")
        if "builtins.vars" in funcs and args:
            out |= {f"ns:{v}" for v in self.resolve(args[0], scope) if _is_name(v)}
        if "builtins.globals" in funcs:
            out.add("ns:@module")
        if funcs & {"builtins.__import__", "importlib.import_module"} and args:
            name = _const(args[0])
            out.add(name.split(".")[0] if name and "builtins.__import__" in funcs else name or _ANY_MODULE)
        if any(f in funcs for f in (f"builtins.{p}" for p in _PASSTHROUGH)):
            out |= self._union([*args, *(k.value for k in node.keywords)], scope)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _LOOKUP_METHODS | _VIEW_METHODS:
            bases = self.resolve(node.func.value, scope)
            if node.func.attr in _LOOKUP_METHODS:
                out |= self._item(bases, _const(args[0]) if args else None, scope)
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
    """(line, description) of each reference to something the deny list refuses, in source order."""
    collected = _Collector(tree)
    resolver = _Resolver(collected)
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    issues: list[tuple[int, str]] = list(collected.imports)
    for node in _expressions(tree):
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
        if isinstance(node, ast.Call):
            issues.extend(_patching(node, resolver, scope))
            issues.extend(_code_files(node, resolver, scope, collected))
            if (
                "builtins.globals" in resolver.resolve(node.func, scope)
                and id(node.func) not in collected.exempt
                and not _defines_only(node, parents, collected)
            ):
                issues.append(
                    (line, f"call to `{_spelling(node)}` (reaches the module's namespace, `__builtins__` included)")
                )
        for value in sorted(values):
            top = value.split(".")[0]
            called = id(node) in collected.call_funcs
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


def _patching(node: ast.Call, resolver: _Resolver, scope: Scope) -> Iterator[tuple[int, str]]:
    """setattr/delattr on a module with refused attributes: patching the interpreter."""
    funcs = resolver.resolve(node.func, scope)
    if not (funcs & {"builtins.setattr", "builtins.delattr"}) or not node.args:
        return
    for value in resolver.resolve(node.args[0], scope):
        if _is_name(value) and "." not in value and policy.has_banned_attrs(value):
            yield node.lineno, f"call to `{_spelling(node.func)}` on `{value}` (patches a system module)"


def _defines_only(call: ast.Call, parents: dict[int, ast.AST], collected: _Collector) -> bool:
    """Whether ``globals()`` only *defines* names: ``globals().update(...)``, or bound to a name
    that is only ever updated or assigned into (``g = globals(); g.update(local)``, as lfx's own
    SearXNG tool does).  Any read through it -- ``g["__builtins__"]``, ``g.get(k)``, passing ``g``
    on -- reaches ``__builtins__`` and is a finding, as Langflow's scan makes every ``globals()``."""

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
    root: ast.AST = call
    while id(root) in parents:
        root = parents[id(root)]
    # Every use of that name anywhere (a nested function reading it counts too): writes only.
    uses = [n for n in ast.walk(root) if isinstance(n, ast.Name) and n.id == target.id]
    return all(isinstance(n.ctx, ast.Store) or writes_into(n) for n in uses)


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


def _code_names(node: ast.AST, collected: _Collector, depth: int = 0) -> Iterator[str]:
    """File names in ``node`` (constants, f-string tails, names bound to them) that a module
    or a native library would have: ``"evil.so"``, ``f"{d}/mod.py"``, ``name`` = ``"x.pyd"``."""
    for sub in ast.walk(node):
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
                    for source in scope.bindings[sub.id]:
                        if source is not None:
                            yield from _code_names(source[0], collected, depth + 1)
                    break
                scope = scope.parent
        if (text and text.strip().lower().endswith(policy.CODE_SUFFIXES)) or (text and ".so." in text.lower()):
            yield text.strip()


def _code_files(node: ast.Call, resolver: _Resolver, scope: Scope, collected: _Collector) -> Iterator[tuple[int, str]]:
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
        for name in _code_names(expr, collected):
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
