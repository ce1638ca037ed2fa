"""The magics in a real IPython InteractiveShell, and in a real kernel driven by nbclient."""

from __future__ import annotations

import _thread
import json
import threading
import time

import nbformat
import pytest
from _support.components import GOOD, WRONG_IMPORT, fenced, intent
from _support.components import SHELL_KEY as KEY
from _support.display import html_of, text_of
from _support.fakellm import Reply
from IPython.core.error import UsageError


def test_assist_cell_builds_validates_and_inserts_the_code(ip, llm, capsys):
    llm.queue(intent("generate_component"), fenced(GOOD))
    result = ip.run_cell_magic("assist", "", "a component that uppercases text")
    assert result.status == "complete" and result.validated and result.class_name == "UppercaseComponent"
    assert ip.rl_next_input == GOOD  # set_next_input: the code lands in the next cell
    out = capsys.readouterr().out
    assert "Generating component" in out and "Validating" in out and "Validated" in out
    assert "UppercaseComponent: validated (1 attempt)" in text_of(result, ip)
    assert "validated" in html_of(result, ip) and "UppercaseComponent" in html_of(result, ip)


def test_progress_shows_attempt_numbers_on_retry(ip, llm, capsys):
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
    result = ip.run_cell_magic("assist", "--max-retries 2", "uppercase component")
    out = capsys.readouterr().out
    assert "Validating (1/2)" in out and "Validation failed (1/2)" in out and "Validating (2/2)" in out
    assert result.attempts == 2 and result.validated


def test_no_insert_out_and_quiet(ip, llm, capsys):
    llm.queue(intent("generate_component"), fenced(GOOD))
    ip.run_cell_magic("assist", "--no-insert --out res --quiet", "uppercase component")
    assert ip.rl_next_input is None
    assert ip.user_ns["res"].code == GOOD
    assert capsys.readouterr().out == ""


def test_failed_component_is_not_inserted_but_kept(ip, llm):
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT))
    result = ip.run_cell_magic("assist", "--max-retries 1", "uppercase component")
    assert not result.validated and result.code == WRONG_IMPORT and ip.rl_next_input is None
    html = html_of(result, ip)
    assert "not validated" in html and "<details>" in html and "lfx.base" in html


def test_interpolation_only_when_asked(ip, llm):
    ip.user_ns["field"] = "customer_name"
    llm.queue(intent("question"), "ok", intent("question"), "ok")
    ip.run_cell_magic("assist", "", "What is {field}?")
    assert "{field}" in llm.requests[0].last_user
    ip.run_cell_magic("assist", "--interpolate", "What is {field}?")
    assert "What is customer_name?" in llm.requests[2].last_user
    with pytest.raises(UsageError, match="'nope' is not defined"):
        ip.run_cell_magic("assist", "--interpolate", "What is {nope}?")


def test_config_traitlets_set_defaults(ip, llm):
    ip.run_line_magic("config", 'AssistMagics.model = "gpt-4.1"')
    ip.run_line_magic("config", 'AssistMagics.intent_model = "gpt-4.1-mini"')
    llm.queue(intent("generate_component"), fenced(GOOD))
    ip.run_cell_magic("assist", "", "uppercase component")
    assert [r.body["model"] for r in llm.requests] == ["gpt-4.1-mini", "gpt-4.1"]
    llm.queue(intent("question"), "ok")
    ip.run_cell_magic("assist", "--model gpt-4o", "What is Langflow?")
    assert llm.requests[-1].body["model"] == "gpt-4o"


def test_bad_options_are_usage_errors(ip, llm, capsys):
    with pytest.raises(UsageError):
        ip.run_cell_magic("assist", "--no-such-option", "x")
    with pytest.raises(UsageError, match="between 0 and 10"):
        ip.run_cell_magic("assist", "--max-retries 11", "x")
    with pytest.raises(UsageError, match="Unknown %assist subcommand"):
        ip.run_line_magic("assist", "frobnicate")
    result = ip.run_cell_magic("assist", "--provider gemini", "x")  # one clear line, no traceback
    assert result.status == "error" and llm.requests == []
    out = capsys.readouterr().out
    assert "Unknown provider: gemini. Known providers: openai" in out and "Traceback" not in out


