"""Reflection is refused in reject mode: what turns a string computed at runtime into an attribute,
a module or a frame cannot be judged from the code, so generated code may not use it.

The attacks are generated from the facts (``_support/reflection.py``: each reflective primitive
through each way of obtaining it) and split before the rule was written; the control runs every one
in a plain interpreter, where each reaches ``os.system``, a caller's frame or a closure and leaves
its marker.  Through the doors: the static phase of ``validate_component`` (every case), the whole
``validate_component`` with the sandbox and ``%%assist_validate`` (one per primitive), generated code
through ``Assistant`` (refused, retried with the call and its line), an export (not written).  And a
legitimate component keeps passing: a method's attribute of its own ``self`` by name, a name from a
literal tuple a loop walks, a getattr whose name is either of two literals.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from _support import reflection
from _support.components import GOOD, fenced, intent

from lfassist_jupyter import validate_component
from lfassist_jupyter.validation.static import validate_static

CASES = reflection.cases()
DEVELOPED = [c for c in CASES if not c.held_back]
HELD_BACK = [c for c in CASES if c.held_back]
ISSUE = {  # the issue's three spellings, as written there, and what the refusal names
    "resolve_name": ("import pkgutil", 'pkgutil.resolve_name("os:system")("true")', "os.system"),
    "attrgetter": ("import operator", 'operator.attrgetter("system")(os)("true")', "os.system"),
    "map_getattr": ("", 'next(map(getattr, [os], ["system"]))("true")', "`getattr` used as a value"),
}


def component(body: str, imports: str = "", prelude: str = "") -> str:
    """GOOD with ``body`` in its output method, ``imports`` and ``prelude`` at module level."""
    head = "from lfx.schema.message import Message\n"
    code = GOOD.replace(head, f"{head}import os\n{imports}\n{prelude}\n")
    lines = "\n".join("        " + line if line else line for line in body.splitlines())
    last = '        return Message(text=(self.input_text or "").upper())'
    return code.replace(last, f"{lines}\n{last}")


def case_code(case: reflection.Case) -> str:
    return component(reflection.method_body(case), case.imports, case.prelude)


def test_control_every_case_reaches_its_target_in_a_plain_interpreter(tmp_path):
    """One interpreter (not this process, not a kernel) runs them all: each leaves its marker."""
    script = tmp_path / "control.py"
    script.write_text(reflection.control_source(CASES, str(tmp_path / "m")), encoding="utf-8")
    (tmp_path / "m").mkdir()
    run = subprocess.run([sys.executable, "-I", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    made = {p.name for p in (tmp_path / "m").iterdir()}
    assert made == {c.id for c in CASES}, (sorted({c.id for c in CASES} - made), run.stdout[-2000:], run.stderr[-2000:])


@pytest.mark.parametrize("half", ["developed", "held_back"])
def test_every_case_is_refused_in_reject_mode(half):
    """The static phase (the one ``validate_component`` runs first) refuses every case, on the line
    it is on; in report mode each is a policy finding, not silence."""
    missed = []
    for case in DEVELOPED if half == "developed" else HELD_BACK:
        code = case_code(case)
        strict = validate_static(code, security="reject")
        errors = [f for f in strict.by_severity("error") if f.phase == "security"]
        policy = [f for f in validate_static(code, security="report").findings if f.severity == "policy"]
        if strict.is_valid or not errors or not policy:
            missed.append(case.id)
    assert missed == [], missed


PER_PRIMITIVE = sorted({c.id.split("-")[0]: c for c in DEVELOPED}.values(), key=lambda c: c.id)


def test_one_case_per_primitive_through_validate_component_with_the_sandbox(sandbox):
    for case in PER_PRIMITIVE:
        report = validate_component(case_code(case), validator=sandbox, security="reject", smoke=False)
        assert not report.is_valid and report.phase == "security", (case.id, report.error)


@pytest.mark.parametrize("spelling", sorted(ISSUE))
def test_the_issues_spellings_are_refused(spelling):
    imports, body, named = ISSUE[spelling]
    report = validate_static(component(body, imports), security="reject")
    assert not report.is_valid and named in report.error, report.error


def test_assist_validate_shows_reflection_as_a_labelled_policy_finding(flow_ip):
    """``%%assist_validate`` (the user's own code: report mode) names the call and its line."""
    case = next(c for c in DEVELOPED if c.id == "getattr-map")
    report = flow_ip.run_cell_magic("assist_validate", "--no-smoke", case_code(case))
    policy = [f for f in report.findings if f.severity == "policy" and f.phase == "security"]
    assert policy and "reflection" in policy[0].message and policy[0].line, report.findings


async def test_generated_reflection_is_refused_and_retried_with_the_call_and_line(llm, make_assistant):
    imports, body, _ = ISSUE["resolve_name"]
    bad = component(body, imports)
    llm.queue(intent("generate_component"), fenced(bad), fenced(GOOD))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    assert result.validated is True and result.attempts == 2 and result.code == GOOD
    retry = llm.requests[2].last_user
    assert "pkgutil.resolve_name" in retry and "os.system" in retry, retry[:600]


async def test_an_export_does_not_write_reflective_code(sandbox, tmp_path):
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.langflow.extension import aexport_extension

    case = next(c for c in DEVELOPED if c.id == "attrgetter-map")
    with pytest.raises(ConfigError, match="no component passed validation"):
        await aexport_extension(tmp_path / "bundle", [case_code(case)], validator=sandbox)
    assert not (tmp_path / "bundle" / "components").exists()


LEGITIMATE = [
    # an input read by a name the component computes, on its own self
    ('for name in ("input_text",):\n    value = getattr(self, name, None)', ""),
    ('field = "input_" + "text"\nself.status = getattr(self, field)', ""),
    # a method chosen from two literal names (lfx's Astra DB component does this)
    ('method = "upper" if self.input_text else "lower"\ntext = getattr(str(self.input_text), method)()', ""),
    # attributes of a value, named by a loop over a literal tuple
    ('for attr in ("text", "content"):\n    nested = getattr(self.input_text, attr, None)', ""),
    ("setattr(self, 'seen', True)\nflag = hasattr(self, 'seen')", ""),
    ('key = operator.attrgetter("real")(1)', "import operator"),
]


@pytest.mark.parametrize(("body", "imports"), LEGITIMATE)
def test_legitimate_reflection_still_passes(body, imports):
    report = validate_static(component(body, imports), security="reject")
    assert report.is_valid, report.error


COMPUTED_ON_OTHERS = [
    "getattr(self.input_text, self.input_text)",
    "name = self.input_text\nhasattr(os.path, name)",
    "vars(self.input_text)[self.input_text]",
    "setattr(str, self.input_text, None)",
]


@pytest.mark.parametrize("body", COMPUTED_ON_OTHERS)
def test_a_computed_name_on_anything_but_self_is_refused(body):
    report = validate_static(component(body), security="reject")
    assert not report.is_valid and "reflection" in report.error, report.error
