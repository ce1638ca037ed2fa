"""The sandboxed validator: phases, isolation, and fault injection -- each fault followed by a
validation that works, proving the worker recovered and the calling process was untouched."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import pytest
from _support.components import DATA_LIST_BUG, GOOD, PROBE_HEAD, WRONG_IMPORT, component

from lfassist_jupyter import validate_component
from lfassist_jupyter.sandbox.client import SandboxValidator
from lfassist_jupyter.sandbox.zygote import scrubbed_env


@pytest.fixture(scope="module")
def fault_sandbox():
    validator = SandboxValidator(timeout=3)
    validator.start()
    yield validator
    validator.close()


def assert_recovers(validator: SandboxValidator) -> None:
    report = validator.validate(GOOD)
    assert report.is_valid, report.error


# -- phases -------------------------------------------------------------------------------


def test_valid_component_report(sandbox):
    report = validate_component(GOOD, validator=sandbox)
    assert report.is_valid and report.phase is None and report.class_name == "UppercaseComponent"
    assert report.phases_run == ["static", "security", "runtime", "smoke"] and report.smoke == "passed"
    assert [(i.name, i.type, i.display_name) for i in report.inputs] == [("input_text", "MessageTextInput", "Text")]
    assert [(o.name, o.types, o.method) for o in report.outputs] == [("output", ["Message"], "build_output")]
    assert report.lfx_version and {"static", "runtime", "smoke", "total"} <= set(report.timings_ms)


@pytest.mark.parametrize(
    ("code", "phase", "needle"),
    [
        ("class X(:\n", "static", "SyntaxError"),
        ("x = 1\n", "static", "inherits from Component"),
        (GOOD.replace('name="output"', 'name="input_text"'), "runtime", "overlapping names"),
        (GOOD.replace('method="build_output"', 'method="nope"'), "static", "'nope', which the class does not define"),
        (
            GOOD.replace("def build_output(self) -> Message:", "def build_output(self):"),
            "static",
            "no return annotation",
        ),
        (GOOD.replace('name="input_text"', 'name="status"'), "runtime", "reserved word"),
        (GOOD.replace("import Message\n", "import Message\nimport subprocess\n"), "security", "subprocess"),
        (component("return Message(text=eval('1+1'))"), "security", "eval"),
        (
            # a name joined from literals is the name it spells: judged as os.system
            component("return Message(text=str(getattr(os, 'sys' + 'tem')))", module="import os"),
            "security",
            "`os.system`",
        ),
        (
            component("return Message(text=str(getattr(os, self.input_text)))", module="import os"),
            "security",
            "a name computed at runtime",
        ),
        (WRONG_IMPORT, "runtime", "Component"),
        (DATA_LIST_BUG, "smoke", "ValidationError"),
    ],
)
def test_each_phase_rejects_its_faults(sandbox, code, phase, needle):
    report = validate_component(code, validator=sandbox, security="reject")
    assert not report.is_valid
    assert report.phase == phase
    assert needle in report.error


def test_smoke_catches_return_type_mismatch_and_names_the_output(sandbox):
    report = validate_component(component("return 'plain text'"), validator=sandbox)
    assert report.phase == "smoke"
    assert "Output 'out' (build_out) returned str but is declared as Message" in report.error
    assert "Message(text=...)" in report.error


@pytest.mark.parametrize(
    ("body", "exc"),
    [
        ("return Message(text=undefined_name)", "NameError"),
        ("return Message(text=self.no_such_attribute)", "AttributeError"),
        ("return Message(text='a', unknown_kwarg=Message.nope())", "AttributeError"),
        ("import json\nreturn Message(text=json.dumps())", "TypeError"),
    ],
)
def test_smoke_fails_on_bugs_whatever_the_input(sandbox, body, exc):
    report = validate_component(component(body), validator=sandbox)
    assert report.phase == "smoke" and exc in report.error and "build_out" in report.error


@pytest.mark.parametrize(
    "body",
    [
        "return Message(text=str(int(self.input_text)))",  # ValueError on the probe text
        "return Message(text={'a': 1}[self.input_text])",  # KeyError
        "return Message(text=self.input_text.split()[7])",  # IndexError
        "return Message(text=str(1 / (len(self.input_text) - 11)))",  # ZeroDivisionError
        "return Message(text=open('/definitely/missing.txt').read())",  # FileNotFoundError
    ],
)
def test_errors_caused_by_fake_inputs_are_warnings_not_failures(sandbox, body):
    report = validate_component(component(body), validator=sandbox)
    assert report.is_valid, report.error
    assert report.smoke == "passed" and "sample inputs" in report.warnings[0]


def test_async_outputs_and_typed_probes(sandbox):
    code = (
        PROBE_HEAD
        + "from lfx.io import IntInput, BoolInput, DropdownInput, DataInput, DataFrameInput, FloatInput\n"
        + "from lfx.schema.data import Data\nfrom lfx.schema.dataframe import DataFrame\n\n"
        + "class Typed(Component):\n"
        + "    inputs = [IntInput(name='n', display_name='N'), BoolInput(name='flag', display_name='F'),\n"
        + "              DropdownInput(name='mode', display_name='M', options=['a', 'b']),\n"
        + "              FloatInput(name='f', display_name='F2'), DataInput(name='d', display_name='D'),\n"
        + "              DataFrameInput(name='df', display_name='DF')]\n"
        + "    outputs = [Output(display_name='O', name='o', method='build_o')]\n\n"
        + "    async def build_o(self) -> Data:\n"
        + "        assert isinstance(self.n, int) and isinstance(self.flag, bool) and self.mode in ('a', 'b')\n"
        + "        assert isinstance(self.d, Data) and isinstance(self.df, DataFrame)\n"
        + "        return Data(data={'rows': len(self.df), 'n': self.n * self.f, 'text': self.d.data['text']})\n"
    )
    report = validate_component(code, validator=sandbox)
    assert report.is_valid and report.smoke == "passed", report.error
    types = [i.type for i in report.inputs]
    assert types[:4] == ["IntInput", "BoolInput", "DropdownInput", "FloatInput"] and types[5] == "DataFrameInput"
    assert types[4] in ("DataInput", "JSONInput")  # lfx 1.13 made DataInput an alias of JSONInput


def test_secret_and_network_components_are_not_smoke_tested_rather_than_failed(sandbox):
    secret = component("return Message(text='x')", inputs='SecretStrInput(name="api_key", display_name="Key")').replace(
        "import MessageTextInput", "import MessageTextInput, SecretStrInput"
    )
    report = validate_component(secret, validator=sandbox)
    assert report.is_valid and report.smoke == "skipped" and "secret" in report.smoke_reason
    network = component(
        "return Message(text=urllib.request.urlopen('http://127.0.0.1:9/').read().decode())",
        module="import urllib.request",
    )
    report = validate_component(network, validator=sandbox)
    assert report.is_valid and report.smoke == "skipped" and "network" in report.smoke_reason


def test_missing_packages_are_reported_with_a_fix_and_never_installed(sandbox):
    if importlib.util.find_spec("sklearn") is not None:
        pytest.skip("scikit-learn is installed here")
    code = GOOD.replace(
        "from lfx.schema.message import Message\n",
        "from lfx.schema.message import Message\nfrom sklearn.linear_model import LinearRegression\n"
        "import totally_not_a_real_package_xyz\n",
    )
    report = validate_component(code, validator=sandbox)
    assert report.phase == "runtime" and not report.is_valid
    assert [(m.module, m.distribution, m.fix) for m in report.missing_packages] == [
        ("sklearn", "scikit-learn", "%pip install scikit-learn"),
        (
            "totally_not_a_real_package_xyz",
            "totally-not-a-real-package-xyz",
            "%pip install totally-not-a-real-package-xyz",
        ),
    ]
    assert importlib.util.find_spec("sklearn") is None


# -- isolation ------------------------------------------------------------------------------


def test_worker_environment_has_no_secrets(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-should-never-leak-0001")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-should-never-leak-0002")
    env = scrubbed_env(str(tmp_path))
    assert "OPENAI_API_KEY" not in env and "MY_SERVICE_TOKEN" not in env
    validator = SandboxValidator(timeout=5)
    try:
        dump = component("import os, json\nreturn Message(text=json.dumps(dict(os.environ)))")
        run = validator.run_component(dump, "x")
        assert run.ok, run.error
        seen = json.loads(run.text)
        assert "OPENAI_API_KEY" not in seen and "MY_SERVICE_TOKEN" not in seen
        assert "should-never-leak" not in run.text
        assert seen["HOME"] != os.environ["HOME"]  # a private HOME
        assert validator.validate(dump).is_valid
    finally:
        validator.close()


def test_writes_outside_the_sandbox_are_refused(fault_sandbox, tmp_path):
    target = tmp_path / "pwned.txt"
    code = component("return Message(text='x')", module=f"_ = open({str(target)!r}, 'w').write('x')")
    report = fault_sandbox.validate(code)
    assert not report.is_valid and "not allowed" in report.error
    assert not target.exists()
    assert_recovers(fault_sandbox)


def test_component_output_never_reaches_our_stdout(sandbox, capfd):
    code = component(
        "print('LEAK-OUT'); import sys; print('LEAK-ERR', file=sys.stderr)\nreturn Message(text='x')",
        module="print('LEAK-MODULE')",
    )
    assert validate_component(code, validator=sandbox, security=False).is_valid
    out, err = capfd.readouterr()
    assert "LEAK" not in out and "LEAK" not in err


# -- fault injection: each followed by a successful validation -------------------------------


def test_infinite_loop_times_out_and_worker_survives(fault_sandbox):
    fault_sandbox.validate(GOOD)  # started and warm: the clock below times the alarm, not a cold start
    pid = fault_sandbox.pid
    t0 = time.monotonic()
    report = fault_sandbox.validate(component("return Message(text='x')", load="while True:\n    pass"))
    assert not report.is_valid and "longer than 3 s" in report.error
    assert time.monotonic() - t0 < 8
    assert fault_sandbox.pid == pid  # the alarm interrupted it: no restart needed
    assert_recovers(fault_sandbox)


def test_loop_that_swallows_the_alarm_is_killed_without_a_restart(fault_sandbox):
    fault_sandbox.validate(GOOD)
    pid, restarts = fault_sandbox.pid, fault_sandbox.restarts
    code = component(
        "return Message(text='x')",
        load="import time\nwhile True:\n    try:\n        time.sleep(0.5)\n    except BaseException:\n        pass",
    )
    t0 = time.monotonic()
    report = fault_sandbox.validate(code)
    assert not report.is_valid and "did not finish within 3 s" in report.error and "killed" in report.error
    assert time.monotonic() - t0 < 10
    # Only the request's own process died: the warm zygote serves the next one.
    assert fault_sandbox.restarts == restarts and fault_sandbox.pid == pid
    assert_recovers(fault_sandbox)


@pytest.mark.parametrize(
    ("module", "needle"),
    [
        ("import os\nos._exit(3)", "exit code 3"),
        ("import faulthandler\nfaulthandler._sigsegv()", "SIGSEGV"),
        ("import os\nos.abort()", "SIGABRT"),
    ],
)
def test_process_killers_end_in_a_clear_report_for_that_component(fault_sandbox, module, needle):
    fault_sandbox.validate(GOOD)
    pid, restarts = fault_sandbox.pid, fault_sandbox.restarts
    report = fault_sandbox.validate(component("return Message(text='x')", load=module))
    assert not report.is_valid and report.phase == "runtime"
    assert "crashed the validation sandbox" in report.error and needle in report.error
    assert fault_sandbox.restarts == restarts and fault_sandbox.pid == pid
    assert_recovers(fault_sandbox)


def test_sys_exit_is_reported_without_killing_the_worker(fault_sandbox):
    pid = fault_sandbox.pid or (fault_sandbox.validate(GOOD) and fault_sandbox.pid)
    report = fault_sandbox.validate(component("return Message(text='x')", load="import sys\nsys.exit(0)"))
    assert not report.is_valid and "sys.exit" in report.error
    assert fault_sandbox.pid == pid
    report = fault_sandbox.validate(component("import sys\nsys.exit(1)\nreturn Message(text='x')"))
    assert report.phase == "smoke" and "tried to stop the process" in report.error
    assert_recovers(fault_sandbox)


def test_memory_bomb_hits_the_limit_not_the_machine(fault_sandbox):
    report = fault_sandbox.validate(component("return Message(text='x')", load="_ = bytearray(64 * 1024 ** 3)"))
    assert not report.is_valid and "MemoryError" in report.error
    assert_recovers(fault_sandbox)


def _ours() -> set[int]:
    """This test process's live descendants (the sandbox's processes among them): other work
    on the machine starts processes too, so counting every pid would be a flaky measure."""
    parents: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            state, ppid = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if state not in ("Z", "X"):
            parents[int(entry)] = int(ppid)
    tree, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(p for p, ppid in parents.items() if ppid == pid)
    return tree


def test_fork_bomb_is_refused(fault_sandbox):
    fault_sandbox.validate(GOOD)  # the sandbox's own processes are up before counting
    before = _ours()
    report = fault_sandbox.validate(component("return Message(text='x')", load="import os\nwhile True:\n    os.fork()"))
    assert not report.is_valid and "os.fork" in report.error and "not allowed" in report.error
    after = _ours()
    assert len(after - before) <= 2  # no swarm of children (a restarted worker at most)
    report = fault_sandbox.validate(
        component("return Message(text='x')", load="import subprocess\nsubprocess.run(['true'])")
    )
    assert not report.is_valid and "subprocess.Popen" in report.error
    assert_recovers(fault_sandbox)


def test_the_calling_process_is_untouched(fault_sandbox):
    modules = set(sys.modules)
    fault_sandbox.validate(component("return Message(text='x')", load="import os\nos._exit(1)"))
    assert "lfx" not in sys.modules or "lfx" in modules  # validation never imports lfx here
    assert fault_sandbox.validate(GOOD).is_valid


def test_lfx_missing_in_the_worker_interpreter_is_a_clear_non_retryable_report(tmp_path):
    # An interpreter without lfx: this Python with -S -I cannot see the venv's site-packages.
    fake_python = tmp_path / "python-without-lfx"
    fake_python.write_text(f'#!/bin/sh\nexec {sys.base_prefix}/bin/python3 -S "$@"\n')
    fake_python.chmod(0o755)
    validator = SandboxValidator(python=str(fake_python), timeout=5)
    try:
        report = validator.validate(GOOD)
        assert not report.is_valid and report.retryable is False
        assert 'pip install "lfassist-jupyter[lfx]"' in report.error and str(fake_python) in report.error
        assert validator.state == "unavailable"
    finally:
        validator.close()


def test_worker_is_shut_down_when_the_kernel_exits(tmp_path):
    """Every process of the sandbox (bwrap, its init, the zygote) dies with the kernel."""
    script = (
        "import os\n"
        "from lfassist_jupyter.sandbox import warm_up\n"
        "v = warm_up()\n"
        "v.reference()\n"  # waits until the worker is ready
        "kids = {}\n"
        "for p in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        stat = open(f'/proc/{p}/stat').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    kids.setdefault(int(stat.rsplit(')', 1)[1].split()[1]), []).append(int(p))\n"
        "tree, todo = [], [v.pid]\n"
        "while todo:\n"
        "    tree.append(todo.pop()); todo.extend(kids.get(tree[-1], []))\n"
        "print(v._dir or '-', *tree, flush=True)\n"
    )
    out = __import__("subprocess").run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    directory, *pids = out.stdout.split()
    assert len(pids) >= 1
    deadline = time.monotonic() + 5
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    if directory != "-":
        assert not Path(directory).exists()


# -- the sandbox's own file system ------------------------------------------------------------

FILL = """
import errno, os, uuid


