"""What a validation says about a component: the ``ValidationReport``.

One report type serves the engine (which feeds ``error`` back to the model), the magic
and the panel (which show inputs, outputs and warnings), and the benchmarks (timings).
``error`` is short on purpose -- it goes into a prompt -- while ``traceback`` keeps the
whole story for a human.

Two verdicts live side by side and must never be confused:

- ``builds`` is Langflow's: exactly what ``POST /api/v1/custom_component`` answers with
  the same lfx (does ``build_custom_component_template`` succeed?).  ``None`` when lfx was
  not asked (a static-only check, or code too large to send).
- ``findings`` are ours: each an ``error`` (it will break when used, with the evidence),
  a ``warning`` or a ``policy`` note (e.g. it runs shell commands: allowed by Langflow,
  worth knowing).  ``is_valid`` = it builds and has no ``error`` finding.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Phase = Literal["static", "security", "runtime", "smoke"]
SmokeStatus = Literal["passed", "failed", "skipped", "not_run"]
Severity = Literal["error", "warning", "policy"]


class Finding(BaseModel):
    """One thing we found, with how bad it is and where."""

    severity: Severity
    phase: Phase
    message: str
    line: int | None = None
    evidence: str | None = None  # what proves it: lfx's own message, the exception an output raised, ...
    rule: str | None = None  # a short id (e.g. "input-ignored"), so the same fact found twice is shown once


class FieldSummary(BaseModel):
    """One input or output of a component, as Langflow shows it."""

    name: str
    display_name: str | None = None
    type: str | None = None  # input class (MessageTextInput) or output types joined with " | "
    method: str | None = None  # outputs only
    types: list[str] = Field(default_factory=list)  # outputs only


class MissingPackage(BaseModel):
    """A package the code (or a flow) needs that the validating interpreter lacks."""

    module: str
    distribution: str
    fix: str
    """The line that installs it: ``%pip install scikit-learn``."""
    nodes: list[str] = Field(default_factory=list)
    """For a flow: the nodes that need it."""


class SampleInput(BaseModel):
    """One input's sample value in the smoke run, as JSON (the worker's ``sample_record``): what
    a test outside the sandbox sets to repeat it (the extension bundle's tests)."""

    kind: Literal["Message", "Data", "DataFrame", "file", "value", "list", "unknown"]
    text: str | None = None  # Message, file
    data: dict[str, Any] | None = None  # Data
    rows: list[dict[str, Any]] | None = None  # DataFrame
    value: Any = None  # value
    items: list[SampleInput] | None = None  # list


class OutputCall(BaseModel):
    """What one output did when the smoke run called it: the class it returned, or raised."""

    method: str
    returned: str | None = None
    raised: str | None = None


class ValidationReport(BaseModel):
    is_valid: bool  # builds and no error finding (a static-only report: no error finding so far)
    builds: bool | None = None  # Langflow's verdict; None when lfx was not asked
    findings: list[Finding] = Field(default_factory=list)
    phase: Phase | None = None  # the phase that failed; None when valid
    class_name: str | None = None
    error: str | None = None  # concise, meant for the model's retry prompt
    traceback: str | None = None  # full detail, meant for humans
    display_name: str | None = None
    description: str | None = None
    inputs: list[FieldSummary] = Field(default_factory=list)
    outputs: list[FieldSummary] = Field(default_factory=list)
    missing_packages: list[MissingPackage] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    smoke: SmokeStatus = "not_run"
    smoke_reason: str | None = None  # why the smoke phase was skipped, when it was
    smoke_inputs: dict[str, SampleInput] = Field(default_factory=dict)  # input name -> its sample value
    smoke_outputs: dict[str, OutputCall] = Field(default_factory=dict)  # output name -> what it did
    phases_run: list[str] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    lfx_version: str | None = None
    retryable: bool = True  # False when a model cannot fix it (e.g. lfx is not installed)
    reduced_isolation: str | None = None
    """Why the sandbox that ran this validation had reduced isolation (no OS-level layer), set by
    the kernel's sandbox client; None under full isolation or when no sandbox ran.  A view that
    says "valid" or "validated" says this with it."""

    def by_severity(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    @property
    def summary(self) -> str:
        """One line for a status bar or a log."""
        if self.is_valid:
            smoke = {"passed": "smoke-tested", "skipped": "not smoke-tested"}.get(self.smoke, "")
            notes = [n for n in (smoke, self.reduced_isolation and f"reduced isolation: {self.reduced_isolation}") if n]
            return f"{self.class_name}: valid" + (f" ({'; '.join(notes)})" if notes else "")
        return f"{self.class_name or 'component'}: failed in {self.phase} phase: {self.error}"
