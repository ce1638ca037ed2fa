"""Loops and branches: each wiring mistake a model makes is repaired before validation, and the
repaired flow's probe run (in the sandbox) answers what lfx's own runner answers for it.

Through ``Assistant`` and ``%%assist`` against the fake model server; the specs are the ones a
model writes (issue 23): a loop without its feedback edge, ``done`` into the body, ``item`` and
``done`` swapped, the body fed back into the loop's ``data`` input, If-Else branches from
``R.true`` / ``R.false`` / ``R.output``, and both branches from a non-existent ``R.result``.
"""

from __future__ import annotations

import copy

import pytest
from _support.components import fenced, intent, lfx_run, plan, spec_reply

from lfassist_jupyter import build_flow, default_catalog, validate_flow
from lfassist_jupyter.core.flow.pipeline import PROBE_TEXT
from lfassist_jupyter.flows import repair_flow

LOOP = """\
name: Chunk marker
nodes:
  A: ChatInput
  S: SplitText
  L: LoopComponent
  B: ParserComponent
  D: ParserComponent
  O: ChatOutput
edges:
  A.message -> S.data_inputs
  S.dataframe -> L.data
{body}
  D.parsed_text -> O.input_value
config:
  S.chunk_size: 12
  S.chunk_overlap: 0
  S.separator: " "
  B.pattern: "<{{text}}>"
  D.pattern: "{{text}}"
"""
LOOP_RIGHT = "  L.item -> B.input_data\n  B.parsed_text -> L.item\n  L.done -> D.input_data"
LOOP_MISTAKES = {
    "no feedback edge": "  L.item -> B.input_data\n  L.done -> D.input_data",
    "done into the body": "  L.done -> B.input_data\n  B.parsed_text -> L.item\n  L.done -> D.input_data",
    "item and done swapped": "  L.done -> B.input_data\n  B.parsed_text -> L.item\n  L.item -> D.input_data",
    "body into the data input": "  L.item -> B.input_data\n  B.parsed_text -> L.data\n  L.done -> D.input_data",
}

BRANCH = """\
name: Greeting router
nodes:
  A: ChatInput
  R: ConditionalRouter
  P: Prompt Template
  Q: Prompt Template
  O: ChatOutput
  N: ChatOutput
edges:
  A.message -> R.input_text
{body}
  P.prompt -> O.input_value
  Q.prompt -> N.input_value
config:
  R.operator: contains
  R.match_text: hello
  R.case_sensitive: false
  P.template: "yes: {{m}}"
  Q.template: "no: {{m}}"
"""
BRANCH_RIGHT = "  R.true_result -> P.m\n  R.false_result -> Q.m"
BRANCH_MISTAKES = {
    "R.true and R.false": "  R.true -> P.m\n  R.false -> Q.m",
    "R.output and R.else": "  R.output -> P.m\n  R.else -> Q.m",
}

CASES = [(LOOP, LOOP_RIGHT, name, body) for name, body in LOOP_MISTAKES.items()] + [
    (BRANCH, BRANCH_RIGHT, name, body) for name, body in BRANCH_MISTAKES.items()
]


@pytest.fixture(scope="module")
def expected(sandbox):
    """What lfx's own runner answers for the correctly wired flows (the ground truth)."""
    out = {}
    for spec, right in ((LOOP, LOOP_RIGHT), (BRANCH, BRANCH_RIGHT)):
        built = build_flow(spec.format(body=right))
        assert built.ok and validate_flow(built.flow).is_valid, built.errors
        out[spec] = {text: lfx_run(built.flow, text) for text in (PROBE_TEXT, "Goodbye")}
    assert out[LOOP][PROBE_TEXT] == "<Hello! This>\n<is a probe>\n<run.>"
    assert out[BRANCH][PROBE_TEXT] == f"yes: {PROBE_TEXT}" and out[BRANCH]["Goodbye"] == "no: Goodbye"
    return out


