""" "Validated" means safe to hand to Langflow: the security gate follows references, whichever
phase sees a refused call gives one verdict, and lfx's own Component decides the reserved names.

Every evasion class goes through both doors: as generated code through ``Assistant`` (the fake
model writes it, the engine must refuse and retry with the call and its line in the prompt, and
validates only the model's clean retry) and as a user's code through ``validate_component``
(a labelled policy finding, never a silent pass).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from _support.components import GOOD, fenced, intent

from lfassist_jupyter import validate_component
from lfassist_jupyter.artifacts import find_component_class, policy
from lfassist_jupyter.validation.static import security_findings


def component(body: str, prelude: str = "", *, method: str = "build_output", imports: str = "import os") -> str:
    """GOOD with ``body`` before the output method's return, and ``prelude`` at module level."""
    code = GOOD.replace(
        "from lfx.schema.message import Message\n", f"from lfx.schema.message import Message\n{imports}\n{prelude}\n"
    )
    code = code.replace(
        '        return Message(text=(self.input_text or "").upper())',
        f'        {body}\n        return Message(text=(self.input_text or "").upper())',
    )
    return code.replace('method="build_output"', f'method="{method}"').replace("def build_output(", f"def {method}(")


def line_of(code: str, needle: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if needle in line)


# (class, prelude, body, the text on the refused line, what the finding names)
EVASIONS = [
    ("assignment alias", "run = os.system", 'run("true")', 'run("true")', "os.system"),
    ("module alias", "m = os", 'm.system("true")', 'm.system("true")', "os.system"),
    ("container entry", "TOOLS = {'m': os}", 'TOOLS["m"].system("true")', 'TOOLS["m"]', "os.system"),
    ("argument", "def go(m):\n    return m.system('true')", "go(os)", "m.system('true')", "os.system"),
    ("default", "def go(m=os):\n    return m.system('true')", "go()", "m.system('true')", "os.system"),
    ("return", "def mod():\n    return os", 'mod().system("true")', 'mod().system("true")', "os.system"),
    ("yield", "def mods():\n    yield os", 'for m in mods(): m.system("true")', "for m in mods()", "os.system"),
    ("lambda", "mod = lambda: os", 'mod().system("true")', 'mod().system("true")', "os.system"),
    ("conditional", "import sys", "(os if self.input_text else sys).exit(0)", "(os if", "sys.exit"),
    ("comprehension", "", '[m.system("true") for m in [os]]', '[m.system("true")', "os.system"),
    ("loop target", "", 'for m in (os,): m.system("true")', "for m in (os,)", "os.system"),
    ("walrus", "", '(m := os).system("true")', "(m := os)", "os.system"),
    ("getattr via alias", "m = os", 'getattr(m, "system")("true")', "getattr(m,", "os.system"),
    ("sys.modules", "import sys", 'sys.modules["os"].system("true")', 'sys.modules["os"]', "os.system"),
    ("vars(builtins)", "import builtins", 'vars(builtins)["eval"]("1")', "vars(builtins)", "builtins.eval"),
    ("globals()", "", 'globals()["__builtins__"]["eval"]("1")', "globals()", "builtins.eval"),
    ("wildcard import", "from os import *", 'system("true")', 'system("true")', "os.system"),
    ("_ctypes", "", "import _ctypes", "import _ctypes", "_ctypes"),
    ("_cffi_backend", "", "import _cffi_backend", "import _cffi_backend", "_cffi_backend"),
    ("pandas.read_pickle", "import pandas as pd", 'pd.read_pickle("x.pkl")', "pd.read_pickle", "read_pickle"),
    ("os.remove", "", 'os.remove("x.txt")', "os.remove", "os.remove"),
    ("os.unlink", "", 'os.unlink("x.txt")', "os.unlink", "os.unlink"),
    ("os.dup2", "", "os.dup2(1, 2)", "os.dup2", "os.dup2"),
    ("os.putenv", "", 'os.putenv("A", "1")', "os.putenv", "os.putenv"),
]
IDS = [e[0] for e in EVASIONS]


@pytest.mark.parametrize(("kind", "prelude", "body", "on_line", "names"), EVASIONS, ids=IDS)
async def test_generated_evasion_is_refused_and_retried_with_the_call_and_line(
    llm, make_assistant, kind, prelude, body, on_line, names
):
    bad = component(body, prelude)
    llm.queue(intent("generate_component"), fenced(bad), fenced(GOOD))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    # Validated only because the model's retry removed it, and the retry prompt said what and where.
    assert result.validated is True and result.attempts == 2 and result.code == GOOD, kind
    retry = llm.requests[2].last_user
    assert names in retry, retry[:600]
    assert f"line {line_of(bad, on_line)}" in retry, retry[:600]


