"""The views of flows: ``%%assist_flow`` in a real IPython shell and a real kernel, the flow result
card, and the panel's flow card driven through its public methods.

Ground truth comes from lfx itself: the saved file is loaded by lfx's ``Graph.from_payload`` and
the probe run's text is compared with what lfx's own runner answers on the same flow.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from _support.components import QA_SPEC, lfx_run, named, plan, spec_reply
from _support.display import html_of, text_of
from IPython.core.error import UsageError

from lfassist_jupyter import build_flow, validate_flow

ECHO_QA = named(QA_SPEC, "Echo QA")

MODEL_SPEC = """\
name: Model QA
nodes:
  A: ChatInput
  M: LanguageModelComponent
  C: ChatOutput
edges:
  A.message -> M.input_value
  M.text_output -> C.input_value
"""


def well_formed(html: str) -> ET.Element:
    """The card parses as XML (so every tag is closed and every text escaped) and holds an SVG."""
    root = ET.fromstring(f"<root>{html}</root>")
    svg = root.find(".//{http://www.w3.org/2000/svg}svg")
    assert svg is not None, html[:300]
    assert root.find(".//script") is None and "<script" not in html
    return svg


def svg_texts(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text")]


# -- %%assist_flow ---------------------------------------------------------------------------------


def test_assist_flow_validates_and_draws(flow_ip):
    view = flow_ip.run_cell_magic("assist_flow", "", ECHO_QA)
    assert view.ok and view.report.node_count == 3 and view.report.edge_count == 2
    assert view.spec.strip().startswith("name: Echo QA")
    svg = well_formed(view._repr_html_())
    assert {"Chat Input", "Prompt Template", "Chat Output"} <= set(svg_texts(svg))
    assert "Message" in svg_texts(svg)  # edges are labelled with their type
    assert "Flow valid (3 nodes, 2 edges)" in repr(view)


def test_run_probes_in_the_sandbox_with_the_text_lfx_gives(flow_ip):
    view = flow_ip.run_cell_magic("assist_flow", '--run "what is up?"', ECHO_QA)
    assert view.run.ok and view.run.stubbed == []
    assert view.run.text == lfx_run(view.flow, "what is up?")
    assert "Probe run on 'what is up?': 'Answer this: what is up?'" in repr(view)


def test_run_stubs_model_nodes_and_says_so(flow_ip):
    view = flow_ip.run_cell_magic("assist_flow", "--run hi", MODEL_SPEC)
    assert view.run.ok, view.run
    assert [s.name for s in view.run.stubbed] == ["Language Model"]
    html = view._repr_html_()
    well_formed(html)
    assert "Stubbed in the sandbox (no keys, no network): Language Model" in html
    assert any(n.kind == "model" for n in view.report.needs)


def test_save_writes_a_file_langflow_imports(flow_ip, tmp_path):
    from lfx.graph.graph.base import Graph

    view = flow_ip.run_cell_magic("assist_flow", "--save qa.json --name 'My QA'", ECHO_QA)
    path = tmp_path / "qa.json"
    assert view.saved == path.resolve() and path.is_file()
    body = json.loads(path.read_text())
    # What Langflow's upload endpoint builds a FlowCreate from: name, description, data{nodes, edges}.
    assert body["name"] == "My QA" and "description" in body and not body["is_component"]
    assert validate_flow(path).is_valid  # our validator re-loads the file
    graph = Graph.from_payload(body["data"], flow_id="saved")  # and lfx builds a graph from it
    assert len(graph.vertices) == 3 and len(graph.edges) == 2
    again = flow_ip.run_cell_magic("assist_flow", "--run again", str(path))  # a file path as the cell body
    assert again.ok and again.run.text == "Answer this: again"
    assert "nodes:" in again.spec


def test_bad_spec_is_one_clear_line_without_traceback(flow_ip, capsys):
    with pytest.raises(UsageError, match="No flow spec found"):
        flow_ip.run_cell_magic("assist_flow", "", "make me a flow please")
    result = flow_ip.run_cell("%%assist_flow\nmake me a flow please\n")
    captured = capsys.readouterr()
    assert isinstance(result.error_in_exec, UsageError)
    assert "Traceback" not in captured.out + captured.err
    assert "No flow spec found" in captured.out + captured.err
    with pytest.raises(UsageError, match="No such flow file"):
        flow_ip.run_cell_magic("assist_flow", "", "missing.json")


def test_wiring_errors_name_the_node_and_the_fix(flow_ip):
    spec = ECHO_QA.replace("B: Prompt Template", "B: NoSuchComponent")
    view = flow_ip.run_cell_magic("assist_flow", "--run hi --register", spec)
    assert not view.ok
    assert any("NoSuchComponent" in str(e) for e in view.report.errors)
    text = repr(view)
    assert "Not registered" in text  # no connection, and the flow has errors
    well_formed(view._repr_html_())


def test_deterministic_repairs_are_shown_naming_the_node(flow_ip):
    spec = ECHO_QA.replace("A.message -> B.question", "A.message -> B.query").replace("ChatOutput", "ChatOuput")
    view = flow_ip.run_cell_magic("assist_flow", "--run fixed", spec)
    assert view.ok and view.run.text == "Answer this: fixed" == lfx_run(view.flow, "fixed")
    text = repr(view)
    assert "Repaired B: input 'query' -> 'question'" in text and "Repaired C: 'ChatOuput' -> 'ChatOutput'" in text


def test_out_and_quiet(flow_ip):
    assert flow_ip.run_cell_magic("assist_flow", "--quiet --out qa", ECHO_QA) is None
    assert flow_ip.user_ns["qa"].ok and flow_ip.user_ns["qa"].flow["name"] == "Echo QA"
    # --quiet still shows what failed
    assert flow_ip.run_cell_magic("assist_flow", "--quiet", ECHO_QA.replace("ChatOutput", "NoSuch")) is not None


def test_help_lists_the_flow_magic(flow_ip, capsys):
    flow_ip.run_line_magic("assist", "help")
    out = capsys.readouterr().out
    assert "%%assist_flow" in out and "--save FILE.json" in out and "--register" in out


# -- the %%assist result card for a flow -------------------------------------------------------------


def test_flow_result_card_shows_picture_report_and_run():
    from lfassist_jupyter.core.outcome import FlowOutcome
    from lfassist_jupyter.core.result import AssistResult

    flow = build_flow(ECHO_QA).flow
    report = validate_flow(flow)
    outcome = FlowOutcome(result="done", intent="build_flow", flow=flow, validated=True, attempts=1, report=report)
    result = AssistResult(status="complete", kind="flow", intent="build_flow", validated=True, attempts=1)
    result.outcome = outcome
    html = html_of(result)
    svg = well_formed(html)
    assert "Chat Input" in svg_texts(svg) and "validated" in html and "Flow valid" in html
    assert "Echo QA" in text_of(result) and "validated" in text_of(result)


# -- %%assist with a flow result (the engine against the fake model server) --------------------------


@pytest.fixture
def llm_ip(flow_ip, llm, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-views-test-0123456789")
    flow_ip.rl_next_input = None
    return flow_ip


def test_assist_flow_result_inserts_a_re_runnable_flow_cell(llm_ip, llm, capsys):
    from _support.components import intent

    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO_QA, "yaml"))
    result = llm_ip.run_cell_magic("assist", "--out res", "a flow that answers the chat question with a prompt")
    assert result.kind == "flow" and result.ok, result.error
    out = capsys.readouterr().out
    for label in ("Choosing components", "Building the flow", "Validating the flow", "Probe run", "Flow validated"):
        assert label in out  # the live progress, with the labels of core/events.py's registry
    cell = llm_ip.rl_next_input
    assert cell.startswith("%%assist_flow\n") and "nodes:" in cell  # the spec, not code
    html = html_of(result, llm_ip)
    svg = well_formed(html)
    assert {"Chat Input", "Prompt Template", "Chat Output"} <= set(svg_texts(svg))
    assert "Flow valid (3 nodes, 2 edges)" in html and "Probe run" in html
    # the inserted cell is re-runnable and builds the same flow
    again = llm_ip.run_cell(cell)
    assert again.success and again.result.ok
    assert again.result.spec.strip() == result.spec.strip()


def mock_langflow(calls: list) -> object:
    """A connected LangflowClient over a mock server: lists no flows, creates ``f-1``, runs it like
    Langflow's RunResponse (the real server's shape is checked in tests/langflow_api/test_langflow_flows.py)."""
    import httpx

    from lfassist_jupyter.langflow import LangflowClient

    def langflow(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        calls.append((request.method, request.url.path, body))
        if request.method == "GET":
            return httpx.Response(200, json=[])
        if request.url.path == "/api/v1/flows/":
            return httpx.Response(201, json={"id": "f-1", "name": body["name"]})
        text = f"Answer this: {body['input_value']}"
        message = {"results": {"message": {"text": text}}, "component_display_name": "Chat Output"}
        return httpx.Response(200, json={"session_id": "s", "outputs": [{"inputs": {}, "outputs": [message]}]})

    client = LangflowClient(
        url="http://langflow.test", api_key="lf-0123456789abcdef", transport=httpx.MockTransport(langflow)
    )
    client.version = "1.13.0"
    return client


def test_assist_register_sends_the_flow_and_runs_it_there(llm_ip, llm, capsys):
    """`%%assist --register` on a flow result: created in Langflow (mock server), then run once there."""
    from _support.components import intent

    calls: list[tuple[str, str, dict]] = []
    magics = llm_ip.magics_manager.registry["AssistMagics"]
    magics.workspace.connect(mock_langflow(calls), server_validation=False)
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO_QA, "yaml"))
    result = llm_ip.run_cell_magic("assist", "--register", "a flow that answers the chat question with a prompt")
    assert result.ok
    out = capsys.readouterr().out
    assert "Registered flow 'Echo QA' in Langflow at http://langflow.test (id f-1)." in out
    assert "Ran in Langflow on 'hello': 'Answer this: hello'" in out
    created = next(body for method, path, body in calls if method == "POST" and path == "/api/v1/flows/")
    assert created["data"]["nodes"] == result.flow["data"]["nodes"] and "lfassist-flow" in created["tags"]


def test_assist_flow_load_then_edit(llm_ip, llm, tmp_path, capsys):
    from _support.components import intent

    llm_ip.run_cell_magic("assist_flow", "--save qa.json --quiet", ECHO_QA)
    view = llm_ip.run_line_magic("assist", "flow load qa.json")
    assert view.ok and "Loaded into this conversation" in repr(view)
    edited = ECHO_QA.replace("Answer this: {question}", "Reply briefly: {question}")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(edited, "yaml"))
    result = llm_ip.run_cell_magic("assist", "", "make the prompt ask for a brief reply")
    assert result.ok and result.run.text.startswith("Reply briefly: ")
    assert "Answer this" in llm.requests[-1].text  # the model saw the loaded flow to edit
    with pytest.raises(UsageError, match="Usage: %assist flow load"):
        llm_ip.run_line_magic("assist", "flow")


# -- the panel's flow card -------------------------------------------------------------------------


@pytest.fixture
def panel(sandbox, tmp_path, monkeypatch):
    from lfassist_jupyter.core.session import Session, Turn
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.chdir(tmp_path)
    workspace = Workspace(data_dir=tmp_path / "panel", local_validator=sandbox)
    session = Session(id="lfassist-flowtest", title="a flow")
    flow = build_flow(ECHO_QA).flow  # a session keeps its flows as data: showing it builds nothing
    session.turns = [
        Turn(role="user", content="a flow that answers with a prompt"),
        Turn(
            role="assistant",
            content=f"Here it is:\n```\n{ECHO_QA}```\n",
            kind="flow",
            validated=True,
            attempts=1,
            flow=flow,
        ),
    ]
    workspace.store.save(session)
    panel = ChatPanel(workspace=workspace)
    panel.switch_session("lfassist-flowtest")
    return panel


def test_live_flow_request_ends_in_a_flow_card(sandbox, llm, tmp_path, monkeypatch):
    from _support.components import intent

    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-panel-test-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "live", local_validator=sandbox))
    seen: list[dict] = []
    panel.observe(lambda change: seen.append(change["new"]), "progress")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(ECHO_QA, "yaml"))
    panel.send_prompt("a flow that answers with a prompt")
    panel.wait(120)
    labels = [s["label"] for p in seen for s in p.get("steps", [])]
    assert "Choosing components" in labels and "Probe run" in labels
    card = panel.messages[-1]
    assert card["kind"] == "flow" and card["validated"] and card["flow_name"] == "Echo QA"
    assert "Chat Input" in svg_texts(well_formed(card["picture_html"]))
    assert any(line["text"].startswith("Probe run") and line["ok"] for line in card["lines"])
    assert card["cell"].startswith("%%assist_flow")
    # the session restores as the same card
    panel.switch_session(panel.session_id)
    restored = panel.messages[-1]
    assert restored["kind"] == "flow" and restored["flow_name"] == "Echo QA" and restored["picture_html"]


def test_restored_flow_turn_is_a_flow_card(panel):
    user, card = panel.messages
    assert user["role"] == "user" and user["text"] == "a flow that answers with a prompt"
    assert card["kind"] == "flow" and card["flow_name"] == "Echo QA" and card["validated"]
    svg = well_formed(card["picture_html"])
    assert "Prompt Template" in svg_texts(svg)
    assert card["cell"].startswith("%%assist_flow\nname: Echo QA")
    assert {"text": "Flow validated", "ok": True} in card["lines"]  # the stored verdict, not a new validation
    json.dumps(panel.messages)  # the trait is plain JSON


def test_flow_card_save_and_run(panel, tmp_path):
    card = panel.messages[-1]
    path = panel.save_flow(card["id"])
    assert path == (tmp_path / "Echo-QA.json").resolve() and validate_flow(path).is_valid
    assert str(path) in panel.notice
    panel.probe_run(card["id"], "ping").result(60)
    assert panel.notice == "Probe run on 'ping': 'Answer this: ping'"
    panel.register_flow(card["id"])
    assert panel.notice.startswith("Not connected to Langflow")


def test_a_failed_probe_run_reads_the_same_in_the_cell_and_on_the_panel(flow_ip, sandbox, tmp_path):
    """One failed run, one wording: the sandbox's ``FlowRun`` reaches the ``%%assist_flow`` card
    and the panel's Run notice as itself (typed, not a dict each layer rebuilds), and the panel's
    widget state stays plain JSON."""
    from lfassist_jupyter.core.session import Session, Turn
    from lfassist_jupyter.sandbox.answers import FlowRun
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    spec = "name: Reads a file\nnodes:\n  F: File\n  C: ChatOutput\nedges:\n  F.message -> C.input_value\n"
    cell = flow_ip.run_cell_magic("assist_flow", "--run x", spec)
    assert isinstance(cell.run, FlowRun) and cell.run.ok is False and "No files" in str(cell.run.error)
    # Not "failed": the run stopped at the file the user must give (issue 33).
    assert [(n.kind, n.node) for n in cell.run.needs] == [("file", "Read File")]
    said = f"Probe run on 'x' stopped at what you must provide: {cell.run.needs[0].message}"
    assert said in repr(cell)

    workspace = Workspace(data_dir=tmp_path / "failed-run", local_validator=sandbox)
    session = Session(id="lfassist-failedrun", title="a file flow")
    session.turns = [
        Turn(role="user", content="a flow that reads a file"),
        Turn(role="assistant", content=f"```\n{spec}```\n", kind="flow", validated=False, attempts=1, flow=cell.flow),
    ]
    workspace.store.save(session)
    panel = ChatPanel(workspace=workspace)
    panel.switch_session("lfassist-failedrun")
    panel.probe_run(panel.messages[-1]["id"], "x").result(60)
    assert panel.notice == said
    json.dumps(panel.messages)


def view(panel, msg: dict) -> None:
    """What the browser does: a custom comm message from the view, through ipywidgets' own dispatch."""
    panel._handle_msg({"content": {"data": {"method": "custom", "content": msg}}, "buffers": []})