def test_quoted_option_values(ip, llm):
    llm.queue(intent("question"), "ok")
    ip.run_cell_magic("assist", '--session "my project"', "What is Langflow?")
    assert ip.magics_manager.registry["AssistMagics"]._session_id == "agentic_my project"


def test_no_provider_is_one_clear_message(ip, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    result = ip.run_cell_magic("assist", "", "uppercase component")
    assert result.status == "error"
    out = capsys.readouterr().out
    assert "No model provider is configured" in out and "Traceback" not in out


def test_stop_button_cancels_cleanly(ip, llm, capsys, kernel_sigint):
    llm.queue(intent("question"), Reply("word " * 500, chunk=5, delay=0.02))

    def press_stop() -> None:  # what the kernel's stop button does, once the answer is streaming
        deadline = time.monotonic() + 20
        while len(llm.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        _thread.interrupt_main()

    threading.Thread(target=press_stop, daemon=True).start()
    t0 = time.monotonic()
    result = ip.run_cell_magic("assist", "", "Explain Langflow")
    assert result.status == "cancelled" and time.monotonic() - t0 < 8
    assert "Traceback" not in capsys.readouterr().out
    deadline = time.monotonic() + 5
    while not llm.requests[-1].disconnected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm.requests[-1].disconnected


def test_subcommands(ip, llm, capsys):
    ip.run_line_magic("assist", "status")
    out = capsys.readouterr().out
    assert "Providers: openai" in out and "Validator:" in out and "Langflow: not connected" in out
    ip.run_line_magic("assist", "models")
    assert "gpt-4o" in capsys.readouterr().out
    llm.queue(intent("question"), "Langflow is a visual builder.")
    ip.run_cell_magic("assist", "", "What is Langflow?")
    ip.run_line_magic("assist", "history")
    out = capsys.readouterr().out
    assert "What is Langflow?" in out and "Langflow is a visual builder." in out
    ip.run_line_magic("assist", "new")
    assert "new conversation" in capsys.readouterr().out
    ip.run_line_magic("assist", "help")
    assert "--max-retries" in capsys.readouterr().out


def test_assist_validate_cell(ip):
    report = ip.run_cell_magic("assist_validate", "", GOOD)
    assert report.is_valid and report.class_name == "UppercaseComponent"
    report = ip.run_cell_magic("assist_validate", "--no-smoke", WRONG_IMPORT)
    assert not report.is_valid and report.phase == "runtime"
    assert "failed: runtime" in html_of(report, ip)


def test_unload_removes_the_magics(ip):
    ip.run_line_magic("unload_ext", "lfassist_jupyter")
    assert "assist" not in ip.magics_manager.magics["cell"]
    assert "assist_validate" not in ip.magics_manager.magics["cell"]
    ip.run_line_magic("load_ext", "lfassist_jupyter")  # the fixture unloads again


# -- a real kernel --------------------------------------------------------------------------


@pytest.mark.slow
def test_real_kernel_notebook(llm, monkeypatch, tmp_path):
    from nbclient import NotebookClient

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD), intent("question"), "Use Message.")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext lfassist_jupyter"),
        nbformat.v4.new_code_cell("%%assist --out res\na component that uppercases text"),
        nbformat.v4.new_code_cell("print(res.validated, res.attempts, res.class_name)"),
        nbformat.v4.new_code_cell("%%assist\nWhat type should a text output return?"),
    ]
    payloads = []

    def on_cell_executed(cell, cell_index, execute_reply):
        payloads.extend(execute_reply["content"].get("payload", []))

    client = NotebookClient(nb, timeout=120, kernel_name="python3", on_cell_executed=on_cell_executed)
    client.execute()

    outputs = nb.cells[1].outputs
    html_updates = [o for o in outputs if "text/html" in o.get("data", {})]
    assert html_updates, outputs
    live = "".join(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    assert "Validating (1/3)" in live and "Validation failed (1/3)" in live and "Validated (2/3)" in live
    result = next(o for o in outputs if o.output_type == "execute_result")
    assert "UppercaseComponent" in result["data"]["text/html"] and "validated" in result["data"]["text/html"]
    assert nb.cells[2].outputs[0]["text"].strip() == "True 2 UppercaseComponent"
    inserted = [p for p in payloads if p.get("source") == "set_next_input"]
    assert len(inserted) == 1 and inserted[0]["text"] == GOOD and inserted[0]["replace"] is False
    stderr = [o["text"] for c in nb.cells for o in c.outputs if o.get("name") == "stderr"]
    assert not [t for t in stderr if "assistant." in t]  # logs (a failed validation) never leak into cells
    answer = next(o for o in nb.cells[3].outputs if o.output_type == "execute_result")
    assert "Use Message." in answer["data"]["text/plain"]

    path = tmp_path / "executed.ipynb"
    nbformat.write(nb, str(path))
    saved = path.read_text(encoding="utf-8")
    assert KEY not in saved and KEY[:12] not in saved
    json.loads(saved)


def test_live_progress_is_coalesced_and_ends_on_the_final_state(monkeypatch):
    """5,000 tokens arriving at full speed must not become 5,000 display updates (IOPub limit)."""
    import IPython.display

    from lfassist_jupyter.core.events import CompleteData, CompleteEvent, ProgressEvent, TokenEvent
    from lfassist_jupyter.ui.magics import LiveProgress

    shown: list[str] = []

    class Handle:
        def update(self, obj):
            shown.append(obj.data)

    def fake_display(obj, display_id=False):
        shown.append(obj.data)
        return Handle()

    monkeypatch.setattr(IPython.display, "display", fake_display)
    live = LiveProgress(rich=True, quiet=False)
    t0 = time.monotonic()
    live.on_event(ProgressEvent(step="generating", attempt=1, max_attempts=1, message="..."))
    for i in range(5000):
        live.on_event(TokenEvent(chunk=f"t{i} "))
    assert "t4999" in live._html()  # the live view holds every token before completion
    live.on_event(CompleteEvent(data=CompleteData(result="done", validated=False)))
    elapsed = time.monotonic() - t0
    assert len(shown) == live.updates_sent <= elapsed / 0.05 + 3
    assert len(shown) < 100
    assert "Answering" in shown[-1]  # the final state was flushed


def test_status_right_after_load_sees_the_starting_worker(ip, capsys):
    ip.run_line_magic("assist", "status")
    assert "Validator: stopped" not in capsys.readouterr().out


def test_requests_reuse_the_assistant_until_a_new_session(ip, llm):
    llm.queue(intent("question"), "one", intent("question"), "two", intent("question"), "three")
    magics = ip.magics_manager.registry["AssistMagics"]
    ip.run_cell_magic("assist", "", "What is Langflow?")
    first = magics._assistant
    ip.run_cell_magic("assist", "", "And a flow?")
    assert magics._assistant is first  # same conversation, same assistant (memory kept)
    assert "one" in llm.requests[3].text.split("\n")  # the second answer saw the first exchange
    ip.run_line_magic("assist", "new")
    ip.run_cell_magic("assist", "", "What is a component?")
    assert magics._assistant.session_id != first.session_id
    assert "one" not in llm.requests[5].text.split("\n")  # a fresh conversation


def test_a_script_that_exits_right_after_load_ext_exits_cleanly(tmp_path):
    """`%load_ext` starts the sandbox's warm-up in a thread; a process that ends at once (a script,
    `ipython -c`) could abort ("FATAL: exception not rethrown", exit code 134)
    when the interpreter finalised during that thread's imports."""
    import subprocess
    import sys

    script = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'lfassist_jupyter')\n"
        "print('loaded')\n"
    )
    for _ in range(4):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert (proc.returncode, proc.stdout.strip()) == (0, "loaded"), proc.stderr[-500:]
        assert "FATAL" not in proc.stderr


