"""The reduced sandbox refuses reads of HOME and of the notebook's directory -- but never the
interpreter's own files, wherever they live: a ``.venv`` inside the project folder the notebook
runs from, a Python installed with HOME as its prefix (its standard library under HOME), a
project folder that *is* the venv (``python -m venv .``).

Each case starts a reduced sandbox (``LFASSIST_SANDBOX=reduced``) with HOME and the working
directory placed so, and goes through the user's doors: ``validate_component`` (a component whose
output lazily imports ``encodings.cp1252`` and ``zoneinfo``: standard-library imports after the
hook is armed), ``build_flow``, ``validate_flow`` (a flow with a custom node whose code the sandbox
loads) and a probe run (lfx's runner imports ``encodings.cp1252`` lazily).  The control in each
case: a file the user owns under the denied directories -- a fake ``~/.aws/credentials``, a data
file next to the notebook, a project file that is not the interpreter's -- is still refused to
component code: the report names the refused read, and nothing of the file comes back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from _support.components import GOOD, QA_SPEC, component

from lfassist_jupyter import build_flow, validate_component, validate_flow
from lfassist_jupyter.flows.catalog import default_catalog
from lfassist_jupyter.sandbox.client import SandboxValidator

WHY = "LFASSIST_SANDBOX=reduced"
SECRET = "aws_secret_access_key = reduced-reads-not-a-real-key"

LAZY_STDLIB = component(
    """import codecs, zoneinfo
text = (self.input_text or "cafe").encode("cp1252").decode("cp1252")
codecs.lookup("cp1252")
zoneinfo.ZoneInfo("UTC")
return Message(text=text.upper())"""
)
"""Standard-library modules imported lazily, after the hook is armed (cp1252 is what lfx's runner
imports during a probe run)."""

CUSTOM_SPEC = """\
nodes:
  A: ChatInput
  U: Uppercase
  C: ChatOutput
edges:
  A.message -> U.input_text
  U.output -> C.input_value
"""


def _reader(path: Path) -> str:
    return component(f"return Message(text=open({str(path)!r}).read())")


def _venv_dir() -> Path:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests run in no venv here: there is no venv to place in the notebook's folder")
    return Path(os.path.realpath(sys.prefix))


def _a_project_file(folder: Path, venv: Path) -> Path:
    """A regular file of ``folder`` that is not the interpreter's (the project's README, say)."""
    for entry in sorted(folder.iterdir()):
        if entry.is_file() and not entry.is_relative_to(venv) and entry.stat().st_size:
            return entry
    pytest.skip(f"{folder} holds no file to try reading")


def _place(case: str, tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """(HOME, working directory, the user's files there that component code must not read)."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".aws").mkdir(parents=True)
    project.mkdir()
    credentials = home / ".aws" / "credentials"
    neighbour = project / "customers.csv"
    credentials.write_text(f"[default]\n{SECRET}\n")
    neighbour.write_text(f"name,key\nada,{SECRET}\n")
    if case == "venv in the notebook's folder":
        venv = _venv_dir()
        return home, venv.parent, [credentials, _a_project_file(venv.parent, venv)]
    if case == "the notebook's folder is the venv":
        venv = _venv_dir()
        return home, venv, [credentials, venv / "pyvenv.cfg"]
    # A Python installed with HOME as its prefix: its standard library lives under HOME, and
    # HOME's other files (here the prefix's own header, which no import reads) stay refused.
    base = Path(os.path.realpath(sys.base_prefix))
    header = next(base.glob("include/python3*/Python.h"), None)
    return base, project, [neighbour, *([header] if header else [])]


@pytest.fixture(
    scope="module",
    params=["venv in the notebook's folder", "the notebook's folder is the venv", "Python installed in HOME"],
)
def placed(request, tmp_path_factory):
    """A started reduced sandbox whose kernel ran with HOME and the working directory placed as
    the case says (the sandbox reads both when it starts), and the files it must refuse."""
    home, cwd, private = _place(request.param, tmp_path_factory.mktemp("reduced-reads"))
    patch = pytest.MonkeyPatch()
    patch.setenv("LFASSIST_SANDBOX", "reduced")
    patch.setenv("HOME", str(home))
    patch.chdir(cwd)
    try:
        validator = SandboxValidator(timeout=60)
        validator.start()
        validator.reference()  # ready
    finally:
        patch.undo()
    assert validator.info()["isolation"] == "reduced"
    yield validator, private
    validator.close()


def test_a_component_importing_the_standard_library_lazily_validates(placed):
    box, _ = placed
    report = validate_component(LAZY_STDLIB, validator=box, timeout=30)
    assert report.is_valid and report.findings == [], report  # nothing refused, nothing to say
    assert report.reduced_isolation == WHY


def test_a_flow_builds_validates_and_probe_runs(placed):
    box, _ = placed
    catalog = default_catalog(box)
    built = build_flow(QA_SPEC, catalog=catalog)
    assert built.ok, built.errors
    run = box.probe_run(built.flow, "hello", timeout=60)
    assert run.ok and run.text == "Answer this: hello", run.error  # lfx's answer for this flow
    assert run.reduced_isolation == WHY

    catalog.add("Uppercase", box.component_template(GOOD).template)  # a custom node: its code loads in the sandbox
    custom = build_flow(CUSTOM_SPEC, catalog=catalog)
    assert custom.ok, custom.errors
    report = validate_flow(custom.flow, catalog=catalog)
    assert report.is_valid, report.errors
    run = box.probe_run(custom.flow, "hello", timeout=60)
    assert run.ok and run.text == "HELLO", run.error


def test_the_users_own_files_stay_refused(placed):
    """The control: what the interpreter may read does not open HOME or the notebook's folder."""
    box, private = placed
    for path in private:
        assert path.is_file()  # it is there to read: a refusal, not a missing file, fails the validation
        report = validate_component(_reader(path), validator=box, timeout=30)
        refused = [f for f in report.findings if f.rule == "sandbox-refused"]
        assert refused and refused[0].evidence == f"reading {path} is not allowed while validating", report
        assert "calls `open` at line 12 (is refused by the sandbox)" in refused[0].message
        assert SECRET not in str(report.model_dump())
