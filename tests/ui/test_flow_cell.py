"""Issue 40 through the magics a user types (a real IPython shell, the warm sandbox): the cell is the
flow.  A spec makes the same flow every time; a loaded flow's cell names its file and keeps every
node it does not change; a saved file keeps its variable names, refuses a flow with errors unless
``--force``; a failed flow request says why.  The fresh-kernel loop itself is
``tests/e2e/test_cell_loop.py``."""

from __future__ import annotations

import html
import json
import os

import pytest
from _support.components import LLM_SPEC, ONE_SENTENCE_SPEC, QA_SPEC, intent, named, plan, spec_reply
from _support.corpus import corpus_file, corpus_flow
from _support.display import html_of, text_of
from IPython.core.error import UsageError

from lfassist_jupyter.flows import build_flow, default_catalog, flow_to_spec
from lfassist_jupyter.flows.catalog import Catalog
from lfassist_jupyter.flows.merge import read_spec
from lfassist_jupyter.flows.save import normal_node

JCNOK = "Jcnok__jcnok1"  # Langflow 1.0.7: a group with custom code in it, an old Prompt and OpenAI node


@pytest.fixture
def catalog(sandbox) -> Catalog:
    """A fresh catalogue of the session's warm sandbox (a test may add to it)."""
    return default_catalog(sandbox)


def nodes(flow: dict) -> dict[str, str]:
    return {n["id"]: json.dumps(normal_node(n)) for n in flow["data"]["nodes"]}


def test_a_spec_makes_the_same_flow_every_time_and_its_ids_come_back(catalog):
    first, again = build_flow(LLM_SPEC, catalog=catalog), build_flow(LLM_SPEC, catalog=catalog)
    assert json.dumps(first.flow) == json.dumps(again.flow)  # control: lfx alone gives random ids
    assert first.node_ids == {
        "A": "ChatInput-A",
        "B": "Prompt Template-B",
        "M": "LanguageModelComponent-M",
        "C": "ChatOutput-C",
    }
    edges = {(e["source"], e["target"]) for e in first.flow["data"]["edges"]}
    assert ("ChatInput-A", "Prompt Template-B") in edges
    written = flow_to_spec(first.flow, catalog=catalog)
    assert "  A: ChatInput\n  B: Prompt Template\n  M: LanguageModelComponent\n  C: ChatOutput\n" in written
    assert "  A.message -> B.question\n" in written


def test_every_name_lfx_knows_is_read_as_its_component_and_no_other_is_guessed(catalog):
    # The installed bundles' components are in the catalogue, under the names saved flows use.
    assert {"OpenAIModel", "AnthropicModel", "OllamaModel"} <= set(catalog.registry)
    # Names of earlier Langflow versions, from lfx's own identity index and migration table.
    assert catalog.resolve("Prompt") == "Prompt Template"  # not "LangChain Hub Prompt", a near miss
    assert catalog.known("OpenAIModelComponent") == catalog.known("ext:openai:OpenAIModelComponent@official")
    assert catalog.known("OpenAIModelComponent") == "OpenAIModel"
    assert catalog.known("parser") == "ParserComponent" and catalog.known("Message History") == "Memory"
    built = build_flow(QA_SPEC.replace("B: Prompt Template", "B: Prompt"), catalog=catalog)
    assert built.ok, built.errors
    assert built.flow["data"]["nodes"][1]["data"]["type"] == "Prompt Template"
    assert "'Prompt' is lfx's 'Prompt Template'" in [c.message for c in built.changes]
    # A name lfx knows for two components is no component's (control: each alone is).
    torn = Catalog(catalog.registry, names={"Twin": ["ChatInput", "ChatOutput"], "One": ["ChatInput"]})
    assert torn.resolve("One") == "ChatInput" and torn.resolve("Twin") is None and torn.known("Twin") is None


