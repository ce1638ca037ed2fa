"""How the package's objects look in IPython: every display formatter, registered in one place.

Domain objects (``ValidationReport``, ``AssistResult``, ``FlowReport``, ``FixResult``,
``SuiteResult``) are data and know no view.  This module tells IPython how to draw each one:
``text/html`` for a notebook front end, the plain-text renderers for a terminal (``text/plain``,
instead of pydantic's field dump).  It names each type by module and class
(``for_type_by_name``), which imports nothing: a renderer module (and what it needs, pydantic
among them) is imported when the first object of that type is drawn, never at registration.

Registered by ``%load_ext lfassist_jupyter`` and by ``import lfassist_jupyter`` inside a running
IPython shell (a kernel, a terminal), so ``display(report)`` draws the card with or without the
extension.  A plain Python REPL has no formatters: there ``repr()`` is the objects' own.

Standard library only, on purpose: the package root imports this module at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Renderer = Callable[[Any], str]

FORMATS: dict[tuple[str, str], tuple[str, str | None]] = {
    # (module, class): ("render module:html function", "render module:text function" or None)
    ("lfassist_jupyter.validation.report", "ValidationReport"): ("component:report_html", "component:report_text"),
    ("lfassist_jupyter.core.component.repair", "FixResult"): ("component:fix_html", "component:fix_text"),
    ("lfassist_jupyter.core.result", "AssistResult"): ("result:result_html", "result:result_text"),
    ("lfassist_jupyter.flows.results", "FlowReport"): ("flow:flow_report_html", "flow:flow_report_text"),
    # Its text is its own aligned table (the CLI prints the same), so only the HTML is a view's.
    ("lfassist_jupyter.eval", "SuiteResult"): ("eval:suite_html", None),
}
"""Which renderer in ``ui/render/`` draws which domain type."""


def renderer(target: str) -> Renderer:
    """``"component:report_html"`` as a function that imports ``ui.render.component`` on first call."""
    module, name = target.split(":")

    def render(obj: Any) -> str:
        return getattr(importlib.import_module(f"lfassist_jupyter.ui.render.{module}"), name)(obj)

    render.__name__ = render.__qualname__ = name
    return render


def _pretty(render: Renderer) -> Callable[[Any, Any, bool], None]:
    """A ``text/plain`` printer (IPython's pretty-printer protocol) from a text renderer."""

    def printer(obj: Any, p: Any, cycle: bool) -> None:
        p.text(render(obj))

    return printer


def register_formatters(shell: Any) -> None:
    """Tell ``shell``'s display formatters how to draw each domain type.  Idempotent; imports nothing."""
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None) or {}
    html, plain = formatters.get("text/html"), formatters.get("text/plain")
    for (module, cls), (html_target, text_target) in FORMATS.items():
        if html is not None:
            html.for_type_by_name(module, cls, renderer(html_target))
        if plain is not None and text_target is not None:
            plain.for_type_by_name(module, cls, _pretty(renderer(text_target)))


def register_in_running_shell() -> None:
    """At package import: register in the running IPython shell, if there is one.  IPython is
    never imported here (a plain Python process that has not imported it has no shell)."""
    import sys

    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    if shell is not None:
        register_formatters(shell)
