"""The flow pipeline end to end: the sandbox's probe run, then a sentence to a validated flow
through the real SDKs against the fake model server, each built flow run by lfx itself."""

from __future__ import annotations

import json

import pytest
from _support.components import (
    COMBINE_SPEC,
    GOOD,
    LLM_SPEC,
    QA_SPEC,
    UPPER_SPEC,
    fenced,
    intent,
    lfx_run,
    named,
    plan,
    spec_reply,
)

from lfassist_jupyter import build_flow, default_catalog
from lfassist_jupyter.core.flow.pipeline import PROBE_TEXT

# -- the sandbox's run_flow op ----------------------------------------------------------------


def test_sandbox_probe_run_equals_lfx_run(sandbox):
    flow = build_flow(UPPER_SPEC).flow
    run = sandbox.probe_run(flow, "shout this")
    assert run.ok, run.error
    assert run.text == lfx_run(flow, "shout this") == "SHOUT THIS"
    assert run.stubbed == []
    assert run.outputs[0].text == "SHOUT THIS"


def test_sandbox_probe_run_stubs_the_model_and_says_so(sandbox):
    flow = build_flow(LLM_SPEC).flow
    run = sandbox.probe_run(flow, "What is Langflow?")
    assert run.ok, run.error
    # The prompt really ran in the sandbox; only the model is a deterministic echo.
    assert run.text == "[stub Language Model] Be brief. What is Langflow?"
    model = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "LanguageModelComponent")
    assert run.model_dump()["stubbed"] == [
        {"node": model["id"], "name": "Language Model", "reason": "calls a language model"}
    ]


def test_sandbox_probe_run_failing_flow_is_a_failed_run_not_an_exception(sandbox):
    flow = build_flow("nodes:\n  F: File\n  C: ChatOutput\nedges:\n  F.message -> C.input_value\n").flow
    run = sandbox.probe_run(flow, "x")
    assert run.ok is False
    assert "Read File" in run.error and "No files" in run.error
    assert sandbox.probe_run({"data": "nonsense"}, "x").ok is False
    assert sandbox.probe_run("not a flow", "x").ok is False  # type: ignore[arg-type]
    # The worker is still fine afterwards.
    assert sandbox.probe_run(build_flow(UPPER_SPEC).flow, "ok").text == "OK"


# -- the pipeline end to end, on the real SDKs against the fake model server ------------------

PROMPT_SPEC = named(QA_SPEC, "Echo answer")


FLOW_STEPS = ["planning_flow", "generating_flow", "building_flow", "validating_flow", "running_flow", "flow_validated"]
MAX_PROMPT_BYTES = 16 * 1024


def steps(result) -> list[str]:
    return [e.step for e in result.events if e.event == "progress"]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_built_in_flow_first_try_three_calls_small_prompts(llm, make_assistant, kind):
    llm.queue(
        intent("build_flow", "a flow that answers the chat question with a prompt"),
        plan("ChatInput", "Prompt Template", "ChatOutput"),
        spec_reply(PROMPT_SPEC, "yaml"),
    )
    result = await make_assistant(kind).arun("a flow that answers the chat question with a prompt")

    assert result.status == "complete" and result.kind == "flow" and result.ok, result.error
    assert steps(result) == FLOW_STEPS
    # Classification + plan + write: three model calls, each prompt within 16 KB.
    assert len(llm.requests) == 3
    assert all(len(r.text.encode()) <= MAX_PROMPT_BYTES for r in llm.requests), [len(r.text) for r in llm.requests]
    # Two-phase discovery: the plan saw the light catalogue, the write only the chosen interfaces.
    catalog = default_catalog()
    assert catalog.light() in llm.requests[1].text
    chosen = catalog.interfaces(["ChatInput", "Prompt Template", "ChatOutput"])
    assert chosen in llm.requests[2].text and catalog.interfaces(["CombineText"]) not in llm.requests[2].text
    # lfx itself runs the built flow and gives the expected text.
    assert lfx_run(result.flow, "What is 2+2?") == "Answer this: What is 2+2?"
    assert result.run.ok and result.run.text == f"Answer this: {PROBE_TEXT}"
    assert result.spec.startswith("name: Echo answer") and result.flow_report.is_valid

    final = result.events[-1].model_dump()
    assert final["event"] == "complete"
    assert set(final["data"]) == {"result", "validated", "validation_attempts", "intent", "flow", "spec", "run"}
    assert final["data"]["intent"] == "build_flow" and final["data"]["validated"] is True
    assert final["data"]["flow"]["data"]["nodes"] and final["data"]["spec"] == result.spec
    assert set(final["data"]["run"]) >= {"ok", "text", "error", "stubbed", "outputs"}
    json.dumps(final)  # the wire JSON serialises as is


