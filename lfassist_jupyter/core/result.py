"""What a request leaves behind for views: ``AssistResult``, folded from its events.

``AssistResult`` is what views and blocking callers get: one object, not a stream.  It is
assembled from the events alone (``ResultBuilder``), so what a view shows live and what it
gets at the end never disagree: the ``complete`` event carries the pipeline's typed outcome
(``outcome.py``) and its validation report, and every terminal event the request's metrics
record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lfassist_jupyter.core.events import Event
from lfassist_jupyter.core.intent import INTENT_KIND, ResultKind
from lfassist_jupyter.core.outcome import AnswerOutcome, BuiltinComponent, ComponentOutcome, FlowOutcome
from lfassist_jupyter.flows.results import FlowReport
from lfassist_jupyter.sandbox.answers import FlowRun
from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:
    from lfassist_jupyter.langflow.client import RegisteredComponent
    from lfassist_jupyter.metrics import RequestRecord

Status = Literal["complete", "error", "cancelled", "running"]


@dataclass
class AssistResult:
    status: Status = "running"
    result: str = ""  # the answer text, or the model's full reply for a component
    intent: str | None = None
    kind: ResultKind | None = None  # component | flow | answer, once complete
    validated: bool = False
    class_name: str | None = None
    code: str | None = None
    attempts: int = 0
    error: str | None = None  # the error event's message, or the last validation error
    warnings: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    """What the zero-call repair pass changed (no model call), one line per change."""
    report: ValidationReport | None = None  # of the last attempt, when there was one
    session_id: str | None = None
    outcome: ComponentOutcome | AnswerOutcome | FlowOutcome | None = field(default=None, repr=False)
    events: list[Event] = field(default_factory=list, repr=False)
    steps: list[str] = field(default_factory=list, repr=False)
    usage: RequestRecord | None = field(default=None, repr=False)
    """What the request cost: model calls, tokens, prompt characters, seconds (``metrics``)."""
    flow: dict[str, Any] | None = field(default=None, repr=False)
    """A flow result's Langflow flow JSON."""
    spec: str | None = None
    """A flow result's spec (lfx's compact format)."""
    run: FlowRun | None = field(default=None, repr=False)
    """A flow result's probe run (``ok``, ``text``, ``stubbed``...)."""
    flow_report: FlowReport | None = field(default=None, repr=False)
    """A flow result's ``validate_flow`` report (errors and ``needs``)."""
    flow_base: str | None = None
    """A flow result's file: the flow file its spec is applied to (a loaded flow's), or None."""
    _registered: RegisteredComponent | None = field(default=None, init=False, repr=False)

    @property
    def builtin(self) -> BuiltinComponent | None:
        """The built-in lfx component offered instead of generating one (then nothing was generated)."""
        return getattr(self.outcome, "builtin", None)

    @property
    def registered(self) -> RegisteredComponent | None:
        """The Langflow component this result was saved as (``%%assist --register``)."""
        return self._registered

    def record_registration(self, registered: RegisteredComponent) -> None:
        """Called by whoever registered the code (the workspace), so the result remembers it."""
        self._registered = registered

    @property
    def ok(self) -> bool:
        return self.status == "complete" and (self.kind not in ("component", "flow") or self.validated)

    @property
    def reduced_isolation(self) -> str | None:
        """Why the sandbox behind "validated" had reduced isolation (no OS-level layer); None under
        full isolation.  Every view that says "validated" says this with it."""
        if self.outcome is not None and self.outcome.kind != "answer":
            return self.outcome.reduced_isolation
        return self.report.reduced_isolation if self.report is not None else None

    def __str__(self) -> str:
        if self.kind == "flow":  # a flow's text is its spec (a custom node's code is in .code)
            return self.spec or self.result or self.error or ""
        return self.code or self.result or self.error or ""

    def __repr__(self) -> str:
        """One line of data for a plain Python REPL or a log.  IPython draws the card (HTML in a
        notebook, the text card in a terminal) through the views' formatters (``ui/formats.py``)."""
        shown: dict[str, Any] = {"status": self.status, "kind": self.kind}
        if self.kind in ("component", "flow"):
            shown.update(class_name=self.class_name, validated=self.validated, attempts=self.attempts)
        if self.validated and self.reduced_isolation:
            shown["reduced_isolation"] = self.reduced_isolation
        if self.error:
            shown["error"] = self.error if len(self.error) <= 80 else self.error[:79] + "…"
        return f"AssistResult({', '.join(f'{k}={v!r}' for k, v in shown.items() if v is not None)})"


class ResultBuilder:
    """Folds a request's events into its ``AssistResult``: the events are the whole story."""

    def __init__(self, session_id: str | None = None) -> None:
        self._r = AssistResult(session_id=session_id)
        self._tokens: list[str] = []

    def add(self, event: Event) -> None:
        r = self._r
        r.events.append(event)
        if event.event == "progress":
            r.steps.append(event.step)
            if event.class_name:
                r.class_name = event.class_name
            if event.component_code:
                r.code = event.component_code
            if event.error:
                r.error = event.error
        elif event.event == "token":
            self._tokens.append(event.chunk)
        elif event.event == "complete":
            d = event.data
            r.status = "complete"
            r.result = d.result
            r.intent = d.intent
            r.kind = INTENT_KIND.get(d.intent or "")
            r.validated = d.validated
            r.class_name = d.class_name or r.class_name
            r.code = d.component_code or r.code
            r.attempts = d.validation_attempts
            r.error = d.validation_error if not d.validated else None
            r.warnings = list(d.warnings or [])
            r.repairs = list(d.repairs or [])
            if r.kind == "flow":
                r.flow, r.spec, r.run = d.flow, d.spec, d.run
                r.code = r.class_name = None  # set from the outcome: only one generated component counts
            self._attach(event.outcome)
            r.usage = event.usage
        elif event.event == "error":
            r.status = "error"
            r.error = event.message
            r.result = "".join(self._tokens)
            r.usage = event.usage
        elif event.event == "cancelled":
            r.status = "cancelled"
            r.error = event.message or "Request cancelled"
            r.result = "".join(self._tokens)
            r.usage = event.usage

    def _attach(self, outcome: ComponentOutcome | AnswerOutcome | FlowOutcome | None) -> None:
        """What the ``complete`` event's outcome adds to its spec data: the reports, and the one
        custom component a flow generated (its code is the result's ``code``)."""
        self._r.outcome = outcome
        if isinstance(outcome, ComponentOutcome):
            self._r.report = outcome.report
        elif isinstance(outcome, FlowOutcome):
            self._r.flow_report = outcome.report
            self._r.flow_base = outcome.base
            made = [c for c in outcome.components if c.code]
            if len(made) == 1:
                self._r.code, self._r.class_name = made[0].code, made[0].class_name
                self._r.report = made[0].report
                self._r.repairs = self._r.repairs or list(made[0].repairs)

    def result(self) -> AssistResult:
        return self._r
