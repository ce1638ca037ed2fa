"""What a user sees of an object in IPython: its display bundle, through IPython's own formatters.

Domain objects draw nothing themselves; the views register IPython display formatters for them
(``lfassist_jupyter/ui/formats.py``).  A test that has a shell with the extension loaded (the
``ip`` fixture) asks that shell; ``shown`` gives the same answer with a fresh ``DisplayFormatter``
when a test has none (no global shell instance is created)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def shown(obj: Any, shell: Any = None) -> dict[str, Any]:
    """``obj``'s mime bundle as a notebook (``text/html``) and a terminal (``text/plain``) get it."""
    if shell is None:
        from IPython.core.formatters import DisplayFormatter

        from lfassist_jupyter.ui.formats import register_formatters

        shell = SimpleNamespace(display_formatter=DisplayFormatter())
        register_formatters(shell)
    data, _metadata = shell.display_formatter.format(obj)
    return data


def html_of(obj: Any, shell: Any = None) -> str:
    """The card a notebook front end renders."""
    return shown(obj, shell)["text/html"]


def text_of(obj: Any, shell: Any = None) -> str:
    """What a terminal IPython prints."""
    return shown(obj, shell)["text/plain"]
