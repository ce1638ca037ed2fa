"""Flows from lfx's spec: building (checked by lfx itself), the catalogue, repairs and the picture."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET

import pytest
from _support.components import COMBINE_SPEC, LLM_SPEC, UPPER_SPEC, lfx_run, named

from lfassist_jupyter import build_flow, default_catalog, flow_picture, validate_flow
from lfassist_jupyter.flows import FlowSpecError, extract_spec, flow_to_spec, repair_flow

# Every build runs in the sandbox (lfx's builder never runs in this process): share the session's worker.
pytestmark = pytest.mark.usefixtures("sandbox")


def node(flow: dict, kind: str) -> dict:
    return next(n for n in flow["data"]["nodes"] if n["data"]["type"] == kind)


QA_SPEC = named(COMBINE_SPEC, "Echo QA")


# -- building ----------------------------------------------------------------------------------


def test_spec_builds_a_flow_that_lfx_loads_and_runs():
    result = build_flow(QA_SPEC)
    assert result.ok, result.errors
    flow = result.flow
    # The prompt's {question} became an input (lfx's builder alone fails on the edge into it).
    assert "question" in node(flow, "Prompt Template")["data"]["node"]["template"]
    # The quotes delimit the value: the delimiter is ' -- ', not '" -- "'.
    assert node(flow, "CombineText")["data"]["node"]["template"]["delimiter"]["value"] == " -- "
    from lfx.graph.graph.base import Graph

    graph = Graph.from_payload(flow["data"], flow_id="built")
    assert len(graph.vertices) == 4
    assert lfx_run(flow, "What is 2+2?") == "Answer this: What is 2+2? -- What is 2+2?"


def test_lfx_builder_alone_fails_on_prompt_variables():
    """The gap we fill: lfx's build_flow_from_spec cannot connect into a {variable}."""
    from lfx.graph.flow_builder.builder import build_flow_from_spec

    assert "error" in build_flow_from_spec(QA_SPEC)


def test_built_flow_passes_lfx_structural_validation(tmp_path):
    """A build has no identity yet (no top-level ``id``: lfx's level 1 asks for one); the file it
    is saved as has one (flows/save.py), and passes. tests/flows/test_flow_files.py runs the
    lfx CLI on what every save path writes."""
    from lfx.cli.validation.core import validate_flow_file

    from lfassist_jupyter.flows.save import write_flow_file

    flow = build_flow(QA_SPEC).flow
    assert "id" not in flow
    saved = write_flow_file(flow, tmp_path / "flow.json")
    assert validate_flow_file(saved.path, level=3).errors == []


def test_components_are_updated_like_the_canvas_does():
    """Text Operations has no output until an operation is chosen: its own update creates it."""
    from lfx.graph.flow_builder.builder import build_flow_from_spec

    assert "error" in build_flow_from_spec(UPPER_SPEC)
    result = build_flow(UPPER_SPEC)
    assert result.ok, result.errors
    assert lfx_run(result.flow, "shout this") == "SHOUT THIS"
    again = build_flow(flow_to_spec(result.flow, catalog=default_catalog()))
    assert again.ok, again.errors
    assert lfx_run(again.flow, "and this") == "AND THIS"


def test_build_works_inside_a_running_event_loop():
    async def inside() -> bool:
        return build_flow(UPPER_SPEC).ok

    assert asyncio.run(inside())


@pytest.mark.parametrize(
    "reply",
    [
        f"Here is your flow:\n```yaml\n{QA_SPEC}```\nIt answers the question.",
        f"Sure.\n```\n{QA_SPEC}```",
        f"Here it is.\n\n{QA_SPEC}",
    ],
    ids=["fenced-tagged", "fenced-bare", "unfenced"],
)
def test_spec_is_found_in_a_model_reply(reply):
    assert "A: ChatInput" in extract_spec(reply)
    result = build_flow(reply)
    assert result.ok, result.errors
    assert lfx_run(result.flow, "hi") == "Answer this: hi -- hi"


def test_a_malformed_line_is_skipped_with_a_warning():
    spec = QA_SPEC.replace("edges:\n", "edges:\n  A.message goes to B\n").replace(
        "  C: ChatOutput\n", "  C: ChatOutput\n  oops\n"
    )
    result = build_flow(spec)
    assert result.ok, result.errors
    assert len(result.warnings) == 2
    assert any("A.message goes to B" in w for w in result.warnings)
    assert lfx_run(result.flow, "x") == "Answer this: x -- x"


def test_arrow_spellings_models_write_are_accepted():
    result = build_flow(QA_SPEC.replace("A.message -> B.question", "A.message→B.question"))
    assert result.ok, result.errors


def test_no_spec_is_a_clear_error():
    with pytest.raises(FlowSpecError, match="nodes:"):
        build_flow("I could not think of a flow, sorry.")