def test_a_loaded_flow_names_lfx_components_and_carries_the_others_with_their_code(sandbox):
    flow = corpus_flow(JCNOK)
    spec = flow_to_spec(flow, catalog=default_catalog(sandbox))
    kinds = read_spec(spec).nodes
    by_id = {n["id"].rsplit("-", 1)[-1]: n for n in flow["data"]["nodes"]}
    old_prompt = next(sid for sid, n in by_id.items() if n["data"]["type"] == "Prompt")
    assert kinds[old_prompt] == "Prompt Template"  # Langflow 1.0's Prompt is today's Prompt Template
    group = next(sid for sid, n in by_id.items() if n["data"]["type"] == "GroupNode")
    assert kinds[group] not in default_catalog(sandbox).registry  # carried as itself, never retyped
    # Without its file, a spec naming it is an unknown component, not a near miss.
    fresh = build_flow(spec, catalog=default_catalog(sandbox))
    assert any(e.code == "unknown_component" and e.node == group for e in fresh.errors), fresh.errors
    assert group not in fresh.node_ids


def test_a_loaded_flow_is_its_cell_and_the_cell_keeps_what_it_does_not_change(flow_ip, tmp_path):
    path = corpus_file(JCNOK, tmp_path)
    flow_ip.rl_next_input = None
    loaded = flow_ip.run_line_magic("assist", f"flow load {path.name}")
    cell = flow_ip.rl_next_input
    head, _, spec = cell.partition("\n")
    assert head == f"%%assist_flow --edit {path.name}" and spec.strip() == loaded.spec.strip()
    assert "Its spec is in the next cell" in repr(loaded)

    # Run as it is: the file's flow (its keys cleared, as the conversation keeps it).
    same = flow_ip.run_cell(cell).result
    assert nodes(same.flow) == nodes(corpus_flow(JCNOK)) and same.base == str(path.resolve())

    # A value changed and the first node removed, saved over the file itself, twice: the second run
    # finds the first's file and makes the same flow (spec ids are the nodes' own: removing the
    # first node renames no other, as letters by position did).
    assert "  2tLN0.sender_name: Meu Resumo\n" in spec and "  VGUmt: ParseData\n" in spec
    edited = spec.replace("  2tLN0.sender_name: Meu Resumo\n", "  2tLN0.sender_name: Resumo Final\n")
    for gone in ("  VGUmt: ParseData\n", "  VGUmt.text -> VfIpr.conteudo\n", "  GShdu.data -> VGUmt.data\n"):
        edited = edited.replace(gone, "")
    line = f"--edit {path.name} --save {path.name} --force --quiet"
    flow_ip.run_cell_magic("assist_flow", line, edited)
    once = path.read_bytes()
    flow_ip.run_cell_magic("assist_flow", line, edited)
    assert path.read_bytes() == once
    before, after = nodes(corpus_flow(JCNOK)), nodes(json.loads(once))
    assert set(before) - set(after) == {"ParseData-VGUmt"} and set(after) <= set(before)
    assert [nid for nid in after if after[nid] != before[nid]] == ["ChatOutput-2tLN0"]

    with pytest.raises(UsageError, match="No such flow file"):
        flow_ip.run_cell_magic("assist_flow", "--edit missing.json", spec)
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(UsageError, match="not a regular file"):
        flow_ip.run_cell_magic("assist_flow", "--edit fifo.json", spec)  # never blocks on a FIFO
    with pytest.raises(UsageError, match="holds a spec, not a file name"):
        flow_ip.run_cell_magic("assist_flow", f"--edit {path.name}", path.name)


def test_save_refuses_a_flow_with_errors_unless_forced_and_says_which(flow_ip, tmp_path):
    broken = named(QA_SPEC.replace("B.prompt -> C.input_value", "B.prompt -> C.nowhere"), "Broken")
    view = flow_ip.run_cell_magic("assist_flow", "--save broken.json", broken)
    said = repr(view)
    assert "Not saved: the flow has 2 errors: C.nowhere: C has no input 'nowhere'" in said and "--force" in said
    assert not (tmp_path / "broken.json").exists()
    forced = flow_ip.run_cell_magic("assist_flow", "--save broken.json --force", broken)
    assert (tmp_path / "broken.json").is_file() and "Saved with --force although the flow has 2 errors" in repr(forced)


