"""Flows in Langflow: register (create, then update in place) and run, against the real server; the
error paths against a mock transport (each one clear line, never the key).  Only the tests
against the real server are marked ``langflow``: the mock ones run in every quick run.

The real server is the session's one (conftest's ``langflow_server``); the flows registered here
have names no other test asserts on.
"""

from __future__ import annotations

import json

import httpx
import pytest
from _support.components import QA_SPEC, named

from lfassist_jupyter import build_flow
from lfassist_jupyter.errors import LangflowAuthError, LangflowConnectionError, LangflowError
from lfassist_jupyter.langflow import LangflowClient
from lfassist_jupyter.langflow.flows import (
    FLOW_TAG,
    delete_flow,
    list_flows,
    register_flow,
    run_on_server,
)

KEY = "lf-flow-test-key-0123456789abcdef"

ECHO_QA = named(QA_SPEC, "lfassist Echo QA")


@pytest.fixture(scope="module")
def flow() -> dict:
    return build_flow(ECHO_QA).flow


# -- the real server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(langflow_server):
    return LangflowClient(url=langflow_server.url).connect()


@pytest.mark.langflow
def test_register_creates_then_updates_in_place_and_runs(client, flow):
    first = register_flow(client, flow)
    assert first.created and first.name == "lfassist Echo QA"
    ours = [f for f in list_flows(client) if f["name"] == first.name]
    assert [f["id"] for f in ours] == [first.id] and FLOW_TAG in ours[0]["tags"]
    assert run_on_server(client, first.id, "what is Langflow?").text == "Answer this: what is Langflow?"

    changed = build_flow(ECHO_QA.replace("Answer this: {question}", "Reply to: {question}")).flow
    second = register_flow(client, changed)
    assert not second.created and second.id == first.id
    assert len([f for f in list_flows(client) if f["name"].startswith(first.name)]) == 1  # no "(1)"
    result = run_on_server(client, first.id, "hi")
    assert result.text == "Reply to: hi"  # the update is what runs
    assert [o["component"] for o in result.outputs] == ["Chat Output"]


@pytest.mark.langflow
def test_assist_flow_register_proves_it_with_a_run(client, sandbox, tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        magics = shell.magics_manager.registry["AssistMagics"]
        magics.workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox, langflow=client)
        spec = ECHO_QA.replace("lfassist Echo QA", "lfassist magic QA")
        view = shell.run_cell_magic("assist_flow", '--register --run "from the magic"', spec)
        assert view.registered is not None and view.registered.created
        assert view.server_run.text == "Answer this: from the magic" == view.run.text  # Langflow agrees with the probe
        assert "Ran in Langflow on 'from the magic': 'Answer this: from the magic'" in repr(view)
        again = shell.run_cell_magic("assist_flow", "--register", spec)
        assert again.registered.id == view.registered.id and not again.registered.created
        assert "Updated flow 'lfassist magic QA'" in repr(again)
        # load it back from Langflow by id, to edit it in the conversation
        loaded = shell.run_line_magic("assist", f"flow load {view.registered.id}")
        assert (
            loaded.ok and loaded.flow["name"] == "lfassist magic QA" and "Loaded into this conversation" in repr(loaded)
        )
        listed = shell.run_line_magic("assist", "flows")
        assert [f["id"] for f in listed if f["name"] == "lfassist magic QA"] == [view.registered.id]
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()


