"""The worker that parses model replies starts isolated: nothing in the notebook's folder is imported.

A kernel started in a folder has that folder on its import path; the worker used to get the
kernel's ``sys.path`` (and ``python -m`` adds the working directory), so a ``libcst.py`` next to
the notebook ran in it.  The control starts the worker as it used to be started, in the same
folder: the hostile module runs (its marker appears).  The worker the pipeline starts now
answers, with the real LibCST, and the marker stays absent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from _support.components import GOOD, fenced

from lfassist_jupyter.core import offload


def test_a_libcst_py_in_the_notebooks_folder_is_never_imported(tmp_path, monkeypatch):
    marker = tmp_path / "IMPORTED"
    (tmp_path / "libcst.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('not LibCST')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as in a kernel started in this folder
    old_start = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    control = subprocess.run(
        [sys.executable, "-m", "lfassist_jupyter.core.offload"], env=old_start, cwd=tmp_path, capture_output=True,
        input=b"", timeout=120, check=False,
    )  # fmt: skip
    assert marker.exists(), control.stderr[-1000:]  # the control: started the old way, it ran
    marker.unlink()
    offload._shutdown()  # no warm worker from an earlier test: this one starts here
    try:
        code = asyncio.run(offload.call("extract", fenced(GOOD), deadline=120))
    finally:
        offload._shutdown()
    assert code == GOOD and not marker.exists()