async def test_model_flow_is_stubbed_in_the_probe_run_and_needs_are_reported(llm, make_assistant):
    llm.queue(
        intent("build_flow"),
        "I need these:\n- ChatInput\n- Prompt Template\n- LanguageModelComponent\n- ChatOutput\n",  # prose, not JSON
        spec_reply(LLM_SPEC),
    )
    result = await make_assistant("openai").arun("a flow that answers briefly with an LLM")

    assert result.ok, result.error
    assert "LanguageModelComponent (Language Model)" in llm.requests[2].text  # parsed from the bulleted plan
    assert result.run.text == f"[stub Language Model] Be brief. {PROBE_TEXT}"
    assert [s.name for s in result.run.stubbed] == ["Language Model"]
    # The model node calls the assistant's own model; the key is named, the user allows it at run time.
    assert [str(m) for m in result.flow_report.models] == ["Language Model calls gpt-4o (OpenAI), key OPENAI_API_KEY"]
    assert not any(n.kind == "model" for n in result.flow_report.needs)
    assert [n.message for n in result.flow_report.needs] == [
        "Language Model.api_key reads the global variable 'OPENAI_API_KEY'."
    ]
    assert "Stubbed in the probe run" in result.result and "Language Model" in result.result
    assert "Before a real run, provide" in result.result


async def test_component_then_flow_generates_the_custom_node_and_uses_it(llm, make_assistant):
    custom = plan("ChatInput", "ChatOutput", new=[{"name": "Uppercase", "description": "uppercases the text"}])
    upper_spec = (
        "nodes:\n  A: ChatInput\n  U: UppercaseComponent\n  C: ChatOutput\n"
        "edges:\n  A.message -> U.input_text\n  U.output -> C.input_value\n"
    )
    llm.queue(intent("component_then_flow"), custom, fenced(GOOD), spec_reply(upper_spec))
    result = await make_assistant("anthropic").arun("a chat flow with a custom component that uppercases")

    assert result.ok, result.error
    assert result.kind == "flow" and result.intent == "component_then_flow"
    # The component went through the component pipeline's own validation steps, then the flow's.
    assert steps(result)[:2] == ["planning_flow", "generating_component"]
    assert "validated" in steps(result) and steps(result)[-1] == "flow_validated"
    assert result.code == GOOD and result.class_name == "UppercaseComponent"
    assert str(result) == result.spec  # a flow's text is its spec, not the custom node's code
    # The write prompt offered the generated component with its real ports.
    assert "UppercaseComponent (Uppercase)" in llm.requests[3].text and "input_text" in llm.requests[3].text
    assert result.run.text == PROBE_TEXT.upper()
    assert lfx_run(result.flow, "shout this") == "SHOUT THIS"
    assert result.outcome.components[0].validated


async def test_repair_round_sends_the_error_naming_the_node_and_skips_bad_lines(llm, make_assistant):
    broken = COMBINE_SPEC.replace("A.message -> D.text2", "A.message -> D.txt")  # ambiguous: text1 or text2
    fixed = COMBINE_SPEC.replace("edges:\n", "edges:\n  A.message goes to D\n")  # one malformed line
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "CombineText", "ChatOutput"))
    llm.queue(spec_reply(broken), spec_reply(fixed))
    result = await make_assistant("openai").arun("answer with a prompt and the question combined")

    assert result.ok, result.error
    assert steps(result) == [
        "planning_flow",
        "generating_flow",
        "building_flow",
        "flow_failed",
        "repairing_flow",
        "building_flow",
        "validating_flow",
        "running_flow",
        "flow_validated",
    ]
    failed = next(e for e in result.events if e.event == "progress" and e.step == "flow_failed")
    assert "D.txt" in failed.error
    repair = llm.requests[3].last_user
    assert "D.txt" in repair and "text1" in repair and "text2" in repair  # node, field and the fix
    assert result.attempts == 2
    assert any("goes to" in w for w in result.warnings)  # the malformed line was skipped, not fatal
    assert lfx_run(result.flow, "hi") == "Answer this: hi -- hi"