def test_a_saved_flow_keeps_the_variable_its_key_field_names_and_never_a_key(flow_ip, tmp_path, catalog):
    spec = named(LLM_SPEC, "Keys") + "  M.model: gpt-4o-mini\n  M.api_key: OPENAI_API_KEY\n"
    flow_ip.run_cell_magic("assist_flow", "--save keys.json --quiet", spec)
    text = (tmp_path / "keys.json").read_text()
    model = next(n for n in json.loads(text)["data"]["nodes"] if n["id"] == "LanguageModelComponent-M")
    key = model["data"]["node"]["template"]["api_key"]
    assert key["value"] == "OPENAI_API_KEY" and key["load_from_db"] is True
    # A key itself is never written (control: the flow held it).
    flow = build_flow(spec, catalog=catalog).flow
    field = next(n for n in flow["data"]["nodes"] if n["id"] == "LanguageModelComponent-M")["data"]["node"]
    field["template"]["api_key"].update(value="sk-proj-never-written-0123456789", load_from_db=False)
    from lfassist_jupyter.flows.save import write_flow_file

    saved = write_flow_file(flow, tmp_path / "literal.json").path.read_text()
    assert "sk-proj-never-written" not in saved and flow_to_spec(flow, catalog=catalog).count("api_key") == 0


@pytest.fixture
def llm_ip(flow_ip, llm, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-cell-test-fake-0123456789")
    flow_ip.rl_next_input = None
    return flow_ip


def test_flow_save_writes_the_flow_the_card_showed(llm_ip, llm, tmp_path, capsys):
    llm_ip.run_line_magic("assist", "flow save none.json")
    assert "Nothing to save: this conversation has no flow yet" in capsys.readouterr().out
    llm.queue(intent("build_flow"), plan("ChatInput", "LanguageModelComponent"), spec_reply(ONE_SENTENCE_SPEC))
    result = llm_ip.run_cell_magic("assist", "", "a flow that answers in one sentence")
    view = llm_ip.run_line_magic("assist", "flow save card.json")
    assert view.saved == (tmp_path / "card.json").resolve()
    saved = json.loads((tmp_path / "card.json").read_text())
    assert nodes(saved) == nodes(result.flow) and saved["id"] == view.flow["id"]
    with pytest.raises(UsageError, match="Usage: %assist flow save"):
        llm_ip.run_line_magic("assist", "flow save")


def test_a_failed_flow_request_says_why_on_the_card_and_in_the_text(llm_ip, llm):
    llm.queue(intent("build_flow"), plan("ChatInput"), "Which model should the flow call: OpenAI or Anthropic?")
    result = llm_ip.run_cell_magic("assist", "--max-retries 1", "a flow that answers questions")
    why = "No flow was built: the model's reply held no flow spec"
    assert result.flow is None and result.error.startswith(why)
    for shown in (html.unescape(html_of(result, llm_ip)), text_of(result, llm_ip)):
        assert why in shown and "Which model should the flow call" in shown
    assert llm_ip.rl_next_input is None  # no cell for no flow

    llm.queue(intent("build_flow"), plan("ChatInput"), spec_reply("nodes:\n  A: NoSuchComponentAnywhere\n"))
    unbuilt = llm_ip.run_cell_magic("assist", "--max-retries 1", "a flow with a made-up component")
    assert "NoSuchComponentAnywhere" in unbuilt.error
    assert "NoSuchComponentAnywhere" in text_of(unbuilt, llm_ip)


def test_a_failed_flow_request_says_why_on_the_panels_card(sandbox, llm, tmp_path, monkeypatch):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-cell-panel-fake-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "live", local_validator=sandbox))
    llm.queue(intent("build_flow"), plan("ChatInput"), "Which model should the flow call?")
    panel.send_prompt("a flow that answers questions")
    panel.wait(120)
    card = panel.messages[-1]
    assert card["kind"] == "flow" and not card["validated"] and not card.get("cell")
    assert card["lines"][0]["text"].startswith("No flow was built: the model's reply held no flow spec")
    assert "Which model should the flow call?" in card["lines"][0]["text"] and card["lines"][0]["ok"] is False


