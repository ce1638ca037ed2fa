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


def test_assist_component_card_says_reduced_isolation(reduced_ip, llm, capsys):
    llm.queue(intent("generate_component"), fenced(GOOD))
    result = reduced_ip.run_cell_magic("assist", "--no-insert", "a component that uppercases text")
    live = capsys.readouterr().out.splitlines()  # the live progress lines of a terminal shell
    assert f"· Validated (reduced isolation: {WHY}) (1/3)" in live and "· Validated (1/3)" not in live, live
    assert result.validated and result.reduced_isolation == WHY
    html, text = html_of(result, reduced_ip), text_of(result, reduced_ip)
    assert QUALIFIED in html and _unqualified(html) == []
    assert text.startswith(f"UppercaseComponent: {QUALIFIED} (1 attempt)") and _unqualified(text) == []
    assert f"reduced_isolation='{WHY}'" in repr(result)  # a plain REPL's one line says it too


def test_assist_validate_report_card_says_reduced_isolation(reduced_ip, reduced):
    report = reduced_ip.run_cell_magic("assist_validate", "", GOOD)
    assert report.is_valid and report.reduced_isolation == WHY
    html, text = html_of(report, reduced_ip), text_of(report, reduced_ip)
    assert f"valid (reduced isolation: {WHY})" in html and _unqualified(html, "valid") == []
    assert (
        text.startswith(f"UppercaseComponent is valid (reduced isolation: {WHY})") and _unqualified(text, "valid") == []
    )
    assert report.summary.endswith(f"reduced isolation: {WHY})")


def test_a_flow_in_reduced_mode_never_says_a_bare_validated(reduced_ip, llm):
    """Through the real reduced sandbox: whatever the verdict, no surface says a bare "validated"
    (the reduced sandbox builds and probe-runs flows from the project directory too: see
    tests/sandbox/test_reduced_reads.py)."""
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), *[spec_reply(QA_SPEC)] * 3)
    result = reduced_ip.run_cell_magic("assist", "--no-insert", "a flow that answers the chat question with a prompt")
    assert result.kind == "flow" and result.status == "complete"
    html, text = html_of(result, reduced_ip), text_of(result, reduced_ip)
    assert _unqualified(html) == [] and _unqualified(text) == [] and _unqualified(result.result) == []
    if result.validated:
        assert QUALIFIED in html and QUALIFIED in text


def test_a_flow_validated_under_reduced_isolation_says_so_everywhere(reduced, llm, monkeypatch, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    shell = _shell(reduced, tmp_path, llm, monkeypatch)
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

    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=reduced))
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


def test_the_eval_table_says_reduced_isolation(reduced, reduced_ip, llm, tmp_path):
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


def _labels(panel) -> list[str]:
    """Every step label the panel sent its view while requests ran (as the JavaScript shows them)."""
    seen: list[str] = []

    def watch(change) -> None:
        seen.extend(step["label"] for step in (change["new"] or {}).get("steps", []) if step["label"] not in seen)

    panel.observe(watch, names="progress")
    return seen


def test_the_progress_label_and_a_restored_component_card_say_reduced_isolation(reduced, llm, monkeypatch, tmp_path):
    """The live step says "Validated (reduced isolation: ...)"; the card a reopened panel restores
    from the data directory (a new kernel, the same stored session) still says the qualifier."""
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reduced-views-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "data", local_validator=reduced))
    labels = _labels(panel)
    llm.queue(intent("generate_component"), fenced(GOOD))
    panel.send_prompt("a component that uppercases text")
    panel.wait(120)
    assert panel.messages[-1]["badge"] == QUALIFIED

    reopened = ChatPanel(workspace=Workspace(data_dir=tmp_path / "data", local_validator=reduced))
    reopened.switch_session(panel.session_id)
    card = reopened.messages[-1]
    assert card["kind"] == "component" and card["validated"] and card["badge"] == QUALIFIED
    assert f"Validated (reduced isolation: {WHY})" in labels and "Validated" not in labels, labels


def test_a_restored_flow_card_and_undo_say_reduced_isolation(reduced, llm, monkeypatch, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reduced-views-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "data", local_validator=reduced))
    labels = _labels(panel)
    for _ in range(2):  # a flow, then an edit of it (the first becomes a restore point)
        llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(QA_SPEC))
        panel.send_prompt("a flow that answers the chat question with a prompt")
        panel.wait(180)
        assert panel.messages[-1]["badge"] == QUALIFIED, panel.messages[-1]

    reopened = ChatPanel(workspace=Workspace(data_dir=tmp_path / "data", local_validator=reduced))
    reopened.switch_session(panel.session_id)
    flows = [m for m in reopened.messages if m["kind"] == "flow"]
    assert len(flows) == 2 and all(m["badge"] == QUALIFIED for m in flows), flows
    assert all(_unqualified(line["text"]) == [] for m in flows for line in m["lines"] or [])
    assert reopened.undo_flow()
    assert reopened.messages[-1]["badge"] == QUALIFIED  # the restore point kept it too
    assert f"Flow validated (reduced isolation: {WHY})" in labels and "Flow validated" not in labels, labels


def test_a_session_stored_before_the_isolation_was_recorded_still_opens(tmp_path):
    """Backward compatible: a session file whose turns lack ``reduced_isolation`` restores as it
    was stored (the plain word: nothing recorded the isolation then), no turn set aside."""
    import json

    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    turns = [
        {"role": "user", "content": "a component that uppercases text", "kind": "text"},
        {"role": "assistant", "content": GOOD, "kind": "component", "class_name": "UppercaseComponent",
         "validated": True, "attempts": 1},
    ]  # fmt: skip
    (sessions / "agentic_old.json").write_text(json.dumps({"id": "agentic_old", "title": "old", "turns": turns}))
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "data"))
    panel.switch_session("agentic_old")
    card = panel.messages[-1]
    assert card["kind"] == "component" and card["badge"] == "validated"
    assert list(sessions.glob("*.corrupt-*")) == []
