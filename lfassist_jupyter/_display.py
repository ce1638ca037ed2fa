"""Renderings of reports and results: HTML for Jupyter, Markdown, and plain text.

Only the standard library and (lazily) pygments, which IPython already depends on: the
result card must render in JupyterLab, Notebook 7, VS Code (which all take text/html) and
a terminal (text/plain), without any front-end extension.
"""

from __future__ import annotations

import html
from typing import Any

_CARD = (
    "border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:8px 12px;margin:4px 0;"
    "font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;"
    "color:var(--jp-ui-font-color1,inherit);background:var(--jp-layout-color1,transparent)"
)


def _io_lines(report: Any) -> list[str]:
    lines = []
    if report.inputs:
        items = (f"`{i.name}` ({i.type})" if i.type else f"`{i.name}`" for i in report.inputs)
        lines.append("**Inputs:** " + ", ".join(items))
    if report.outputs:
        items = (f"`{o.name}` → {' | '.join(o.types)}" if o.types else f"`{o.name}`" for o in report.outputs)
        lines.append("**Outputs:** " + ", ".join(items))
    return lines


def report_markdown(report: Any) -> str:
    if report.is_valid:
        head = f"✅ **{report.class_name}** is valid"
    else:
        head = f"❌ **{report.class_name or 'Component'}** failed in the *{report.phase}* phase"
    lines = [head]
    if not report.is_valid and report.error:
        lines.append(f"\n```\n{report.error}\n```")
    lines.extend(_io_lines(report))
    if report.smoke == "skipped" and report.smoke_reason:
        lines.append(f"*Not smoke-tested:* {report.smoke_reason}")
    for pkg in report.missing_packages:
        lines.append(f"*Missing package* `{pkg.module}`: `{pkg.fix}`")
    for w in report.warnings:
        lines.append(f"⚠️ {w}")
    return "\n\n".join(lines)


def result_markdown(result: Any) -> str:
    if result.status == "cancelled":
        return "⏹ Request cancelled."
    if result.status == "error":
        return f"❌ {result.error}"
    if result.kind != "component" or not result.code:
        return result.result
    badge = "✅ validated" if result.validated else "⚠️ not validated"
    parts = [f"**{result.class_name}** — {badge} ({result.attempts} attempt{'s' * (result.attempts != 1)})"]
    if result.report is not None:
        parts.extend(_io_lines(result.report))
    if not result.validated and result.error:
        parts.append(f"```\n{result.error}\n```")
    parts.append(f"```python\n{result.code.rstrip()}\n```")
    return "\n\n".join(parts)


def highlight(code: str) -> str:
    """Python code as inline-styled HTML (no stylesheet needed), or escaped <pre> without pygments."""
    try:
        from pygments import highlight as _hl
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        return _hl(code, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    except ImportError:  # pragma: no cover - pygments ships with IPython
        return f"<pre>{html.escape(code)}</pre>"


def _badge(text: str, ok: bool | None) -> str:
    color = {True: "#1a7f37", False: "#cf222e", None: "#9a6700"}[ok]
    return (
        f'<span style="border:1px solid {color};color:{color};border-radius:10px;padding:0 8px;'
        f'font-size:12px;margin-left:6px">{html.escape(text)}</span>'
    )


def _fields_table(report: Any) -> str:
    rows = [
        f"<tr><td>input</td><td><code>{html.escape(i.name)}</code></td><td>{html.escape(i.type or '')}</td>"
        f"<td>{html.escape(i.display_name or '')}</td></tr>"
        for i in report.inputs
    ]
    rows += [
        f"<tr><td>output</td><td><code>{html.escape(o.name)}</code></td><td>{html.escape(' | '.join(o.types))}</td>"
        f"<td>{html.escape(o.display_name or '')}</td></tr>"
        for o in report.outputs
    ]
    if not rows:
        return ""
    return (
        '<table style="border-collapse:collapse;margin:6px 0;font-size:12px">'
        "<tr><th></th><th>name</th><th>type</th><th>display name</th></tr>" + "".join(rows) + "</table>"
    )


def report_html(report: Any) -> str:
    ok = bool(report.is_valid)
    head = f"<b>{html.escape(report.class_name or 'Component')}</b>" + _badge(
        "valid" if ok else f"failed: {report.phase}", ok
    )
    parts = [f'<div style="{_CARD}">{head}']
    if not ok and report.error:
        parts.append(f'<pre style="white-space:pre-wrap;color:#cf222e">{html.escape(report.error)}</pre>')
    parts.append(_fields_table(report))
    if report.smoke == "skipped" and report.smoke_reason:
        parts.append(f"<div><i>Not smoke-tested:</i> {html.escape(report.smoke_reason)}</div>")
    for pkg in report.missing_packages:
        parts.append(
            f"<div>Missing package <code>{html.escape(pkg.module)}</code>: <code>{html.escape(pkg.fix)}</code></div>"
        )
    for w in report.warnings:
        parts.append(f"<div>⚠️ {html.escape(w)}</div>")
    if report.traceback:
        parts.append(f"<details><summary>Traceback</summary><pre>{html.escape(report.traceback)}</pre></details>")
    parts.append("</div>")
    return "".join(parts)


def result_html(result: Any) -> str:
    if result.status == "cancelled":
        return f'<div style="{_CARD}">⏹ Request cancelled.</div>'
    if result.status == "error":
        return f'<div style="{_CARD}">❌ {html.escape(result.error or "Error")}</div>'
    if result.kind != "component" or not result.code:
        text = html.escape(result.result).replace("\n", "<br>")
        return f'<div style="{_CARD}">{text}</div>'
    attempts = f"{result.attempts} attempt{'s' * (result.attempts != 1)}"
    head = f"<b>{html.escape(result.class_name or 'Component')}</b>" + _badge(
        "validated" if result.validated else "not validated", result.validated
    )
    parts = [f'<div style="{_CARD}">{head} <span style="opacity:.7">· {attempts}</span>']
    if result.report is not None:
        parts.append(_fields_table(result.report))
    for w in result.warnings:
        parts.append(f"<div>⚠️ {html.escape(w)}</div>")
    if result.validated:
        parts.append(highlight(result.code))
    else:
        parts.append(f'<pre style="white-space:pre-wrap;color:#cf222e">{html.escape(result.error or "")}</pre>')
        parts.append(f"<details><summary>The last code</summary>{highlight(result.code)}</details>")
    parts.append("</div>")
    return "".join(parts)


def result_text(result: Any) -> str:
    if result.status != "complete":
        return result_markdown(result)
    if result.kind != "component" or not result.code:
        return result.result
    badge = "validated" if result.validated else "NOT validated"
    lines = [f"{result.class_name}: {badge} ({result.attempts} attempt{'s' * (result.attempts != 1)})"]
    if not result.validated and result.error:
        lines.append(f"Error: {result.error}")
    if result.report is not None:
        lines += [f"  input  {i.name} ({i.type})" for i in result.report.inputs]
        lines += [f"  output {o.name} -> {' | '.join(o.types)}" for o in result.report.outputs]
    return "\n".join(lines)
