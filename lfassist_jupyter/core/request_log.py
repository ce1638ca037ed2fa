"""Structured log records with the spec's event names (``assistant.request.started``, ...).

The event name is the message and the fields go into ``extra``, redacted, so a handler can
ship them as JSON and a notebook never shows a key.
"""

from __future__ import annotations

import logging
from typing import Any

from lfassist_jupyter.redaction import redact

log = logging.getLogger("lfassist_jupyter")


def log_event(level: int, event: str, **fields: Any) -> None:
    safe = {k: redact(v) if isinstance(v, str) else v for k, v in fields.items()}
    log.log(
        level,
        "%s %s",
        event,
        " ".join(f"{k}={v!r}" for k, v in safe.items()),
        extra={"lfassist_event": event, "lfassist_fields": safe},
    )


def log_request_error(request_id: str, exc: BaseException) -> None:
    """``assistant.request.error``: a request (or one provider call of it) failed."""
    log_event(
        logging.ERROR,
        "assistant.request.error",
        request_id=request_id,
        error_type=type(exc).__name__,
        error_message=str(exc),
    )
