"""Restore points: every flow edit keeps the version it replaced, and undo brings it back.

Through ``Assistant`` and ``%assist undo`` against the fake model server: after an edit, undo
makes the earlier flow current again (the next request edits that one), says which version is
current, and survives a kernel restart (the restore points are in the session file).
"""

from __future__ import annotations

from _support.components import QA_SPEC, UPPER_SPEC, intent, lfx_run, named, plan, spec_reply

ECHO = named(QA_SPEC, "Echo QA")
SHOUT = named(UPPER_SPEC, "Shout")


async def _two_versions(llm, assistant):
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    first = await assistant.arun("a flow that answers with a prompt")
    llm.queue(intent("build_flow"), plan("ChatInput", "TextOperations", "ChatOutput"), spec_reply(SHOUT))
    second = await assistant.arun("uppercase the question instead of the prompt")
    assert first.ok and second.ok, (first.error, second.error)
    return first, second


async def test_undo_restores_the_previous_flow_and_the_next_edit_starts_from_it(llm, make_assistant):
    assistant = make_assistant("openai")
    first, second = await _two_versions(llm, assistant)
    assert second.flow != first.flow
    assert lfx_run(assistant.session.last_flow.flow, "hi") == "HI"

    message = assistant.undo()
    assert "version 1" in message and "version 2 is undone" in message and "Echo QA" in message
    assert assistant.session.last_flow.flow == first.flow and assistant.session.last_flow.content == first.spec
    assert lfx_run(assistant.session.last_flow.flow, "hi") == "Answer this: hi"
    assert "Nothing to undo" in assistant.undo()  # one restore point, used

    # The next request edits the restored flow, not the undone one.
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    await assistant.arun("name it Echo QA again")
    assert "Answer this: {question}" in llm.requests[-1].text and "uppercase" not in llm.requests[-1].text
    assert assistant.session.flow_version == 3  # an undone version number is never given again


async def test_restore_points_survive_a_kernel_restart(llm, make_assistant):
    assistant = make_assistant("anthropic")
    first, _ = await _two_versions(llm, assistant)
    again = make_assistant("anthropic", session_id=assistant.session_id)  # a new kernel, the same session file
    assert "version 1" in again.undo()
    assert again.session.last_flow.flow == first.flow


def test_assist_undo_in_a_notebook(flow_ip, llm, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-undo-test-0123456789")
    flow_ip.run_line_magic("assist", "undo")
    assert "Nothing to undo" in capsys.readouterr().out

    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    assert flow_ip.run_cell_magic("assist", "--no-insert --quiet", "a flow that answers with a prompt").ok
    llm.queue(intent("build_flow"), plan("ChatInput", "TextOperations", "ChatOutput"), spec_reply(SHOUT))
    assert flow_ip.run_cell_magic("assist", "--no-insert --quiet", "uppercase it instead").ok
    capsys.readouterr()

    flow_ip.run_line_magic("assist", "undo")
    out = capsys.readouterr().out
    assert "Restored version 1 of 'Echo QA'" in out and "version 2 is undone" in out
    magics = flow_ip.magics_manager.registry["AssistMagics"]
    assert lfx_run(magics._assistant.session.last_flow.flow, "yo") == "Answer this: yo"


async def test_an_eval_case_runs_earlier_requests_then_undo_then_checks_the_run(llm, make_assistant):
    import json

    from lfassist_jupyter.eval import Case, arun_suite

    case = Case.model_validate(
        {
            "name": "undo_edit",
            "kind": "flow",
            "before": ["a flow that answers with a prompt", "uppercase it instead"],
            "undo": True,
            "request": "run the current flow on hi",
            "check": {"input": "hi", "expect": "Answer this: hi"},
        }
    )
    llm.queue(
        intent("build_flow"),
        plan("ChatInput", "Prompt Template", "ChatOutput"),
        spec_reply(ECHO),
        intent("build_flow"),
        plan("ChatInput", "TextOperations", "ChatOutput"),
        spec_reply(SHOUT),
        json.dumps({"translation": "run it on hi", "intent": "run_flow", "flow": "", "input": "hi"}),
    )
    suite = await arun_suite([case], assistant_factory=lambda **_: make_assistant("openai", session_store=False))
    (result,) = suite.cases
    assert result.status == "pass", result.reason
    assert result.output == "Answer this: hi" and result.model_calls == 1  # the run costs the classification only


def test_undo_on_the_panels_flow_card(sandbox, llm, tmp_path, monkeypatch):
    """The flow card's Undo button (a message from the view): the answer says which version is
    current, the restored flow is a new card, and the next request edits it."""
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-undo-panel-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "data", local_validator=sandbox))
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    panel.send_prompt("a flow that answers with a prompt")
    panel.wait(120)
    llm.queue(intent("build_flow"), plan("ChatInput", "TextOperations", "ChatOutput"), spec_reply(SHOUT))
    panel.send_prompt("uppercase the question instead of the prompt")
    panel.wait(120)
    card = panel.messages[-1]
    assert card["kind"] == "flow" and card["flow_name"] == "Shout", panel.messages[-1]

    panel._on_view_msg(panel, {"type": "undo_flow", "id": card["id"]})
    said, restored = panel.messages[-2:]
    assert "version 1" in said["html"] and "version 2 is undone" in said["html"]
    assert restored["kind"] == "flow" and restored["flow_name"] == "Echo QA"
    assert lfx_run(panel._flow(restored["id"]), "hi") == "Answer this: hi"

    panel._on_view_msg(panel, {"type": "undo_flow", "id": restored["id"]})
    assert "Nothing to undo" in panel.messages[-1]["html"]
