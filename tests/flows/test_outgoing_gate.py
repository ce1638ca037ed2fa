"""What leaves for Langflow is judged as lfx will build it, through every door.

Two flows carry a shell command where lfx runs it and a scan of each node's own ``code`` did not
look: a Chat Output inside a group whose proxy field ``code_<ChatOutput>`` holds the payload in
the class body (lfx's ``process_flow`` copies it onto the node's ``code``; the node's own code is
lfx's), and a Python Function whose ``function_code`` runs it (a built-in node: its class code is
lfx's); a third is Langflow 1.13's Schedule trigger with the payload in its class body (a trigger
only declares a schedule, but lfx builds it like any node).  The control: lfx itself, in one plain
process (never this one, never a kernel), builds each as Langflow does -- ``Graph.from_payload``,
``instantiate_class`` for every node, the Python Function's function called -- and each payload
leaves its marker file.  Then each door refuses
each flow, naming the node and the field: ``validate_flow``, ``Workspace.save_flow``, the
``%%assist_flow --save``/``--register`` magic, the panel's Save and Register (the flow from a
stored session), ``Workspace.register_flow`` against a fake Langflow that records what it stores,
the MCP server's ``save_flow`` and ``register_flow``, and a real run; the plain flow goes through
the same doors (the control that the doors are open).
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from _support.fakelangflow import FakeLangflow

from lfassist_jupyter import validate_flow
from lfassist_jupyter.errors import ConfigError, LangflowError

PLAIN_SPEC = "name: Plain\nnodes:\n  A: ChatInput\n  C: ChatOutput\nedges:\n  A.message -> C.input_value\n"
PF_SPEC = "name: PF\nnodes:\n  P: PythonFunction\n  C: ChatOutput\nedges:\n  P.function_output_str -> C.input_value\n"
KEY = "lf-gate-test-key-0123456789"

TRIGGER_SPEC = (
    "name: Trig\nnodes:\n  T: ScheduleTrigger\n  A: ChatInput\n  C: ChatOutput\nedges:\n  A.message -> C.input_value\n"
)

# Where each flow's payload sits: (node, field) the refusal must name.
WHERE = {
    "group": ("Chat Output", "code"),
    "function": ("Python Function", "function_code"),
    "trigger": ("Schedule", "code"),
}


def _group_flow(plain: dict, marker: Path) -> dict:
    """``plain`` with Chat Input and Chat Output moved into a group whose proxy field gives the
    Chat Output a class body that runs ``touch MARKER`` (the node keeps lfx's own code)."""
    flow = copy.deepcopy(plain)
    nodes = flow["data"]["nodes"]
    out = next(n for n in nodes if n["data"]["type"] == "ChatOutput")
    code = out["data"]["node"]["template"]["code"]
    head = "class ChatOutput(ChatComponent):\n"
    assert head in code["value"]
    payload = code["value"].replace(head, f"{head}    _x = __import__('os').system('touch {marker}')\n")
    proxied = {**code, "value": payload, "show": False, "advanced": True, "proxy": {"id": out["id"], "field": "code"}}
    group_id = "GroupNode-gate1"
    group = {
        "id": group_id,
        "type": "genericNode",
        "position": {"x": 0, "y": 0},
        "data": {
            "id": group_id,
            "type": "GroupNode",
            "node": {
                "display_name": "Group",
                "description": "",
                "template": {f"code_{out['id']}": proxied},
                "flow": {"data": {"nodes": nodes, "edges": flow["data"]["edges"]}},
                "outputs": [],
            },
        },
    }
    flow["data"]["nodes"], flow["data"]["edges"] = [group], []
    return flow


def _function_flow(pf: dict, marker: Path) -> dict:
    flow = copy.deepcopy(pf)
    node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "PythonFunction")
    node["data"]["node"]["template"]["function_code"]["value"] = (
        f"def run():\n    import os\n    os.system('touch {marker}')\n    return 'ran'\n"
    )
    return flow