def test_errors_name_node_and_field_and_suggest_a_fix():
    spec = """\
nodes:
  A: ChatInput
  B: ChatOutput
  C: NoSuchThing
edges:
  A.message -> Z.input_value
  A.message -> B.input_value
config:
  B.no_such_field: 1
"""
    result = build_flow(spec, repair=False)
    assert not result.ok
    by_code = {e.code: e for e in result.errors}
    assert by_code["unknown_component"].node == "C"
    assert by_code["unknown_node"].node == "Z"
    assert by_code["bad_value"].node == "B" and by_code["bad_value"].field == "no_such_field"
    assert "input_value" in by_code["bad_value"].fix
    # What could be built is still there, with the good edge.
    assert result.flow is not None and len(result.flow["data"]["edges"]) == 1


def test_flow_to_spec_round_trips():
    first = build_flow(QA_SPEC).flow
    spec = flow_to_spec(first, catalog=default_catalog())
    assert 'D.delimiter: " -- "' in spec
    again = build_flow(spec)
    assert again.ok, again.errors
    assert lfx_run(again.flow, "why?") == "Answer this: why? -- why?"


def test_flow_to_spec_never_writes_secrets():
    result = build_flow("nodes:\n  A: LanguageModelComponent\nconfig:\n  A.api_key: sk-secret-value\n")
    assert result.ok, result.errors
    assert "sk-secret-value" not in flow_to_spec(result.flow, catalog=default_catalog())


# -- repairs -----------------------------------------------------------------------------------


def test_repair_near_miss_component_name():
    spec = QA_SPEC.replace("A: ChatInput", "A: Chat Input").replace("C: ChatOutput", "C: ChatOutputs")
    assert not build_flow(spec, repair=False).ok
    result = build_flow(spec)
    assert result.ok, result.errors
    assert {(c.before, c.after) for c in result.changes if c.kind == "component"} == {
        ("Chat Input", "ChatInput"),
        ("ChatOutputs", "ChatOutput"),
    }


def test_repair_wrong_port_name_when_types_fit_one_port():
    spec = QA_SPEC.replace("D.combined_text -> C.input_value", "D.combined -> C.input")
    before = build_flow(spec, repair=False)
    assert {e.code for e in before.errors} == {"missing_output"}
    result = build_flow(spec)
    assert result.ok, result.errors
    assert {(c.before, c.after) for c in result.changes if c.kind == "port"} == {
        ("combined", "combined_text"),
        ("input", "input_value"),
    }
    assert lfx_run(result.flow, "q") == "Answer this: q -- q"


def test_ambiguous_port_is_left_for_the_model():
    # CombineText has two Message inputs (text1, text2): "text" fits both, so nothing is guessed.
    result = build_flow(QA_SPEC.replace("A.message -> D.text2", "A.message -> D.txt"))
    assert not result.ok
    assert result.errors[0].code == "missing_input" and result.errors[0].node == "D"


def test_repair_value_coercion_in_spec():
    spec = (
        "nodes:\n  A: ChatInput\n  B: ChatOutput\nedges:\n  A.message -> B.input_value\n"
        'config:\n  A.should_store_message: "false"\n'
    )
    result = build_flow(spec)
    assert result.ok, result.errors
    assert node(result.flow, "ChatInput")["data"]["node"]["template"]["should_store_message"]["value"] is False
    assert any(c.kind == "value" and c.after is False for c in result.changes)


def test_repair_flow_json_port_component_and_values():
    flow = build_flow(QA_SPEC).flow
    broken = json.loads(json.dumps(flow))
    edge = next(e for e in broken["data"]["edges"] if e["target"].startswith("ChatOutput"))
    edge["data"]["targetHandle"]["fieldName"] = "input"
    combine = node(broken, "CombineText")
    combine["data"]["type"] = "CombineTxt"
    combine["data"]["node"]["template"].pop("code")
    split = build_flow("nodes:\n  S: SplitText\n").flow["data"]["nodes"][0]
    split["data"]["node"]["template"]["chunk_size"]["value"] = "3"
    broken["data"]["nodes"].append(split)
    assert not validate_flow(broken).is_valid

    repaired = repair_flow(broken, catalog=default_catalog())
    # What is left is not guessable: the lone Split Text still lacks its input.
    assert [(e.code, e.field) for e in validate_flow(repaired.flow).errors] == [("required_input", "data_inputs")]
    kinds = {(c.kind, c.before, c.after) for c in repaired.changes}
    assert ("port", "input", "input_value") in kinds
    assert ("component", "CombineTxt", "CombineText") in kinds
    assert ("value", "3", 3) in kinds
    assert edge["data"]["targetHandle"]["fieldName"] == "input"  # the input is not modified
    repaired.flow["data"]["nodes"].remove(next(n for n in repaired.flow["data"]["nodes"] if n["id"] == split["id"]))
    assert validate_flow(repaired.flow).is_valid
    assert lfx_run(repaired.flow, "ok") == "Answer this: ok -- ok"


# -- catalogue -------------------------------------------------------------------------------


