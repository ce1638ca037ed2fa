"""The few styles every card shares: the card box, a verdict badge, a line's colour.

Theme variables first (JupyterLab), plain colours as fallbacks (Notebook 7, VS Code, an
exported HTML file), inline so no stylesheet has to load."""

from __future__ import annotations

import html

CARD = (
    "border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:8px 12px;margin:4px 0;"
    "font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;"
    "color:var(--jp-ui-font-color1,inherit);background:var(--jp-layout-color1,transparent)"
)

LINE_COLOR = {True: "#1a7f37", False: "#cf222e", None: "#9a6700"}
"""A line's colour by its verdict: good, bad, worth knowing."""

Line = tuple[str, "bool | None"]
"""One line of a card and its verdict (True good, False bad, None worth knowing)."""


def badge(text: str, ok: bool | None) -> str:
    color = LINE_COLOR[ok]
    return (
        f'<span style="border:1px solid {color};color:{color};border-radius:10px;padding:0 8px;'
        f'font-size:12px;margin-left:6px">{html.escape(text)}</span>'
    )


def verdict(ok: bool, reduced_isolation: str | None = None, word: str = "validated") -> Line:
    """What a card says about a validation, with its colour: ``"validated"``, ``"not validated"``,
    or, when the sandbox behind it ran without its OS-level layer, ``"validated (reduced isolation:
    <why>)"`` in amber -- never a bare "validated" then.  ``word`` is "valid" for a report card."""
    if not ok:
        return f"not {word}", False
    if reduced_isolation:
        return f"{word} (reduced isolation: {reduced_isolation})", None
    return word, True
