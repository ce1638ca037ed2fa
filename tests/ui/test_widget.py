"""The chat panel's model without a browser: messages from the view, trait updates, throttling,
sessions, and no secrets in the synced state (which is what a saved notebook stores)."""

from __future__ import annotations

import html
import json
import time

import httpx
import pytest
from _support.components import GOOD, WRONG_IMPORT, fenced, intent
from _support.display import html_of, text_of
from _support.fakellm import Reply

from lfassist_jupyter.ui.panel import FLUSH_INTERVAL, STATIC, ChatPanel
from lfassist_jupyter.ui.workspace import Workspace

KEY = "sk-panel-secret-0123456789abcdef"


@pytest.fixture
def panel(llm, monkeypatch, sandbox, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=sandbox))


def view(panel: ChatPanel, msg: dict) -> None:
    """What the browser does: a custom comm message from the view, through ipywidgets' own dispatch."""
    panel._handle_msg({"content": {"data": {"method": "custom", "content": msg}}, "buffers": []})


def wait_idle(panel: ChatPanel, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    time.sleep(0.05)
    while panel.busy and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not panel.busy, "the request did not finish"


def test_the_bundle_and_synced_traits():
    bundle = (STATIC / "widget.js").read_text()
    assert str(ChatPanel._esm) == bundle and "export" in bundle and "insert" in bundle  # anywidget reads the file
    assert str(ChatPanel._css) == (STATIC / "widget.css").read_text()
    for name in ("messages", "progress", "streaming_text", "busy", "models", "selected_model", "sessions"):
        assert ChatPanel.class_traits()[name].metadata.get("sync") is True


def test_component_request_shows_progress_then_a_card(panel, llm):
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
    seen: list[dict] = []
    panel.observe(lambda change: seen.append(change["new"]), "progress")
    view(panel, {"type": "send", "text": "a component that uppercases text"})
    assert panel.busy
    wait_idle(panel)
    current = [p["current"] for p in seen if p.get("current")]
    assert ("validating", 2, 3) in [(c["step"], c["attempt"], c["max_attempts"]) for c in current]
    failed = next(c for c in current if c["step"] == "validation_failed")
    assert failed["error"]
    user, card = panel.messages
    assert user == {**user, "role": "user", "text": "a component that uppercases text"}
    assert card["kind"] == "component" and card["validated"] and card["class_name"] == "UppercaseComponent"
    assert card["attempts"] == 2 and card["code"] == GOOD and "<span" in card["code_html"]
    assert [o["name"] for o in card["outputs"]] == ["output"] and card["inputs"][0]["name"] == "input_text"
    assert panel.progress == {} and panel.streaming_text == ""


def test_failure_card_and_try_again(panel, llm):
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(WRONG_IMPORT), fenced(WRONG_IMPORT))
    view(panel, {"type": "send", "text": "uppercase component"})
    wait_idle(panel)
    card = panel.messages[-1]
    assert card["kind"] == "failure" and not card["validated"] and card["code"] == WRONG_IMPORT and card["error"]
    llm.queue(intent("generate_component"), fenced(GOOD))
    view(panel, {"type": "retry", "id": card["id"]})
    wait_idle(panel)
    assert panel.messages[-2]["text"] == "uppercase component" and panel.messages[-1]["kind"] == "component"


def test_token_stream_is_coalesced_and_the_full_text_arrives_at_the_end(panel, llm):
    answer = "".join(f"w{i} " for i in range(5000))
    llm.queue(intent("question"), Reply(answer, chunk=1))
    syncs: list[str] = []
    panel.observe(lambda change: syncs.append(change["new"]), "streaming_text")
    t0 = time.monotonic()
    view(panel, {"type": "send", "text": "Explain Langflow"})
    wait_idle(panel, 60)
    elapsed = time.monotonic() - t0
    updates = [s for s in syncs if s]
    assert len(updates) <= elapsed / FLUSH_INTERVAL + 3  # at most 20 a second
    assert len(updates) < len(answer) / 10  # far fewer than the tokens
    assert panel.messages[-1]["text"] == answer  # the full text, once, at the end