def test_catalogue_light_is_compact_and_names_every_component():
    catalog = default_catalog()
    text = catalog.light()
    assert len(catalog) >= 100
    assert "ChatInput:" in text and "Prompt Template:" in text
    # Two-phase discovery: the light list fits a prompt budget (16 KB per call) with room to spare.
    assert len(text) < 12_000
    assert all(len(line) < 140 for line in text.splitlines())


def test_catalogue_interfaces_give_typed_ports_of_the_chosen():
    text = default_catalog().interfaces(["ChatOutput", "Prompt Template"])
    assert "input_value" in text and "Message" in text
    assert "{variables}" in text
    assert "ChatInput" not in text


@pytest.mark.parametrize(
    "reply",
    [
        '["ChatInput", "prompt template", "ChatOutputs"]',
        "I would use:\n- ChatInput: reads the question\n- **Prompt Template** — formats it\n* Chat Output",
        "Start with a Chat Input, format it with the Prompt Template and show it in the Chat Output.",
    ],
    ids=["json", "bullets", "prose"],
)
def test_parse_choice_reads_three_reply_shapes(reply):
    assert default_catalog().parse_choice(reply) == ["ChatInput", "Prompt Template", "ChatOutput"]


def test_catalogue_add_a_generated_component_and_build_with_it():
    catalog = default_catalog()
    template = json.loads(json.dumps(catalog.registry["CombineText"]))
    template["display_name"] = "Joiner"
    catalog.add("Joiner", template, description="Joins two texts.")
    assert "Joiner" in catalog and "Joiner" not in default_catalog()
    # Listed for the planner as data (its words are the session's), not in lfx's own list.
    assert '- "Joiner" ["custom"]: "Joins two texts."' in catalog.light_added()
    assert "Joiner" not in catalog.light() and "Joiner" not in catalog.own_names
    result = build_flow(QA_SPEC.replace("D: CombineText", "D: Joiner"), catalog=catalog)
    assert result.ok, result.errors
    assert lfx_run(result.flow, "a") == "Answer this: a -- a"
    with pytest.raises(ValueError, match="template"):
        catalog.add("Bad", {"no": "template"})


# -- picture ---------------------------------------------------------------------------------


def test_picture_is_safe_self_contained_svg():
    spec = QA_SPEC.replace("name: Echo QA", 'name: <Q&A> "flow"')
    flow = build_flow(spec).flow
    node(flow, "ChatInput")["data"]["node"]["display_name"] = "Ask <b>me</b> & go"
    html = flow_picture(flow)._repr_html_()
    svg = html[html.index("<svg") : html.index("</svg>") + 6]
    root = ET.fromstring(svg)  # well-formed XML
    texts = ["".join(el.itertext()) for el in root.iter("{http://www.w3.org/2000/svg}text")]
    for n in flow["data"]["nodes"]:
        assert n["data"]["node"]["display_name"] in texts
    assert "Ask &lt;b&gt;me&lt;/b&gt; &amp; go" in svg
    assert "&lt;Q&amp;A&gt;" in html
    assert "Message" in texts  # an edge labelled with its type
    lowered = html.lower()
    assert "<script" not in lowered and 'href="http' not in lowered and "src=" not in lowered


# -- probe run -------------------------------------------------------------------------------


def test_probe_run_stubs_the_model_and_runs_the_rest(sandbox):
    flow = build_flow(LLM_SPEC).flow
    result = sandbox.probe_run(flow, "What is Langflow?")
    assert result.ok, result.error
    # The prompt really ran; only the model is a deterministic echo.
    assert result.text == "[stub Language Model] Be brief. What is Langflow?"
    assert [(s.name, s.reason) for s in result.stubbed] == [("Language Model", "calls a language model")]
    assert node(flow, "LanguageModelComponent")["data"]["type"] == "LanguageModelComponent"  # input untouched


def test_probe_run_without_models_equals_lfx_run(sandbox):
    flow = build_flow(QA_SPEC).flow
    result = sandbox.probe_run(flow, "same?")
    assert result.stubbed == []
    assert result.text == lfx_run(flow, "same?")


def test_probe_run_reports_a_failing_flow(sandbox):
    flow = build_flow("nodes:\n  F: File\n  C: ChatOutput\nedges:\n  F.message -> C.input_value\n").flow
    result = sandbox.probe_run(flow, "x")
    assert not result.ok and result.error


def test_probe_run_module_imports_only_stdlib():
    """It prepares the flow in the kernel, which never imports lfx; the stub's code is text."""
    import ast
    import sys
    from pathlib import Path

    import lfassist_jupyter.sandbox.probe as run

    tree = ast.parse(Path(run.__file__).read_text(encoding="utf-8"))
    roots = set()
    for item in ast.walk(tree):
        if isinstance(item, ast.Import):
            roots |= {a.name.split(".")[0] for a in item.names}
        elif isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
            roots.add(item.module.split(".")[0])
    assert roots - set(sys.stdlib_module_names) == set()
