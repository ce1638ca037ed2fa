"""The panel's real Run: a flow card's **Run for real** shows the plan (the variables the flow wants, the
hosts it may reach), asks once per session which variables it may be given, then runs the flow in the
warm real runner and shows the model's answer as a new card. Through the panel's public methods and
the view's messages, with the fake provider on the OpenAI and Anthropic wire formats; the key's
value is never in the widget's state (what a saved notebook stores)."""

from __future__ import annotations

import json

import pytest
from _support.components import ONE_SENTENCE_ANSWER, ONE_SENTENCE_SPEC, intent, plan, spec_reply
from _support.fakellm import Reply

from lfassist_jupyter.ui.panel import ChatPanel
from lfassist_jupyter.ui.workspace import Workspace

PROVIDERS = {
    # provider: (its variables, the key's variable, the key, the path the model is asked on, the auth header)
    "openai": ({"OPENAI_BASE_URL": "{openai}", "LFASSIST_MODEL": "my-local-model"}, "OPENAI_API_KEY",
               "fake-openai-key-panel-0123456789", "/v1/chat/completions", ("authorization", "Bearer {key}")),
    "anthropic": ({"ANTHROPIC_BASE_URL": "{url}"}, "ANTHROPIC_API_KEY", "fake-anthropic-key-panel-0123456789",
                  "/v1/messages", ("x-api-key", "{key}")),
}  # fmt: skip


def _state(panel: ChatPanel) -> str:
    """Everything the panel syncs to the view (and a saved notebook keeps)."""
    return json.dumps({name: getattr(panel, name) for name in panel.keys if not name.startswith("_")}, default=str)


def view(panel: ChatPanel, msg: dict) -> None:
    """What the browser does: a custom comm message from the view, through ipywidgets' own dispatch."""
    panel._handle_msg({"content": {"data": {"method": "custom", "content": msg}}, "buffers": []})


@pytest.fixture(params=sorted(PROVIDERS))
def provider_panel(request, llm, monkeypatch, sandbox, tmp_path):
    provider = request.param
    settings, variable, key, path, (header, shown) = PROVIDERS[provider]
    for name, value in settings.items():
        monkeypatch.setenv(name, value.format(openai=llm.openai_base_url, url=llm.url))
    monkeypatch.setenv(variable, key)
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=sandbox))
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"))
    llm.queue(spec_reply(ONE_SENTENCE_SPEC))
    panel.send_prompt("a flow that answers in one sentence with a language model")
    panel.wait(180)
    card = panel.messages[-1]
    assert card["kind"] == "flow" and card["validated"], card
    return panel, card["id"], variable, key, path, (header, shown.format(key=key))


@pytest.mark.slow  # a real run: the runner imports lfx on first use
def test_run_for_real_asks_once_per_session_then_answers_with_the_users_model(provider_panel, llm):
    panel, card, variable, key, path, (header, value) = provider_panel
    asked_before = len(llm.requests)

    # The first Run for real of the session shows the plan and asks: nothing runs yet.
    assert panel.run_for_real(card, "what is Langflow?") is None
    shown = panel.real_run
    assert shown["id"] == card and not shown["running"]
    assert shown["variables"] == [
        {"name": variable, "where": "Language Model.api_key", "allowed": False, "present": True}
    ]
    assert any(f":{llm.url.rsplit(':', 1)[1]} (" in host for host in shown["hosts"]), shown["hosts"]
    assert variable in panel.notice and len(llm.requests) == asked_before
    assert key not in _state(panel)

    # The user allows the variable (the view's Run on the plan): the run answers with the model.
    llm.queue(Reply(ONE_SENTENCE_ANSWER))
    view(panel, {"type": "run_for_real", "id": card, "text": "what is Langflow?", "allow": [variable]})
    panel._real_job.result(180)
    answer = panel.messages[-1]
    assert answer["kind"] == "run" and answer["validated"] and answer["text"] == ONE_SENTENCE_ANSWER, answer
    assert answer["lines"][0] == {"text": f"Real run on 'what is Langflow?': {ONE_SENTENCE_ANSWER!r}", "ok": True}
    assert any(f"variables given: {variable}" in line["text"] for line in answer["lines"])
    request = llm.requests[-1]
    assert request.path == path and request.headers[header] == value
    assert request.last_user == "Answer in one sentence: what is Langflow?"
    assert panel.real_run == {} and key not in _state(panel)

    # Asked once: the next Run for real of this session runs at once.
    llm.queue(Reply("again"))
    panel.run_for_real(card, "once more").result(180)
    assert panel.messages[-1]["text"] == "again" and llm.requests[-1].last_user.endswith("once more")

    # A new session asks again.
    panel.new_session()
    assert panel.run_for_real(card, "hi") is None and panel.real_run["variables"][0]["allowed"] is False
    assert key not in _state(panel)


