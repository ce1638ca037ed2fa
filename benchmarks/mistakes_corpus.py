"""Component mistakes nobody here wrote: the held-out case set of the zero-call repair pass.

The cases are not picked by hand.  Every component lfx ships (``lfx/components/**``) and every
third-party component of ``tests/validation/third_party`` that validates is a *seed*; each
mutation operator below walks every place of a seed where its mistake can be made and makes
it, the way a model gets a component wrong:

- ``names``: an import dropped (a stdlib module, a stdlib name, an lfx name); an lfx name
  imported from an lfx module that does not hold it (a parent package, a sibling module, a
  misspelt module); one ``self.<input>`` read misspelt by one edit;
- ``keywords``: an input keyword spelt as other libraries spell it (``choices=``, ``default=``,
  ``help=``, ``label=``, ``min_value=``/``max_value=``...); an input written with the class of a
  sibling (same kind of value in lfx) that does not accept one of its keywords
  (``MessageTextInput(multiline=True)``); a keyword one edit off;
- ``types``: an output method returning the bare value where lfx's type is declared (a dict
  where ``Data`` is, a list of rows where a ``DataFrame`` is, text where ``Message`` is), or a
  list of rows put in ``Data``;
- ``collisions``: an output named like an input; an input named like an attribute of lfx's
  ``Component`` (with every ``self.<input>`` read).

Each mutant is labelled **by construction** from lfx's facts, never from the repair pass:
``fixable`` when exactly one fix exists (the name has one home in lfx or the stdlib, the
misspelling is one edit from exactly one declared name, exactly one sibling class takes every
keyword given, the value's shape is known), ``ambiguous`` when two or more do (the name lives
in two places, the misspelling is one edit from two names, two sibling classes take the
keywords).  Sites whose fix is unknown (an aliased import, a third-party package, a value of
unknown shape) are not made into cases.  The recorded failed first replies (the demo script's)
join the set with the label a person gives them.

Each mutant is then validated by the real sandbox, and only those that fail validation are
cases.  A fixed hash of the case id puts it in the ``dev`` half (the rules are developed on it)
or the ``held`` half (only measured): ``split_of``.  The set is regenerated deterministically
from the installed lfx and this file; ``benchmarks/data/mistakes.json`` stores its manifest
(ids, labels, halves, the error each mutant failed with, a hash of each mutant's code), so a
drift in lfx or in the generator shows up as a mismatch instead of silently changing the set.

Usage (the venv's python)::

    python benchmarks/mistakes_corpus.py build      # regenerate, validate, write the manifest
    python benchmarks/mistakes_corpus.py measure    # zero-call rates per half (make bench shows held)
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "benchmarks" / "data" / "mistakes.json"
THIRD_PARTY = ROOT / "tests" / "validation" / "third_party"
GENERATOR_VERSION = 1

PER_SITE_KIND = 2
"""Mutants kept per (seed, operator, label): the first ones in hash order, so a seed with many
inputs does not swamp the set."""

MECHANISMS = {
    "drop_import": "names",
    "wrong_module": "names",
    "self_typo": "names",
    "keyword_spelling": "keywords",
    "keyword_sibling": "keywords",
    "keyword_on_sibling": "keywords",
    "keyword_typo": "keywords",
    "wrong_shape": "types",
    "output_like_input": "collisions",
    "input_like_attribute": "collisions",
    "recorded": "recorded",
}

# How other libraries spell what lfx calls these (gradio, streamlit, click, argparse, ipywidgets).
FOREIGN_SPELLINGS = {
    "options": ("choices",),
    "value": ("default",),
    "info": ("description", "help", "tooltip"),
    "display_name": ("label",),
}
FOREIGN_BOUNDS = (("min_value", "max_value"), ("minimum", "maximum"), ("min", "max"))

# Standard-library modules whose import has side effects (opens a browser, prints, starts Tk):
# never imported by the fact finder.
_STDLIB_SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3", "pydoc_data"}


@dataclass
class Case:
    id: str
    seed: str
    op: str
    label: str  # "fixable" | "ambiguous"
    note: str  # the certain fix, or the candidates
    code: str

    @property
    def mechanism(self) -> str:
        return MECHANISMS[self.op]

    @property
    def split(self) -> str:
        return split_of(self.id)


def split_of(case_id: str) -> str:
    """The fixed half a case belongs to: ``dev`` (rules are developed on it) or ``held``."""
    return "dev" if hashlib.sha256(case_id.encode()).digest()[0] % 2 == 0 else "held"


def _rank(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _sha(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:16]


# -- the seeds ----------------------------------------------------------------------------


def _lfx_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("lfx")  # finds the package without importing it
    if spec is None or spec.origin is None:
        raise SystemExit("lfx is not installed in this environment")
    return Path(spec.origin).parent


def seed_files() -> dict[str, Path]:
    """Every lfx built-in component module and every third-party component, by a stable name."""
    root = _lfx_root()
    seeds = {
        f"lfx:{p.relative_to(root).as_posix()}": p
        for p in sorted((root / "components").rglob("*.py"))
        if not p.name.startswith("_")
    }
    seeds |= {f"third_party:{p.name}": p for p in sorted(THIRD_PARTY.glob("*.py")) if p.name != "conftest.py"}
    return seeds


# -- facts about lfx and the stdlib, for the labels (ground truth, in a separate process) ------

_FACTS_SCRIPT = r"""
import ast, importlib, json, pathlib, sys, types, warnings, io, contextlib
warnings.simplefilter("ignore")
want = json.loads(sys.stdin.read())
lfx_wanted = set(want["lfx_names"])
out = {}

