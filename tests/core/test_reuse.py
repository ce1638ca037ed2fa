"""Reuse before generate: a component request that a built-in lfx component covers is answered
with that component (no generation call), "generate anyway" still generates; a flow request that
an existing flow covers loads that flow and edits it. Through ``Assistant`` and ``%%assist``
against the fake model server; the catalogue is lfx's own, from the sandbox."""

from __future__ import annotations

import json

import httpx
import pytest
from _support.components import GOOD, QA_SPEC, UPPER_SPEC, fenced, intent, lfx_run, named, plan, spec_reply

from lfassist_jupyter import build_flow
from lfassist_jupyter.core.flow.pipeline import PROBE_TEXT
from lfassist_jupyter.langflow import LangflowClient


def builtin_intent(name: str, translation: str = "a component that splits text into chunks") -> str:
    return json.dumps({"translation": translation, "intent": "generate_component", "builtin": name})


async def test_a_builtin_answers_a_component_request_with_no_generation_call(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(builtin_intent("SplitText"))
    result = await assistant.arun("a component that splits text into chunks")

    assert len(llm.requests) == 1  # the classification only: nothing generated
    prompt = llm.requests[0].text
    assert "SplitText: Split text into chunks" in prompt and len(prompt) < 16_000  # it saw lfx's catalogue
    assert result.status == "complete" and result.code is None and result.kind == "answer"
    assert result.intent == "use_builtin" and result.builtin is not None
    builtin = result.builtin
    assert (builtin.name, builtin.display_name) == ("SplitText", "Split Text")
    assert any("data_inputs" in i for i in builtin.inputs) and any("dataframe" in o for o in builtin.outputs)
    assert "Split Text" in result.result and "generate anyway" in result.result and "sidebar" in result.result
    assert result.usage.model_calls == 1 and result.usage.kind == "use_builtin"


async def test_generate_anyway_generates_the_offered_request(llm, make_assistant):
    assistant = make_assistant("anthropic")
    llm.queue(builtin_intent("SplitText"))
    await assistant.arun("a component that splits text into chunks")
    llm.queue(fenced(GOOD))
    result = await assistant.arun("generate anyway")

    assert len(llm.requests) == 2  # no second classification: the follow-up names the offered request
    assert "splits text into chunks" in llm.requests[1].last_user
    assert result.kind == "component" and result.ok and result.code and result.builtin is None


async def test_the_generate_flag_skips_the_catalogue(llm, make_assistant):
    llm.queue(intent("generate_component", "a component that uppercases text"), fenced(GOOD))
    result = await make_assistant("openai").arun("--generate a component that uppercases text")
    assert result.ok and result.class_name == "UppercaseComponent"
    assert "Built-in components" not in llm.requests[0].text and "--generate" not in llm.requests[0].text


async def test_an_unknown_or_missing_builtin_generates(llm, make_assistant):
    llm.queue(builtin_intent("NoSuchSplitterXYZ"), fenced(GOOD))
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.ok and result.kind == "component" and len(llm.requests) == 2


def test_assist_magic_offers_the_builtin(ip, llm, sandbox):
    llm.queue(builtin_intent("SplitText"))
    result = ip.run_cell_magic("assist", "--quiet", "a component that splits text into chunks")
    assert len(llm.requests) == 1 and result.builtin is not None and result.builtin.name == "SplitText"
    assert ip.rl_next_input is None  # no code cell inserted


# -- flows ------------------------------------------------------------------------------------------

ECHO = named(QA_SPEC, "Echo QA")
SHOUT = named(UPPER_SPEC, "Shouter")


def reuse_plan(name: str, change: str = "", inputs: dict | None = None, components: list | None = None) -> str:
    return json.dumps(
        {"components": components or [], "new": [], "reuse": name, "change": change, "inputs": inputs or {}}
    )


def node_types(flow: dict) -> list[str]:
    return sorted(n["data"]["node"]["display_name"] for n in flow["data"]["nodes"])


async def test_a_flow_of_the_session_is_reused_with_the_requests_value(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO))
    echo = await assistant.arun("a flow that answers with a prompt")
    llm.queue(intent("build_flow"), plan("ChatInput", "TextOperations", "ChatOutput"), spec_reply(SHOUT))
    await assistant.arun("a flow that shouts")
    calls = len(llm.requests)

    llm.queue(intent("build_flow"), reuse_plan("Echo QA", inputs={"template": "Reply to: {question}"}))
    result = await assistant.arun("the prompt flow again, with the template 'Reply to: {question}'")

    assert len(llm.requests) - calls == 2  # classification and plan; nothing to write: no write call
    assert '"Echo QA" (this conversation)' in llm.requests[calls + 1].text
    assert result.ok, result.error
    assert node_types(result.flow) == node_types(echo.flow) and result.flow["name"] == "Echo QA"
    assert "B.template: Reply to: {question}" in result.spec
    assert result.run.text == lfx_run(result.flow, PROBE_TEXT) == f"Reply to: {PROBE_TEXT}"
    assert result.outcome.reused["name"] == "Echo QA" and "Started from the flow 'Echo QA'" in result.result
    assert "B.template = 'Reply to: {question}'" in result.result  # the extracted value is shown
    assert assistant.session.last_flow.flow["name"] == "Echo QA"  # it is the current flow now


