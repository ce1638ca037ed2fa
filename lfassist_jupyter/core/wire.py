"""The spec's wire data: the base of every event model and the ``complete`` event's ``data``.

Kept apart from ``events.py`` so the outcomes (``outcome.py``) can build their ``CompleteData``
while the ``complete`` event itself carries the typed outcome: events depend on outcomes,
outcomes on this module, and nothing here depends back.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer

from lfassist_jupyter.sandbox.answers import FlowRun


class WireModel(BaseModel):
    """A frozen model whose ``model_dump()`` is the spec's JSON: optional keys that do not
    apply are absent, not null, as the spec's examples show them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _drop_unset_optionals(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None}


class CompleteData(WireModel):
    result: str
    validated: bool
    class_name: str | None = None
    component_code: str | None = None
    validation_attempts: int = 0
    # Extensions of the spec, present only when they apply:
    validation_error: str | None = None  # why the last attempt failed (validated is False)
    intent: str | None = None  # one of intent.INTENTS
    warnings: list[str] | None = None  # e.g. "your request was truncated"
    repairs: list[str] | None = None  # what the zero-call repair pass changed in the validated code
    # Flows only (absent for components and answers, so their wire JSON is the spec's):
    flow: dict[str, Any] | None = None  # the Langflow flow JSON (importable in Langflow's UI)
    spec: str | None = None  # the flow in lfx's compact spec
    run: FlowRun | None = None  # the probe run: {ok, text, error, stubbed, outputs, seconds} on the wire
