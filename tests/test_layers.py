"""The layering as checks: import-linter's contracts (.importlinter), and two rules read straight
from the source, where import-linter cannot see (import strings) or cannot say it simply.

- No module outside ``ui/`` imports the views: not at the top, not inside a function, not under
  ``TYPE_CHECKING``, not through an import string.  The package root is the composition root
  (lazy names, the formatter wiring) and the one importer allowed.
- No file of the sandbox's worker imports ``lfassist_jupyter``: it runs inside the sandbox, where
  the project is not installed.
- No circle of modules: two modules that import each other, directly or around a loop, at the top,
  inside a function or under ``TYPE_CHECKING``, are one design knot (the shared name belongs in a
  module both can import).  Read by grimp, the import graph import-linter checks its contracts on.

Each contract about the sandbox and the layers is shown to fail on a copy of the package broken on
purpose (a lower package that reaches for the sandbox's client, or picks the shared sandbox, or an
arrow back up): a contract that cannot fail checks nothing.
"""

from __future__ import annotations

import ast
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lfassist_jupyter"
EXCEPTIONS = 0
"""ignore_imports lines in .importlinter today.  The list only shrinks: lower this when one goes."""


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` names for import: statements anywhere, and strings that are dotted
    module paths of the package (``importlib.import_module`` and lazy tables)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = _module(path).split(".") if path.name == "__init__.py" else _module(path).split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            target = ".".join(p for p in (base, node.module or "") if p)
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and re.fullmatch(r"lfassist_jupyter(\.\w+)+", str(node.value)):
            found.append((node.lineno, node.value))
    return found


def test_no_module_outside_ui_imports_the_views():
    allowed = {PACKAGE / "__init__.py", PACKAGE / "magics.py"}  # the root; the 0.1.0 shim (being deleted)
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "ui" not in path.relative_to(PACKAGE).parts[:1] and path not in allowed
        for line, name in _imports(path)
        if name == "lfassist_jupyter.ui" or name.startswith("lfassist_jupyter.ui.")
    ]
    assert offenders == []


def test_the_check_sees_every_kind_of_import(tmp_path, monkeypatch):
    """The control: each way a module could reach a view is found."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    sample = tmp_path / "lfassist_jupyter" / "core" / "x.py"
    sample.parent.mkdir(parents=True)
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lfassist_jupyter.ui.render import result\n"
        "def f():\n    from ..ui.render.component import report_html\n"
        "LAZY = {'x': 'lfassist_jupyter.ui.render.picture'}\n"
    )
    names = [name for _, name in _imports(sample)]
    assert "lfassist_jupyter.ui.render" in names
    assert "lfassist_jupyter.ui.render.component" in names
    assert "lfassist_jupyter.ui.render.picture" in names


def test_the_worker_imports_nothing_of_the_project():
    worker = PACKAGE / "sandbox" / "worker"
    offenders = [
        f"{path.name}:{line} {name}"
        for path in sorted(worker.glob("*.py"))
        for line, name in _imports(path)
        if name.startswith("lfassist_jupyter") and not name.startswith("lfassist_jupyter.sandbox.worker")
    ]
    assert offenders == []


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the package found in ``where`` (its ``.importlinter``)."""
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_linter_contracts_hold_and_the_exceptions_only_shrink():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    config = configparser.ConfigParser(inline_comment_prefixes=None, comment_prefixes=(";", "#"))
    config.read(ROOT / ".importlinter")
    ignored = [
        line.strip()
        for section in config.sections()
        for line in config[section].get("ignore_imports", "").splitlines()
        if "->" in line
    ]
    assert len(ignored) <= EXCEPTIONS, ignored


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            circle = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(circle) > 1:
                found.append(sorted(circle))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_circle_of_modules():
    """grimp reads every import statement (top, function, ``TYPE_CHECKING``), as import-linter does."""
    assert _circles(grimp.build_graph("lfassist_jupyter")) == []


def test_the_circle_check_finds_a_circle():
    """The control: a loop of three modules is found, and a module merely beside it is not in it."""
    graph = grimp.ImportGraph()
    for module in ("p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported)
    assert _circles(graph) == [["p.a", "p.b", "p.c"]]


BREAKAGES = {
    "a lower package reaches for the sandbox's client": (
        "flows/validate.py",
        "from lfassist_jupyter.sandbox.client import SandboxValidator",
        "Below the edges nothing reaches the sandbox's process code",
    ),
    "a lower package picks the shared sandbox": (
        "langflow/flows.py",
        "from lfassist_jupyter.sandbox import shared",
        "Only the edges pick the shared sandbox",
    ),
    "an arrow back up: the sandbox imports flows": (
        "sandbox/answers.py",
        "from lfassist_jupyter.flows import results",
        "Arrows point down",
    ),
    "an arrow back up: validation imports the ports": (
        "validation/report.py",
        "from lfassist_jupyter.ports import one_line",
        "Arrows point down",
    ),
}


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    """The package's Python files and the contracts, copied to be broken (the copy itself passes)."""
    where = tmp_path_factory.mktemp("layers")
    shutil.copytree(PACKAGE, where / "lfassist_jupyter", ignore=shutil.ignore_patterns("static", "__pycache__"))
    shutil.copy(ROOT / ".importlinter", where / ".importlinter")
    done = _lint_imports(where)
    assert done.returncode == 0, done.stdout  # the control: unbroken, the copy keeps every contract
    return where


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_each_sandbox_and_layer_contract_fails_on_a_tree_broken_on_purpose(package_copy, breakage):
    relative, line, contract = BREAKAGES[breakage]
    path = package_copy / "lfassist_jupyter" / relative
    kept = path.read_text(encoding="utf-8")
    try:
        path.write_text(f"{kept}\n{line}  # noqa\n", encoding="utf-8")
        done = _lint_imports(package_copy)
    finally:
        path.write_text(kept, encoding="utf-8")
    out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    broken = [row for row in out.splitlines() if row.rstrip().endswith("BROKEN")]
    assert done.returncode != 0 and any(row.startswith(contract) for row in broken), out


_IMPORT_ALL = r"""
import gc, importlib, json, os, pkgutil, resource, signal, sys

package = sys.argv.pop(1)
report = os.dup(1)  # the report goes out here, whatever a module does to fds 1 and 2


def state():
    ns = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "user", "pid", "net", "ipc")}
    fds = {fd: tuple(os.fstat(fd))[1:3] if _open(fd) else None for fd in (0, 1, 2)}
    limits = {n: resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_FSIZE",
                                                                      "RLIMIT_NPROC", "RLIMIT_CPU")}
    return {"fds": fds, "ns": ns, "limits": limits, "cwd": os.getcwd(), "gc": gc.isenabled(),
            "alarm": repr(signal.getsignal(signal.SIGALRM)), "stdout": repr(sys.stdout), "stderr": repr(sys.stderr)}


def _open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def children():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    if int(fh.read().rsplit(b")", 1)[1].split()[1]) == os.getpid():
                        found.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return found


before, failed, changed = state(), {}, {}
root = importlib.import_module(package)
for info in pkgutil.walk_packages(root.__path__, package + "."):
    try:
        importlib.import_module(info.name)
    except BaseException as exc:  # SystemExit too: a script that exits on import
        failed[info.name] = f"{type(exc).__name__}: {exc}"[:300]
    now = state()
    for key in now:
        if now[key] != before[key]:
            changed.setdefault(key, info.name)
    before = {**before, **now}
os.write(report, json.dumps({"failed": failed, "changed": changed, "children": children(),
                             "modules": len(list(pkgutil.walk_packages(root.__path__, package + ".")))}).encode())
"""
"""Imports every module of a package in this one process, as a documentation generator does, and
says which failed and which changed the process (its fds, namespaces, limits, signal handlers...)."""


def _import_all(package: str, path: Path) -> dict:
    # A documentation tool's own command line (``sphinx-build -b html ...``): not the worker's JSON.
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, package, "-b", "html", "docs", "_build"],
        cwd=path,
        capture_output=True,
        timeout=300,
    )
    assert done.stdout, (done.returncode, done.stderr[-2000:])  # the process lived to the end and said so
    return json.loads(done.stdout.rsplit(b"\n", 1)[-1].decode())


@pytest.mark.slow  # the walk imports lfx (the worker's modules), ~5 s of a quiet machine
def test_importing_every_module_changes_nothing():
    """Both zygotes' scripts (``sandbox/worker/_worker.py``, ``_runner.py``) and their modules do
    nothing on import: no fd redirected, no namespace entered, no limit set, no handler installed,
    no process started, no exit."""
    found = _import_all("lfassist_jupyter", ROOT)
    assert found["modules"] > 100
    assert found["failed"] == {}
    assert found["changed"] == {}
    assert found["children"] == []


def test_the_import_check_sees_a_module_that_acts_on_import(tmp_path):
    """The control: a module that redirects fd 1 and a script that exits on import are both found."""
    package = tmp_path / "actor"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a_redirects.py").write_text("import os\nos.dup2(os.open(os.devnull, os.O_RDWR), 1)\n")
    (package / "b_exits.py").write_text("import sys\nsys.exit(3)\n")
    (package / "c_forks.py").write_text("import subprocess\nsubprocess.Popen(['sleep', '2'], stdout=-3, stderr=-3)\n")
    found = _import_all("actor", tmp_path)
    assert found["changed"] == {"fds": "actor.a_redirects"}
    assert found["failed"] == {"actor.b_exits": "SystemExit: 3"}
    assert len(found["children"]) == 1
