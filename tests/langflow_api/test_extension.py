"""Approved components exported as a Langflow extension bundle, checked by lfx itself.

Through the doors a user has (``%assist export DIR`` in a real IPython shell, the panel's
Export button, ``export_extension``): the bundle passes the installed lfx's ``lfx extension
validate``, and its own tests (one per component, built from the smoke run's sample inputs)
pass in a fresh process (``python -m pytest DIR/tests``). Code that did not validate, or that the
security scan refuses, never reaches a bundle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support.components import DANGEROUS, DATA_LIST_BUG, GOOD, LOWER_AND_UPPER, SHELL_KEY, fenced, intent
from _support.lfxcli import lfx

from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.langflow.extension import MARKER, bundle_problem, export_extension


def lfx_components() -> Path:
    """The component modules of the installed lfx (tests may import lfx: it is the ground truth)."""
    import lfx

    return Path(lfx.__file__).parent / "components"


def bundle_tests(root: Path) -> subprocess.CompletedProcess:
    """The bundle's own tests in a fresh interpreter, as its README says to run them, with no
    secret in the environment."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
        cwd=root.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def assert_lfx_accepts(root: Path) -> None:
    done = lfx("extension", "validate", str(root))
    assert done.returncode == 0 and "validate: ok" in done.stdout, done.stdout + done.stderr
    tests = bundle_tests(root)
    assert tests.returncode == 0 and " passed" in tests.stdout and "failed" not in tests.stdout, tests.stdout[-3000:]