def test_settings_come_from_the_environment_below_config(llm, monkeypatch, capsys):
    """``LFASSIST_<NAME>`` sets a default at ``%load_ext``; ``%config`` overrides it, within bounds."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LFASSIST_MAX_RETRIES", "1")
    monkeypatch.setenv("LFASSIST_MODEL", "gpt-4.1")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        llm.queue(intent("generate_component"), fenced(WRONG_IMPORT))
        result = shell.run_cell_magic("assist", "--no-insert", "uppercase component")
        assert result.attempts == 1 and not result.validated
        assert llm.requests[-1].body["model"] == "gpt-4.1"
        shell.run_line_magic("config", "AssistMagics.max_retries = 2")
        shell.run_line_magic("config", "AssistMagics.max_retries = 11")  # refused: one line, value kept
        assert shell.magics_manager.registry["AssistMagics"].max_retries == 2
        llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
        assert shell.run_cell_magic("assist", "--no-insert", "uppercase component").attempts == 2
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()


def test_a_bad_environment_setting_is_one_clear_line(llm, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("LFASSIST_MAX_RETRIES", "many")
    shell = InteractiveShell.instance()
    try:
        with pytest.raises(UsageError, match="LFASSIST_MAX_RETRIES='many': input should be a valid integer"):
            shell.run_line_magic("load_ext", "lfassist_jupyter")
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()


def test_ipython_config_values_load_and_beat_the_environment(llm, monkeypatch):
    """``c.AssistMagics.max_retries = 5`` in ``ipython_config.py`` (``%load_ext`` used to fail on it)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LFASSIST_MAX_RETRIES", "1")
    monkeypatch.setenv("LFASSIST_INSERT", "false")
    config = Config()
    config.AssistMagics.max_retries = 2
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    shell.rl_next_input = None
    try:
        llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(GOOD))
        result = shell.run_cell_magic("assist", "", "uppercase component")
        assert result.attempts == 2 and result.validated  # the config file's 2, not the environment's 1
        assert shell.rl_next_input is None  # LFASSIST_INSERT=false
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()


