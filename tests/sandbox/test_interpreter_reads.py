"""The sandbox never shows component code HOME or the notebook's directory -- and always lets the
interpreter read its own files, wherever they live: a ``.venv`` inside the project folder the
notebook runs from, a project folder that *is* the venv (``python -m venv .``), a Python installed
with HOME as its prefix (its standard library under HOME).

The reduced sandbox (``LFASSIST_SANDBOX=reduced``) refuses reads of both directories in its audit
hook, except the interpreter's own directories; the full one binds only the interpreter's
directories into its mount namespace.  Either way one rule decides: a prefix that holds HOME or the
notebook's folder is not the interpreter's to show whole -- its standard library and site
directories are, on their own.  Each case starts a sandbox with HOME and the working directory
placed so, and goes through the user's doors: ``validate_component`` (a component whose output
lazily imports ``encodings.cp1252`` and ``zoneinfo``: standard-library imports after the hook is
armed), ``build_flow``, ``validate_flow`` (a flow with a custom node whose code the sandbox loads)
and a probe run (lfx's runner imports ``encodings.cp1252`` lazily).  The control in each case: a
file the user owns there -- a fake ``~/.aws/credentials``, a data file next to the notebook, a
project file that is not the interpreter's -- stays out of component code's reach (refused by the
reduced sandbox's hook, absent from the full one's file system) and nothing of it comes back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from _support.components import GOOD, QA_SPEC, component

from lfassist_jupyter import build_flow, default_catalog, validate_component, validate_flow
from lfassist_jupyter.sandbox import _isolation
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
        # The folder's other files: here the venv's activate script, which no import reads.
        return (
            home,
            venv,
            [credentials, *([venv / "bin" / "activate"] if (venv / "bin" / "activate").is_file() else [])],
        )
    # A Python installed with HOME as its prefix: its standard library lives under HOME, and
    # HOME's other files (here the prefix's own header, which no import reads) stay refused.
    base = Path(os.path.realpath(sys.base_prefix))
    header = next(base.glob("include/python3*/Python.h"), None)
    return base, project, [neighbour, *([header] if header else [])]


CASES = ["venv in the notebook's folder", "the notebook's folder is the venv", "Python installed in HOME"]


@pytest.fixture(scope="module", params=[(mode, case) for mode in ("reduced", "full") for case in CASES], ids=str)
def placed(request, tmp_path_factory):
    """A started sandbox whose kernel ran with HOME and the working directory placed as the case
    says (the sandbox reads both when it starts), and the files it must keep from component code."""
    mode, case = request.param
    home, cwd, private = _place(case, tmp_path_factory.mktemp("interpreter-reads"))
    patch = pytest.MonkeyPatch()
    patch.setenv("HOME", str(home))
    patch.chdir(cwd)
    if mode == "reduced":
        patch.setenv("LFASSIST_SANDBOX", "reduced")
    else:
        patch.delenv("LFASSIST_SANDBOX", raising=False)
        found, why = _isolation.probe(sys.executable)
        if found != "full":
            patch.undo()
            pytest.skip(f"OS-level isolation is unavailable here: {why}")
    try:
        validator = SandboxValidator(timeout=60)
        validator.start()
        validator.reference()  # ready
    finally:
        patch.undo()
    assert validator.info()["isolation"] == mode
    yield validator, private
    validator.close()


def test_a_component_importing_the_standard_library_lazily_validates(placed):
    box, _ = placed
    report = validate_component(LAZY_STDLIB, validator=box, timeout=30)
    assert report.is_valid and report.findings == [], report  # nothing refused, nothing to say
    assert report.reduced_isolation == (WHY if box.isolation == "reduced" else None)


def test_a_flow_builds_validates_and_probe_runs(placed):
    box, _ = placed
    catalog = default_catalog(box)
    built = build_flow(QA_SPEC, catalog=catalog)
    assert built.ok, built.errors
    run = box.probe_run(built.flow, "hello", timeout=60)
    assert run.ok and run.text == "Answer this: hello", run.error  # lfx's answer for this flow
    assert run.reduced_isolation == (WHY if box.isolation == "reduced" else None)

    catalog.add("Uppercase", box.component_template(GOOD).template)  # a custom node: its code loads in the sandbox
    custom = build_flow(CUSTOM_SPEC, catalog=catalog)
    assert custom.ok, custom.errors
    report = validate_flow(custom.flow, catalog=catalog)
    assert report.is_valid, report.errors
    run = box.probe_run(custom.flow, "hello", timeout=60)
    assert run.ok and run.text == "HELLO", run.error


def test_the_users_own_files_stay_out_of_reach(placed):
    """The control: what the interpreter may read does not open HOME or the notebook's folder."""
    box, private = placed
    for path in private:
        assert path.is_file()  # it is there to read: the sandbox, not a missing file, keeps it out
        report = validate_component(_reader(path), validator=box, timeout=30)
        if box.isolation == "reduced":  # the hook refuses the read, and the report says so
            refused = [f for f in report.findings if f.rule == "sandbox-refused"]
            assert refused and refused[0].evidence == f"reading {path} is not allowed while validating", report
            assert "calls `open` at line 12 (is refused by the sandbox)" in refused[0].message
        else:  # not in the sandbox's file system at all
            assert report.smoke_outputs["out"].raised == "FileNotFoundError", report
        assert SECRET not in str(report.model_dump())


