"""The validator against the real thing: every module lfx ships under ``lfx/components/``
(``deactivated/`` included) goes through the public ``validate_component`` with default
settings, and ``report.builds`` must equal what lfx itself answers in-process --
``build_custom_component_template(Component(_code=source))``, i.e. Langflow's
``POST /api/v1/custom_component`` -- for every file.  Then mutated built-ins must be
rejected in the right phase.

The ground truth comes from a separate interpreter (lfx never enters the test process,
as it never enters a user's kernel), which also finds the component modules by importing
them and reading the real MRO, not by matching base names.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
from pathlib import Path

import pytest
from _support.ground_truth import Background

from lfassist_jupyter import validate_component
from lfassist_jupyter.artifacts import find_component_class

lfx_spec = importlib.util.find_spec("lfx")
assert lfx_spec is not None and lfx_spec.origin, "lfx must be installed for the test run"
COMPONENTS = Path(lfx_spec.origin).parent / "components"

pytestmark = pytest.mark.slow  # the whole lfx corpus, through the sandbox and through lfx itself

# lfx's own verdict on every file, and which files define a Component class (by real import).
GROUND_TRUTH = r"""
import importlib, json, sys, warnings
from pathlib import Path
warnings.filterwarnings("ignore")
from lfx.custom.custom_component.base_component import BaseComponent
from lfx.custom.custom_component.component import Component
from lfx.custom.utils import build_custom_component_template

root = Path(sys.argv[1])
out = {}
for path in sorted(root.rglob("*.py")):
    if path.name.startswith("_"):
        continue
    rel = path.relative_to(root).as_posix()
    module = "lfx.components." + rel[:-3].replace("/", ".")
    try:
        mod = importlib.import_module(module)
        classes = [
            name for name, obj in vars(mod).items()
            if isinstance(obj, type) and obj.__module__ == module and issubclass(obj, BaseComponent)
        ]
        legacy = any(getattr(vars(mod)[c], "legacy", False) for c in classes)
    except BaseException:
        classes, legacy = None, False  # cannot be imported here (an optional dependency is missing)
    try:
        build_custom_component_template(Component(_code=path.read_text(encoding="utf-8")))
        builds = True
    except BaseException:
        builds = False
    out[rel] = {"builds": builds, "classes": classes, "legacy": legacy}
print(json.dumps(out))
"""

# Built-ins that build but that ``is_valid`` rejects, each for a real bug its error finding names.
KNOWN_BUGS = {
    # HandleInput named "inputs": Component.__init__ sets self.inputs (the input definitions), so
    # lfx's set_attributes raises "defines an input parameter named 'inputs' that is a reserved
    # word" as soon as a flow passes it a value -- and len(self.inputs) counts definitions.
    "files_ingestion/merge_flows.py": "input-reserved",
    # Legacy CrewAI agent: build_output has no return annotation and the Output no types, so the
    # template's output has types == [] and nothing can be connected to it by type.
    "crewai/crewai.py": "output-untyped",
    # Legacy Filter Values: filter_data() reads self.filter_key.text, but filter_key is a
    # MessageTextInput, whose value is a str: it raises AttributeError for every typed value.
    "processing/filter_data_values.py": "smoke-crash",
}


# The modules the ground truth goes through, in its order.
MODULES = [p.relative_to(COMPONENTS).as_posix() for p in sorted(COMPONENTS.rglob("*.py")) if not p.name.startswith("_")]


@pytest.fixture(scope="module")
def truth_run():
    """lfx's verdict on every module, started in the background (``_support.ground_truth``)."""
    run = Background(GROUND_TRUTH, str(COMPONENTS))
    yield run
    run.close()


@pytest.fixture(scope="module")
def truth(truth_run) -> dict[str, dict]:
    return truth_run.result()


def _source(rel: str) -> str:
    return (COMPONENTS / rel).read_text(encoding="utf-8")


def test_builds_agrees_with_lfx_on_every_builtin_and_is_valid_rejects_only_real_bugs(sandbox, truth_run):
    """Default settings (but the time limit), smoke run included: what a user gets from validate_component(code).

    The sandbox goes through every module while lfx's own verdicts are computed beside it."""
    # 30 s, not the default 10: a few heavy built-ins (MCP) take seconds to import on a loaded machine.
    reports = {rel: validate_component(_source(rel), validator=sandbox, timeout=30) for rel in MODULES}
    truth = truth_run.result()
    assert list(truth) == MODULES
    disagreements, rejected = [], {}
    for rel, t in truth.items():
        report = reports[rel]
        if report.builds is not t["builds"]:
            disagreements.append(f"{rel}: lfx builds={t['builds']}, we say {report.builds}: {report.error}")
        if t["builds"] and t["classes"] and not rel.startswith("deactivated/") and not report.is_valid:
            errors = [f for f in report.findings if f.severity == "error"]
            rejected[rel] = (errors[0].rule if errors else None, report.error)
        if not t["builds"]:
            assert not report.is_valid and report.error, rel
    assert disagreements == [], "builds disagrees with lfx:\n" + "\n".join(disagreements)
    assert {rel: rule for rel, (rule, _) in rejected.items()} == KNOWN_BUGS, "\n".join(
        f"{rel}: {error}" for rel, (_, error) in rejected.items()
    )


