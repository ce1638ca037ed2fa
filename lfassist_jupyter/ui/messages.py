"""The panel's wire protocol to its JavaScript view, typed: transcript messages and progress steps.

Both the live results of a request and the restore of a stored session build their
messages here, so the view always gets the same fields with the same types.  Keys whose
value is None are left out (the view treats a missing key as "not known").
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from lfassist_jupyter.core.events import ATTEMPT_STEPS, ProgressEvent, step_label
from lfassist_jupyter.core.session import Session, Turn
from lfassist_jupyter.sandbox.answers import FlowRun, RealRun
from lfassist_jupyter.ui.render.markdown import render_markdown
from lfassist_jupyter.validation.report import FieldSummary, ValidationReport

if TYPE_CHECKING:
    from lfassist_jupyter.flows.catalog import Catalog

MessageKind = Literal["text", "component", "failure", "flow", "run", "cancelled", "error"]
CANCELLED_NOTE = "Request cancelled"


class FlowLine(BaseModel):
    """One line of a flow card's summary: the verdict, an error, a need, the probe run."""

    text: str
    ok: bool | None = None  # True green, False red, None amber (a need, a stub, a note)


class PanelMessage(BaseModel):
    """One entry of ``ChatPanel.messages``."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:10])
    role: Literal["user", "assistant"]
    kind: MessageKind
    text: str | None = None
    html: str | None = None  # rendered by `render_markdown` (ui/render/markdown.py), never raw model output
    note: str | None = None  # cancelled messages: why
    # component and failure cards:
    class_name: str | None = None
    validated: bool | None = None
    badge: str | None = None
    """The verdict as a card says it (``ui.render.style.verdict``): "validated", "not validated",
    "validated (reduced isolation: ...)", on a restored card too (the stored turn keeps the isolation)."""
    attempts: int | None = None
    code: str | None = None
    code_html: str | None = None
    error: str | None = None
    steps: list[str] | None = None  # labels of the steps the request went through
    inputs: list[dict[str, Any]] | None = None
    outputs: list[dict[str, Any]] | None = None
    # flow cards (kind "flow"); the flow JSON itself stays in Python (ChatPanel keeps it by id):
    flow_name: str | None = None
    spec: str | None = None
    cell: str | None = None  # the re-runnable %%assist_flow cell Insert puts in the notebook
    picture_html: str | None = None
    """Inline SVG made by `ui.render.picture.flow_picture` from escaped text (no script); the view inserts it."""
    lines: list[FlowLine] | None = None
    provision: str | None = None
    """A flow not judged here: what judging it in a separate environment would install (the card's
    **Judge elsewhere** button says yes; ``ChatPanel.provision_flow``)."""
    # every answer of a live request (not restored ones: the numbers are not stored):
    usage: str | None = None
    """One line: model calls, tokens and seconds for this request (``usage_line``)."""
    notes: list[str] | None = None
    """What the user must know about how it was answered, e.g. a model fallback."""
    _flow: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def flow(self) -> dict[str, Any] | None:
        """A flow card's Langflow JSON (stored with the session); never sent to the view."""
        return self._flow

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)

    def summary(self) -> str:
        """One line for a listing (``%assist history``)."""
        if self.class_name:
            return self.class_name
        if self.flow_name:
            return f"flow: {self.flow_name}"
        lines = (self.text or self.note or "").strip().splitlines() or [""]
        return lines[0][:80]


class ProgressStep(BaseModel):
    """One step of the request in flight, as the view renders it (the label comes from Python)."""

    step: str
    label: str
    attempt: int
    max_attempts: int
    show_attempt: bool  # render "attempt N of M"
    failed: bool
    done: bool
    error: str | None = None

    @classmethod
    def from_event(cls, event: ProgressEvent) -> ProgressStep:
        return cls(
            step=event.step,
            label=step_label(event.step, event.reduced_isolation),
            attempt=event.attempt,
            max_attempts=event.max_attempts,
            show_attempt=event.step in ATTEMPT_STEPS and event.max_attempts > 1,
            failed=event.step in ("validation_failed", "flow_failed"),
            done=event.step in ("validated", "flow_validated"),
            error=event.error,
        )


class PlanVariable(BaseModel):
    """A variable a real run wants, as the consent asks for it: its name, never its value."""

    name: str
    where: str
    """The key field that names it: ``Language Model.api_key``."""
    allowed: bool
    """Allowed for real runs in this panel session."""
    present: bool
    """Whether the kernel's environment has a value for it (the value stays in Python)."""