def test_flow_card_register_runs_it_in_langflow(panel):
    calls: list = []
    panel.workspace.connect(mock_langflow(calls), server_validation=False)
    card = panel.messages[-1]
    panel.register_flow(card["id"]).result(60)
    assert (
        "Registered flow 'Echo QA'" in panel.notice
        and "Ran in Langflow on 'hello': 'Answer this: hello'" in panel.notice
    )
    assert [(m, p) for m, p, _ in calls] == [
        ("GET", "/api/v1/flows/"),
        ("POST", "/api/v1/flows/"),
        ("POST", "/api/v1/run/f-1"),
    ]


def test_flow_card_buttons_through_the_view_messages(panel):
    card = panel.messages[-1]
    view(panel, {"type": "insert", "id": card["id"]})
    assert "cannot insert cells" in panel.notice  # no JupyterLab front end here: the view copies the cell
    view(panel, {"type": "save_flow", "id": card["id"]})
    assert panel.notice.startswith("Saved ") and Path(panel.notice.split()[1]).is_file()


# -- the picture in a real kernel ----------------------------------------------------------------------


@pytest.mark.slow
def test_picture_in_a_real_kernel(tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext lfassist_jupyter"),
        nbformat.v4.new_code_cell(f"%%assist_flow --run 'from a kernel'\n{ECHO_QA}"),
        nbformat.v4.new_code_cell("%%assist_flow\nnot a spec"),
    ]
    NotebookClient(
        nb, timeout=180, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    result = next(o for o in nb.cells[1].outputs if o.output_type == "execute_result")
    svg = well_formed(result["data"]["text/html"])
    assert {"Chat Input", "Prompt Template", "Chat Output"} <= set(svg_texts(svg))
    assert "Answer this: from a kernel" in result["data"]["text/plain"]
    # IPython shows a UsageError as one line on stderr, with no traceback
    shown = "".join(o.get("text", "") + "".join(o.get("traceback", [])) for o in nb.cells[2].outputs)
    assert "UsageError: No flow spec found" in shown and "Traceback" not in shown, nb.cells[2].outputs
