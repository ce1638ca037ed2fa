"""Markdown and code helpers shared by every view: inert model Markdown, unbreakable fences,
highlighted Python (pygments, which IPython already depends on)."""

from __future__ import annotations

import html
import re

_FENCE = ("```", "~~~")


def inert_markdown(text: str) -> str:
    """Model-written Markdown that a front end can render without fetching anything.

    ``text/markdown`` is rendered by the front end (JupyterLab, VS Code), not by us, so an
    image (``![x](http://host/?k=...)``) or raw ``<img>`` in a model's answer would load a
    remote URL with zero clicks.  Outside code fences, ``!`` before ``[`` and ``<`` are
    escaped (images become plain links, HTML becomes text); code blocks are left exactly
    as written.  One pass over the lines: linear in the size of the answer."""
    out, fence = [], ""
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
        elif stripped.startswith(_FENCE):
            fence = stripped[:3]
        else:
            line = line.replace("<", "\\<").replace("![", "\\![")
        out.append(line)
    return "\n".join(out)


def code_block(text: str, lang: str = "") -> str:
    """``text`` in a Markdown code block it cannot leave: the fence is one backtick longer than
    the longest run of backticks inside (CommonMark closes a fence only with one at least as long)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def highlight(code: str) -> str:
    """Python code as inline-styled HTML (no stylesheet needed), or escaped <pre> without pygments."""
    try:
        from pygments import highlight as _hl
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        return _hl(code, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    except ImportError:  # pragma: no cover - pygments ships with IPython
        return f"<pre>{html.escape(code)}</pre>"
