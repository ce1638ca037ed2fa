"""The Langflow Assistant as a Jupyter AI persona: the same assistant, in the chat users already have.

Registered through Jupyter AI's ``jupyter_ai.personas`` entry point (``pyproject.toml``), it is
listed in Jupyter AI's persona picker as **Langflow Assistant** and answers there as the panel
does: a request goes to the same ``Assistant``, whose typed events become one streamed chat
message (the steps as they go by, the model's text as it streams), replaced at the end by the
panel's card as Markdown (``chat.py``): a validated component, a flow, or an answer.

Where it runs, and what "the same workspace" means there.  A persona lives in the Jupyter
*server* process, not in a kernel, so it has the server's own ``Workspace`` (``ui/workspace.py``,
one per process, as a kernel has one):

- the settings are the ``LFASSIST_*`` variables and the provider's key variable (``MY_SERVICE_KEY``...) of the
  server's environment, the ones kernels started by that server inherit; a kernel's ``%config
  AssistMagics.*`` lives in that kernel only;
- the conversations are stored sessions in the same data directory as the notebooks' (one per
  chat, ``agentic_chat-<chat id>``): ``%assist history`` lists them, ``%%assist --session
  chat-<chat id>`` continues one in a notebook;
- the sandbox is the server's own zygote, a separate confined process like a kernel's: generated
  code is built and run only there, never in the server, and the server never imports lfx;
- Langflow is ``LANGFLOW_URL`` / ``LANGFLOW_API_KEY`` (a kernel's ``%assist connect`` is that
  kernel's); when it is set and answers, ``/register`` is offered, and server validation follows
  the ``server_validation`` setting as in a notebook.

The assistant runs on the package's own loop thread (``runtime.get_loop``), never on the server's
loop, which serves every kernel's messages; only the chat writes happen on the server's loop.

In the chat: a request ("a component that uppercases text", "every morning, summarise this feed
and post it to my webhook"); ``/register`` (the last component or flow, to Langflow); ``/save``
(the last flow, as a Langflow flow file in ``<root>/flows/``, where Jupyter's MCP ``save_flow``
writes too).  **Insert** is the chat's own code toolbar on the card's code block (*Insert below
active cell*): it writes the component's code, or the flow's ``%%assist_flow`` cell, into the
active notebook.  The stop button cancels the request (``cancel_response``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_ai_persona_manager import BasePersona, PersonaDefaults
from jupyterlab_chat.models import Message, NewMessage

if TYPE_CHECKING:
    from lfassist_jupyter.core.assistant import Assistant
    from lfassist_jupyter.core.options import RequestOptions
    from lfassist_jupyter.ui.messages import PanelMessage, ProgressStep
    from lfassist_jupyter.ui.workspace import Workspace

T = TypeVar("T")
log = logging.getLogger(__name__)

NAME = "Langflow Assistant"
AVATAR = Path(__file__).with_name("avatar.svg")
FLUSH_INTERVAL = 0.1
"""Seconds between two writes of the streamed message: every write is saved to the chat file and
sent to every client, so a fast model's tokens are written in batches, as the panel syncs them."""
COMMANDS = {"/register": "save the last component or flow in your Langflow", "/save": "write the last flow as a file"}
_END = object()

_workspace: Workspace | None = None