@pytest.mark.langflow
def test_a_saved_file_its_registration_and_lfx_push_are_one_flow(client, langflow_server, tmp_path):
    """The file's id is the registered flow's id (created with Langflow 1.13's upsert), and the
    installed lfx's own `lfx push` of that file updates the same flow: no second one appears."""
    from _support.lfxcli import lfx

    from lfassist_jupyter.flows.save import file_flow_id
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", langflow=client)
    flow = build_flow(named(QA_SPEC, "lfassist pushed QA")).flow
    path = workspace.save_flow(flow, tmp_path / "pushed.json")
    registered = workspace.register_flow(flow)
    assert registered.created and registered.id == file_flow_id(path)
    edited = build_flow(named(QA_SPEC.replace("Answer this", "Pushed"), "lfassist pushed QA")).flow
    workspace.save_flow(edited, path)  # the same file: the same id
    done = lfx("push", str(path), "--target", langflow_server.url, "--api-key", client.api_key or "", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 updated." in done.stdout and f"({registered.id})" in done.stderr  # updated, under the file's id
    same = [f for f in list_flows(client) if f["name"].startswith("lfassist pushed QA")]
    assert [f["id"] for f in same] == [registered.id]  # updated in place, no "(1)"
    assert run_on_server(client, registered.id, "hi").text == "Pushed: hi"  # the pushed edit is what runs


@pytest.mark.langflow
def test_missing_flow_is_a_clear_404(client):
    with pytest.raises(LangflowError, match=r"no flow 00000000-0000-0000-0000-000000000000 \(404\)") as info:
        run_on_server(client, "00000000-0000-0000-0000-000000000000", "hi")
    assert client.api_key not in str(info.value)


@pytest.mark.langflow
def test_delete(client, flow):
    registered = register_flow(client, flow, "lfassist to delete")
    delete_flow(client, registered.id)
    assert registered.id not in {f["id"] for f in list_flows(client)}


# -- error paths, mock transport ----------------------------------------------------------------


def mock(handler) -> LangflowClient:
    return LangflowClient(url="http://langflow.test", api_key=KEY, transport=httpx.MockTransport(handler))


def listing(flows: list[dict]):
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path == "/api/v1/flows/":
            return httpx.Response(200, json=flows)
        return httpx.Response(500, json={"detail": "unexpected"})

    return handler


def test_server_down_is_one_line():
    client = LangflowClient(url="http://127.0.0.1:9", api_key=KEY)  # nothing listens on the discard port
    with pytest.raises(LangflowConnectionError, match=r"Could not reach Langflow at http://127\.0\.0\.1:9"):
        register_flow(client, {"name": "x", "data": {"nodes": [], "edges": []}})


def test_401_names_the_fix_not_the_key(flow):
    client = mock(lambda request: httpx.Response(401, json={"detail": "Invalid API key"}))
    with pytest.raises(LangflowAuthError) as info:
        register_flow(client, flow)
    assert "LANGFLOW_API_KEY" in str(info.value) and KEY not in str(info.value)
    with pytest.raises(LangflowAuthError):
        run_on_server(client, "abc", "hi")


def test_422_shows_langflows_reason(flow):
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(422, json={"detail": [{"loc": ["body", "name"], "msg": "field required"}]})
        return listing([])(request)

    with pytest.raises(LangflowError, match=r"rejected the flow as invalid \(422\).*field required"):
        register_flow(mock(handler), flow)


def test_non_json_body_is_named():
    client = mock(
        lambda request: httpx.Response(200, text="<html>proxy login</html>", headers={"content-type": "text/html"})
    )
    with pytest.raises(LangflowError, match=r"not JSON \(200, text/html\)"):
        run_on_server(client, "abc", "hi")
    with pytest.raises(LangflowError, match="not JSON"):
        list_flows(client)


def test_run_failure_in_langflow_is_one_line():
    client = mock(lambda request: httpx.Response(500, json={"detail": "Error running graph: boom"}))
    with pytest.raises(LangflowError, match=r"The flow failed in Langflow \(500\): Error running graph: boom"):
        run_on_server(client, "abc", "hi")


def test_update_in_place_only_for_our_flow_of_the_same_name(flow):
    """A flow of the same name that is not ours (no tag) is left alone: ours is created beside it."""
    sent: list[tuple[str, str, dict]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return listing([{"id": "theirs", "name": "lfassist Echo QA", "tags": []}])(request)
        sent.append((request.method, request.url.path, json.loads(request.content)))
        return httpx.Response(201, json={"id": "new-id", "name": "lfassist Echo QA"})

    registered = register_flow(mock(handler), flow)
    assert registered.created and registered.id == "new-id"
    method, path, body = sent[0]
    assert (method, path) == ("POST", "/api/v1/flows/") and FLOW_TAG in body["tags"]
    assert set(body) >= {"name", "description", "data"} and body["data"]["nodes"] and not body["is_component"]