def test_a_variable_the_kernel_lacks_is_named_and_nothing_runs(llm, monkeypatch, sandbox, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-assistant-only-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=sandbox))
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"))
    llm.queue(spec_reply(ONE_SENTENCE_SPEC))
    panel.send_prompt("a flow that answers in one sentence with a language model")
    panel.wait(180)
    card = panel.messages[-1]["id"]
    monkeypatch.delenv("OPENAI_API_KEY")  # gone from the kernel before the run
    asked = len(llm.requests)

    assert panel.run_for_real(card, "hi") is None
    assert panel.real_run["variables"][0]["present"] is False
    panel.run_for_real(card, "hi", allow=["OPENAI_API_KEY"]).result(60)

    assert panel.real_run["error"].startswith("Not run: the flow wants OPENAI_API_KEY (Language Model.api_key)")
    assert "allowed but not set" in panel.real_run["error"] and panel.notice.startswith("Not run:")
    assert len(llm.requests) == asked  # nothing reached the provider
    view(panel, {"type": "cancel_real_run"})
    assert panel.real_run == {}


@pytest.mark.slow  # a real run: the runner imports lfx on first use
def test_the_plan_of_a_model_less_flow_asks_for_nothing_and_runs(sandbox, tmp_path, monkeypatch):
    from _support.components import QA_SPEC

    from lfassist_jupyter import build_flow

    monkeypatch.chdir(tmp_path)
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=sandbox))
    flow = build_flow(QA_SPEC).flow
    from lfassist_jupyter.ui.messages import flow_message

    card = flow_message(flow=flow, spec=QA_SPEC, validated=True)
    panel._flows[card.id] = flow
    panel._append(card)

    assert panel.run_for_real(card.id, "hi") is None  # the first time in a session: the plan first
    assert panel.real_run["variables"] == [] and panel.real_run["hosts"] == []
    view(panel, {"type": "run_for_real", "id": card.id, "text": "hi", "allow": [], "hosts": "example.com:8443"})
    panel._real_job.result(120)
    assert panel.messages[-1]["text"] == "Answer this: hi"
    assert panel.run_for_real(card.id, "bad", allow_hosts=["bad host"]) is None
    assert panel.notice.startswith("Not run: not a host name")


@pytest.mark.slow  # a real run: the runner imports lfx on first use
def test_a_session_consent_does_not_send_a_key_to_hosts_that_plan_never_showed(llm, monkeypatch, sandbox, tmp_path):
    """Consent is given for a plan: the variables *and* the hosts shown. The session's second flow
    (an edit, a model's reply, a loaded file) that hands the same allowed key to another provider
    shows its plan again instead of running at once. Control: the first flow's consent runs it, and
    the same second flow given explicit consent really goes out toward the new host with the key."""
    from lfassist_jupyter import build_flow
    from lfassist_jupyter.ui.messages import flow_message

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-consent-scope-0123456789")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=sandbox))
    key_line = "  M.api_key: OPENAI_API_KEY\n"
    cards = {}
    for label, model in (("openai", "my-local-model"), ("elsewhere", "claude-haiku-4-5")):
        provider = "OpenAI" if label == "openai" else "Anthropic"
        spec = ONE_SENTENCE_SPEC + f'  M.model: {{"name": "{model}", "provider": "{provider}"}}\n' + key_line
        built = build_flow(spec)
        assert built.ok, built.errors
        card = flow_message(flow=built.flow, spec=spec, validated=True)
        panel._flows[card.id] = built.flow
        panel._append(card)
        cards[label] = card.id

    assert panel.run_for_real(cards["openai"], "hi") is None  # the plan first
    assert not any("anthropic" in h for h in panel.real_run["hosts"])
    llm.queue(Reply(ONE_SENTENCE_ANSWER))
    view(panel, {"type": "run_for_real", "id": cards["openai"], "text": "hi", "allow": ["OPENAI_API_KEY"]})
    panel._real_job.result(180)
    assert (
        panel.messages[-1]["kind"] == "run" and panel.messages[-1]["text"] == ONE_SENTENCE_ANSWER
    )  # control: consent runs
    runs = len(panel.messages)

    # The other flow wants the key already allowed, but reaches a host the consent never showed.
    assert panel.run_for_real(cards["elsewhere"], "hi") is None
    assert panel.real_run["id"] == cards["elsewhere"] and any("api.anthropic.com" in h for h in panel.real_run["hosts"])
    assert "api.anthropic.com" in panel.notice and len(panel.messages) == runs

    # Control: with the user's consent to that plan, the run really heads there with the key.
    view(panel, {"type": "run_for_real", "id": cards["elsewhere"], "text": "hi", "allow": ["OPENAI_API_KEY"]})
    panel._real_job.result(180)
    ran = panel.messages[-1]
    assert ran["kind"] == "run" and len(panel.messages) == runs + 1
    assert any("variables given: OPENAI_API_KEY" in line["text"] for line in ran["lines"])
    assert any("api.anthropic.com:443" in line["text"] for line in ran["lines"]), ran["lines"]