# lfx: where each name is defined (statically), then which distinct objects those are (imported).
import lfx
root = pathlib.Path(lfx.__file__).parent
modules, defines = set(), {}
for f in root.rglob("*.py"):
    parts = list(f.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if any(p.startswith("_") for p in parts):
        continue
    mod = ".".join(parts)
    modules.add(mod)
    try:
        tree = ast.parse(f.read_bytes())
    except SyntaxError:
        continue
    for n in tree.body:
        names = []
        if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [n.name]
        elif isinstance(n, ast.Assign):
            names = [t.id for t in n.targets if isinstance(t, ast.Name)]
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            names = [n.target.id]
        for name in names:
            if name in lfx_wanted:
                defines.setdefault(name, set()).add(mod)
out["lfx_modules"] = sorted(modules)

def load(mod):
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return importlib.import_module(mod)
    except BaseException:
        return None

groups = {}
for name in want["lfx_names"]:
    objs = []
    for mod in sorted(defines.get(name, ())):
        m = load(mod)
        if m is not None and hasattr(m, name):
            obj = getattr(m, name)
            if not any(o is obj for o in objs):
                objs.append(obj)
    groups[name] = len(objs)
out["lfx_groups"] = groups

# Which candidate wrong modules exist and lack the names.
lacking = {}
for mod, names in want["wrong_module_candidates"]:
    m = load(mod) if mod in modules else None
    lacking[mod + ":" + ",".join(names)] = m is not None and not any(hasattr(m, n) for n in names)
out["lacking"] = lacking

# The stdlib: which public objects carry each wanted name, over every stdlib module.
skip = set(want["stdlib_skip"])
std = {}
for mod in sorted(sys.stdlib_module_names):
    if mod.startswith("_") or mod in skip:
        continue
    load(mod)
for mod_name, m in sorted(sys.modules.items()):
    top = mod_name.split(".")[0]
    private = any(p.startswith("_") for p in mod_name.split("."))
    if m is None or top not in sys.stdlib_module_names or top in skip or private:
        continue
    public = getattr(m, "__all__", None)
    for name in want["stdlib_names"]:
        if public is not None and name not in public:
            continue
        obj = getattr(m, name, None)
        if obj is None or isinstance(obj, types.ModuleType):
            continue
        std.setdefault(name, [])
        if not any(o is obj for o in std[name]):
            std[name].append(obj)
out["stdlib_groups"] = {
    n: len(std.get(n, [])) + (n in sys.stdlib_module_names) for n in want["stdlib_names"]
}
out["stdlib_modules"] = sorted(sys.stdlib_module_names)

# Input classes: the keywords each accepts, lfx's kind of value, and whether it is a secret.
import lfx.io as lio
from lfx.inputs.input_mixin import BaseInputMixin
from lfx.custom.custom_component.component import Component
classes = {}
for name in sorted(getattr(lio, "__all__", [])):
    cls = getattr(lio, name, None)
    if not isinstance(cls, type) or not issubclass(cls, BaseInputMixin):
        continue
    fields = sorted({a for k, f in cls.model_fields.items() for a in (k, f.alias) if a and not a.startswith("_")})
    ft = cls.model_fields.get("field_type")
    pw = cls.model_fields.get("password")
    kind = getattr(ft.default, "value", ft.default) if ft is not None else None
    # The class's own switches (fields the base input does not have, True by default on it:
    # MultilineInput's multiline, MultiselectInput's is_list), the keywords a model reaches for;
    # not the tracing flags the prompt's reference leaves out as noise.
    own = set(cls.model_fields) - set(BaseInputMixin.model_fields) - set(want["input_noise"])
    flags = sorted(k for k in own if cls.model_fields[k].default is True and not k.startswith("_"))
    classes[name] = {"fields": fields, "family": [str(kind), bool(pw is not None and pw.default)], "flags": flags}
out["inputs"] = classes
instance = Component()
out["component_attrs"] = sorted(
    {a for a in dir(Component) if not a.startswith("_") and not callable(getattr(Component, a, None))}
    | {a for a in vars(instance) if not a.startswith("_")}
)
out["component_names"] = sorted(a for a in dir(Component) if not a.startswith("_"))
print(json.dumps(out))
"""


def gather_facts(seeds: dict[str, Path], python: str = sys.executable) -> dict[str, Any]:
    """lfx's and the stdlib's facts the labels need, found in a separate process (the kernel
    side never imports lfx)."""
    lfx_names: set[str] = set()
    stdlib_names: set[str] = set()
    candidates: set[tuple[str, tuple[str, ...]]] = set()
    for path in seeds.values():
        tree = _parse(path.read_text(encoding="utf-8"))
        if tree is None:
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                top = stmt.module.split(".")[0]
                names = tuple(a.name for a in stmt.names if a.name != "*")
                if top in ("lfx", "langflow"):
                    lfx_names.update(names)
                    module = "lfx" + stmt.module[len(top) :]
                    for wrong in _wrong_module_candidates(module):
                        candidates.add((wrong, names))
                elif top in sys.stdlib_module_names:
                    stdlib_names.update(names)
    want = {
        "lfx_names": sorted(lfx_names),
        "stdlib_names": sorted(stdlib_names),
        "stdlib_skip": sorted(_STDLIB_SKIP),
        "wrong_module_candidates": sorted([m, list(n)] for m, n in candidates),
        "input_noise": sorted(_input_noise()),
    }
    out = subprocess.run(
        [python, "-c", _FACTS_SCRIPT], input=json.dumps(want), capture_output=True, text=True, timeout=900
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _input_noise() -> set[str]:
    """The input fields the prompt's reference leaves out (``_reference._INPUT_NOISE``)."""
    source = (ROOT / "lfassist_jupyter" / "sandbox" / "worker" / "_reference.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_INPUT_NOISE" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise RuntimeError("_reference.py has no _INPUT_NOISE")


def _wrong_module_candidates(module: str) -> list[str]:
    """Where a model might look for a name of ``module``: its parent packages (``lfx.base``
    for ``lfx.base.x.y``), and a misspelt module (``lfx.schema.messages``)."""
    parts = module.split(".")
    parents = [".".join(parts[:i]) for i in range(len(parts) - 1, 1, -1)]
    return [*parents, module + "s"]


# -- text edits on a seed ------------------------------------------------------------------


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


class _Text:
    """The seed's text with ast positions (UTF-8 byte columns) turned into string offsets."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.starts = [0]
        for line in code.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.lines = code.splitlines(keepends=True)

    def offset(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode()[:col].decode(errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def replace(self, edits: list[tuple[int, int, str]]) -> str:
        code = self.code
        for start, end, new in sorted(edits, reverse=True):
            code = code[:start] + new + code[end:]
        return code


def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance (an adjacent swap is one edit)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _typos(word: str, key: str) -> list[str]:
    """One-edit misspellings of ``word`` a hand makes (a letter dropped, doubled, two swapped,
    an underscore lost), in an order fixed by ``key``."""
    out = set()
    for i in range(len(word)):
        out.add(word[:i] + word[i + 1 :])
        out.add(word[:i] + word[i] + word[i:])
        if i + 1 < len(word) and word[i] != word[i + 1]:
            out.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    ok = [t for t in out if t and t != word and t.isidentifier() and not t.startswith("_") and not t.endswith("_")]
    return sorted(ok, key=lambda t: _rank(f"{key}:{t}"))


def _func_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _kw(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _component_class(tree: ast.Module) -> ast.ClassDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in ("inputs", "outputs") for t in item.targets
                ):
                    return node
    return None


def _class_list(cls: ast.ClassDef, attr: str) -> list[ast.Call]:
    for item in cls.body:
        if (
            isinstance(item, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == attr for t in item.targets)
            and isinstance(item.value, ast.List)
        ):
            return [e for e in item.value.elts if isinstance(e, ast.Call)]
    return []


def _declared(cls: ast.ClassDef) -> tuple[dict[str, ast.Call], dict[str, ast.Call]]:
    inputs = {n: c for c in _class_list(cls, "inputs") if (n := _str(_kw(c, "name").value if _kw(c, "name") else None))}
    outputs = {
        n: c for c in _class_list(cls, "outputs") if (n := _str(_kw(c, "name").value if _kw(c, "name") else None))
    }
    return inputs, outputs


def _string_uses(tree: ast.AST, value: str) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == value)


def _name_loads(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _self_attrs(tree: ast.AST) -> list[ast.Attribute]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    ]


# -- the operators -------------------------------------------------------------------------

Site = tuple[str, str, str, str]
"""(site key, label, note, mutant code)"""


def _import_line(stmt: ast.ImportFrom | ast.Import, keep: list[ast.alias]) -> str:
    if not keep:
        return ""
    if isinstance(stmt, ast.Import):
        return ast.unparse(ast.Import(names=keep))
    return ast.unparse(ast.ImportFrom(module=stmt.module, names=keep, level=0))


def _remove_stmt(text: _Text, stmt: ast.stmt, replacement: str) -> tuple[int, int, str]:
    start, end = text.span(stmt)
    if not replacement and text.code[end : end + 1] == "\n":  # drop the whole line, newline included
        end += 1
    return start, end, replacement


def op_drop_import(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    text, used = _Text(code), _name_loads(tree)
    stdlib = set(facts["stdlib_modules"])
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname or "." in alias.name or alias.name not in stdlib or alias.name not in used:
                    continue
                keep = [a for a in stmt.names if a is not alias]
                mutant = text.replace([_remove_stmt(text, stmt, _import_line(stmt, keep))])
                yield alias.name, "fixable", f"import {alias.name} (a stdlib module)", mutant
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level and stmt.module != "__future__":
            top = stmt.module.split(".")[0]
            for alias in stmt.names:
                if alias.asname or alias.name == "*" or alias.name not in used:
                    continue
                if top in ("lfx", "langflow"):
                    groups = facts["lfx_groups"].get(alias.name, 0)
                    where = "lfx"
                elif top in stdlib:
                    groups = facts["stdlib_groups"].get(alias.name, 0)
                    where = "the stdlib"
                else:
                    continue
                if groups == 0:
                    continue
                label = "fixable" if groups == 1 else "ambiguous"
                note = f"from {stmt.module} import {alias.name}" + (
                    "" if groups == 1 else f" ({groups} different `{alias.name}` in {where})"
                )
                keep = [a for a in stmt.names if a is not alias]
                mutant = text.replace([_remove_stmt(text, stmt, _import_line(stmt, keep))])
                yield f"{stmt.module}.{alias.name}", label, note, mutant


def op_wrong_module(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    text = _Text(code)
    for stmt in tree.body:
        if not (isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level):
            continue
        top = stmt.module.split(".")[0]
        if top not in ("lfx", "langflow") or any(a.name == "*" for a in stmt.names):
            continue
        names = [a.name for a in stmt.names]
        module = "lfx" + stmt.module[len(top) :]
        groups = [facts["lfx_groups"].get(n, 0) for n in names]
        if 0 in groups:
            continue
        label = "fixable" if all(g == 1 for g in groups) else "ambiguous"
        for wrong in _wrong_module_candidates(module):
            if wrong in facts["lfx_modules"]:
                if not facts["lacking"].get(wrong + ":" + ",".join(names)):
                    continue  # the module holds one of the names (or does not import)
            elif wrong != module + "s":
                continue
            start, end = text.span(stmt)
            line = code[start:end]
            mutant = code[:start] + line.replace(stmt.module, wrong, 1) + code[end:]
            yield f"{stmt.module}->{wrong}", label, f"from {stmt.module} import {', '.join(names)}", mutant


def op_self_typo(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    cls = _component_class(tree)
    if cls is None:
        return
    inputs, outputs = _declared(cls)
    declared = set(inputs) | set(outputs)
    taken = set(facts["component_names"]) | {n.attr for n in _self_attrs(tree)} | declared
    taken |= {n.name for n in ast.walk(cls) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    taken |= {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    text = _Text(code)
    reads = [a for a in _self_attrs(cls) if isinstance(a.ctx, ast.Load) and a.attr in inputs]
    for attr in reads:
        key = f"{attr.attr}@{attr.lineno}:{attr.col_offset}"
        for typo in _typos(attr.attr, key):
            if typo in taken:
                continue
            near = sorted(n for n in declared if _osa(typo, n) == 1)
            if near == [attr.attr]:
                label = "fixable"
            elif len(near) >= 2 and attr.attr in near:
                label = "ambiguous"
            else:
                continue
            start, end = text.span(attr)
            mutant = code[:start] + code[start:end].replace(attr.attr, typo) + code[end:]
            yield f"{key}->{typo}", label, f"self.{attr.attr}" + ("" if label == "fixable" else f" or {near}"), mutant
            break
    # Deliberately ambiguous: a misspelling one edit from two declared names, where a pair allows it.
    for a, b in itertools.permutations(sorted(declared), 2):
        if _osa(a, b) > 2:
            continue
        both = [t for t in _typos(a, f"{a}|{b}") if _osa(t, b) == 1 and t not in taken]
        read = next((r for r in reads if r.attr == a), None)
        if both and read is not None:
            start, end = text.span(read)
            mutant = code[:start] + code[start:end].replace(a, both[0]) + code[end:]
            yield f"{a}|{b}->{both[0]}", "ambiguous", f"self.{a} or self.{b}", mutant


def _input_calls(tree: ast.Module, facts: dict) -> list[ast.Call]:
    cls = _component_class(tree)
    if cls is None:
        return []
    return [c for c in _class_list(cls, "inputs") if _func_name(c) in facts["inputs"]]


def op_keyword_spelling(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    text = _Text(code)
    for call in _input_calls(tree, facts):
        kind = _func_name(call)
        fields = set(facts["inputs"][kind]["fields"])
        present = {k.arg for k in call.keywords}
        name = _str(_kw(call, "name").value) if _kw(call, "name") else "?"
        for kw in call.keywords:
            if kw.arg in FOREIGN_SPELLINGS:
                for wrong in sorted(FOREIGN_SPELLINGS[kw.arg], key=lambda w: _rank(f"{name}:{w}"))[:1]:
                    if wrong in fields or wrong in present:
                        continue
                    start = text.offset(kw.lineno, kw.col_offset)
                    mutant = code[:start] + wrong + code[start + len(kw.arg) :]
                    yield f"{name}.{kw.arg}->{wrong}", "fixable", f"{kind}({kw.arg}=...)", mutant
            elif kw.arg == "range_spec" and isinstance(kw.value, ast.Call) and _func_name(kw.value) == "RangeSpec":
                bounds = {k.arg: k.value for k in kw.value.keywords}
                if not {"min", "max"} <= set(bounds) or set(bounds) - {"min", "max", "step", "step_type"}:
                    continue
                low, high = sorted(FOREIGN_BOUNDS, key=lambda w: _rank(f"{name}:{w}"))[0]
                if low in fields or high in fields:
                    continue
                parts = [f"{low}={ast.unparse(bounds['min'])}", f"{high}={ast.unparse(bounds['max'])}"]
                if "step" in bounds:
                    parts.append(f"step={ast.unparse(bounds['step'])}")
                start, end = text.offset(kw.lineno, kw.col_offset), text.span(kw.value)[1]
                mutant = code[:start] + ", ".join(parts) + code[end:]
                yield f"{name}.range_spec->{low}", "fixable", f"{kind}(range_spec=RangeSpec(...))", mutant


def _family(facts: dict, kind: str) -> tuple:
    return tuple(facts["inputs"][kind]["family"])


def op_keyword_sibling(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    text = _Text(code)
    for call in _input_calls(tree, facts):
        kind = _func_name(call)
        given = {k.arg for k in call.keywords if k.arg}
        family = [c for c in facts["inputs"] if _family(facts, c) == _family(facts, kind)]
        takes = sorted(c for c in family if given <= set(facts["inputs"][c]["fields"]))
        wrong = sorted(
            (c for c in family if c != kind and not given <= set(facts["inputs"][c]["fields"])),
            key=lambda c: _rank(f"{kind}:{c}:{call.lineno}"),
        )
        if not wrong or kind not in takes:
            continue
        other = wrong[0]
        label = "fixable" if takes == [kind] else "ambiguous"
        start, end = text.span(call.func)
        edits = [(start, end, code[start:end].replace(kind, other))]
        if other not in _bound(tree):
            edits += _import_also(text, tree, kind, other)
        unknown = sorted(given - set(facts["inputs"][other]["fields"]))
        note = f"{other} -> {kind} ({', '.join(unknown)})" + ("" if label == "fixable" else f"; candidates {takes}")
        yield f"{kind}@{call.lineno}->{other}", label, note, text.replace(edits)


def op_keyword_on_sibling(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    """``MultilineInput(...)`` written ``MessageTextInput(..., multiline=True)``: a sibling class
    (same kind of value) with the keyword that makes the written class what it is (a flag lfx
    sets True by default on it) and the sibling does not accept."""
    text = _Text(code)
    for call in _input_calls(tree, facts):
        kind = _func_name(call)
        given = {k.arg for k in call.keywords if k.arg}
        family = [c for c in facts["inputs"] if _family(facts, c) == _family(facts, kind)]
        for other in sorted(family, key=lambda c: _rank(f"{kind}:{c}:{call.lineno}")):
            fields = set(facts["inputs"][other]["fields"])
            flags = [f for f in facts["inputs"][kind]["flags"] if f not in fields and f not in given]
            if other == kind or not flags or not given <= fields:
                continue
            flag = flags[0]
            takes = sorted(c for c in family if given | {flag} <= set(facts["inputs"][c]["fields"]))
            if kind not in takes:
                continue
            label = "fixable" if takes == [kind] else "ambiguous"
            start, end = text.span(call.func)
            edits = [(start, end, code[start:end].replace(kind, other))]
            close = text.span(call)[1] - 1  # the closing parenthesis
            before = code[:close].rstrip()
            comma = "" if before.endswith((",", "(")) else ","
            edits.append((len(before), close, f"{comma} {flag}=True" if not before.endswith("(") else f"{flag}=True"))
            if other not in _bound(tree):
                edits += _import_also(text, tree, kind, other)
            note = f"{other}({flag}=True) -> {kind}" + ("" if label == "fixable" else f"; candidates {takes}")
            yield f"{kind}@{call.lineno}->{other}+{flag}", label, note, text.replace(edits)
            break


def _bound(tree: ast.Module) -> set[str]:
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return names


def _import_also(text: _Text, tree: ast.Module, kind: str, other: str) -> list[tuple[int, int, str]]:
    """Import ``other`` where ``kind`` is imported (a model that picks a class imports it)."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and any(a.name == kind and not a.asname for a in stmt.names):
            start, end = text.span(stmt)
            new = ast.unparse(ast.ImportFrom(module=stmt.module, names=[*stmt.names, ast.alias(other)], level=0))
            return [(start, end, new)]
    return []


def op_keyword_typo(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    text = _Text(code)
    for call in _input_calls(tree, facts):
        kind = _func_name(call)
        fields = set(facts["inputs"][kind]["fields"])
        present = {k.arg for k in call.keywords}
        for kw in call.keywords:
            if kw.arg is None or kw.arg == "name":
                continue
            key = f"{kind}@{call.lineno}.{kw.arg}"
            for typo in _typos(kw.arg, key):
                if typo in fields or typo in present:
                    continue
                near = sorted(f for f in fields if _osa(typo, f) == 1)
                label = "fixable" if near == [kw.arg] else "ambiguous" if kw.arg in near else None
                if label is None:
                    continue
                start = text.offset(kw.lineno, kw.col_offset)
                mutant = code[:start] + typo + code[start + len(kw.arg) :]
                yield f"{key}->{typo}", label, f"{kw.arg}=" + ("" if label == "fixable" else f" or {near}"), mutant
                break


def _annotation(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    ret = func.returns
    if isinstance(ret, ast.Name):
        return ret.id
    return _str(ret)


def _own_returns(func: ast.AST) -> list[ast.Return]:
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Return):
                found.append(child)
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                visit(child)

    visit(func)
    return found


def _shape(value: ast.AST, func: ast.AST) -> str | None:
    """The static shape of a value: "dict", "rows" (a list of dicts), "text", or None."""
    if isinstance(value, ast.Dict | ast.DictComp):
        return "dict"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        return "dict"
    if isinstance(value, ast.ListComp) and isinstance(value.elt, ast.Dict | ast.DictComp):
        return "rows"
    if isinstance(value, ast.List) and value.elts and all(isinstance(e, ast.Dict) for e in value.elts):
        return "rows"
    if isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return "text"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "str":
        return "text"
    if isinstance(value, ast.Name):
        assigned = [
            n.value
            for n in ast.walk(func)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
        ]
        shapes = {_shape(v, ast.Module(body=[], type_ignores=[])) for v in assigned}
        mutated = any(
            isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == value.id
            for n in ast.walk(func)
        )
        if len(shapes) == 1 and None not in shapes and not mutated:
            return shapes.pop()
    return None


_WRAPS = {
    ("Data", "data", "dict"),
    ("DataFrame", None, "rows"),
    ("DataFrame", "data", "rows"),
    ("Message", "text", "text"),
}


def op_wrong_shape(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    cls = _component_class(tree)
    if cls is None:
        return
    text = _Text(code)
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for out in _class_list(cls, "outputs"):
        method = methods.get(_str(_kw(out, "method").value) if _kw(out, "method") else "")
        if method is None or _annotation(method) not in ("Data", "DataFrame", "Message"):
            continue
        declared = _annotation(method)
        for ret in _own_returns(method):
            call = ret.value
            if not isinstance(call, ast.Call) or _func_name(call) != declared:
                continue
            if len(call.args) + len(call.keywords) != 1:
                continue
            keyword = call.keywords[0].arg if call.keywords else None
            inner = call.keywords[0].value if call.keywords else call.args[0]
            shape = _shape(inner, method)
            if (declared, keyword, shape) not in _WRAPS:
                continue
            start, end = text.span(call)
            bare = code[slice(*text.span(inner))]
            key = f"{method.name}@{ret.lineno}"
            yield f"{key}:bare", "fixable", f"{declared}(...) around the {shape}", code[:start] + bare + code[end:]
            if declared == "DataFrame":  # the list of rows put in Data, the output declared Data
                a_start, a_end = text.span(method.returns)  # type: ignore[arg-type]
                edits = [(start, end, f"Data(data={bare})"), (a_start, a_end, "Data")]
                mutant = text.replace(edits)
                if "Data" not in _bound(tree):
                    mutant = "from lfx.schema.data import Data\n" + mutant
                yield f"{key}:rows-in-data", "fixable", "DataFrame(rows), declared -> DataFrame", mutant


def op_output_like_input(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    cls = _component_class(tree)
    if cls is None:
        return
    inputs, outputs = _declared(cls)
    text = _Text(code)
    for out_name, out in outputs.items():
        if _string_uses(tree, out_name) != 1 or out_name in inputs:
            continue
        for in_name in sorted(inputs, key=lambda n: _rank(f"{out_name}:{n}"))[:1]:
            node = _kw(out, "name").value  # type: ignore[union-attr]
            start, end = text.span(node)
            quote = code[start]
            mutant = code[:start] + f"{quote}{in_name}{quote}" + code[end:]
            yield f"{out_name}->{in_name}", "fixable", f"output {out_name!r} renamed off input {in_name!r}", mutant


def op_input_like_attribute(code: str, tree: ast.Module, facts: dict) -> Iterator[Site]:
    cls = _component_class(tree)
    if cls is None:
        return
    inputs, outputs = _declared(cls)
    text = _Text(code)
    used = {a.attr for a in _self_attrs(tree)} | _name_loads(tree)
    attrs = [a for a in facts["component_attrs"] if a not in used and not _string_uses(tree, a) and a not in outputs]
    for in_name, call in inputs.items():
        if _string_uses(tree, in_name) != 1 or in_name in outputs:
            continue
        reads = [a for a in _self_attrs(tree) if a.attr == in_name]
        if not reads or any(not isinstance(a.ctx, ast.Load) for a in reads):
            continue
        for attr in sorted(attrs, key=lambda a: _rank(f"{in_name}:{a}"))[:1]:
            node = _kw(call, "name").value  # type: ignore[union-attr]
            start, end = text.span(node)
            quote = code[start]
            edits = [(start, end, f"{quote}{attr}{quote}")]
            for read in reads:
                r_start, r_end = text.span(read)
                edits.append((r_start, r_end, code[r_start:r_end].replace(in_name, attr)))
            yield f"{in_name}->{attr}", "fixable", f"input {attr!r} renamed (it was {in_name!r})", text.replace(edits)


OPERATORS: dict[str, Callable[[str, ast.Module, dict], Iterator[Site]]] = {
    "drop_import": op_drop_import,
    "wrong_module": op_wrong_module,
    "self_typo": op_self_typo,
    "keyword_spelling": op_keyword_spelling,
    "keyword_sibling": op_keyword_sibling,
    "keyword_on_sibling": op_keyword_on_sibling,
    "keyword_typo": op_keyword_typo,
    "wrong_shape": op_wrong_shape,
    "output_like_input": op_output_like_input,
    "input_like_attribute": op_input_like_attribute,
}


def mutants(seeds: dict[str, Path], facts: dict) -> list[Case]:
    """Every operator over every seed; per (seed, operator, label) the first ``PER_SITE_KIND``
    sites in hash order."""
    cases: list[Case] = []
    for seed, path in seeds.items():
        code = path.read_text(encoding="utf-8")
        tree = _parse(code)
        if tree is None:
            continue
        for op, operator in OPERATORS.items():
            found: dict[str, list[tuple[str, Case]]] = defaultdict(list)
            for key, label, note, mutant in operator(code, tree, facts):
                case = Case(id=f"{seed}|{op}|{key}", seed=seed, op=op, label=label, note=note, code=mutant)
                found[label].append((_rank(case.id), case))
            for ranked in found.values():
                ranked.sort(key=lambda rc: rc[0])
                kept = (c for _, c in ranked if c.code != code and _parse(c.code) is not None)
                cases += list(itertools.islice(kept, PER_SITE_KIND))
    return cases


def recorded_cases() -> list[Case]:
    """The failed first replies recorded in the repository (the demo script's), labelled by a
    person.  The eval suites hold requests, not replies: nothing to add from there."""
    sys.path.insert(0, str(ROOT))
    from lfassist_jupyter.core.component.extract import extract_component_code

    data = json.loads((ROOT / "notebooks" / "demo-script.json").read_text())
    cases = []
    for reply in data["replies"]:
        if reply["match"] == "You write Langflow custom components.*splits a text into words":
            code = extract_component_code(reply["reply"]) or ""
            note = "a list of words in Data: a table of what columns, or a dict under what key? (no certain fix)"
            cases.append(Case(id="recorded:demo-script|recorded|splitter", seed="recorded:demo-script", op="recorded",
                              label="ambiguous", note=note, code=code))  # fmt: skip
    return cases


# -- validation and the manifest ------------------------------------------------------------


def _validator():
    from lfassist_jupyter.sandbox.client import SandboxValidator

    validator = SandboxValidator()
    validator.start()
    return validator


def _validate(code: str, validator) -> Any:
    from lfassist_jupyter.sandbox.client import validate_component

    return validate_component(code, validator=validator, security="reject")


def pipeline_validate(code: str, validator) -> Any:
    """What the component pipeline does with an attempt (``ComponentPipeline._validate``): the
    static and security phases here, and when they pass, the sandbox's runtime and smoke phases."""
    from lfassist_jupyter.validation.static import validate_static

    report = validate_static(code)
    return validator.validate(code) if report.is_valid else report


def build(validator=None) -> dict:
    """Regenerate every mutant, keep those the sandbox refuses, and write the manifest."""
    own = validator is None
    validator = validator or _validator()
    try:
        t0 = time.perf_counter()
        seeds = seed_files()
        valid_seeds = {}
        for name, path in seeds.items():
            if _validate(path.read_text(encoding="utf-8"), validator).is_valid:
                valid_seeds[name] = path
        facts = gather_facts(valid_seeds)
        made = mutants(valid_seeds, facts) + recorded_cases()
        kept = []
        for case in made:
            report = _validate(case.code, validator)
            if report.is_valid:
                continue
            errors = [f for f in report.findings if f.severity == "error"]
            rules = sorted({f.rule or "" for f in errors})
            kept.append({"id": case.id, "label": case.label, "sha": _sha(case.code), "rules": rules})
        manifest = {
            "generator": GENERATOR_VERSION,
            "lfx_version": validator.info().get("lfx_version"),
            "seeds": sorted(valid_seeds),
            "mutants_made": len(made),
            "seconds": round(time.perf_counter() - t0),
            "cases": kept,
        }
        MANIFEST.parent.mkdir(parents=True, exist_ok=True)
        # One case a line: a rebuild shows in a diff as the cases that came and went.
        head = json.dumps({k: v for k, v in manifest.items() if k != "cases"}, indent=1)[:-2]
        lines = ",\n  ".join(json.dumps(c, separators=(",", ":")) for c in kept)
        MANIFEST.write_text(f'{head},\n "cases": [\n  {lines}\n ]\n}}\n')
        return manifest
    finally:
        if own:
            validator.close()


def load(split: str | None = None) -> list[tuple[Case, dict]]:
    """The manifest's cases with their code, regenerated; a case whose code no longer hashes the
    same (another lfx, another generator) raises: rebuild the manifest, and say so."""
    manifest = json.loads(MANIFEST.read_text())
    wanted = {c["id"]: c for c in manifest["cases"] if split is None or split_of(c["id"]) == split}
    seeds = {name: path for name, path in seed_files().items() if name in set(manifest["seeds"])}
    facts = gather_facts(seeds)
    made = {c.id: c for c in mutants(seeds, facts) + recorded_cases() if c.id in wanted}
    missing = sorted(set(wanted) - set(made))
    drift = sorted(i for i in made if _sha(made[i].code) != wanted[i]["sha"])
    if missing or drift:
        raise RuntimeError(
            f"the case set drifted from {MANIFEST.name} (lfx {manifest['lfx_version']}): {len(missing)} missing, "
            f"{len(drift)} changed, e.g. {(missing + drift)[:3]}; run `python benchmarks/mistakes_corpus.py build`"
        )
    return [(made[i], wanted[i]) for i in wanted]


# -- the measure ----------------------------------------------------------------------------


def measure(validator, split: str | None = None, cases: list[tuple[Case, dict]] | None = None) -> dict:
    """The zero-call repair pass on each case, as the component pipeline runs it on a failed
    attempt: repaired and validated (the request needs one generation call), or left to the
    model.  Per half, label and operator; an ambiguous case repaired is a guess."""
    from lfassist_jupyter.core.component.repair import repair_until_valid

    cases = cases if cases is not None else load(split)
    reference = validator.reference()
    rows = []
    for case, _entry in cases:
        report = pipeline_validate(case.code, validator)
        t0 = time.perf_counter()
        fixed = None
        if not report.is_valid:
            fixed = repair_until_valid(case.code, report, reference, lambda c: pipeline_validate(c, validator))
        rows.append(
            {
                "id": case.id,
                "split": case.split,
                "label": case.label,
                "mechanism": case.mechanism,
                "op": case.op,
                "first_valid": report.is_valid,
                "repaired": fixed is not None,
                "changes": fixed.changes if fixed else [],
                "ms": (time.perf_counter() - t0) * 1000,
            }
        )
    return {"rows": rows, "summary": summarize(rows)}


def summarize(rows: list[dict]) -> dict:
    """Per half: fixable cases repaired (validated with no second generation call), ambiguous
    cases repaired (guesses: they should go to the model), per mechanism and operator."""
    out: dict[str, Any] = {}
    for split in sorted({r["split"] for r in rows}):
        mine = [r for r in rows if r["split"] == split]
        fixable = [r for r in mine if r["label"] == "fixable"]
        ambiguous = [r for r in mine if r["label"] == "ambiguous"]
        per: dict[str, Counter] = {"mechanism": Counter(), "op": Counter()}
        done: dict[str, Counter] = {"mechanism": Counter(), "op": Counter()}
        for r in fixable:
            for key in per:
                per[key][r[key]] += 1
                done[key][r[key]] += r["repaired"]
        out[split] = {
            "fixable": len(fixable),
            "fixable_repaired": sum(r["repaired"] for r in fixable),
            "ambiguous": len(ambiguous),
            "ambiguous_repaired": sum(r["repaired"] for r in ambiguous),
            "valid_as_written": sum(r["first_valid"] for r in mine),
            **{f"per_{key}": {k: f"{done[key][k]}/{n}" for k, n in sorted(per[key].items())} for key in per},
            "unrepaired_fixable": sorted(r["id"] for r in fixable if not r["repaired"]),
        }
    return out


def unchanged_on_valid_code(reference: Any) -> dict[str, list[str]]:
    """What the pass would change on every seed (lfx built-ins, third-party components) that
    validates: it must be nothing."""
    from lfassist_jupyter.core.component.repair import unprompted_changes

    changed = {}
    for name, path in seed_files().items():
        changes = unprompted_changes(path.read_text(encoding="utf-8"), reference)
        if changes:
            changed[name] = changes
    return changed


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    what = argv[1] if len(argv) > 1 else "measure"
    if what == "build":
        manifest = build()
        counts = Counter((split_of(c["id"]), MECHANISMS[c["id"].split("|")[1]], c["label"]) for c in manifest["cases"])
        print(f"{len(manifest['cases'])} cases of {manifest['mutants_made']} mutants ({manifest['seconds']} s)")
        for key, n in sorted(counts.items()):
            print(" ", *key, n)
        return
    split = argv[2] if len(argv) > 2 else None
    validator = _validator()
    try:
        result = measure(validator, split)
        print(json.dumps(result["summary"], indent=1))
        out = os.environ.get("LFASSIST_MISTAKES_OUT")
        if out:
            Path(out).write_text(json.dumps(result, indent=1))
    finally:
        validator.close()


if __name__ == "__main__":
    main(sys.argv)
