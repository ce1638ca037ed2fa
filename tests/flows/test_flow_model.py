"""A flow that answers with the user's model: from a sentence to a real run, with no hand edits.

``%%assist a flow that ... with a language model`` writes a spec whose model node already calls the
model the assistant runs on (its exact name, even one outside lfx's model list), with the key
field naming the provider's variable; the inserted ``%%assist_flow`` cell then runs for real with
``--run-local "..." --env OPENAI_API_KEY`` and the fake provider answers.  Through the public entry
points only (a real IPython shell, ``build_flow``, ``run_flow``), with the packages a clean
``pip install ".[test]"`` gives (the provider bundles lfx 1.13 moved out of lfx included).
"""

from __future__ import annotations

import json

import pytest
from _support.components import LLM_SPEC, ONE_SENTENCE_ANSWER, ONE_SENTENCE_SPEC, intent, plan, spec_reply
from _support.display import text_of
from _support.fakellm import Reply

import lfassist_jupyter
from lfassist_jupyter import build_flow, default_catalog, validate_flow
from lfassist_jupyter.flows import flow_to_spec
from lfassist_jupyter.flows.real_run import run_plan


def _node(flow: dict, kind: str = "LanguageModelComponent") -> dict:
    node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == kind)
    return node["data"]["node"]["template"]


@pytest.fixture
def openai_ip(flow_ip, llm, monkeypatch):
    """The shell's assistant on OpenAI (the fake server), running a model lfx does not list."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-openai-key-0123456789")
    monkeypatch.setenv("LFASSIST_MODEL", "my-local-model")
    flow_ip.rl_next_input = None
    return flow_ip


@pytest.fixture
def anthropic_ip(flow_ip, llm, monkeypatch):
    """The shell's assistant on Anthropic (the same fake server, its Messages API)."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-user-key-0123456789")
    flow_ip.rl_next_input = None
    return flow_ip


def _assist_then_run(shell, llm, env: str):
    """``%%assist`` the sentence, then run the inserted cell for real with ``--env``."""
    llm.queue(
        intent("build_flow"),
        plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
        spec_reply(ONE_SENTENCE_SPEC),
    )
    result = shell.run_cell_magic("assist", "--out res", "a flow that answers in one sentence with a language model")
    assert result.kind == "flow" and result.ok, result.error
    cell = shell.rl_next_input
    assert cell.startswith("%%assist_flow\n")
    head, body = cell.split("\n", 1)
    llm.queue(Reply(ONE_SENTENCE_ANSWER))
    assert head == "%%assist_flow"
    view = shell.run_cell_magic("assist_flow", f'--run-local "what is Langflow?" --env {env}', body)
    return result, body, view


def test_assist_writes_a_flow_that_answers_with_the_users_openai_model(openai_ip, llm):
    result, spec, view = _assist_then_run(openai_ip, llm, "OPENAI_API_KEY")

    # The spec the user sees (and edits) says which model, and names the key's variable, not the key.
    assert '  M.model: {"name": "my-local-model", "provider": "OpenAI"}\n' in spec
    assert "  M.api_key: OPENAI_API_KEY\n" in spec and "sk-user" not in spec
    assert "Model: Language Model calls my-local-model (OpenAI), key OPENAI_API_KEY" in text_of(result, openai_ip)
    # The real run: the fake provider's answer, and the request carried the key, the prompt and the
    # user's exact model name (lfx's list does not have it).
    assert view.run is not None and view.run.ok, (view.run, view.notes)
    assert view.run.text == ONE_SENTENCE_ANSWER
    request = llm.requests[-1]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-user-openai-key-0123456789"
    assert request.body["model"] == "my-local-model"
    assert request.last_user == "Answer in one sentence: what is Langflow?"
    assert view.run.variables == ["OPENAI_API_KEY"] and "sk-user" not in str(view) + view._repr_html_()


def test_assist_writes_a_flow_that_answers_with_the_users_anthropic_model(anthropic_ip, llm):
    _, spec, view = _assist_then_run(anthropic_ip, llm, "ANTHROPIC_API_KEY")

    assert '  M.model: {"name": "claude-sonnet-4-5", "provider": "Anthropic"}\n' in spec
    assert "  M.api_key: ANTHROPIC_API_KEY\n" in spec
    assert view.run is not None and view.run.ok, (view.run, view.notes)
    assert view.run.text == ONE_SENTENCE_ANSWER
    request = llm.requests[-1]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-user-key-0123456789"
    assert request.body["model"] == "claude-sonnet-4-5"  # lfx lists only dated Claude names
    assert request.last_user == "Answer in one sentence: what is Langflow?"


