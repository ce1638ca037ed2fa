"""Issue 33: ``validate_flow`` on flows people built and exported, each compared with what lfx
itself says of the same flow (``lfx_verdict``: lfx's dependency preflight and its run, in a fresh
process of this environment, the sandbox's).  The flows are real exports of other authors
(``benchmarks/flows_corpus``); where a case needs one node alone, it is that node as saved.
"""

from __future__ import annotations

import copy
import json

import pytest
from _support.corpus import corpus_flow, lfx_verdict, single_node_flow, stored_verdicts

from lfassist_jupyter import validate_flow

GROUPED = "Jcnok__jcnok1"  # Langflow 1.0.7: a group of five nodes, custom code inside it


@pytest.mark.slow  # lfx's verdict from a fresh process that imports it
def test_a_grouped_flow_is_checked_as_lfx_opens_it(sandbox, tmp_path):
    flow = corpus_flow(GROUPED)
    lfx = lfx_verdict(flow, tmp_path)
    report = validate_flow(flow)

    # lfx opens the group and stops later, at a file from the author's machine, not at the group.
    assert "GroupNode" not in lfx["error"] and "storage namespace" in lfx["error"]
    assert not any("GroupNode" in str(e) or e.node == "Group" for e in report.errors), report.errors
    # The nodes inside the group are checked: its OpenAI Embeddings needs its key.
    assert ("secret", "OpenAI Embeddings") in {(n.kind, n.node) for n in report.needs}
    assert report.is_valid  # a key to provide is a need, not a broken flow


@pytest.mark.slow  # lfx's verdict from a fresh process that imports it
def test_a_stale_import_is_an_error_naming_it_as_lfx_refuses_the_node(sandbox, tmp_path):
    """A real custom node of the grouped flow, its code importing a module lfx no longer has."""
    group = next(n for n in corpus_flow(GROUPED)["data"]["nodes"] if n["data"]["type"] == "GroupNode")
    node = copy.deepcopy(
        next(n for n in group["data"]["node"]["flow"]["data"]["nodes"] if n["data"]["type"] == "ParseData")
    )
    code = node["data"]["node"]["template"]["code"]
    code["value"] = "from lfx.services.auth.utils import get_current_user\n" + code["value"]
    flow = {"name": "stale", "data": {"nodes": [node], "edges": []}}

    lfx = lfx_verdict(flow, tmp_path)
    report = validate_flow(flow)

    assert "lfx.services.auth.utils" in lfx["error"]  # lfx cannot load it either
    assert not report.is_valid
    (error,) = report.errors
    assert "lfx.services.auth.utils" in error.message and error.node_id == node["id"]
    # Control: the same node without the stale line is fine for both.
    code["value"] = code["value"].split("\n", 1)[1]
    assert validate_flow(flow).is_valid
    assert "lfx.services.auth.utils" not in lfx_verdict(flow, tmp_path)["error"]


def test_a_real_stale_import_behind_a_missing_package_is_still_named(sandbox):
    """An Astra DB node of a 1.1 flow imports ``langchain.pydantic_v1``: lfx with every package
    installed stops there (the stored verdict of the full Langflow environment); here the
    package astrapy is missing too, and the stale import is still what makes the flow broken."""
    stored = stored_verdicts()
    assert "langchain_classic.pydantic_v1" in stored["Arnob02__Customer_Support"]["full"]["run_message"]
    report = validate_flow(corpus_flow("Arnob02__Customer_Support"))
    assert not report.is_valid
    assert any("langchain.pydantic_v1" in e.message and e.node == "Astra DB" for e in report.errors)


