"""One rendering of a flow for every view: the ``%%assist`` result card, ``%%assist_flow``, the
panel's flow card (which takes `flow_picture_html` and `run_lines`), ``FlowReport``'s own card, and
the flow as a re-runnable ``%%assist_flow`` cell (`flow_cell_source`: what Insert puts in a notebook).

The picture is inline SVG made by `flow_picture` from escaped text: no script, so it renders in
JupyterLab, an exported HTML file and VS Code alike.  Everything here draws what it is given:
it never validates, builds or runs a flow."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.sandbox.answers import FlowRun, RealRun

from .style import CARD, LINE_COLOR, Line, verdict
from .style import badge as badge_html

if TYPE_CHECKING:
    from lfassist_jupyter.core.result import AssistResult
    from lfassist_jupyter.flows.results import FlowReport
    from lfassist_jupyter.validation.report import MissingPackage


def flow_picture_html(flow: dict[str, Any] | None) -> str:
    """The flow's picture as an HTML fragment (inline SVG), or "" when it cannot be drawn."""
    if not isinstance(flow, dict):
        return ""
    try:
        from .picture import flow_picture

        svg = flow_picture(flow).svg  # the card has the title: no second caption
        return f'<div class="lfassist-flow-picture" style="overflow-x:auto;margin:4px 0">{svg}</div>'
    except Exception:  # a picture is a courtesy: a malformed flow still shows its report
        return ""


def flow_name(flow: dict[str, Any] | None, default: str = "Flow") -> str:
    return str((flow or {}).get("name") or default) if isinstance(flow, dict) else default


def flow_cell_source(spec: str) -> str:
    """The re-runnable cell that holds a flow: ``%%assist_flow`` and the spec."""
    return f"%%assist_flow\n{spec.strip()}\n"


def run_lines(run: FlowRun | None, input_text: str | None = None) -> list[Line]:
    """A probe run or a real run (``RealRun``) as (line, ok) pairs: the verdict, the output, what
    was stubbed, or for a real run where it ran and which variables it was given."""
    if run is None:
        return []
    on = f" on {input_text!r}" if input_text else ""
    kind = "Real run" if isinstance(run, RealRun) else "Probe run"
    if run.ok:
        lines: list[Line] = [(f"{kind}{on}: {run.text!r}", True)]
    elif run.needs:  # not a fault of the flow: what the user must provide
        provide = "; ".join(n.message for n in run.needs[:5])
        lines = [(f"{kind}{on} stopped at what you must provide: {provide}", None)]
    else:
        lines = [(f"{kind}{on} failed: {str(run.error or 'unknown error').splitlines()[0][:300]}", False)]
    if isinstance(run, RealRun):
        given = ", ".join(run.variables) or "none"
        lines.append((f"Ran on this machine, isolation: {run.isolation}; variables given: {given}", None))
        if run.refused:
            shown = ", ".join(f"{r.host}:{r.port} ({r.reason})" for r in run.refused[:5])
            more = f" and {len(run.refused) - 5} more" if len(run.refused) > 5 else ""
            lines.append((f"Refused by the network fence: {shown}{more}", False))
    if run.stubbed:
        lines.append((f"Stubbed in the sandbox (no keys, no network): {run.stubbed_names()}", None))
    return lines


def package_line(package: MissingPackage) -> str:
    """``Needs langchain-groq, not installed here (Language Model): %pip install langchain-groq``."""
    where = f" ({', '.join(package.nodes)})" if package.nodes else ""
    return f"Needs {package.distribution}, not installed here{where}: {package.fix}"


def headline(report: FlowReport) -> Line:
    """The verdict in one line, with its colour: valid (green), N error(s) (red), or not judged
    here (amber: never shown as valid; the lines below say what is missing)."""
    size = f"({report.node_count} nodes, {report.edge_count} edges)"
    if report.verdict == "not_judged":
        lacking = ", ".join(p.distribution for p in report.missing_packages)
        why = f"this environment lacks {lacking}" if lacking else "the sandbox gave no verdict on a node"
        return f"Flow not judged here {size}: {why}", None
    if report.is_valid:
        return f"Flow valid {size}", True
    return f"Flow {len(report.errors)} error(s) {size}", False


PROVISION_HOW = "say yes with --provision (%%assist_flow, %assist flow load) or LFASSIST_PROVISION=yes"


def provision_lines(report: FlowReport) -> list[Line]:
    """Which environment judged the flow when it was not the sandbox's, or what judging it
    elsewhere would install (and how to say yes)."""
    plan = report.provision
    if report.verdict != "not_judged":
        if plan is not None and report.judged_in:
            return [(f"Judged in {report.judged_in}", None)]
        return []
    if plan is None:
        return []
    if plan.error:
        return [(plan.summary(), None)]
    return [(f"{plan.summary()} To judge it there, {PROVISION_HOW}.", None)]