def test_answers_are_markdown_without_raw_html(panel, llm):
    llm.queue(intent("question"), "**Bold** and <script>alert(1)</script>\n\n```python\nx = 1\n```")
    view(panel, {"type": "send", "text": "What is a Message?"})
    wait_idle(panel)
    html = panel.messages[-1]["html"]
    assert "<strong>Bold</strong>" in html and "<script>" not in html and "&lt;script&gt;" in html
    assert "<span" in html  # highlighted code


def test_stop_cancels_and_closes_the_provider_stream(panel, llm):
    llm.queue(intent("question"), Reply("word " * 500, chunk=5, delay=0.02))
    view(panel, {"type": "send", "text": "Explain Langflow"})
    deadline = time.monotonic() + 10
    while not panel.streaming_text and time.monotonic() < deadline:
        time.sleep(0.02)
    view(panel, {"type": "stop"})
    wait_idle(panel)
    assert panel.messages[-1]["kind"] == "cancelled" and panel.messages[-1]["text"].startswith("word")
    deadline = time.monotonic() + 5
    while not llm.requests[-1].disconnected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm.requests[-1].disconnected


def test_model_selector_lists_configured_models_and_remembers_the_choice(panel, tmp_path, monkeypatch):
    values = [m["value"] for m in panel.models]
    assert values and all(v.startswith("openai:") for v in values)  # anthropic is not configured
    assert panel.selected_model == "openai:gpt-4o"
    view(panel, {"type": "select_model", "value": "openai:gpt-4.1"})
    again = ChatPanel(data_dir=tmp_path / "panel")
    assert again.selected_model == "openai:gpt-4.1"
    view(again, {"type": "select_model", "value": "anthropic:claude-opus-4-1"})
    assert again.selected_model == "openai:gpt-4.1" and "Unknown model" in again.notice


def test_sessions_new_switch_delete_and_restore_in_flight_as_cancelled(panel, llm):
    llm.queue(intent("question"), "First answer.")
    view(panel, {"type": "send", "text": "First question"})
    wait_idle(panel)
    first = panel.session_id
    assert [s["id"] for s in panel.sessions] == [first]
    view(panel, {"type": "new_session"})
    assert panel.messages == [] and panel.session_id != first
    llm.queue(intent("question"), "Second answer.")
    view(panel, {"type": "send", "text": "Second question"})
    wait_idle(panel)
    assert len(panel.sessions) == 2
    view(panel, {"type": "switch_session", "id": first})
    assert [m.get("text") for m in panel.messages] == ["First question", "First answer."]
    # A request that never got its answer (kernel died mid-stream) comes back as cancelled.
    from lfassist_jupyter.core.session import Turn

    store = panel.workspace.store
    session = store.load(first)
    session.add(Turn("user", "Unanswered"), window=6)
    store.save(session)
    view(panel, {"type": "switch_session", "id": first})
    assert panel.messages[-1]["kind"] == "cancelled"
    view(panel, {"type": "delete_session", "id": first})
    assert first not in [s["id"] for s in panel.sessions] and panel.session_id != first


def test_insert_uses_jupyterlab_commands_or_says_it_copied(panel, llm):
    llm.queue(intent("generate_component"), fenced(GOOD))
    view(panel, {"type": "send", "text": "uppercase component"})
    wait_idle(panel)
    card = panel.messages[-1]
    view(panel, {"type": "insert", "id": card["id"]})
    assert "copied to the clipboard" in panel.notice  # no JupyterLab front end here

    executed = []

    class Commands:
        def execute(self, command, args=None):
            executed.append((command, args))

    panel._lab = type("Lab", (), {"commands": Commands()})()
    panel.can_insert = True
    view(panel, {"type": "insert", "id": card["id"]})
    assert executed == [("notebook:insert-cell-below", None), ("notebook:replace-selection", {"text": GOOD})]
    assert "Inserted UppercaseComponent" in panel.notice


