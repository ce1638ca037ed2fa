"""``AssistResult``: what a finished request leaves behind, built from its events.

Views (the magic, the panel) and blocking callers want one object, not a stream: the
code, whether it validated, how many attempts, the report, the answer text.  It is
assembled only from the events, so whatever a view shows live and what it gets at the
end can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["complete", "error", "cancelled", "running"]


@dataclass
class AssistResult:
    status: Status = "running"
    result: str = ""  # the answer text, or the model's full reply for a component
    intent: str | None = None
    validated: bool = False
    class_name: str | None = None
    code: str | None = None
    attempts: int = 0
    error: str | None = None  # the error event's message, or the last validation error
    warnings: list[str] = field(default_factory=list)
    report: Any = None  # ValidationReport of the last attempt, when there was one
    session_id: str | None = None
    registered: Any = None  # RegisteredComponent, after %%assist --register
    events: list[Any] = field(default_factory=list, repr=False)
    steps: list[str] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "complete" and (self.intent != "generate_component" or self.validated)

    def __str__(self) -> str:
        return self.code or self.result or self.error or ""

    def _repr_markdown_(self) -> str:
        from lfassist_jupyter._display import result_markdown

        return result_markdown(self)

    def _repr_html_(self) -> str:
        from lfassist_jupyter._display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        from lfassist_jupyter._display import result_text

        return result_text(self)


class ResultBuilder:
    def __init__(self, session_id: str | None = None) -> None:
        self._r = AssistResult(session_id=session_id)
        self._tokens: list[str] = []

    def add(self, event: Any) -> None:
        r = self._r
        r.events.append(event)
        kind = event.event
        if kind == "progress":
            r.steps.append(event.step)
            if event.class_name:
                r.class_name = event.class_name
            if event.component_code:
                r.code = event.component_code
            if event.error:
                r.error = event.error
        elif kind == "token":
            self._tokens.append(event.chunk)
        elif kind == "complete":
            d = event.data
            r.status = "complete"
            r.result = d.result
            r.intent = d.intent
            r.validated = d.validated
            r.class_name = d.class_name or r.class_name
            r.code = d.component_code or r.code
            r.attempts = d.validation_attempts
            r.error = d.validation_error if not d.validated else None
            r.warnings = list(d.warnings or [])
        elif kind == "error":
            r.status = "error"
            r.error = event.message
            r.result = "".join(self._tokens)
        elif kind == "cancelled":
            r.status = "cancelled"
            r.error = event.message or "Request cancelled"
            r.result = "".join(self._tokens)

    def result(self) -> AssistResult:
        return self._r