def test_langflow_url_is_used_as_connect_url_is(ip, monkeypatch, tmp_path, capsys):
    """``LANGFLOW_URL`` (with ``LANGFLOW_API_KEY``) connects the first view that needs Langflow, as
    ``%assist connect URL`` would; one that cannot be reached is one line, and nothing else stops."""
    from _support.fakelangflow import FakeLangflow

    from lfassist_jupyter.ui.workspace import Workspace

    magics = ip.magics_manager.registry["AssistMagics"]
    monkeypatch.setenv("LANGFLOW_API_KEY", "fake-langflow-key-for-tests")
    ip.run_line_magic("assist", "status")
    assert "Langflow: not connected (%assist connect URL, or LANGFLOW_URL)" in capsys.readouterr().out  # control
    with FakeLangflow() as langflow:
        monkeypatch.setenv("LANGFLOW_URL", langflow.url)
        ip.run_line_magic("assist", "status")
        assert f"Langflow: connected to {langflow.url}" in capsys.readouterr().out
        assert magics.workspace.connected
    monkeypatch.setenv("LANGFLOW_URL", "http://127.0.0.1:9")  # nothing listens there
    magics.workspace = Workspace(data_dir=tmp_path / "data")
    ip.run_line_magic("assist", "status")
    out = capsys.readouterr().out
    assert "Langflow: not connected to LANGFLOW_URL: " in out and "Traceback" not in out
