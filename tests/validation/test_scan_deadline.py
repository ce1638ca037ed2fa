"""Every scan of what a model sent has a bound, and ends in one clear line.

What made a ~31 KB reply hold a kernel thread for hours: the security scan follows each name
through every binding, and a file write's argument through the names bound to it, two levels
deep -- a name bound a thousand times, whose bindings are names bound a thousand times, read by a
thousand writes, is a billion steps (the scan ran in a worker thread, without a deadline, for
any reply under 32,000 characters).  It is followed once per (scope, name) now, and every scan
has a step budget and a wall-clock bound (``SCAN_STEPS``, ``SCAN_SECONDS``): past them the code
is not judged, which refuses it in reject mode with one line.  The lenient JSON reading of intent
and plan replies (``json_repair``, a millisecond per unclosed brace) only reads small replies.
"""

from __future__ import annotations

import time

import pytest
from _support.components import GOOD, fenced, intent

from lfassist_jupyter import validate_component
from lfassist_jupyter.validation import security
from lfassist_jupyter.validation.static import validate_static

BOUND = security.SCAN_SECONDS + 20
"""Generous: the scan stops itself at SCAN_SECONDS; before, these ran for hours."""
GIVE_UP = "The security scan could not judge this code: it gave up after"


def _component(lines: list[str], size: int = 31_000) -> str:
    body, n = [], 0
    while sum(map(len, body)) < size:
        body.append("".join(line.format(i=n, j=n % 3, k=n % 7) for line in lines))
        n += 1
    return GOOD.replace(
        "from lfx.schema.message import Message\n", "from lfx.schema.message import Message\n" + "".join(body)
    )


# The reply that held a thread for hours (over two minutes before being stopped, at 31 KB).
FAN_OUT = _component(["a = b{j}\n", "b{j} = c\n", "open(a, 'w')\n"])
# Code built to exceed the budget: the fan-out, plus functions of one name called everywhere.
TANGLED = _component(["a = b{k}\n", "b{k} = c{j}\n", "open(a, 'w')\n", "def f(x):\n    return f(x)\n", "f(a)\n"])


def test_the_reply_that_ran_for_hours_is_judged_in_seconds():
    started = time.monotonic()
    report = validate_static(FAN_OUT, security="reject")
    assert time.monotonic() - started < BOUND and "security" in report.phases_run, report.error


def test_the_budget_is_what_bounds_it(monkeypatch):
    """The control: with a budget smaller than the reply needs, the same scan stops with one line."""
    monkeypatch.setattr(security, "SCAN_STEPS", 2_000)
    report = validate_static(FAN_OUT, security="reject")
    assert not report.is_valid and report.error.startswith(GIVE_UP), report.error


def test_code_past_the_budget_is_refused_with_one_line(sandbox, monkeypatch):
    started = time.monotonic()
    report = validate_static(TANGLED, security="reject")
    assert time.monotonic() - started < BOUND and report.error.startswith(GIVE_UP), report.error
    # The other doors below stop it sooner: what they show, not the budget, is under test there.
    monkeypatch.setattr(security, "SCAN_STEPS", 20_000)
    report = validate_component(TANGLED, validator=sandbox, security="reject", smoke=False)
    gave_up = [f.message for f in report.findings if f.phase == "security" and f.message.startswith(GIVE_UP)]
    assert not report.is_valid and gave_up, report.findings
    assert "\n" not in gave_up[0] and "Traceback" not in gave_up[0]


async def test_generated_code_past_the_budget_is_retried(llm, make_assistant, monkeypatch):
    monkeypatch.setattr(security, "SCAN_STEPS", 20_000)
    llm.queue(intent("generate_component"), fenced(TANGLED), fenced(GOOD))
    result = await make_assistant("openai", max_retries=2).arun("an uppercase component")
    assert result.validated is True and result.attempts == 2 and result.code == GOOD
    assert GIVE_UP in llm.requests[2].last_user


def test_a_flow_carrying_it_does_not_leave(sandbox, monkeypatch):
    """The outgoing gate: a custom node whose code the scan cannot judge is refused, by name."""
    monkeypatch.setattr(security, "SCAN_STEPS", 20_000)
    from lfassist_jupyter import build_flow, validate_flow

    flow = build_flow(
        "name: Plain\nnodes:\n  A: ChatInput\n  C: ChatOutput\nedges:\n  A.message -> C.input_value\n"
    ).flow
    node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "ChatOutput")
    node["data"]["node"]["template"]["code"]["value"] = TANGLED
    report = validate_flow(flow)
    unsafe = [e for e in report.errors if e.code == "unsafe_code"]
    assert unsafe and unsafe[0].field == "code" and "cannot judge" in unsafe[0].message, report.errors


@pytest.mark.parametrize("reply", ["{" * 1_000_000, '{"intent": ' * 200_000, "[" * 1_000_000])
def test_intent_and_plan_replies_are_read_in_bounded_time(reply):
    from lfassist_jupyter.core.intent import json_object_in, parse_intent

    started = time.monotonic()
    assert parse_intent(reply, "hi").intent == "question"
    json_object_in(reply)
    assert time.monotonic() - started < BOUND
