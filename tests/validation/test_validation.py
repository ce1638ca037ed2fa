"""``validate_component`` never lies: Langflow's verdict (``builds``) equals lfx's own, in-process,
on each of the shapes issue 12 found rejected, and our findings say which is which.

Ground truth for ``builds`` comes from lfx itself, in a separate interpreter (as Langflow's
``POST /api/v1/custom_component`` would build the code), never from a hard-coded answer.
"""

from __future__ import annotations

import json
import math

import pytest
from _support import components as c
from _support.display import html_of, text_of
from _support.ground_truth import Background
from IPython.core.interactiveshell import InteractiveShell

from lfassist_jupyter import validate_component
from lfassist_jupyter.artifacts import defines_component, find_component_class, guess_class_name
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.ui.render.component import report_html, report_text
from lfassist_jupyter.validation.report import ValidationReport
from lfassist_jupyter.validation.static import validate_static

SHAPES = {
    "langflow_imports": c.LANGFLOW_IMPORTS,
    "method_import": c.METHOD_IMPORT,
    "legacy_custom": c.LEGACY_CUSTOM,
    "runtime_outputs": c.RUNTIME_OUTPUTS,
    "types_no_annotation": c.TYPES_NO_ANNOTATION,
    "always_raises": c.ALWAYS_RAISES,
    "intermediate_base": c.INTERMEDIATE_BASE,
    "input_shadowed_and_read": c.INPUT_SHADOWED_AND_READ,
    "input_shadowed_not_read": c.INPUT_SHADOWED_NOT_READ,
    "uses_subprocess": c.USES_SUBPROCESS,
    "coroutine_bug": c.COROUTINE_BUG,
    "coroutine_ok": c.COROUTINE_OK,
    "text_attribute_bug": c.TEXT_ATTRIBUTE_BUG,
    "text_attribute_ok": c.TEXT_ATTRIBUTE_OK,
    "network_retries": c.NETWORK_RETRIES,
    "busy_loop": c.BUSY_LOOP,
    "status_input": c.GOOD.replace('name="input_text"', 'name="status"'),
}

LFX_BUILDS = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
from lfx.custom.custom_component.component import Component
from lfx.custom.utils import build_custom_component_template
out = {}
for name, code in json.loads(sys.stdin.read()).items():
    try:
        build_custom_component_template(Component(_code=code))
        out[name] = True
    except BaseException:
        out[name] = False
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def lfx_builds_run():
    """lfx's verdict on every shape, started in the background (``_support.ground_truth``)."""
    run = Background(LFX_BUILDS, stdin=json.dumps(SHAPES), timeout=300)
    yield run
    run.close()


@pytest.fixture(scope="module")
def reports(sandbox) -> dict[str, ValidationReport]:
    return {name: validate_component(code, validator=sandbox, timeout=3) for name, code in SHAPES.items()}


def test_builds_is_exactly_lfx_verdict_for_every_shape(lfx_builds_run, reports):
    lfx_builds = lfx_builds_run.result()  # computed while the sandbox made the reports
    assert {n: r.builds for n, r in reports.items()} == lfx_builds
    assert all(lfx_builds.values())  # every shape here is one Langflow accepts


@pytest.mark.parametrize(
    "name",
    [
        "langflow_imports",  # cause 1: langflow.X falls back to lfx.X at build time
        "legacy_custom",  # cause 2: CustomComponent with build() and no outputs
        "runtime_outputs",  # cause 3: outputs = [] plus update_outputs
        "types_no_annotation",  # cause 4: Output(types=[...]) without a return annotation
        "always_raises",  # cause 5: a retired component that raises
        "intermediate_base",  # cause 6: ComponentWithCache, decided by the real MRO
        "input_shadowed_not_read",  # cause 7: a shadowed input the code never reads
    ],
)
def test_components_langflow_builds_are_valid(reports, name):
    report = reports[name]
    assert report.builds is True and report.is_valid, report.error
    assert not [f for f in report.findings if f.severity == "error"]


def test_an_import_inside_a_method_is_a_needs_to_run_warning_with_the_fix(reports):
    report = reports["method_import"]
    assert report.is_valid and report.builds
    warning = next(f for f in report.findings if f.rule == "needs-package")
    assert warning.severity == "warning" and "totally_missing_pkg_xyz" in warning.message
    assert [m.fix for m in report.missing_packages] == ["%pip install totally-missing-pkg-xyz"]
    assert report.smoke == "skipped" and "totally_missing_pkg_xyz" in report.smoke_reason


def test_a_module_level_import_that_lfx_cannot_resolve_does_not_build(sandbox):
    code = c.GOOD.replace("from lfx.io import", "from langflow.no_such_module import Nothing\nfrom lfx.io import")
    report = validate_component(code, validator=sandbox, smoke=False)
    assert report.builds is False and not report.is_valid
    assert report.error.startswith("Langflow rejects this:") and report.phase == "runtime"


def test_intermediate_bases_pass_the_static_phase():
    report = validate_static(c.INTERMEDIATE_BASE)
    assert report.is_valid and report.class_name == "UppercaseComponent"


def test_input_names_are_judged_by_what_lfx_does_with_them(reports):
    read = reports["input_shadowed_and_read"]
    assert read.builds is True and not read.is_valid
    finding = next(f for f in read.findings if f.severity == "error")
    assert finding.rule == "input-ignored" and "self.description" in finding.message
    assert read.error.startswith("Langflow accepts this, but input `description` is ignored")
    not_read = next(f for f in reports["input_shadowed_not_read"].findings if f.rule == "input-ignored")
    assert not_read.severity == "warning" and "display_name" in not_read.message
    status = reports["status_input"]
    assert status.builds is True and not status.is_valid and "reserved word" in status.error