def _on_engine(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run ``coro`` on the package's loop thread; await the result on the caller's loop."""
    from lfassist_jupyter.runtime import get_loop

    return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, get_loop()))


async def _prepare_engine() -> None:
    """On the engine's loop: the tools' modules imported, the sandbox starting in the background
    (``tools.warm_up``), and the workspace made."""
    from lfassist_jupyter.jupyter_ai.tools import warm_up

    warm_up()
    await _workspace_of_server()


async def _workspace_of_server() -> Workspace:
    """The server process's one workspace (settings, sessions, sandbox, Langflow), made on first
    use, on the engine's loop (where everything that uses it runs)."""
    global _workspace
    if _workspace is None:
        import os

        from lfassist_jupyter.ui.workspace import Workspace

        workspace = Workspace()
        if os.environ.get("LANGFLOW_URL"):
            from lfassist_jupyter.errors import LfAssistError
            from lfassist_jupyter.langflow import LangflowClient

            try:
                client = await LangflowClient().aconnect()
            except LfAssistError as exc:  # the persona still answers; /register says why it cannot
                log.warning("Langflow Assistant persona: not connected to Langflow: %s", exc)
            else:
                workspace.connect(client, server_validation=workspace.config.server_validation)
        _workspace = workspace
    return _workspace


class LangflowPersona(BasePersona):
    """The Langflow Assistant in Jupyter AI's chat (one instance per chat, as Jupyter AI makes them)."""

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name=NAME,
            description="Writes validated Langflow components and flows from plain words (lfassist-jupyter).",
            avatar_path=str(AVATAR),
            system_prompt="The Langflow Assistant answers with its own prompts (lfassist_jupyter.core).",
        )

    @property
    def session_id(self) -> str:
        """This chat's conversation among the stored sessions: one per chat, kept across restarts."""
        from lfassist_jupyter.core.session import SESSION_PREFIX

        return f"{SESSION_PREFIX}chat-{self.chat.get_id()[:24]}"

    async def prepare(self) -> None:
        """On first use: the commands advertised, the workspace made (Langflow connected when set)
        and the sandbox started in the background, so the first request does not wait for lfx."""
        with contextlib.suppress(Exception):  # a persona manager without slash commands
            from jupyter_ai_persona_manager.awareness_models import CommandOption

            self.report_slash_commands([CommandOption(name=n, description=d) for n, d in COMMANDS.items()])
        await _on_engine(_prepare_engine())

    async def process_message(self, message: Message) -> None:
        text = self._request(message.body)
        command = text.split(maxsplit=1)[0].lower() if text.split() else ""
        if command in COMMANDS:
            await self._command(command)
        elif text:
            await self._answer(text)
        else:
            self.send_message("Ask for a Langflow component or flow, in plain words.")

    async def cancel_response(self) -> None:
        assistant = getattr(self, "_assistant", None)
        if assistant is not None:
            assistant.cancel()

    # -- a request ---------------------------------------------------------------------------

    def _request(self, body: str) -> str:
        """The request without a leading mention of this persona (``@Langflow-Assistant ...``)."""
        mention = f"@{self.as_user().mention_name}"
        text = body.strip()
        return text[len(mention) :].strip() if text.startswith(mention) else text

    async def _assistant_for_chat(self) -> tuple[Assistant, RequestOptions]:
        """This chat's assistant, and a request's options as the panel gives them (the configured
        attempts, the connected Langflow)."""

        async def get() -> tuple[Assistant, RequestOptions]:
            workspace = await _workspace_of_server()
            return workspace.assistant(self.session_id), workspace.request_options()

        self._assistant, options = await _on_engine(get())
        return self._assistant, options

    async def _answer(self, text: str) -> None:
        from lfassist_jupyter.ui.messages import ProgressStep, cancelled_message, error_message, usage_line

        from .chat import card, live_body

        reply = _Reply(self)
        steps: list[ProgressStep] = []
        tokens: list[str] = []
        self.set_status("is working...")
        try:
            assistant, options = await self._assistant_for_chat()
            async for event in _events(assistant, text, options):
                if event.event == "token":
                    tokens.append(event.chunk)
                    reply.show(partial(live_body, steps, tokens), now=len(tokens) == 1)
                elif event.event == "progress":
                    steps = [s.model_copy(update={"done": True}) for s in steps]
                    steps.append(ProgressStep.from_event(event))
                    reply.show(partial(live_body, steps, tokens), now=True)
                else:
                    record = event.usage  # the request's cost and the models substituted meanwhile
                    notes = [f.message for f in record.fallbacks] if record is not None else []
                    if event.event == "complete":
                        notes += event.data.warnings or []  # e.g. "this conversation is not being saved"
                        model = record.model if record is not None else ""
                        decorations = {"usage": usage_line(record, model), "notes": notes or None}
                        answer = self._card(event, steps).model_copy(update=decorations)
                    elif event.event == "error":
                        answer = error_message(event.message).model_copy(update={"notes": notes or None})
                    else:
                        answer = cancelled_message("".join(tokens), event.message)
                    reply.show(partial(card, answer, connected=self._connected()), now=True)
        except Exception as exc:  # the chat always gets an answer, never a traceback
            from lfassist_jupyter.redaction import redact_text

            log.exception("Langflow Assistant persona failed")
            reply.show(partial(card, error_message(redact_text(f"Unexpected error: {exc}"))), now=True)
        finally:
            self.clear_status()

    def _card(self, event: Any, steps: list[ProgressStep]) -> PanelMessage:
        from lfassist_jupyter.ui.messages import outcome_message

        return outcome_message(event, [s.label for s in steps])

    def _connected(self) -> bool:
        return _workspace is not None and _workspace.connected

    # -- commands ----------------------------------------------------------------------------

    async def _command(self, command: str) -> None:
        from .chat import plain

        try:
            said = await _on_engine(self._act(command))
        except Exception as exc:  # one line, never a traceback
            from lfassist_jupyter.redaction import redact_text

            said = f"Not done: {redact_text(str(exc))}"
        from lfassist_jupyter.redaction import redact

        self.send_message(plain(redact(said), 1_000))

    async def _act(self, command: str) -> str:
        """``/register`` or ``/save`` on this chat's last component or flow (on the engine's loop)."""
        import asyncio as _asyncio

        workspace = await _workspace_of_server()
        session = workspace.store.load(self.session_id)
        flow_turn, component_turn = session.last_flow, session.last_component
        last = max((t for t in (flow_turn, component_turn) if t is not None), key=lambda t: t.ts, default=None)
        if command == "/save":
            if flow_turn is None or not isinstance(flow_turn.flow, dict):
                return "There is no flow in this chat to save yet."
            return await _asyncio.to_thread(self._save, workspace, flow_turn.flow)
        if last is None:
            return "There is no component or flow in this chat to register yet."
        if not workspace.connected:
            return "Not connected to Langflow: set LANGFLOW_URL (and LANGFLOW_API_KEY) for the Jupyter server."
        if last is flow_turn and isinstance(last.flow, dict):
            registered = await _asyncio.to_thread(workspace.register_flow, last.flow)
            return f"Registered the flow in Langflow: {registered}"
        registered_component = await workspace.register(last.content)
        return str(registered_component)

    def _save(self, workspace: Workspace, flow: dict[str, Any]) -> str:
        from lfassist_jupyter.mcp import flow_file

        name = re.sub(r"[^\w.-]+", "-", str(flow.get("name") or "flow")).strip("-.") or "flow"
        path = workspace.save_flow(flow, flow_file(self.parent.root_dir, name))
        return f"Saved {path} (id {flow['id']}): import it in Langflow (Upload a flow), or `lfx push` it."


