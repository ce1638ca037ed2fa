"""Usage metrics: every request changes the right counters, seen through ``lfassist_jupyter.stats()``
and ``%assist stats``, with requests sent through the real SDKs to the fake model server."""

from __future__ import annotations

import asyncio

import pytest
from _support.components import GOOD, QA_SPEC, WRONG_IMPORT, fenced, intent, plan, spec_reply
from _support.fakellm import Reply, Status

import lfassist_jupyter
from lfassist_jupyter.metrics import METRICS


@pytest.fixture(autouse=True)
def fresh_metrics():
    METRICS.reset()
    yield
    METRICS.reset()


def delta(before: dict, key: str, sub: str | None = None) -> int:
    now = lfassist_jupyter.stats()
    a, b = (before[key], now[key]) if sub is None else (before[key].get(sub, 0), now[key].get(sub, 0))
    return b - a


async def test_component_request_counts_attempts_calls_tokens_and_first_attempt_success(llm, make_assistant):
    llm.queue(intent("generate_component"), fenced(GOOD))
    before = lfassist_jupyter.stats()
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.validated

    s = lfassist_jupyter.stats()
    assert s["assistant_requests_total"] == before["assistant_requests_total"] + 1
    assert delta(before, "assistant_requests_by_intent", "generate_component") == 1
    assert delta(before, "assistant_provider_usage", "openai") == 1
    assert s["model_calls"] - before["model_calls"] == 2 == len(llm.requests)
    assert s["prompt_tokens"] > before["prompt_tokens"] and s["completion_tokens"] > before["completion_tokens"]
    sent = sum(len(r.text) for r in llm.requests)
    # Prompt characters as sent: the system prompt and every message of both calls.
    assert s["prompt_chars"] - before["prompt_chars"] == pytest.approx(sent, abs=8)
    assert s["assistant_validation_attempts"]["count"] == 1 and s["assistant_validation_attempts"]["p50"] == 1
    assert s["assistant_validation_success_rate"] == 1.0
    assert s["assistant_generation_duration_seconds"]["count"] == 1
    record = s["requests"][-1]
    assert record["kind"] == "generate_component" and record["status"] == "complete" and record["validated"]
    # No prompt, code or key in metrics: only names and numbers.
    flat = repr(s)
    assert "uppercase" not in flat.lower() and "class " not in flat and "test-key" not in flat


async def test_repair_lowers_the_first_attempt_rate(llm, make_assistant):
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
    await make_assistant("anthropic").arun("uppercase component")
    s = lfassist_jupyter.stats()
    assert s["assistant_validation_attempts"]["max"] == 2
    assert s["assistant_validation_success_rate"] == 0.0
    assert s["assistant_provider_usage"] == {"anthropic": 1}
    assert s["model_calls"] == 3


async def test_question_off_topic_and_flow_are_counted_by_kind(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("question"), "Langflow is a visual builder.")
    await assistant.arun("what is Langflow?")
    llm.queue(intent("off_topic"))
    await assistant.arun("what's the weather?")
    s = lfassist_jupyter.stats()
    assert s["assistant_requests_by_intent"] == {"question": 1, "off_topic": 1}
    assert s["model_calls"] == 3  # off-topic costs the classification call only
    assert s["assistant_validation_attempts"]["count"] == 0

    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(QA_SPEC))
    result = await assistant.arun("a flow that answers with a prompt")
    assert result.kind == "flow" and result.validated, result.error
    s = lfassist_jupyter.stats()
    assert s["assistant_requests_by_intent"] == {"question": 1, "off_topic": 1, "build_flow": 1}
    assert s["model_calls"] == 6 and s["requests"][-1]["kind"] == "build_flow"
    assert s["assistant_validation_attempts"]["count"] == 1 and s["assistant_validation_success_rate"] == 1.0


async def test_errors_by_type_and_cancellations(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(Status(401, "bad key"))
    result = await assistant.arun("uppercase component")
    assert result.status == "error"
    llm.queue(intent("question"), Reply("word " * 400, chunk=4, delay=0.01))

    async def cancel_soon():
        await asyncio.sleep(0.3)
        assistant.cancel()

    await asyncio.gather(assistant.arun("explain components"), cancel_soon())
    s = lfassist_jupyter.stats()
    assert s["assistant_errors_total"] == {"ProviderAuthError": 1}
    assert s["assistant_cancellations_total"] == 1
    assert s["assistant_requests_total"] == 2
    assert [r["status"] for r in s["requests"]] == ["error", "cancelled"]


def test_assist_stats_in_a_real_shell_shows_the_table_and_charts(llm, monkeypatch, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stats-test-key-0123456789")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        llm.queue(intent("question"), "An answer.")
        shell.run_cell_magic("assist", "--quiet", "what is a component?")
        view = shell.run_line_magic("assist", "stats")
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
    text = repr(view)
    assert "requests                       1" in text and "question 1" in text and "model calls" in text
    html = view._repr_html_()
    assert html.count("<svg") == 2 and "<script" not in html and "sk-stats" not in html + text
