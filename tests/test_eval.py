"""The eval harness, as a user runs it: ``python -m lfassist_jupyter.eval CASES.toml`` against the
tests' fake model server (the real openai SDK on the wire), checks run in the real sandbox.

One recorded conversation per case (intent reply, then the generation replies), served in order:
a pass, a fail-then-fix, a check mismatch, a case that never validates, and a provider error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support.components import GOOD, QA_SPEC, WRONG_IMPORT, fenced, intent, plan, spec_reply
from _support.fakellm import Status

ROOT = Path(__file__).resolve().parents[1]


CASES = textwrap.dedent(
    """
    [[case]]
    name = "uppercase"
    request = "a component that converts text to uppercase"
    [case.check]
    input = "hello"
    expect = "HELLO"

    [[case]]
    name = "fixed_on_retry"
    request = "a component that converts text to uppercase"
    [case.check]
    input = "abc"
    expect_contains = "ABC"

    [[case]]
    name = "wrong_text"
    request = "a component that converts text to lowercase"
    [case.check]
    input = "Hello"
    expect = "hello"

    [[case]]
    name = "never_valid"
    request = "a component that converts text to uppercase"

    [[case]]
    name = "answer_flow"
    request = "a flow that puts the chat message into a prompt and shows it"
    kind = "flow"
    [case.check]
    input = "hi"
    expect = "Answer this: hi"

    [[case]]
    name = "provider_down"
    request = "a component that converts text to uppercase"
    """
)


def _replies() -> list:
    ask = intent("generate_component")
    return [
        ask, fenced(GOOD),                      # uppercase: passes on the first attempt
        ask, fenced(WRONG_IMPORT), fenced(GOOD),  # fixed_on_retry: fails, then the fix passes
        ask, fenced(GOOD),                      # wrong_text: validates, but uppercases
        ask, fenced(WRONG_IMPORT), fenced(WRONG_IMPORT),  # never_valid: both attempts fail
        intent("build_flow"),  # answer_flow: plan, write, probe-run
        plan("ChatInput", "Prompt Template", "ChatOutput"),
        spec_reply(QA_SPEC),
        Status(401, "invalid key"),             # provider_down: the classification call is refused
    ]  # fmt: skip


def _run(llm, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "LFASSIST_SCRIPT"))}
    env.update(OPENAI_API_KEY="test-key-123456", OPENAI_BASE_URL=llm.openai_base_url)
    return subprocess.run(
        [sys.executable, "-m", "lfassist_jupyter.eval", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_cli_runs_cases_checks_them_in_the_sandbox_and_reports(llm, tmp_path):
    cases = tmp_path / "cases.toml"
    cases.write_text(CASES)
    llm.queue(*_replies())

    proc = _run(llm, tmp_path, str(cases), "--provider", "openai", "--max-retries", "2", "--json", "out.json")

    assert proc.returncode == 1, proc.stderr  # a case errored (the provider refused the key)
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.split()}
    assert " pass " in f" {rows['uppercase']} "
    assert " pass " in f" {rows['fixed_on_retry']} "
    assert "fail: check mismatch" in rows["wrong_text"]
    assert "fail: not validated" in rows["never_valid"]
    assert "error:" in rows["provider_down"] and "key" in rows["provider_down"].lower()
    assert " pass " in f" {rows['answer_flow']} "
    assert "3/6 passed (50%)" in proc.stdout
    assert "3 passed, 3 failed" in proc.stdout.splitlines()[-1]
    assert "test-key-123456" not in proc.stdout + proc.stderr

    report = json.loads((tmp_path / "out.json").read_text())
    assert set(report) == {"provider", "model", "started", "versions", "totals", "cases"}
    assert report["provider"] == "openai" and report["model"] == "gpt-4o"
    assert report["versions"]["lfx"] and report["versions"]["lfassist_jupyter"]
    by_name = {c["name"]: c for c in report["cases"]}
    assert [c["status"] for c in report["cases"]] == ["pass", "pass", "fail", "fail", "pass", "error"]
    assert by_name["uppercase"]["attempts"] == 1 and by_name["uppercase"]["checked"] is True
    assert by_name["uppercase"]["output"] == "HELLO"
    assert by_name["fixed_on_retry"]["attempts"] == 2
    # Calls as the fake server saw them: classification + generation(s) per case.
    calls = [by_name[n]["model_calls"] for n in ("uppercase", "fixed_on_retry", "wrong_text", "never_valid")]
    assert calls == [2, 3, 2, 3]
    # The flow ran in the sandbox: its check output is the prompt filled with the input.
    assert by_name["answer_flow"]["model_calls"] == 3 and by_name["answer_flow"]["output"] == "Answer this: hi"
    assert by_name["uppercase"]["prompt_tokens"] > 0 and by_name["uppercase"]["prompt_chars"] > 0
    totals = report["totals"]
    assert totals["pass_rate"] == 0.5 and totals["first_attempt_rate"] == round(2 / 6, 4)
    assert totals["model_calls"] == sum(c["model_calls"] for c in report["cases"])
    assert totals["calls_per_success"] == round(totals["model_calls"] / 3, 2)
    assert len(llm.requests) == totals["model_calls"]


def test_cli_usage_errors_are_one_line(tmp_path, llm):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[case]]\nname = "x"\nkind = "spaceship"\nrequest = "r"\n')
    proc = _run(llm, tmp_path, str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "case 1 (x)" in proc.stderr and "kind" in proc.stderr
    assert "Traceback" not in proc.stderr

    proc = _run(llm, tmp_path, str(tmp_path / "missing.toml"))
    assert proc.returncode == 2 and "Cannot read the cases file" in proc.stderr

    (tmp_path / "broken.toml").write_text("[[case]\n")
    proc = _run(llm, tmp_path, str(tmp_path / "broken.toml"))
    assert proc.returncode == 2 and "not valid TOML" in proc.stderr
    assert llm.requests == []  # nothing was sent to a model


def test_shipped_suites_are_large_enough_and_well_formed():
    from lfassist_jupyter.eval import load_cases

    components = load_cases(ROOT / "evals" / "components.toml")
    flows = load_cases(ROOT / "evals" / "flows.toml")
    assert len(components) >= 40 and {c.kind for c in components} == {"component"}
    assert len(flows) >= 30 and {c.kind for c in flows} == {"flow"}
    # Deterministic checks wherever one exists: most component cases carry one.
    assert sum(c.check is not None for c in components) >= 30
    assert (ROOT / "evals" / "components.toml").read_text().count("[[case]]") == len(components)


@pytest.mark.slow
def test_assist_eval_in_a_real_shell_returns_the_table(llm, monkeypatch, tmp_path, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-123456")
    cases = tmp_path / "cases.toml"
    cases.write_text(CASES)
    llm.queue(intent("generate_component"), fenced(GOOD))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        suite = shell.run_line_magic("assist", f"eval {cases} -k uppercase --json {tmp_path / 'r.json'}")
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
    assert [c.status for c in suite.cases] == ["pass"] and suite.cases[0].output == "HELLO"
    assert "1/1 passed (100%)" in repr(suite) and "[1/1] uppercase: pass" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["totals"]["passed"] == 1


NEVER_VALID = '[[case]]\nname = "never_valid"\nrequest = "a component that converts text to uppercase"\n'


@pytest.mark.slow
def test_assist_eval_uses_the_notebooks_config_max_retries(llm, monkeypatch, tmp_path):
    """``%config AssistMagics.max_retries = 1`` reaches ``%assist eval``: one generation, not three;
    so does the model that classifies requests (``intent_model``)."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-123456")
    cases = tmp_path / "cases.toml"
    cases.write_text(NEVER_VALID)
    ask = intent("generate_component")
    llm.queue(ask, fenced(WRONG_IMPORT), ask, fenced(WRONG_IMPORT), fenced(WRONG_IMPORT))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        shell.run_line_magic("config", "AssistMagics.max_retries = 1")
        shell.run_line_magic("config", "AssistMagics.intent_model = 'my-router'")
        suite = shell.run_line_magic("assist", f"eval {cases}")
        again = shell.run_line_magic("assist", f"eval {cases} --max-retries 2")  # the flag still wins
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
    (case,) = suite.cases
    assert case.status == "fail" and case.attempts == 1 and case.model_calls == 2
    assert llm.requests[0].body["model"] == "my-router" and llm.requests[1].body["model"] != "my-router"
    assert again.cases[0].attempts == 2


@pytest.mark.slow
def test_cli_takes_max_retries_from_the_environment(llm, tmp_path, monkeypatch):
    cases = tmp_path / "cases.toml"
    cases.write_text(NEVER_VALID)
    llm.queue(intent("generate_component"), fenced(WRONG_IMPORT), fenced(WRONG_IMPORT))
    monkeypatch.setenv("LFASSIST_MAX_RETRIES", "1")
    proc = _run(llm, tmp_path, str(cases), "--json", "out.json")
    assert proc.returncode == 0, proc.stderr
    (case,) = json.loads((tmp_path / "out.json").read_text())["cases"]
    assert case["attempts"] == 1 and case["model_calls"] == 2

    monkeypatch.setenv("LFASSIST_MAX_RETRIES", "11")
    proc = _run(llm, tmp_path, str(cases))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: LFASSIST_MAX_RETRIES='11'") and "less than or equal to 10" in proc.stderr
