"""The component pipeline: generate -> extract -> validate -> repair, as one typed outcome.

Each attempt streams a reply from the provider, pulls the component code out of it,
validates it (static and security phases in-process, then the ``ComponentValidator`` port:
the sandbox, and the Langflow server when connected) and, when it fails, first tries the
zero-call repair pass (``repair.py``: mechanical mistakes with one certain fix, validated
again, no model call), then asks again with the original error and code as context.

The pure CPU work never runs on the event loop, so progress flows and Stop (a cancel of the
request's task) is honoured at once whatever the model sent.  Extraction and the static phase
of a reply up to ``INLINE_CHARS`` run in a worker thread (milliseconds); of a bigger one, and
the repair pass always, in a worker process with a deadline (``core/offload.py``: the ``ast``
and LibCST parsers hold the GIL for seconds on hostile input, and a process can be killed).
Past ``REPAIR_DEADLINE`` the attempt goes to the model as if no certain repair existed.
``max_retries`` is the spec's name for the total number of attempts (0: generate once, skip
validation).

The pipeline never touches the session or a view: it reads ``Request.messages``, reports
through the sink, and returns a ``ComponentOutcome``.  That is what lets the flow pipeline
call it for a custom node of a flow.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import Any

from lfassist_jupyter import settings
from lfassist_jupyter.artifacts.component import MAX_CODE_CHARS
from lfassist_jupyter.core.component.extract import extract_component_code, guess_class_name
from lfassist_jupyter.core.component.prompts import generation_system_prompt, retry_message
from lfassist_jupyter.core.component.repair import REPAIR_DEADLINE, Repaired, arepair_until_valid
from lfassist_jupyter.core.events import ProgressEvent
from lfassist_jupyter.core.offload import Skipped, call, repair_round
from lfassist_jupyter.core.outcome import ComponentOutcome
from lfassist_jupyter.core.pipeline import Request, Sink
from lfassist_jupyter.core.request_log import log, log_event, log_request_error
from lfassist_jupyter.errors import ConfigError, ProviderError
from lfassist_jupyter.ports import ComponentValidator
from lfassist_jupyter.sandbox.answers import Reference
from lfassist_jupyter.validation.report import Finding, ValidationReport
from lfassist_jupyter.validation.static import validate_static

NO_CODE_ERROR = "No ```python code block with a Component class was found."
INLINE_CHARS = 32_000
"""Replies and code up to this size are parsed in a worker thread (``ast`` holds the GIL for
milliseconds); bigger ones in the worker process, where it may hold it for seconds."""
PARSE_DEADLINE = 30.0
"""Seconds extraction or the static phase may take in the worker (1 MB of hostile code: 5-20 s
on a loaded machine); past it the reply has no usable code."""


async def _extract(reply: str) -> str | None:
    """``extract_component_code`` off the event loop."""
    if len(reply) <= INLINE_CHARS:
        return await asyncio.to_thread(extract_component_code, reply)
    try:
        code = await call("extract", reply, deadline=PARSE_DEADLINE)
    except Skipped as exc:
        log.warning("Extracting the code was stopped (%s); the reply is taken as having none.", exc)
        return None
    return code if isinstance(code, str) else None


async def _validate_static(code: str) -> ValidationReport:
    """``validate_static`` off the event loop; past the deadline, a failed static report."""
    if len(code) <= INLINE_CHARS or len(code) > MAX_CODE_CHARS:  # small, or refused unparsed
        return await asyncio.to_thread(validate_static, code)
    try:
        return ValidationReport.model_validate(await call("static", code, deadline=PARSE_DEADLINE))
    except (Skipped, ValueError) as exc:
        message = f"The code could not be analysed ({exc}); a component is far smaller and simpler."
        finding = Finding(severity="error", phase="static", message=message)
        return ValidationReport(
            is_valid=False, phase="static", error=message, findings=[finding], phases_run=["static"]
        )


def check_max_retries(value: object) -> int:
    """``max_retries`` as the spec defines it: total attempts, an integer from 0 to 10 (the bounds
    are the setting's, ``lfassist_jupyter.settings``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        low, high = settings.bounds("max_retries")
        raise ConfigError(f"max_retries (total attempts) must be an integer from {low:g} to {high:g}, not {value!r}.")
    return settings.check("max_retries", value, source="max_retries")


@dataclass
class _Job:
    """One request's state across its attempts (PocketFlow's shared store, for one request)."""

    request: Request
    sink: Sink
    max_attempts: int
    reference: Reference | None
    """The installed lfx, for the generation prompt and the repair pass."""
    messages: list[dict[str, str]]
    """The conversation for the next attempt: grows by the reply and the error on each retry."""
    code: str | None = None
    """The latest code the model wrote (an attempt without code keeps the one before)."""
    class_name: str | None = None
    report: ValidationReport | None = None
    """The validation report of the latest attempt."""

    def progress(self, step: str, attempt: int, message: str, **extra: Any) -> None:
        self.sink(ProgressEvent(step=step, attempt=attempt, max_attempts=self.max_attempts, message=message, **extra))


class ComponentPipeline:
    """Generates one Langflow custom component and repairs it until it validates.

    Args:
        validator: the runtime validator port; None keeps the static and security phases only.
        max_retries: total attempts (0..10); 0 skips validation.
        repair: run the zero-call repair pass on a failed attempt before asking the model again
            (False: every failure goes to the model, as the benchmark's baseline does).
        repair_deadline: seconds one repair round may take before it is skipped.
    """

    def __init__(
        self,
        validator: ComponentValidator | None,
        max_retries: int = 3,
        *,
        repair: bool = True,
        repair_deadline: float = REPAIR_DEADLINE,
    ) -> None:
        self.validator = validator
        self.max_retries = check_max_retries(max_retries)
        self.repair = repair
        self.repair_deadline = repair_deadline

    async def run(self, request: Request, sink: Sink) -> ComponentOutcome:
        """Attempts until one validates (or is repaired), the attempts run out, or a failure
        no retry can fix; each attempt is generate -> extract -> validate -> repair."""
        validate = self.max_retries > 0
        job = _Job(request, sink, self.max_retries or 1, await self._reference(), list(request.messages))
        system = generation_system_prompt(job.reference)
        for attempt in range(1, job.max_attempts + 1):
            log_event(
                logging.INFO,
                "assistant.generation.attempt",
                request_id=request.request_id,
                attempt=attempt,
                max_retries=self.max_retries,
            )
            first = "Generating component..."
            job.progress(
                "generating_component",
                attempt,
                first if attempt == 1 else f"Generating a fix (attempt {attempt} of {job.max_attempts})...",
            )
            try:
                reply = await self._generate(request, system, job.messages)
            except ProviderError as exc:
                log_request_error(request.request_id, exc)
                return ComponentOutcome(
                    result=str(exc),
                    code=job.code,
                    class_name=job.class_name,
                    attempts=attempt - 1 if validate else 0,
                    error=str(exc),
                    report=job.report,
                )
            job.progress("generation_complete", attempt, "Generation complete.")
            job.progress("extracting_code", attempt, "Extracting code...")
            new_code = await _extract(reply)
            if new_code is None and attempt == 1:
                # The model answered in prose (e.g. asked for details): show it as is.
                return ComponentOutcome(result=reply)
            if new_code is not None:
                job.code, job.class_name = new_code, guess_class_name(new_code)
            if not validate:
                return ComponentOutcome(result=reply, code=job.code, class_name=job.class_name)
            outcome = await self._check(job, attempt, reply, new_code)
            if outcome is not None:
                return outcome
            self._retry(job, attempt, reply)
        raise AssertionError("unreachable: the last attempt always returns")  # pragma: no cover

    async def _check(self, job: _Job, attempt: int, reply: str, new_code: str | None) -> ComponentOutcome | None:
        """Validate this attempt's code; on failure the zero-call repair pass, then the verdict.
        The outcome when the request is done (validated, repaired or out of attempts), else None."""
        job.progress(
            "validating",
            attempt,
            f"Validating (attempt {attempt} of {job.max_attempts})...",
            class_name=job.class_name,
        )
        if new_code is None:
            report = ValidationReport(is_valid=False, phase="static", error=NO_CODE_ERROR)
        else:
            report = await self._validate(new_code)
            job.class_name = report.class_name or job.class_name
        job.report = report
        request_id = job.request.request_id
        if report.is_valid:
            log_event(logging.INFO, "assistant.validation.success", request_id=request_id,
                      class_name=job.class_name, attempts=attempt)  # fmt: skip
            job.progress(
                "validated",
                attempt,
                f"{job.class_name} validated.",
                class_name=job.class_name,
                reduced_isolation=report.reduced_isolation,
            )
            return ComponentOutcome(
                result=reply, code=job.code, class_name=job.class_name, validated=True, attempts=attempt, report=report
            )
        error = report.error or "Validation failed."
        job.progress(
            "validation_failed",
            attempt,
            f"Validation failed ({report.phase}).",
            error=error,
            class_name=job.class_name,
            component_code=job.code,
        )
        repaired = await self._repair(new_code, report, job.reference, job.progress, attempt) if new_code else None
        if repaired is not None:
            class_name = repaired.report.class_name or job.class_name
            log_event(logging.INFO, "assistant.validation.repaired", request_id=request_id, class_name=class_name,
                      attempts=attempt, changes=len(repaired.changes))  # fmt: skip
            job.progress(
                "validated",
                attempt,
                f"{class_name} validated.",
                class_name=class_name,
                reduced_isolation=repaired.report.reduced_isolation,
            )
            return ComponentOutcome(
                result=reply.replace(new_code or "", repaired.code) if new_code else reply,
                code=repaired.code,
                class_name=class_name,
                validated=True,
                attempts=attempt,
                report=repaired.report,
                repairs=repaired.changes,
            )
        if attempt == job.max_attempts or not report.retryable:
            log_event(logging.ERROR, "assistant.validation.exhausted", request_id=request_id, error=error,
                      attempts=attempt, code_snippet=(job.code or "")[:200])  # fmt: skip
            plural = "s" * (attempt > 1)
            return ComponentOutcome(
                result=f"The component could not be validated after {attempt} attempt{plural}: {error}",
                code=job.code,
                class_name=job.class_name,
                attempts=attempt,
                error=error,
                report=report,
            )
        return None

    def _retry(self, job: _Job, attempt: int, reply: str) -> None:
        """Another attempt follows: the model gets its reply back with the error and the code."""
        error = (job.report.error if job.report else None) or "Validation failed."
        log_event(logging.WARNING, "assistant.validation.failed", request_id=job.request.request_id, error=error,
                  attempt=attempt, class_name=job.class_name)  # fmt: skip
        job.progress(
            "retrying",
            attempt + 1,
            f"Retrying with the error as context (attempt {attempt + 1} of {job.max_attempts})...",
        )
        retry = retry_message(error=error, code=job.code or reply, attempt=attempt, max_attempts=job.max_attempts)
        job.messages = [*job.messages, {"role": "assistant", "content": reply}, {"role": "user", "content": retry}]

    async def _generate(self, request: Request, system: str, messages: list[dict[str, str]]) -> str:
        chunks = request.provider.stream(request.call(system, messages))
        return "".join([chunk async for chunk in chunks])

    async def _reference(self) -> Reference | None:
        if self.validator is None:
            return None
        try:
            reference = await self.validator.areference()
            # A validator of the user's own may still answer the reference's JSON: checked here.
            return Reference.model_validate(reference) if isinstance(reference, dict) else reference
        except Exception as exc:
            log.warning("Could not describe the installed lfx (%s); using the built-in reference.", exc)
            return None

    async def _repair(
        self, code: str, report: ValidationReport, reference: Reference | None, progress: Any, attempt: int
    ) -> Repaired | None:
        """The zero-call repair pass on a failed attempt: the repaired code if it validates, else None
        (the model then gets the original error and code)."""
        if not self.repair or not report.retryable or self.validator is None:
            return None

        def announce(changes: list[str]) -> None:
            plural = "s" * (len(changes) > 1)
            progress("repairing", attempt, f"Repairing {len(changes)} mistake{plural} without a model call...",
                     changes=changes)  # fmt: skip

        in_worker = functools.partial(repair_round, deadline=self.repair_deadline)
        try:
            return await arepair_until_valid(
                code, report, reference, self._validate, on_repair=announce, repair=in_worker
            )
        except Skipped as exc:
            log.warning("The repair pass was skipped (%s); asking the model.", exc)
            progress("repairing", attempt, f"Repair skipped ({exc}); asking the model.")
            return None
        except Exception as exc:  # a validator failure mid-repair: the model retry still follows
            log.warning("The repair pass failed (%s); asking the model.", exc)
            return None

    async def _validate(self, code: str) -> ValidationReport:
        report = await _validate_static(code)
        if not report.is_valid or self.validator is None:
            return report
        return await self.validator.avalidate(code)
