"""Issue 40: the notebook's loop, the cell is the flow.  A flow made from a sentence and flows other
authors exported: the cell the assistant inserts, run again in a **fresh kernel** (no conversation,
nothing but the notebook's files), makes exactly the flow its card showed; what that cell saves
``lfx validate`` accepts, runs for real, loads and edits again with every untouched node kept.

The flow made from a sentence goes through every step in a fresh kernel of its own (nbclient):
the request, its inserted cell re-run and saved, ``lfx validate`` (the installed CLI), the real run
of the saved file, its load and edit, that edit's cell re-run and saved.  How the time stays small
for the exports: the steps that make their cells (the assistant's edits, ``%assist flow load``,
the user's edit of a cell) run in this process's IPython shells, each a new shell and workspace (a
new conversation); the step whose only input is the cell -- the promise -- runs in a real fresh
kernel, **one kernel shared by every flow** (the sentence's cell, two cells the assistant inserted
for exports it edited, nineteen exports' load cells each edited by one spec change).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support.cell_loop import CAPTURE, dump, kept, run_in_fresh_kernel, with_save
from _support.components import ONE_SENTENCE_ANSWER, ONE_SENTENCE_SPEC, intent, plan, spec_reply
from _support.corpus import corpus_file, corpus_flow, one_change
from _support.fakellm import Reply
from _support.lfxcli import lfx_validate

pytestmark = pytest.mark.slow

KEY = "sk-cell-loop-fake-key-not-a-real-one"

EXPORTS = [
    # Nineteen exports of other authors (the corpus's dev half, Langflow 1.0-1.11): each is accepted
    # by lfx validate at level 3 as exported and passes the outgoing gate (so it can be saved); one of
    # them gets its name changed, the others one value of one node.  (personal_agent left the list
    # when the gate learnt reflection: its Composio Tools code calls getattr(App, field_value.upper()).)
    "AvishikarKannan__Questionpapergenerator",
    "Empreiteiro__tool_based_rag",
    "GeorgeCrossIV__Analyze_Transactions_Chatbot",
    "GeorgeCrossIV__Transactions_Analyzer",  # a CustomComponent node and a component this lfx lacks
    "GridGain_Demos__Gridgain_Vector_Store_RAG",
    "Jcnok__submission_3",
    "RagavendranRajendran__Powertrain_software_RAG",
    "YogeshvarM__Customer",
    "akashatek__OLQP_Vector_Store_RAG",
    "anima_kit__Demo_06_RAG_Agent",
    "bappichok__AI_Agent_Bug_classifier",  # its change is its name
    "bationoA__TrustNode_Care",
    "harusametime__NVIDIA_basic_chatbot",
    "himan45__Test_Plan_Test_Case_Generator",
    "julianclinton__Basic_Ollama_chat",
    "kolinz__RAG_Multi_LLM_RAGAS_Check_Workflow",
    "konradbjk__DeepResearch_Tavily",
    "mestonecoa__demo_langflow_starfarer",
    "semanurcetinn__RestaurantQ_AwithRAG",
]
EDITED_BY_THE_ASSISTANT = [
    "Jcnok__jcnok1",  # Langflow 1.0.7: a grouped sub-flow, custom code in it, an old Prompt and OpenAI node
    "akashatek__OLQP_Basic_Prompting",  # Langflow 1.5: an Ollama node of the lfx-ollama bundle
]


def shell(folder: Path, monkeypatch):
    """A new IPython shell with the extension loaded (a new workspace: no conversation), working in
    ``folder``; its sandbox is the session's warm one, as every shell of the suite."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(folder)
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "lfassist_jupyter")
    return ip


def close(ip) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    ip.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


def assist(ip, llm, request: str, spec: str):
    """``%%assist request``, the fake model answering with ``spec``: the result and the inserted cell."""
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent"), spec_reply(spec))
    ip.rl_next_input = None
    result = ip.run_cell_magic("assist", "--max-retries 1", request)
    assert result.kind == "flow" and result.flow is not None, result.error
    assert ip.rl_next_input and ip.rl_next_input.startswith("%%assist_flow"), ip.rl_next_input
    return result, ip.rl_next_input


def made(folder: Path, target: str, card: dict | None = None) -> dict:
    """The flow a fresh kernel's cell made (``with_save`` dumps it beside the file it saved); its
    ``id`` is the one its ``--save`` gave it when the ``card``'s flow had none yet (an id is given
    when a flow is first saved)."""
    flow = json.loads((folder / f"{target}.flow.json").read_text())
    if card is not None and "id" not in card:
        flow.pop("id", None)
    return flow