async def test_repair_gives_up_after_max_retries_with_the_last_error(llm, make_assistant):
    unknown = PROMPT_SPEC.replace("B: Prompt Template", "B: SummarizerMagic")
    llm.queue(intent("build_flow"), plan("ChatInput", "ChatOutput"), spec_reply(unknown), spec_reply(unknown))
    result = await make_assistant("openai", max_retries=2).arun("a flow")

    assert result.status == "complete" and not result.ok and result.kind == "flow"
    assert result.attempts == 2 and "SummarizerMagic" in result.error
    assert "Use only these component types" in llm.requests[3].last_user
    assert len(llm.requests) == 4


async def test_edit_follow_up_changes_the_last_flow(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(PROMPT_SPEC))
    first = await assistant.arun("a flow that answers with a prompt")
    assert first.ok

    edited = (
        PROMPT_SPEC.replace("  C: ChatOutput\n", "  C: ChatOutput\n  X: TextOperations\n").replace(
            "B.prompt -> C.input_value", "B.prompt -> X.text_input\n  X.message -> C.input_value"
        )
        + "  X.operation: Case Conversion\n  X.case_type: uppercase\n"
    )
    llm.queue(intent("build_flow"), plan("TextOperations"), spec_reply(edited))
    second = await assistant.arun("add an uppercase step before the output")

    assert second.ok, second.error
    classify, plan_call, write = llm.requests[3:6]
    assert "already has a flow" in classify.text
    assert "Answer this: {question}" in plan_call.text and "Answer this: {question}" in write.text
    # The write prompt has the interfaces of the kept components too, not only the added one.
    assert "ChatInput (Chat Input)" in write.text and "TextOperations (Text Operations)" in write.text
    assert lfx_run(second.flow, "hi") == "ANSWER THIS: HI"
    assert assistant.session.last_flow.flow == second.flow
    assert assistant.session.last_flow.content == second.spec


async def test_loaded_flow_is_edited_by_the_next_request(llm, make_assistant, tmp_path):
    assistant = make_assistant("anthropic")
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(build_flow(UPPER_SPEC).flow))
    loaded = assistant.load_flow(str(path))
    assert assistant.session.last_flow.flow == loaded

    llm.queue(intent("build_flow"), plan("ChatInput", "ChatOutput"), spec_reply(UPPER_SPEC.replace("upper", "lower")))
    result = await assistant.arun("make it lowercase instead")
    assert result.ok, result.error
    assert ".case_type: uppercase" in llm.requests[2].text  # the loaded flow's spec was the starting point
    assert lfx_run(result.flow, "MiXed") == "mixed"


def test_load_flow_rejects_what_is_not_a_flow(make_assistant, tmp_path):
    from lfassist_jupyter.errors import ConfigError

    assistant = make_assistant("openai")
    with pytest.raises(ConfigError, match="Could not read"):
        assistant.load_flow(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="nodes"):
        assistant.load_flow("just some words")
    with pytest.raises(ConfigError, match="Not a Langflow flow"):
        assistant.load_flow({"data": {"edges": []}})
    assert assistant.session.last_flow is None


async def test_a_component_made_earlier_in_the_session_is_offered_to_the_flow(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("generate_component"), fenced(GOOD))
    assert (await assistant.arun("a component that uppercases text")).validated

    upper_spec = (
        "nodes:\n  A: ChatInput\n  U: UppercaseComponent\n  C: ChatOutput\n"
        "edges:\n  A.message -> U.input_text\n  U.output -> C.input_value\n"
    )
    llm.queue(intent("build_flow"), plan("ChatInput", "UppercaseComponent", "ChatOutput"), spec_reply(upper_spec))
    result = await assistant.arun("now use it in a chat flow")

    assert result.ok, result.error
    assert '- "UppercaseComponent" ["custom"]:' in llm.requests[3].last_user  # offered to the plan, as data
    assert "UppercaseComponent (Uppercase)" in llm.requests[4].text  # and its real ports in the write prompt
    assert lfx_run(result.flow, "loud") == "LOUD"
    assert result.outcome.components == []  # reused, not generated again: 2 model calls after classification


