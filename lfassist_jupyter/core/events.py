"""The typed events the engine streams: the Langflow Assistant spec's SSE events.

Each event is a pydantic model discriminated by ``event``; ``model_dump()`` is exactly
the JSON the spec puts on the wire (optional fields that are unset are left out, as the
spec's examples do), so a view can forward events to JavaScript or an SSE client as is.
``attempt`` is 1-based everywhere, unlike Langflow which mixes 0- and 1-based counters.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_serializer

Step = Literal[
    "generating_component",  # a component request was recognised; generation starts
    "generating",  # a question is being answered
    "generation_complete",  # the model finished writing
    "extracting_code",  # pulling the Python block out of the reply
    "validating",  # static + runtime (+ smoke) validation
    "validated",  # the component passed
    "validation_failed",  # it did not; error and code are attached
    "retrying",  # another attempt with the error as context
]

STEPS: tuple[str, ...] = Step.__args__  # type: ignore[attr-defined]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _drop_unset_optionals(self, handler: Any) -> dict[str, Any]:
        # The spec's optional keys are absent, not null, when they do not apply.
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None}


class ProgressEvent(_Event):
    event: Literal["progress"] = "progress"
    step: Step
    attempt: int = Field(ge=1)
    max_attempts: int = Field(ge=0)
    message: str
    error: str | None = None
    class_name: str | None = None
    component_code: str | None = None


class TokenEvent(_Event):
    event: Literal["token"] = "token"
    chunk: str


class CompleteData(_Event):
    result: str
    validated: bool
    class_name: str | None = None
    component_code: str | None = None
    validation_attempts: int = 0
    # Extensions of the spec, present only when they apply:
    validation_error: str | None = None  # why the last attempt failed (validated is False)
    intent: str | None = None  # generate_component | question | off_topic
    warnings: list[str] | None = None  # e.g. "your request was truncated"


class CompleteEvent(_Event):
    event: Literal["complete"] = "complete"
    data: CompleteData


class ErrorEvent(_Event):
    event: Literal["error"] = "error"
    message: str


class CancelledEvent(_Event):
    event: Literal["cancelled"] = "cancelled"
    message: str | None = None


Event = Annotated[
    ProgressEvent | TokenEvent | CompleteEvent | ErrorEvent | CancelledEvent,
    Field(discriminator="event"),
]

EventAdapter: TypeAdapter[Any] = TypeAdapter(Event)


def parse_event(data: dict[str, Any] | str | bytes) -> Any:
    """Turn wire JSON (a dict or a string) back into a typed event."""
    if isinstance(data, (str, bytes)):
        return EventAdapter.validate_json(data)
    return EventAdapter.validate_python(data)
