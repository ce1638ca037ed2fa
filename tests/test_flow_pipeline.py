"""The flow pipeline end to end: the sandbox's probe run, then a sentence to a validated flow
through the real SDKs against the fake model server, each built flow run by lfx itself."""

from __future__ import annotations

import asyncio
import json

from lfassist_jupyter.flows import build_flow

LLM_SPEC = """\
nodes:
  A: ChatInput
  B: Prompt Template
  M: LanguageModelComponent
  C: ChatOutput
edges:
  A.message -> B.question
  B.prompt -> M.input_value
  M.text_output -> C.input_value
config:
  B.template: Be brief. {question}
"""

UPPER_SPEC = """\
nodes:
  A: ChatInput
  X: TextOperations
  C: ChatOutput
edges:
  A.message -> X.text_input
  X.message -> C.input_value
config:
  X.operation: Case Conversion
  X.case_type: uppercase
"""


def lfx_run(flow: dict, text: str) -> str:
    """Run a flow with lfx's own headless runner (in this test process) and return its chat output."""
    from lfx.run.base import run_flow

    out = asyncio.run(
        run_flow(flow_json=json.dumps(flow), input_value=text, check_variables=False, check_dependencies=False)
    )
    assert out.get("success"), out
    return out["result"]


# -- the sandbox's run_flow op ----------------------------------------------------------------


def test_sandbox_run_flow_equals_lfx_run(sandbox):
    flow = build_flow(UPPER_SPEC).flow
    run = sandbox.run_flow_sync(flow, "shout this")
    assert run["ok"], run["error"]
    assert run["text"] == lfx_run(flow, "shout this") == "SHOUT THIS"
    assert run["stubbed"] == []
    assert run["outputs"][0]["text"] == "SHOUT THIS"


def test_sandbox_run_flow_stubs_the_model_and_says_so(sandbox):
    flow = build_flow(LLM_SPEC).flow
    run = sandbox.run_flow_sync(flow, "What is Langflow?")
    assert run["ok"], run["error"]
    # The prompt really ran in the sandbox; only the model is a deterministic echo.
    assert run["text"] == "[stub Language Model] Be brief. What is Langflow?"
    model = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "LanguageModelComponent")
    assert run["stubbed"] == [{"node": model["id"], "name": "Language Model", "reason": "calls a language model"}]


def test_sandbox_run_flow_failing_flow_is_a_failed_run_not_an_exception(sandbox):
    flow = build_flow("nodes:\n  F: File\n  C: ChatOutput\nedges:\n  F.message -> C.input_value\n").flow
    run = sandbox.run_flow_sync(flow, "x")
    assert run["ok"] is False
    assert "Read File" in run["error"] and "No files" in run["error"]
    assert sandbox.run_flow_sync({"data": "nonsense"}, "x")["ok"] is False
    assert sandbox.run_flow_sync("not a flow", "x")["ok"] is False  # type: ignore[arg-type]
    # The worker is still fine afterwards.
    assert sandbox.run_flow_sync(build_flow(UPPER_SPEC).flow, "ok")["text"] == "OK"
