"""Saved flows are Langflow 1.13 flow files: checked by the installed lfx's own CLI.

Every save path a user has (``%%assist_flow --save`` in a real IPython shell, the panel's Save
button) writes a file that ``lfx validate`` passes at levels 1-3 (no error; each warning is one
of lfx's own false positives, shown to be so from the file), that ``lfx export`` leaves byte for
byte as it is, and whose ``id`` stays the same across saves of the same flow and registrations.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import httpx
import pytest
from _support.components import COMBINE_SPEC, LLM_SPEC, QA_SPEC, UPPER_SPEC, named
from _support.lfxcli import known_lfx_false_positive, lfx, lfx_validate

from lfassist_jupyter import build_flow
from lfassist_jupyter.flows.save import FLOW_TAGS, file_flow_id, flow_file, is_flow_id, write_flow_file

ECHO_QA = named(QA_SPEC, "Echo QA")


def panel_with_flow(sandbox, tmp_path, spec: str):
    """A chat panel showing a stored conversation whose last turn is the flow of ``spec``."""
    from lfassist_jupyter.core.session import Session, Turn
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "panel", local_validator=sandbox)
    session = Session(id="lfassist-filetest", title="a flow")
    session.turns = [
        Turn(role="user", content="a flow"),
        Turn(role="assistant", content=spec, kind="flow", validated=True, attempts=1, flow=build_flow(spec).flow),
    ]
    workspace.store.save(session)
    panel = ChatPanel(workspace=workspace)
    panel.switch_session("lfassist-filetest")
    return panel


def assert_levels_1_to_3_clean(results: list[dict]) -> None:
    """No error at levels 1-3, and every warning one of lfx's own false positives (with why)."""
    for result in results:
        flow = json.loads(Path(result["path"]).read_text(encoding="utf-8"))
        assert result["ok"], result
        for issue in result["issues"]:
            assert issue["severity"] == "warning", (result["path"], issue)
            assert known_lfx_false_positive(issue, flow), (result["path"], issue)


def test_every_save_path_writes_a_file_lfx_validate_passes(flow_ip, sandbox, llm, tmp_path, monkeypatch):
    """Files from ``%%assist_flow --save`` and from the panel's Save (a stored card, and a flow the
    assistant just generated through the fake model server, whose model node it configured for the
    provider): levels 1-3 clean; level 4 clean wherever the flow's models are configured."""
    from _support.components import intent, plan, spec_reply

    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    configured = named(LLM_SPEC, "Configured QA") + "  M.model: gpt-4o-mini\n  M.api_key: OPENAI_API_KEY\n"
    cells = {"qa.json": ECHO_QA, "model.json": named(LLM_SPEC, "Model QA"), "configured.json": configured}
    saved = {}
    needs = {}
    for name, spec in cells.items():
        view = flow_ip.run_cell_magic("assist_flow", f"--save {name} --quiet --out v", spec)
        assert view is None and flow_ip.user_ns["v"].saved == (tmp_path / name).resolve()
        saved[name] = tmp_path / name
        needs[name] = {n.kind for n in flow_ip.user_ns["v"].report.needs}
    panel = panel_with_flow(sandbox, tmp_path, named(COMBINE_SPEC, "Combined QA"))
    saved["panel"] = panel.save_flow(panel.messages[-1]["id"])
    assert saved["panel"] == (tmp_path / "Combined-QA.json").resolve()

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-flow-files-test-0123456789")
    live = ChatPanel(workspace=Workspace(data_dir=tmp_path / "live", local_validator=sandbox))
    llm.queue(
        intent("build_flow"),
        plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
        spec_reply(named(LLM_SPEC, "Generated QA"), "yaml"),
    )
    live.send_prompt("a flow that answers briefly with a language model")
    live.wait(180)
    card = live.messages[-1]
    assert card["kind"] == "flow" and card["validated"], card
    saved["generated"] = live.save_flow(card["id"])
    assert "sk-flow-files-test" not in saved["generated"].read_text()

    paths = list(saved.values())
    assert_levels_1_to_3_clean(lfx_validate(paths, level=3))
    level4 = {Path(r["path"]).resolve(): r for r in lfx_validate(paths, level=4)}
    for name, path in saved.items():
        errors = [i["message"] for i in level4[path.resolve()]["issues"] if i["severity"] == "error"]
        if name == "model.json":  # no model chosen: lfx's error, our need (docs/flow-files.md)
            assert errors == ["Required input 'model' has no value and no incoming edge"]
            assert "model" in needs[name]
        else:
            assert errors == [], (name, errors)
    assert "model" not in needs["configured.json"]


