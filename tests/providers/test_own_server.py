"""Your model, whatever serves it: an OpenAI-compatible server of your own (vLLM, LM Studio,
llama.cpp, a gateway) or Ollama works with two settings, its address and a model name, end to end:
a component, a flow whose model node is set for that server, and a real run of that flow.

The servers are the fakes of ``_support/fakellm.py``, each with its own model list and a 404 for
any other model, as the real ones answer: a request that tried a vendor's model name there would
fail, and be seen failing.  Through the entry point a user types (a real IPython shell).
"""

from __future__ import annotations

import pytest
from _support.components import GOOD, ONE_SENTENCE_ANSWER, ONE_SENTENCE_SPEC, SHELL_KEY, fenced, intent, plan
from _support.components import spec_reply as reply_with
from _support.display import text_of
from _support.fakellm import FakeLLM, FakeOllama, Reply

MODELS = ["fake-gpt", "fake-mini"]
FLOW_REQUEST = "a flow that answers in one sentence with a language model"


def _component(shell, server):
    """``%%assist`` a component on ``server``; (result, the model calls it made)."""
    server.queue(intent("generate_component"), fenced(GOOD))
    before = len(server.requests)
    result = shell.run_cell_magic("assist", "--new-session --quiet", "a component that uppercases text")
    return result, server.requests[before:]


def _flow(shell, server):
    """``%%assist`` a one-sentence flow on ``server``, then a real run of the cell it inserts."""
    server.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
                 reply_with(ONE_SENTENCE_SPEC))  # fmt: skip
    result = shell.run_cell_magic("assist", "--new-session --quiet", FLOW_REQUEST)
    assert result.kind == "flow" and result.ok, result.error
    head, body = shell.rl_next_input.split("\n", 1)
    assert head == "%%assist_flow"
    server.queue(Reply(ONE_SENTENCE_ANSWER))
    view = shell.run_cell_magic("assist_flow", '--run-local "what is Langflow?"', body)
    return result, view


@pytest.fixture
def own(flow_ip, monkeypatch):
    """A server of your own and the two settings: its base URL and your model (no key)."""
    with FakeLLM(models=MODELS) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("LFASSIST_MODEL", "fake-gpt")
        yield server


@pytest.fixture
def ollama(flow_ip, monkeypatch):
    """Ollama and the two settings: OLLAMA_HOST as Ollama's users write it, and a model it has."""
    with FakeOllama(models=["qwen3:0.6b"]) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
        monkeypatch.setenv("LFASSIST_MODEL", "qwen3:0.6b")
        yield server