async def test_a_flow_pipeline_is_assembled_without_a_sandbox_call(llm, make_assistant, sandbox, monkeypatch):
    """Assembly reads memory only: the session component's node template is built inside the
    request's run, through the sandbox port, once (the next flow request reuses it)."""
    from lfassist_jupyter.langflow.validator import ChainValidator

    assistant = make_assistant("openai")
    llm.queue(intent("generate_component"), fenced(GOOD))
    assert (await assistant.arun("a component that uppercases text")).validated
    built: list[str] = []
    real = sandbox.component_template

    def template(code, timeout=None):
        built.append(code)
        return real(code, timeout)

    monkeypatch.setattr(sandbox, "component_template", template)
    pipeline = assistant.flow_pipeline()
    assert built == [] and pipeline.session_component.name == "UppercaseComponent" and pipeline.sandbox is sandbox
    upper_spec = (
        "nodes:\n  A: ChatInput\n  U: UppercaseComponent\n  C: ChatOutput\n"
        "edges:\n  A.message -> U.input_text\n  U.output -> C.input_value\n"
    )
    llm.queue(intent("build_flow"), plan("ChatInput", "UppercaseComponent", "ChatOutput"), spec_reply(upper_spec))
    result = await assistant.arun("now use it in a chat flow")
    assert result.ok and lfx_run(result.flow, "loud") == "LOUD", result.error
    assert GOOD in built  # built during the run, in the sandbox
    built.clear()
    again = assistant.flow_pipeline()
    assert built == [] and "template" in again.templates[GOOD]  # kept for the next flow request

    class Server:  # a validator that runs no flow (a Langflow server's)
        async def avalidate(self, code):
            raise AssertionError

        async def areference(self):
            return None

    chain = ChainValidator(Server(), sandbox)
    assert chain.flow_sandbox is sandbox  # declared by the chain, not probed for by the assistant
    assert make_assistant("openai", validator=chain).flow_pipeline().sandbox is sandbox


async def test_server_components_join_the_catalogue_within_the_prompt_budget(llm, make_assistant):
    base = default_catalog().registry["ChatOutput"]
    server = {f"ServerWidget{i}": {**base, "description": f"Server component number {i}."} for i in range(400)}
    assistant = make_assistant("openai", max_retries=1)  # a copied template need not run: the prompts matter
    assistant.flow_components = server
    spec = "nodes:\n  A: ChatInput\n  W: ServerWidget7\nedges:\n  A.message -> W.input_value\n"
    llm.queue(intent("build_flow"), plan("ChatInput", "ServerWidget7"), spec_reply(spec))
    result = await assistant.arun("show the chat input with the server's widget")

    assert result.flow_report is not None and result.flow is not None
    assert '"ServerWidget399"' in llm.requests[1].last_user  # a big catalogue falls back to names only
    assert "Server component number" not in llm.requests[1].text
    assert "ServerWidget7 (Chat Output)" in llm.requests[2].text
    assert all(len(r.text.encode()) <= MAX_PROMPT_BYTES for r in llm.requests), [len(r.text) for r in llm.requests]


async def test_the_last_flow_survives_a_kernel_restart(llm, make_assistant, tmp_path):
    from lfassist_jupyter.core.session import SessionStore

    store = SessionStore(tmp_path / "restart")
    first = make_assistant("openai", session_store=store)
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(PROMPT_SPEC))
    assert (await first.arun("a flow that answers with a prompt")).ok

    again = make_assistant("openai", session_store=store, session_id=first.session_id)
    llm.queue(intent("build_flow"), plan("ChatInput"), spec_reply(PROMPT_SPEC.replace("Answer this", "Reply to")))
    result = await again.arun("say 'Reply to' instead")
    assert result.ok, result.error
    assert "Answer this: {question}" in llm.requests[5].text
    assert lfx_run(result.flow, "x") == "Reply to: x"


