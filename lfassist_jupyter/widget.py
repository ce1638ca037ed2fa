"""``ChatPanel``: the Langflow Assistant's chat panel as an anywidget, driving the same engine.

State lives in traitlets (the view can always be rebuilt from them); the view sends small
request messages (``send``, ``stop``, ``insert``, ...).  Requests run on the package's
background event loop, not as a blocking cell, so Stop and the buttons work while a model
streams and other cells can run.  Token streams are coalesced: ``streaming_text`` is synced
at most every 50 ms and the full text is sent once at the end, so a fast model never floods
the comm or trips Jupyter's IOPub rate limit.

Inserting a cell needs the front end: a button handler runs after the panel's cell has
finished, when ``set_next_input`` no longer shows anything.  We drive JupyterLab's own
commands through ipylab (``notebook:insert-cell-below`` + ``notebook:replace-selection``);
where ipylab's front end is absent (Notebook 7 without it, VS Code) the view copies the
code to the clipboard and says so.

No secret ever enters a trait: providers are listed by name and model only, and the
Langflow key stays inside the ``LangflowClient``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from lfassist_jupyter._display import STEP_LABELS, highlight

STATIC = Path(__file__).parent / "static"
FLUSH_INTERVAL = 0.05  # seconds between streaming_text syncs (20 Hz)
_PROGRESS_STEPS = ("generating_component", "generation_complete", "extracting_code", "validating", "validated")


def render_markdown(text: str) -> str:
    """Markdown to HTML with raw HTML disabled (model output is untrusted) and highlighted code."""
    from markdown_it import MarkdownIt

    def fence(code: str, lang: str, _attrs: str) -> str:
        return highlight(code) if lang.strip().lower() in ("", "python", "py") else ""

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": fence})
    return md.render(text)


def _model_choices() -> tuple[list[dict[str, str]], str]:
    from lfassist_jupyter.providers import check_config

    cfg = check_config()
    choices = []
    for p in cfg["providers"]:
        if p["name"] in cfg["configured_providers"]:
            for m in p["models"]:
                choices.append({"value": f"{p['name']}:{m['name']}", "label": f"{p['name']} · {m['display_name']}"})
    default = f"{cfg['default_provider']}:{cfg['default_model']}" if cfg["configured"] else ""
    if default and default not in {c["value"] for c in choices}:
        provider, model = default.split(":", 1)
        choices.insert(0, {"value": default, "label": f"{provider} · {model}"})
    return choices, default


class ChatPanel(anywidget.AnyWidget):
    """The Langflow Assistant chat panel.  ``ChatPanel()`` in a cell, or ``%assist panel``.

    Args:
        assistant_factory: builds the ``Assistant`` for a (provider, model, session_id);
            tests and the magic use it to share configuration.
        langflow: a connected ``LangflowClient`` for **Register with Langflow**.
        max_retries: total validation attempts for component requests.
    """

    _esm = STATIC / "widget.js"
    _css = STATIC / "widget.css"

    messages = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The transcript: user and assistant messages, component and failure cards."""
    progress = traitlets.Dict().tag(sync=True)
    """The request in flight: current step, attempt counter, steps done."""
    streaming_text = traitlets.Unicode("").tag(sync=True)
    """The answer so far, synced at most every 50 ms."""
    busy = traitlets.Bool(False).tag(sync=True)
    models = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Configured providers' models only: {value: "provider:model", label}."""
    selected_model = traitlets.Unicode("").tag(sync=True)
    sessions = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The last 10 sessions: {id, title, updated, turns}."""
    session_id = traitlets.Unicode("").tag(sync=True)
    langflow_connected = traitlets.Bool(False).tag(sync=True)
    can_insert = traitlets.Bool(False).tag(sync=True)
    """Whether the front end can insert cells (ipylab in JupyterLab); else copy instead."""
    notice = traitlets.Unicode("").tag(sync=True)

    def __init__(self, *, assistant_factory: Any = None, langflow: Any = None, max_retries: int = 3,
                 data_dir: str | Path | None = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        from lfassist_jupyter.core.session import SessionStore, default_data_dir, new_session_id

        self._factory = assistant_factory
        self._max_retries = max_retries
        self._data_dir = Path(data_dir) if data_dir else default_data_dir()
        self._store = SessionStore(self._data_dir / "sessions")
        self._assistant: Any = None
        self._task: asyncio.Future[Any] | None = None
        self.langflow = langflow
        self.langflow_connected = bool(langflow is not None and langflow.connected)
        self.models, default = _model_choices()
        saved = self._prefs().get("selected_model")
        self.selected_model = saved if saved in {m["value"] for m in self.models} else default
        self.session_id = new_session_id()
        self._refresh_sessions()
        self._lab: Any = None
        self._connect_lab()
        self.on_msg(self._on_view_msg)

    # -- preferences and sessions -------------------------------------------------------

    def _prefs_path(self) -> Path:
        return self._data_dir / "panel.json"

    def _prefs(self) -> dict[str, Any]:
        try:
            return json.loads(self._prefs_path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _save_prefs(self) -> None:
        try:
            self._prefs_path().parent.mkdir(parents=True, exist_ok=True)
            self._prefs_path().write_text(json.dumps({"selected_model": self.selected_model}), encoding="utf-8")
        except OSError:
            pass

    def _refresh_sessions(self) -> None:
        self.sessions = self._store.list()[:10]

    def _connect_lab(self) -> None:
        try:
            from ipylab import JupyterFrontEnd
        except ImportError:
            return
        try:
            self._lab = JupyterFrontEnd()
            self._lab.on_ready(lambda: setattr(self, "can_insert", True))
        except Exception:
            self._lab = None

    def _get_assistant(self) -> Any:
        from lfassist_jupyter.core.engine import Assistant

        provider, _, model = self.selected_model.partition(":")
        key = (self.selected_model, self.session_id)
        if self._assistant is None or getattr(self._assistant, "_panel_key", None) != key:
            factory = self._factory or (lambda **kw: Assistant(**kw))
            self._assistant = factory(provider=provider or None, model=model or None, session_id=self.session_id,
                                      max_retries=self._max_retries, session_store=self._store)  # fmt: skip
            self._assistant._panel_key = key
        return self._assistant

    # -- messages from the view ------------------------------------------------------------

    def _on_view_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any = None) -> None:
        """Requests from the view (registered with ``on_msg``; ipywidgets' ``_handle_custom_msg``
        dispatches them here)."""
        kind = content.get("type")
        handler = {
            "send": lambda: self.send_prompt(str(content.get("text", ""))),
            "stop": self.stop,
            "new_session": self.new_session,
            "switch_session": lambda: self.switch_session(str(content.get("id", ""))),
            "delete_session": lambda: self.delete_session(str(content.get("id", ""))),
            "select_model": lambda: self.select_model(str(content.get("value", ""))),
            "insert": lambda: self.insert(str(content.get("id", ""))),
            "register": lambda: self.register(str(content.get("id", ""))),
            "retry": lambda: self.retry(str(content.get("id", ""))),
        }.get(kind)
        if handler is None:
            self.notice = f"Unknown request from the panel: {kind!r}"
            return
        handler()

    def _message(self, message_id: str) -> dict[str, Any] | None:
        return next((m for m in self.messages if m.get("id") == message_id), None)

    def _append(self, message: dict[str, Any]) -> dict[str, Any]:
        message.setdefault("id", uuid.uuid4().hex[:10])
        self.messages = [*self.messages, message]
        return message

    def send_prompt(self, text: str) -> None:
        """What the Send button does: run one request in the background."""
        if self.busy:
            self.notice = "A request is already running; press Stop first."
            return
        if not text.strip():
            self.notice = "Type a request first."
            return
        if not self.selected_model:
            from lfassist_jupyter.providers._registry import NO_PROVIDER_MESSAGE

            self._append({"role": "user", "kind": "text", "text": text})
            self._append({"role": "assistant", "kind": "error", "text": NO_PROVIDER_MESSAGE})
            return
        from lfassist_jupyter._runtime import get_loop

        self._append({"role": "user", "kind": "text", "text": text})
        self.busy = True
        self.notice = ""
        self.progress = {"steps": [], "current": None}
        self.streaming_text = ""
        self._task = asyncio.run_coroutine_threadsafe(self._run(text), get_loop())

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the request in flight is done -- for scripts and notebooks that drive the
        panel from code; the view never needs it."""
        task = self._task
        if task is not None:
            task.result(timeout)

    def stop(self) -> None:
        """What the Stop button does.  Before the engine has a request in flight (the first
        milliseconds), cancel the panel's own task instead, so an early Stop is never lost."""
        if not self.busy:
            return
        if (self._assistant is None or not self._assistant.cancel()) and self._task is not None:
            self._task.cancel()

    async def _run(self, text: str) -> None:
        tokens: list[str] = []
        last_flush = 0.0
        steps: list[dict[str, Any]] = []
        try:
            assistant = self._get_assistant()
            async for event in assistant.stream(text):
                if event.event == "token":
                    tokens.append(event.chunk)
                    now = time.monotonic()
                    if now - last_flush >= FLUSH_INTERVAL:
                        self.streaming_text = "".join(tokens)
                        last_flush = now
                elif event.event == "progress":
                    for s in steps:
                        s["done"] = True
                    label = STEP_LABELS.get(event.step, event.step)
                    steps.append({"step": event.step, "label": label, "attempt": event.attempt,
                                  "max_attempts": event.max_attempts, "done": event.step == "validated",
                                  "error": event.error})  # fmt: skip
                    self.progress = {"steps": [dict(s) for s in steps], "current": steps[-1]}
                else:
                    self._finish(event, "".join(tokens), steps, assistant)
        except asyncio.CancelledError:  # stopped before the engine took the request
            self._append({"role": "assistant", "kind": "cancelled", "text": "", "note": "Request cancelled"})
        except Exception as exc:  # the panel must always leave the busy state
            self._append({"role": "assistant", "kind": "error", "text": f"Unexpected error: {exc}"})
        finally:
            with self.hold_sync():
                self.busy = False
                self.streaming_text = ""
                self.progress = {}
            self._refresh_sessions()

    def _finish(self, event: Any, text: str, steps: list[dict[str, Any]], assistant: Any) -> None:
        if event.event == "cancelled":
            self._append({"role": "assistant", "kind": "cancelled", "text": text, "html": render_markdown(text) if
                          text else "", "note": event.message or "Request cancelled"})  # fmt: skip
            return
        if event.event == "error":
            self._append({"role": "assistant", "kind": "error", "text": event.message})
            return
        data = event.data
        if data.intent == "generate_component" and data.component_code:
            report = assistant.last_report
            self._append({
                "role": "assistant", "kind": "component" if data.validated else "failure",
                "class_name": data.class_name, "validated": data.validated, "attempts": data.validation_attempts,
                "code": data.component_code, "code_html": highlight(data.component_code),
                "error": data.validation_error or "", "steps": [s["label"] for s in steps],
                "inputs": [i.model_dump() for i in report.inputs] if report else [],
                "outputs": [o.model_dump() for o in report.outputs] if report else [],
            })  # fmt: skip
        else:
            self._append(
                {"role": "assistant", "kind": "text", "text": data.result, "html": render_markdown(data.result)}
            )

    # -- buttons ----------------------------------------------------------------------------

    def insert(self, message_id: str) -> None:
        """**Insert into notebook**: a new cell below the active one, through JupyterLab's commands."""
        message = self._message(message_id)
        if not message or not message.get("code"):
            self.notice = "Nothing to insert."
            return
        if not self.can_insert or self._lab is None:
            # The view copies the code itself when can_insert is False; this is the fallback note.
            self.notice = "This front end cannot insert cells: the code was copied to the clipboard instead."
            return
        self._lab.commands.execute("notebook:insert-cell-below")
        self._lab.commands.execute("notebook:replace-selection", {"text": message["code"]})
        self.notice = f"Inserted {message.get('class_name') or 'the code'} into a new cell."

    def register(self, message_id: str) -> None:
        """**Register with Langflow**, in the background; the result is a notice."""
        message = self._message(message_id)
        if not message or not message.get("code"):
            self.notice = "Nothing to register."
            return
        if self.langflow is None:
            self.notice = "Not connected to Langflow: run `%assist connect URL` and reopen the panel."
            return
        from lfassist_jupyter._runtime import get_loop

        async def go() -> None:
            from lfassist_jupyter.errors import LangflowError

            try:
                registered = await self.langflow.register(message["code"])
                self.notice = str(registered)
            except LangflowError as exc:
                self.notice = f"Not registered: {exc}"

        self.notice = "Registering with Langflow..."
        asyncio.run_coroutine_threadsafe(go(), get_loop())

    def retry(self, message_id: str) -> None:
        """**Try again**: resend the request that led to this message."""
        index = next((i for i, m in enumerate(self.messages) if m.get("id") == message_id), None)
        if index is None:
            return
        prompt = next((m["text"] for m in reversed(self.messages[:index]) if m.get("role") == "user"), None)
        if prompt:
            self.send_prompt(prompt)

    def select_model(self, value: str) -> None:
        if value not in {m["value"] for m in self.models}:
            self.notice = f"Unknown model {value!r}."
            return
        self.selected_model = value
        self._save_prefs()

    def new_session(self) -> None:
        from lfassist_jupyter.core.session import new_session_id

        if self.busy:
            self.stop()
        self.session_id = new_session_id()
        self.messages = []
        self._refresh_sessions()

    def switch_session(self, session_id: str) -> None:
        """Show a stored session; an unanswered last request is shown as cancelled."""
        if self.busy:
            self.notice = "Stop the running request before switching sessions."
            return
        session = self._store.load(session_id)
        messages: list[dict[str, Any]] = []
        for turn in session.turns:
            if turn.role == "user":
                messages.append({"role": "user", "kind": "text", "text": turn.original or turn.content})
            elif turn.kind == "component":
                messages.append({"role": "assistant", "kind": "component" if turn.validated else "failure",
                                 "class_name": turn.class_name, "validated": bool(turn.validated), "code": turn.content,
                                 "code_html": highlight(turn.content), "attempts": None, "error": "",
                                 "inputs": [], "outputs": []})  # fmt: skip
            elif turn.kind == "cancelled":
                messages.append({"role": "assistant", "kind": "cancelled", "text": "", "note": "Request cancelled"})
            else:
                messages.append({"role": "assistant", "kind": "text", "text": turn.content,
                                 "html": render_markdown(turn.content)})  # fmt: skip
        if session.turns and session.turns[-1].role == "user":
            messages.append({"role": "assistant", "kind": "cancelled", "text": "", "note": "Request cancelled"})
        for m in messages:
            m["id"] = uuid.uuid4().hex[:10]
        self.session_id = session_id
        self.messages = messages

    def delete_session(self, session_id: str) -> None:
        self._store.delete(session_id)
        if session_id == self.session_id:
            self.new_session()
        self._refresh_sessions()
