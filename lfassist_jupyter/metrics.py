"""Usage metrics for this kernel: the Langflow Assistant spec's table, kept in-process.

The spec ("Metrics") names what the assistant measures: requests (in all and by intent),
generation duration, validation attempts, first-attempt success, provider usage, errors by
type and cancellations.  We add what a user paying for tokens wants to know: model calls,
prompt and completion tokens as the providers report them, and prompt characters sent.

Why in-process and not OpenTelemetry: a notebook user wants ``%assist stats`` to work with
nothing configured and nothing sent anywhere; an exporter is one ``on_record`` callback away
for whoever wants one.  Nothing here holds a prompt, code, a key or an error message: only
names (intent, provider, model, error *type*), counts and durations.

One ``RequestRecord`` per request, filled by the engine while the request runs (the model
calls through ``MeteredProvider``) and closed with ``finish``; ``Metrics`` aggregates the records.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

RequestStatus = Literal["complete", "error", "cancelled"]
_KEEP = 1000  # per-request records kept for percentiles and the chart; counters are never trimmed


@dataclass
class RequestRecord:
    """What one request cost and how it ended.  No prompt, code or message: names and numbers."""

    kind: str = "unknown"  # the spec's intent (generate_component, build_flow, question, ...) | refused | unknown
    provider: str = ""
    model: str = ""
    started: float = field(default_factory=time.time)
    status: RequestStatus | None = None
    validated: bool = False
    attempts: int = 0
    duration_s: float = 0.0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0
    error_type: str | None = None
    provider_error: str | None = field(default=None, repr=False)  # the type of a provider call's failure
    fallbacks: list[Any] = field(default_factory=list, repr=False)
    """The model substitutions the provider made during this request (``ModelFallback``: names
    only), so every view can say which model really answered without asking the provider."""
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def add_call(self, *, prompt_chars: int, usage: Any = None) -> None:
        """One model call: its prompt size and the tokens the provider reported (if any)."""
        self.model_calls += 1
        self.prompt_chars += prompt_chars
        if usage is not None:
            self.prompt_tokens += int(getattr(usage, "input_tokens", 0) or 0)
            self.completion_tokens += int(getattr(usage, "output_tokens", 0) or 0)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_t0", None)
        data.pop("provider_error", None)
        return data


def prompt_chars(system: str, messages: list[dict[str, str]]) -> int:
    """Characters sent to the model in one call: the system prompt plus every message."""
    return len(system or "") + sum(len(str(m.get("content") or "")) for m in messages)


async def _metered(
    record: RequestRecord,
    stream: AsyncIterator[str],
    *,
    chars: int,
    usage: list[Any],
    on_end: Callable[[], None] | None = None,
) -> Any:
    """Pass a provider's stream through, counting the call once it ends (or is abandoned).

    ``usage`` is what this call's ``on_usage`` received, read at the end because the SDKs
    report usage with the last chunk; a call that fails still counts as a call (it was made,
    and may be billed)."""
    try:
        async for chunk in stream:
            yield chunk
    except Exception as exc:
        record.provider_error = type(exc).__name__
        raise
    finally:
        record.add_call(prompt_chars=chars, usage=usage[-1] if usage else None)
        if on_end is not None:
            on_end()


class MeteredProvider:
    """A provider seen through one request's record: every call is counted, nothing else changes.

    Pipelines take whatever provider their ``Request`` holds, so metering the request's
    provider meters every call a pipeline makes (a flow pipeline's sub-requests included)
    without a line of metrics code in any pipeline."""

    def __init__(self, provider: Any, record: RequestRecord) -> None:
        self._inner = provider
        self._record = record

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stream(self, call: Any) -> AsyncIterator[str]:
        """The inner provider's stream of ``call`` (a ``ModelCall``), counted."""
        usage: list[Any] = []  # this call's, reported through the call: the provider keeps none
        outer = call.on_usage

        def seen(reported: Any) -> None:
            usage.append(reported)
            if outer is not None:
                outer(reported)

        known = getattr(self._inner, "fallbacks", None)
        before = len(known) if isinstance(known, list) else 0

        def settled() -> None:
            """The call is over: note the model substitutions it made (the provider keeps its whole
            history) and which model really answers the requested name from now on."""
            record = self._record
            if isinstance(known, list):
                record.fallbacks.extend(known[before:])
            in_use = getattr(self._inner, "model_in_use", None)
            if callable(in_use):  # the model that answered this call (after a fallback, or a pick)
                record.model = in_use(call.model, call.task)

        inner = self._inner.stream(dataclasses.replace(call, on_usage=seen))
        chars = prompt_chars(call.system, call.messages)
        return _metered(self._record, inner, chars=chars, usage=usage, on_end=settled)

    async def complete(self, call: Any) -> str:
        return "".join([chunk async for chunk in self.stream(call)])


class _Histogram:
    """Count, sum and the recent values (for percentiles), like a Prometheus summary."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.recent: deque[float] = deque(maxlen=_KEEP)

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.recent.append(value)

    def summary(self) -> dict[str, float | int | None]:
        values = sorted(self.recent)
        return {
            "count": self.count,
            "sum": round(self.total, 6),
            "p50": _percentile(values, 0.5),
            "p95": _percentile(values, 0.95),
            "max": values[-1] if values else None,
        }


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return round(statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1], 6)


class Metrics:
    """The kernel's counters and histograms.  Thread-safe: requests finish on the engine's
    background loop while a cell reads ``stats()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.on_record: list[Callable[[RequestRecord], None]] = []  # exporters hook in here
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.requests_total = 0
            self.by_intent: Counter[str] = Counter()
            self.by_provider: Counter[str] = Counter()
            self.errors: Counter[str] = Counter()
            self.cancellations = 0
            self.model_calls = 0
            self.prompt_tokens = 0
            self.completion_tokens = 0
            self.prompt_chars = 0
            self.validated_requests = 0  # requests that produced validated code
            self.first_attempt_successes = 0
            self.validating_requests = 0  # requests that ran at least one validation attempt
            self.duration = _Histogram()
            self.attempts = _Histogram()
            self.records: deque[RequestRecord] = deque(maxlen=_KEEP)

    def start(self, *, provider: str = "", model: str = "") -> RequestRecord:
        return RequestRecord(provider=provider, model=model)

    def finish(
        self,
        record: RequestRecord,
        status: RequestStatus,
        *,
        validated: bool = False,
        attempts: int = 0,
        error_type: str | None = None,
    ) -> RequestRecord:
        """Close a request's record and add it to the totals (once: a second call is ignored)."""
        if record.status is not None:
            return record
        record.status = status
        record.validated = validated
        record.attempts = attempts
        # A provider failure the pipeline turned into an outcome is still an error of that type.
        if error_type is None and status != "cancelled" and not validated:
            error_type = record.provider_error
        record.error_type = error_type
        record.duration_s = round(time.perf_counter() - record._t0, 6)
        with self._lock:
            self.requests_total += 1
            self.by_intent[record.kind] += 1
            if record.provider:
                self.by_provider[record.provider] += 1
            if status == "cancelled":
                self.cancellations += 1
            if error_type:
                self.errors[error_type] += 1
            self.model_calls += record.model_calls
            self.prompt_tokens += record.prompt_tokens
            self.completion_tokens += record.completion_tokens
            self.prompt_chars += record.prompt_chars
            self.duration.observe(record.duration_s)
            if attempts > 0:
                self.validating_requests += 1
                self.attempts.observe(attempts)
                if validated:
                    self.validated_requests += 1
                    if attempts == 1:
                        self.first_attempt_successes += 1
            self.records.append(record)
            hooks = list(self.on_record)
        for hook in hooks:
            with contextlib.suppress(Exception):  # an exporter's bug must never fail a request
                hook(record)
        return record

    def snapshot(self) -> dict[str, Any]:
        """Everything as plain data (what ``lfassist_jupyter.stats()`` returns)."""
        with self._lock:
            rate = self.first_attempt_successes / self.validating_requests if self.validating_requests else None
            return {
                "assistant_requests_total": self.requests_total,
                "assistant_requests_by_intent": dict(self.by_intent),
                "assistant_generation_duration_seconds": self.duration.summary(),
                "assistant_validation_attempts": self.attempts.summary(),
                "assistant_validation_success_rate": None if rate is None else round(rate, 4),
                "assistant_provider_usage": dict(self.by_provider),
                "assistant_errors_total": dict(self.errors),
                "assistant_cancellations_total": self.cancellations,
                "model_calls": self.model_calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "prompt_chars": self.prompt_chars,
                "validated_requests": self.validated_requests,
                "requests": [r.as_dict() for r in self.records],
            }


METRICS = Metrics()
"""The kernel's metrics: every ``Assistant`` records into it."""


def stats() -> dict[str, Any]:
    """This kernel's assistant usage as data: the spec's metrics plus calls, tokens and prompt size."""
    return METRICS.snapshot()
