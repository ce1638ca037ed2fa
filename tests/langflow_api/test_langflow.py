"""Against a real Langflow server: installed with uv into its own cached environment (outside
the project's venv), started on 127.0.0.1 with a temporary config and database -- the session's
one server (conftest's ``langflow_server``), shared with the other Langflow tests.

Each test registers under names no other test asserts on, so they pass in any order; the test
of a server stopped mid-session stops a forwarder in front of the shared server, not the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _support.components import GOOD, LOWER_AND_UPPER, WRONG_IMPORT, fenced, intent
from _support.forwarder import Forwarder
from _support.langflow_env import free_port

from lfassist_jupyter import Assistant, ChainValidator
from lfassist_jupyter.core.session import SessionStore
from lfassist_jupyter.langflow import (
    TAG,
    LangflowAuthError,
    LangflowBuildError,
    LangflowClient,
    LangflowConnectionError,
    LangflowDisabledError,
    LangflowValidator,
)
from lfassist_jupyter.providers import create_provider
from lfassist_jupyter.runtime import run_sync

pytestmark = pytest.mark.langflow


@pytest.fixture(scope="module")
def server(langflow_server):
    return langflow_server


@pytest.fixture(scope="module")
def client(server):
    return LangflowClient(url=server.url).connect()


# -- connection ---------------------------------------------------------------------------


def test_connect_with_auto_login_creates_a_key_that_is_never_shown(client, server):
    assert client.connected and client.auth == "auto_login"
    assert client.version and client.version.startswith("1.")
    assert client.api_key and client.api_key not in repr(client)


def test_wrong_key_is_a_clear_auth_error(server):
    with pytest.raises(LangflowAuthError) as info:
        LangflowClient(url=server.url, api_key="sk-not-a-real-langflow-key").connect()
    assert "LANGFLOW_API_KEY" in str(info.value) and "sk-not-a-real" not in str(info.value)


def test_wrong_url_is_a_clear_connection_error():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(LangflowConnectionError) as info:
        LangflowClient(url=url).connect()
    assert url in str(info.value) and "Nothing was sent" in str(info.value)
    token = "lf-url-token-0123456789"  # a token in the URL's user part: used, never repeated
    client = LangflowClient(url=url.replace("://", f"://{token}@"))
    with pytest.raises(LangflowConnectionError) as info:
        client.connect()
    assert url in str(info.value) and token not in str(info.value) + repr(client) + client.public_url


# -- components ----------------------------------------------------------------------------


def test_register_lists_our_code_and_updates_in_place(client):
    name = "Listed Uppercase"  # a name of this test's own: the server is shared, in any order
    code = GOOD.replace('"Uppercase"', f'"{name}"')
    first = client.register(code)
    assert first.created and first.name == name
    listed = [c for c in client.list_components() if c["name"] == name]
    assert [c["id"] for c in listed] == [first.id] and TAG in listed[0]["tags"]
    flow = run_sync(client.get_component(first.id))
    node = flow["data"]["nodes"][0]["data"]["node"]
    assert flow["is_component"] is True and node["template"]["code"]["value"] == code

    # same name, new behaviour
    changed = LOWER_AND_UPPER.replace("CaseComponent", "UppercaseComponent").replace('"Uppercase"', f'"{name}"')
    second = client.register(changed)
    assert second.created is False and second.id == first.id
    listed = [c for c in client.list_components() if c["name"].startswith(name)]
    assert len(listed) == 1  # no "Listed Uppercase (1)"
    flow = run_sync(client.get_component(first.id))
    assert flow["data"]["nodes"][0]["data"]["node"]["template"]["code"]["value"] == changed


def test_server_side_build_error_surfaces_clearly_and_saves_nothing(client):
    before = len(client.list_components())
    with pytest.raises(LangflowBuildError) as info:
        client.register(WRONG_IMPORT)
    assert "could not build the component" in str(info.value) and "lfx.base" in str(info.value)
    assert "Traceback" in info.value.traceback
    assert len(client.list_components()) == before


def test_server_validation_runs_after_the_local_one(client, llm, sandbox, tmp_path):
    llm.queue(intent("generate_component"), fenced(GOOD))
    provider = create_provider("openai", api_key="test-key-123456", base_url=llm.openai_base_url, http_retries=0)
    validator = ChainValidator(sandbox, LangflowValidator(client))
    assistant = Assistant(provider=provider, validator=validator, session_store=SessionStore(tmp_path))
    result = assistant.run("uppercase component")
    assert result.validated
    assert result.report.phases_run[-1] == "server" and "server" in result.report.timings_ms


def test_registered_component_runs_in_a_real_flow(client, server):
    """ChatInput -> our component -> ChatOutput, run by the server: it really works in Langflow."""
    registered = client.register(GOOD)
    headers = {"x-api-key": client.api_key}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        catalog = http.get("/api/v1/all").json()
        ours = http.post("/api/v1/custom_component", json={"code": GOOD}).json()
        chat_in, chat_out = catalog["input_output"]["ChatInput"], catalog["input_output"]["ChatOutput"]
        nodes = {
            "ChatInput-in001": ("ChatInput", chat_in),
            f"{ours['type']}-cmp01": (ours["type"], ours["data"]),
            "ChatOutput-out01": ("ChatOutput", chat_out),
        }

        def edge(src: str, out: str, tgt: str, field: str) -> dict:
            src_type, src_node = nodes[src]
            out_types = next(o["types"] for o in src_node["outputs"] if o["name"] == out)
            tgt_field = nodes[tgt][1]["template"][field]
            sh = {"dataType": src_type, "id": src, "name": out, "output_types": out_types}
            th = {"fieldName": field, "id": tgt, "inputTypes": tgt_field.get("input_types"), "type": tgt_field["type"]}
            return {
                "id": f"e-{src}-{tgt}",
                "source": src,
                "target": tgt,
                "sourceHandle": json.dumps(sh),
                "targetHandle": json.dumps(th),
                "data": {"sourceHandle": sh, "targetHandle": th},
            }

        flow = {
            "name": f"lfassist flow test {registered.id[:8]}",
            "data": {
                "nodes": [
                    {
                        "id": nid,
                        "type": "genericNode",
                        "position": {"x": 200 * i, "y": 0},
                        "data": {"id": nid, "type": ntype, "node": node},
                    }
                    for i, (nid, (ntype, node)) in enumerate(nodes.items())
                ],
                "edges": [
                    edge("ChatInput-in001", "message", f"{ours['type']}-cmp01", "input_text"),
                    edge(f"{ours['type']}-cmp01", "output", "ChatOutput-out01", "input_value"),
                ],
            },
        }
        created = http.post("/api/v1/flows/", json=flow)
        assert created.status_code in (200, 201), created.text
        payload = {"input_value": "hello langflow", "input_type": "chat", "output_type": "chat"}
        run = http.post(f"/api/v1/run/{created.json()['id']}?stream=false", json=payload)
        assert run.status_code == 200, run.text
        assert "HELLO LANGFLOW" in run.text


@pytest.fixture
def shell(llm, monkeypatch):
    """A real IPython shell with the extension loaded, its model served by the fake server."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-magic-test-key-0123456789")
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "lfassist_jupyter")
    yield ip
    ip.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