def test_a_server_of_your_own_validates_in_as_many_calls_as_the_vendors_defaults(flow_ip, monkeypatch):
    with FakeLLM() as vendor:  # the vendor's API as the assistant sees it: a key and its models
        monkeypatch.setenv("OPENAI_API_KEY", SHELL_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", vendor.openai_base_url)
        by_vendor, vendor_calls = _component(flow_ip, vendor)
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeLLM(models=MODELS) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", own.openai_base_url)
        monkeypatch.setenv("LFASSIST_MODEL", "fake-gpt")
        by_own, own_calls = _component(flow_ip, own)

    assert by_vendor.validated and by_own.validated and by_own.class_name == by_vendor.class_name
    assert len(own_calls) == len(vendor_calls) == 2  # classify, write: no call lost to a guessed model
    assert [c.body["model"] for c in vendor_calls] == ["gpt-4o-mini", "gpt-4o"]  # the vendor's pair
    assert [c.body["model"] for c in own_calls] == ["fake-gpt", "fake-gpt"]  # yours, for every task
    assert all(c.finished and c.path == "/v1/chat/completions" for c in own_calls)


def test_a_flow_on_a_server_of_your_own_calls_your_model_there(own, flow_ip):
    result, view = _flow(flow_ip, own)

    assert '  M.model: {"name": "fake-gpt", "provider": "OpenAI"}\n' in result.spec
    # lfx 1.13's Language Model node has no OpenAI base-URL field: lfx reads OPENAI_BASE_URL, and
    # the card names it with your server's address.
    shown = text_of(result, flow_ip)
    assert "OPENAI_BASE_URL" in shown and own.openai_base_url in shown
    assert view.run is not None and view.run.ok, (view.run, view.notes)
    assert view.run.text == ONE_SENTENCE_ANSWER
    ran = own.requests[-1]  # the real run's call reached your server, with your model
    assert (ran.path, ran.body["model"]) == ("/v1/chat/completions", "fake-gpt")
    assert all(r.body["model"] == "fake-gpt" for r in own.requests)


def test_ollama_works_with_two_settings_end_to_end(ollama, flow_ip, capsys):
    result, calls = _component(flow_ip, ollama)
    assert (
        result.validated and [(c.path, c.body["model"]) for c in calls] == [("/v1/chat/completions", "qwen3:0.6b")] * 2
    )

    flow_ip.run_line_magic("assist", "models")
    assert f"ollama at {ollama.url}: qwen3:0.6b  (model qwen3:0.6b for every task)" in capsys.readouterr().out
    assert ollama.listings == 1  # asked: its /api/tags

    flow, view = _flow(flow_ip, ollama)
    assert '  M.model: {"name": "qwen3:0.6b", "provider": "Ollama"}\n' in flow.spec
    assert f"  M.ollama_base_url: {ollama.url}\n" in flow.spec + "\n"  # the node calls that server
    assert view.run is not None and view.run.ok, (view.run, view.notes)
    assert view.run.text == ONE_SENTENCE_ANSWER
    ran = ollama.requests[-1]  # lfx's Ollama client, on Ollama's own API
    assert (ran.path, ran.body["model"]) == ("/api/chat", "qwen3:0.6b")


def test_models_are_the_servers_own_list(own, flow_ip, capsys):
    flow_ip.run_line_magic("assist", "models")
    out = capsys.readouterr().out
    assert f"openai at {own.openai_base_url}: fake-gpt, fake-mini  (model fake-gpt for every task)" in out
    assert "gpt-4o" not in out  # not the vendor's catalogue
    flow_ip.run_line_magic("assist", "status")
    assert "model fake-gpt for every task" in capsys.readouterr().out


def test_a_model_the_server_does_not_have_is_one_line_naming_the_setting(own, flow_ip, monkeypatch):
    monkeypatch.setenv("LFASSIST_MODEL", "gpt-4o")  # a vendor's name, at a server that has none of them
    result = flow_ip.run_cell_magic("assist", "--new-session --quiet", "a component that uppercases text")
    assert result.status == "error" and "\n" not in result.error
    assert f"Model 'gpt-4o' was not found at OpenAI at {own.openai_base_url}" in result.error
    assert "It lists: fake-gpt, fake-mini. Set LFASSIST_MODEL" in result.error
    assert [r.body["model"] for r in own.requests] == ["gpt-4o"]  # one call: no other name was guessed


def test_no_model_named_takes_the_servers_own_and_says_so(own, flow_ip, monkeypatch):
    monkeypatch.delenv("LFASSIST_MODEL")
    result, calls = _component(flow_ip, own)
    assert result.validated and [c.body["model"] for c in calls] == ["fake-gpt", "fake-gpt"]
    assert own.listings == 1  # the server was asked, once
    shown = text_of(result, flow_ip)
    assert "No model is named" in shown and "'fake-gpt'" in shown and "LFASSIST_MODEL" in shown


@pytest.mark.parametrize("has_it", [False, True])
def test_registering_says_when_langflow_lacks_your_servers_url(own, flow_ip, monkeypatch, has_it):
    """lfx 1.13's OpenAI node has no base-URL field: in Langflow it reads OPENAI_BASE_URL, and a
    Langflow without it would call the vendor.  Registering says so, naming the value to set."""
    from _support.fakelangflow import FakeLangflow

    variables = ["OPENAI_API_KEY", *(["OPENAI_BASE_URL"] if has_it else [])]
    spec = ONE_SENTENCE_SPEC + '  M.model: {"name": "fake-gpt", "provider": "OpenAI"}\n  M.api_key: OPENAI_API_KEY\n'
    with FakeLangflow(variables=variables) as langflow:
        monkeypatch.setenv("LANGFLOW_URL", langflow.url)
        monkeypatch.setenv("LANGFLOW_API_KEY", "fake-langflow-key-for-tests")
        view = flow_ip.run_cell_magic("assist_flow", "--register --quiet", spec)
    assert view.registered is not None, view.notes
    said = [text for text, _ in view.notes if "OPENAI_BASE_URL" in text]
    if has_it:
        assert said == []  # the control: a Langflow that has it gets no such note
    else:
        assert said == [
            "Langflow has no global variable OPENAI_BASE_URL: unless its own environment sets it, this flow's model "
            f"node calls the provider's default API, not your server. Set OPENAI_BASE_URL to {own.openai_base_url} "
            "there (Settings, Model Providers)."
        ]
