"""What a pipeline returns: the typed ``Outcome`` of a request.

Outcomes are a discriminated union on ``kind`` (component | flow | answer): a pipeline
returns one, the assistant writes the conversation from it and turns it into the spec's
``complete`` event (``complete_data``), whose wire JSON for components is exactly the
spec's.  The ``complete`` event carries the outcome itself too (``events.CompleteEvent``), so
this module sits below the events: it depends on the wire models (``wire.py``) and nothing of
the stream; ``result.py`` folds the stream into the view-facing ``AssistResult``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lfassist_jupyter.core.intent import GENERATE_COMPONENT, QUESTION
from lfassist_jupyter.core.wire import CompleteData
from lfassist_jupyter.flows.results import FlowReport
from lfassist_jupyter.sandbox.answers import FlowRun
from lfassist_jupyter.validation.report import ValidationReport

__all__ = [
    "AnswerOutcome",
    "BuiltinComponent",
    "ComponentOutcome",
    "FlowOutcome",
    "Outcome",
    "flow_reduced_isolation",
]


class _Outcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    result: str
    """What the user reads: the answer, the model's whole reply, or why it failed."""

    def complete_data(self, warnings: list[str] | None = None) -> CompleteData:
        raise NotImplementedError


class ComponentOutcome(_Outcome):
    """The component pipeline's answer.  ``code`` is None when the model wrote no code
    (it answered in prose, e.g. asking for details) or the provider failed at once."""

    kind: Literal["component"] = "component"
    code: str | None = None
    class_name: str | None = None
    validated: bool = False
    attempts: int = 0
    error: str | None = None
    """Why the last attempt failed, or the provider's error; None when validated."""
    report: ValidationReport | None = None
    """The validation report of the last attempt, when there was one."""
    repairs: list[str] = Field(default_factory=list)
    """What the zero-call repair pass changed to make ``code`` validate, one line per change."""

    @property
    def reduced_isolation(self) -> str | None:
        """Why the sandbox that validated ``code`` had reduced isolation; None under full isolation."""
        return self.report.reduced_isolation if self.report is not None else None

    def complete_data(self, warnings: list[str] | None = None) -> CompleteData:
        return CompleteData(
            result=self.result,
            validated=self.validated,
            class_name=self.class_name,
            component_code=self.code,
            validation_attempts=self.attempts,
            validation_error=self.error,
            intent=GENERATE_COMPONENT,
            warnings=warnings or None,
            repairs=self.repairs or None,
        )


class BuiltinComponent(BaseModel):
    """A bundled lfx component that already does what a component request asked for."""

    name: str
    """Its type name in lfx's registry (what a flow spec names)."""
    display_name: str
    description: str = ""
    category: str = ""
    """The sidebar group Langflow lists it under."""
    inputs: list[str] = Field(default_factory=list)
    """``field: type`` lines of its visible inputs."""
    outputs: list[str] = Field(default_factory=list)
    """``name: types`` lines of its outputs."""


class AnswerOutcome(_Outcome):
    """A streamed answer to a question, the refusal of an off-topic request, or (``builtin``)
    the built-in component that a component request asked for, instead of a lookalike."""

    kind: Literal["answer"] = "answer"
    intent: str = QUESTION
    builtin: BuiltinComponent | None = None

    def complete_data(self, warnings: list[str] | None = None) -> CompleteData:
        return CompleteData(result=self.result, validated=False, intent=self.intent, warnings=warnings or None)


class FlowOutcome(_Outcome):
    """The flow pipeline's answer: a Langflow flow, its spec, its validation and its probe run.

    ``flow`` is None when no spec could be built at all (the model answered in prose, or the
    provider failed).  ``validated`` means built, ``validate_flow`` found no error and the
    probe run went through (or failed only for what the user must still provide: ``needs``).
    """

    kind: Literal["flow"] = "flow"
    intent: str
    flow: dict[str, Any] | None = None
    """The flow as Langflow JSON (nodes and edges), importable in Langflow's UI."""
    spec: str | None = None
    """The flow in lfx's compact spec (what a ``%%assist_flow`` cell holds)."""
    validated: bool = False
    attempts: int = 0
    error: str | None = None
    report: FlowReport | None = None
    """``validate_flow``'s verdict on the last attempt (errors, and ``needs`` for a real run)."""
    run: FlowRun | None = None
    """The probe run (its text, what was stubbed, or why it failed)."""
    components: list[ComponentOutcome] = Field(default_factory=list)
    """Custom components generated for this flow (each validated like any component)."""
    notes: list[str] = Field(default_factory=list)
    """What the builder skipped or repaired on the way (a malformed spec line, a renamed port)."""
    reused: dict[str, Any] | None = None
    """The existing flow this one started from (reuse before generate): ``{name, where, inputs}``,
    ``inputs`` being the values taken from the request and put into the flow."""
    base: str | None = None
    """The flow file this flow is ``spec`` applied to (``flows.apply_spec``): the file a loaded flow
    came from, which the inserted ``%%assist_flow --edit FILE`` cell names; None when ``spec``
    alone builds it."""

    @property
    def needs(self) -> list[Any]:
        """What the user must still provide before a real run (model, key, file...)."""
        return list(self.report.needs) if self.report is not None else []

    @property
    def reduced_isolation(self) -> str | None:
        """Why the sandbox that probe-ran this flow (or validated one of its custom components)
        had reduced isolation; None under full isolation."""
        return flow_reduced_isolation(self.run, self.components)

    def complete_data(self, warnings: list[str] | None = None) -> CompleteData:
        merged = [*(warnings or []), *self.notes]
        return CompleteData(
            result=self.result,
            validated=self.validated,
            validation_attempts=self.attempts,
            validation_error=self.error,
            intent=self.intent,
            warnings=merged or None,
            flow=self.flow,
            spec=self.spec,
            run=self.run,
        )


def flow_reduced_isolation(run: FlowRun | None, components: list[ComponentOutcome]) -> str | None:
    """Why the sandbox behind a flow's verdict (its probe run, its custom components'
    validations) had reduced isolation; None under full isolation."""
    found = [run.reduced_isolation if run is not None else None, *(c.reduced_isolation for c in components)]
    return next((why for why in found if why), None)


Outcome = Annotated[ComponentOutcome | AnswerOutcome | FlowOutcome, Field(discriminator="kind")]