class RealRunPlan(BaseModel):
    """What the panel shows on a flow card before a real run (``ChatPanel.real_run``): what the run
    would be given and reach, and what is missing. Names and hosts only."""

    id: str
    """The flow card's message id."""
    variables: list[PlanVariable] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    """The allow-list: ``api.openai.com:443 (openai for Language Model)``."""
    extra_hosts: list[str] = Field(default_factory=list)
    """Hosts the user added in this session (``--allow-host``)."""
    notes: list[str] = Field(default_factory=list)
    running: bool = False
    error: str | None = None


def real_run_plan(message_id: str, plan: Any, allowed: set[str], extra_hosts: list[str]) -> RealRunPlan:
    """A ``flows.real_run.RunPlan`` as the consent shows it: each wanted variable with whether this session
    allowed it and whether the kernel has it -- never its value."""
    import os

    seen: dict[str, list[str]] = {}
    for name, where in plan.variables:
        seen.setdefault(name, []).append(where)
    return RealRunPlan(
        id=message_id,
        variables=[
            PlanVariable(name=n, where=", ".join(w), allowed=n in allowed, present=bool(os.environ.get(n)))
            for n, w in seen.items()
        ],
        hosts=[f"{h} ({h.why})" for h in plan.hosts],
        extra_hosts=list(extra_hosts),
        notes=list(plan.notes),
    )


def run_message(*, flow_name: str, run: RealRun, input_text: str) -> PanelMessage:
    """A real run's answer under its flow card: the answer as text (the run's output is untrusted:
    the view inserts it as a text node), where it ran, what it was given, what the fence refused."""
    from lfassist_jupyter.ui.render.flow import run_lines

    lines = [FlowLine(text=t, ok=ok) for t, ok in run_lines(run, input_text)]
    return PanelMessage(
        role="assistant",
        kind="run",
        flow_name=flow_name,
        text=run.text if run.ok else None,
        validated=run.ok,
        error=None if run.ok else (run.error or "the run failed."),
        lines=lines,
    )


def user_message(text: str) -> PanelMessage:
    return PanelMessage(role="user", kind="text", text=text)


def answer_message(text: str) -> PanelMessage:
    return PanelMessage(role="assistant", kind="text", text=text, html=render_markdown(text))


def error_message(text: str) -> PanelMessage:
    return PanelMessage(role="assistant", kind="error", text=text)


def cancelled_message(text: str = "", note: str | None = None) -> PanelMessage:
    html = render_markdown(text) if text else ""
    return PanelMessage(role="assistant", kind="cancelled", text=text, html=html, note=note or CANCELLED_NOTE)


def usage_line(record: Any, model: str | None = None) -> str | None:
    """The request's cost, from its metrics record (a terminal event's ``usage``, ``AssistResult.usage``):
    "2 model calls · 1,234 tokens (1,000 in, 234 out) · 3.4 s · gpt-4o".  None without a record."""
    if record is None:
        return None
    calls = int(getattr(record, "model_calls", 0) or 0)
    tokens_in = int(getattr(record, "prompt_tokens", 0) or 0)
    tokens_out = int(getattr(record, "completion_tokens", 0) or 0)
    seconds = float(getattr(record, "duration_s", 0.0) or 0.0)
    parts = [f"{calls} model call{'' if calls == 1 else 's'}"]
    if tokens_in or tokens_out:
        parts.append(f"{tokens_in + tokens_out:,} tokens ({tokens_in:,} in, {tokens_out:,} out)")
    else:
        parts.append("tokens not reported")
    parts.append(f"{seconds:.1f} s")
    if model := model or getattr(record, "model", ""):
        parts.append(model)
    return " · ".join(parts)


def component_message(
    *,
    code: str,
    class_name: str | None,
    validated: bool,
    attempts: int | None,
    error: str | None = None,
    steps: list[str] | None = None,
    report: ValidationReport | None = None,
    repairs: list[str] | None = None,
    reduced_isolation: str | None = None,
) -> PanelMessage:
    from lfassist_jupyter.ui.render.markdown import highlight
    from lfassist_jupyter.ui.render.style import verdict

    def fields(items: list[FieldSummary]) -> list[dict[str, Any]]:
        return [item.model_dump() for item in items]

    return PanelMessage(
        role="assistant",
        kind="component" if validated else "failure",
        class_name=class_name,
        validated=validated,
        badge=verdict(validated, reduced_isolation)[0],
        attempts=attempts,
        code=code,
        code_html=highlight(code),
        error=error or "",
        steps=steps or [],
        inputs=fields(report.inputs) if report else [],
        outputs=fields(report.outputs) if report else [],
        # What the zero-call repair pass changed (no model call), one line each:
        lines=[FlowLine(text=f"Repaired: {change}") for change in repairs] if repairs else None,
    )


