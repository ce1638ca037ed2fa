"""Issue 33: a flow someone built and exported, loaded, edited by one request, saved: every node
and edge the edit did not name comes back byte for byte, and the edit is applied.

"Byte for byte" as a saved flow file has it: the file is normalised as ``lfx export`` does (keys
sorted, drag-state keys and key values dropped: issue 35, ``flows/save.py``), so each original
node and edge is compared in that form, what ``lfx export`` would make of the export itself.

Through ``Assistant`` (what ``%assist flow load`` and the next ``%%assist`` call) with the fake
model server; the flows are real exports of other authors (``benchmarks/flows_corpus``).
"""

from __future__ import annotations

import json

import pytest
from _support.components import intent, plan, spec_reply
from _support.corpus import corpus_file, corpus_flow

from lfassist_jupyter import default_catalog
from lfassist_jupyter.flows import flow_to_spec
from lfassist_jupyter.flows.save import flow_file, normal_node
from lfassist_jupyter.ui.workspace import Workspace


def nodes_by_id(flow: dict) -> dict[str, dict]:
    return {n["id"]: normal_node(n) for n in flow["data"]["nodes"]}


def edge_texts(flow: dict) -> set[str]:
    return {json.dumps(e) for e in flow_file(flow, flow_id="00000000-0000-4000-8000-000000000000")["data"]["edges"]}


async def edit_and_save(llm, make_assistant, tmp_path, flow_id: str, change) -> tuple[dict, dict, str, object]:
    """Load the export, answer the edit request with its own spec changed by ``change``, save."""
    assistant = make_assistant("openai", max_retries=1)
    assistant.load_flow(str(corpus_file(flow_id, tmp_path)))
    shown = flow_to_spec(assistant.session.last_flow.flow, catalog=default_catalog())
    edited = change(shown)
    assert edited != shown
    llm.queue(intent("build_flow"), plan("ChatInput", "ChatOutput"), spec_reply(edited))
    result = await assistant.arun("change the flow as asked")
    assert result.flow is not None, result.error
    assert shown in llm.requests[2].text  # the loaded flow's spec was what the model edited
    saved = Workspace(data_dir=tmp_path / "data").save_flow(result.flow, tmp_path / "edited.json")
    return corpus_flow(flow_id), json.loads(saved.read_text()), edited, result


@pytest.mark.parametrize(
    ("flow_id", "node", "field", "before", "after"),
    [
        # Langflow 1.0.7, a grouped sub-flow, custom code inside the group, an older Prompt and OpenAI model
        ("Jcnok__jcnok1", "ChatOutput-2tLN0", "sender_name", "Meu Resumo", "Resumo Final"),
        # Langflow 1.5, an Ollama model node this lfx does not ship
        ("akashatek__OLQP_Basic_Prompting", "ChatInput-b7sDF", "input_value", "Hello", "Good morning"),
    ],
)
async def test_one_config_change_leaves_every_other_node_and_edge_byte_identical(
    llm, make_assistant, tmp_path, flow_id, node, field, before, after
):
    def change(spec: str) -> str:
        assert f": {before}\n" in spec
        return spec.replace(f": {before}\n", f": {after}\n")

    original, saved, _, result = await edit_and_save(llm, make_assistant, tmp_path, flow_id, change)

    # The edited flow itself, before any file normalisation: untouched nodes as they were, byte for byte.
    raw = {n["id"]: n for n in original["data"]["nodes"]}
    for edited in result.flow["data"]["nodes"]:
        if edited["id"] != node:
            assert json.dumps(edited) == json.dumps(raw[edited["id"]]), edited["id"]
    # The saved file (normalised as lfx export does, on both sides).
    old, new = nodes_by_id(original), nodes_by_id(saved)
    assert set(new) == set(old)  # no node lost, none added
    for nid, node_json in old.items():
        if nid != node:
            assert json.dumps(new[nid]) == json.dumps(node_json), nid  # positions, values, code, groups
    assert new[node]["data"]["node"]["template"][field]["value"] == after
    new[node]["data"]["node"]["template"][field]["value"] = before
    assert json.dumps(new[node]) == json.dumps(old[node])  # nothing else of the edited node moved
    assert edge_texts(saved) == edge_texts(original)


async def test_adding_a_node_keeps_the_rest_and_wires_the_new_one(llm, make_assistant, tmp_path):
    """A step inserted before the output: two edges change, everything else is as exported."""

    def change(spec: str) -> str:
        wire = "  D.text_output -> C.input_value\n"
        assert wire in spec and "  D: OllamaModel\n" in spec
        spec = spec.replace("  D: OllamaModel\n", "  D: OllamaModel\n  X: TextOperations\n")
        spec = spec.replace(wire, "  D.text_output -> X.text_input\n  X.message -> C.input_value\n")
        return spec + "  X.operation: Case Conversion\n  X.case_type: uppercase\n"

    original, saved, _, result = await edit_and_save(
        llm, make_assistant, tmp_path, "akashatek__OLQP_Basic_Prompting", change
    )
    old, new = nodes_by_id(original), nodes_by_id(saved)
    assert set(old) < set(new)
    (added,) = set(new) - set(old)
    assert new[added]["data"]["type"] == "TextOperations"
    for nid, node_json in old.items():
        assert json.dumps(new[nid]) == json.dumps(node_json), nid
    lost = [json.loads(e) for e in edge_texts(original) - edge_texts(saved)]
    assert [(e["source"], e["target"]) for e in lost] == [("OllamaModel-qRwJF", "ChatOutput-VjHp8")]
    wired = {(e["source"], e["target"]) for e in saved["data"]["edges"]}
    assert {("OllamaModel-qRwJF", added), (added, "ChatOutput-VjHp8")} <= wired
    assert result.flow_report is not None and not any("not in the flow" in str(e) for e in result.flow_report.errors)