@pytest.mark.parametrize(("spec", "right", "mistake", "body"), CASES, ids=[c[2] for c in CASES])
async def test_a_wiring_mistake_is_repaired_and_the_probe_run_answers_like_lfx(
    llm, make_assistant, expected, spec, right, mistake, body
):
    wrong = spec.format(body=body)
    llm.queue(intent("build_flow"), plan("ChatInput", "LoopComponent", "ConditionalRouter"), spec_reply(wrong))
    result = await make_assistant("openai").arun(f"a flow with {mistake}")

    assert result.ok and result.validated, result.error
    assert len(llm.requests) == 3  # classify, plan, write: the repair cost no model call
    assert max(len(r.text.encode()) for r in llm.requests) <= 16 * 1024  # the flows' prompt budget
    # The repair is listed, and the repaired spec is the right wiring.
    assert any("rewired" in n or "added" in n for n in result.outcome.notes), result.outcome.notes
    repaired_edges = {line.strip() for line in result.spec.splitlines() if "->" in line}
    assert {line.strip() for line in right.splitlines()} <= repaired_edges
    # The probe run ran the loop (or took the branch) and answers what lfx answers for the flow.
    assert result.run.ok and result.run.text == expected[spec][PROBE_TEXT]
    assert lfx_run(result.flow, PROBE_TEXT) == expected[spec][PROBE_TEXT]
    assert lfx_run(result.flow, "Goodbye") == expected[spec]["Goodbye"]


async def test_both_branches_from_a_missing_output_are_left_for_the_model(llm, make_assistant, expected):
    """Mapping both ``R.result`` edges onto one output would silently lose the false branch."""
    wrong = BRANCH.format(body="  R.result -> P.m\n  R.result -> Q.m")
    built = build_flow(wrong)
    assert not built.ok and any("which branch" in str(e) for e in built.errors)

    llm.queue(
        intent("build_flow"),
        plan("ChatInput", "ConditionalRouter", "Prompt Template", "ChatOutput"),
        spec_reply(wrong),
        spec_reply(BRANCH.format(body=BRANCH_RIGHT)),
    )
    result = await make_assistant("openai").arun("route greetings one way and the rest another")
    assert result.ok, result.error
    repair = llm.requests[3].text
    assert "R.result" in repair and "true_result" in repair and "false_result" in repair
    assert lfx_run(result.flow, "Goodbye") == expected[BRANCH]["Goodbye"]


async def test_a_loop_without_feedback_is_not_reported_validated(llm, make_assistant):
    # The body ends in the Chat Output: which node's result should loop back is not clear.
    unrepairable = LOOP.format(body="  L.item -> B.input_data\n  B.parsed_text -> O.input_value").replace(
        "  D.parsed_text -> O.input_value\n", ""
    )
    raw = build_flow(LOOP.format(body=LOOP_MISTAKES["no feedback edge"]), repair=False)
    report = validate_flow(raw.flow)
    assert not report.is_valid and any("no feedback edge" in str(e) for e in report.errors)

    llm.queue(intent("build_flow"), plan("LoopComponent"), spec_reply(unrepairable))
    result = await make_assistant("openai", max_retries=1).arun("mark each chunk")
    assert not result.validated and not result.ok
    assert "feedback" in (result.error or "")


def test_done_into_the_body_is_an_endless_loop_for_validate_flow():
    raw = build_flow(LOOP.format(body=LOOP_MISTAKES["item and done swapped"]), repair=False)
    report = validate_flow(raw.flow)
    assert not report.is_valid and any(e.code == "cycle" for e in report.errors), report.errors


def test_assist_repairs_a_loop_in_a_notebook(flow_ip, llm, monkeypatch, expected):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-control-flow-test-0123456789")
    llm.queue(
        intent("build_flow"),
        plan("ChatInput", "SplitText", "LoopComponent", "ParserComponent", "ChatOutput"),
        spec_reply(LOOP.format(body=LOOP_MISTAKES["body into the data input"])),
    )
    result = flow_ip.run_cell_magic("assist", "", "a flow that wraps each chunk of the text in <>")
    assert result.kind == "flow" and result.ok, result.error
    assert result.run.text == expected[LOOP][PROBE_TEXT]
    assert "B.parsed_text -> L.item" in result.spec and "B.parsed_text -> L.data" not in result.spec
    assert len(llm.requests) == 3
    # The write prompt showed the loop's feedback handle and the canonical loop example.
    write = llm.requests[2].text
    assert "item: feedback <- Data|Message" in write and "Loop wiring" in write


def _rename_outputs(flow: dict, names: dict[str, str]) -> dict:
    """``flow`` with edges' source outputs renamed, as a hand-edited or older flow file has them."""
    flow = copy.deepcopy(flow)
    for edge in flow["data"]["edges"]:
        handle = edge["data"]["sourceHandle"]
        handle["name"] = names.get(handle["name"], handle["name"])
    return flow


