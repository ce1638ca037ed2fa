"""A flow with a model node, registered on a real Langflow server, answers there as it answers here.

The session's server (``langflow_server`` in conftest) points at the fake provider
(``OPENAI_BASE_URL``) and holds the key (``OPENAI_API_KEY``, which Langflow turns into a global
variable at start), and its admin allows its flows to reach that address
(``LANGFLOW_SSRF_ALLOWED_HOSTS``).  The flow carries its
model selection and its key field names that variable, so ``POST /api/v1/run/{id}`` reaches the
fake provider with the server's key and the user's exact model name.  A flow whose key names a
variable the server does not have is registered, not run, and the note names the variable.
"""

from __future__ import annotations

import httpx
import pytest
from _support.components import LLM_SPEC, named
from _support.fakellm import Reply
from _support.langflow_env import SERVER_KEY

from lfassist_jupyter.langflow import LangflowClient

SPEC = named(LLM_SPEC, "lfassist model QA") + (
    '  M.model: {"name": "my-local-model", "provider": "OpenAI"}\n  M.api_key: OPENAI_API_KEY\n'
)


@pytest.fixture
def provider(langflow_provider):
    return langflow_provider


@pytest.fixture(scope="module")
def client(langflow_server):
    return LangflowClient(url=langflow_server.url).connect()


@pytest.fixture
def shell(client, sandbox, tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "lfassist_jupyter")
    ip.magics_manager.registry["AssistMagics"].workspace = Workspace(
        data_dir=tmp_path / "data", local_validator=sandbox, langflow=client
    )
    yield ip
    ip.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


@pytest.mark.langflow
def test_a_registered_model_flow_answers_through_the_run_api(shell, client, provider):
    provider.queue(Reply("Answered by the server's model."))
    view = shell.run_cell_magic("assist_flow", '--register --run "what is Langflow?"', SPEC)

    assert view.registered is not None, view.notes
    assert view.server_run is not None, [n[0] for n in view.notes][
        -1
    ]  # the proof run was made: the server has OPENAI_API_KEY
    assert view.server_run.text == "Answered by the server's model."
    request = provider.requests[-1]
    assert request.headers["authorization"] == f"Bearer {SERVER_KEY}"  # the server's global variable
    assert request.body["model"] == "my-local-model" and request.last_user == "Be brief. what is Langflow?"
    assert "Ran in Langflow on 'what is Langflow?': \"Answered by the server's model.\"" in repr(view)

    # The stored flow answers any client of Langflow's run API, not only ours.
    provider.queue(Reply("Again, from the run API."))
    answer = httpx.post(
        f"{client.url}/api/v1/run/{view.registered.id}",
        json={"input_value": "hi", "input_type": "chat", "output_type": "chat"},
        headers={"x-api-key": client.api_key},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    assert "Again, from the run API." in answer.text
    assert provider.requests[-1].last_user == "Be brief. hi"


@pytest.mark.langflow
def test_a_flow_naming_a_variable_the_server_lacks_is_registered_not_run(shell, provider):
    spec = SPEC.replace("lfassist model QA", "lfassist claude QA").replace(
        '{"name": "my-local-model", "provider": "OpenAI"}', '{"name": "claude-haiku-4-5", "provider": "Anthropic"}'
    )
    spec = spec.replace("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    before = len(provider.requests)
    view = shell.run_cell_magic("assist_flow", "--register", spec)
    assert view.registered is not None and view.server_run is None
    assert "Not run in Langflow: it needs the global variable ANTHROPIC_API_KEY" in repr(view)
    assert len(provider.requests) == before
