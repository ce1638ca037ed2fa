"""The ``run_flow`` intent: "run my summariser on this text" runs that flow (a probe run in the
sandbox), it does not build a new one. Through ``Assistant`` and ``%%assist`` against the fake
model server; the answers are checked against lfx's own runner on the same flow."""

from __future__ import annotations

import json

from _support.components import QA_SPEC, UPPER_SPEC, intent, lfx_run, named, plan, spec_reply

from lfassist_jupyter import build_flow
from lfassist_jupyter.core.intent import parse_intent, parse_run_request

ECHO = named(QA_SPEC, "Echo QA")
SHOUT = named(UPPER_SPEC, "Shouter")


def run_intent(flow: str, text: str) -> str:
    return json.dumps({"translation": f"run {flow} on {text}", "intent": "run_flow", "flow": flow, "input": text})


async def test_run_names_a_flow_of_the_session_and_runs_it_not_the_current_one(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("build_flow"), plan("ChatInput", "TextOperations", "ChatOutput"), spec_reply(SHOUT))
    shouter = await assistant.arun("a flow that shouts")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    await assistant.arun("now answer with a prompt instead")
    calls = len(llm.requests)

    llm.queue(run_intent("my shouter", "quiet please"))
    result = await assistant.arun("run my shouter on this text: quiet please")

    assert len(llm.requests) == calls + 1  # the classification only: nothing is generated
    assert result.kind == "flow" and result.ok, result.error
    assert result.run.ok and result.run.text == lfx_run(shouter.flow, "quiet please") == "QUIET PLEASE"
    assert "Shouter" in result.result and "QUIET PLEASE" in result.result and "probe run" in result.result
    # A run is not an edit: the current flow is still the last one built.
    assert assistant.session.last_flow.flow["name"] == "Echo QA"


async def test_run_a_saved_flow_file(llm, make_assistant, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "echo_qa.json").write_text(json.dumps(build_flow(ECHO).flow))
    llm.queue(intent("run_flow", "run echo_qa.json with 'what is up?'"))  # no flow/input fields: read from the text
    result = await make_assistant("anthropic").arun("run echo_qa.json with 'what is up?'")
    assert result.ok, result.error
    assert result.run.text == "Answer this: what is up?" == lfx_run(build_flow(ECHO).flow, "what is up?")
    assert "echo_qa.json" in result.result


async def test_run_an_unknown_flow_says_what_exists(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    await assistant.arun("a flow that answers with a prompt")
    llm.queue(run_intent("translator", "bonjour"))
    result = await assistant.arun("run the translator on bonjour")
    assert not result.ok and result.run is None
    assert "No flow named 'translator'" in result.error and "Echo QA" in result.error


def test_assist_run_in_a_notebook(flow_ip, llm, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-run-intent-test-0123456789")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    assert flow_ip.run_cell_magic("assist", "--no-insert --quiet", "a flow that answers with a prompt").ok
    flow_ip.rl_next_input = None
    llm.queue(run_intent("", "hello there"))
    result = flow_ip.run_cell_magic("assist", "--quiet", "run it on hello there")
    assert result.ok and result.run.text == "Answer this: hello there"
    assert flow_ip.rl_next_input is None  # a run inserts no cell


def test_run_requests_are_read_without_a_model():
    assert parse_run_request("run my summariser on this text: The cat sat.") == ("summariser", "The cat sat.")
    assert parse_run_request('please run Echo QA flow with "hi"') == ("Echo QA", "hi")
    assert parse_run_request("run it") == ("", None)
    reply = '{"intent": "run_flow", "translation": "run x", "flow": "Echo QA", "input": "hola"}'
    got = parse_intent(reply, "lance Echo QA sur hola")
    assert (got.intent, got.flow, got.input) == ("run_flow", "Echo QA", "hola")
    hostile = "run " + "on " * 50_000 + "x"  # linear: no catastrophic backtracking
    assert parse_run_request(hostile)[1]