def test_magic_connect_register_and_status(server, llm, shell, capsys):
    ip = shell  # a loaded IPython shell
    ip.run_line_magic("assist", f"connect {server.url}")
    assert "Connected to Langflow" in capsys.readouterr().out
    ip.run_line_magic("assist", "status")
    assert f"Langflow: connected to {server.url}" in capsys.readouterr().out
    llm.queue(intent("generate_component"), fenced(GOOD.replace('"Uppercase"', '"Shouty"')))
    result = ip.run_cell_magic("assist", "--register", "a shouting component")
    out = capsys.readouterr().out
    assert result.validated and "server" in result.report.phases_run
    assert "in Langflow at" in out and "'Shouty'" in out and result.registered.name == "Shouty"
    ip.run_line_magic("assist", "components")
    assert "Shouty" in capsys.readouterr().out


def test_custom_components_disabled_is_a_clear_error():
    """The 403 a server with LANGFLOW_ALLOW_CUSTOM_COMPONENTS=false answers (its exact body)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"detail": "Custom component creation is disabled"})

    client = LangflowClient(url="http://langflow.test", api_key="k" * 20, transport=httpx.MockTransport(handler))
    with pytest.raises(LangflowDisabledError) as info:
        client.validate_code(GOOD)
    assert "does not allow custom components" in str(info.value) and "k" * 20 not in str(info.value)


def test_components_folder_write_and_reload(tmp_path):
    """The alternative to register: a file under LANGFLOW_COMPONENTS_PATH/<category>/ and a reload."""
    from lfassist_jupyter.errors import LangflowError

    calls = []

    def reload_ok(request: httpx.Request) -> httpx.Response:
        calls.append((request.method, request.url.path))
        return httpx.Response(200, json={"ok": True})

    client = LangflowClient(url="http://langflow.test", api_key="k" * 20, transport=httpx.MockTransport(reload_ok))
    path = run_sync(client.write_component_file(GOOD, tmp_path / "components"))
    assert path == tmp_path / "components" / "lfassist" / "uppercasecomponent.py" and path.read_text() == GOOD
    assert calls == [("POST", "/api/v1/extensions/lfassist/bundles/lfassist/reload")]

    def reload_disabled(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"detail": "Extension reload is disabled"})

    client = LangflowClient(
        url="http://langflow.test", api_key="k" * 20, transport=httpx.MockTransport(reload_disabled)
    )
    with pytest.raises(LangflowError, match="LANGFLOW_ENABLE_EXTENSION_RELOAD") as info:
        run_sync(client.write_component_file(LOWER_AND_UPPER, tmp_path / "components"))
    assert "casecomponent.py" in str(info.value)
    assert (tmp_path / "components" / "lfassist" / "casecomponent.py").read_text() == LOWER_AND_UPPER  # kept


def test_langflow_notebook_under_nbval(server, tmp_path):
    """notebooks/langflow.ipynb, validated with nbval against this real server (offline model)."""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "OLLAMA"))}
    env.update(
        LANGFLOW_URL=server.url,
        LFASSIST_SCRIPT=str(root / "notebooks" / "demo-script.json"),
        LFASSIST_DATA_DIR=str(tmp_path),
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--nbval-lax",
            str(root / "notebooks" / "langflow.ipynb"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert " passed" in run.stdout


def test_server_stopped_mid_session_loses_nothing(server, llm, shell, capsys):
    """Langflow goes away mid-session. The client reaches the shared server through a forwarder
    and the forwarder stops: to the client the server has vanished (the port refuses, open
    connections are cut), while the session's server goes on serving the other tests."""
    ip = shell
    front = Forwarder(server.port)
    try:
        client = LangflowClient(url=front.url).connect()
        ip.run_line_magic("assist", f"connect {front.url}")
        assert "Connected to Langflow" in capsys.readouterr().out  # the control: it was reachable
        front.stop()  # Langflow goes away mid-session
        with pytest.raises(LangflowConnectionError):
            client.register(GOOD)
        llm.queue(intent("generate_component"), fenced(GOOD))
        ip.rl_next_input = None
        result = ip.run_cell_magic("assist", "--register", "uppercase component")
        out = capsys.readouterr().out
        assert result.validated and ip.rl_next_input == GOOD  # the code is still inserted
        assert "Not checked on the Langflow server" in " ".join(result.report.warnings)
        assert "Not registered: Could not reach Langflow" in out and "Traceback" not in out
    finally:
        front.stop()
