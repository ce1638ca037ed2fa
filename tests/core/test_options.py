"""A request's own options are arguments of the request (``RequestOptions``), not settings written
on the assistant for one request and put back after: the assistant's defaults stay as they were,
and the next request without options uses them."""

from __future__ import annotations

import pytest
from _support.components import GOOD, WRONG_IMPORT, fenced, intent

from lfassist_jupyter import RequestOptions
from lfassist_jupyter.errors import ConfigError


async def test_max_retries_given_with_a_request_is_that_request_s(llm, make_assistant):
    assistant = make_assistant("openai")
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT))
    once = await assistant.arun("a component that uppercases text", RequestOptions(max_retries=1))
    assert once.attempts == 1 and not once.validated and len(llm.requests) == 2
    assert assistant.max_retries == 3  # the default, untouched
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
    again = await assistant.arun("a component that uppercases text")  # the control: the default's attempts
    assert again.validated and again.attempts == 2


def test_a_bad_option_is_one_line_before_anything_runs(llm, make_assistant):
    with pytest.raises(ConfigError, match="max_retries"):
        RequestOptions(max_retries=11)
    assistant = make_assistant("openai")
    assistant.max_retries = 99  # a default set wrong after construction is caught at the next request too
    with pytest.raises(ConfigError, match="max_retries"):
        assistant.run("a component that uppercases text")
    assert llm.requests == []
