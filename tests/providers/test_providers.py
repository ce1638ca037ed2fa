"""The provider layer through the real openai and anthropic SDKs, over HTTP, against the
local wire-format server: streaming, usage, error statuses, cut and malformed streams."""

from __future__ import annotations

import socket
import time

import pytest
from _support.fakellm import Cut, Malformed, Reply, Status

from lfassist_jupyter import check_config
from lfassist_jupyter.errors import (
    ConfigError,
    NoProviderError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderModelNotFoundError,
    ProviderRateLimitError,
)
from lfassist_jupyter.providers import ModelCall, create_provider

KINDS = ["openai", "anthropic"]
KEY = "sk-test-abcdefghijklmnop123456"


def provider_for(kind, llm, **kw):
    base = llm.openai_base_url if kind == "openai" else llm.url
    return create_provider(kind, api_key=KEY, base_url=base, http_retries=kw.pop("http_retries", 0), **kw)


async def drain(provider, model="m", **kwargs):
    call = ModelCall(system="sys", messages=[{"role": "user", "content": "hi"}], model=model, **kwargs)
    return [c async for c in provider.stream(call)]


@pytest.mark.parametrize("kind", KINDS)
async def test_streams_text_in_chunks_with_usage(llm, kind):
    llm.queue(Reply("Hello from the fake model!", chunk=4))
    provider = provider_for(kind, llm)
    usage = []
    chunks = await drain(provider, on_usage=usage.append)  # the call reports what it cost
    assert "".join(chunks) == "Hello from the fake model!"
    assert len(chunks) >= 6
    assert len(usage) == 1 and usage[0].input_tokens == 11
    assert usage[0].output_tokens >= 6
    req = llm.requests[0]
    assert req.body["stream"] is True and req.body["model"] == "m"
    if kind == "openai":
        assert req.headers["authorization"] == f"Bearer {KEY}"
        assert req.body["messages"][0] == {"role": "system", "content": "sys"}
    else:
        # SDK 2.x sends the key as a bearer token; older ones as x-api-key.
        assert KEY in (req.headers.get("x-api-key"), req.headers.get("authorization", "").removeprefix("Bearer "))
        assert req.body["system"] == "sys"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "error_type", "expected", "phrase"),
    [
        (401, "", ProviderAuthError, "rejected the API key"),
        (403, "", ProviderAuthError, "rejected the API key"),
        (404, "", ProviderModelNotFoundError, "Model 'm' was not found"),
        (429, "", ProviderRateLimitError, "Rate limit exceeded"),
        (429, "insufficient_quota", ProviderRateLimitError, "run out of quota"),
        (500, "", ProviderHTTPError, "server error (500)"),
        (400, "content_policy_violation", ProviderError, "content policy"),
    ],
)
async def test_error_statuses_become_friendly_errors(llm, kind, status, error_type, expected, phrase):
    llm.queue(Status(status, f"upstream says no; key {KEY[:12]}***", error_type=error_type))
    with pytest.raises(expected) as info:
        await drain(provider_for(kind, llm))
    message = str(info.value)
    assert phrase in message
    assert KEY not in message and KEY[:12] not in message
    assert info.value.status_code == status
    assert info.value.__cause__ is not None  # translated at the boundary, chain kept


@pytest.mark.parametrize("kind", KINDS)
async def test_retry_after_is_honoured_by_bounded_retries(llm, kind):
    llm.queue(Status(429, "slow down", headers={"Retry-After": "1"}), Reply("ok"))
    t0 = time.monotonic()
    chunks = await drain(provider_for(kind, llm, http_retries=2))
    assert "".join(chunks) == "ok"
    assert len(llm.requests) == 2 and time.monotonic() - t0 >= 0.9