def test_register_with_langflow_from_the_card(llm, monkeypatch, sandbox, tmp_path):
    from lfassist_jupyter import LangflowClient

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    posted = []

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/custom_component":
            return httpx.Response(200, json={"data": {"display_name": "Uppercase", "outputs": []}, "type": "Uppercase"})
        if request.method == "GET":
            return httpx.Response(200, json=[])
        posted.append(json.loads(request.content))
        return httpx.Response(201, json={"id": "abc-123", "name": "Uppercase"})

    lf_key = "lf-secret-key-0123456789"
    client = LangflowClient(url="http://langflow.test", api_key=lf_key, transport=httpx.MockTransport(server))
    client.version = "1.13.0"
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "p", local_validator=sandbox, langflow=client))
    assert panel.langflow_connected
    llm.queue(intent("generate_component"), fenced(GOOD))
    view(panel, {"type": "send", "text": "uppercase component"})
    wait_idle(panel)
    view(panel, {"type": "register", "id": panel.messages[-1]["id"]})
    deadline = time.monotonic() + 10
    while "Registered" not in panel.notice and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Registered 'Uppercase'" in panel.notice and posted[0]["is_component"] is True
    assert lf_key not in json.dumps(panel.get_state(), default=str)


def test_no_secret_in_synced_state_after_requests(panel, llm):
    llm.queue(intent("generate_component"), fenced(GOOD), intent("question"), f"Your key is not {KEY[:6]}.")
    view(panel, {"type": "send", "text": "uppercase component"})
    wait_idle(panel)
    view(panel, {"type": "send", "text": "what is my key?"})
    wait_idle(panel)
    state = json.dumps(panel.get_state(), default=str)
    assert KEY not in state and "OPENAI_API_KEY" not in state


def test_bad_requests_from_the_view_are_notices(panel):
    view(panel, {"type": "send", "text": "   "})
    assert "Type a request" in panel.notice and panel.messages == []
    view(panel, {"type": "frobnicate"})
    assert "Unknown request" in panel.notice


def test_no_provider_configured(monkeypatch, tmp_path):
    panel = ChatPanel(data_dir=tmp_path)
    assert panel.models == [] and panel.selected_model == ""
    view(panel, {"type": "send", "text": "uppercase component"})
    assert panel.messages[-1]["kind"] == "error" and "OPENAI_API_KEY" in panel.messages[-1]["text"]


def test_assist_panel_magic_returns_the_panel(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "lfassist_jupyter")
        assert isinstance(ip.run_line_magic("assist", "panel"), ChatPanel)
    finally:
        ip.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()


def test_stop_pressed_at_once_is_not_lost(panel, llm):
    llm.queue(intent("question"), Reply("word " * 200, chunk=5, delay=0.02))
    view(panel, {"type": "send", "text": "Explain Langflow"})
    view(panel, {"type": "stop"})  # before the engine has even classified the request
    wait_idle(panel)
    assert panel.messages[-1]["kind"] == "cancelled"
    assert not panel.busy


