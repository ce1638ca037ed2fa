"""CPU-heavy parses of a model reply never block the event loop, and Stop is honoured mid-repair.

A hostile reply: a component with one repairable mistake (an ``Output(method=...)`` one letter
off) padded with ~211 KB of deep but legal expressions, the shape that kept LibCST busy for
10-75 s on the event loop (Stop took effect only after).  Through ``Assistant`` and the fake
model server: a heartbeat task ticks every 10 ms while the request runs; Stop pressed during
the repair ends the request within a second and kills the worker; past the deadline the repair
is skipped and the model gets the error.  The control: the same reply with a small padding is
repaired without a model call, so the hostile reply really reaches the repair pass.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from pathlib import Path

from _support.components import GOOD, fenced, intent
from _support.fakellm import Reply
from _support.mistakes import REPAIRABLE

from lfassist_jupyter.core.component.pipeline import ComponentPipeline

STOP_BOUND = 1.0
"""Seconds from Stop to the request's end (the promise)."""
STALL_BOUND = 1.0
"""The loop's longest pause after the reply arrived (was 30-40 s before on a loaded machine)."""


def hostile(size: int = 211_000) -> str:
    code, _ = REPAIRABLE["output_method_typo"]
    unit = "    X{i} = " + "+".join(["(1)"] * 30) + "\n"
    lines, total = [], 0
    while total < size:
        lines.append(unit.format(i=len(lines)))
        total += len(lines[-1])
    return code.replace('    display_name = "Uppercase"\n', '    display_name = "Uppercase"\n' + "".join(lines))


class Heartbeat:
    """A task that ticks every 10 ms; ``longest`` is the longest pause since ``mark()``."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.since = 0

    async def __aenter__(self) -> Heartbeat:
        async def beat() -> None:
            while True:
                self.ticks.append(time.perf_counter())
                await asyncio.sleep(0.01)

        self._task = asyncio.get_running_loop().create_task(beat())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()
        self.ticks.append(time.perf_counter())

    def mark(self) -> None:
        self.since = len(self.ticks)

    @property
    def longest(self) -> float:
        ticks = self.ticks[max(0, self.since - 1) :]
        return max(b - a for a, b in itertools.pairwise(ticks))


def _workers() -> list[int]:
    """Live children of this process running the off-loop worker."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "stat").read_text().split()[3] != str(os.getpid()):
                continue
            if b"lfassist_jupyter.core.offload" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except (OSError, IndexError):
            continue
    return found


async def test_the_control_a_small_padding_is_repaired_without_a_model_call(llm, make_assistant):
    llm.queue(intent("generate_component"), fenced(hostile(3_000)))
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.validated and result.attempts == 1 and len(llm.requests) == 2
    assert any("build_output" in change for change in result.repairs)


async def test_stop_mid_repair_ends_the_request_within_a_second(llm, make_assistant):
    llm.queue(intent("generate_component"), Reply(fenced(hostile()), chunk=65536))
    assistant = make_assistant("openai")
    stopped_at = ended_at = None
    async with Heartbeat() as heart:
        async for event in assistant.stream("a component that uppercases text"):
            if event.event == "progress" and event.step == "generation_complete":
                heart.mark()
            if event.event == "progress" and event.step == "validation_failed":
                await asyncio.sleep(0.5)  # the repair pass is running now
                assert _workers(), "the repair pass runs in the worker"
                stopped_at = time.perf_counter()
                assert assistant.cancel() is True
            if event.event in ("complete", "cancelled", "error"):
                ended_at, last = time.perf_counter(), event
    assert last.event == "cancelled" and stopped_at is not None
    assert ended_at - stopped_at < STOP_BOUND, ended_at - stopped_at
    assert heart.longest < STALL_BOUND, heart.longest
    assert _workers() == []  # killed with the request: nothing keeps burning CPU
    assert len(llm.requests) == 2  # no retry was asked for


async def test_a_repair_past_its_deadline_goes_to_the_model(llm, make_assistant):
    llm.queue(intent("generate_component"), Reply(fenced(hostile()), chunk=65536), fenced(GOOD))
    assistant = make_assistant("openai")
    assistant.register_pipeline("generate_component", ComponentPipeline(assistant.validator, 3, repair_deadline=0.5))
    async with Heartbeat() as heart:
        heart.mark()
        result = await assistant.arun("a component that uppercases text")
    assert result.validated and result.attempts == 2 and result.code == GOOD and not result.repairs
    skipped = [e for e in result.events if e.event == "progress" and e.step == "repairing"]
    assert [e.message for e in skipped] == ["Repair skipped (it took longer than 0.5 s); asking the model."]
    assert "build_outputs" in llm.requests[-1].text  # the model got the original error
    assert heart.longest < STALL_BOUND, heart.longest


def test_the_panels_stop_mid_repair_ends_the_request_within_a_second(llm, monkeypatch, sandbox, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-off-loop-test-0123456789")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    llm.queue(intent("generate_component"), Reply(fenced(hostile()), chunk=65536))
    panel.send_prompt("a component that uppercases text")
    deadline = time.monotonic() + 120
    while (panel.progress.get("current") or {}).get("step") != "validation_failed" and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # the repair pass is running now
    assert panel.busy and _workers()
    stopped_at = time.perf_counter()
    panel._handle_msg({"content": {"data": {"method": "custom", "content": {"type": "stop"}}}, "buffers": []})
    while panel.busy and time.perf_counter() - stopped_at < 30:
        time.sleep(0.01)
    assert time.perf_counter() - stopped_at < STOP_BOUND
    assert panel.messages[-1]["kind"] == "cancelled" and _workers() == []