@pytest.mark.parametrize("kind", KINDS)
async def test_retries_are_bounded(llm, kind):
    llm.queue(*[Status(503, "down", headers={"Retry-After": "0"})] * 5)
    with pytest.raises(ProviderHTTPError):
        await drain(provider_for(kind, llm, http_retries=2))
    assert len(llm.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_stream_cut_midway_raises_instead_of_returning_half_a_reply(llm, kind):
    llm.queue(Cut("partial answer that never finishes"))
    t0 = time.monotonic()
    with pytest.raises(ProviderHTTPError) as info:
        await drain(provider_for(kind, llm))
    assert "ended before the reply was complete" in str(info.value)
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_chunk_is_a_provider_error(llm, kind):
    llm.queue(Malformed("first words"))
    with pytest.raises(ProviderHTTPError) as info:
        await drain(provider_for(kind, llm))
    assert "could not be read" in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_dead_server_is_a_connection_error(kind):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    base = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")
    provider = create_provider(kind, api_key=KEY, base_url=base, http_retries=0)
    with pytest.raises(ProviderConnectionError) as info:
        await drain(provider)
    assert f"127.0.0.1:{port}" in str(info.value)


def test_check_config_shape_and_default_selection(monkeypatch):
    assert check_config()["configured"] is False
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secretsecret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secretsecretsecret")
    cfg = check_config()
    assert cfg["configured"] is True
    assert cfg["configured_providers"] == ["openai", "anthropic"]
    assert cfg["default_provider"] == "openai" and cfg["default_model"] == "gpt-4o"
    openai = next(p for p in cfg["providers"] if p["name"] == "openai")
    assert {"name": "gpt-4o", "display_name": "GPT-4o"} in openai["models"]
    assert "secret" not in repr(cfg)
    monkeypatch.setenv("LFASSIST_PROVIDER", "anthropic")
    monkeypatch.setenv("LFASSIST_MODEL", "claude-opus-4-1")
    cfg = check_config()
    assert cfg["default_provider"] == "anthropic" and cfg["default_model"] == "claude-opus-4-1"


def test_model_per_task_and_openai_compatible_servers(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11434")
    monkeypatch.setenv("LFASSIST_MODEL", "qwen2.5-coder")
    provider = create_provider()
    assert provider.name == "ollama" and provider.base_url == "http://127.0.0.1:11434/v1"
    # Ollama has no known fast model: classification uses the model the user has.
    assert provider.default_model == provider.fast_model == "qwen2.5-coder"
    monkeypatch.setenv("LFASSIST_INTENT_MODEL", "llama3.2:1b")
    assert create_provider().fast_model == "llama3.2:1b"


def test_configuration_errors_say_how_to_fix():
    with pytest.raises(NoProviderError) as info:
        create_provider()
    assert "OPENAI_API_KEY" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
    with pytest.raises(ConfigError, match="Unknown provider: gemini"):
        create_provider("gemini")
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        create_provider("anthropic")


def test_provider_repr_never_shows_the_key(llm):
    provider = provider_for("openai", llm)
    assert KEY not in repr(provider)


@pytest.mark.parametrize("kind", KINDS)
async def test_model_not_found_falls_back_to_the_next_model_of_the_same_provider(llm, kind):
    """A retired model (404) is replaced by the next one of `%assist models` (the server's own list,
    asked once), within the same call and the same provider; later calls go straight to the substitute."""
    provider = provider_for(kind, llm)
    first, second, third = (await provider.alist_models())[:3]
    llm.queue(Status(404, f"The model `{first}` does not exist", error_type="model_not_found"), Reply("hello"))
    assert "".join(await drain(provider, model=first)) == "hello"
    assert [r.body["model"] for r in llm.requests] == [first, second]
    assert provider.substitutions == {first: second}
    (fallback,) = provider.fallbacks
    assert fallback.requested == first and fallback.used == second and fallback.provider == kind
    assert f"'{first}'" in fallback.message and f"'{second}'" in fallback.message
    llm.queue(Reply("again"))
    assert "".join(await drain(provider, model=first)) == "again"
    assert llm.requests[-1].body["model"] == second and len(provider.fallbacks) == 1
    # Retired too: the next one after it.
    llm.queue(Status(404, "retired"), Reply("third"))
    assert "".join(await drain(provider, model=first)) == "third"
    assert [r.body["model"] for r in llm.requests[-2:]] == [second, third]
    endpoint = "/chat/completions" if kind == "openai" else "/messages"
    assert all(r.path.endswith(endpoint) for r in llm.requests)  # the same provider's API, always


async def test_a_model_the_user_named_is_not_replaced_and_an_exhausted_list_says_what_was_tried(llm):
    provider = provider_for("openai", llm)
    llm.queue(Status(404, "no such model"))
    with pytest.raises(ProviderModelNotFoundError, match="Model 'my-finetune' was not found"):
        await drain(provider, model="my-finetune")
    assert len(llm.requests) == 1 and provider.fallbacks == []
    names = await provider.alist_models()
    llm.queue(*[Status(404, "gone")] * len(names))
    with pytest.raises(ProviderModelNotFoundError) as info:
        await drain(provider, model=names[0])
    assert [r.body["model"] for r in llm.requests[1:]] == names
    assert f"Model '{names[0]}' was not found" in str(info.value) and names[-1] in str(info.value)


async def test_a_400_saying_the_model_is_retired_also_falls_back(llm):
    provider = provider_for("openai", llm)
    llm.queue(Status(400, "The model gpt-4o has been deprecated and retired."), Reply("ok"))
    assert "".join(await drain(provider, model="gpt-4o")) == "ok"
    assert provider.substitutions == {"gpt-4o": "gpt-4o-mini"}
