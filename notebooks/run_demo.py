"""Run the demo notebooks end to end: ``make demo`` (or ``python notebooks/run_demo.py``).

With no API key anywhere, the assistant uses the offline scripted provider (replies from
``demo-script.json``); with ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``OPENAI_BASE_URL``
or ``OLLAMA_HOST`` set, the same notebooks use the real model.  Each executed notebook is
written to ``notebooks/_build/`` with an HTML rendering, and code the assistant inserted
(``set_next_input``) appears as a new cell below, as it would in JupyterLab.

``--update`` writes the outputs back into the notebooks: they are the references that
nbval checks (cells marked ``# NBVAL_CHECK_OUTPUT``) in the test run.  Only ever update
from a scripted run, so the references stay reproducible.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE / "_build"
DEFAULT = ["quickstart"]
ALL = ["quickstart", "chat-panel", "validate-your-own", "configuration", "flows"]  # langflow.ipynb needs a server
_REAL = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "OLLAMA_BASE_URL")


def run(name: str, *, update: bool) -> Path:
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    path = HERE / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    inserts: dict[int, str] = {}

    def on_cell_executed(cell, cell_index, execute_reply):
        for payload in execute_reply["content"].get("payload", []):
            if payload.get("source") == "set_next_input":
                inserts[cell_index] = payload["text"]

    t0 = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(HERE)}},
                   on_cell_executed=on_cell_executed).execute()  # fmt: skip
    if update:  # references for nbval: only the checked cells keep outputs (the rest hold paths, ids, timings)
        reference = nbformat.from_dict(nb)
        for cell in reference.cells:
            if cell.cell_type == "code" and "NBVAL_CHECK_OUTPUT" not in cell.source:
                cell.outputs, cell.execution_count = [], None
        nbformat.write(reference, path)
    for index in sorted(inserts, reverse=True):  # what JupyterLab does with set_next_input
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(inserts[index]))
    BUILD.mkdir(exist_ok=True)
    out = BUILD / f"{name}.ipynb"
    nbformat.write(nb, out)
    html, _ = HTMLExporter().from_notebook_node(nb)
    (BUILD / f"{name}.html").write_text(html, encoding="utf-8")
    print(f"  {name}: {time.perf_counter() - t0:.1f} s -> {out.relative_to(HERE.parent)} (+ .html)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"notebooks to run (default: {' '.join(DEFAULT)})")
    parser.add_argument("--all", action="store_true", help="run every demo notebook that needs no server")
    parser.add_argument("--update", action="store_true", help="write the outputs back as nbval references")
    args = parser.parse_args()
    names = ALL if args.all else (args.names or DEFAULT)
    if any(os.environ.get(v) for v in _REAL) and not args.update:
        print("Using the configured model provider (a real model).")
    else:
        for var in _REAL:
            os.environ.pop(var, None)
        os.environ["LFASSIST_SCRIPT"] = str(HERE / "demo-script.json")
        os.environ.setdefault("LFASSIST_DATA_DIR", tempfile.mkdtemp(prefix="lfassist-demo-"))
        print("No API key found: using the offline scripted provider (notebooks/demo-script.json).")
    for name in names:
        run(name, update=args.update)
    print(f"Open {BUILD.relative_to(HERE.parent)}/{names[0]}.html, or the .ipynb in JupyterLab.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
