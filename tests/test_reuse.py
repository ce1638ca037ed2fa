"""Reuse before generate: a component request that a built-in lfx component covers is answered
with that component (no generation call), "generate anyway" still generates; a flow request that
an existing flow covers loads that flow and edits it. Through ``Assistant`` and ``%%assist``
against the fake model server; the catalogue is lfx's own, from the sandbox."""

from __future__ import annotations

import json

from components import GOOD, fenced, intent


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
    assert result.usage.model_calls == 1 and result.usage.kind == "builtin"


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
