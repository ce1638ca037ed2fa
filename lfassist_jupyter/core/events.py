"""The typed events the engine streams: the Langflow Assistant spec's SSE events.

Each event is a pydantic model discriminated by ``event``; ``model_dump()`` is exactly
the JSON the spec puts on the wire (optional fields that are unset are left out, as the
spec's examples do), so a view can forward events to JavaScript or an SSE client as is.
``attempt`` is 1-based everywhere, unlike Langflow which mixes 0- and 1-based counters.

The stream carries the whole result: the terminal event also holds what is not spec data
but a view needs -- the typed outcome behind ``complete`` (its validation report, generated
components, probe run) and the request's metrics record (calls, tokens, seconds) on every
terminal event.  Those fields are excluded from ``model_dump()``, so the wire stays the
spec's, and a view never has to read them back from the ``Assistant``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, InstanceOf

from lfassist_jupyter.core.outcome import Outcome
from lfassist_jupyter.core.wire import CompleteData, WireModel
from lfassist_jupyter.metrics import RequestRecord

__all__ = [
    "ATTEMPT_STEPS",
    "STEP_LABELS",
    "TERMINAL_EVENTS",
    "CancelledEvent",
    "CompleteData",
    "CompleteEvent",
    "ErrorEvent",
    "Event",
    "ProgressEvent",
    "Step",
    "TokenEvent",
    "step_label",
]

Step = Literal[
    "generating_component",  # a component request was recognised; generation starts
    "generating",  # a question is being answered
    "generation_complete",  # the model finished writing
    "extracting_code",  # pulling the Python block out of the reply
    "validating",  # static + runtime (+ smoke) validation
    "validated",  # the component passed
    "validation_failed",  # it did not; error and code are attached
    "repairing",  # zero-call repairs of mechanical mistakes (no model call); the changes are attached
    "retrying",  # another attempt with the error as context
    # The flow pipeline's steps:
    "planning_flow",  # the model chooses components from the light catalogue
    "generating_flow",  # the model writes the flow's spec
    "building_flow",  # lfx's builder turns the spec into Langflow JSON (deterministic repairs first)
    "validating_flow",  # validate_flow: components, edges, types, cycles, required inputs
    "running_flow",  # the probe run in the sandbox (models stubbed)
    "repairing_flow",  # another attempt with the top errors as context
    "flow_validated",  # the flow built, validated and probe-ran
    "flow_failed",  # this attempt failed; the error is attached
]

STEP_LABELS: dict[str, str] = {
    "generating_component": "Generating component",
    "generating": "Answering",
    "generation_complete": "Generation complete",
    "extracting_code": "Extracting code",
    "validating": "Validating",
    "validated": "Validated",
    "validation_failed": "Validation failed",
    "repairing": "Repairing without a model call",
    "retrying": "Retrying",
    "planning_flow": "Choosing components",
    "generating_flow": "Writing the flow",
    "building_flow": "Building the flow",
    "validating_flow": "Validating the flow",
    "running_flow": "Probe run",
    "repairing_flow": "Repairing the flow",
    "flow_validated": "Flow validated",
    "flow_failed": "Flow failed",
}
"""The one registry of steps and what a person reads for them: the magic's live view uses it
and the panel sends the label to the JavaScript view, which renders what it is sent."""

ATTEMPT_STEPS: frozenset[str] = frozenset(
    {"generating_component", "validating", "retrying", "generating_flow", "validating_flow", "repairing_flow"}
)
"""Steps where the panel shows "attempt N of M" (the others repeat within an attempt)."""


def step_label(step: str, reduced_isolation: str | None = None) -> str:
    """The label of ``step``; an unknown step (from a newer pipeline) shows its own name.

    A "validated" step of a sandbox that ran without its OS-level layer says so, with why
    (``reduced_isolation``): "Validated (reduced isolation: ...)", as every verdict does."""
    label = STEP_LABELS.get(step, step)
    if reduced_isolation and step in ("validated", "flow_validated"):
        return f"{label} (reduced isolation: {reduced_isolation})"
    return label


class ProgressEvent(WireModel):
    event: Literal["progress"] = "progress"
    step: Step
    attempt: int = Field(ge=1)
    max_attempts: int = Field(ge=0)
    message: str
    error: str | None = None
    class_name: str | None = None
    component_code: str | None = None
    changes: list[str] | None = None  # "repairing": one line per change
    reduced_isolation: str | None = None
    """On "validated" and "flow_validated": why the sandbox behind the verdict had reduced
    isolation (no OS-level layer); None under full isolation."""


class TokenEvent(WireModel):
    event: Literal["token"] = "token"
    chunk: str


class CompleteEvent(WireModel):
    event: Literal["complete"] = "complete"
    data: CompleteData
    outcome: Outcome | None = Field(default=None, exclude=True, repr=False)
    """The pipeline's typed outcome (reports, custom components, the probe run): what a view
    draws beyond the spec's ``data``.  Not on the wire."""
    usage: InstanceOf[RequestRecord] | None = Field(default=None, exclude=True, repr=False)
    """The request's metrics record (calls, tokens, seconds), closed: for views, not on the wire."""


class ErrorEvent(WireModel):
    event: Literal["error"] = "error"
    message: str
    usage: InstanceOf[RequestRecord] | None = Field(default=None, exclude=True, repr=False)
    """The request's metrics record (calls, tokens, seconds), closed: for views, not on the wire."""


class CancelledEvent(WireModel):
    event: Literal["cancelled"] = "cancelled"
    message: str | None = None
    usage: InstanceOf[RequestRecord] | None = Field(default=None, exclude=True, repr=False)
    """The request's metrics record (calls, tokens, seconds), closed: for views, not on the wire."""


Event = Annotated[
    ProgressEvent | TokenEvent | CompleteEvent | ErrorEvent | CancelledEvent,
    Field(discriminator="event"),
]
"""Any event of a request's stream (discriminated by ``event``)."""

TERMINAL_EVENTS: frozenset[str] = frozenset({"complete", "error", "cancelled"})
"""The events that end a stream: exactly one of them is always the last."""