@pytest.mark.slow  # lfx's verdict from a fresh process that imports it
def test_a_saved_output_whose_method_the_code_lacks_is_an_error_as_in_lfx(sandbox, tmp_path):
    """Chroma, saved by Langflow 1.0.11 with an output calling build_base_retriever(), which the
    node's code (on this lfx's base class) no longer has."""
    flow = single_node_flow(corpus_flow("paulomuraroferreira__Vector_Store_RAG_RAGAS"), "Chroma-FYr1l")
    lfx = lfx_verdict(flow, tmp_path)
    report = validate_flow(flow)

    assert "build_base_retriever" in lfx["error"]
    assert not report.is_valid
    assert any("build_base_retriever" in e.message and e.field == "base_retriever" for e in report.errors)
    # Control: without that output the node builds for both.
    node = flow["data"]["nodes"][0]["data"]["node"]
    node["outputs"] = [o for o in node["outputs"] if o["method"] != "build_base_retriever"]
    assert not any("build_base_retriever" in e.message for e in validate_flow(flow).errors)
    assert "build_base_retriever" not in lfx_verdict(flow, tmp_path)["error"]


@pytest.mark.slow  # lfx's verdict from a fresh process that imports it
def test_a_node_needing_a_package_the_sandbox_lacks_is_not_judged_not_broken(sandbox, tmp_path):
    """A 1.0 MistralAI Embeddings node imports langchain_mistralai, which this environment lacks
    (the install brings the OpenAI, Anthropic and Ollama bundles, not Mistral's)."""
    flow = single_node_flow(corpus_flow("AvishikarKannan__Questionpapergenerator"), "MistalAIEmbeddings-R7z9f")
    lfx = lfx_verdict(flow, tmp_path)
    report = validate_flow(flow)

    assert lfx["missing"] == ["langchain-mistralai"] and "langchain_mistralai" in lfx["error"]
    assert report.verdict == "not_judged" and not report.is_valid and not report.errors
    (need,) = [n for n in report.needs if n.kind == "package"]
    assert need.node_id == "MistalAIEmbeddings-R7z9f" and "%pip install langchain-mistralai" in need.message


def test_a_probe_run_stopping_at_what_the_user_must_provide_says_so(sandbox, tmp_path):
    """A Directory node of a 1.0.11 export reads its path from the author's global variable: the
    probe run stops there, and says which variable to set, not "failed"."""
    from lfassist_jupyter.ui.render.flow import run_lines
    from lfassist_jupyter.ui.workspace import Workspace

    flow = single_node_flow(corpus_flow("paulomuraroferreira__Vector_Store_RAG_RAGAS"), "Directory-J3zab")
    run = Workspace(data_dir=tmp_path / "ws", local_validator=sandbox).probe_run(flow, "hello")

    assert run.ok is False and "NoneType" in str(run.error)  # lfx's own words: a value it did not get
    (need,) = run.needs
    assert (need.kind, need.node_id, need.field) == ("file", "Directory-J3zab", "path")
    assert "'PDF Documents Path'" in need.message
    (line, ok), *_ = run_lines(run, "hello")
    assert ok is None and "stopped at what you must provide" in line and "failed" not in line
    # Control: a flow that fails for a fault of its own is still a failed run.
    broken = single_node_flow(corpus_flow("paulomuraroferreira__Vector_Store_RAG_RAGAS"), "Chroma-FYr1l")
    bad = Workspace(data_dir=tmp_path / "ws2", local_validator=sandbox).probe_run(broken, "hello")
    assert bad.ok is False and not bad.needs and "failed" in run_lines(bad, "hello")[0][0]