def flow_message(
    *,
    flow: dict[str, Any] | None,
    spec: str | None,
    report: Any = None,
    run: FlowRun | None = None,
    validated: bool | None = None,
    attempts: int | None = None,
    error: str | None = None,
    steps: list[str] | None = None,
    reduced_isolation: str | None = None,
) -> PanelMessage:
    """A flow card: name, picture, validation summary and probe run; Insert/Save/Register/Run act on it.

    It renders what it is given and nothing more: no validation, no build (a stored session's
    card shows the verdict it was stored with).
    """
    from lfassist_jupyter.ui.render.flow import flow_cell_source, flow_name, flow_picture_html, report_lines, run_lines
    from lfassist_jupyter.ui.render.style import verdict

    said = report_lines(report)
    if report is None and flow is not None and validated is not None:
        text, ok = verdict(bool(validated), reduced_isolation)
        said = [(f"Flow {text}", ok)]
    lines = [FlowLine(text=t, ok=ok) for t, ok in [*said, *run_lines(run)]]
    if error and not validated:
        lines.insert(0, FlowLine(text=error.splitlines()[0][:300], ok=False))
    ok = bool(report.is_valid) if validated is None and report is not None else bool(validated)
    unjudged = report is not None and report.verdict == "not_judged"
    plan = report.provision if unjudged else None
    message = PanelMessage(
        role="assistant",
        kind="flow",
        flow_name=flow_name(flow) if flow is not None else _spec_name(spec) or flow_name(None),
        validated=ok,
        badge="not judged here" if unjudged else verdict(ok, reduced_isolation)[0],
        provision=plan.summary() if plan is not None and not plan.error else None,
        attempts=attempts,
        spec=spec or "",
        cell=flow_cell_source(spec) if spec else None,
        picture_html=flow_picture_html(flow),
        lines=lines,
        error=error or None,
        steps=steps or [],
    )
    message._flow = flow
    return message


def flow_from_spec(spec: str, catalog: Catalog) -> dict[str, Any] | None:
    """Build a flow from a card's spec, for a button on a card that has no flow JSON (a session
    stored before flows were kept as data). Built in the catalogue's sandbox like any spec;
    showing a conversation never calls this."""
    try:
        from lfassist_jupyter.flows import build_flow, extract_spec

        return build_flow(extract_spec(spec), catalog=catalog).flow
    except Exception:  # an unbuildable stored spec still shows as a card with its text
        return None


def turn_message(turn: Turn) -> PanelMessage:
    if turn.role == "user":
        return user_message(turn.original or turn.content)
    if turn.kind == "component":
        return component_message(
            code=turn.content,
            class_name=turn.class_name,
            validated=bool(turn.validated),
            attempts=turn.attempts,
            reduced_isolation=turn.reduced_isolation,
        )
    if turn.kind == "flow":
        stored = getattr(turn, "flow", None)
        return flow_message(  # the stored JSON as data: showing a conversation builds and runs nothing
            flow=stored if isinstance(stored, dict) else None,
            spec=_spec_of(turn.content),
            validated=turn.validated,
            attempts=turn.attempts,
            reduced_isolation=turn.reduced_isolation,
        )
    if turn.kind == "cancelled":
        return cancelled_message()
    return answer_message(turn.content)


def transcript(session: Session) -> list[PanelMessage]:
    """A stored session as the panel shows it; an unanswered last request shows as cancelled
    (the kernel stopped mid-request)."""
    messages = [turn_message(turn) for turn in session.turns]
    if session.turns and session.turns[-1].role == "user":
        messages.append(cancelled_message())
    return messages


def _spec_name(spec: str | None) -> str | None:
    """The ``name:`` line of a spec (a card without flow JSON still shows its flow's name)."""
    import re

    m = re.search(r"^name:[ \t]*(\S[^\n]*)$", spec or "", re.MULTILINE)
    return m.group(1).strip()[:200] if m else None


def _spec_of(text: str) -> str:
    try:
        from lfassist_jupyter.flows import extract_spec

        return extract_spec(text)
    except Exception:
        return text
