"""Hostile and broken input, through the entry points a user calls: each answer is a clear
outcome -- a result, a one-line error, a warning -- never a traceback, a freeze or lost work.

Speed is not asserted here (benchmarks/run.py measures it); before the fixes these inputs
froze the engine for tens of seconds to minutes (quadratic scans holding the GIL).
"""

from __future__ import annotations

import asyncio

import pytest
from components import GOOD, fenced, intent
from fakellm import Endless, Hang

from lfassist_jupyter.core.component.extract import MAX_REPLY_CHARS, extract_component_code
from lfassist_jupyter.errors import ConfigError

# -- extraction: big and adversarial replies ------------------------------------------------


async def test_a_300_kb_reply_with_a_component_at_the_end_is_validated(llm, make_assistant):
    prose = "Some words about Langflow components.\n" * 8000  # ~300 KB of prose first
    llm.queue(intent("generate_component", "uppercase"), fenced(GOOD, prose=prose))
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.status == "complete"
    assert result.validated is True
    assert result.class_name == "UppercaseComponent"
    assert result.code == GOOD


async def test_100000_blank_lines_are_an_answer_not_a_freeze(llm, make_assistant):
    llm.queue(intent("generate_component", "uppercase"), "Sure." + "\n" * 100_000 + "Which text?")
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.status == "complete"
    assert result.code is None and result.error is None
    assert "Which text?" in result.result


async def test_blank_lines_and_class_lines_before_the_fence_do_not_hide_the_component(llm, make_assistant):
    junk = "\n" * 50_000 + "class A(\n" * 20_000 + "```\n" * 2
    llm.queue(intent("generate_component", "uppercase"), junk + "\n" + fenced(GOOD))
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.status == "complete"
    assert result.class_name == "UppercaseComponent" and result.validated is True


def test_only_the_first_megabyte_of_a_reply_is_read():
    assert extract_component_code("x" * MAX_REPLY_CHARS + fenced(GOOD)) is None
    assert extract_component_code("x" * 1000 + "\n" + fenced(GOOD)) == GOOD


def test_a_fence_indented_in_a_list_item_gives_code_lfx_can_load():
    indented = "\n".join(("   " + line) if line else "" for line in GOOD.splitlines())
    reply = f"1. Save this:\n\n   ```python\n{indented}\n   ```\n"
    assert extract_component_code(reply) == GOOD


def test_pathological_python_in_a_fence_is_still_extracted_as_text():
    # Code that makes ast.parse raise MemoryError / RecursionError: extraction must not.
    assert extract_component_code("```python\n" + "-" * 100_000 + "1\n```") == "-" * 100_000 + "1\n"
    assert extract_component_code("```python\nx = a" + ".b" * 200_000 + "\n```").startswith("x = a.b")


# -- a hung or endless model server -----------------------------------------------------------


def _provider(llm, kind: str, **options):
    from lfassist_jupyter.providers import create_provider

    base = llm.openai_base_url if kind == "openai" else llm.url
    return create_provider(kind, api_key="test-key-123456", base_url=base, **options)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_server_that_never_answers_is_a_clear_error(llm, make_assistant, kind):
    llm.queue(Hang(), Hang(), Hang())
    assistant = make_assistant(kind)
    assistant._provider = _provider(llm, kind, timeout=0.5, http_retries=2)
    result = await assistant.arun("a component that uppercases text")
    assert result.status == "error"
    assert "did not start answering within" in result.error and "LFASSIST_TIMEOUT" in result.error


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_reply_that_never_ends_is_stopped_with_a_clear_error(llm, make_assistant, kind):
    llm.queue(intent("question"), Endless("x" * 8000))
    assistant = make_assistant(kind)
    assistant._provider = _provider(llm, kind, timeout=5)
    result = await assistant.arun("Explain Langflow in depth")
    assert result.status == "error"
    assert "without finishing" in result.error
    assert not llm.requests[-1].finished


async def test_the_stop_button_works_while_the_server_hangs(llm, make_assistant):
    llm.queue(Hang())
    assistant = make_assistant("openai")  # default timeout: the request would hang for 45 s

    async def press_stop() -> None:
        while not llm.requests:  # the classification call has reached the hung server
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        assert assistant.cancel() is True

    stop = asyncio.create_task(press_stop())
    events = [event async for event in assistant.stream("a component that uppercases text")]
    await stop
    assert events[-1].event == "cancelled"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "soon"])
def test_a_bad_lfassist_timeout_is_a_config_error(llm, monkeypatch, value):
    monkeypatch.setenv("LFASSIST_TIMEOUT", value)
    with pytest.raises(ConfigError, match="seconds"):
        _provider(llm, "openai")


def test_lfassist_timeout_sets_the_provider_deadline(llm, monkeypatch):
    monkeypatch.setenv("LFASSIST_TIMEOUT", "12")
    assert _provider(llm, "openai").timeout == 12.0
    assert _provider(llm, "anthropic", timeout=3).timeout == 3.0
