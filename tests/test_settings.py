"""Every ``LFASSIST_*`` setting is declared once (``lfassist_jupyter/settings.py``) and read from
there: no module reads one of its own, the docs' table (docs/configuration.md) and ``%config AssistMagics`` list them,
and a bad value is the same one ``ConfigError`` line whichever surface reads it first -- the
settings, ``sandbox.shared()``, ``%load_ext``, the chat panel, the eval CLI."""

from __future__ import annotations

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


def test_a_bad_validator_timeout_is_the_same_line_everywhere(monkeypatch, tmp_path, no_shared_sandbox):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.sandbox import shared
    from lfassist_jupyter.settings import Settings
    from lfassist_jupyter.ui.panel import ChatPanel

    monkeypatch.setenv("LFASSIST_VALIDATOR_TIMEOUT", "ten")
    lines = []
    with pytest.raises(ConfigError) as caught:
        Settings.from_env()
    lines.append(str(caught.value))
    with pytest.raises(ConfigError) as caught:
        shared()
    lines.append(str(caught.value))
    with pytest.raises(ConfigError) as caught:
        ChatPanel(data_dir=tmp_path / "panel")
    lines.append(str(caught.value))
    shell = InteractiveShell.instance()
    try:
        with pytest.raises(UsageError) as caught:
            shell.run_line_magic("load_ext", "lfassist_jupyter")
        lines.append(str(caught.value))
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
    cli = subprocess.run(
        [sys.executable, "-m", "lfassist_jupyter.eval", str(tmp_path / "cases.toml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    lines.append(cli.stderr.strip().removeprefix("error: "))

    assert lines[0].startswith(BAD) and "\n" not in lines[0]
    assert lines == [lines[0]] * 5