class _FakeLangflow:
    """Just enough of Langflow's HTTP API for `%assist connect` and server validation, on a real socket."""

    def __init__(self) -> None:
        import http.server
        import threading

        built: list[str] = []
        self.built = built

        class Handler(http.server.BaseHTTPRequestHandler):
            def _json(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._json(200, {"status": "ok"})
                elif self.path == "/api/v1/version":
                    self._json(200, {"version": "1.13.0"})
                else:
                    self._json(200, [])

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/api/v1/custom_component":
                    built.append(body["code"])
                    self._json(200, {"data": {"display_name": "Uppercase", "outputs": []}, "type": "Uppercase"})
                else:  # saving the component
                    self._json(201, {"id": "abc-123", "name": body["name"]})

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_panel_opened_after_connect_validates_on_the_server_and_uses_the_configured_models(llm, monkeypatch):
    """The magic and the panel share one workspace: `%assist panel` after `%assist connect` gets
    the server's build check and `%config AssistMagics.intent_model`, exactly like %%assist."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    langflow = _FakeLangflow()
    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "lfassist_jupyter")
        ip.run_line_magic("config", 'AssistMagics.intent_model = "gpt-4.1-mini"')
        ip.run_line_magic("assist", f"connect {langflow.url} --api-key lf-key-0123456789")
        panel = ip.run_line_magic("assist", "panel")
        assert panel.langflow_connected
        llm.queue(intent("generate_component"), fenced(GOOD))
        view(panel, {"type": "send", "text": "a component that uppercases text"})
        wait_idle(panel, 60)
        assert panel.messages[-1]["kind"] == "component" and panel.messages[-1]["validated"]
        assert langflow.built == [GOOD]  # the server built the component before it was shown as validated
        assert [r.body["model"] for r in llm.requests] == ["gpt-4.1-mini", "gpt-4o"]
        # The magic registers through the same connection, and the result remembers it.
        llm.queue(intent("generate_component"), fenced(GOOD))
        result = ip.run_cell_magic("assist", "--register --quiet --no-insert", "uppercase component")
        assert result.validated and result.registered is not None and result.registered.name == "Uppercase"
        assert "server" in result.report.phases_run
    finally:
        ip.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
        langflow.close()


# -- the model in use, the cost of a turn, model fallback -----------------------------------------


def test_the_model_selector_shows_the_model_actually_in_use(llm, monkeypatch, sandbox, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    workspace = Workspace(data_dir=tmp_path / "p", local_validator=sandbox)
    panel = ChatPanel(provider="openai", model="fake-gpt", workspace=workspace)
    label = {m["value"]: m["label"] for m in panel.models}[panel.selected_model]
    assert panel.selected_model == "openai:fake-gpt" and label == "openai · fake-gpt"  # not "openai · GPT-4o"
    llm.queue(intent("question"), "An answer.")
    view(panel, {"type": "send", "text": "What is a component?"})
    wait_idle(panel)
    assert llm.requests[-1].body["model"] == "fake-gpt"  # the model shown is the model used
    # A catalogue model keeps its display name; %config's model is the default when nothing was picked.
    assert ChatPanel(model="gpt-4.1", workspace=workspace).selected_model == "openai:gpt-4.1"
    workspace.config.model = "gpt-4.1-mini"
    assert ChatPanel(workspace=workspace).selected_model == "openai:gpt-4.1-mini"


def test_the_panel_reads_the_settings_from_the_environment(llm, monkeypatch, sandbox, tmp_path):
    """``LFASSIST_MAX_RETRIES=1``: the panel's requests make one attempt, as ``%%assist`` and the evals do."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LFASSIST_MAX_RETRIES", "1")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path / "panel", local_validator=sandbox))
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
    view(panel, {"type": "send", "text": "uppercase component"})
    wait_idle(panel)
    assert panel.messages[-1]["kind"] == "failure" and len(llm.requests) == 2  # classification + one attempt


def test_each_answer_shows_its_model_calls_tokens_and_seconds(panel, llm):
    llm.queue(intent("generate_component"), Reply(fenced(GOOD), chunk=100))
    view(panel, {"type": "send", "text": "a component that uppercases text"})
    wait_idle(panel)
    card = panel.messages[-1]
    from lfassist_jupyter.metrics import METRICS

    record = METRICS.records[-1]  # the engine's metrics record of this request
    assert record.model_calls == 2 and record.prompt_tokens == 22  # the fake server reports 11 per call
    tokens = record.prompt_tokens + record.completion_tokens
    assert card["usage"].startswith(f"2 model calls · {tokens} tokens (22 in, {record.completion_tokens} out) · ")
    assert card["usage"].endswith(" s · gpt-4o")
    llm.queue(intent("question"), "Short answer.")
    view(panel, {"type": "send", "text": "What is a Message?"})
    wait_idle(panel)
    assert panel.messages[-1]["usage"].startswith("2 model calls · ")  # per turn, not a running total


def test_a_retired_model_falls_back_to_the_next_one_and_the_card_says_so(panel, llm):
    from _support.fakellm import Status

    llm.queue(
        intent("generate_component"),
        Status(404, "The model `gpt-4o` does not exist or you do not have access to it.", error_type="model_not_found"),
        fenced(GOOD),
    )
    view(panel, {"type": "send", "text": "a component that uppercases text"})
    wait_idle(panel)
    card = panel.messages[-1]
    assert card["kind"] == "component" and card["validated"] and card["attempts"] == 1  # no attempt spent
    assert [r.body["model"] for r in llm.requests] == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini"]
    (note,) = card["notes"]
    assert "'gpt-4o'" in note and "'gpt-4o-mini'" in note and "%assist models" in note
    assert card["usage"].endswith(" s · gpt-4o-mini")
    assert panel.selected_model == "openai:gpt-4o-mini"  # the selector shows the model now in use
    llm.queue(intent("question"), "Fine.")
    view(panel, {"type": "send", "text": "What is a Message?"})
    wait_idle(panel)
    assert "notes" not in panel.messages[-1]  # said once, on the turn where it happened


def test_model_fallback_through_the_assistant(make_assistant, llm):
    from _support.fakellm import Status

    assistant = make_assistant("openai")
    llm.queue(intent("generate_component"), Status(404, "retired"), fenced(GOOD))
    result = assistant.run("a component that uppercases text")
    assert result.validated and result.attempts == 1
    assert [r.body["model"] for r in llm.requests] == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini"]
    assert assistant.provider.substitutions == {"gpt-4o": "gpt-4o-mini"}
    assert all(r.path.endswith("/chat/completions") for r in llm.requests)  # never another provider
    # What %%assist shows (the result's HTML and text) says which model answered, as the panel does.
    assert result.usage.model == "gpt-4o-mini"
    for shown in (html.unescape(html_of(result)), text_of(result)):
        assert "'gpt-4o'" in shown and "'gpt-4o-mini'" in shown and "%assist models" in shown
    llm.queue(intent("question"), "Fine.")
    later = assistant.run("What is a Message?")
    assert later.usage.fallbacks == [] and "%assist models" not in text_of(later)  # said once
    # A model the provider does not list is the user's choice: an error, not a silent substitute.
    assistant = make_assistant("openai", model="my-finetune")
    llm.queue(intent("generate_component"), Status(404, "no such model"))
    result = assistant.run("a component that uppercases text")
    assert result.status != "complete" or not result.validated
    assert "my-finetune" in (result.error or "") and llm.requests[-1].body["model"] == "my-finetune"


# -- docking in JupyterLab's shell, and the inline fallback ---------------------------------------


class _FakeCommands:
    def __init__(self) -> None:
        self.executed: list[tuple[str, dict | None]] = []
        self.sent: list[dict] = []
        self._execute_callbacks: dict = {}

    def execute(self, command, args=None):
        self.executed.append((command, args))

    def send(self, msg):
        self.sent.append(msg)


class _FakeShell:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, msg):
        self.sent.append(msg)


