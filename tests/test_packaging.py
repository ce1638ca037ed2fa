"""The wheel a user installs: built from this checkout, installed into a clean virtual
environment, checked in a real kernel -- `%load_ext` works and the widget's JS is inside."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
UV = [sys.executable, "-m", "uv"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([*UV, "build", "--wheel", "--quiet", "--out-dir", str(out), str(ROOT)], check=True, timeout=600)
    (built,) = out.glob("lfassist_jupyter-*.whl")
    return built


def test_wheel_contains_the_bundle_and_the_worker(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for required in (
        "lfassist_jupyter/static/widget.js",
        "lfassist_jupyter/static/widget.css",
        "lfassist_jupyter/sandbox/worker/_worker.py",
        "lfassist_jupyter/ui/magics.py",
    ):
        assert required in names
    assert not [n for n in names if n.startswith(("tests/", "node_modules/", "js/"))]


def test_wheel_works_in_a_clean_environment_and_a_real_kernel(wheel, tmp_path):
    from nbclient import NotebookClient

    venv = tmp_path / "venv"
    subprocess.run([*UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*UV, "pip", "install", "--quiet", "--python", str(python), str(wheel), "ipykernel"], check=True, timeout=900
    )
    prefix = tmp_path / "kernels"
    subprocess.run(
        [str(python), "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", "lfassist-wheel"],
        check=True,
        capture_output=True,
    )

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext lfassist_jupyter"),
        nbformat.v4.new_code_cell(
            "import lfassist_jupyter, sys\n"
            "from lfassist_jupyter import ChatPanel\n"
            "print(lfassist_jupyter.__file__.startswith(sys.prefix))\n"
            "print(len(str(ChatPanel._esm)) > 1000, 'export' in str(ChatPanel._esm))"
        ),
        nbformat.v4.new_code_cell("%assist help"),
    ]
    env = {**os.environ, "JUPYTER_PATH": str(prefix / "share" / "jupyter")}
    old = os.environ.copy()
    os.environ.update(env)
    try:
        # Run outside the checkout, so `import lfassist_jupyter` cannot pick up the source tree.
        NotebookClient(
            nb, timeout=120, kernel_name="lfassist-wheel", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert nb.cells[0].outputs == []  # loaded without an error
    assert nb.cells[1].outputs[0]["text"].split() == ["True", "True", "True"]  # the installed copy, with its JS
    assert "%%assist [options]" in nb.cells[2].outputs[0]["data"]["text/plain"]  # a display object, not a print
