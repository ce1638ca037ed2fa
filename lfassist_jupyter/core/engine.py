"""The Langflow Assistant pipeline, UI-free: an async generator of typed events.

``Assistant.stream`` is the one implementation; ``run`` drives it from blocking code
(including a Jupyter kernel, whose loop is already running) and ``cancel`` stops it from
any thread.  The pipeline: hygiene -> intent (one stateless call) -> off-topic refusal,
streamed answer, or generate -> extract -> validate -> retry with the error as context.

Why a producer task and a queue: the pipeline runs as its own task so ``cancel()`` can
cancel exactly it (closing the provider's HTTP stream through ``async with``) while the
consumer still receives a final ``cancelled`` event; and if the consumer stops iterating,
the ``finally`` cancels and awaits the producer, so no task outlives a request.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, runtime_checkable

from lfassist_jupyter._secrets import redact
from lfassist_jupyter.core.events import (
    CancelledEvent,
    CompleteData,
    CompleteEvent,
    ErrorEvent,
    ProgressEvent,
    TokenEvent,
)
from lfassist_jupyter.core.extract import extract_component_code, guess_class_name
from lfassist_jupyter.core.hygiene import (
    EMPTY_PROMPT_MESSAGE,
    INJECTION_REFUSAL,
    MAX_PROMPT_CHARS,
    clean_prompt,
    detect_injection,
)
from lfassist_jupyter.core.intent import OFF_TOPIC_REFUSAL, IntentResult, build_intent_messages, parse_intent
from lfassist_jupyter.core.prompts import ANSWER_SYSTEM_PROMPT, generation_system_prompt, retry_message
from lfassist_jupyter.core.result import AssistResult, ResultBuilder
from lfassist_jupyter.core.session import Session, SessionStore, Turn, new_session_id
from lfassist_jupyter.errors import ConfigError, LfAssistError, ProviderError
from lfassist_jupyter.providers.base import Provider
from lfassist_jupyter.validation.report import ValidationReport
from lfassist_jupyter.validation.static import validate_static

log = logging.getLogger("lfassist_jupyter")

MAX_RETRIES_LIMIT = 10
_DEFAULT: Any = object()


@runtime_checkable
class Validator(Protocol):
    """Runtime validation of component code (the static phases run before it, in-process).

    ``reference()`` (optional) describes the installed lfx for the generation prompt.
    """

    async def validate(self, code: str) -> ValidationReport: ...


def _log(level: int, event: str, **fields: Any) -> None:
    """A structured log record: the spec's event name as message, fields in ``extra``."""
    safe = {k: redact(v) if isinstance(v, str) else v for k, v in fields.items()}
    log.log(
        level,
        "%s %s",
        event,
        " ".join(f"{k}={v!r}" for k, v in safe.items()),
        extra={"lfassist_event": event, "lfassist_fields": safe},
    )


def _log_flow_error(request_id: str, exc: BaseException) -> None:
    _log(logging.ERROR, "assistant.flow.error", request_id=request_id, error_type=type(exc).__name__,
         error_message=str(exc))  # fmt: skip


