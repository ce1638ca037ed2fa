"""Reduced isolation is said wherever "validated" is said: the result, the ``%%assist`` card (HTML
and text), the ``%%assist_validate`` report card, the panel's cards and the eval table.

A sandbox in reduced mode (``LFASSIST_SANDBOX=reduced``: no bubblewrap, the worker's in-process
layers only) still validates, but its "validated" means less; every test runs the real request
through the public door against such a sandbox, and the control shows a full sandbox's verdict
carries no qualifier, so the qualifier comes from the sandbox that ran, not from the view."""

from __future__ import annotations

import re

import pytest
from _support.components import GOOD, QA_SPEC, fenced, intent, plan, spec_reply
from _support.display import html_of, text_of

from lfassist_jupyter.sandbox.client import SandboxValidator

WHY = "LFASSIST_SANDBOX=reduced"
QUALIFIED = f"validated (reduced isolation: {WHY})"


@pytest.fixture(scope="module")
def reduced():
    """A started sandbox in reduced mode, as ``LFASSIST_SANDBOX=reduced`` makes it."""
    patch = pytest.MonkeyPatch()
    patch.setenv("LFASSIST_SANDBOX", "reduced")
    validator = SandboxValidator(timeout=20)
    validator.start()
    validator.reference()  # ready
    patch.undo()
    assert validator.info()["isolation"] == "reduced"
    yield validator
    validator.close()


def _unqualified(shown: str, word: str = "validated") -> list[str]:
    """Each ``word`` ("validated", or "valid" on a report card) in ``shown`` that is neither
    "not ..." nor qualified with the reduced isolation."""
    found = re.finditer(rf"(not |NOT )?\b{word}\b( \(reduced isolation: [^)]+\))?", shown)
    return [m.group(0) for m in found if not m.group(1) and not m.group(2)]


class MarkedReduced:
    """The session's full sandbox, its probe runs marked as the reduced sandbox marks its own.

    A reduced sandbox cannot probe-run a flow on this machine today (its audit hook refuses the
    lazy imports lfx's runner makes), so no flow is "validated" there; this stands in for one
    whose run went through, to show every flow surface qualifies the verdict."""

    def __init__(self, box: SandboxValidator) -> None:
        self.box = box

    async def avalidate(self, code: str):
        return await self.box.avalidate(code)

    async def areference(self):
        return await self.box.areference()

    def flow_catalog(self):
        return self.box.flow_catalog()

    def component_template(self, code, timeout=None):
        return self.box.component_template(code, timeout)

    def build_flow(self, spec, **kwargs):
        return self.box.build_flow(spec, **kwargs)

    def probe_run(self, flow, input_text, timeout=None):
        return self.box.probe_run(flow, input_text, timeout).model_copy(update={"reduced_isolation": WHY})


def _shell(workspace_validator, tmp_path, llm, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reduced-views-0123456789")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    magics = shell.magics_manager.registry["AssistMagics"]
    magics.workspace = Workspace(data_dir=tmp_path / "data", local_validator=workspace_validator)
    return shell


@pytest.fixture
def reduced_ip(reduced, tmp_path, llm, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shell = _shell(reduced, tmp_path, llm, monkeypatch)
    yield shell
    shell.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


def test_assist_component_card_says_reduced_isolation(reduced_ip, llm):
    llm.queue(intent("generate_component"), fenced(GOOD))
    result = reduced_ip.run_cell_magic("assist", "--no-insert", "a component that uppercases text")
    assert result.validated and result.reduced_isolation == WHY
    html, text = html_of(result, reduced_ip), text_of(result, reduced_ip)
    assert QUALIFIED in html and _unqualified(html) == []
    assert text.startswith(f"UppercaseComponent: {QUALIFIED} (1 attempt)") and _unqualified(text) == []
    assert f"reduced_isolation='{WHY}'" in repr(result)  # a plain REPL's one line says it too


def test_assist_validate_report_card_says_reduced_isolation(reduced_ip, reduced, monkeypatch):
    import lfassist_jupyter.sandbox.client as sandbox_module

    monkeypatch.setattr(sandbox_module, "_default", reduced)  # %%assist_validate uses the kernel's sandbox
    report = reduced_ip.run_cell_magic("assist_validate", "", GOOD)
    assert report.is_valid and report.reduced_isolation == WHY
    html, text = html_of(report, reduced_ip), text_of(report, reduced_ip)
    assert f"valid (reduced isolation: {WHY})" in html and _unqualified(html, "valid") == []
    assert (
        text.startswith(f"UppercaseComponent is valid (reduced isolation: {WHY})") and _unqualified(text, "valid") == []
    )
    assert report.summary.endswith(f"reduced isolation: {WHY})")


def test_a_flow_in_reduced_mode_never_says_a_bare_validated(reduced_ip, llm):
    """Through the real reduced sandbox: whatever the verdict, no surface says a bare "validated".
    (Today the reduced sandbox cannot build this flow from the project directory, nor probe-run
    any flow: its hook refuses lfx's lazy reads; the next test shows a flow that did validate.)"""
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), *[spec_reply(QA_SPEC)] * 3)
    result = reduced_ip.run_cell_magic("assist", "--no-insert", "a flow that answers the chat question with a prompt")
    assert result.kind == "flow" and result.status == "complete"
    html, text = html_of(result, reduced_ip), text_of(result, reduced_ip)
    assert _unqualified(html) == [] and _unqualified(text) == [] and _unqualified(result.result) == []
    if result.validated:
        assert QUALIFIED in html and QUALIFIED in text


