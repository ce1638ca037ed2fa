"""An ``AssistResult`` (what ``%%assist`` returns) as HTML and plain text: a component card, a
flow card, an answer (through the one Markdown path, ``markdown.render_markdown``), or one line
for a cancelled or failed request."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING

from .component import fields_table, io_text
from .flow import flow_result_html, flow_result_text
from .markdown import highlight, render_markdown
from .style import CARD, badge, verdict

if TYPE_CHECKING:
    from lfassist_jupyter.core.result import AssistResult


def _attempts(result: AssistResult) -> str:
    return f"{result.attempts} attempt{'s' * (result.attempts != 1)}"


def fallback_notes(result: AssistResult) -> list[str]:
    """The model substitutions made during the request (its metrics record has them): a cell
    says which model really answered, as the panel does."""
    return [f.message for f in getattr(result.usage, "fallbacks", None) or []]


def _with_notes(result: AssistResult, body: str, render: Callable[[str], str]) -> str:
    notes = fallback_notes(result)
    return "".join(render(n) for n in notes) + body if notes else body


def result_html(result: AssistResult) -> str:
    return _with_notes(result, _html(result), lambda n: f'<div style="opacity:.8">ℹ️ {html.escape(n)}</div>')


def result_text(result: AssistResult) -> str:
    return _with_notes(result, _text(result), lambda n: f"Note: {n}\n")


def _html(result: AssistResult) -> str:
    if result.status == "cancelled":
        return f'<div style="{CARD}">⏹ Request cancelled.</div>'
    if result.status == "error":
        return f'<div style="{CARD}">❌ {html.escape(result.error or "Error")}</div>'
    if result.kind == "flow":
        return flow_result_html(result)
    if result.kind != "component" or not result.code:  # an answer: model-written Markdown
        return f'<div style="{CARD}" class="lfassist-answer">{render_markdown(result.result)}</div>'
    head = f"<b>{html.escape(result.class_name or 'Component')}</b>" + badge(
        *verdict(result.validated, result.reduced_isolation)
    )
    parts = [f'<div style="{CARD}">{head} <span style="opacity:.7">· {_attempts(result)}</span>']
    if result.report is not None:
        parts.append(fields_table(result.report))
    for w in result.warnings:
        parts.append(f"<div>⚠️ {html.escape(w)}</div>")
    for change in result.repairs:  # the zero-call repair pass
        parts.append(f"<div>🔧 Repaired: {html.escape(change)}</div>")
    if result.validated:
        parts.append(highlight(result.code))
    else:
        parts.append(f'<pre style="white-space:pre-wrap;color:#cf222e">{html.escape(result.error or "")}</pre>')
        parts.append(f"<details><summary>The last code</summary>{highlight(result.code)}</details>")
    parts.append("</div>")
    return "".join(parts)


def _text(result: AssistResult) -> str:
    if result.status == "cancelled":
        return "⏹ Request cancelled."
    if result.status == "error":
        return f"❌ {result.error}"
    if result.kind == "flow":
        return flow_result_text(result)
    if result.kind != "component" or not result.code:
        return result.result
    said = verdict(result.validated, result.reduced_isolation)[0] if result.validated else "NOT validated"
    lines = [f"{result.class_name}: {said} ({_attempts(result)})"]
    if not result.validated and result.error:
        lines.append(f"Error: {result.error}")
    lines += [f"  repaired: {change}" for change in result.repairs]
    if result.report is not None:
        lines += io_text(result.report)
    return "\n".join(lines)