def _trigger_flow(flow: dict, marker: Path) -> dict:
    """A Langflow 1.13 Schedule trigger (a declaration that lfx still builds like any node: its class
    code is exec'd) whose class body runs ``touch MARKER``."""
    flow = copy.deepcopy(flow)
    node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "ScheduleTrigger")
    code = node["data"]["node"]["template"]["code"]
    head = "class ScheduleTriggerComponent(BaseTriggerComponent):\n"
    assert head in code["value"]
    code["value"] = code["value"].replace(head, f"{head}    _x = __import__('os').system('touch {marker}')\n")
    return flow


LFX_BUILDS = """
import json, sys
from lfx.graph.graph.base import Graph
from lfx.interface.initialize.loading import instantiate_class
for path in sys.argv[1:]:
    flow = json.load(open(path))
    for vertex in Graph.from_payload(flow["data"], flow_id="f").vertices:
        component, params = instantiate_class(vertex)  # what Langflow does to every node of a flow it runs
        if vertex.vertex_type == "PythonFunction":
            component.set_attributes(params)
            component.execute_function()  # what its outputs call
"""


@pytest.fixture(scope="module")
def flows(sandbox, tmp_path_factory):
    """{"plain", "group", "function", "trigger"}: (flow, its file); the hostile ones' markers in ``markers``."""
    from lfassist_jupyter import build_flow

    folder = tmp_path_factory.mktemp("gate")
    markers = folder / "markers"
    markers.mkdir()
    plain, pf = build_flow(PLAIN_SPEC).flow, build_flow(PF_SPEC).flow
    made = {
        "plain": plain,
        "group": _group_flow(plain, markers / "group"),
        "function": _function_flow(pf, markers / "function"),
        "trigger": _trigger_flow(build_flow(TRIGGER_SPEC).flow, markers / "trigger"),
    }
    out = {}
    for name, flow in made.items():
        flow["id"] = str(uuid.uuid4())  # Langflow 1.13 upserts a flow under its own id (what Save writes)
        path = folder / f"{name}.json"
        path.write_text(json.dumps(flow), encoding="utf-8")
        out[name] = (flow, path)
    out["markers"] = markers
    return out


def test_control_lfx_runs_every_payload(flows):
    """lfx, as Langflow builds a flow, in one plain interpreter: every marker appears."""
    paths = [str(flows[name][1]) for name in WHERE]
    done = subprocess.run(
        [sys.executable, "-c", LFX_BUILDS, *paths], cwd=flows["markers"], capture_output=True, text=True, timeout=300
    )
    made = {p.name for p in flows["markers"].iterdir()}
    assert made == set(WHERE), (done.returncode, done.stderr[-2000:])


def _named(text: str, kind: str) -> bool:
    node, field = WHERE[kind]
    return f"{node}.{field}" in text and "os.system" in text


@pytest.mark.parametrize("kind", sorted(WHERE))
def test_validate_flow_refuses_naming_the_node_and_field(flows, kind):
    flow, path = flows[kind]
    for report in (validate_flow(flow), validate_flow(path)):
        unsafe = [e for e in report.errors if e.code == "unsafe_code"]
        assert not report.is_valid and unsafe, report.errors
        assert (unsafe[0].node, unsafe[0].field) == WHERE[kind] and _named(str(unsafe[0]), kind), unsafe
    assert validate_flow(flows["plain"][0]).is_valid  # the control


@pytest.mark.parametrize("kind", sorted(WHERE))
def test_a_workspace_save_writes_nothing(flows, sandbox, tmp_path, kind):
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    with pytest.raises(ConfigError) as refused:
        workspace.save_flow(copy.deepcopy(flows[kind][0]), tmp_path / "out.json")
    assert _named(str(refused.value), kind) and "nothing was written" in str(refused.value)
    assert not (tmp_path / "out.json").exists()
    assert workspace.save_flow(copy.deepcopy(flows["plain"][0]), tmp_path / "plain.json").exists()  # the control


