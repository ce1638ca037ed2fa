"""Every ``LFASSIST_*`` setting is declared once (``lfassist_jupyter/settings.py``) and read from
there: no module reads one of its own, the docs' table (docs/configuration.md) and ``%config AssistMagics`` list them,
and a bad value is the same one ``ConfigError`` line whichever surface reads it first -- the
settings, ``sandbox.shared()``, ``%load_ext``, ``%assist status``, ``%%assist``, the chat panel,
the MCP server, the eval CLI -- for every setting (a provider name the table does not have too)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lfassist_jupyter import settings
from lfassist_jupyter.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lfassist_jupyter"
BAD = "LFASSIST_VALIDATOR_TIMEOUT='ten': input should be a valid number"
DECLARED = {settings.env_name(name) for name in settings.FIELDS}


def test_every_lfassist_variable_the_package_names_is_declared():
    named = set()
    for path in PACKAGE.rglob("*.py"):
        named |= set(re.findall(r"LFASSIST_[A-Z][A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    named -= {"LFASSIST_VALIDATOR", "LFASSIST_SANDBOX_"}  # prefixes in prose ("LFASSIST_VALIDATOR_*")
    assert named and named <= DECLARED, sorted(named - DECLARED)


def test_nothing_reads_an_lfassist_variable_but_the_settings():
    """No ``os.environ.get("LFASSIST_...")`` left: every read goes through ``settings.read``."""
    reads = re.compile(r"""(environ|getenv|env)(\.get)?[(\[]\s*["']LFASSIST_""")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "settings.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []


def test_the_docs_table_and_config_help_list_every_setting():
    from lfassist_jupyter.ui.magics import AssistMagics

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = page[: page.index("```")]
    assert all(f"`{variable}`" in table for variable in DECLARED), sorted(v for v in DECLARED if v not in table)
    shown = AssistMagics.class_get_help()
    for name in settings.NOTEBOOK:
        assert f"AssistMagics.{name}" in shown and settings.FIELDS[name].metadata["help"][:40] in shown
    assert not any(f"AssistMagics.{name}" in shown for name in settings.FIELDS if name not in settings.NOTEBOOK)


def test_importing_the_settings_imports_no_pydantic():
    code = "import sys, lfassist_jupyter.settings; print(sorted(m for m in ('pydantic', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("validator_timeout", "ten", "input should be a valid number"),
        ("validator_timeout", "inf", "input should be a finite number"),
        ("max_retries", "11", "input should be less than or equal to 10"),
        ("validator_memory_mb", "12", "input should be greater than or equal to 256"),
        ("sandbox", "off", "input should be 'auto' or 'reduced'"),
        ("sandbox_landlock", "maybe", "input should be a valid boolean"),
        ("timeout", "0", "input should be greater than 0"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable_and_the_value(name, text, problem):
    with pytest.raises(ConfigError) as caught:
        settings.read(name, {settings.env_name(name): text})
    message = str(caught.value)
    assert message.startswith(f"{settings.env_name(name)}={text!r}: {problem}") and "\n" not in message
    assert settings.read(name, {}) == settings.FIELDS[name].default  # control: unset is the default


def test_values_parse_as_their_types():
    env = {
        "LFASSIST_VALIDATOR_TIMEOUT": " 2.5 ",
        "LFASSIST_SANDBOX": "reduced",
        "LFASSIST_SANDBOX_LANDLOCK": "off",
        "LFASSIST_VALIDATOR_MEMORY_MB": "2048",
        "LFASSIST_DATA_DIR": "",
    }
    assert settings.read("validator_timeout", env) == 2.5
    assert (settings.read("sandbox", env), settings.read("sandbox_landlock", env)) == ("reduced", False)
    assert settings.read("validator_memory_mb", env) == 2048 and settings.read("data_dir", env) is None


BAD_VALUES = {
    "provider": lambda tmp: "gemini",  # a provider the table does not have: never ignored
    "model": lambda tmp: "gpt 4o",
    "intent_model": lambda tmp: "mini\tmodel",
    "flow_model": lambda tmp: "anthropic:",
    "max_retries": lambda tmp: "11",
    "insert": lambda tmp: "maybe",
    "server_validation": lambda tmp: "sometimes",
    "validator_timeout": lambda tmp: "ten",
    "validator_python": lambda tmp: str(tmp / "no-such-python"),
    "validator_memory_mb": lambda tmp: "100",
    "sandbox": lambda tmp: "bogus",
    "sandbox_landlock": lambda tmp: "perhaps",
    "timeout": lambda tmp: "0",
    "script": lambda tmp: str(tmp / "no-such-replies.json"),
    "data_dir": lambda tmp: str(Path(__file__)),  # a file, not a folder
}


def test_every_setting_has_a_bad_value_below():
    assert set(BAD_VALUES) == set(settings.FIELDS)


@pytest.fixture(scope="module")
def shell(sandbox):
    """One IPython shell with the extension loaded (the session's warm sandbox as its validator)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    yield ip
    if "lfassist_jupyter" in ip.extension_manager.loaded:
        ip.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_a_bad_setting_is_the_same_line_through_every_entry_point(name, shell, monkeypatch, tmp_path, capsys):
    """``%load_ext``, ``%assist status``, ``%%assist``, the panel, the MCP server and the eval CLI
    answer a bad ``LFASSIST_*`` value with one line, the same line -- before anything runs."""
    from IPython.core.error import UsageError

    from lfassist_jupyter import eval as eval_cli
    from lfassist_jupyter import mcp
    from lfassist_jupyter.providers.table import PREFERRED_ORDER
    from lfassist_jupyter.ui.panel import ChatPanel

    if "lfassist_jupyter" not in shell.extension_manager.loaded:
        shell.run_line_magic("load_ext", "lfassist_jupyter")  # with every setting good
    value = BAD_VALUES[name](tmp_path)
    monkeypatch.setenv(settings.env_name(name), value)
    with pytest.raises(ConfigError) as caught:
        settings.read(name, providers=PREFERRED_ORDER)
    expected = str(caught.value)
    assert expected.startswith(f"{settings.env_name(name)}={value[:80]!r}: input should be") and "\n" not in expected

    lines = []
    for line, cell in (("status", None), ("", "a component that uppercases text")):
        with pytest.raises(UsageError) as caught:
            shell.run_cell_magic("assist", line, cell) if cell else shell.run_line_magic("assist", line)
        lines.append(str(caught.value))
    with pytest.raises(ConfigError) as caught:
        ChatPanel(data_dir=tmp_path / "panel")
    lines.append(str(caught.value))
    capsys.readouterr()
    assert mcp.main([]) == 2
    lines.append(capsys.readouterr().err.strip())
    assert eval_cli.main([str(tmp_path / "cases.toml")]) == 2
    lines.append(capsys.readouterr().err.strip().removeprefix("error: "))
    shell.run_line_magic("unload_ext", "lfassist_jupyter")
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("load_ext", "lfassist_jupyter")
    lines.append(str(caught.value))

    assert lines == [expected] * 6


def test_the_eval_command_line_says_the_same_line_and_exits_2(tmp_path):
    """The real process (``python -m lfassist_jupyter.eval``): the line, no traceback.  (The MCP
    server's ``main`` is the same call, checked in-process above: its process imports the MCP SDK
    for 20 s on a busy machine.)"""
    env = {**os.environ, "LFASSIST_PROVIDER": "gemini"}
    done = subprocess.run(
        [sys.executable, "-m", "lfassist_jupyter.eval", str(tmp_path / "cases.toml")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.strip().removeprefix("error: ")
    assert line.startswith("LFASSIST_PROVIDER='gemini': input should be 'openai' or 'anthropic'") and "\n" not in line


def test_the_sandbox_reads_a_bad_value_as_the_same_line(monkeypatch, no_shared_sandbox):
    from lfassist_jupyter.sandbox import shared

    monkeypatch.setenv("LFASSIST_VALIDATOR_TIMEOUT", "ten")
    with pytest.raises(ConfigError) as caught:
        shared()
    assert str(caught.value).startswith(BAD) and "\n" not in str(caught.value)