def test_security_findings_are_policy_for_users_and_refusals_for_generated_code(reports):
    report = reports["uses_subprocess"]
    assert report.builds is True and report.is_valid
    policy = report.by_severity("policy")
    assert any("subprocess" in f.message and f.line for f in policy)
    # The engine validates generated code with validate_static(code): it must still refuse it.
    engine = validate_static(c.USES_SUBPROCESS)
    assert not engine.is_valid and engine.phase == "security" and "subprocess" in engine.error
    assert validate_static(c.USES_SUBPROCESS, security="report").is_valid


# -- smoke rules: the bug, and its fixed twin ------------------------------------------------------


def test_an_un_awaited_coroutine_is_a_bug(reports):
    bug, ok = reports["coroutine_bug"], reports["coroutine_ok"]
    assert bug.builds and not bug.is_valid and bug.phase == "smoke" and "un-awaited coroutine" in bug.error
    assert bug.error.startswith("Langflow accepts this, but output `output`")
    assert ok.is_valid and ok.smoke == "passed"


def test_an_attribute_error_on_an_input_of_its_declared_type_is_a_bug(reports):
    bug, ok = reports["text_attribute_bug"], reports["text_attribute_ok"]
    assert bug.builds and not bug.is_valid and bug.phase == "smoke"
    assert "MessageTextInput" in bug.error and "'str' object has no attribute 'text'" in bug.error
    assert ok.is_valid and ok.smoke == "passed"


def test_a_timeout_while_the_network_was_refused_is_not_a_failure(reports):
    network, busy = reports["network_retries"], reports["busy_loop"]
    assert network.is_valid and network.smoke == "skipped" and "network" in network.smoke_reason
    assert not busy.is_valid and busy.phase == "smoke" and "did not finish" in busy.error


# -- bad input: clear answers, never a traceback ---------------------------------------------------


@pytest.mark.parametrize("code", [b"class A(Component): pass", 123, None])
def test_code_that_is_not_a_str_is_a_config_error(code):
    with pytest.raises(ConfigError, match="str"):
        validate_component(code)


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -1, 0, "10", True])
def test_bad_timeouts_are_config_errors(timeout):
    with pytest.raises(ConfigError, match="timeout"):
        validate_component(c.GOOD, timeout=timeout)


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("-" * 100000 + "1", "nested too deeply"),
        ("x = a" + ".b" * 200000, "nested too deeply"),
        ("x = 1\n" * 200_000, "at most 1,000,000"),
    ],
)
def test_huge_or_deep_code_gets_a_report(code, needle):
    report = validate_component(code)
    assert not report.is_valid and needle in report.error and report.builds is not True


def test_twenty_thousand_inputs_with_a_duplicate_are_reported():
    inputs = ", ".join(f'MessageTextInput(name="in_{i}")' for i in range(20_000))
    code = c.GOOD.replace(
        'MessageTextInput(name="input_text", display_name="Text")', inputs + ', MessageTextInput(name="in_7")'
    )
    report = validate_static(code)
    assert not report.is_valid and "Duplicate input names: in_7" in report.error


@pytest.mark.slow  # every lfx module
def test_the_text_finder_names_the_same_class_as_the_ast_finder_on_every_lfx_module():
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("lfx")
    assert spec is not None and spec.origin
    sources = [p.read_text(encoding="utf-8") for p in (Path(spec.origin).parent / "components").rglob("*.py")]
    assert len(sources) > 150
    for src in sources:
        cls = find_component_class(ast.parse(src))
        assert defines_component(src) is (cls is not None)
        if cls is not None:
            assert guess_class_name(src) == cls.name


def test_component_finders_agree_and_stay_linear_on_adversarial_text():
    for junk in ("\n" * 100_000, "class A(\n" * 100_000, "(" * 1_000_000, "class " * 150_000):
        assert not defines_component(junk)
    assert guess_class_name("class Helper:\n    pass\n\n" * 50_000 + "class A(Component):\n    pass\n") == "Helper"
    code = "class Helper:\n    pass\n\n\nclass First(Component):\n    pass\n\n\nclass Second(Component):\n    pass\n"
    import ast

    assert guess_class_name(code) == find_component_class(ast.parse(code)).name == "First"  # lfx builds the first


# -- what the user sees ----------------------------------------------------------------------------


def test_the_report_shows_both_verdicts_and_policy_findings(reports):
    report = reports["uses_subprocess"]
    page = report_html(report)
    assert "Builds in Langflow" in page and "Works when called" in page and "Policy" in page
    assert "subprocess" in page
    text = report_text(reports["coroutine_bug"])
    assert "builds in Langflow: yes" in text and "works when called:  no" in text and "[error]" in text
    assert "builds in Langflow: no" in report_text(validate_component("class X(:\n"))


def test_assist_validate_displays_the_report(sandbox):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        report = shell.run_cell_magic("assist_validate", "", c.COROUTINE_BUG)
        assert report.builds is True and not report.is_valid
        page = html_of(report, shell)
        assert "Builds in Langflow" in page and "un-awaited coroutine" in page
        assert "builds in Langflow: yes" in text_of(report, shell)  # a terminal: the text card, not a field dump
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()


def test_a_report_from_the_worker_round_trips_through_model_validate(reports):
    report = reports["coroutine_bug"]
    again = ValidationReport.model_validate(report.model_dump(mode="json"))
    assert again == report and again.findings[0].severity == "error"