def report_lines(report: FlowReport | None) -> list[Line]:
    """A flow's verdict as (line, ok) pairs: the headline, each error, each need."""
    if report is None:
        return []
    lines: list[Line] = [headline(report)]
    lines += [(str(e), False) for e in report.errors]
    lines += [(f"Model: {m}", None) for m in report.models]
    lines += [(package_line(p), False) for p in report.missing_packages]
    lines += [(f"Not judged: {line}", None) for line in report.not_judged]
    lines += provision_lines(report)
    # A package need is shown once, as its package line above.
    lines += [(f"Needs before a real run: {n.kind}: {n.message}", None) for n in report.needs if n.kind != "package"]
    return lines


def flow_report_html(report: FlowReport) -> str:
    """``validate_flow``'s verdict on its own: errors with their fixes, then what the user must provide."""
    head, ok = headline(report)
    parts = [f'<div class="lfassist-flow-report"><b style="color:{LINE_COLOR[ok]}">{html.escape(head)}</b>']
    if report.errors:
        parts.append("<ul>" + "".join(f"<li>{html.escape(str(e))}</li>" for e in report.errors) + "</ul>")
    more = [f"Model: {m}" for m in report.models] + [package_line(p) for p in report.missing_packages]
    more += [f"Not judged: {line}" for line in report.not_judged]
    for line in [*more, *(text for text, _ in provision_lines(report))]:
        parts.append(f"<div>{html.escape(line)}</div>")
    needs = [n for n in report.needs if n.kind != "package"]  # shown once, as its package line above
    if needs:
        parts.append(
            "<div>Needs before a real run:</div><ul>"
            + "".join(f"<li>{html.escape(n.kind)}: {html.escape(n.message)}</li>" for n in needs)
            + "</ul>"
        )
    if report.warnings:
        parts.append("<details><summary>warnings</summary><ul>")
        parts.append("".join(f"<li>{html.escape(w)}</li>" for w in report.warnings) + "</ul></details>")
    return "".join(parts) + "</div>"


def flow_report_text(report: FlowReport) -> str:
    """``validate_flow``'s verdict in a terminal: the same lines as the flow card's."""
    lines = report_lines(report)
    return "\n".join([lines[0][0], *(f"  {text}" for text, _ in lines[1:])])


def flow_html(
    flow: dict[str, Any] | None,
    *,
    report: FlowReport | None = None,
    run: FlowRun | None = None,
    run_input: str | None = None,
    title: str | None = None,
    badge: Line | None = None,
    notes: list[Line] | None = None,
    spec: str | None = None,
) -> str:
    """A flow card: title and badge, the picture, the validation verdict, the probe run, notes."""
    name = title or flow_name(flow)
    head = f"<b>{html.escape(name)}</b>" + (badge_html(*badge) if badge else "")
    parts = [f'<div style="{CARD}" class="lfassist-flow-card">{head}', flow_picture_html(flow)]
    for text, ok in [*report_lines(report), *run_lines(run, run_input), *(notes or [])]:
        parts.append(f'<div style="color:{LINE_COLOR[ok]}">{html.escape(text)}</div>')
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
    report: FlowReport | None = None,
    run: FlowRun | None = None,
    run_input: str | None = None,
    title: str | None = None,
    notes: list[Line] | None = None,
) -> str:
    """The same facts as `flow_html`, as plain lines (a terminal, a log)."""
    lines = [title or flow_name(flow)]
    lines += [f"  {text}" for text, _ in [*report_lines(report), *run_lines(run, run_input), *(notes or [])]]
    return "\n".join(lines)


def _flow_result_parts(result: AssistResult) -> dict[str, Any]:
    """What a flow `AssistResult` holds: its own fields, else its outcome's. Rendering shows the
    result's verdict; it never validates."""
    outcome = result.outcome if result.outcome is not None and result.outcome.kind == "flow" else None
    flow = result.flow if result.flow is not None else (outcome.flow if outcome else None)
    report = result.flow_report if result.flow_report is not None else (outcome.report if outcome else None)
    run = result.run if result.run is not None else (outcome.run if outcome else None)
    spec = result.spec if result.spec is not None else (outcome.spec if outcome else None)
    attempts = f"{result.attempts} attempt{'s' * (result.attempts != 1)}"
    notes: list[Line] = []
    if not result.validated and result.error:
        notes.append((result.error.splitlines()[0][:300], False))
    notes += [(f"⚠️ {w}", None) for w in result.warnings]
    return dict(
        flow=flow,
        report=report,
        run=run,
        title=f"{flow_name(flow)} · {attempts}",
        badge=verdict(bool(result.validated), result.reduced_isolation),
        notes=notes,
        spec=spec,
    )


def flow_result_html(result: AssistResult) -> str:
    return flow_html(**_flow_result_parts(result))


def flow_result_text(result: AssistResult) -> str:
    parts = _flow_result_parts(result)
    said, _ok = parts.pop("badge")
    parts.pop("spec")
    parts["title"] = f"{parts['title']} · {said}"
    return flow_text(**parts)
