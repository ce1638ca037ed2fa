"""A real run of a flow, the user's explicit choice: ``lfassist_jupyter.run_flow(flow, text)`` and
``%%assist_flow --run-local TEXT``.

Unlike the probe run it reaches the network and gets keys -- only the ones the flow reads. The
flow here holds a generated component that reports what it can see: the environment's secret
names, a server on this machine, and a canary file in the user's HOME."""

from __future__ import annotations

import contextlib
import http.server
import sys
import threading
import time
from pathlib import Path

import pytest
from components import LLM_SPEC, QA_SPEC, named
from IPython.core.error import UsageError

import lfassist_jupyter
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.flows import build_flow, default_catalog
from lfassist_jupyter.validation import _isolation

PROBE = """
import os
import time
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
        names = ",".join(sorted(k for k in os.environ if "KEY" in k or "SECRET" in k))
        net = urllib.request.urlopen(self.url, timeout=5).read().decode()
        sees = os.path.exists(self.canary)
        key = self.api_key or ""
        return Message(text=f"{self.text.upper()} vars={names} net={net} canary={sees} key={key} {key.encode().hex()}")
"""


@pytest.fixture(scope="module")
def server():
    class Pong(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"pong")

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pong)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/"
    srv.shutdown()


@pytest.fixture
def probe_flow(sandbox, server, tmp_path, monkeypatch):
    """ChatInput -> Env Probe (generated, reads DEMO_SERVICE_KEY) -> ChatOutput."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary.txt").write_text("private")
    monkeypatch.setenv("HOME", str(home))
    catalog = default_catalog()
    catalog.add("EnvProbe", sandbox.component_template_sync(PROBE)["template"])
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
    built = build_flow(spec, catalog=catalog)
    assert built.ok, built.errors
    return built.flow


def test_real_run_gets_the_network_and_only_the_keys_it_reads(probe_flow, monkeypatch):
    monkeypatch.setenv("DEMO_SERVICE_KEY", "demo-secret-value-42")
    monkeypatch.setenv("OTHER_SECRET_KEY", "kernel-secret-value-77")

    run = lfassist_jupyter.run_flow(probe_flow, "hello")

    assert run["ok"] is True, run
    assert run["text"].startswith("HELLO vars=DEMO_SERVICE_KEY net=pong")  # the one key; the network works
    for secret in ("demo-secret-value-42", "kernel-secret-value-77"):  # nor echoed, nor hex-encoded
        assert secret not in str(run) and secret.encode().hex() not in str(run)
    assert run["real"] is True and run["variables"] == ["DEMO_SERVICE_KEY"]
    if _isolation.probe(sys.executable)[0] == "full":
        assert "canary=False" in run["text"]  # the user's HOME is not there
        assert run["isolation"].startswith("bubblewrap")


def test_keys_come_from_env_when_given_and_a_missing_one_is_named(probe_flow, monkeypatch):
    monkeypatch.delenv("DEMO_SERVICE_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"needs DEMO_SERVICE_KEY \(Env Probe\.api_key\)"):
        lfassist_jupyter.run_flow(probe_flow, "hi")

    run = lfassist_jupyter.run_flow(probe_flow, "hi", env={"DEMO_SERVICE_KEY": "given-explicitly-123"})
    assert run["ok"] and run["text"].startswith("HI vars=DEMO_SERVICE_KEY")


def test_a_flow_that_needs_a_model_choice_is_refused_before_anything_runs():
    with pytest.raises(ConfigError, match=r"still needs .*Language Model\.model \(model\)"):
        lfassist_jupyter.run_flow(LLM_SPEC, "hi", env={"OPENAI_API_KEY": "sk-test-1234567890"})
    with pytest.raises(ConfigError, match="Unknown component type 'Nope'"):
        lfassist_jupyter.run_flow(QA_SPEC.replace("ChatOutput", "Nope"), "hi")
    with pytest.raises(ConfigError, match="timeout"):
        lfassist_jupyter.run_flow(QA_SPEC, "hi", timeout=float("nan"))


def test_a_crashing_or_hanging_component_is_a_report(probe_flow, monkeypatch):
    monkeypatch.setenv("DEMO_SERVICE_KEY", "demo-secret-value-42")
    crashed = lfassist_jupyter.run_flow(probe_flow, "crash")
    assert crashed["ok"] is False and "the service said no" in crashed["error"]

    started = time.monotonic()
    seen_in_ps = []

    def scan_command_lines() -> None:  # while the run hangs: the key is on no process's command line
        time.sleep(4)
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                seen_in_ps.append(b"demo-secret-value-42" in cmdline.read_bytes())

    scanner = threading.Thread(target=scan_command_lines)
    scanner.start()
    hung = lfassist_jupyter.run_flow(probe_flow, "hang", timeout=10)
    scanner.join()
    assert seen_in_ps and not any(seen_in_ps)
    assert hung["ok"] is False and "did not finish within 10 s" in hung["error"]
    assert time.monotonic() - started < 25


def test_assist_flow_run_local_shows_the_real_answer(flow_ip, capsys):
    view = flow_ip.run_cell_magic("assist_flow", '--run-local "what is up?"', named(QA_SPEC, "Echo QA"))
    assert view.run["ok"] and view.run["text"] == "Answer this: what is up?"
    text = str(view)
    assert "Real run on 'what is up?': 'Answer this: what is up?'" in text
    assert "variables given: none" in text
    assert "Running the flow for real" in capsys.readouterr().out

    model_view = flow_ip.run_cell_magic("assist_flow", "--run-local hi", LLM_SPEC)
    assert model_view.run is None and "still needs" in str(model_view)
    with pytest.raises(UsageError, match="not both"):
        flow_ip.run_cell_magic("assist_flow", "--run a --run-local b", QA_SPEC)