class _Reply:
    """The persona's one message for a request: created at the first write, then rewritten whole
    (the live steps and text, then the card), at most every ``FLUSH_INTERVAL`` unless ``now``."""

    def __init__(self, persona: LangflowPersona) -> None:
        self.persona = persona
        self.id: str | None = None
        self.last = 0.0

    def show(self, body: Callable[[], str], *, now: bool = False) -> None:
        """Write ``body()`` with every secret of the server's environment (and every key-shaped
        string) redacted: a chat is a file every collaborator reads, and a model may echo a key."""
        from lfassist_jupyter.redaction import redact

        moment = time.monotonic()
        if not now and self.id is not None and moment - self.last < FLUSH_INTERVAL:
            return
        self.last = moment
        chat, sender = self.persona.chat, self.persona.id
        text = redact(body())
        if self.id is None:
            self.id = chat.add_message(NewMessage(body=text, sender=sender))
            return
        update = Message(id=self.id, body=text, time=time.time(), sender=sender, raw_time=False)
        chat.update_message(update, append=False, trigger_actions=[])


async def _events(assistant: Assistant, text: str, options: RequestOptions) -> AsyncIterator[Any]:
    """``assistant.stream(text, options)`` run on the engine's loop, its events handed to this loop."""
    here = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in assistant.stream(text, options):
                here.call_soon_threadsafe(queue.put_nowait, event)
        except BaseException as exc:  # handed over, raised on this side
            here.call_soon_threadsafe(queue.put_nowait, exc)
        finally:
            here.call_soon_threadsafe(queue.put_nowait, _END)

    from lfassist_jupyter.runtime import get_loop

    running = asyncio.run_coroutine_threadsafe(pump(), get_loop())
    try:
        while (item := await queue.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if not running.done():
            assistant.cancel()