def test_lfx_export_leaves_a_saved_file_as_it_is(flow_ip, tmp_path):
    flow_ip.run_cell_magic("assist_flow", "--save upper.json --quiet", named(UPPER_SPEC, "Upper"))
    done = lfx("export", "upper.json", "-o", "exported.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "exported.json").read_bytes() == (tmp_path / "upper.json").read_bytes()
    body = json.loads((tmp_path / "upper.json").read_text())
    assert is_flow_id(body["id"]) and body["name"] == "Upper" and body["is_component"] is False
    assert set(FLOW_TAGS) <= set(body["tags"]) and body["data"]["viewport"]
    assert not {"positionAbsolute", "dragging", "selected"} & {k for n in body["data"]["nodes"] for k in n}


def test_the_id_is_kept_across_saves_of_the_same_flow(flow_ip, sandbox, tmp_path):
    first = flow_ip.run_cell_magic("assist_flow", "--save qa.json", ECHO_QA)
    edited = flow_ip.run_cell_magic("assist_flow", "--save qa.json", ECHO_QA.replace("Answer this", "Reply to"))
    ids = [json.loads((tmp_path / "qa.json").read_text())["id"], first.flow["id"], edited.flow["id"]]
    assert is_flow_id(ids[0]) and len(set(ids)) == 1
    assert "Reply to" in (tmp_path / "qa.json").read_text()  # the second save is the edited flow
    other = flow_ip.run_cell_magic("assist_flow", "--save other.json", ECHO_QA)
    assert other.flow["id"] != ids[0]  # another file is another flow (control: ids are not constant)

    panel = panel_with_flow(sandbox, tmp_path, named(QA_SPEC, "Panel QA"))
    card = panel.messages[-1]["id"]
    once, twice = panel.save_flow(card), panel.save_flow(card)
    assert once == twice and file_flow_id(once) == panel._flows[card]["id"]
    assert panel._flows[card]["id"] in panel.notice


def test_save_then_register_and_register_then_save_share_one_id(tmp_path):
    """Against a Langflow speaking 1.13's API (mock transport): the id in the file is the id the
    flow is registered under, whichever came first, so `lfx push FILE` updates that flow."""
    from lfassist_jupyter.langflow import LangflowClient
    from lfassist_jupyter.ui.workspace import Workspace

    stored: dict[str, dict] = {}
    sent: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append((request.method, request.url.path))
        if request.method == "GET":
            return httpx.Response(200, json=[{"id": k, **v} for k, v in stored.items()])
        body = json.loads(request.content)
        if request.method == "POST":
            flow_id = "7d3c1f4e-2b7a-4d59-9c1e-000000000001"  # the id Langflow gives
        else:
            flow_id = request.url.path.rstrip("/").rsplit("/", 1)[1]
        stored[flow_id] = {**stored.get(flow_id, {}), **body}
        return httpx.Response(201 if request.method != "PATCH" else 200, json={"id": flow_id, **stored[flow_id]})

    client = LangflowClient(url="http://langflow.test", api_key="k" * 20, transport=httpx.MockTransport(handler))
    workspace = Workspace(data_dir=tmp_path / "data", langflow=client)

    flow = build_flow(ECHO_QA).flow
    assert "id" not in flow  # a build has no identity yet
    path = workspace.save_flow(flow, tmp_path / "qa.json")
    registered = workspace.register_flow(flow)
    assert registered.created and registered.id == file_flow_id(path) == flow["id"]
    assert ("PUT", f"/api/v1/flows/{flow['id']}") in sent  # created under the file's id (the upsert)
    again = workspace.register_flow(build_flow(ECHO_QA).flow)  # a rebuild, no id: ours by name
    assert not again.created and again.id == registered.id and sent[-1][0] == "PATCH"

    fresh = build_flow(named(QA_SPEC, "Registered first")).flow
    first = workspace.register_flow(fresh)
    assert sent[-1] == ("POST", "/api/v1/flows/") and first.id == fresh["id"]
    assert file_flow_id(workspace.save_flow(fresh, tmp_path / "first.json")) == first.id


def test_no_key_and_no_variable_name_is_written(tmp_path):
    flow = build_flow(named(LLM_SPEC, "Keys")).flow
    model = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "LanguageModelComponent")
    model["data"]["node"]["template"]["api_key"]["value"] = "sk-proj-do-not-write-me-0123456789"
    saved = write_flow_file(flow, tmp_path / "keys.json")
    text = saved.path.read_text()
    assert "sk-proj-do-not-write-me" not in text and '"value": ""' in text
    assert model["data"]["node"]["template"]["api_key"]["value"].startswith("sk-proj")  # the caller's flow is untouched
    clean = flow_file(flow, flow_id=saved.id)
    assert json.loads(text) == clean and clean["id"] == saved.id


