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


def _verdicts(report: Any) -> tuple[str, bool | None, str, bool | None]:
    """("builds in Langflow: yes/no/not checked", ok?, "works when called: ...", ok?) -- the two
    questions a user asks first, answered apart: Langflow's verdict, then ours."""
    builds = getattr(report, "builds", None)
    b_text = {True: "yes", False: "no", None: "not checked"}[builds]
    smoke = report.smoke
    smoke_errors = [f for f in getattr(report, "findings", []) if f.severity == "error" and f.phase == "smoke"]
    if smoke == "failed" or smoke_errors:
        w_text, w_ok = "no (smoke test failed)", False
    elif smoke == "passed":
        w_text, w_ok = "yes (smoke-tested with sample inputs)", True
    elif smoke == "skipped":
        w_text, w_ok = f"not smoke-tested: {report.smoke_reason or 'skipped'}", None
    else:
        w_text, w_ok = "not run", None
    return b_text, builds, w_text, w_ok


_SEVERITY_ORDER = ("error", "policy", "warning")
_SEVERITY_ICON = {"error": "❌", "policy": "🛡️", "warning": "⚠️"}
_SEVERITY_LABEL = {"error": "Errors", "policy": "Policy (allowed by Langflow, worth knowing)", "warning": "Warnings"}


def _findings(report: Any) -> list[tuple[str, list[Any]]]:
    found = list(getattr(report, "findings", None) or [])
    return [
        (sev, [f for f in found if f.severity == sev])
        for sev in _SEVERITY_ORDER
        if any(f.severity == sev for f in found)
    ]


def _finding_text(f: Any) -> str:
    text = f.message[:1].upper() + f.message[1:]
    where = f" (line {f.line})" if f.line and f"line {f.line}" not in f.message.lower() else ""
    return f"{text}{where}"


def _headline(report: Any) -> str:
    name = report.class_name or "Component"
    if report.is_valid:
        return f"{name} is valid"
    builds = getattr(report, "builds", None)
    if builds is True:
        return f"{name}: Langflow accepts it, but it will break when used"
    if builds is False:
        return f"{name}: Langflow rejects it"
    return f"{name} failed in the {report.phase} phase"


def report_markdown(report: Any) -> str:
    b_text, _, w_text, _ = _verdicts(report)
    icon = "✅" if report.is_valid else "❌"
    lines = [f"{icon} **{_headline(report)}**", f"**Builds in Langflow:** {b_text} · **Works when called:** {w_text}"]
    if not report.is_valid and report.error:
        lines.append(f"```\n{report.error}\n```")
    for sev, items in _findings(report):
        lines.append(
            f"**{_SEVERITY_LABEL[sev]}**\n" + "\n".join(f"- {_SEVERITY_ICON[sev]} {_finding_text(f)}" for f in items)
        )
    lines.extend(_io_lines(report))
    for pkg in report.missing_packages:
        lines.append(f"*Missing package* `{pkg.module}`: `{pkg.fix}`")
    shown = {f.message[:1].upper() + f.message[1:] for f in getattr(report, "findings", [])}
    for w in report.warnings:
        if w not in shown:
            lines.append(f"⚠️ {w}")
    return "\n\n".join(lines)


def report_text(report: Any) -> str:
    """Plain text for a terminal or a log: the same facts as the HTML, no markup."""
    b_text, _, w_text, _ = _verdicts(report)
    lines = [_headline(report), f"  builds in Langflow: {b_text}", f"  works when called:  {w_text}"]
    if not report.is_valid and report.error:
        lines.append(f"  error: {report.error}")
    for sev, items in _findings(report):
        lines += [f"  [{sev}] {_finding_text(f)}" for f in items]
    lines += [f"  input  {i.name} ({i.type})" for i in report.inputs]
    lines += [f"  output {o.name} -> {' | '.join(o.types)}" for o in report.outputs]
    lines += [f"  missing package {p.module}: {p.fix}" for p in report.missing_packages]
    return "\n".join(lines)


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


