"""The contract every pipeline keeps: ``async def run(request, sink) -> Outcome``.

The ``Assistant`` classifies a request once and hands it to the pipeline registered for
its intent (answer, component, and -- next -- flow).  A pipeline:

- reads the conversation only through ``Request.messages`` (a snapshot): it never writes
  the session, so a flow pipeline can call the component pipeline for one custom node
  without that sub-request showing up as a turn of its own;
- reports what it is doing by calling ``sink`` with progress and token events (never a
  terminal event: the assistant ends the stream);
- returns a typed ``Outcome`` (``core/outcome.py``), from which the assistant writes the
  conversation and builds the ``complete`` event.

Provider failures a pipeline can explain become part of its outcome; anything else it
raises (``LfAssistError`` subclasses become one ``error`` event, cancellation a
``cancelled`` one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from lfassist_jupyter.core.events import ProgressEvent, TokenEvent
from lfassist_jupyter.core.outcome import Outcome
from lfassist_jupyter.providers.base import ModelCall, Provider
from lfassist_jupyter.providers.table import Task

Sink = Callable[[ProgressEvent | TokenEvent], None]
"""Where a pipeline sends its progress and token events (the assistant forwards them)."""


@dataclass(frozen=True)
class Request:
    """One request as a pipeline sees it: already cleaned, classified and translated."""

    text: str
    """The request in English (what the classifier translated)."""
    messages: list[dict[str, str]]
    """The conversation for the model, the request itself last (a copy: safe to extend)."""
    provider: Provider
    model: str
    """The model of the request's task (``""``: none is named; the provider picks from its server)."""
    request_id: str = "-"
    """For log records: every record of one request carries the same id."""
    max_tokens: int = 4096
    warnings: list[str] = field(default_factory=list)
    """Notices for the user (e.g. the request was truncated), carried into the result."""
    task: Task = "component"
    """What the request's model calls are for (an error about the model names its setting)."""

    def call(
        self, system: str, messages: list[dict[str, str]], *, max_tokens: int | None = None, temperature: float = 0.2
    ) -> ModelCall:
        """A model call of this request: its model and task, ``max_tokens`` unless given."""
        return ModelCall(
            system=system,
            messages=messages,
            model=self.model,
            task=self.task,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            temperature=temperature,
        )

    @property
    def model_in_use(self) -> str:
        """The model that answers the request now (after a fallback, or the pick of an unnamed one)."""
        return self.provider.model_in_use(self.model, self.task)


class Pipeline(Protocol):
    """Turns a request into an outcome, emitting events on the way."""

    async def run(self, request: Request, sink: Sink) -> Outcome: ...