def _fresh_shell(folder, sandbox, data: str):
    """A new IPython shell with the extension loaded and a new workspace (its own data folder): no
    conversation, no panel, nothing of the shells before but the files in ``folder``, as a fresh
    kernel has (the sandbox is the session's warm one; its catalogue is lfx's, the same anywhere)."""
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.workspace import Workspace

    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    shell.magics_manager.registry["AssistMagics"].workspace = Workspace(data_dir=folder / data, local_validator=sandbox)
    shell.rl_next_input = None
    return shell


def _close(shell) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


LOOP_EXPORT = "akashatek__OLQP_Basic_Prompting"  # Langflow 1.5, another author's: an lfx-ollama bundle node


def test_the_loop_on_an_export_load_edit_rerun_save_load_again(sandbox, llm, tmp_path, monkeypatch, catalog):
    """The loop's promise in the default run (the fresh-kernel version on 23 flows is
    ``tests/e2e/test_cell_loop.py``, slow): someone else's export loaded, edited by the assistant,
    the inserted cell re-run in a new shell (no conversation) makes the card's flow byte for byte;
    ``%assist flow save`` and the cell's ``--save`` write the same file, every untouched node the
    export's; that file loaded again, edited once more in its cell and saved: untouched nodes still
    identical to the first save."""
    from _support.cell_loop import kept
    from _support.corpus import one_change

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-cell-loop-fake-0123456789")
    original = corpus_flow(LOOP_EXPORT)
    path = corpus_file(LOOP_EXPORT, tmp_path)

    ip = _fresh_shell(tmp_path, sandbox, "first")
    try:
        loaded = ip.run_line_magic("assist", f"flow load {path.name}")
        edited, change = one_change(loaded.spec, catalog)
        assert change[1] is not None, change  # a value of a node, not the flow's name
        llm.queue(intent("build_flow"), plan("ChatInput", "ChatOutput"), spec_reply(edited))
        ip.rl_next_input = None
        card = ip.run_cell_magic("assist", "--max-retries 1 --quiet", "make the change")
        assert card.flow is not None, card.error
        cell = ip.rl_next_input
        assert cell.startswith(f"%%assist_flow --edit {path.name}\n"), cell[:200]
        ip.run_line_magic("assist", "flow save card.json")
    finally:
        _close(ip)
    assert kept(original, card.flow, change) == (True, "")

    # The inserted cell, run where there is no conversation: the card's flow, and the same file.
    ip = _fresh_shell(tmp_path, sandbox, "second")
    try:
        head, _, body = cell.partition("\n")
        rerun = ip.run_cell_magic("assist_flow", head.removeprefix("%%assist_flow ") + " --save rerun.json", body)
        assert json.dumps(rerun.flow) == json.dumps(card.flow)  # the flow the card showed, byte for byte
        assert (tmp_path / "rerun.json").read_bytes() == (tmp_path / "card.json").read_bytes()
        # Control: the spec alone (the cell without the file it names) is not that flow.
        alone = ip.run_cell_magic("assist_flow", "", body)
        assert alone.flow is None or nodes(alone.flow) != nodes(card.flow)

        # Load what was saved, one more change in its cell, save: untouched nodes as the first save.
        ip.rl_next_input = None
        again = ip.run_line_magic("assist", "flow load rerun.json")
        head, _, spec = ip.rl_next_input.partition("\n")
        assert head == "%%assist_flow --edit rerun.json" and spec.strip() == again.spec.strip()
        second, change2 = one_change(spec, catalog)
        ip.run_cell_magic("assist_flow", "--edit rerun.json --save second.json --quiet", second)
    finally:
        _close(ip)
    first_file = json.loads((tmp_path / "rerun.json").read_text())
    second_file = json.loads((tmp_path / "second.json").read_text())
    assert kept(first_file, second_file, change2) == (True, "")
    assert second_file["id"] == first_file["id"] == original["id"]
