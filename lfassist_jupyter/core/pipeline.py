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
from lfassist_jupyter.providers.base import Provider

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
    request_id: str = "-"
    """For log records: every record of one request carries the same id."""
    max_tokens: int = 4096
    warnings: list[str] = field(default_factory=list)
    """Notices for the user (e.g. the request was truncated), carried into the result."""


class Pipeline(Protocol):
    """Turns a request into an outcome, emitting events on the way."""

    async def run(self, request: Request, sink: Sink) -> Outcome: ...