def test_corpus_is_the_real_one(truth):
    components = [rel for rel, t in truth.items() if t["classes"]]
    assert len(components) >= 140, f"only {len(components)} component modules under {COMPONENTS}"
    assert any(rel.startswith("deactivated/") for rel in components)
    assert sum(t["builds"] for t in truth.values()) >= 140


# -- mutations: broken code rejected in the right phase ------------------------------------


def _class(tree: ast.Module) -> ast.ClassDef:
    cls = find_component_class(tree)
    assert cls is not None
    return cls


def _list(cls: ast.ClassDef, name: str) -> list[ast.Call]:
    for stmt in cls.body:
        named = isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
        if named and isinstance(stmt.value, ast.List):
            return [e for e in stmt.value.elts if isinstance(e, ast.Call)]
    return []


def _kw(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _first_output(cls: ast.ClassDef) -> tuple[ast.Call, ast.FunctionDef]:
    for out in _list(cls, "outputs"):
        kw = _kw(out, "method")
        if kw is not None and isinstance(kw.value, ast.Constant):
            for node in cls.body:
                if isinstance(node, ast.FunctionDef) and node.name == kw.value.value:
                    return out, node
    raise LookupError


def mutate(source: str, kind: str) -> str:
    tree = ast.parse(source)
    cls = _class(tree)
    if kind == "syntax_error":
        return source + "\ndef broken(:\n    pass\n"
    if kind == "wrong_import":
        return "from lfx.components.no_such_module import Helper\n" + source
    if kind == "no_component_base":
        cls.bases = [ast.Name("object")]
    elif kind == "missing_method":
        out, _ = _first_output(cls)
        _kw(out, "method").value = ast.Constant("method_that_does_not_exist")
    elif kind == "overlapping_names":
        out, _ = _first_output(cls)
        first_input = next(i for i in _list(cls, "inputs") if _kw(i, "name"))
        _kw(first_input, "name").value = copy.deepcopy(_kw(out, "name").value)
    elif kind == "return_type_mismatch":
        _, method = _first_output(cls)
        method.body = [ast.Return(ast.Constant(12345))]
        method.args.args = method.args.args[:1]
    elif kind == "crash_in_output":
        _, method = _first_output(cls)
        method.body = [ast.Return(ast.Name("name_that_is_not_defined"))]
    return ast.unparse(ast.fix_missing_locations(tree))


# (phase of the error, what lfx says: does it still build?)
EXPECTED = {
    "syntax_error": ("static", False),
    "no_component_base": ("static", False),
    "missing_method": ("static", None),  # None: whatever lfx says, the report must agree (checked below)
    "overlapping_names": ("runtime", False),  # lfx refuses it; our static finding is listed too
    "wrong_import": ("runtime", False),
    "return_type_mismatch": ("smoke", True),
    "crash_in_output": ("smoke", True),
}


@pytest.fixture(scope="module")
def smoke_clean(sandbox, truth):
    """Plain-Component built-ins that pass every phase with no warnings: the base for mutations."""
    clean = []
    for rel, t in truth.items():
        if not (t["builds"] and t["classes"]) or rel.startswith("deactivated/"):
            continue
        source = _source(rel)
        tree = ast.parse(source)
        cls = find_component_class(tree)
        if cls is None or not all(isinstance(b, ast.Name) and b.id == "Component" for b in cls.bases):
            continue
        try:
            _first_output(cls)
        except LookupError:
            continue
        if not any(_kw(i, "name") for i in _list(cls, "inputs")):
            continue
        report = validate_component(source, validator=sandbox, security="off")
        if report.is_valid and report.smoke == "passed" and not report.warnings:
            clean.append((rel, source))
        if len(clean) == 8:
            break
    assert len(clean) >= 8, f"only {len(clean)} smoke-clean built-ins"
    return clean


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_mutated_builtins_are_rejected_in_the_right_phase(sandbox, smoke_clean, kind):
    phase, builds = EXPECTED[kind]
    wrong = []
    for rel, source in smoke_clean:
        report = validate_component(mutate(source, kind), validator=sandbox, security="off")
        if report.is_valid or report.phase != phase or (builds is not None and report.builds is not builds):
            wrong.append(f"{rel}: valid={report.is_valid} builds={report.builds} phase={report.phase} {report.error}")
    assert wrong == [], f"{kind}:\n" + "\n".join(wrong)