def test_assist_export_writes_a_bundle_lfx_validates_and_whose_tests_pass(ip, llm, sandbox, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    llm.queue(intent("generate_component"), fenced(GOOD), intent("generate_component"), fenced(LOWER_AND_UPPER))
    ip.run_cell_magic("assist", "--no-insert --quiet", "a component that uppercases a text")
    ip.run_cell_magic("assist", "--no-insert --quiet", "one that writes it in upper and lower case")
    exported = ip.run_line_magic("assist", "export my-components")
    assert exported.components == ["UppercaseComponent", "CaseComponent"] and not exported.skipped
    root = tmp_path / "my-components"
    manifest = json.loads((root / "extension.json").read_text())
    assert manifest["id"] == "my-components" and manifest["bundles"][0]["path"] == "components/my_components"
    assert (root / "components/my_components/uppercase_component.py").read_text() == GOOD  # as it validated
    assert sorted(p.name for p in (root / "tests").glob("test_*.py")) == [
        "test_case_component.py",
        "test_uppercase_component.py",
    ]
    assert "'input_text': 'hello world'" in (root / "tests/test_uppercase_component.py").read_text()
    assert "pip install" in (root / "README.md").read_text()
    assert_lfx_accepts(root)
    assert not any(SHELL_KEY.encode() in p.read_bytes() for p in root.rglob("*") if p.is_file())

    only = ip.run_line_magic("assist", "export only-case CaseComponent --name 'Case tools'")
    assert only.components == ["CaseComponent"] and only.name == "Case tools"
    with pytest.raises(Exception, match="No validated component named Nope"):
        ip.run_line_magic("assist", "export x Nope")


def test_only_code_that_validated_and_passed_the_scan_goes_in(sandbox, tmp_path):
    root = tmp_path / "bundle"
    assert "os.system" in DANGEROUS  # control: the refused code is in what was asked for
    exported = export_extension(root, [DANGEROUS, GOOD, DATA_LIST_BUG], validator=sandbox)
    assert exported.components == ["UppercaseComponent"]
    assert len(exported.skipped) == 2
    assert "os.system" in exported.skipped[0] and "SplitterComponent" in exported.skipped[1]
    written = "".join(p.read_text() for p in root.rglob("*.py"))
    assert "os.system" not in written and "SplitterComponent" not in written
    with pytest.raises(ConfigError, match="no component passed validation"):
        export_extension(tmp_path / "none", [DANGEROUS], validator=sandbox)
    assert not (tmp_path / "none").exists()


def test_every_kind_of_sample_input_is_written_into_a_passing_test(sandbox, tmp_path):
    """Components whose smoke run set a Message, Data, a DataFrame, a file, a list, numbers and
    options (lfx's own processing components, and one reading a file) have tests that pass."""
    source = lfx_components() / "processing"
    picked = ["parser.py", "parse_dataframe.py", "data_to_dataframe.py", "message_to_data.py", "regex.py"]
    codes = [(source / name).read_text() for name in picked]
    codes.append(
        GOOD.replace("UppercaseComponent", "FileLinesComponent")
        .replace("from lfx.io import MessageTextInput, Output", "from lfx.io import FileInput, IntInput, Output")
        .replace(
            'inputs = [MessageTextInput(name="input_text", display_name="Text")]',
            'inputs = [FileInput(name="path", display_name="File", file_types=["txt"]),'
            ' IntInput(name="limit", display_name="Limit", value=1)]',
        )
        .replace(
            'return Message(text=(self.input_text or "").upper())',
            "from pathlib import Path\n\n        return Message(text=Path(self.path).read_text().splitlines()[0])",
        )
    )
    root = tmp_path / "kinds"
    exported = export_extension(root, codes, validator=sandbox)
    assert len(exported.components) == len(codes), exported.skipped
    tests = "".join(p.read_text() for p in (root / "tests").glob("test_*.py"))
    for literal in ("Message(text=", "Data(data=", "DataFrame([", "_file(tmp_path,", "'limit': 1"):
        assert literal in tests, literal
    assert_lfx_accepts(root)


def test_exporting_again_adds_and_keeps_and_never_writes_over_other_files(sandbox, tmp_path):
    root = tmp_path / "bundle"
    export_extension(root, [GOOD], validator=sandbox)
    again = export_extension(root, [LOWER_AND_UPPER], validator=sandbox)
    assert again.components == ["CaseComponent"] and again.kept == ["UppercaseComponent"]
    marker = json.loads((root / MARKER).read_text())
    assert set(marker["components"]) == {"UppercaseComponent", "CaseComponent"}
    assert (root / "components/bundle/uppercase_component.py").is_file()

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty and was not exported here"):
        export_extension(theirs, [GOOD], validator=sandbox)
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        export_extension(tmp_path / "a-file", [GOOD], validator=sandbox)
    with pytest.raises(ConfigError, match="non-empty list"):
        export_extension(tmp_path / "x", "not a list", validator=sandbox)  # type: ignore[arg-type]


def test_a_symlink_in_an_earlier_bundle_is_not_followed(sandbox, tmp_path):
    root = tmp_path / "bundle"
    export_extension(root, [GOOD], validator=sandbox)
    outside = tmp_path / "outside"
    outside.mkdir()
    tests = root / "tests"
    for p in tests.iterdir():
        p.unlink()
    tests.rmdir()
    tests.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError, match="link or leaves"):
        export_extension(root, [GOOD], validator=sandbox)
    assert not list(outside.iterdir())


def test_panel_export_button(sandbox, tmp_path, monkeypatch):
    from lfassist_jupyter.core.session import Session, Turn
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    session = Session(id="lfassist-exporttest", title="components")
    session.turns = [
        Turn(role="user", content="a component that uppercases"),
        Turn(role="assistant", content=GOOD, kind="component", class_name="UppercaseComponent", validated=True),
    ]
    workspace.store.save(session)
    panel = ChatPanel(workspace=workspace)
    panel.switch_session("lfassist-exporttest")
    card = panel.messages[-1]
    assert card["kind"] == "component"
    monkeypatch.chdir(tmp_path)
    panel.export_component(card["id"]).result(120)  # what the card's Export button asks for
    target = tmp_path / "lfassist-components"  # next to the notebook
    assert panel.notice.startswith(f"Exported UppercaseComponent to the extension in {target}")
    assert "pip install" in panel.notice
    done = lfx("extension", "validate", str(target))
    assert done.returncode == 0, done.stdout
    panel._on_view_msg(panel, {"type": "export_component", "id": panel.messages[0]["id"]})  # the button's wire name
    assert panel.notice == "Only a validated component can be exported."