def _fill(keep):
    written, n = 0, 0
    try:
        while written < 1024 * 1024 * 1024:  # four times the limit below, at most
            with open(f"fill-{uuid.uuid4().hex}", "wb") as fh:
                for _ in range(16):  # 16 MB a file (files are capped at 64 MB each)
                    fh.write(b"x" * (1024 * 1024))
                    written += 1024 * 1024
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EFBIG):
            raise
    for target in ("/dev/shm/fill", "/fill"):  # the other writable-looking places
        try:
            with open(target, "wb") as fh:
                fh.write(b"x" * (1024 * 1024))
                written += 1024 * 1024
        except OSError:
            pass
    try:
        os.write(os.memfd_create("fill"), b"x" * (1024 * 1024))  # memory outside any file system
        written += 1024 * 1024
    except OSError:
        pass
    if not keep:
        for name in os.listdir("."):
            os.unlink(name)
    return str(written)
"""


def full_isolation_or_skip() -> None:
    from lfassist_jupyter.sandbox import _isolation

    mode, reason = _isolation.probe(sys.executable)
    if mode != "full":
        pytest.skip(f"the sandbox's own file system needs OS-level isolation: {reason}")


def test_filling_the_scratch_space_is_a_failed_report_naming_the_limit():
    """The sandbox's /tmp is a tmpfs (host memory) of a fixed size: what a request can write is
    bounded by it, nothing else is writable, and filling it fails that validation only."""
    full_isolation_or_skip()
    validator = SandboxValidator(timeout=20, scratch_mb=64)
    try:
        # Writing as much as it can, then deleting it: all it ever held was the limit.
        bounded = validator.validate(
            component("return Message(text='x')", module=FILL, load="display_name = _fill(False)")
        )
        # Its writes to /dev/shm and / were refused, and a refusal is final: not valid.
        assert not bounded.is_valid and "/dev/shm/fill" in bounded.error, bounded.error
        assert 0 < int(bounded.display_name) <= 64 * 1024 * 1024
        # Keeping it: a failed report that says why, not a crash or a memory error.
        full = validator.validate(component("return Message(text='x')", module=FILL, load="display_name = _fill(True)"))
        assert not full.is_valid and full.phase == "runtime"
        assert "filled the sandbox's scratch space" in full.error and "64 MB" in full.error
        assert "crashed" not in full.error and "MemoryError" not in full.error
        assert validator.info()["scratch_mb"] == 64
        assert_recovers(validator)  # the space was freed with the request
    finally:
        validator.close()


def _venv_under_tmp(tmp_path: Path, padding: int) -> Path:
    """A venv in /tmp that reaches this project's packages through a .pth file, with ``padding``
    extra files in it (a real venv holds tens of thousands)."""
    import subprocess
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pad = venv / "share" / "padding"
    pad.mkdir(parents=True)
    for i in range(padding):
        (pad / f"file{i}").touch()
    return python


@pytest.mark.parametrize("landlock", ["on", "off"])
def test_clean_up_never_walks_an_interpreter_bound_under_tmp(tmp_path, monkeypatch, landlock):
    """With the venv in /tmp (bound read-only at the same path inside the sandbox's /tmp),
    clean-up removes what each request wrote and never looks into the venv -- also on a
    kernel without Landlock, where it empties the whole writable /tmp after each request."""
    full_isolation_or_skip()
    monkeypatch.setenv("LFASSIST_SANDBOX_LANDLOCK", landlock)
    if not str(tmp_path).startswith("/tmp/"):
        pytest.skip("the test's directory is not under /tmp")
    python = _venv_under_tmp(tmp_path, padding=3000)
    validator = SandboxValidator(python=str(python), timeout=20)
    try:
        load = "import os\nos.makedirs('a/b', exist_ok=True)\nopen('a/b/f', 'w').write('x')"
        writes = component("return Message(text='x')", load=load)
        for _ in range(3):
            report = validator.validate(writes)
            assert report.is_valid, report.error
        look = component("return Message(text='x')", load="import os\ndisplay_name = repr(os.listdir('.'))")
        assert validator.validate(look).display_name == "[]"
        info = validator.info()
        assert info["python"] == str(python) and info["isolation"] == "full"
        assert ("Landlock" in info["confinement"]) == (landlock == "on")
        # Every entry clean-up looked at, since the sandbox started: the requests' few files and
        # the directories on the way to the bind -- not the venv's 3,000.
        assert validator._cleanup_entries < 100, validator._cleanup_entries
    finally:
        validator.close()


# -- the facts the repair pass reads (issue 34) -----------------------------------------------------


def _lfx_definitions() -> dict[str, set[str]]:
    """Ground truth from lfx's own source: public name -> the modules whose body defines it (ast)."""
    import ast

    root = Path(importlib.util.find_spec("lfx").origin).parent  # type: ignore[arg-type, union-attr]
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if any(p.startswith("_") for p in parts):
            continue
        for node in ast.parse(path.read_bytes()).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                names = [node.target.id]
            else:
                names = []
            for name in names:
                if not name.startswith("_"):
                    found.setdefault(name, set()).add(".".join(parts))
    return found


@pytest.mark.slow
def test_reference_places_every_name_lfx_defines_once(sandbox):
    """Where lfx keeps each public name, as the zygote read it from lfx's source: the name lfx
    defines in one module is placed there (or in the module a component should name, lfx.io...),
    a name two modules define is left out (which one a model meant is not certain)."""
    import importlib

    imports = sandbox.reference().imports
    truth = _lfx_definitions()
    once = {n: homes for n, homes in truth.items() if len(homes) == 1}
    assert len(imports) > 1000
    facades = {"lfx.io", "lfx.schema", "lfx.field_typing.range_spec", "lfx.schema.dotdict"}
    for name, home in imports.items():
        assert home in once.get(name, set()) or home in facades, (name, home, truth.get(name))
    assert set(once) - set(imports) == set()  # every name defined once is placed
    for name in ("CustomComponent", "DEFAULT_TIMEOUT", "logger", "DefaultPromptField"):
        assert len(truth[name]) > 1 and name not in imports
    for name in ("Message", "Data", "DataFrame", "Component", "MultilineInput", "RangeSpec"):
        assert hasattr(importlib.import_module(imports[name]), name), name
    assert imports["LCToolComponent"] == "lfx.base.langchain_utilities.model"


def test_reference_knows_input_families_output_types_and_the_stdlib(sandbox):
    reference = sandbox.reference()  # a typed answer, its JSON one model_dump away
    assert reference.model_dump()["output_types"] == reference.output_types
    families = {i.name: i.family for i in reference.inputs}
    assert families["MultilineInput"] == families["MessageTextInput"] == families["DropdownInput"] == "str"
    assert families["MultilineSecretInput"] == families["SecretStrInput"] == "str/secret"
    assert families["IntInput"] == "int" and families["DefaultPromptField"] == ""  # not a component input
    assert reference.output_types == {
        "Message": "Message", "Data": "Data", "JSON": "Data", "DataFrame": "DataFrame", "Table": "DataFrame"
    }  # fmt: skip
    assert {"json", "re", "datetime"} <= set(reference.stdlib_modules) and "lfx" not in reference.stdlib_modules