def nodes(flow: dict) -> dict[str, dict]:
    from lfassist_jupyter.flows.save import normal_node

    return {n["id"]: normal_node(n) for n in flow["data"]["nodes"]}


def test_the_loop_from_a_sentence_and_from_exports_in_fresh_kernels(sandbox, llm, tmp_path, monkeypatch):
    from lfassist_jupyter.flows import default_catalog

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # A fresh kernel's environment: its own data folder (no conversation of this process's shells),
    # the fake model server and its key (a --run-local run reads it with --env OPENAI_API_KEY).
    kernel_env = {"LFASSIST_DATA_DIR": str(tmp_path / "kernel-data"), "OPENAI_BASE_URL": llm.openai_base_url}
    kernel_env["OPENAI_API_KEY"] = KEY
    catalog = default_catalog(sandbox)

    # -- step 1, cells are made: a sentence (in a fresh kernel); two exports edited by the assistant;
    # nineteen loaded ---------------------------------------------------------------------------------
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent"))
    llm.queue(spec_reply(ONE_SENTENCE_SPEC))
    request = "%%assist --max-retries 1 --out card --quiet\na flow that answers in one sentence with a language model"
    said = {"flow": "card.flow", "validated": "card.validated", "error": "card.error", "cell": "_inserted[-1]"}
    ran = run_in_fresh_kernel(tmp_path, [CAPTURE, request, dump(said, "sentence.card.json")], kernel_env)
    assert not [r for r in ran if any(o.get("output_type") == "error" for o in r["outputs"])], ran
    sentence = json.loads((tmp_path / "sentence.card.json").read_text())
    assert sentence["validated"], sentence["error"]
    sentence_cell = sentence["cell"]
    assert sentence_cell.startswith("%%assist_flow\n"), sentence_cell  # a flow of lfx's components: its spec
    ip = shell(tmp_path, monkeypatch)
    edited_by_assistant = {}
    for flow_id in EDITED_BY_THE_ASSISTANT:
        corpus_file(flow_id, tmp_path)
        ip.run_line_magic("assist", "new")
        loaded = ip.run_line_magic("assist", f"flow load {flow_id}.json")
        spec, change = one_change(loaded.spec, catalog)
        result, cell = assist(ip, llm, "make the change", spec)
        assert cell.startswith(f"%%assist_flow --edit {flow_id}.json\n"), cell[:200]  # the cell names its file
        edited_by_assistant[flow_id] = (result.flow, cell, change)
    loaded_cells = {}
    for flow_id in EXPORTS:
        corpus_file(flow_id, tmp_path)
        ip.rl_next_input = None
        ip.run_line_magic("assist", f"flow load {flow_id}.json")
        cell = ip.rl_next_input  # the load inserts the flow as a cell; the user changes one thing in it
        head, _, spec = cell.partition("\n")
        assert head == f"%%assist_flow --edit {flow_id}.json"
        edited, change = one_change(spec, catalog)
        loaded_cells[flow_id] = (f"{head}\n{edited}", change)
    close(ip)

    # -- step 2, a fresh kernel runs every cell and saves what it makes ---------------------------------
    cells = with_save(sentence_cell, "first.json")
    for flow_id, (_, cell, _) in edited_by_assistant.items():
        cells += with_save(cell, f"{flow_id}.edited.json")
    for flow_id, (cell, _) in loaded_cells.items():
        cells += with_save(cell, f"{flow_id}.edited.json")
    runs = run_in_fresh_kernel(tmp_path, cells, kernel_env)
    failed = [r["outputs"] for r in runs if any(o.get("output_type") == "error" for o in r["outputs"])]
    assert not failed, failed[:2]

    # The sentence's cell makes the card's flow, byte for byte (node ids, positions, values).
    assert json.dumps(made(tmp_path, "first.json", sentence["flow"])) == json.dumps(sentence["flow"])
    # The assistant's cells for the exports make their cards' flows; only the change differs from the file.
    for flow_id, (card, _, change) in edited_by_assistant.items():
        again = made(tmp_path, f"{flow_id}.edited.json", card)
        assert json.dumps(again) == json.dumps(card), flow_id
        assert kept(corpus_flow(flow_id), again, change) == (True, ""), flow_id
    # Each load cell with one spec change: every untouched node identical, the change applied.
    for flow_id, (_, change) in loaded_cells.items():
        assert kept(corpus_flow(flow_id), made(tmp_path, f"{flow_id}.edited.json"), change) == (True, ""), flow_id

    # -- step 3, lfx validate (one call): the exports' saved files at level 3, the sentence's at level 4 --
    saved = [tmp_path / f"{f}.edited.json" for f in [*EDITED_BY_THE_ASSISTANT, *EXPORTS]]
    verdicts = {Path(r["path"]).name: r for r in lfx_validate([*saved, tmp_path / "first.json"], level=4)}
    level4 = verdicts.pop("first.json")
    rejected = {
        name: errors
        for name, r in verdicts.items()
        if (errors := [i for i in r["issues"] if i["severity"] == "error" and i["level"] <= 3])
    }
    assert not rejected and len(verdicts) == 22, rejected
    assert level4["ok"] and not [i for i in level4["issues"] if i["severity"] == "error"], level4
    first = json.loads((tmp_path / "first.json").read_text())
    model = next(n for n in first["data"]["nodes"] if n["data"]["type"] == "LanguageModelComponent")
    key = model["data"]["node"]["template"]["api_key"]
    assert key["value"] == "OPENAI_API_KEY" and key["load_from_db"] is True  # the variable's name, never a key
    assert KEY not in (tmp_path / "first.json").read_text()

    # -- step 4, the saved file runs for real (a fresh kernel: nothing but the file) ---------------------
    llm.queue(Reply(ONE_SENTENCE_ANSWER))
    run = '%%assist_flow --run-local "what is Langflow?" --env OPENAI_API_KEY --out view --quiet\nfirst.json'
    said = {"ok": "view.run.ok", "text": "view.run.text", "variables": "view.run.variables", "notes": "view.notes"}
    ran = run_in_fresh_kernel(tmp_path, [run, dump(said, "run.json")], kernel_env)
    real = json.loads((tmp_path / "run.json").read_text())
    assert real["ok"], (real, ran)
    assert real["text"] == ONE_SENTENCE_ANSWER and real["variables"] == ["OPENAI_API_KEY"]
    assert llm.requests[-1].headers["authorization"] == f"Bearer {KEY}"

    # -- step 5, load the saved file and edit it (a fresh kernel) ----------------------------------------
    from lfassist_jupyter.flows import flow_to_spec

    spec = flow_to_spec(first, catalog=catalog)  # what the load will show (checked against it below)
    prompt = next(line for line in spec.splitlines() if line.strip().startswith("B.template:"))
    two = spec.replace(prompt, prompt.replace("in one sentence", "in two sentences"))
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent"), spec_reply(two))
    request = "%%assist --max-retries 1 --out edit --quiet\nanswer in two sentences"
    cells = [CAPTURE, "%assist flow load first.json", request]
    said = {"flow": "edit.flow", "error": "edit.error", "cells": "_inserted"}
    ran = run_in_fresh_kernel(tmp_path, [*cells, dump(said, "edit.card.json")], kernel_env)
    assert not [r for r in ran if any(o.get("output_type") == "error" for o in r["outputs"])], ran
    edit = json.loads((tmp_path / "edit.card.json").read_text())
    load_cell, edit_cell = edit["cells"]
    assert load_cell == f"%%assist_flow --edit first.json\n{spec}", load_cell  # the load inserts the flow's cell
    assert edit_cell.startswith("%%assist_flow --edit first.json\n"), edit["error"]

    # -- step 6, a fresh kernel runs that cell and saves it; diff against the first file -----------------
    runs = run_in_fresh_kernel(tmp_path, with_save(edit_cell, "second.json"), kernel_env)
    assert not [r for r in runs if any(o.get("output_type") == "error" for o in r["outputs"])], runs
    assert json.dumps(made(tmp_path, "second.json", edit["flow"])) == json.dumps(edit["flow"])
    before, after = nodes(first), nodes(json.loads((tmp_path / "second.json").read_text()))
    assert set(before) == set(after)
    changed = [nid for nid in before if json.dumps(before[nid]) != json.dumps(after[nid])]
    assert changed == ["Prompt Template-B"], changed  # only the prompt; ids are the spec's (A, B, M, C)
    template = after["Prompt Template-B"]["data"]["node"]["template"]["template"]["value"]
    assert template == "Answer in two sentences: {question}"
    second = json.loads((tmp_path / "second.json").read_text())
    assert second["id"] == first["id"] and second["data"]["edges"] == first["data"]["edges"]