def _c_reader(path: str) -> str:
    """A component that has C code open and read ``path`` (OpenSSL's certificate loader: no audit
    event) and raises what came of it: a read file that holds no certificate says so."""
    return component(
        f"""import ssl
try:
    ssl.create_default_context().load_verify_locations(cafile={path!r})
except Exception as exc:
    raise ValueError(f"C read: {{type(exc).__name__}}: {{exc}}")"""
    )


def test_c_code_reads_no_more_than_python_code(placed):
    """The reduced sandbox's hook sees only Python's reads; C code reading a file (a native parser,
    OpenSSL, readline's history reader) raised no event, and read ~/.aws/credentials (readline
    brought its lines back into the report). Landlock now refuses those reads to C code too. The
    control: the same reader reads a file of the interpreter's (its ``os.py``, no certificate in it)."""
    box, private = placed
    read = "no certificate or crl found"
    control = validate_component(_c_reader(os.__file__), validator=box, timeout=30)
    assert read in str(control.model_dump()).lower(), control
    for path in private:
        report = validate_component(_c_reader(str(path)), validator=box, timeout=30)
        dumped = str(report.model_dump())
        assert "C read: " in dumped and read not in dumped.lower(), report
        assert ("PermissionError" if box.isolation == "reduced" else "FileNotFoundError") in dumped, report


READLINE_PAYLOAD = """import readline
readline.clear_history()
readline.read_history_file({secret!r})
readline.add_history("import os  # a line a .pth file runs at every start of the interpreter")
readline.write_history_file({planted!r})
lines = [readline.get_history_item(i) for i in range(1, readline.get_current_history_length() + 1)]
raise ValueError("read: " + " | ".join(lines[:3]))"""


def test_without_landlock_c_code_neither_reads_nor_writes_past_the_hook(tmp_path, monkeypatch):
    """Where the kernel has no Landlock (macOS, an older Linux), the reduced sandbox has its audit
    hook only, which sees no C library's file access: readline's history functions read
    ~/.aws/credentials and wrote a file anywhere (a ``.pth`` in site-packages runs at every start
    of the user's kernel). Importing readline is refused. The control: the same payload, run
    outside the sandbox, reads the secret and writes the file."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    secret = home / ".aws" / "credentials"
    secret.write_text(f"[default]\n{SECRET}\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    payload = READLINE_PAYLOAD.format(secret=str(secret), planted=str(outside / "planted.pth"))
    with pytest.raises(ValueError, match="reduced-reads-not-a-real-key"):  # control: the payload works
        exec(payload.replace("planted.pth", "control.pth"), {})
    assert (outside / "control.pth").is_file()

    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LFASSIST_SANDBOX", "reduced")
    monkeypatch.setenv("LFASSIST_SANDBOX_LANDLOCK", "0")
    box = SandboxValidator(timeout=60)
    box.start()
    try:
        box.reference()  # ready: its confinement is known
        assert "Landlock" not in str(box.info().get("confinement"))
        report = validate_component(component(payload), validator=box, timeout=30)
    finally:
        box.close()
    assert SECRET not in str(report.model_dump()), report
    assert not (outside / "planted.pth").exists()
    assert "readline" in str(report.model_dump()), report  # refused, and the report says what


SQLITE_PAYLOAD = """import sqlite3
db = sqlite3.connect(":memory:")
db.execute("ATTACH DATABASE '{planted}' AS p")
db.execute("CREATE TABLE p.t (line TEXT)")
db.execute("INSERT INTO p.t VALUES ('import os')")
db.commit()
return Message(text="attached")"""


def test_without_landlock_sqlite_writes_no_file_outside_the_sandbox(tmp_path, monkeypatch):
    """sqlite writes in C: an ``ATTACH`` (or ``VACUUM INTO``) on an in-memory database creates a
    file wherever it names, which no audit event shows. Without Landlock, and with the host's
    files in view (the reduced sandbox), nothing else stopped it: a component planted a file in
    any folder (site-packages' ``.pth`` files run at every start of the user's kernel). There,
    sqlite is refused. The control: the same payload with Landlock is refused by the kernel, and
    outside the sandbox it writes the file."""
    outside = tmp_path / "site-packages"
    outside.mkdir()
    payload = SQLITE_PAYLOAD.format(planted=outside / "planted.pth")
    scope: dict = {"Message": lambda text: text}
    exec("def control():\n" + "\n".join("    " + line for line in payload.splitlines()), scope)
    assert scope["control"]() == "attached"  # control: the payload works
    assert (outside / "planted.pth").is_file()
    (outside / "planted.pth").unlink()

    monkeypatch.setenv("LFASSIST_SANDBOX", "reduced")
    for landlock in ("1", "0"):
        monkeypatch.setenv("LFASSIST_SANDBOX_LANDLOCK", landlock)
        box = SandboxValidator(timeout=60)
        box.start()
        try:
            box.reference()  # ready: its confinement is known
            assert ("Landlock" in str(box.info().get("confinement"))) == (landlock == "1" and _has_landlock())
            report = validate_component(component(payload), validator=box, timeout=30)
        finally:
            box.close()
        assert list(outside.iterdir()) == [], (landlock, report)
        said = str(report.model_dump())  # refused by the kernel (the output raised) or by the hook
        assert "unable to open database" in said or "sqlite is not allowed here" in said, (landlock, report)


def _has_landlock() -> bool:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(444, None, 0, 1) > 0