def _stored(server: FakeLangflow) -> list[dict]:
    with urllib.request.urlopen(f"{server.url}/api/v1/flows/", timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize("kind", sorted(WHERE))
def test_register_sends_nothing_to_langflow(flows, sandbox, tmp_path, kind):
    from lfassist_jupyter.langflow import LangflowClient
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    with FakeLangflow() as server:
        workspace.connect(LangflowClient(url=server.url, api_key=KEY), server_validation=False)
        with pytest.raises(LangflowError) as refused:
            workspace.register_flow(copy.deepcopy(flows[kind][0]))
        assert _named(str(refused.value), kind) and "nothing was sent" in str(refused.value)
        assert _stored(server) == []
        workspace.register_flow(copy.deepcopy(flows["plain"][0]))  # the control: the door is open
        assert [f["name"] for f in _stored(server)] == ["Plain"]


def test_the_magic_neither_saves_nor_registers(flows, flow_ip, tmp_path):
    """``%%assist_flow FILE --save OUT --register`` on each hostile file: nothing written, nothing
    sent, the view says which node and field; the plain file is saved and registered."""
    from lfassist_jupyter.langflow import LangflowClient

    workspace = flow_ip.magics_manager.registry["AssistMagics"].workspace
    with FakeLangflow() as server:
        workspace.connect(LangflowClient(url=server.url, api_key=KEY), server_validation=False)
        for kind in sorted(WHERE):
            flow_ip.run_cell_magic(
                "assist_flow", f"--quiet --out v --save {kind}-out.json --register", str(flows[kind][1])
            )
            view = flow_ip.user_ns["v"]
            notes = " ".join(text for text, _ in view.notes)
            shown = notes + " ".join(str(e) for e in view.report.errors)
            assert not (tmp_path / f"{kind}-out.json").exists() and "Not saved" in notes and "Not registered" in notes
            assert _named(shown, kind), shown
        assert _stored(server) == []
        flow_ip.run_cell_magic("assist_flow", "--quiet --save plain-out.json --register", str(flows["plain"][1]))
        assert (tmp_path / "plain-out.json").exists() and len(_stored(server)) == 1  # the control


@pytest.mark.parametrize("kind", sorted(WHERE))
def test_the_panel_neither_saves_nor_registers_a_stored_sessions_flow(flows, sandbox, tmp_path, monkeypatch, kind):
    """The flow comes back from a stored session (a file anyone could have written) as a card."""
    from lfassist_jupyter.core.session import Session, Turn
    from lfassist_jupyter.langflow import LangflowClient
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.chdir(tmp_path)
    workspace = Workspace(data_dir=tmp_path / "panel", local_validator=sandbox)
    session = Session(id="lfassist-gate", title="a flow")
    flow = copy.deepcopy(flows[kind][0])
    reply = Turn(role="assistant", content="Here it is.", kind="flow", validated=True, attempts=1, flow=flow)
    session.turns = [Turn(role="user", content="a flow"), reply]
    workspace.store.save(session)
    panel = ChatPanel(workspace=workspace)
    panel.switch_session("lfassist-gate")
    card = panel.messages[-1]
    assert panel.save_flow(card["id"]) is None
    assert panel.notice.startswith("Not saved") and _named(panel.notice, kind), panel.notice
    assert not list(tmp_path.glob("*.json"))
    with FakeLangflow() as server:
        workspace.connect(LangflowClient(url=server.url, api_key=KEY), server_validation=False)
        panel.register_flow(card["id"]).result(120)
        assert panel.notice.startswith("Not registered") and _stored(server) == [], panel.notice


def _mcp_call(server, tool: str, **arguments) -> str:
    """One MCP tool call in process (the server's own ``call_tool``): the answer or the error, as text."""
    try:
        answer = asyncio.run(server.call_tool(tool, arguments))
    except Exception as exc:  # the tool's refusal, as FastMCP raises it
        return f"error: {exc}"
    return f"ok: {answer}"


def test_the_mcp_server_neither_saves_nor_registers(flows, sandbox, tmp_path, monkeypatch):
    from lfassist_jupyter.mcp import build_server

    with FakeLangflow() as langflow:
        monkeypatch.setenv("LANGFLOW_URL", langflow.url)
        monkeypatch.setenv("LANGFLOW_API_KEY", KEY)
        server = build_server(tmp_path)
        for kind in sorted(WHERE):
            flow = flows[kind][0]
            saved = _mcp_call(server, "save_flow", flow=flow, path=f"{kind}.json")
            assert saved.startswith("error") and _named(saved, kind) and not list(tmp_path.rglob(f"{kind}.json"))
            sent = _mcp_call(server, "register_flow", flow=flow)
            assert sent.startswith("error") and _named(sent, kind) and "nothing was sent" in sent
        assert _stored(langflow) == []
        assert _mcp_call(server, "save_flow", flow=flows["plain"][0], path="plain.json").startswith("ok")  # control
        assert list(tmp_path.rglob("plain.json"))


@pytest.mark.parametrize("kind", sorted(WHERE))
def test_a_real_run_does_not_start(flows, kind):
    from lfassist_jupyter import run_flow_for_real

    with pytest.raises(ConfigError) as refused:
        run_flow_for_real(copy.deepcopy(flows[kind][0]), "hi", timeout=60)
    assert str(refused.value).startswith("Not run") and _named(str(refused.value), kind), str(refused.value)


def test_a_spec_setting_function_code_is_refused(sandbox):
    """A model's spec (or a user's) that sets Python Function's ``function_code`` is judged too."""
    spec = PF_SPEC + "config:\n  P.function_code: \"def run():\\n    import os\\n    os.system('id')\"\n"
    report = validate_flow(spec)
    unsafe = [e for e in report.errors if e.code == "unsafe_code"]
    assert unsafe and unsafe[0].field == "function_code" and "os.system" in unsafe[0].message, report.errors


def test_what_cannot_be_judged_is_refused(flows):
    """A code field that is not text, a proxy naming no node, groups nested past the bound."""
    from lfassist_jupyter.artifacts.executed import MAX_GROUP_DEPTH

    flow, _ = flows["function"]
    not_text = copy.deepcopy(flow)
    node = next(n for n in not_text["data"]["nodes"] if n["data"]["type"] == "PythonFunction")
    node["data"]["node"]["template"]["function_code"]["value"] = {"import": "os"}
    dangling = copy.deepcopy(flows["group"][0])
    group = dangling["data"]["nodes"][0]["data"]["node"]
    next(iter(group["template"].values()))["proxy"]["id"] = "Nowhere-1"
    deep = copy.deepcopy(flows["plain"][0])
    for level in range(MAX_GROUP_DEPTH + 1):
        gid = f"Group-{level}"
        deep["data"]["nodes"] = [
            {"id": gid, "data": {"id": gid, "type": "GroupNode", "node": {"template": {}, "flow": copy.deepcopy(deep)}}}
        ]
    for bad, words in ((not_text, "not text"), (dangling, "Nowhere-1"), (deep, "nest more than")):
        report = validate_flow(bad)
        assert not report.is_valid and any(e.code == "unsafe_code" and words in e.message for e in report.errors)


@pytest.mark.parametrize("modules", ["math, subprocess", ["math", "subprocess"]])
def test_a_module_list_lfx_imports_is_judged_as_imports(flows, modules):
    """The Python Interpreter's ``global_imports`` puts modules into the namespace of the code it
    runs: a refused module there is refused as its ``import`` is, as text or as a list."""
    flow = copy.deepcopy(flows["plain"][0])
    node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "ChatOutput")
    node["data"]["node"]["template"]["global_imports"] = {"type": "str", "value": modules, "show": True}
    unsafe = [e for e in validate_flow(flow).errors if e.code == "unsafe_code"]
    assert unsafe and unsafe[0].field == "global_imports" and "`subprocess`" in unsafe[0].message, unsafe
