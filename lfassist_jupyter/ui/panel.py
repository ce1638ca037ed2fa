"""``ChatPanel``: the Langflow Assistant's chat panel as an anywidget, driving the same engine.

State lives in traitlets (the view can always be rebuilt from them); the view sends small
request messages (``send``, ``stop``, ``insert``, ...).  Requests run on the package's
background event loop, not as a blocking cell, so Stop and the buttons work while a model
streams and other cells can run.  Token streams are coalesced: ``streaming_text`` is synced
at most every 50 ms and the full text is sent once at the end, so a fast model never floods
the comm or trips Jupyter's IOPub rate limit.

Inserting a cell needs the front end: a button handler runs after the panel's cell has
finished, when ``set_next_input`` no longer shows anything.  We drive JupyterLab's own
commands through ipylab (``notebook:insert-cell-below`` + ``notebook:replace-selection``),
given the id of the kernel's own notebook (``notebook_id``, reported by a view rendered in
it) so a panel docked in the sidebar (``ui/dock.py``) writes there, whatever has the focus;
where ipylab's front end is absent (Notebook 7 without it, VS Code), or that notebook was
closed, the view copies the code to the clipboard and says so.

Each answer carries its request's cost (``usage``: model calls, tokens, seconds, from the
metrics record) and ``notes`` such as a model fallback the provider made during the request.

Configuration, validators, the Langflow connection, sessions and registration come from the
kernel's ``Workspace`` (shared with the magic); every message the view receives is built by
``ui/messages.py``, for live results and restored sessions alike.

No secret ever enters a trait: providers are listed by name and model only, and the
Langflow key stays inside the ``LangflowClient``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets
from pydantic import BaseModel, ConfigDict, ValidationError

from lfassist_jupyter.errors import LfAssistError
from lfassist_jupyter.ui.messages import (
    PanelMessage,
    ProgressStep,
    answer_message,
    cancelled_message,
    component_message,
    error_message,
    flow_from_spec,
    flow_message,
    turn_message,
    usage_line,
    user_message,
)
from lfassist_jupyter.ui.workspace import Workspace, current_workspace

if TYPE_CHECKING:
    from lfassist_jupyter.core.assistant import Assistant
    from lfassist_jupyter.core.events import CancelledEvent, CompleteEvent, ErrorEvent

STATIC = Path(__file__).resolve().parent.parent / "static"
FLUSH_INTERVAL = 0.05  # seconds between streaming_text syncs (20 Hz)
EXPORT_DIR = "lfassist-components"
"""The extension bundle a component card's **Export** adds to, in the notebook's directory."""
MAX_PREFS_BYTES = 64_000
"""``panel.json`` holds one model name: a file past this is not ours and is set aside unread."""


class _PanelPrefs(BaseModel):
    """The schema of ``panel.json`` (strict: anything else is set aside, and the panel opens)."""

    model_config = ConfigDict(strict=True, extra="ignore")
    selected_model: str = ""


class ChatPanel(anywidget.AnyWidget):
    """The Langflow Assistant chat panel.  ``ChatPanel()`` in a cell, or ``%assist panel``.

    Args:
        provider, model: the model to start with (default: the last one picked in a panel, else
            ``%config AssistMagics.provider/model``, else the first configured provider's default);
            the selector shows it, under its own name when the catalogue does not list it.
        workspace: what the panel shares with the magic (configuration, validators, the Langflow
            connection, sessions); default: the kernel's.
        data_dir: a standalone workspace over this directory instead (scripts, tests).
        assistant_factory: with ``data_dir``, builds the assistants of that standalone workspace
            (``Workspace(assistant_factory=...)``; the benchmarks use it).
    """

    _esm = STATIC / "widget.js"
    _css = STATIC / "widget.css"

    messages = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The transcript: ``PanelMessage.to_wire()`` dicts (user and assistant messages, cards)."""
    progress = traitlets.Dict().tag(sync=True)
    """The request in flight: {"steps": [ProgressStep...], "current": ProgressStep | None}."""
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
    notebook_id = traitlets.Unicode("").tag(sync=True)
    """JupyterLab's id of the notebook this kernel runs (its NotebookPanel), reported by a view
    rendered inside it; Insert targets that notebook even when the sidebar has the focus."""
    docked = traitlets.Bool(False).tag(sync=True)
    """Shown in JupyterLab's sidebar or a main-area tab (full height) rather than in a cell."""
    real_run = traitlets.Dict().tag(sync=True)
    """The real run being set up on a flow card (``messages.RealRunPlan``): the variables it wants
    (names only: whether this session allowed them, whether the kernel has them), the hosts it may
    reach, whether it runs; empty when none. No value of a variable is ever in it."""

    def __init__(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        workspace: Workspace | None = None,
        data_dir: str | Path | None = None,
        assistant_factory: Callable[..., Assistant] | None = None,
        **kwargs: Any,
    ) -> None:
        from lfassist_jupyter.providers import check_environment

        check_environment()  # a bad LFASSIST_* variable: its one line (ConfigError), as everywhere
        super().__init__(**kwargs)
        if workspace is None and (data_dir is not None or assistant_factory is not None):
            workspace = Workspace(data_dir=data_dir, assistant_factory=assistant_factory)
        workspace = workspace or current_workspace()
        self.workspace = workspace
        self._assistant: Assistant | None = None
        self._task: Future[None] | None = None
        self.langflow_connected = workspace.connected
        choices, default = workspace.model_choices()
        self._default_choice = default
        """The selector's default: the configured model (not a choice of the user's: a request on it
        names no model, so each task keeps the model the configuration gives it)."""
        self.models = [c._asdict() for c in choices]
        saved = self._prefs().selected_model
        cfg = workspace.config
        if provider or model:
            self._use_model(self._choice(provider, model))
        elif saved in {c.value for c in choices}:
            self.selected_model = saved
        elif cfg.provider or cfg.model:
            self._use_model(self._choice(cfg.provider, cfg.model))
        else:
            self.selected_model = default
        self.session_id = workspace.new_session_id()
        self._refresh_sessions()
        self._flows: dict[str, dict[str, Any]] = {}  # flow card id -> flow JSON (kept out of the traits)
        # Real runs: per panel session, the variables the user allowed and the hosts they added
        # (asked once per session), and whether this session's plan was shown and confirmed, with
        # the hosts the confirmed plans showed: consent covers where the keys go, not only which.
        self._allowed: dict[str, set[str]] = {}
        self._extra_hosts: dict[str, list[str]] = {}
        self._confirmed: set[str] = set()
        self._shown_hosts: dict[str, set[str]] = {}
        self._real_job: Future[None] | None = None
        self._lab: Any = None
        self._connect_lab()
        self.on_msg(self._on_view_msg)

    # -- preferences and sessions -------------------------------------------------------

    def _prefs_path(self) -> Path:
        return self.workspace.data_dir / "panel.json"

    def _prefs(self) -> _PanelPrefs:
        """The saved preferences; a file that is not a small regular file holding them (a FIFO, a
        link to a device, ``[]``, a number for the model) is set aside with one warning."""
        from lfassist_jupyter.core.datadir import read_regular_file, set_aside, why

        path = self._prefs_path()
        try:
            return _PanelPrefs.model_validate_json(read_regular_file(path, MAX_PREFS_BYTES))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, ValidationError) as exc:  # a ValidationError is a ValueError too
            set_aside(path, "Panel preferences", why(exc))
        return _PanelPrefs()

    def _save_prefs(self) -> None:
        from lfassist_jupyter.core.datadir import write_atomic

        with contextlib.suppress(OSError):  # a read-only data folder: the choice lasts this panel's life
            write_atomic(self._prefs_path(), _PanelPrefs(selected_model=self.selected_model).model_dump_json())

    def _choice(self, provider: str | None, model: str | None) -> str:
        """ "provider:model" for an explicit provider and/or model, filled from the configuration
        (a server of the user's own that names no model: the model its list gives)."""
        if provider and model:
            return f"{provider.lower()}:{model}"
        found = self.workspace.configured_providers(provider=provider, model=model, ask=False)
        wanted = (provider or (found[0].name if found else "")).lower()
        chosen = next((p for p in found if p.name == wanted), None)
        model = model or (chosen.default_model if chosen else "")
        return f"{wanted}:{model}" if wanted and model else ""

    def _use_model(self, value: str) -> None:
        """Select ``value``, adding it to the selector under its own name when the catalogue lacks it:
        the selector always shows the model the next request really uses."""
        if value and value not in {m["value"] for m in self.models}:
            provider, _, model = value.partition(":")
            self.models = [{"value": value, "label": f"{provider} · {model}"}, *self.models]
        self.selected_model = value

    def _refresh_sessions(self) -> None:
        self.sessions = self.workspace.store.list()[:10]

    def _connect_lab(self) -> None:
        """The kernel's one ipylab front end (``ui/lab.py``); ``can_insert`` once it answers."""
        from lfassist_jupyter.ui.lab import frontend, when_ready

        self._lab = frontend()
        if self._lab is not None:
            when_ready(lambda: setattr(self, "can_insert", True))

    def _get_assistant(self) -> Assistant:
        provider, _, model = self.selected_model.partition(":")
        if self.selected_model == self._default_choice:
            model = ""  # the configured model: each task keeps its own (the intent model classifies)
        self._assistant = self.workspace.assistant(self.session_id, provider=provider or None, model=model or None)
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
            "export_component": lambda: self.export_component(str(content.get("id", ""))),
            "retry": lambda: self.retry(str(content.get("id", ""))),
            "save_flow": lambda: self.save_flow(str(content.get("id", ""))),
            "register_flow": lambda: self.register_flow(str(content.get("id", ""))),
            # the JS message keeps its wire name "run_flow"; it asks for a probe run
            "run_flow": lambda: self.probe_run(str(content.get("id", "")), str(content.get("text") or "")),
            "run_for_real": lambda: self.run_for_real(
                str(content.get("id", "")),
                str(content.get("text") or ""),
                allow=_names(content.get("allow")),
                allow_hosts=_names(content.get("hosts")),
            ),
            "provision_flow": lambda: self.provision_flow(str(content.get("id", ""))),
            "cancel_real_run": self.cancel_real_run,
            "undo_flow": self.undo_flow,
        }.get(kind)
        if handler is None:
            self.notice = f"Unknown request from the panel: {kind!r}"
            return
        handler()

    def _message(self, message_id: str) -> dict[str, Any] | None:
        return next((m for m in self.messages if m.get("id") == message_id), None)

    def _append(self, message: PanelMessage) -> None:
        self.messages = [*self.messages, message.to_wire()]

    def send_prompt(self, text: str) -> None:
        """What the Send button does: run one request in the background."""
        if self.busy:
            self.notice = "A request is already running; press Stop first."
            return
        if not text.strip():
            self.notice = "Type a request first."
            return
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.providers import check_environment

        try:
            check_environment()  # a variable changed since the panel opened: its one line, not a traceback
        except ConfigError as exc:
            self._append(user_message(text))
            self._append(error_message(str(exc)))
            return
        if not self.selected_model:
            from lfassist_jupyter.providers import NO_PROVIDER_MESSAGE

            self._append(user_message(text))
            self._append(error_message(NO_PROVIDER_MESSAGE))
            return
        from lfassist_jupyter.runtime import get_loop

        self._append(user_message(text))
        if connecting := self.workspace.auto_connect():  # LANGFLOW_URL, as `%assist connect URL` would
            self.notice = connecting
        self.langflow_connected = self.workspace.connected
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
        steps: list[ProgressStep] = []
        try:
            assistant = self._get_assistant()
            async for event in assistant.stream(text, self.workspace.request_options()):
                if event.event == "token":
                    tokens.append(event.chunk)
                    now = time.monotonic()
                    if now - last_flush >= FLUSH_INTERVAL:
                        self.streaming_text = "".join(tokens)
                        last_flush = now
                elif event.event == "progress":
                    steps = [s.model_copy(update={"done": True}) for s in steps]
                    steps.append(ProgressStep.from_event(event))
                    wire = [s.model_dump() for s in steps]
                    self.progress = {"steps": wire, "current": wire[-1]}
                else:
                    self._finish(event, "".join(tokens), steps)
        except asyncio.CancelledError:  # stopped before the engine took the request
            self._append(cancelled_message())
        except Exception as exc:  # the panel must always leave the busy state
            self._append(error_message(f"Unexpected error: {exc}"))
        finally:
            # The session list first, in the same sync as leaving busy: a view (or a script
            # that waits for busy to drop) never sees the request done with the old list.
            sessions = self.workspace.store.list()[:10]
            with self.hold_sync():
                self.sessions = sessions
                self.streaming_text = ""
                self.progress = {}
                self.busy = False

    def _finish(
        self,
        event: CompleteEvent | ErrorEvent | CancelledEvent,
        text: str,
        steps: list[ProgressStep],
    ) -> None:
        record = event.usage  # the request's metrics record travels with its terminal event
        fallbacks = record.fallbacks if record is not None else []  # the models substituted meanwhile
        notes = [f.message for f in fallbacks] or None
        if fallbacks:  # the selector shows the model actually in use from now on
            self._use_model(f"{fallbacks[-1].provider}:{fallbacks[-1].used}")
        if event.event == "cancelled":
            self._append(cancelled_message(text, event.message).model_copy(update={"notes": notes}))
            return
        if event.event == "error":
            self._append(error_message(event.message).model_copy(update={"notes": notes}))
            return
        model = record.model if record is not None else ""  # the model that answered (after a fallback)
        decorations = {"usage": usage_line(record, model), "notes": notes}
        data = event.data
        if data.warnings:  # e.g. "this conversation is not being saved": never silent
            self.notice = " ".join(data.warnings)
        outcome = event.outcome  # the typed outcome behind the spec data: its report is drawn too
        flow, spec = getattr(data, "flow", None), getattr(data, "spec", None)
        if flow is not None or spec:
            message = flow_message(
                flow=flow,
                spec=spec,
                report=outcome.report if outcome is not None and outcome.kind == "flow" else None,
                run=getattr(data, "run", None),
                validated=data.validated,
                attempts=data.validation_attempts,
                error=data.validation_error,
                steps=[s.label for s in steps],
                reduced_isolation=outcome.reduced_isolation if outcome is not None and outcome.kind == "flow" else None,
            )
            if flow is not None:
                self._flows[message.id] = flow
            self._append(message.model_copy(update=decorations))
        elif data.component_code:
            self._append(
                component_message(
                    code=data.component_code,
                    class_name=data.class_name,
                    validated=data.validated,
                    attempts=data.validation_attempts,
                    error=data.validation_error,
                    steps=[s.label for s in steps],
                    report=outcome.report if outcome is not None and outcome.kind == "component" else None,
                    repairs=data.repairs,
                    reduced_isolation=outcome.reduced_isolation
                    if outcome is not None and outcome.kind == "component"
                    else None,
                ).model_copy(update=decorations)
            )
        else:
            self._append(answer_message(data.result).model_copy(update=decorations))

    # -- buttons ----------------------------------------------------------------------------

    def insert(self, message_id: str) -> None:
        """**Insert into notebook**: a new cell below the active one, through JupyterLab's commands.
        A flow card inserts its re-runnable ``%%assist_flow`` cell."""
        message = self._message(message_id)
        text = (message or {}).get("code") or (message or {}).get("cell")
        if not message or not text:
            self.notice = "Nothing to insert."
            return
        if not self.can_insert or self._lab is None:
            # The view copies the code itself when can_insert is False; this is the fallback note.
            self.notice = "This front end cannot insert cells: the code was copied to the clipboard instead."
            return
        # With the notebook's id, JupyterLab's notebook commands act on that notebook (and activate
        # it) whatever has the focus: a click in the sidebar must not send the code elsewhere.
        target = {"widgetId": self.notebook_id} if self.notebook_id else {}
        self._lab.commands.execute("notebook:insert-cell-below", target or None)
        self._lab.commands.execute("notebook:replace-selection", {**target, "text": text})
        what = message.get("class_name") or (f"the flow {message['flow_name']}" if message.get("cell") else "the code")
        self.notice = f"Inserted {what} into a new cell."

    def register(self, message_id: str) -> None:
        """**Register with Langflow**, in the background; the result is a notice."""
        message = self._message(message_id)
        if not message or not message.get("code"):
            self.notice = "Nothing to register."
            return
        if self.workspace.langflow is None:
            self.notice = "Not connected to Langflow: run `%assist connect URL` and reopen the panel."
            return
        from lfassist_jupyter.runtime import get_loop

        async def go() -> None:
            from lfassist_jupyter.errors import LangflowError

            try:
                registered = await self.workspace.register(message["code"])
                self.notice = str(registered)
            except LangflowError as exc:
                self.notice = f"Not registered: {exc}"

        self.notice = "Registering with Langflow..."
        asyncio.run_coroutine_threadsafe(go(), get_loop())

    def export_component(self, message_id: str, directory: str | Path | None = None) -> Future[None] | None:
        """**Export**: add the card's component to the Langflow extension bundle next to the
        notebook (``EXPORT_DIR``; ``langflow/extension.py``: validated again, security scan in
        reject mode, a test from its smoke inputs), in the background; the notice says where it
        is and how to install it. Components exported there before stay."""
        message = self._message(message_id)
        if not message or not message.get("code") or message.get("kind") != "component":
            self.notice = "Only a validated component can be exported."
            return None
        target = Path(directory) if directory is not None else Path.cwd() / EXPORT_DIR

        def job() -> str:
            from lfassist_jupyter.errors import ConfigError

            try:
                exported = self.workspace.export_extension(target, [message["code"]])
            except ConfigError as exc:
                return f"Not exported: {exc}"
            if exported.skipped:
                return f"Not exported: {exported.skipped[0]}"
            return (
                f"Exported {message.get('class_name') or 'the component'} to the extension in {exported.path} "
                f"({len(exported.components) + len(exported.kept)} component(s)): `pip install {exported.path}` "
                "into Langflow's environment; `lfx extension validate` checks it."
            )

        self.notice = "Exporting the component as a Langflow extension..."
        return self._background(job)

    # -- flow card buttons --------------------------------------------------------------------

    def _flow(self, message_id: str) -> dict[str, Any] | None:
        """The flow behind a card: kept since the request, or rebuilt from the card's spec (a
        restored session); None (with a notice) when there is none."""
        flow = self._flows.get(message_id)
        message = self._message(message_id)
        if flow is None and message and message.get("spec"):
            try:
                flow = flow_from_spec(message["spec"], self.workspace.catalog())
            except LfAssistError:  # no catalogue (lfx missing in the sandbox): nothing to rebuild with
                flow = None
            if flow is not None:
                self._flows[message_id] = flow
        if flow is None:
            self.notice = "This card has no flow to act on."
        return flow

    def flow_file_path(self, message_id: str) -> Path:
        """Where **Save** writes a card's flow: ``<flow name>.json`` in the notebook's directory."""
        import re

        message = self._message(message_id) or {}
        stem = re.sub(r"[^\w.-]+", "-", str(message.get("flow_name") or "flow")).strip("-.") or "flow"
        return Path.cwd() / f"{stem}.json"

    def save_flow(self, message_id: str) -> Path | None:
        """**Save**: write the flow as a file Langflow's UI imports, next to the notebook; says where."""
        from lfassist_jupyter.errors import ConfigError

        flow = self._flow(message_id)
        if flow is None:
            return None
        try:
            path = self.workspace.save_flow(flow, self.flow_file_path(message_id))
        except ConfigError as exc:
            self.notice = f"Not saved: {exc}"
            return None
        self.notice = f"Saved {path} (id {flow['id']}) — import it in Langflow (Upload a flow), or `lfx push` it."
        return path

    def _background(self, job: Callable[[], str]) -> Future[None]:
        """Run a blocking button action off the kernel's loop; its one-line outcome is the notice."""
        from lfassist_jupyter.runtime import get_loop

        async def go() -> None:
            try:
                self.notice = await asyncio.to_thread(job)
            except Exception as exc:  # a button must always answer
                self.notice = f"Failed: {exc}"

        return asyncio.run_coroutine_threadsafe(go(), get_loop())

    def probe_run(self, message_id: str, text: str = "") -> Future[None] | None:
        """**Run**: a probe run in the sandbox (models stubbed); the output is the notice."""
        from lfassist_jupyter.ui.flow_cell import PROBE_INPUT
        from lfassist_jupyter.ui.render.flow import run_lines

        flow = self._flow(message_id)
        if flow is None:
            return None
        probe = text.strip() or PROBE_INPUT

        def job() -> str:
            run = self.workspace.probe_run(flow, probe)
            return " · ".join(line for line, _ in run_lines(run, probe))

        self.notice = f"Running the flow on {probe!r} in the sandbox..."
        return self._background(job)

    def provision_flow(self, message_id: str) -> Future[None] | None:
        """**Judge elsewhere**, on a card whose flow was not judged here: the user's yes to build
        (or reuse) the separate environment the card described, and judge the flow there; the
        card then shows that verdict and which environment gave it."""
        from lfassist_jupyter.flows import validate_flow
        from lfassist_jupyter.ui.messages import flow_message

        flow = self._flow(message_id)
        message = self._message(message_id)
        if flow is None or message is None:
            return None

        def job() -> str:
            report = validate_flow(flow, provision=True)
            card = flow_message(flow=flow, spec=message.get("spec"), report=report, attempts=message.get("attempts"))
            card.id = message_id
            self.messages = [card.to_wire() if m.get("id") == message_id else m for m in self.messages]
            if report.verdict == "not_judged":
                why = report.provision.error if report.provision is not None else None
                return f"Still not judged: {why or 'the environment lacks what the flow needs'}"
            return f"Judged in {report.judged_in}: {report.verdict}."

        self.notice = "Building the environment to judge the flow in (the kernel's is not touched)..."
        return self._background(job)

    # -- the real run ---------------------------------------------------------------------------

    def real_run_plan(self, message_id: str) -> dict[str, Any] | None:
        """What **Run for real** shows first: the variables the card's flow wants (and which this
        session allowed), the hosts it may reach; nothing runs. Also starts the warm real runner in
        the background, so the run that follows does not wait for lfx's import."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.flows.real_run import run_plan
        from lfassist_jupyter.sandbox import local_run
        from lfassist_jupyter.ui.messages import real_run_plan

        flow = self._flow(message_id)
        if flow is None:
            return None
        allowed = self._allowed.setdefault(self.session_id, set())
        hosts = self._extra_hosts.setdefault(self.session_id, [])
        try:
            plan = run_plan(flow, env=sorted(allowed), allow_hosts=hosts)
        except ConfigError as exc:
            self.notice = f"Not run: {exc}"
            return None
        with contextlib.suppress(Exception):  # a runner that cannot start says so when it runs
            local_run.warm_up()
        self.real_run = real_run_plan(message_id, plan, allowed, hosts).model_dump()
        return self.real_run

    def run_for_real(
        self,
        message_id: str,
        text: str = "",
        *,
        allow: list[str] | None = None,
        allow_hosts: list[str] | None = None,
    ) -> Future[None] | None:
        """**Run for real**: run the card's flow on ``text`` with its models called, in the warm real
        runner behind the network fence (as ``%%assist_flow --run-local``); its answer is a new card.

        The first time in a panel session this shows the plan and waits for the user's consent:
        ``allow`` names the kernel's variables the session's real runs may be given (only those the
        flow wants count; their values stay in Python), ``allow_hosts`` adds hosts (``host:port``).
        After that, a flow that wants nothing more and reaches no host beyond the plans confirmed
        runs at once; one that wants a variable not yet allowed, or would reach another host (a
        later flow handing the allowed key to another provider), shows its plan again. Returns the
        background run, or None when nothing runs."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.flows.real_run import run_plan
        from lfassist_jupyter.sandbox.egress import parse_host
        from lfassist_jupyter.ui.flow_cell import PROBE_INPUT

        if self._real_job is not None and not self._real_job.done():
            self.notice = "A real run is already running."
            return None
        flow = self._flow(message_id)
        if flow is None:
            return None
        session = self.session_id
        allowed = self._allowed.setdefault(session, set())
        hosts = self._extra_hosts.setdefault(session, [])
        for entry in allow_hosts or []:
            try:
                parse_host(entry)
            except ValueError as exc:
                self.notice = f"Not run: {exc}"
                return None
            if entry not in hosts:
                hosts.append(entry)
        try:
            plan = run_plan(flow, env=sorted(allowed | set(allow or [])), allow_hosts=hosts)
        except ConfigError as exc:
            self.notice = f"Not run: {exc}"
            return None
        wanted = {name for name, _ in plan.variables}
        reaches = {str(h) for h in plan.hosts}
        shown = self._shown_hosts.setdefault(session, set())
        if allow is not None:  # the user's answer to the plan: consent for this session
            allowed |= wanted & set(allow)
            shown |= reaches
            self._confirmed.add(session)
        if session not in self._confirmed or wanted - allowed or reaches - shown:
            self.real_run_plan(message_id)
            missing = sorted(wanted - allowed)
            new = sorted(reaches - shown) if session in self._confirmed else []
            self.notice = (
                f"Allow {', '.join(missing)} for this session's real runs, then Run."
                if missing
                else f"This flow reaches {', '.join(new)}, which this session's runs did not: check, then Run."
                if new
                else "Check what the run may reach, then Run."
            )
            return None
        names = sorted(allowed & wanted)
        run_text = text.strip() or PROBE_INPUT
        name = str((self._message(message_id) or {}).get("flow_name") or "the flow")
        self.real_run = {**(self.real_run_plan(message_id) or {}), "running": True}

        async def go() -> None:
            from lfassist_jupyter.flows.real_run import run_flow_for_real
            from lfassist_jupyter.ui.messages import run_message

            def real_run() -> Any:  # the workspace's sandbox checks the flow first
                catalog = self.workspace.catalog()
                return run_flow_for_real(flow, run_text, catalog=catalog, env=names, allow_hosts=hosts)

            try:
                run = await asyncio.to_thread(real_run)
            except Exception as exc:  # ConfigError: one line naming what to fix; the plan stays open
                self.real_run = {**self.real_run, "running": False, "error": str(exc)}
                self.notice = f"Not run: {exc}"
                return
            # On the loop's thread, as every other message of the transcript is appended.
            self._append(run_message(flow_name=name, run=run, input_text=run_text))
            self.real_run = {}
            self.notice = f"Real run of {name} {'finished' if run.ok else 'failed'}."

        from lfassist_jupyter.runtime import get_loop

        self.notice = f"Running {name} for real on {run_text!r} (its models are called)..."
        self._real_job = asyncio.run_coroutine_threadsafe(go(), get_loop())
        return self._real_job

    def cancel_real_run(self) -> None:
        """Close the real run's plan on the card (nothing was run)."""
        self.real_run = {}

    def undo_flow(self) -> bool:
        """**Undo** on a flow card: the conversation's flow goes back to the version before its
        last edit (the restore point every edit keeps, as ``%assist undo``). The answer says which
        version is current, and the restored version shows as a new card: it is what the next
        request edits. Returns whether anything was restored."""
        if self.busy:
            self.notice = "Wait for the request to finish (or stop it) before undoing."
            return False
        assistant = self._get_assistant()
        before = len(assistant.session.turns)
        self._append(answer_message(assistant.undo()))
        if len(assistant.session.turns) == before:  # nothing to undo: the answer says so
            return False
        turn = assistant.session.last_flow
        message = turn_message(turn)
        if isinstance(turn.flow, dict):
            self._flows[message.id] = turn.flow
        self._append(message)
        self._refresh_sessions()
        return True

    def register_flow(self, message_id: str) -> Future[None] | None:
        """**Register**: create or update the flow in the connected Langflow and run it there once."""
        from lfassist_jupyter.ui.flow_cell import FlowView, register

        if self.workspace.langflow is None:
            self.notice = "Not connected to Langflow: run `%assist connect URL` and reopen the panel."
            return None
        flow = self._flow(message_id)
        if flow is None:
            return None

        def job() -> str:
            view = FlowView(flow=flow, report=self.workspace.validate_flow(flow))
            register(self.workspace, view)
            return " · ".join(text for text, _ in view.notes)

        self.notice = "Registering the flow with Langflow..."
        return self._background(job)

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
        if self.busy:
            self.stop()
        self.session_id = self.workspace.new_session_id()
        self.messages = []
        self._refresh_sessions()

    def switch_session(self, session_id: str) -> None:
        """Show a stored session; an unanswered last request is shown as cancelled."""
        if self.busy:
            self.notice = "Stop the running request before switching sessions."
            return
        messages = self.workspace.transcript(session_id)
        self.session_id = session_id
        self._flows.update({m.id: m.flow for m in messages if m.flow is not None})  # stored data, not rebuilt
        self.messages = [m.to_wire() for m in messages]

    def delete_session(self, session_id: str) -> None:
        self.workspace.store.delete(session_id)
        if session_id == self.session_id:
            self.new_session()
        self._refresh_sessions()


def _names(value: object) -> list[str] | None:
    """A list of names from the view (``allow``, ``hosts``): strings only, each stripped; None when absent."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(v).strip()[:300] for v in items if isinstance(v, str) and str(v).strip()][:50]
