"""``--help`` answers every magic and subcommand with its part of ``%assist help``, never an
"unrecognized arguments" error, and runs nothing (no model call, no validation)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError


@pytest.mark.parametrize(
    ("magic", "line", "expected", "not_expected"),
    [
        ("assist", "--help", "--max-retries N", "%assist status"),
        ("assist", "--model gpt-4o -h", "--interpolate", "%%assist_flow"),
        ("assist_validate", "--help", "--no-smoke", "--max-retries"),
        ("assist_flow", "--save x.json --help", "--run-local", "--no-smoke"),
    ],
)
def test_cell_magics_answer_help_without_running(ip, llm, capsys, magic, line, expected, not_expected):
    result = ip.run_cell_magic(magic, line, "a component that uppercases text")
    out = capsys.readouterr().out
    assert result is None and expected in out and not_expected not in out
    assert llm.requests == []  # nothing was asked of the model


def test_subcommand_help_is_its_part_of_the_help(ip, capsys):
    ip.run_line_magic("assist", "--help")
    whole = capsys.readouterr().out
    assert "%assist status" in whole and "%%assist_flow" in whole
    ip.run_line_magic("assist", "export --help")
    out = capsys.readouterr().out
    assert out.startswith("%assist export DIR") and "extension" in out and "%assist status" not in out
    ip.run_line_magic("assist", "connect --help")
    out = capsys.readouterr().out
    assert "--ask-key" in out and "Connected" not in out and "Not connected" not in out
    ip.run_line_magic("assist", "flow --help")
    out = capsys.readouterr().out
    assert "%assist flow load FILE" in out and "%assist flows " not in out


def test_eval_help_is_the_eval_clis_help(ip, capsys):
    assert ip.run_line_magic("assist", "eval --help") is None  # no UsageError after the help
    out = capsys.readouterr().out
    assert "--strict" in out and "usage: %assist eval" in out
    with pytest.raises(UsageError, match="--strict"):
        ip.run_line_magic("assist", "eval")  # the control: a real usage error still is one