def test_bad_flows_and_bad_files_are_one_line(tmp_path):
    from lfassist_jupyter.errors import ConfigError

    for bad in ([], {"data": {"nodes": "x"}}, {"nodes": [], "edges": 3}):
        with pytest.raises(ConfigError, match="flow"):
            write_flow_file(bad, tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="a flow id must be a UUID"):
        flow_file(build_flow(ECHO_QA).flow, flow_id="../../etc")
    assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob(".*.tmp"))  # nothing half-written


def test_saving_over_a_fifo_does_not_block(tmp_path):
    """A FIFO named like the target would block a plain read of its id until a writer comes; the
    save neither blocks nor reads it, and replaces it with the flow file. The control shows that
    a plain open of that FIFO does block."""
    fifo = tmp_path / "qa.json"
    os.mkfifo(fifo)
    opened = threading.Event()
    blocker = threading.Thread(target=lambda: (open(fifo, "rb").close(), opened.set()), daemon=True)
    blocker.start()
    assert not opened.wait(0.5)  # control: reading it the plain way hangs...
    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # ...until a writer comes
    assert opened.wait(5)
    saved = write_flow_file(build_flow(ECHO_QA).flow, fifo)
    assert saved.id_source == "new" and file_flow_id(fifo) == saved.id and fifo.is_file()


def test_save_never_replaces_a_file_that_is_not_a_flow(flow_ip, sandbox, tmp_path):
    """The panel's Save names the file after the flow, and a flow's name is written by whoever
    made it (a shared server, a stored session): a flow named "package" must not replace the
    notebook folder's ``package.json``, nor ``--save`` a file that is not a flow. The controls:
    the panel aimed at that file, and saving over an earlier flow file still works."""
    own = tmp_path / "package.json"
    own.write_text('{"name": "my-app", "dependencies": {}}\n', encoding="utf-8")
    panel = panel_with_flow(sandbox, tmp_path, named(QA_SPEC, "package"))
    card = panel.messages[-1]["id"]
    assert panel.flow_file_path(card) == own  # control: Save aims at the user's file
    assert panel.save_flow(card) is None
    assert "not a Langflow flow file" in panel.notice and "\n" not in panel.notice
    flow_ip.run_cell_magic("assist_flow", "--save package.json --quiet --out v", ECHO_QA)
    assert own.read_text(encoding="utf-8") == '{"name": "my-app", "dependencies": {}}\n'
    # Controls: an earlier flow file is replaced as before, by either door.
    first = panel_with_flow(sandbox, tmp_path, named(QA_SPEC, "Echo QA"))
    assert first.save_flow(first.messages[-1]["id"]) == (tmp_path / "Echo-QA.json").resolve()
    assert first.save_flow(first.messages[-1]["id"]) == (tmp_path / "Echo-QA.json").resolve()
    flow_ip.run_cell_magic("assist_flow", "--save Echo-QA.json --quiet --out v", ECHO_QA)
    assert flow_ip.user_ns["v"].saved == (tmp_path / "Echo-QA.json").resolve()


def test_a_flow_file_holds_the_langflow_flow_fields_and_no_other():
    """The fields a flow file keeps are the Langflow SDK's ``Flow`` model's (the drift check: a
    field Langflow adds is either kept or named volatile here), each of its type; any other key
    of the flow given (an IPython config section, a stray ``data`` key) is left out."""
    from langflow_sdk.models import Flow

    from lfassist_jupyter.flows.save import DATA_FIELDS, FLOW_FILE_FIELDS, VOLATILE_FIELDS

    assert set(Flow.model_fields) <= FLOW_FILE_FIELDS | VOLATILE_FIELDS
    given = {
        "InteractiveShellApp": {"exec_lines": ["import os"]},
        "locked": "yes",  # not a bool: Langflow's default
        "icon": "Bot",
        "action_name": "qa",
        "tags": ["mine", 3],
        "data": {"nodes": [], "edges": [], "viewport": {"x": 5, "zoom": "big", "evil": 1}, "extra": {}},
    }
    content = flow_file(given)
    assert set(content) <= FLOW_FILE_FIELDS and "InteractiveShellApp" not in content
    assert (content["locked"], content["icon"], content["action_name"]) == (False, "Bot", "qa")
    assert content["tags"] == ["mine", *FLOW_TAGS]
    assert set(content["data"]) == DATA_FIELDS and content["data"]["viewport"] == {"x": 5, "y": 0, "zoom": 1}