async def test_max_retries_zero_builds_once_without_validation(llm, make_assistant):
    llm.queue(intent("build_flow"), plan("ChatInput", "ChatOutput"), spec_reply(PROMPT_SPEC))
    result = await make_assistant("openai", max_retries=0).arun("a flow")
    assert result.flow is not None and not result.validated and result.run is None
    assert steps(result) == ["planning_flow", "generating_flow", "building_flow"]
    assert "not validated" in result.result


async def test_a_prose_reply_is_an_answer_not_a_broken_flow(llm, make_assistant):
    llm.queue(intent("build_flow"), plan("ChatInput"), "Which model provider do you want to use?")
    result = await make_assistant("openai").arun("a flow")
    assert result.status == "complete" and result.flow is None
    assert result.result == "Which model provider do you want to use?"


async def test_a_loaded_flow_key_never_reaches_the_session_file_or_a_prompt(llm, make_assistant, tmp_path):
    flow = build_flow(LLM_SPEC).flow
    model = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "LanguageModelComponent")
    field = model["data"]["node"]["template"]["api_key"]
    assert field["password"]
    field.update(value="sk-live-secret-abcdef123456", load_from_db=False)
    assistant = make_assistant("openai")
    assistant.load_flow(json.dumps(flow))

    llm.queue(intent("build_flow"), plan("ChatInput"), spec_reply(LLM_SPEC))
    assert (await assistant.arun("make it briefer")).ok
    stored = "".join(p.read_text() for p in (tmp_path / "sessions").glob("*.json"))
    assert "LanguageModelComponent" in stored and "sk-live-secret" not in stored
    assert all("sk-live-secret" not in r.text for r in llm.requests)


async def test_prose_in_a_repair_round_is_a_failed_attempt_not_the_old_flow(llm, make_assistant):
    broken = COMBINE_SPEC.replace("A.message -> D.text2", "A.message -> D.txt")
    llm.queue(intent("build_flow"), plan("ChatInput"), spec_reply(broken), "Sorry, I cannot fix that.")
    result = await make_assistant("openai", max_retries=2).arun("a flow")
    assert not result.validated and result.attempts == 2
    assert "held no spec" in result.error
    assert steps(result).count("flow_validated") == 0


async def test_a_file_flow_whose_package_the_sandbox_lacks_is_not_judged_nor_repaired(llm, make_assistant, monkeypatch):
    """lfx's requirement logic asks for google-api-python-client for the File component (it reads
    from Google Drive too), which this environment lacks: ``lfx run`` refuses the flow at its
    dependency preflight.  Not judged here, then: never validated, no repair round (a model cannot
    install a package), no probe run (it would stop at the same import); the answer names it."""
    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    file_spec = "nodes:\n  F: File\n  C: ChatOutput\nedges:\n  F.message -> C.input_value\n"
    llm.queue(intent("build_flow"), plan("File", "ChatOutput"), spec_reply(file_spec))
    result = await make_assistant("openai").arun("show a file's text in the chat")

    assert not result.ok and not result.validated and len(llm.requests) == 3  # no repair round spent on it
    assert result.run is None and "Not judged here" in (result.error or "")
    assert [p.distribution for p in result.flow_report.missing_packages] == ["google-api-python-client"]
    assert result.flow_report.verdict == "not_judged" and not result.flow_report.errors
    assert "google-api-python-client" in result.result  # the answer's summary says what to install


def test_sandbox_probe_run_is_time_capped(sandbox):
    from lfassist_jupyter import default_catalog

    slow = GOOD.replace("return Message(text=", "import time\n        time.sleep(60)\n        return Message(text=")
    made = sandbox.component_template(slow)
    assert made.ok, made
    catalog = default_catalog()
    catalog.add("SlowComponent", made.template)
    spec = "nodes:\n  A: ChatInput\n  U: SlowComponent\n  C: ChatOutput\nedges:\n  A.message -> U.input_text\n"
    flow = build_flow(spec + "  U.output -> C.input_value\n", catalog=catalog).flow
    run = sandbox.probe_run(flow, "x", timeout=2)
    assert run.ok is False and "in time" in run.error
    assert sandbox.probe_run(build_flow(UPPER_SPEC).flow, "after").text == "AFTER"
