"""A keyless OpenAI-compatible server (vLLM, LM Studio, Ollama's /v1: ``OPENAI_BASE_URL`` and no
``OPENAI_API_KEY``) works from ``%%assist``; the SDK's stand-in key is never shown, and a server
that does want a key gets a line that says none is set (not "rejected the API key")."""

from __future__ import annotations

import pytest
from _support.components import GOOD, fenced, intent
from _support.display import html_of, text_of
from _support.fakellm import Status

from lfassist_jupyter.providers.openai import NO_KEY


def test_a_keyless_server_works_without_openai_api_key(ip, llm, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY")
    ip.run_line_magic("assist", "status")
    assert "Providers: openai" in capsys.readouterr().out  # configured by OPENAI_BASE_URL alone
    llm.queue(intent("generate_component"), fenced(GOOD))
    result = ip.run_cell_magic("assist", "", "a component that uppercases text")
    assert result.status == "complete" and result.validated and result.class_name == "UppercaseComponent"
    sent = {r.headers.get("Authorization") or r.headers.get("authorization") for r in llm.requests}
    assert sent == {f"Bearer {NO_KEY}"}  # the SDK's stand-in, the only "key" the server saw
    shown = capsys.readouterr().out + text_of(result, ip) + html_of(result, ip) + repr(result)
    assert NO_KEY not in shown


def test_a_server_that_wants_a_key_says_none_is_set(ip, llm, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    llm.queue(Status(401, "Missing bearer token", error_type="invalid_request_error"))
    result = ip.run_cell_magic("assist", "", "a component that uppercases text")
    assert result.status == "error"
    assert "wants an API key (401), and none is set: set OPENAI_API_KEY" in result.error
    assert llm.openai_base_url in result.error and NO_KEY not in result.error


def test_control_a_key_that_is_set_and_refused_is_a_rejected_key(ip, llm):
    llm.queue(Status(401, "Incorrect API key provided", error_type="invalid_request_error"))
    result = ip.run_cell_magic("assist", "", "a component that uppercases text")
    assert result.status == "error" and "rejected the API key (401)" in result.error


@pytest.mark.parametrize("userinfo", ["bob:{password}", "{password}"], ids=["user-and-password", "token"])
def test_a_password_in_the_base_url_is_never_shown(ip, llm, monkeypatch, capsys, userinfo):
    """A gateway behind basic auth (``OPENAI_BASE_URL=https://user:password@host/v1``, or a token
    alone in the user part): the URL is named in the error line, its credentials are not.  The
    control: the SDK did send them (as basic auth)."""
    password = "gw-PassW0rd-0123456789"
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv(
        "OPENAI_BASE_URL", llm.openai_base_url.replace("://", f"://{userinfo.format(password=password)}@")
    )
    llm.queue(Status(401, "Missing bearer token", error_type="invalid_request_error"))
    result = ip.run_cell_magic("assist", "", "a component that uppercases text")
    assert result.status == "error" and "wants an API key (401)" in result.error
    assert f"at {llm.openai_base_url}" in result.error  # the URL is named, without its user part
    assert any("basic" in (r.headers.get("authorization") or "").lower() for r in llm.requests)  # the control
    shown = capsys.readouterr().out + text_of(result, ip) + html_of(result, ip) + repr(result)
    assert password not in shown