def result_markdown(result: Any) -> str:
    if result.status == "cancelled":
        return "⏹ Request cancelled."
    if result.status == "error":
        return f"❌ {result.error}"
    if result.kind == "flow":
        return flow_result_markdown(result)
    if result.kind != "component" or not result.code:
        return inert_markdown(result.result)
    badge = "✅ validated" if result.validated else "⚠️ not validated"
    parts = [f"**{result.class_name}** — {badge} ({result.attempts} attempt{'s' * (result.attempts != 1)})"]
    if result.report is not None:
        parts.extend(_io_lines(result.report))
    if not result.validated and result.error:
        parts.append(f"```\n{result.error}\n```")
    if getattr(result, "repairs", None):  # the zero-call repair pass: one line per change
        parts.append("Repaired without a model call:\n" + "\n".join(f"- {inert_markdown(c)}" for c in result.repairs))
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
    b_text, b_ok, w_text, w_ok = _verdicts(report)
    badge = "valid" if ok else f"failed: {report.phase}"
    head = f"<b>{html.escape(report.class_name or 'Component')}</b>" + _badge(badge, ok)
    parts = [f'<div style="{_CARD}">{head}']
    parts.append(
        '<div style="margin:4px 0">'
        + f"Builds in Langflow: {_badge(b_text, b_ok)}"
        + f' <span style="margin-left:12px">Works when called:</span> {_badge(w_text, w_ok)}'
        + "</div>"
    )
    if not ok and report.error:
        parts.append(f'<pre style="white-space:pre-wrap;color:#cf222e">{html.escape(report.error)}</pre>')
    colors = {"error": "#cf222e", "policy": "#8250df", "warning": "#9a6700"}
    for sev, items in _findings(report):
        weight = "font-weight:600;" if sev == "policy" else ""
        rows = "".join(
            f'<li style="{weight}">{_SEVERITY_ICON[sev]} {html.escape(_finding_text(f))}'
            + (
                f'<details><summary>evidence</summary><pre style="white-space:pre-wrap">'
                f"{html.escape(f.evidence)}</pre></details>"
                if f.evidence
                else ""
            )
            + "</li>"
            for f in items
        )
        parts.append(
            f'<div style="margin-top:6px;color:{colors[sev]}"><b>{html.escape(_SEVERITY_LABEL[sev])}</b>'
            f'<ul style="margin:2px 0 2px 18px;padding:0">{rows}</ul></div>'
        )
    parts.append(_fields_table(report))
    for pkg in report.missing_packages:
        parts.append(
            f"<div>Missing package <code>{html.escape(pkg.module)}</code>: <code>{html.escape(pkg.fix)}</code></div>"
        )
    shown = {f.message[:1].upper() + f.message[1:] for f in getattr(report, "findings", [])}
    for w in report.warnings:
        if w not in shown:
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
    if result.kind == "flow":
        return flow_result_html(result)
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
    for change in getattr(result, "repairs", None) or []:  # the zero-call repair pass
        parts.append(f"<div>🔧 Repaired: {html.escape(change)}</div>")
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
    if result.kind == "flow":
        return flow_result_text(result)
    if result.kind != "component" or not result.code:
        return result.result
    badge = "validated" if result.validated else "NOT validated"
    lines = [f"{result.class_name}: {badge} ({result.attempts} attempt{'s' * (result.attempts != 1)})"]
    if not result.validated and result.error:
        lines.append(f"Error: {result.error}")
    lines += [f"  repaired: {change}" for change in getattr(result, "repairs", None) or []]
    if result.report is not None:
        lines += [f"  input  {i.name} ({i.type})" for i in result.report.inputs]
        lines += [f"  output {o.name} -> {' | '.join(o.types)}" for o in result.report.outputs]
    return "\n".join(lines)


# -- flows ----------------------------------------------------------------------------------------
# One rendering of a flow for every view: the `%%assist` result card, `%%assist_flow` and the
# panel's flow card (which takes `flow_picture_html` and `run_lines`).  The picture is inline SVG
# made by `flows.flow_picture` from escaped text: no script, so it renders in JupyterLab, an
# exported HTML file and VS Code alike.


def flow_picture_html(flow: dict[str, Any] | None) -> str:
    """The flow's picture as an HTML fragment (inline SVG), or "" when it cannot be drawn."""
    if not isinstance(flow, dict):
        return ""
    try:
        from lfassist_jupyter.flows import flow_picture

        svg = flow_picture(flow).svg  # the card has the title: no second caption
        return f'<div class="lfassist-flow-picture" style="overflow-x:auto;margin:4px 0">{svg}</div>'
    except Exception:  # a picture is a courtesy: a malformed flow still shows its report
        return ""


def flow_name(flow: dict[str, Any] | None, default: str = "Flow") -> str:
    return str((flow or {}).get("name") or default) if isinstance(flow, dict) else default