def test_the_key_line_before_the_model_line_runs_as_well(llm, monkeypatch):
    """The model's real-time refresh resets the provider's fields: written first, the key used to be lost."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    key_first = LLM_SPEC + "  M.api_key: OPENAI_API_KEY\n  M.model: gpt-4o-mini\n"
    model_first = LLM_SPEC + "  M.model: gpt-4o-mini\n  M.api_key: OPENAI_API_KEY\n"

    built = [build_flow(spec) for spec in (key_first, model_first)]
    for each in built:
        assert each.ok, each.errors
        template = _node(each.flow)
        assert template["api_key"]["value"] == "OPENAI_API_KEY" and template["api_key"]["load_from_db"] is True
        assert [(m["name"], m["provider"]) for m in template["model"]["value"]] == [("gpt-4o-mini", "OpenAI")]
    assert run_plan(built[0].flow).variables == [("OPENAI_API_KEY", "Language Model.api_key")]

    llm.queue(Reply("brief"))
    run = lfassist_jupyter.run_flow_for_real(key_first, "hi", env={"OPENAI_API_KEY": "sk-key-first-0123456789"})
    assert run.ok and run.text == "brief", run
    assert llm.requests[-1].headers["authorization"] == "Bearer sk-key-first-0123456789"
    assert llm.requests[-1].body["model"] == "gpt-4o-mini" and llm.requests[-1].last_user == "Be brief. hi"


def test_every_value_the_spec_writes_survives_the_refresh():
    """Fields the refresh leaves alone and fields it resets: all as written, in either order."""
    lines = ["  M.temperature: 0.7", "  M.system_message: Be kind.", "  M.api_key: OPENAI_API_KEY", "  M.model: gpt-4o"]
    for order in (lines, lines[::-1]):
        template = _node(build_flow(LLM_SPEC + "\n".join(order) + "\n").flow)
        assert template["temperature"]["value"] == 0.7 and template["system_message"]["value"] == "Be kind."
        assert template["api_key"]["value"] == "OPENAI_API_KEY" and template["model"]["value"][0]["name"] == "gpt-4o"


def test_a_name_lfx_does_not_list_needs_its_provider_and_keeps_it_exactly():
    unknown = build_flow(LLM_SPEC + "  M.model: my-fine-tune\n")
    assert not unknown.ok
    error = unknown.errors[0]
    assert (error.node, error.field, error.code) == ("M", "model", "bad_value")
    assert "not in lfx's model list" in error.message and '"provider"' in error.fix

    for config in ('  M.model: {"name": "my-fine-tune", "provider": "openai"}\n',
                   "  M.provider: OpenAI\n  M.model: my-fine-tune\n"):  # fmt: skip
        built = build_flow(LLM_SPEC + config)
        assert built.ok, built.errors
        assert [(m["name"], m["provider"]) for m in _node(built.flow)["model"]["value"]] == [("my-fine-tune", "OpenAI")]
    nope = build_flow(LLM_SPEC + '  M.model: {"name": "x", "provider": "Nope"}\n')
    assert "no model provider 'Nope'" in nope.errors[0].message


def test_the_spec_of_a_built_flow_keeps_its_model_and_key_variable():
    built = build_flow(
        LLM_SPEC + '  M.model: {"name": "my-fine-tune", "provider": "OpenAI"}\n  M.api_key: OPENAI_API_KEY\n'
    )
    spec = flow_to_spec(built.flow, catalog=default_catalog())
    assert '  D.model: {"name": "my-fine-tune", "provider": "OpenAI"}' not in spec  # spec ids follow the nodes
    assert '.model: {"name": "my-fine-tune", "provider": "OpenAI"}' in spec and ".api_key: OPENAI_API_KEY" in spec
    again = build_flow(spec)
    assert again.ok and _node(again.flow)["model"]["value"][0]["name"] == "my-fine-tune"
    report = validate_flow(again.flow)
    assert [str(m) for m in report.models] == ["Language Model calls my-fine-tune (OpenAI), key OPENAI_API_KEY"]


def test_a_model_the_request_names_is_kept_with_its_providers_key(make_assistant, llm):
    """The assistant runs on OpenAI; the request asked for Claude: the flow calls Claude."""
    asked = ONE_SENTENCE_SPEC + '  M.model: {"name": "claude-haiku-4-5", "provider": "Anthropic"}\n'
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
              spec_reply(asked))  # fmt: skip
    result = make_assistant("openai").run("a one-sentence answer flow with Claude Haiku")
    assert result.validated, result.error
    assert '"name": "claude-haiku-4-5", "provider": "Anthropic"' in result.spec
    assert "M.api_key: ANTHROPIC_API_KEY" in result.spec and "OPENAI_API_KEY" not in result.spec


def test_the_flow_model_setting_picks_the_model_of_the_flows(make_assistant, llm):
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
              spec_reply(ONE_SENTENCE_SPEC))  # fmt: skip
    result = make_assistant("openai", flow_model="anthropic:claude-haiku-4-5").run("a one-sentence answer flow")
    assert result.validated, result.error
    model = json.loads(result.spec.split("M.model: ", 1)[1].splitlines()[0])
    assert model == {"name": "claude-haiku-4-5", "provider": "Anthropic"}
    assert "M.api_key: ANTHROPIC_API_KEY" in result.spec


def test_an_ollama_model_node_gets_the_servers_url_and_no_key(llm, sandbox, tmp_path):
    from lfassist_jupyter import Assistant
    from lfassist_jupyter.core.session import SessionStore
    from lfassist_jupyter.providers import create_provider

    provider = create_provider("ollama", base_url=llm.openai_base_url, http_retries=0)
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
              spec_reply(ONE_SENTENCE_SPEC))  # fmt: skip
    assistant = Assistant(
        provider=provider, model="qwen3:0.6b", validator=sandbox, session_store=SessionStore(tmp_path)
    )
    result = assistant.run("a one-sentence answer flow")

    assert result.validated, result.error
    assert '  M.model: {"name": "qwen3:0.6b", "provider": "Ollama"}\n' in result.spec
    assert f"  M.ollama_base_url: {llm.url}\n" in result.spec + "\n" and "api_key" not in result.spec
    assert [str(m) for m in result.flow_report.models] == ["Language Model calls qwen3:0.6b (Ollama)"]


def test_the_offline_demo_provider_leaves_the_model_to_the_user(tmp_path):
    """The scripted provider is a replay, not a model a flow could call: the node stays open."""
    from lfassist_jupyter import Assistant
    from lfassist_jupyter.providers.scripted import ScriptedProvider

    replies = [
        intent("build_flow"),
        plan("ChatInput", "LanguageModelComponent", "ChatOutput"),
        spec_reply(ONE_SENTENCE_SPEC),
    ]
    result = Assistant(provider=ScriptedProvider(replies=replies), session_store=False).run("a flow with a model")
    assert "M.model" not in result.spec and "M.api_key" not in result.spec
    assert any(n.kind == "model" for n in result.flow_report.needs)


def test_a_password_in_the_servers_url_reaches_no_flow_card_or_session(llm, sandbox, tmp_path):
    """An Ollama server behind basic auth (``OLLAMA_HOST=http://user:password@host``): the model
    node gets the server's URL without the password -- the flow, the spec, the card's text and the
    stored session carry none of it.  The control: the requests went through that URL (the SDK sent
    its credentials to the fake server)."""
    import base64

    from lfassist_jupyter import Assistant
    from lfassist_jupyter.core.session import SessionStore
    from lfassist_jupyter.providers import create_provider

    password = "s3cr3tPassw0rdXyz"
    with_password = llm.url.replace("://", f"://bob:{password}@")
    provider = create_provider("ollama", base_url=with_password + "/v1", http_retries=0)
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
              spec_reply(ONE_SENTENCE_SPEC))  # fmt: skip
    assistant = Assistant(
        provider=provider, model="qwen3:0.6b", validator=sandbox, session_store=SessionStore(tmp_path / "s")
    )
    result = assistant.run("a one-sentence answer flow")

    assert result.validated, result.error
    sent = base64.b64encode(f"bob:{password}".encode()).decode()
    assert llm.requests and llm.requests[0].headers.get("authorization") == f"Basic {sent}"  # the control
    assert f"  M.ollama_base_url: {llm.url}\n" in result.spec + "\n"
    stored = "".join(p.read_text() for p in (tmp_path / "s").rglob("*") if p.is_file())
    for where in (result.spec, json.dumps(result.flow), str(result), repr(result.flow_report), stored):
        assert password not in where