class _FakeLab:
    """ipylab's JupyterFrontEnd as the kernel sees it: messages out, nothing rendered."""

    def __init__(self) -> None:
        self.commands = _FakeCommands()
        self.shell = _FakeShell()


@pytest.fixture
def dock(monkeypatch):
    """A kernel whose front end is JupyterLab (a fake ipylab front end that has answered)."""
    from lfassist_jupyter.ui import dock as module
    from lfassist_jupyter.ui import lab

    front = lab._Lab()
    front.lab, front.ready = _FakeLab(), True
    monkeypatch.setattr(lab, "_state", front)
    monkeypatch.setattr(lab, "in_kernel", lambda: True)
    monkeypatch.setattr(module, "_state", module._Dock())
    monkeypatch.setattr(module, "in_kernel", lambda: True)
    return module


def test_assist_panel_docks_once_per_kernel_and_focuses_it_after(ip, dock):
    from lfassist_jupyter.ui.dock_note import DockNote

    note = ip.run_line_magic("assist", "panel")
    assert isinstance(note, DockNote) and "right sidebar" in note.text
    lab = dock.frontend()
    (added,) = lab.shell.sent
    assert added["func"] == "add" and added["payload"]["area"] == "right"
    assert added["payload"]["id"] == dock.dock_id() and dock.dock_id().startswith("lfassist-assistant-")
    panel = dock._state.panel
    assert panel.docked and added["payload"]["serializedWidget"] == f"IPY_MODEL_{dock._state.host.model_id}"
    dock._on_shell_widgets({"new": [{"id": dock.dock_id()}]})  # the front end reports it added
    assert lab.commands.executed == [("tabsmenu:activate-by-id", {"id": dock.dock_id()})]
    ip.run_line_magic("assist", "panel --main")  # open already: focused, never a second one
    assert len(lab.shell.sent) == 1 and len(lab.commands.executed) == 2
    # The output's view reports its notebook: Insert targets it whatever has the focus.
    note.notebook_id = "notebook-panel-7"
    assert panel.notebook_id == "notebook-panel-7"
    panel.messages = [{"id": "c1", "role": "assistant", "kind": "component", "code": GOOD, "class_name": "Up"}]
    panel.can_insert = True
    view(panel, {"type": "insert", "id": "c1"})
    assert lab.commands.executed[-2:] == [
        ("notebook:insert-cell-below", {"widgetId": "notebook-panel-7"}),
        ("notebook:replace-selection", {"widgetId": "notebook-panel-7", "text": GOOD}),
    ]
    # Closed by the user, then reopened: the same panel (and conversation) is added again.
    dock._on_shell_widgets({"new": []})
    ip.run_line_magic("assist", "panel")
    assert len(lab.shell.sent) == 2 and dock._state.panel is panel and panel.messages[0]["id"] == "c1"


