"""How the package's objects display: the views' IPython formatters (``ui/formats.py``), a cheap
``%load_ext``, and a plain ``repr()`` that needs no view.  Each check runs in a fresh process, as a
user's kernel, terminal or REPL would, so nothing an earlier test imported can hide a cost."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import nbformat
import pytest

HEAVY = ("pydantic", "openai", "anthropic", "httpx", "lfx", "anywidget", "markdown_it", "libcst", "nh3")


def _python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_load_ext_imports_nothing_heavy():
    """``%load_ext`` registers the magics and the formatters and imports none of the heavy
    libraries.  The validator's warm-up thread it starts may import them a moment later, by
    design: its start is held back until the modules are counted, and then checked for."""
    out = _python("""
        import json, sys, threading
        from IPython.core.interactiveshell import InteractiveShell

        ip = InteractiveShell.instance()
        held = []
        start = threading.Thread.start
        threading.Thread.start = lambda self: held.append(self)
        ip.run_line_magic("load_ext", "lfassist_jupyter")
        loaded = sorted(sys.modules)
        threading.Thread.start = start
        for thread in held:  # counted: let it end at once (the sandbox is not what is measured here)
            thread._target = lambda: None
            thread.start()
        fmt = ip.display_formatter.formatters
        print(json.dumps({
            "loaded": loaded,
            "held": [t.name for t in held],
            "html": sorted(k[1] for k in fmt["text/html"].deferred_printers if k[0].startswith("lfassist_jupyter")),
            "magics": sorted(ip.magics_manager.magics["cell"]),
        }))
    """)
    seen = json.loads(out)
    heavy = sorted({m.split(".")[0] for m in seen["loaded"]} & set(HEAVY))
    assert heavy == [], f"%load_ext imported {heavy}"
    renderers = {"component", "result", "flow", "eval", "markdown", "picture"}  # loaded on the first drawing
    assert not [m for m in seen["loaded"] if m.rsplit(".", 1)[-1] in renderers and ".ui.render." in m]
    assert seen["held"] == ["lfassist-warmup"]  # the control: the warm-up really was started (and held)
    assert {"ValidationReport", "AssistResult", "FlowReport", "FixResult", "SuiteResult"} <= set(seen["html"])
    assert "assist" in seen["magics"]


def test_a_terminal_ipython_shows_the_text_card_without_load_ext():
    """Terminal IPython prints a report as the text card (``report_text``), not pydantic's field dump."""
    code = (
        "from lfassist_jupyter.validation.report import ValidationReport; "
        "ValidationReport(is_valid=False, class_name='Upper', builds=False, phase='runtime', error='boom')"
    )
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--colors=NoColor", "--no-banner", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Upper: Langflow rejects it" in done.stdout and "builds in Langflow: no" in done.stdout, done.stdout
    assert "ValidationReport(" not in done.stdout and "is_valid=" not in done.stdout


def test_a_plain_repl_repr_needs_no_view():
    out = _python("""
        import sys
        from lfassist_jupyter.core.result import AssistResult
        from lfassist_jupyter.validation.report import ValidationReport

        r = AssistResult(status="complete", kind="component", class_name="Upper", validated=True, attempts=1)
        print(repr(r))
        print(repr(ValidationReport(is_valid=True, class_name="Upper"))[:40])
        print(sorted(m for m in sys.modules if m.startswith("lfassist_jupyter.ui")))
    """)
    first, second, views = out.splitlines()
    assert first == "AssistResult(status='complete', kind='component', class_name='Upper', validated=True, attempts=1)"
    assert second.startswith("ValidationReport(is_valid=True")
    assert views == "[]"


@pytest.mark.slow
def test_a_notebook_displays_the_cards_with_and_without_load_ext():
    """In a real kernel, ``import lfassist_jupyter`` is enough for a report to show its card; after
    ``%load_ext`` (and ``display``) it is the same card.  No ``text/markdown`` reaches the front end."""
    from nbclient import NotebookClient

    report = "ValidationReport(is_valid=False, class_name='Upper', builds=False, phase='runtime', error='boom <b>')"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from lfassist_jupyter.validation.report import ValidationReport"),
        nbformat.v4.new_code_cell(report),
        nbformat.v4.new_code_cell(f"%load_ext lfassist_jupyter\ndisplay({report})"),
    ]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    without, with_ext = nb.cells[1].outputs[0], nb.cells[2].outputs[0]
    for output in (without, with_ext):
        data = output["data"]
        assert "text/markdown" not in data
        assert "<b>Upper</b>" in data["text/html"] and "Builds in Langflow" in data["text/html"]
        assert "boom &lt;b&gt;" in data["text/html"]  # escaped: the error is the component's text
        assert data["text/plain"].startswith("Upper: Langflow rejects it")
    assert without["data"] == with_ext["data"]