def test_a_flow_validated_under_reduced_isolation_says_so_everywhere(sandbox, llm, monkeypatch, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    box = MarkedReduced(sandbox)
    shell = _shell(box, tmp_path, llm, monkeypatch)
    try:
        llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(QA_SPEC))
        result = shell.run_cell_magic("assist", "--no-insert", "a flow that answers the chat question with a prompt")
        assert result.kind == "flow" and result.validated and result.reduced_isolation == WHY, result.error
        html, text = html_of(result, shell), text_of(result, shell)
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
    assert QUALIFIED in html and _unqualified(html) == []
    assert QUALIFIED in text.splitlines()[0] and _unqualified(text) == []
    assert f"It validated (reduced isolation: {WHY}) after 1 attempt." in result.result

    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=box))
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(QA_SPEC))
    panel.send_prompt("a flow that answers the chat question with a prompt")
    panel.wait(180)
    card = panel.messages[-1]
    assert card["kind"] == "flow" and card["validated"] and card["badge"] == QUALIFIED


def test_the_panel_component_card_says_reduced_isolation(reduced, sandbox, llm, monkeypatch, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reduced-views-0123456789")

    def badge(validator, name):
        panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / name, local_validator=validator))
        llm.queue(intent("generate_component"), fenced(GOOD))
        panel.send_prompt("a component that uppercases text")
        panel.wait(120)
        card = panel.messages[-1]
        assert card["kind"] == "component" and card["validated"], panel.messages
        return card["badge"]

    assert badge(reduced, "reduced") == QUALIFIED
    if sandbox.info()["isolation"] != "full":
        pytest.skip("the control needs a sandbox with full isolation on this machine")
    assert badge(sandbox, "full") == "validated"  # the control: the qualifier is the sandbox's


def test_the_eval_table_says_reduced_isolation(reduced, reduced_ip, llm, monkeypatch, tmp_path):
    import lfassist_jupyter.sandbox.client as sandbox_module

    monkeypatch.setattr(sandbox_module, "_default", reduced)  # the eval's assistants use the kernel's sandbox
    cases = tmp_path / "cases.toml"
    cases.write_text('[[case]]\nname = "uppercase"\nrequest = "a component that converts text to uppercase"\n')
    llm.queue(intent("generate_component"), fenced(GOOD))
    suite = reduced_ip.run_line_magic("assist", f"eval {cases}")
    (case,) = suite.cases
    assert case.status == "pass" and case.reduced_isolation == WHY
    table = suite.table()
    assert "pass (reduced isolation)" in table and f"Validated with reduced isolation: {WHY}" in table
    assert f"Validated with reduced isolation: {WHY}" in html_of(suite, reduced_ip)


def test_a_full_sandbox_says_validated_plainly(sandbox, tmp_path, llm, monkeypatch):
    """The control for the cards: the same request validated by a full sandbox has no qualifier."""
    from IPython.core.interactiveshell import InteractiveShell

    if sandbox.info()["isolation"] != "full":
        pytest.skip("OS-level isolation is unavailable on this machine")
    shell = _shell(sandbox, tmp_path, llm, monkeypatch)
    try:
        llm.queue(intent("generate_component"), fenced(GOOD))
        result = shell.run_cell_magic("assist", "--no-insert", "a component that uppercases text")
        assert result.validated and result.reduced_isolation is None
        assert text_of(result, shell).startswith("UppercaseComponent: validated (1 attempt)")
        assert "reduced isolation" not in html_of(result, shell)
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