@pytest.mark.parametrize("mistake", list(LOOP_MISTAKES))
def test_repair_flow_fixes_a_loop_in_flow_json(sandbox, expected, mistake):
    raw = build_flow(LOOP.format(body=LOOP_MISTAKES[mistake]), repair=False).flow
    assert not validate_flow(raw).is_valid
    repaired = repair_flow(raw, catalog=default_catalog())
    assert [c.kind for c in repaired.changes] and {c.kind for c in repaired.changes} == {"edge"}
    assert validate_flow(repaired.flow).is_valid
    assert sandbox.probe_run(repaired.flow, PROBE_TEXT).text == expected[LOOP][PROBE_TEXT]
    assert lfx_run(repaired.flow, "Goodbye") == expected[LOOP]["Goodbye"]


def test_repair_flow_maps_branches_and_leaves_an_ambiguous_pair(expected):
    right = build_flow(BRANCH.format(body=BRANCH_RIGHT)).flow
    repaired = repair_flow(
        _rename_outputs(right, {"true_result": "if_true", "false_result": "else"}), catalog=default_catalog()
    )
    assert len(repaired.changes) == 2 and validate_flow(repaired.flow).is_valid
    assert lfx_run(repaired.flow, "Goodbye") == expected[BRANCH]["Goodbye"]
    assert lfx_run(repaired.flow, PROBE_TEXT) == expected[BRANCH][PROBE_TEXT]

    both = _rename_outputs(right, {"true_result": "result", "false_result": "result"})
    left = repair_flow(both, catalog=default_catalog())
    assert left.changes == [] and not validate_flow(left.flow).is_valid  # not "repaired" into one branch


async def test_a_model_in_the_loop_body_is_stubbed_and_the_loop_still_runs(llm, make_assistant):
    body = (
        "  L.item -> B.input_data\n  B.parsed_text -> M.input_value\n  M.text_output -> L.item\n"
        "  L.done -> D.input_data"
    )
    spec = LOOP.format(body=body).replace("  O: ChatOutput\n", "  O: ChatOutput\n  M: LanguageModelComponent\n")
    llm.queue(intent("build_flow"), plan("LoopComponent", "LanguageModelComponent"), spec_reply(spec))
    result = await make_assistant("openai").arun("summarise each chunk with an LLM")
    assert result.ok, result.error
    assert [s.name for s in result.run.stubbed] == ["Language Model"]
    # The stub echoed each chunk: the body ran once per item, inside the loop.
    assert result.run.text.splitlines() == [
        "[stub Language Model] <Hello! This>",
        "[stub Language Model] <is a probe>",
        "[stub Language Model] <run.>",
    ]


async def test_a_probe_run_that_answers_nothing_is_not_a_pass(llm, make_assistant):
    # lfx runs it "successfully" and answers an empty string (the regex replaces everything).
    silent = (
        "nodes:\n  A: ChatInput\n  X: TextOperations\n  C: ChatOutput\n"
        "edges:\n  A.message -> X.text_input\n  X.message -> C.input_value\n"
        'config:\n  X.operation: Text Replace\n  X.search_pattern: ".*"\n  X.replacement_text: ""\n'
        "  X.use_regex: true\n"
    )
    assert lfx_run(build_flow(silent).flow, PROBE_TEXT) == ""
    llm.queue(intent("build_flow"), plan("TextOperations"), spec_reply(silent))
    result = await make_assistant("openai", max_retries=1).arun("a flow that answers")
    assert not result.validated and not result.ok
    assert "answered nothing" in (result.error or "")


def test_a_huge_loop_spec_is_inferred_in_one_pass():
    """Linear work: a 3,000-node loop body (hostile size) gets its feedback edge, no sandbox needed."""
    from lfassist_jupyter.flows.catalog import Catalog
    from lfassist_jupyter.flows.control import infer_control_flow

    loop = {
        "template": {"data": {"type": "other", "input_types": ["Data", "Message"], "show": True}},
        "outputs": [
            {"name": "item", "types": ["Data"], "allows_loop": True, "loop_types": ["Message"]},
            {"name": "done", "types": ["DataFrame"]},
        ],
    }
    step = {
        "template": {"x": {"type": "other", "input_types": ["Data", "Message"], "show": True}},
        "outputs": [{"name": "out", "types": ["Message"]}],
    }
    catalog = Catalog({"LoopComponent": loop, "Step": step})
    n = 3000
    nodes = "\n".join(["  L: LoopComponent", *(f"  S{i}: Step" for i in range(n))])
    edges = "\n".join(["  L.item -> S0.x", *(f"  S{i}.out -> S{i + 1}.x" for i in range(n - 1))])
    fixed = infer_control_flow(f"nodes:\n{nodes}\nedges:\n{edges}\n", catalog)
    assert [c.after for c in fixed.changes] == [f"S{n - 1}.out -> L.item"] and not fixed.errors
    assert f"  S{n - 1}.out -> L.item" in fixed.spec.splitlines()


