"""The component report card (``ValidationReport``) and the ``--fix`` card, as HTML and plain
text: the same facts in each, for JupyterLab, VS Code, an exported file and a terminal."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .markdown import highlight
from .style import CARD, badge, verdict

if TYPE_CHECKING:
    from lfassist_jupyter.core.component.repair import FixResult
    from lfassist_jupyter.validation.report import Finding, ValidationReport


def io_text(report: ValidationReport) -> list[str]:
    """The component's inputs and outputs as indented plain lines."""
    return [f"  input  {i.name} ({i.type})" for i in report.inputs] + [
        f"  output {o.name} -> {' | '.join(o.types)}" for o in report.outputs
    ]


def _verdicts(report: ValidationReport) -> tuple[str, bool | None, str, bool | None]:
    """("builds in Langflow: yes/no/not checked", ok?, "works when called: ...", ok?) -- the two
    questions a user asks first, answered apart: Langflow's verdict, then ours."""
    builds = report.builds
    b_text = {True: "yes", False: "no", None: "not checked"}[builds]
    smoke = report.smoke
    smoke_errors = [f for f in report.findings if f.severity == "error" and f.phase == "smoke"]
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


def _findings(report: ValidationReport) -> list[tuple[str, list[Finding]]]:
    found = list(report.findings)
    return [
        (sev, [f for f in found if f.severity == sev])
        for sev in _SEVERITY_ORDER
        if any(f.severity == sev for f in found)
    ]


def _finding_text(f: Finding) -> str:
    text = f.message[:1].upper() + f.message[1:]
    where = f" (line {f.line})" if f.line and f"line {f.line}" not in f.message.lower() else ""
    return f"{text}{where}"


def _headline(report: ValidationReport) -> str:
    name = report.class_name or "Component"
    if report.is_valid:
        return f"{name} is {verdict(True, report.reduced_isolation, 'valid')[0]}"
    if report.builds is True:
        return f"{name}: Langflow accepts it, but it will break when used"
    if report.builds is False:
        return f"{name}: Langflow rejects it"
    return f"{name} failed in the {report.phase} phase"


def _unshown_warnings(report: ValidationReport) -> list[str]:
    shown = {f.message[:1].upper() + f.message[1:] for f in report.findings}
    return [w for w in report.warnings if w not in shown]


def report_text(report: ValidationReport) -> str:
    """Plain text for a terminal or a log: the same facts as the HTML, no markup."""
    b_text, _, w_text, _ = _verdicts(report)
    lines = [_headline(report), f"  builds in Langflow: {b_text}", f"  works when called:  {w_text}"]
    if not report.is_valid and report.error:
        lines.append(f"  error: {report.error}")
    for sev, items in _findings(report):
        lines += [f"  [{sev}] {_finding_text(f)}" for f in items]
    lines += io_text(report)
    lines += [f"  missing package {p.module}: {p.fix}" for p in report.missing_packages]
    return "\n".join(lines)


def fields_table(report: ValidationReport) -> str:
    """The component's inputs and outputs as a small HTML table ("" when it has none)."""
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


def report_html(report: ValidationReport) -> str:
    ok = bool(report.is_valid)
    b_text, b_ok, w_text, w_ok = _verdicts(report)
    said = verdict(True, report.reduced_isolation, "valid") if ok else (f"failed: {report.phase}", False)
    head = f"<b>{html.escape(report.class_name or 'Component')}</b>" + badge(*said)
    parts = [f'<div style="{CARD}">{head}']
    parts.append(
        '<div style="margin:4px 0">'
        + f"Builds in Langflow: {badge(b_text, b_ok)}"
        + f' <span style="margin-left:12px">Works when called:</span> {badge(w_text, w_ok)}'
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
    parts.append(fields_table(report))
    for pkg in report.missing_packages:
        parts.append(
            f"<div>Missing package <code>{html.escape(pkg.module)}</code>: <code>{html.escape(pkg.fix)}</code></div>"
        )
    parts += [f"<div>⚠️ {html.escape(w)}</div>" for w in _unshown_warnings(report)]
    if report.traceback:
        parts.append(f"<details><summary>Traceback</summary><pre>{html.escape(report.traceback)}</pre></details>")
    parts.append("</div>")
    return "".join(parts)


def fix_html(fix: FixResult) -> str:
    items = "".join(f"<li>{html.escape(c)}</li>" for c in fix.changes)
    parts = [f"<div><b>{html.escape(fix.headline)}</b></div>", f"<ul>{items}</ul>" if items else ""]
    if fix.repaired:
        parts.append(highlight(fix.code))
    return "".join([*parts, report_html(fix.report)])


def fix_text(fix: FixResult) -> str:
    """``%%assist_validate --fix`` in a terminal: what changed, the repaired code, then the report."""
    lines = [fix.headline, *(f"  - {c}" for c in fix.changes)]
    if fix.repaired:
        lines += ["", fix.code.rstrip()]
    return "\n".join([*lines, "", report_text(fix.report)])