def fake_langflow(template: dict, stored: dict) -> LangflowClient:
    """A Langflow server with one stored flow (listed by header) and one starter template."""

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/api/v1/flows/":
            return httpx.Response(200, json=[{"id": "f-1", "name": stored["name"], "description": "Shouts the chat"}])
        if path == "/api/v1/flows/f-1":
            return httpx.Response(200, json={"id": "f-1", **stored})
        if path == "/api/v1/starter-projects/":
            return httpx.Response(200, json=[{**template, "name_key": "basic", "is_component": False}])
        return httpx.Response(404, json={"detail": "not found"})

    return LangflowClient(
        url="http://langflow.test", api_key="lf-reuse-key-0123456789", transport=httpx.MockTransport(handler)
    )


async def test_a_langflow_template_is_loaded_and_edited(llm, make_assistant):
    template = build_flow(named(QA_SPEC, "Basic Prompting")).flow | {"description": "Answers with a prompt template."}
    prompt_node = next(n for n in template["data"]["nodes"] if n["data"]["type"] == "Prompt Template")
    prompt_node["data"]["type"] = "Prompt"  # as Langflow's starter templates name it
    prompt_node["data"].pop("_flow_builder_registry_type", None)
    prompt_node["data"]["node"]["template"]["tools_metadata"] = {"type": "tools", "value": [{"name": "x"}]}
    assistant = make_assistant("openai")
    assistant.langflow = fake_langflow(template, build_flow(SHOUT).flow)
    edited = QA_SPEC.replace("B.prompt -> C.input_value", "B.prompt -> X.text_input\n  X.message -> C.input_value")
    edited = named(edited.replace("nodes:\n", "nodes:\n  X: TextOperations\n"), "Basic Prompting")
    edited += "  X.operation: Case Conversion\n  X.case_type: uppercase\n"
    llm.queue(
        intent("build_flow"),
        reuse_plan("Basic Prompting", change="uppercase the answer", components=["TextOperations"]),
        spec_reply(edited),
    )
    result = await assistant.arun("a flow that answers with a prompt, in capitals")

    assert len(llm.requests) == 3  # classification, plan, write: at most 3
    plan_prompt, write_prompt = llm.requests[1].text, llm.requests[2].text
    assert '"Basic Prompting" (Langflow template): "Answers with a prompt template."' in plan_prompt
    assert '"Shouter" (Langflow)' in plan_prompt and len(plan_prompt) < 16_000 and len(write_prompt) < 16_000
    assert "Answer this: {question}" in write_prompt  # the write call edits the template's spec
    assert "B: Prompt Template" in write_prompt and "tools_metadata" not in write_prompt
    assert result.ok, result.error
    assert set(node_types(template)) <= set(node_types(result.flow)) and "Text Operations" in node_types(result.flow)
    assert result.run.text == lfx_run(result.flow, PROBE_TEXT) == f"ANSWER THIS: {PROBE_TEXT}".upper()
    assert result.outcome.reused == {"name": "Basic Prompting", "where": "Langflow template", "inputs": []}


async def test_a_langflow_flow_runs_on_the_requests_text(llm, make_assistant):
    stored = build_flow(SHOUT).flow
    assistant = make_assistant("anthropic")
    assistant.langflow = fake_langflow(build_flow(named(QA_SPEC, "Basic Prompting")).flow, stored)
    llm.queue(intent("build_flow"), reuse_plan("shouter", inputs={"input": "make me loud"}))
    result = await assistant.arun("a flow that shouts 'make me loud'")
    assert len(llm.requests) == 2 and result.ok, result.error
    assert node_types(result.flow) == node_types(stored) and result.run.text == "MAKE ME LOUD"
    assert "with 'make me loud'" in result.result and "the chat input = 'make me loud'" in result.result


async def test_a_reuse_of_an_unknown_flow_plans_a_new_one(llm, make_assistant):
    llm.queue(
        intent("build_flow"),
        reuse_plan("No such flow", components=["ChatInput", "Prompt Template", "ChatOutput"]),
        spec_reply(ECHO),
    )
    result = await make_assistant("openai").arun("a flow that answers with a prompt")
    assert result.ok and len(llm.requests) == 3 and result.outcome.reused is None


def test_assist_generate_flag_skips_the_builtin(ip, llm, sandbox):
    llm.queue(intent("generate_component", "a component that uppercases text"), fenced(GOOD))
    result = ip.run_cell_magic("assist", "--quiet --generate --no-insert", "a component that uppercases text")
    assert result.ok and result.builtin is None and "Built-in components" not in llm.requests[0].text
    llm.queue(builtin_intent("SplitText"))  # the flag is for one request: the next one is offered the built-in
    again = ip.run_cell_magic("assist", "--quiet", "a component that splits text into chunks")
    assert again.builtin is not None and "Built-in components" in llm.requests[-1].text


@pytest.mark.langflow
async def test_the_real_servers_starter_templates_are_offered_and_reusable(langflow_server, sandbox):
    from lfassist_jupyter import default_catalog
    from lfassist_jupyter.core.reuse import gather_flows, normalise_flow, reuse_lines
    from lfassist_jupyter.flows import flow_to_spec
    from lfassist_jupyter.langflow.library import LangflowLibrary

    client = await LangflowClient(url=langflow_server.url).aconnect()
    candidates = await gather_flows([], LangflowLibrary(client))
    templates = [c for c in candidates if c.where == "Langflow template"]
    assert len(templates) >= 3 and "Basic Prompting" in {c.name for c in templates}
    assert len(reuse_lines(candidates)) <= 3_500
    catalog = default_catalog(sandbox)
    basic = next(c for c in templates if c.name == "Basic Prompting")
    built = build_flow(flow_to_spec(normalise_flow(basic.flow, catalog), catalog=catalog), catalog=catalog)
    assert built.ok and len(built.flow["data"]["nodes"]) == len(basic.flow["data"]["nodes"])