def test_a_node_whose_package_lfx_requires_is_a_package_need_with_its_pip_line(sandbox, tmp_path):
    """A 1.0 Google Generative AI node imports langchain_google_genai inside its build method, so
    its code loads; lfx's requirements logic (its run's dependency preflight) still asks for the
    package, and without it the node fails when it builds.  validate_flow asks the same logic."""
    flow = single_node_flow(corpus_flow("AvishikarKannan__Questionpapergenerator"), "GoogleGenerativeAIModel-CAjGe")
    lfx = lfx_verdict(flow, tmp_path)
    report = validate_flow(flow)

    assert lfx["missing"] == ["langchain-google-genai"] and "langchain_google_genai" in lfx["error"]
    assert not report.errors  # the flow is not broken: this environment lacks a package
    assert report.verdict == "not_judged" and not report.is_valid  # so it is not judged here, never valid
    (need,) = [n for n in report.needs if n.kind == "package"]
    assert (need.node_id, need.package) == ("GoogleGenerativeAIModel-CAjGe", "langchain-google-genai")
    assert "%pip install langchain-google-genai" in need.message
    (package,) = report.missing_packages
    assert package.fix == "%pip install langchain-google-genai" and package.nodes == ["Google Generative AI"]
    # Control: a node of the same flow whose packages are installed needs none, for lfx too.
    prompt = single_node_flow(corpus_flow("AvishikarKannan__Questionpapergenerator"), "Prompt-kuJ4q")
    assert lfx_verdict(prompt, tmp_path)["missing"] == []
    assert not [n for n in validate_flow(prompt).needs if n.kind == "package"]


CHAT = "bationoA__General_task"  # Langflow 1.1: Chat Input -> OpenAI -> Chat Output


def _second_chat_input(node_id: str) -> dict:
    flow = corpus_flow(CHAT)
    first = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "ChatInput")
    second = copy.deepcopy(first)
    second["id"] = second["data"]["id"] = node_id
    flow["data"]["nodes"].append(second)
    return flow


def test_two_chat_inputs_nothing_feeds_are_refused_as_lfx_refuses_them(sandbox, tmp_path):
    flow = _second_chat_input("ChatInput-second")
    lfx = lfx_verdict(flow, tmp_path)
    report = validate_flow(flow)

    assert "Only one chat input is allowed in the graph" in lfx["error"]
    assert not report.is_valid
    (error,) = report.errors
    assert error.node_id == "ChatInput-second" and "Only one chat input is allowed" in error.message
    # Controls: the author's flow (one Chat Input), and a second one whose id lfx does not read
    # as a Chat Input's (lfx tells them by id): lfx runs on to the missing key, and so do we.
    for control in (corpus_flow(CHAT), _second_chat_input("Question-second")):
        assert "chat input" not in lfx_verdict(control, tmp_path)["error"].lower()
        assert validate_flow(control).is_valid


def test_each_node_code_of_a_flow_is_loaded_in_a_sandbox_child_of_its_own(sandbox, monkeypatch):
    """Langflow's Basic Prompting starter with every node's code saved by "another version" (a
    comment line added, so none is the catalogue's): lfx loads each in the sandbox, each in a child
    of its own (no node's code can write another's verdict), and the sandbox remembers each by its
    hash.  Counted at the sandbox client."""
    from _support.langflow_env import starter_projects

    flow = json.loads(next(p for p in starter_projects() if p.stem == "Basic Prompting").read_text())
    nodes = [n for n in flow["data"]["nodes"] if n["data"]["node"]["template"].get("code")]
    for node in nodes:
        node["data"]["node"]["template"]["code"]["value"] += "\n# saved by another version\n"
    broken = nodes[-1]["data"]["node"]["template"]["code"]
    unloadable = "    raise RuntimeError('not loadable')\n    display_name"
    broken["value"] = broken["value"].replace("    display_name", unloadable, 1)
    monkeypatch.setattr(sandbox, "_verdicts", {})  # what the sandbox judged before this test
    ops: list[str] = []
    call = sandbox._call

    def counted(payload, timeout):
        ops.append(payload["op"])
        return call(payload, timeout)

    monkeypatch.setattr(sandbox, "_call", counted)

    report = validate_flow(flow)

    assert len(nodes) >= 4 and ops.count("component_verdicts") == len(nodes) and "component_template" not in ops
    # Every node was loaded: the one that cannot load is named, the others pass.
    (error,) = report.errors
    assert error.node_id == nodes[-1]["id"] and "not loadable" in error.message
    ops.clear()
    assert validate_flow(flow).errors == report.errors and "component_verdicts" not in ops  # remembered