def test_the_bundle_rule_agrees_with_lfx_extension_validate():
    """``bundle_problem`` (kernel side, on the syntax tree) refuses exactly the modules lfx's own
    bundle scan refuses, over every component module lfx ships."""
    from lfx.extension.errors import ExtensionErrorCollection
    from lfx.extension.validate import _scan_python_file

    root = lfx_components()
    files = [p for p in sorted(root.rglob("*.py")) if p.name != "__init__.py" and "deactivated" not in p.parts]
    assert len(files) > 100
    disagree = []
    refused = 0
    for path in files:
        errors = ExtensionErrorCollection()
        has_component = _scan_python_file(path, path.parent, errors)
        theirs = not errors.ok or not has_component
        ours = bundle_problem(path.read_text()) is not None
        refused += theirs
        if ours != theirs:
            disagree.append(path.name)
    assert refused > 0 and not disagree, disagree


def test_an_earlier_markers_version_and_name_cannot_rewrite_the_pyproject(sandbox, tmp_path):
    """A folder holding a marker of an earlier export (a shared or cloned folder) lends the export
    its id, name and version; a version or name written to break out of their TOML strings must
    not add tables or entry points to the pyproject the export rewrites.  The control: the
    marker was read (the bundle keeps its id)."""
    import tomllib

    target = tmp_path / "bundle"
    target.mkdir()
    marker = {
        "id": "kept-id",
        "name": 'Team\n[project.entry-points."langflow.extensions"]\nevil = "os"',
        "version": '0.1.0"\n[project.entry-points."console_scripts"]\nls = "os:system',
        "components": {},
    }
    (target / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    exported = export_extension(target, [GOOD], validator=sandbox)
    assert exported.extension_id == "kept-id"  # the control: the earlier marker was honoured
    pyproject = tomllib.loads((target / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["version"] == "0.1.0"
    assert list(pyproject["project"]["entry-points"]) == ["langflow.extensions"]
    assert list(pyproject["project"]["entry-points"]["langflow.extensions"]) == ["kept_id"]
    assert "\n" not in json.loads((target / "extension.json").read_text())["name"]


# -- names in the bundle's files, and files that are not the export's (issue 38) -----------------

MARKER_FILE = "pwned-by-a-name"
HOSTILE_INPUT = f"notes\nimport os; os.system('touch {MARKER_FILE}')\n#"
HOSTILE_TITLE = (
    'Team 🚀 "tools"\n[project.scripts]\nevil = "os:system"\n<img src=x onerror=alert(1)> '
    "[a link](javascript:alert(1)) `code` # heading *em* " + "long " * 60
)


def _with_hostile_input(name: str) -> str:
    """GOOD with a second input named ``name`` whose sample the smoke run cannot record (its
    default is longer than a sample may be), so the bundle's test names it in a comment."""
    return GOOD.replace(
        "from lfx.io import MessageTextInput, Output", "from lfx.io import MessageTextInput, MultilineInput, Output"
    ).replace(
        'inputs = [MessageTextInput(name="input_text", display_name="Text")]',
        f'inputs = [MessageTextInput(name="input_text", display_name="Text"), '
        f'MultilineInput(name={name!r}, display_name="Notes", value="x" * 5000)]',
    )


def _markdown_tokens(text: str) -> list:
    from markdown_it import MarkdownIt

    tokens = []
    for token in MarkdownIt("commonmark").parse(text):
        tokens += [token, *(token.children or [])]
    return tokens


def test_names_in_the_bundle_files_are_escaped_for_each_format(sandbox, tmp_path):
    """An input named to close the test file's comment and start a statement, and an export name
    written to break out of TOML, make Markdown links and HTML, and overflow the manifest: every
    generated file parses as its format, and no injected statement, table, link or tag appears.
    The control: the hostile input reached the writer (its sample could not be recorded, so the
    test names it), and written as the old comment did, it is an ``import`` statement."""
    import ast

    import tomllib

    exported = export_extension(
        tmp_path / "bundle", [_with_hostile_input(HOSTILE_INPUT)], name=HOSTILE_TITLE, validator=sandbox
    )
    root = tmp_path / "bundle"
    assert exported.components == ["UppercaseComponent"] and not exported.skipped

    test_file = (root / "tests" / "test_uppercase_component.py").read_text(encoding="utf-8")
    assert repr(HOSTILE_INPUT) in test_file  # the control: the name is in the file, as a literal
    unescaped = ast.parse(f"# Left at their defaults: {HOSTILE_INPUT}.")  # what the old comment made
    assert any(isinstance(node, ast.Import) for node in unescaped.body)
    tree = ast.parse(test_file)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]
    assert [n.names[0].name for n in tree.body if isinstance(n, ast.Import)] == ["asyncio", "inspect"]

    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "🚀" in pyproject["project"]["description"] and '"tools"' in pyproject["project"]["description"]
    assert "scripts" not in pyproject["project"] and list(pyproject["project"]["entry-points"]) == [
        "langflow.extensions"
    ]
    manifest = json.loads((root / "extension.json").read_text(encoding="utf-8"))
    assert manifest["name"] == exported.name and "\n" not in exported.name and len(exported.name) <= 120
    assert manifest["name"].startswith('Team 🚀 "tools" [project.scripts]')

    readme = (root / "README.md").read_text(encoding="utf-8")
    kinds = {t.type for t in _markdown_tokens(readme)}
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, kinds
    heading = _markdown_tokens(readme.split("\n", 1)[0])
    assert [t.type for t in heading if t.children is None and t.nesting == 0] == ["text"]
    assert heading[1].content.replace("\\", "") == exported.name  # the name, shown as written

    done = lfx("extension", "validate", str(root))
    assert done.returncode == 0 and "validate: ok" in done.stdout, done.stdout + done.stderr
    assert not (tmp_path / MARKER_FILE).exists()


def test_an_export_overwrites_only_the_bytes_it_wrote(sandbox, tmp_path):
    """A marker planted in a project (what MCP's save_flow could once write) makes the folder
    look like an earlier export: the export honours it (the control: its id is taken, the
    component is written) but the project's own pyproject.toml, README.md and .gitignore keep
    their bytes, said in one line.  In a bundle of ours, a file the user edited is kept too,
    while the files still as exported are rewritten (the README lists the new component)."""
    project = tmp_path / "project"
    project.mkdir()
    theirs = {"pyproject.toml": '[project]\nname = "mine"\n', "README.md": "# Mine\n", ".gitignore": "*.log\n"}
    for file, text in theirs.items():
        (project / file).write_text(text, encoding="utf-8")
    (project / MARKER).write_text(json.dumps({"id": "planted", "components": {}}), encoding="utf-8")
    exported = export_extension(project, [GOOD], validator=sandbox)
    assert exported.extension_id == "planted" and (project / "components/planted/uppercase_component.py").is_file()
    assert {file: (project / file).read_text(encoding="utf-8") for file in theirs} == theirs
    assert sorted(exported.not_overwritten) == sorted(theirs)
    said = [line for line in exported.lines() if line.startswith("Not overwritten")]
    assert len(said) == 1 and all(file in said[0] for file in theirs)

    bundle = tmp_path / "bundle"
    export_extension(bundle, [GOOD], validator=sandbox)
    export_extension(bundle, [LOWER_AND_UPPER], validator=sandbox)
    assert "CaseComponent" in (bundle / "README.md").read_text()  # its own README: rewritten
    (bundle / "README.md").write_text("# My notes on these components\n", encoding="utf-8")
    module = bundle / "components/bundle/uppercase_component.py"
    module.write_text(GOOD + "# my change\n", encoding="utf-8")
    again = export_extension(bundle, [GOOD, LOWER_AND_UPPER], validator=sandbox)
    assert again.components == ["CaseComponent"] and again.kept == ["UppercaseComponent"]
    assert sorted(again.not_overwritten) == ["README.md", "components/bundle/uppercase_component.py"]
    assert (bundle / "README.md").read_text() == "# My notes on these components\n"
    assert module.read_text().endswith("# my change\n")