class Assistant:
    """Turns a natural-language request into a validated Langflow component, or an answer.

    Args:
        provider: a provider name (``"openai"``, ``"anthropic"``, ``"ollama"``, ``"scripted"``),
            a ``Provider`` instance, or None for the first configured one.
        model: the generation model (default: the provider's default).
        intent_model: the classification model (default: the provider's fast model).
        max_retries: total validation attempts, 0..10; 0 skips validation.
        session_id: conversation memory key; a new one is made when omitted.
        validator: a ``Validator``; default: the sandboxed lfx validator.  ``None``
            keeps the static and security phases only.
        session_store: where sessions persist; default: the per-user data directory.
            ``False`` keeps memory in this object only.
    """

    def __init__(
        self,
        provider: str | Provider | None = None,
        model: str | None = None,
        max_retries: int = 3,
        session_id: str | None = None,
        validator: Validator | None = _DEFAULT,
        *,
        intent_model: str | None = None,
        session_store: SessionStore | bool | None = _DEFAULT,
        max_prompt_chars: int = MAX_PROMPT_CHARS,
        history_window: int = 6,
        max_tokens: int = 4096,
        api_key: str | None = None,
        base_url: str | None = None,
    ) -> None:
        if not isinstance(max_retries, int) or not 0 <= max_retries <= MAX_RETRIES_LIMIT:
            raise ConfigError(f"max_retries must be an integer from 0 to {MAX_RETRIES_LIMIT}, not {max_retries!r}.")
        self._provider_arg = provider
        self._api_key = api_key
        self._base_url = base_url
        self._provider: Provider | None = provider if isinstance(provider, Provider) else None
        self.model = model
        self.intent_model = intent_model
        self.max_retries = max_retries
        self.session_id = session_id or new_session_id()
        self._validator_arg = validator
        self._validator: Validator | None = None if validator is _DEFAULT else validator
        if session_store is _DEFAULT or session_store is True:
            session_store = SessionStore()
        self.session_store: SessionStore | None = session_store or None
        self.max_prompt_chars = max_prompt_chars
        self.history_window = history_window
        self.max_tokens = max_tokens
        self._session: Session | None = None
        self.last_report: ValidationReport | None = None  # of the last attempt, for views
        self._inflight: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
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

    @property
    def validator(self) -> Validator | None:
        if self._validator is None and self._validator_arg is _DEFAULT:
            from lfassist_jupyter.validation.sandbox import default_validator

            self._validator = default_validator()
        return self._validator

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

    def _save_session(self) -> None:
        if self.session_store is None:
            return
        try:
            self.session_store.save(self.session)
        except OSError as exc:  # memory is a convenience: never fail a request over it
            log.warning("Could not save session %s: %s", self.session_id, exc)

    # -- public API ------------------------------------------------------------------

    async def stream(self, prompt: str) -> AsyncIterator[Any]:
        """Yield the request's events; the last one is complete, error or cancelled."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        producer = loop.create_task(self._guarded(prompt, queue.put_nowait), name="lfassist-request")
        with self._lock:
            self._inflight = (loop, producer)
        try:
            while True:
                event = await queue.get()
                yield event
                if event.event in ("complete", "error", "cancelled"):
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
        self, prompt: str, on_event: Callable[[Any], None] | None = None, *, raise_on_interrupt: bool = True
    ) -> AssistResult:
        """Blocking twin of ``stream``, safe inside a running Jupyter kernel.

        The pipeline runs on a private event-loop thread; events come back through a
        thread-safe queue and ``on_event`` is called on *this* thread, so display code
        works normally.  Ctrl-C / the kernel's stop button cancels the request cleanly,
        then re-raises ``KeyboardInterrupt`` (or, with ``raise_on_interrupt=False``, returns
        the result with status ``cancelled``).
        """
        from lfassist_jupyter._runtime import iterate_in_background

        builder = ResultBuilder(session_id=self.session_id)
        try:
            for event in iterate_in_background(self.stream(prompt), on_interrupt=self.cancel):
                builder.add(event)
                if on_event is not None:
                    on_event(event)
        except KeyboardInterrupt:
            if raise_on_interrupt:
                raise
            if builder.result().status == "running":
                builder.add(CancelledEvent(message="Request cancelled"))
        return self._attach_report(builder.result())

    async def arun(self, prompt: str) -> AssistResult:
        builder = ResultBuilder(session_id=self.session_id)
        async for event in self.stream(prompt):
            builder.add(event)
        return self._attach_report(builder.result())

    def _attach_report(self, result: AssistResult) -> AssistResult:
        if result.intent == "generate_component":
            result.report = self.last_report
        return result

    # -- the pipeline ----------------------------------------------------------------

    async def _guarded(self, prompt: str, emit: Callable[[Any], None]) -> None:
        t0 = time.perf_counter()
        request_id = uuid.uuid4().hex[:8]
        try:
            await self._pipeline(prompt, emit, request_id)
        except asyncio.CancelledError:
            _log(
                logging.INFO,
                "assistant.request.cancelled",
                request_id=request_id,
                reason="cancelled",
                duration_ms=round((time.perf_counter() - t0) * 1000),
            )
            self._mark_cancelled()
            emit(CancelledEvent(message="Request cancelled"))
        except LfAssistError as exc:
            _log_flow_error(request_id, exc)
            emit(ErrorEvent(message=redact(str(exc))))
        except Exception as exc:  # a bug of ours: still end the stream with a readable event
            log.exception("Unexpected error in the assistant pipeline")
            emit(ErrorEvent(message=redact(f"Unexpected error ({type(exc).__name__}): {exc}")))

    def _mark_cancelled(self) -> None:
        session = self._session
        if session is not None and session.turns and session.turns[-1].role == "user":
            session.add(Turn(role="assistant", content="(cancelled)", kind="cancelled"), window=self.history_window)
            self._save_session()

    async def _pipeline(self, prompt: str, emit: Callable[[Any], None], request_id: str) -> None:
        t0 = time.perf_counter()
        self.last_report = None
        clean = clean_prompt(prompt, self.max_prompt_chars)
        if not clean.text:
            emit(ErrorEvent(message=EMPTY_PROMPT_MESSAGE))
            return
        if kind := detect_injection(clean.text):
            _log(logging.WARNING, "assistant.request.refused", request_id=request_id, reason=kind)
            emit(ErrorEvent(message=INJECTION_REFUSAL.format(kind=kind)))
            return
        provider = self.provider
        model = self.model or provider.default_model
        session = self.session

        intent = await self._classify(provider, clean.text, has_component=session.last_component is not None)
        _log(
            logging.INFO,
            "assistant.request.started",
            request_id=request_id,
            session_id=self.session_id,
            provider=provider.name,
            model_name=model,
            intent=intent.intent,
            prompt_chars=len(clean.text),
        )
        warnings = clean.warnings or None

        if intent.intent == "off_topic":
            emit(
                CompleteEvent(
                    data=CompleteData(result=OFF_TOPIC_REFUSAL, validated=False, intent="off_topic", warnings=warnings)
                )
            )
            self._finish_log(request_id, t0, validated=False, attempts=0)
            return

        original = clean.text if clean.text != intent.translation else None
        session.add(Turn(role="user", content=intent.translation, original=original), window=self.history_window)
        if intent.intent == "question":
            await self._answer(provider, model, session, emit, warnings)
        else:
            await self._generate(provider, model, session, emit, warnings, request_id, t0)
        self._save_session()

    async def _classify(self, provider: Provider, text: str, *, has_component: bool) -> IntentResult:
        system, messages = build_intent_messages(text, has_component=has_component)
        model = self.intent_model or provider.fast_model or self.model or provider.default_model
        reply = await provider.complete(system=system, messages=messages, model=model, max_tokens=400, temperature=0)
        return parse_intent(reply, text)

    async def _answer(
        self, provider: Provider, model: str, session: Session, emit: Callable[[Any], None], warnings: list[str] | None
    ) -> None:
        emit(
            ProgressEvent(
                step="generating",
                attempt=1,
                max_attempts=1,
                message="Thinking...",
            )
        )
        parts: list[str] = []
        try:
            async for chunk in provider.stream(
                system=ANSWER_SYSTEM_PROMPT, messages=session.messages(), model=model, max_tokens=self.max_tokens
            ):
                parts.append(chunk)
                emit(TokenEvent(chunk=chunk))
        except ProviderError as exc:
            session.turns.pop()  # the question was not answered; do not remember it as asked
            emit(ErrorEvent(message=exc.friendly))
            return
        text = "".join(parts)
        session.add(Turn(role="assistant", content=text, kind="answer"), window=self.history_window)
        emit(CompleteEvent(data=CompleteData(result=text, validated=False, intent="question", warnings=warnings)))

    async def _generate(
        self,
        provider: Provider,
        model: str,
        session: Session,
        emit: Callable[[Any], None],
        warnings: list[str] | None,
        request_id: str,
        t0: float,
    ) -> None:
        validate = self.max_retries > 0
        max_attempts = self.max_retries if validate else 1
        system = generation_system_prompt(await self._reference())
        messages = session.messages()
        code: str | None = None
        class_name: str | None = None
        error: str | None = None

        def finish(result: str, *, validated: bool, attempts: int, err: str | None = None) -> None:
            if code:
                session.add(
                    Turn(role="assistant", content=code, kind="component", class_name=class_name, validated=validated),
                    window=self.history_window,
                )
            emit(
                CompleteEvent(
                    data=CompleteData(
                        result=result,
                        validated=validated,
                        class_name=class_name,
                        component_code=code,
                        validation_attempts=attempts,
                        validation_error=err,
                        intent="generate_component",
                        warnings=warnings,
                    )
                )
            )
            self._finish_log(request_id, t0, validated=validated, attempts=attempts)

        for attempt in range(1, max_attempts + 1):
            _log(
                logging.INFO,
                "assistant.generation.attempt",
                request_id=request_id,
                attempt=attempt,
                max_retries=self.max_retries,
            )
            msg = (
                "Generating component..."
                if attempt == 1
                else f"Generating a fix (attempt {attempt} of {max_attempts})..."
            )
            emit(ProgressEvent(step="generating_component", attempt=attempt, max_attempts=max_attempts, message=msg))
            try:
                reply = "".join(
                    [
                        c
                        async for c in provider.stream(
                            system=system, messages=messages, model=model, max_tokens=self.max_tokens
                        )
                    ]
                )
            except ProviderError as exc:
                _log_flow_error(request_id, exc)
                finish(exc.friendly, validated=False, attempts=attempt - 1 if validate else 0, err=exc.friendly)
                return
            emit(
                ProgressEvent(
                    step="generation_complete",
                    attempt=attempt,
                    max_attempts=max_attempts,
                    message="Generation complete.",
                )
            )
            emit(
                ProgressEvent(
                    step="extracting_code", attempt=attempt, max_attempts=max_attempts, message="Extracting code..."
                )
            )
            new_code = extract_component_code(reply)
            if new_code is None and attempt == 1:
                # The model answered in prose (e.g. asked for details): show it as is.
                session.add(Turn(role="assistant", content=reply, kind="answer"), window=self.history_window)
                emit(
                    CompleteEvent(
                        data=CompleteData(result=reply, validated=False, intent="generate_component", warnings=warnings)
                    )
                )
                self._finish_log(request_id, t0, validated=False, attempts=0)
                return
            if new_code is not None:
                code, class_name = new_code, guess_class_name(new_code)
            if not validate:
                finish(reply, validated=False, attempts=0)
                return
            emit(
                ProgressEvent(
                    step="validating",
                    attempt=attempt,
                    max_attempts=max_attempts,
                    message=f"Validating (attempt {attempt} of {max_attempts})...",
                    class_name=class_name,
                )
            )
            if new_code is None:
                report = ValidationReport(
                    is_valid=False, phase="static", error="No ```python code block with a Component class was found."
                )
            else:
                report = await self._validate(new_code)
                class_name = report.class_name or class_name
            if report.is_valid:
                _log(
                    logging.INFO,
                    "assistant.validation.success",
                    request_id=request_id,
                    class_name=class_name,
                    attempts=attempt,
                )
                emit(
                    ProgressEvent(
                        step="validated",
                        attempt=attempt,
                        max_attempts=max_attempts,
                        message=f"{class_name} validated.",
                        class_name=class_name,
                    )
                )
                self.last_report = report
                finish(reply, validated=True, attempts=attempt)
                return
            self.last_report = report
            error = report.error or "Validation failed."
            emit(
                ProgressEvent(
                    step="validation_failed",
                    attempt=attempt,
                    max_attempts=max_attempts,
                    message=f"Validation failed ({report.phase}).",
                    error=error,
                    class_name=class_name,
                    component_code=code,
                )
            )
            if attempt == max_attempts or getattr(report, "retryable", True) is False:
                _log(
                    logging.ERROR,
                    "assistant.validation.exhausted",
                    request_id=request_id,
                    error=error,
                    attempts=attempt,
                    code_snippet=(code or "")[:200],
                )
                finish(
                    f"The component could not be validated after {attempt} attempt{'s' * (attempt > 1)}: {error}",
                    validated=False,
                    attempts=attempt,
                    err=error,
                )
                return
            _log(
                logging.WARNING,
                "assistant.validation.failed",
                request_id=request_id,
                error=error,
                attempt=attempt,
                class_name=class_name,
            )
            emit(
                ProgressEvent(
                    step="retrying",
                    attempt=attempt + 1,
                    max_attempts=max_attempts,
                    message=f"Retrying with the error as context (attempt {attempt + 1} of {max_attempts})...",
                )
            )
            messages = [
                *messages,
                {"role": "assistant", "content": reply},
                {
                    "role": "user",
                    "content": retry_message(
                        error=error, code=code or reply, attempt=attempt, max_attempts=max_attempts
                    ),
                },
            ]

    async def _reference(self) -> dict[str, Any] | None:
        validator = self.validator
        getter = getattr(validator, "reference", None)
        if getter is None:
            return None
        try:
            return await getter()
        except Exception as exc:
            log.warning("Could not describe the installed lfx (%s); using the built-in reference.", exc)
            return None

    async def _validate(self, code: str) -> ValidationReport:
        report = validate_static(code)
        if not report.is_valid or self.validator is None:
            return report
        return await self.validator.validate(code)

    def _finish_log(self, request_id: str, t0: float, *, validated: bool, attempts: int) -> None:
        _log(
            logging.INFO,
            "assistant.request.completed",
            request_id=request_id,
            duration_ms=round((time.perf_counter() - t0) * 1000),
            validated=validated,
            attempts=attempts,
        )