# -- a loop body that ends in a node with several outputs (issue 34) ------------------------------

TAGGER = """\
from lfx.custom.custom_component.component import Component
from lfx.io import DataInput, Output
from lfx.schema.data import Data
from lfx.schema.dataframe import DataFrame


class TaggerComponent(Component):
    display_name = "Tagger"
    description = "Wraps a chunk's text in angle brackets."
    icon = "tag"
    name = "Tagger"

    inputs = [DataInput(name="chunk", display_name="Chunk")]
    outputs = [
        Output(display_name="Tagged", name="tagged", method="build_tagged"),
        Output(display_name="Table", name="table", method="build_table"),
    ]

    def _tagged(self) -> str:
        text = self.chunk.data.get("text", "") if isinstance(self.chunk, Data) else str(self.chunk or "")
        return f"<{text}>"

    def build_tagged(self) -> Data:
        return Data(data={"text": self._tagged()})

    def build_table(self) -> DataFrame:
        return DataFrame([{"text": self._tagged()}])
"""
MULTI_OUTPUT_LOOP = LOOP.replace("  B: ParserComponent\n", "  T: TaggerComponent\n").replace(
    '  B.pattern: "<{{text}}>"\n', ""
)


async def test_a_loop_body_ending_in_a_multi_output_node_gets_the_one_output_item_takes(llm, make_assistant, expected):
    """The body's last node has two outputs; only ``tagged`` (Data) can feed the loop's item
    (``table`` is a DataFrame): the feedback edge is added from it, no model call."""
    wrong = MULTI_OUTPUT_LOOP.format(body="  L.item -> T.chunk\n  L.done -> D.input_data")
    new = [{"name": "Tagger", "description": "wraps a chunk's text in angle brackets"}]
    llm.queue(
        intent("component_then_flow"),
        plan("ChatInput", "SplitText", "LoopComponent", "ParserComponent", "ChatOutput", new=new),
        fenced(TAGGER),
        spec_reply(wrong),
    )
    result = await make_assistant("openai").arun("wrap each chunk of the text in <> with a custom tagger")

    assert result.ok and result.validated, result.error
    assert len(llm.requests) == 4  # classify, plan, the component, the spec: the wiring cost no call
    assert any("added T.tagged -> L.item" in n for n in result.outcome.notes), result.outcome.notes
    assert "T.tagged -> L.item" in result.spec and "T.table -> L.item" not in result.spec
    # The probe run ran the loop, and answers what lfx's own runner answers.
    assert result.run.ok and result.run.text == expected[LOOP][PROBE_TEXT]
    assert lfx_run(result.flow, PROBE_TEXT) == expected[LOOP][PROBE_TEXT]


CONVERTER_LOOP = LOOP.replace("  O: ChatOutput\n", "  T: TypeConverterComponent\n  O: ChatOutput\n  E: ChatOutput\n")


def test_a_feedback_output_already_shown_in_a_chat_output_is_not_a_candidate():
    """``T.message_output`` already goes to a Chat Output (each step shown): the one unconsumed
    output the loop's item takes is ``T.data_output``."""
    body = (
        "  L.item -> B.input_data\n  B.parsed_text -> T.input_data\n  T.message_output -> E.input_value\n"
        "  L.done -> D.input_data"
    )
    built = build_flow(CONVERTER_LOOP.format(body=body))
    assert built.ok, built.errors
    assert any("added T.data_output -> L.item" in c.message for c in built.changes)
    assert validate_flow(built.flow).is_valid


def test_two_outputs_that_could_close_the_loop_are_refused_with_both_named():
    """TypeConverter's ``message_output`` and ``data_output`` both fit the loop's item: a guess
    either way, so the problem names both for the model."""
    body = "  L.item -> B.input_data\n  B.parsed_text -> T.input_data\n  L.done -> D.input_data"
    built = build_flow(CONVERTER_LOOP.replace("  E: ChatOutput\n", "").format(body=body))
    assert not built.ok
    problem = next(e for e in built.errors if "feedback" in e.message)
    assert "T.message_output" in problem.message and "T.data_output" in problem.message
    assert "T.message_output" in problem.fix and "T.data_output" in problem.fix
