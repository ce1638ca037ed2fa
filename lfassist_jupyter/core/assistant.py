"""The Langflow Assistant, UI-free: one request in, an async stream of typed events out.

``Assistant`` owns the conversation and the request's life: hygiene, one stateless intent
call, routing to the pipeline registered for the intent (``core/answer.py``,
``core/component/pipeline.py``, ``core/flow/pipeline.py``), then writing the
outcome into the session and ending the stream with the spec's ``complete`` event.
``stream`` is the one implementation; ``run`` drives it from blocking code (including a
Jupyter kernel, whose loop is already running) and ``cancel`` stops it from any thread.

Why a producer task and a queue: the request runs as its own task so ``cancel()`` can
cancel exactly it (closing the provider's HTTP stream through ``async with``) while the
consumer still receives a final ``cancelled`` event; and if the consumer stops iterating,
the ``finally`` cancels and awaits the producer, so no task outlives a request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.core.answer import AnswerPipeline
from lfassist_jupyter.core.component.pipeline import ComponentPipeline, check_max_retries
from lfassist_jupyter.core.events import TERMINAL_EVENTS, CancelledEvent, CompleteEvent, ErrorEvent, Event
from lfassist_jupyter.core.hygiene import (
    EMPTY_PROMPT_MESSAGE,
    INJECTION_REFUSAL,
    MAX_PROMPT_CHARS,
    CleanPrompt,
    clean_prompt,
    detect_injection,
)
from lfassist_jupyter.core.intent import (
    FLOW_INTENTS,
    GENERATE_COMPONENT,
    INTENT_KIND,
    INTENT_METRIC,
    OFF_TOPIC,
    OFF_TOPIC_REFUSAL,
    RUN_FLOW,
    USE_BUILTIN,
    IntentResult,
    build_intent_messages,
    parse_intent,
)
from lfassist_jupyter.core.options import RequestOptions, ResolvedOptions
from lfassist_jupyter.core.outcome import AnswerOutcome, BuiltinComponent, ComponentOutcome, FlowOutcome, Outcome
from lfassist_jupyter.core.pipeline import Pipeline, Request
from lfassist_jupyter.core.request_log import log, log_event, log_request_error
from lfassist_jupyter.core.result import AssistResult, ResultBuilder
from lfassist_jupyter.core.session import Session, SessionStore, Turn, new_session_id
from lfassist_jupyter.errors import LfAssistError, ProviderError
from lfassist_jupyter.metrics import METRICS, MeteredProvider, RequestRecord
from lfassist_jupyter.ports import ComponentValidator, FlowLibrary, FlowSandbox, HasFlowSandbox
from lfassist_jupyter.providers.base import ModelCall, Provider
from lfassist_jupyter.providers.table import Task, TaskModels
from lfassist_jupyter.redaction import redact

if TYPE_CHECKING:
    from lfassist_jupyter.core.flow.pipeline import FlowPipeline
    from lfassist_jupyter.flows.catalog import Catalog
    from lfassist_jupyter.langflow.client import LangflowClient


class _Default:
    """Marks an argument left out (None means something else: no validator, no store)."""


_DEFAULT = _Default()


@dataclass
class _Job:
    """One request in flight, as its steps share it (PocketFlow's shared store, for one request)."""

    request_id: str
    t0: float
    record: RequestRecord
    emit: Callable[[Event], None]
    options: ResolvedOptions
    model: str = ""
    """The model of the request's task (``""``: none is named, the server's list gives it)."""
    models: TaskModels = field(default_factory=TaskModels)
    """The model of each task, chosen once (``Provider.task_models``)."""
    task: Task = "component"
    warnings: list[str] = field(default_factory=list)
    """Notices for the user (a truncated prompt, a session that could not be saved)."""


def _library(langflow: LangflowClient | None) -> FlowLibrary | None:
    """The connected Langflow's flows and starter templates as a ``FlowLibrary``, or None."""
    if langflow is None:
        return None
    from lfassist_jupyter.langflow.library import LangflowLibrary

    return LangflowLibrary(langflow)


class Assistant:
    """Turns a natural-language request into a validated Langflow component, a flow, or an answer.

    Args:
        provider: a provider name (``"openai"``, ``"anthropic"``, ``"ollama"``, ``"scripted"``),
            a ``Provider`` instance, or None for the first configured one.
        model: the generation model (default: the provider's default).
        intent_model: the classification model (default: the provider's fast model).
        flow_model: the model the model nodes of the flows it writes call (``provider:model`` or a
            model of its provider; default: its own provider and model).
        max_retries: total validation attempts, 0..10; 0 skips validation (the default of each
            request; a request may say otherwise: ``RequestOptions``).
        session_id: conversation memory key; a new one is made when omitted.
        validator: a ``ComponentValidator``; default: the shared sandbox
            (``lfassist_jupyter.sandbox.shared()``).  ``None`` keeps the static and security
            phases only.
        sandbox: the ``FlowSandbox`` that gives the flow catalogue, builds and probe-runs flows;
            default: the one the validator names (``ports.HasFlowSandbox``: the sandbox itself,
            a chain's local one), else the shared sandbox.  Picked here, once, and handed to
            every pipeline: nothing below looks one up.
        session_store: where sessions persist; default: the per-user data directory.
            ``False`` keeps memory in this object only.

    A request's own options (reuse, attempts, the connected Langflow) are arguments of
    ``run``/``arun``/``stream`` (``options=RequestOptions(...)``); ``reuse``, ``max_retries`` and
    ``langflow`` here are the defaults a request leaves to the assistant.
    """

    def __init__(
        self,
        provider: str | Provider | None = None,
        model: str | None = None,
        max_retries: int = 3,
        session_id: str | None = None,
        validator: ComponentValidator | _Default | None = _DEFAULT,
        *,
        intent_model: str | None = None,
        flow_model: str | None = None,
        session_store: SessionStore | bool | _Default | None = _DEFAULT,
        sandbox: FlowSandbox | None = None,
        max_prompt_chars: int = MAX_PROMPT_CHARS,
        history_window: int = 6,
        max_tokens: int = 4096,
        api_key: str | None = None,
        base_url: str | None = None,
    ) -> None:
        self.max_retries = check_max_retries(max_retries)
        self._provider_arg = provider
        self._api_key = api_key
        self._base_url = base_url
        self._provider: Provider | None = provider if isinstance(provider, Provider) else None
        self.model = model
        self.intent_model = intent_model
        self.flow_model = flow_model
        self.session_id = session_id or new_session_id()
        # The edge: the shared sandbox is picked here, once, when none is handed in.
        if isinstance(validator, _Default):
            from lfassist_jupyter.sandbox import shared

            validator = shared()
        self.validator: ComponentValidator | None = validator
        self._own_sandbox: FlowSandbox | None = (
            validator.flow_sandbox if isinstance(validator, HasFlowSandbox) else None
        )
        """The sandbox beside the validator: reuse asks only it (it never starts one of its own)."""
        if sandbox is None:
            from lfassist_jupyter.sandbox import shared

            sandbox = self._own_sandbox or shared()
        self.sandbox: FlowSandbox = sandbox
        if isinstance(session_store, _Default) or session_store is True:
            session_store = SessionStore()
        self.session_store: SessionStore | None = session_store or None
        self.max_prompt_chars = max_prompt_chars
        self.history_window = history_window
        self.max_tokens = max_tokens
        self._session: Session | None = None
        self._pipelines: dict[str, Pipeline] = {}
        self._templates: dict[str, dict[str, Any]] = {}
        """Node templates by component code, filled by flow pipelines as they run: the session's
        last component is used flow after flow, and building its template costs a sandbox child."""
        self.flow_components: dict[str, Any] | None = None
        """Extra flow catalogue entries (name -> node template, or Langflow's ``/api/v1/all``
        answer): a workspace connected to Langflow sets the server's components here."""
        self.langflow: LangflowClient | None = None
        """The default connected Langflow (a request's ``RequestOptions.langflow`` comes first):
        "run X on Y" finds X there too."""
        self.reuse = True
        """The default of reuse before generate (``RequestOptions.reuse``): a component request that
        a built-in lfx component covers is answered with that component (no generation call);
        "generate anyway" still generates."""
        self._inflight: tuple[asyncio.AbstractEventLoop, asyncio.Task[None]] | None = None
        self._lock = threading.Lock()

    # -- configuration ---------------------------------------------------------------

    @property
    def provider(self) -> Provider:
        """The provider, created on first use (raises ``ConfigError`` with the fix)."""
        if self._provider is None:
            from lfassist_jupyter.providers import create_provider

            name = self._provider_arg if isinstance(self._provider_arg, str) else None
            self._provider = create_provider(name, api_key=self._api_key, base_url=self._base_url)
        return self._provider

    def options(self, options: RequestOptions | ResolvedOptions | None = None) -> ResolvedOptions:
        """A request's options, with what it leaves out taken from this assistant's defaults."""
        if isinstance(options, ResolvedOptions):
            return options
        defaults = RequestOptions(reuse=self.reuse, max_retries=self.max_retries, langflow=self.langflow)
        return (options or RequestOptions()).over(defaults)

    @property
    def session(self) -> Session:
        if self._session is None or self._session.id != self.session_id:
            self._session = self.session_store.load(self.session_id) if self.session_store else Session(self.session_id)
        return self._session

    def new_session(self) -> str:
        """Start a fresh conversation (the old one stays on disk)."""
        self.session_id = new_session_id()
        self._session = None
        return self.session_id

    def _save_session(self) -> str | None:
        """Save; a warning for the user the first time it fails (memory never fails a request)."""
        if self.session_store is None:
            return None
        return self.session_store.try_save(self.session)

    # -- pipelines ---------------------------------------------------------------------

    def register_pipeline(self, intent: str, pipeline: Pipeline) -> None:
        """Route ``intent`` to ``pipeline`` (how the flow pipeline plugs in), replacing the built-in."""
        self._pipelines[intent] = pipeline

    def component_pipeline(self, options: RequestOptions | ResolvedOptions | None = None) -> ComponentPipeline:
        """The component pipeline with this assistant's validator and the request's attempts
        (also for a flow pipeline that needs a custom node)."""
        return ComponentPipeline(self.validator, self.options(options).max_retries)

    def flow_pipeline(
        self, intent: str = "build_flow", options: RequestOptions | ResolvedOptions | None = None
    ) -> FlowPipeline:
        """The flow pipeline for one request: this assistant's validator and sandbox, the request's
        attempts and connected Langflow, the extra catalogue (``flow_components``), the session's
        last validated component (its node template is built when the pipeline runs) and the
        session's last flow, which a follow-up edits.  Assembly reads memory only: no sandbox
        call, so no thread is needed."""
        from lfassist_jupyter.core.flow.pipeline import FlowPipeline, SessionComponent

        resolved = self.options(options)
        last = self.session.last_flow
        turn = self.session.last_component
        made = None
        if turn is not None and turn.validated and turn.class_name:
            made = SessionComponent(turn.class_name, turn.content)
        return FlowPipeline(
            self.validator,
            resolved.max_retries,
            intent=intent,
            sandbox=self.sandbox,
            extra_components=self._extra_components(),
            session_component=made,
            templates=self._templates,
            current_flow=last.flow if last else None,
            current_spec=last.content if last else None,
            flows=self._session_flows(),
            library=_library(resolved.langflow),
            flow_model=self.flow_model,
        )

    def _session_flows(self) -> list[dict[str, Any]]:
        """The flows of this conversation, newest first (one per name): the plan may reuse one."""
        seen: set[str] = set()
        out = []
        for turn in reversed(self.session.turns):
            name = str((turn.flow or {}).get("name") or "") if turn.kind == "flow" else ""
            if name and name.lower() not in seen and turn.flow is not None:
                seen.add(name.lower())
                out.append(turn.flow)
        return out

    def _extra_components(self) -> dict[str, Any] | None:
        """``flow_components`` as flat catalogue entries (name -> node template); Langflow's
        ``/api/v1/all`` answer (category -> name -> template) is flattened."""
        components = self.flow_components or {}
        if components and all(isinstance(v, dict) and "template" not in v for v in components.values()):
            extra: dict[str, Any] = {}
            for group in components.values():
                extra.update({k: v for k, v in group.items() if isinstance(v, dict)})
            return extra or None
        return dict(components) or None

    def _builtin_catalog(self) -> Catalog | None:
        """The bundled components the classifier may offer instead of generating one: the
        catalogue of the sandbox beside this assistant's validator (cached by that sandbox), None
        without one (reuse is then skipped: it never starts a sandbox of its own).
        Blocking (the first call asks the sandbox): the request calls it in a thread."""
        if self._own_sandbox is None:
            return None
        from lfassist_jupyter.flows import default_catalog

        try:
            return default_catalog(self._own_sandbox)
        except Exception as exc:  # no lfx in the worker: classify without the catalogue
            log.info("No built-in catalogue for reuse: %s", exc)
            return None

    def _generate_followup(self, text: str) -> str | None:
        """For a bare "generate anyway" after a built-in was offered: the request it refers to."""
        from lfassist_jupyter.core.reuse import is_bare_generate, wants_generation

        if not (wants_generation(text) and is_bare_generate(text)):
            return None
        turns = self.session.turns
        for i in range(len(turns) - 1, 0, -1):
            if turns[i].role == "assistant":
                offered = turns[i].kind == "answer" and turns[i].class_name and turns[i - 1].role == "user"
                return turns[i - 1].content if offered else None
        return None

    def pipeline_for(self, intent: str, options: RequestOptions | ResolvedOptions | None = None) -> Pipeline:
        """The pipeline for ``intent``: a registered one, else the built-in.  Pure assembly from
        this assistant's settings, the request's options and memory; whatever needs the sandbox
        happens in its ``run``."""
        if intent in self._pipelines:
            return self._pipelines[intent]
        if intent == GENERATE_COMPONENT:
            return self.component_pipeline(options)
        if intent in FLOW_INTENTS:
            return self.flow_pipeline(intent, options)
        return AnswerPipeline()

    def run_pipeline(self, intent: IntentResult, options: RequestOptions | ResolvedOptions | None = None) -> Pipeline:
        """``run_flow``: run the flow the request names (this conversation's, a saved file, the
        connected Langflow's) on its input, as a probe run in the sandbox."""
        from lfassist_jupyter.core.flow.run_request import RunFlowPipeline

        return RunFlowPipeline(
            self.session,
            self.sandbox,
            flow_name=intent.flow,
            input_text=intent.input,
            langflow=_library(self.options(options).langflow),
        )

    def load_flow(self, flow: dict[str, Any] | str | Path) -> dict[str, Any]:
        """Put a flow into the session as the last flow, so the next request can edit it.

        ``flow`` is Langflow flow JSON (a dict or its text), a path to a ``.json`` file, or
        spec text. Returns the flow JSON. Raises ``ConfigError`` with the reason when it is
        none of these or cannot be built; the session is unchanged then.
        """
        from lfassist_jupyter.core.flow.pipeline import custom_templates, without_secrets
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.flows import FlowSpecError, build_flow, default_catalog, flow_to_spec
        from lfassist_jupyter.flows.load import is_flow_path, read_flow_file, require_flow

        data: Any = flow
        if is_flow_path(flow):
            data = read_flow_file(flow)  # FlowFileError (a ConfigError): one line naming what is wrong
        elif isinstance(flow, str) and flow.lstrip().startswith("{"):
            try:
                data = json.loads(flow)
            except (ValueError, RecursionError) as exc:
                raise ConfigError(f"The flow is not valid JSON: {exc}") from exc
        catalog = default_catalog(self.sandbox)  # the sandbox that builds and runs flows gives it
        if isinstance(data, str):
            try:
                built = build_flow(data, catalog=catalog)
            except FlowSpecError as exc:
                raise ConfigError(str(exc)) from exc
            if built.flow is None:
                raise ConfigError("The spec could not be built: " + "; ".join(str(e) for e in built.errors))
            data = built.flow
        require_flow(data)
        data = without_secrets(data)  # the session is written to disk: no key goes with it
        for name, template in custom_templates(data).items():
            if name not in catalog:
                catalog.add(name, template)
        spec = flow_to_spec(data, catalog=catalog)
        self.session.add(
            Turn(role="user", content=f"(loaded the flow {data.get('name') or 'flow'} to edit)"),
            window=self.history_window,
        )
        self.session.add(
            Turn(role="assistant", content=spec, kind="flow", flow=data, validated=None), window=self.history_window
        )
        self._save_session()
        return data

    def undo(self) -> str:
        """Restore the flow before the last edit (the restore point every edit keeps); the
        answer says which version is current. The restored flow is what the next request edits."""
        undone = self.session.flow_version
        turn = self.session.undo(window=self.history_window)
        if turn is None:
            return "Nothing to undo: this conversation has no earlier version of its flow."
        self._save_session()
        name = (turn.flow or {}).get("name") or "the flow"
        state = "validated" if turn.validated else "not validated" if turn.validated is False else "loaded"
        if turn.validated and turn.reduced_isolation:
            state += f" (reduced isolation: {turn.reduced_isolation})"
        return (
            f"Restored version {self.session.flow_version} of {name!r} ({state}); version {undone} is undone. "
            "It is the current flow: the next request edits it."
        )

    # -- public API ------------------------------------------------------------------

    async def stream(self, prompt: str, options: RequestOptions | None = None) -> AsyncIterator[Event]:
        """Yield the request's events; the last one is complete, error or cancelled.  ``options``
        are this request's own (reuse, attempts, the connected Langflow); what they leave out is
        this assistant's default.  A bad option is a ``ConfigError`` before anything runs."""
        resolved = self.options(options)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event] = asyncio.Queue()
        producer = loop.create_task(self._guarded(prompt, resolved, queue.put_nowait), name="lfassist-request")
        with self._lock:
            self._inflight = (loop, producer)
        try:
            while True:
                event = await queue.get()
                yield event
                if event.event in TERMINAL_EVENTS:
                    break
        finally:
            with self._lock:
                self._inflight = None
            if not producer.done():
                producer.cancel()
            # Wait for it to wind down; unlike `await producer` this neither raises the
            # producer's outcome nor hides a cancellation aimed at this consumer.
            await asyncio.wait({producer})

    def cancel(self) -> bool:
        """Cancel the request in flight, from any thread.  Returns whether one was running."""
        with self._lock:
            inflight = self._inflight
        if inflight is None:
            return False
        loop, task = inflight
        if loop.is_closed():
            return False
        loop.call_soon_threadsafe(task.cancel)
        return True

    @property
    def busy(self) -> bool:
        return self._inflight is not None

    def run(
        self,
        prompt: str,
        on_event: Callable[[Event], None] | None = None,
        *,
        raise_on_interrupt: bool = True,
        options: RequestOptions | None = None,
    ) -> AssistResult:
        """Blocking twin of ``stream``, safe inside a running Jupyter kernel.

        The request runs on a private event-loop thread; events come back through a
        thread-safe queue and ``on_event`` is called on *this* thread, so display code
        works normally.  Ctrl-C / the kernel's stop button cancels the request cleanly,
        then re-raises ``KeyboardInterrupt`` (or, with ``raise_on_interrupt=False``, returns
        the result with status ``cancelled``).
        """
        from lfassist_jupyter.runtime import iterate_in_background

        self.options(options)  # a bad option: one ConfigError here, before the loop thread
        builder = ResultBuilder(session_id=self.session_id)
        try:
            for event in iterate_in_background(self.stream(prompt, options), on_interrupt=self.cancel):
                builder.add(event)
                if on_event is not None:
                    on_event(event)
        except KeyboardInterrupt:
            if raise_on_interrupt:
                raise
            if builder.result().status == "running":
                builder.add(CancelledEvent(message="Request cancelled"))
        return builder.result()

    async def arun(self, prompt: str, options: RequestOptions | None = None) -> AssistResult:
        """The request's result, built from its events (the async twin of ``run``)."""
        builder = ResultBuilder(session_id=self.session_id)
        async for event in self.stream(prompt, options):
            builder.add(event)
        return builder.result()

    # -- one request -----------------------------------------------------------------

    async def _guarded(self, prompt: str, options: ResolvedOptions, emit: Callable[[Event], None]) -> None:
        t0 = time.perf_counter()
        request_id = uuid.uuid4().hex[:8]
        record = METRICS.start()

        def counted(event: Event) -> None:
            # The request's terminal event closes its metrics record, whichever path sent it,
            # and carries it: views read the request's cost from the stream, not from here.
            if event.event == "complete":
                data = event.data
                METRICS.finish(record, "complete", validated=data.validated, attempts=data.validation_attempts)
            elif event.event == "error":
                METRICS.finish(record, "error", error_type=record.error_type or record.provider_error or "Error")
            elif event.event == "cancelled":
                METRICS.finish(record, "cancelled")
            if event.event in TERMINAL_EVENTS:
                event = event.model_copy(update={"usage": record})
            emit(event)

        job = _Job(request_id=request_id, t0=t0, record=record, emit=counted, options=options)
        try:
            await self._handle(prompt, job)
        except asyncio.CancelledError:
            log_event(
                logging.INFO,
                "assistant.request.cancelled",
                request_id=request_id,
                reason="cancelled",
                duration_ms=round((time.perf_counter() - t0) * 1000),
            )
            self._mark_cancelled()
            counted(CancelledEvent(message="Request cancelled"))
        except LfAssistError as exc:
            log_request_error(request_id, exc)
            record.error_type = type(exc).__name__
            counted(ErrorEvent(message=redact(str(exc))))
        except Exception as exc:  # a bug of ours: still end the stream with a readable event
            log.exception("Unexpected error in the assistant")
            record.error_type = type(exc).__name__
            counted(ErrorEvent(message=redact(f"Unexpected error ({type(exc).__name__}): {exc}")))

    def _mark_cancelled(self) -> None:
        session = self._session
        if session is not None and session.turns and session.turns[-1].role == "user":
            session.add(Turn(role="assistant", content="(cancelled)", kind="cancelled"), window=self.history_window)
            self._save_session()

    async def _handle(self, prompt: str, job: _Job) -> None:
        """One request, by intent: screened, understood, then answered by one of three exits
        (off-topic, a built-in offered, a pipeline), each ending in ``_finish``."""
        clean = self._screen(prompt, job)
        if clean is None:
            return
        job.warnings = list(clean.warnings)
        if missing := await asyncio.to_thread(self._sandbox_unusable, job.options.max_retries):
            job.record.kind, job.record.error_type = "refused", "SandboxUnavailable"
            job.emit(ErrorEvent(message=missing))  # before any model call is spent
            return
        provider = self._metered_provider(job)
        intent, builtin = await self._understand(clean.text, provider, job)
        if intent.intent == OFF_TOPIC:
            self._finish(AnswerOutcome(result=OFF_TOPIC_REFUSAL, intent=OFF_TOPIC), job, remember=False)
            return
        request = self._remember_request(clean.text, intent, provider, job)
        if builtin is not None:  # reuse before generate: no generation call
            from lfassist_jupyter.core.reuse import builtin_outcome

            self._finish(builtin_outcome(builtin), job)
            return
        outcome = await self._run(intent, request, job)
        if outcome is not None:
            self._finish(outcome, job)

    def _screen(self, prompt: str, job: _Job) -> CleanPrompt | None:
        """The prompt cleaned, or None when it is refused (empty, an injection): the refusal is
        the request's one ``error`` event."""
        clean = clean_prompt(prompt, self.max_prompt_chars)
        if not clean.text:
            job.record.kind, job.record.error_type = "refused", "EmptyPrompt"
            job.emit(ErrorEvent(message=EMPTY_PROMPT_MESSAGE))
            return None
        if kind := detect_injection(clean.text):
            log_event(logging.WARNING, "assistant.request.refused", request_id=job.request_id, reason=kind)
            job.record.kind, job.record.error_type = "refused", "InjectionRefused"
            job.emit(ErrorEvent(message=INJECTION_REFUSAL.format(kind=kind)))
            return None
        return clean

    def _sandbox_unusable(self, max_retries: int) -> str | None:
        """Why this assistant's sandbox cannot validate anything (its interpreter has no lfx: the
        ``[lfx]`` extra is not installed), or None; asked before a request spends a model call.
        A validator that is not a sandbox, or validation turned off (``max_retries=0``), needs none."""
        python = getattr(self._own_sandbox, "python", None)
        if not isinstance(python, str) or max_retries == 0:
            return None
        from lfassist_jupyter.sandbox.lfx_check import lfx_missing

        return lfx_missing(python)

    def _metered_provider(self, job: _Job) -> Provider:
        """The provider (created on first use), counted into the request's metrics record; the
        model of each task chosen (the one place: ``Provider.task_models``)."""
        real = self.provider
        job.models = real.task_models(self.model, self.intent_model)
        job.model = job.models.intent
        job.record.provider, job.record.model = real.name, job.model
        return MeteredProvider(real, job.record)  # type: ignore[return-value]  # a Provider in all but name

    async def _understand(
        self, text: str, provider: Provider, job: _Job
    ) -> tuple[IntentResult, BuiltinComponent | None]:
        """What the request is: a bare "generate anyway" refers to the request a built-in was
        offered for; otherwise one classification call, offered the built-in components when
        the request lets reuse happen.  Returns the intent and the built-in to offer, if any."""
        from lfassist_jupyter.core.reuse import builtin_lines, describe_builtin, wants_generation

        generate = wants_generation(text)
        earlier = self._generate_followup(text)
        catalog = None
        if earlier is not None:  # "generate anyway": the offered request, generated (no classification)
            intent = IntentResult(intent=GENERATE_COMPONENT, translation=earlier, parsed_by="followup")
        else:
            if job.options.reuse and not generate:
                catalog = await asyncio.to_thread(self._builtin_catalog)
            asked = text.replace("--generate", " ").strip() if generate else text
            session = self.session
            intent = await self._classify(
                provider,
                job.models.intent,
                asked,
                has_component=session.last_component is not None,
                has_flow=session.last_flow is not None,
                builtins=builtin_lines(catalog),
            )
        job.task = INTENT_KIND.get(intent.intent, "answer")  # component, flow or answer: the model's task
        job.model = job.models[job.task]
        job.record.model = provider.model_in_use(job.model, job.task)
        builtin = None
        if intent.intent == GENERATE_COMPONENT and intent.builtin and catalog is not None:
            builtin = describe_builtin(catalog, intent.builtin)
        job.record.kind = INTENT_METRIC[USE_BUILTIN] if builtin else INTENT_METRIC.get(intent.intent, intent.intent)
        log_event(
            logging.INFO,
            "assistant.request.started",
            request_id=job.request_id,
            session_id=self.session_id,
            provider=provider.name,
            model_name=job.model,
            intent=intent.intent,
            prompt_chars=len(text),
        )
        return intent, builtin

    def _remember_request(self, text: str, intent: IntentResult, provider: Provider, job: _Job) -> Request:
        """The user's turn, written into the session (in English, the original kept), and the
        request as a pipeline sees it."""
        session = self.session
        original = text if text != intent.translation else None
        session.add(Turn(role="user", content=intent.translation, original=original), window=self.history_window)
        return Request(
            text=intent.translation,
            messages=session.messages(),
            provider=provider,
            model=job.model,
            request_id=job.request_id,
            max_tokens=self.max_tokens,
            warnings=list(job.warnings),
            task=job.task,
        )

    async def _run(self, intent: IntentResult, request: Request, job: _Job) -> Outcome | None:
        """The pipeline for the intent, run; a provider failure it could not explain ends the
        request with one ``error`` event and the unanswered turn forgotten (then None)."""
        try:
            if intent.intent == RUN_FLOW and RUN_FLOW not in self._pipelines:
                pipeline = self.run_pipeline(intent, job.options)
            else:
                pipeline = self.pipeline_for(intent.intent, job.options)
            return await pipeline.run(request, job.emit)
        except ProviderError as exc:
            self.session.turns.pop()  # the request was not answered; do not remember it as asked
            self._save_session()
            log_request_error(job.request_id, exc)
            job.record.error_type = type(exc).__name__
            job.emit(ErrorEvent(message=str(exc)))
            return None

    def _finish(self, outcome: Outcome, job: _Job, *, remember: bool = True) -> None:
        """The assistant's turn written and saved (saved before "complete", so a failure to save can
        be told), then the ``complete`` event and the log line."""
        if remember:
            self._record(self.session, outcome)
            if unsaved := self._save_session():
                job.warnings.append(unsaved)
        job.emit(CompleteEvent(data=outcome.complete_data(job.warnings or None), outcome=outcome))
        if isinstance(outcome, AnswerOutcome):
            self._log_completed(job.request_id, job.t0, validated=False, attempts=0)
        else:
            self._log_completed(job.request_id, job.t0, validated=outcome.validated, attempts=outcome.attempts)

    def _record(self, session: Session, outcome: ComponentOutcome | AnswerOutcome | FlowOutcome) -> None:
        """The assistant's turn of the conversation, written from the outcome (only here)."""
        if isinstance(outcome, ComponentOutcome):
            if outcome.code:
                turn = Turn(
                    role="assistant",
                    content=outcome.code,
                    kind="component",
                    class_name=outcome.class_name,
                    validated=outcome.validated,
                    attempts=outcome.attempts,
                    reduced_isolation=outcome.reduced_isolation if outcome.validated else None,
                )
            elif outcome.error is None:  # prose instead of code: remembered as an answer
                turn = Turn(role="assistant", content=outcome.result, kind="answer")
            else:  # the provider failed before any code: nothing was said
                return
        elif isinstance(outcome, FlowOutcome) and outcome.flow is not None and outcome.spec:
            from lfassist_jupyter.core.flow.pipeline import without_secrets

            turn = Turn(
                role="assistant",
                content=outcome.spec,
                kind="flow",
                flow=without_secrets(outcome.flow),
                validated=outcome.validated,
                attempts=outcome.attempts,
                reduced_isolation=outcome.reduced_isolation if outcome.validated else None,
            )
        elif isinstance(outcome, FlowOutcome) and outcome.error is not None and outcome.result == outcome.error:
            return  # the provider failed before any flow: nothing was said
        else:  # an answer; an offered built-in keeps its name, so "generate anyway" knows what was offered
            builtin = outcome.builtin if isinstance(outcome, AnswerOutcome) else None
            turn = Turn(
                role="assistant", content=outcome.result, kind="answer", class_name=builtin.name if builtin else None
            )
        session.add(turn, window=self.history_window)

    async def _classify(
        self,
        provider: Provider,
        model: str,
        text: str,
        *,
        has_component: bool,
        has_flow: bool = False,
        builtins: str | None = None,
    ) -> IntentResult:
        system, messages = build_intent_messages(
            text, has_component=has_component, has_flow=has_flow, builtins=builtins
        )
        call = ModelCall(system=system, messages=messages, model=model, task="intent", max_tokens=400, temperature=0)
        reply = await provider.complete(call)
        return await asyncio.to_thread(parse_intent, reply, text)  # lenient JSON of any size: off the loop

    @staticmethod
    def _log_completed(request_id: str, t0: float, *, validated: bool, attempts: int) -> None:
        log_event(
            logging.INFO,
            "assistant.request.completed",
            request_id=request_id,
            duration_ms=round((time.perf_counter() - t0) * 1000),
            validated=validated,
            attempts=attempts,
        )