async def test_a_model_that_keeps_the_evasion_is_never_validated(llm, make_assistant):
    bad = component('m.system("true")', "m = os")
    llm.queue(intent("generate_component"), fenced(bad), fenced(bad))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    assert result.validated is False and result.attempts == 2
    assert "os.system" in result.error


@pytest.mark.parametrize(("kind", "prelude", "body", "on_line", "names"), EVASIONS, ids=IDS)
def test_users_evasion_is_a_labelled_policy_finding(sandbox, kind, prelude, body, on_line, names):
    code = component(body, prelude)
    report = validate_component(code, validator=sandbox, smoke=False)
    policy = [f for f in report.by_severity("policy") if f.phase == "security"]
    assert any(names in f.message and f.line == line_of(code, on_line) for f in policy), (kind, report.findings)


MORE = [
    "type(os).__getattribute__(os, 'system')('true')",
    "os.__dict__['system']('true')",
    "[f for _, f in vars(os).items()]",
    "sys.modules.get('os').system('true')",
    "import posix; posix.system('true')",
    # issue 31: a namespace reached through an alias of globals() (Langflow's scan refuses globals()).
    "g = globals(); g.__getitem__('__builtins__')",
    "g = globals(); self.status = len(g)",
    # issue 30: frames (the code that called the component, and all it holds) ...
    "sys._getframe(1).f_locals",
    "import inspect; inspect.stack()",
    "import traceback; list(traceback.walk_stack(None))",
    "(x for x in ()).gi_frame",
    # ... and code the component writes to disk, then imports or loads.
    "sys.path.insert(0, '.')",
    "sys.meta_path.append(object())",
    "open('helper.so', 'wb').write(b'')",
    "import pathlib; pathlib.Path('helper.py').write_text('x = 1')",
    "import importlib.machinery; importlib.machinery.ExtensionFileLoader('m', 'm.so')",
]
DEFINES_ONLY = [
    "globals()['helper'] = len",
    "globals().update({'helper': len})",
    "g = globals(); g.update({'helper': len}); g['other'] = str",
]


@pytest.mark.parametrize("body", DEFINES_ONLY)
def test_globals_that_only_define_names_are_fine(body):
    """lfx's own SearXNG tool binds a class with ``globals_.update(local)``: defining, not reading."""
    assert security_findings(ast.parse(component(body, imports="import os, sys"))) == [], body


@pytest.mark.parametrize("body", MORE)
def test_more_indirections_are_found_by_the_scan(body):
    assert security_findings(ast.parse(component(body, imports="import os, sys"))), body


HARMLESS = [
    ('getattr(os, "path").join("a", "b")', "import os"),
    ('getattr(sys, "frozen", False)', "import sys"),
    ('getattr(self, "input_text", "")', "import os"),
]


@pytest.mark.parametrize(("body", "imports"), HARMLESS)
async def test_harmless_getattr_is_accepted_on_the_first_attempt(llm, make_assistant, body, imports):
    llm.queue(intent("generate_component"), fenced(component(body, imports=imports)))
    result = await make_assistant("openai").arun("an uppercase component")
    assert result.validated is True and result.attempts == 1, result.error
    assert security_findings(ast.parse(component(body, imports=imports))) == []


# -- one verdict at runtime: what only the sandbox sees -----------------------------------------

# A module carried in an object the scan does not follow (not reflection: data flow it does not track).
RUNTIME_ONLY = component('types.SimpleNamespace(m=os).m.system("true")', "import types")


async def test_a_call_only_the_sandbox_sees_is_refused_and_retried_like_a_static_one(llm, make_assistant):
    assert security_findings(ast.parse(RUNTIME_ONLY)) == []  # invisible to the scan
    llm.queue(intent("generate_component"), fenced(RUNTIME_ONLY), fenced(GOOD))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    assert result.validated is True and result.attempts == 2
    retry = llm.requests[2].last_user
    assert "`os.system`" in retry and f"line {line_of(RUNTIME_ONLY, 'SimpleNamespace')}" in retry
    assert policy.ATTRS["os.system"] in retry  # the scan's words for the same call


def test_a_users_call_refused_at_runtime_is_a_labelled_policy_finding(sandbox):
    report = validate_component(RUNTIME_ONLY, validator=sandbox)
    refused = [f for f in report.findings if f.rule == "sandbox-refused"]
    assert report.is_valid and refused and refused[0].severity == "policy"
    assert refused[0].message.startswith("Refused at runtime") and "os.system" in refused[0].message
    assert refused[0].line == line_of(RUNTIME_ONLY, "SimpleNamespace")
    strict = validate_component(RUNTIME_ONLY, validator=sandbox, security="reject")
    assert not strict.is_valid and "os.system" in strict.error and strict.phase == "smoke"


