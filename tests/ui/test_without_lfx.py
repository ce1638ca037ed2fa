"""Without the ``[lfx]`` extra (lfx not importable by the sandbox's interpreter): ``%assist status``
warns, a request spends no model call before it says so, and the advice is the extra's install line."""

from __future__ import annotations

import sys

import pytest
from _support.components import GOOD, SHELL_KEY, fenced, intent

from lfassist_jupyter.sandbox.lfx_check import LFX_INSTALL


@pytest.fixture
def shell(llm, monkeypatch, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SHELL_KEY)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "lfassist_jupyter")
    yield ip
    ip.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


def _workspace(shell, validator, tmp_path):
    from lfassist_jupyter.ui.workspace import Workspace

    shell.magics_manager.registry["AssistMagics"].workspace = Workspace(
        data_dir=tmp_path / "data", local_validator=validator
    )


def test_without_lfx_status_warns_and_a_request_spends_no_model_call(shell, llm, sandbox, tmp_path, capsys):
    from lfassist_jupyter.sandbox.client import SandboxValidator

    without = tmp_path / "python-without-lfx"  # this Python with -S: no site-packages, no lfx
    without.write_text(f'#!/bin/sh\nexec {sys.base_prefix}/bin/python3 -S "$@"\n')
    without.chmod(0o755)
    validator = SandboxValidator(python=str(without), timeout=5)
    try:
        _workspace(shell, validator, tmp_path)
        shell.run_line_magic("assist", "status")
        out = capsys.readouterr().out
        assert f"Warning: lfx is not installed for the validation sandbox ({without})" in out
        assert f"Install the extra: {LFX_INSTALL}" in out

        llm.queue(intent("generate_component"), fenced(GOOD))
        result = shell.run_cell_magic("assist", "--quiet", "a component that uppercases text")
        assert result.status == "error" and LFX_INSTALL in result.error and "\n" not in result.error
        assert llm.requests == []  # no model call was spent before the error
    finally:
        validator.close()

    _workspace(shell, sandbox, tmp_path)  # the control: with lfx, the same request is answered
    result = shell.run_cell_magic("assist", "--quiet --new-session", "a component that uppercases text")
    assert result.validated and len(llm.requests) == 2
    shell.run_line_magic("assist", "status")
    assert "Warning" not in capsys.readouterr().out