def test_the_palette_command_is_registered_at_load_and_opens_the_panel(ip, dock):
    dock.register_command()
    lab = dock.frontend()
    (command,) = [m for m in lab.commands.sent if m["func"] == "addCommand"]
    assert command["payload"]["label"] == "Langflow Assistant: Open" and command["payload"]["id"] == dock.COMMAND_ID
    lab.commands._execute_callbacks[dock.COMMAND_ID]()  # what the front end's palette triggers
    assert [m["func"] for m in lab.shell.sent] == ["add"]


def test_without_jupyterlab_shell_the_panel_opens_inline_and_says_why_once(ip, monkeypatch):
    """A kernel whose front end never answers ipylab (Notebook 7 without it, VS Code, Colab): the
    cell shows the inline panel with the reason, once the cell is done and the wait is over."""
    from lfassist_jupyter.ui import dock, lab

    monkeypatch.setattr(lab, "_state", lab._Lab())
    monkeypatch.setattr(lab, "in_kernel", lambda: True)
    monkeypatch.setattr(dock, "_state", dock._Dock())
    monkeypatch.setattr(dock, "in_kernel", lambda: True)
    monkeypatch.setattr(dock, "READY_WAIT", 0.05)
    box = ip.run_line_magic("assist", "panel")  # a real ipylab JupyterFrontEnd, which nobody answers
    assert dock.frontend() is not None and not dock.is_ready()
    assert "Opening" in box.children[0].text
    ip.events.trigger("post_run_cell", None)  # the cell is done: now the answer could have come
    deadline = time.monotonic() + 5
    while len(box.children) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    note, panel = box.children
    assert isinstance(panel, ChatPanel) and not panel.docked and note.text == dock.NO_SHELL
    assert "ipylab" in note.text and "VS Code" in note.text
    again = ip.run_line_magic("assist", "panel")
    assert again is panel  # inline at once, the same conversation, and the reason is not repeated


def test_assist_panel_in_the_cell_that_loads_the_extension_docks_once_the_front_end_answers(ip, dock):
    """ipylab's answer can only arrive after the cell: until then the cell shows a placeholder."""
    from lfassist_jupyter.ui import lab

    lab._state.ready = False
    box = ip.run_line_magic("assist", "panel")
    (note,) = box.children
    assert "Opening" in note.text and dock.frontend().shell.sent == []
    assert box.panel is dock._state.panel  # scripts can reach the panel at once
    lab._on_ready()  # "lab_ready" from ipylab's front end
    assert [m["payload"]["area"] for m in dock.frontend().shell.sent] == ["right"]
    assert "right sidebar" in note.text and box.children == (note,)  # docked: no inline panel
