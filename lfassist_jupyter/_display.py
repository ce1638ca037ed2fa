"""Plain Markdown renderings shared by reports and results (rich HTML lives in the magic)."""

from __future__ import annotations

from typing import Any


def _io_lines(report: Any) -> list[str]:
    lines = []
    if report.inputs:
        lines.append(
            "**Inputs:** " + ", ".join(f"`{i.name}` ({i.type})" if i.type else f"`{i.name}`" for i in report.inputs)
        )
    if report.outputs:
        lines.append(
            "**Outputs:** "
            + ", ".join(f"`{o.name}` → {' | '.join(o.types)}" if o.types else f"`{o.name}`" for o in report.outputs)
        )
    return lines


def report_markdown(report: Any) -> str:
    head = (
        f"✅ **{report.class_name}** is valid"
        if report.is_valid
        else (f"❌ **{report.class_name or 'Component'}** failed in the *{report.phase}* phase")
    )
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
    if result.intent != "generate_component" or not result.code:
        return result.result
    badge = "✅ validated" if result.validated else "⚠️ not validated"
    parts = [f"**{result.class_name}** — {badge} ({result.attempts} attempt{'s' * (result.attempts != 1)})"]
    if result.report is not None:
        parts.extend(_io_lines(result.report))
    if not result.validated and result.error:
        parts.append(f"```\n{result.error}\n```")
    parts.append(f"```python\n{result.code.rstrip()}\n```")
    return "\n\n".join(parts)