def test_a_refusal_the_code_swallows_still_counts(sandbox):
    code = component(
        'try:\n            types.SimpleNamespace(m=os).m.system("true")\n        except Exception:\n            pass',
        "import types",
    )
    report = validate_component(code, validator=sandbox, security="reject")
    assert not report.is_valid and "os.system" in report.error


# -- reserved names and outputs -----------------------------------------------------------------

TO_TOOLKIT = component("", method="to_toolkit")


async def test_an_output_method_named_to_toolkit_is_retried(llm, make_assistant):
    llm.queue(intent("generate_component"), fenced(TO_TOOLKIT), fenced(GOOD))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    assert result.validated is True and result.attempts == 2
    assert "to_toolkit" in llm.requests[2].last_user and "Tool Mode" in llm.requests[2].last_user


def test_to_toolkit_is_an_error_for_users_too_but_run_and_build_are_fine(sandbox):
    report = validate_component(TO_TOOLKIT, validator=sandbox)
    assert report.builds is True and not report.is_valid  # lfx builds it; Tool Mode breaks it
    assert any(f.rule == "reserved-name" and "Component.to_toolkit" in f.message for f in report.findings)
    # lfx never calls these while a flow runs (third_party/selinakmhx__formatter.py names its output run).
    for method in ("run", "build"):
        assert validate_component(component("", method=method), validator=sandbox).is_valid, method


NO_OUTPUTS = GOOD.replace(
    'outputs = [Output(display_name="Output", name="output", method="build_output")]', "outputs = []"
)


async def test_generated_code_without_outputs_is_retried(llm, make_assistant):
    llm.queue(intent("generate_component"), fenced(NO_OUTPUTS), fenced(GOOD))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    assert result.validated is True and result.attempts == 2
    assert "no outputs" in llm.requests[2].last_user


def test_users_code_without_outputs_is_valid_with_a_warning(sandbox):
    report = validate_component(NO_OUTPUTS, validator=sandbox)
    assert report.is_valid and any("no outputs" in w for w in report.warnings)


# -- no false positives on real components ------------------------------------------------------

lfx_spec = importlib.util.find_spec("lfx")
assert lfx_spec is not None and lfx_spec.origin
LFX_COMPONENTS = Path(lfx_spec.origin).parent / "components"
THIRD_PARTY = Path(__file__).parent / "third_party"
# Built-ins that really use what the deny list refuses (the old scan flagged the same lines).
REAL_USES = {
    "files_and_knowledge/file.py": {"subprocess"},
    "files_ingestion/file_description_generator.py": {"subprocess"},
    "llm_operations/lambda_filter.py": {"eval"},
    # An attribute read by a name the code computes (reflection): refused for generated code, and
    # lfx's own copies pass the gate as built-ins (their code is the catalogue's).
    "deactivated/extract_key_from_data.py": {"reflection"},
    "tools/yahoo_finance.py": {"reflection"},
}


def _component_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*.py")):
        if path.name.startswith("_") or path.name == "conftest.py":
            continue
        if find_component_class(ast.parse(path.read_text(encoding="utf-8"))) is not None:
            files.append(path)
    return files


@pytest.mark.slow  # every lfx built-in and third-party component through the scan
def test_no_false_positives_on_lfx_builtins_or_third_party_components():
    flagged = {}
    for root in (LFX_COMPONENTS, THIRD_PARTY):
        files = _component_files(root)
        assert len(files) >= (140 if root == LFX_COMPONENTS else 15)
        for path in files:
            issues = security_findings(ast.parse(path.read_text(encoding="utf-8")))
            if issues:
                flagged[path.relative_to(root).as_posix()] = {
                    name for name in ("subprocess", "eval", "reflection") if any(name in text for _, text in issues)
                }
    assert flagged == REAL_USES


def test_the_scan_and_the_sandbox_read_one_deny_list():
    from lfassist_jupyter.sandbox._isolation import WORKER_DIR  # the hook's directory (policy.py is bound in)

    hook = (WORKER_DIR / "_hook.py").read_text(encoding="utf-8")
    worker = "".join(p.read_text(encoding="utf-8") for p in WORKER_DIR.glob("_*.py"))
    assert "policy.EVENTS" in hook and '"os.system",' not in worker  # no second list in the worker
    for event, entry in policy.EVENTS.items():
        assert entry is None or policy.why(entry.rstrip("*")), event  # every enforced entry is scanned