def run_lines(run: dict[str, Any] | None, input_text: str | None = None) -> list[tuple[str, bool | None]]:
    """A probe run (the sandbox's dict) or a real run as (line, ok) pairs: the verdict, the output,
    what was stubbed, or for a real run where it ran and which variables it was given."""
    if not run:
        return []
    on = f" on {input_text!r}" if input_text else ""
    kind = "Real run" if run.get("real") else "Probe run"
    if run.get("ok"):
        lines: list[tuple[str, bool | None]] = [(f"{kind}{on}: {run.get('text')!r}", True)]
    else:
        lines = [(f"{kind}{on} failed: {str(run.get('error') or 'unknown error').splitlines()[0][:300]}", False)]
    if run.get("real"):
        given = ", ".join(run.get("variables") or []) or "none"
        lines.append((f"Ran on this machine, isolation: {run.get('isolation')}; variables given: {given}", None))
    stubbed = run.get("stubbed") or []
    if stubbed:
        names = ", ".join(f"{s.get('name') or s.get('node')} ({s.get('reason')})" for s in stubbed)
        lines.append((f"Stubbed in the sandbox (no keys, no network): {names}", None))
    return lines


def _report_lines(report: Any) -> list[tuple[str, bool | None]]:
    if report is None:
        return []
    head = "valid" if report.ok else f"{len(report.errors)} error(s)"
    lines: list[tuple[str, bool | None]] = [
        (f"Flow {head} ({report.node_count} nodes, {report.edge_count} edges)", bool(report.ok))
    ]
    lines += [(str(e), False) for e in report.errors]
    lines += [(f"Needs before a real run: {n.kind}: {n.message}", None) for n in report.needs]
    return lines


_LINE_COLOR = {True: "#1a7f37", False: "#cf222e", None: "#9a6700"}


def flow_html(
    flow: dict[str, Any] | None,
    *,
    report: Any = None,
    run: dict[str, Any] | None = None,
    run_input: str | None = None,
    title: str | None = None,
    badge: tuple[str, bool | None] | None = None,
    notes: list[tuple[str, bool | None]] | None = None,
    spec: str | None = None,
) -> str:
    """A flow card: title and badge, the picture, the validation verdict, the probe run, notes."""
    name = title or flow_name(flow)
    head = f"<b>{html.escape(name)}</b>" + (_badge(*badge) if badge else "")
    parts = [f'<div style="{_CARD}" class="lfassist-flow-card">{head}', flow_picture_html(flow)]
    for text, ok in [*_report_lines(report), *run_lines(run, run_input), *(notes or [])]:
        parts.append(f'<div style="color:{_LINE_COLOR[ok]}">{html.escape(text)}</div>')
    if report is not None and report.warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in report.warnings)
        parts.append(f"<details><summary>warnings</summary><ul>{items}</ul></details>")
    if spec:
        parts.append(f"<details><summary>spec</summary><pre>{html.escape(spec)}</pre></details>")
    parts.append("</div>")
    return "".join(parts)


def flow_text(
    flow: dict[str, Any] | None,
    *,
    report: Any = None,
    run: dict[str, Any] | None = None,
    run_input: str | None = None,
    title: str | None = None,
    notes: list[tuple[str, bool | None]] | None = None,
) -> str:
    """The same facts as `flow_html`, as plain lines (a terminal, a log, markdown)."""
    lines = [title or flow_name(flow)]
    lines += [f"  {text}" for text, _ in [*_report_lines(report), *run_lines(run, run_input), *(notes or [])]]
    return "\n".join(lines)


def _flow_result_parts(result: Any) -> dict[str, Any]:
    """What a flow `AssistResult` holds (fields named by the flow contract; read defensively)."""
    outcome = getattr(result, "outcome", None)

    def pick(name: str, alt: str | None = None) -> Any:
        value = getattr(result, name, None)
        if value is None and outcome is not None:
            value = getattr(outcome, alt or name, None)
        return value

    attempts = f"{result.attempts} attempt{'s' * (result.attempts != 1)}"
    badge = ("validated" if result.validated else "not validated", bool(result.validated))
    notes: list[tuple[str, bool | None]] = []
    if not result.validated and result.error:
        notes.append((result.error.splitlines()[0][:300], False))
    notes += [(f"⚠️ {w}", None) for w in result.warnings]
    report = pick("flow_report", "report")  # rendering shows the result's verdict; it never validates
    return dict(
        flow=pick("flow"),
        report=report,
        run=pick("run"),
        title=f"{flow_name(pick('flow'))} · {attempts}",
        badge=badge,
        notes=notes,
        spec=pick("spec"),
    )


def flow_result_html(result: Any) -> str:
    return flow_html(**_flow_result_parts(result))


def flow_result_text(result: Any) -> str:
    parts = _flow_result_parts(result)
    badge = parts.pop("badge")
    parts.pop("spec")
    parts["title"] = f"{parts['title']} · {badge[0]}"
    return flow_text(**parts)


def flow_result_markdown(result: Any) -> str:
    text = flow_result_text(result)
    spec = _flow_result_parts(result)["spec"]
    return f"```\n{text}\n```" + (f"\n\n```yaml\n{spec.rstrip()}\n```" if spec else "")
