"""``%assist stats``: the metrics snapshot (``metrics.stats()``) as a table and two small bar charts.

Inline SVG, no script and no external resource, so it renders the same in JupyterLab, an
exported HTML file and VS Code; ``repr`` gives the same table as text for a terminal."""

from __future__ import annotations

import html
from typing import Any


class StatsView:
    """``%assist stats``: a table and two small bar charts (attempts and seconds per request).

    Inline SVG, no script and no external resource, so it renders the same in JupyterLab,
    an exported HTML file and VS Code; ``repr`` gives the same table as text for a terminal."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.data = snapshot

    def rows(self) -> list[tuple[str, str]]:
        d = self.data
        dur, att = d["assistant_generation_duration_seconds"], d["assistant_validation_attempts"]
        rate = d["assistant_validation_success_rate"]

        def kv(counter: dict[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "-"

        def num(value: float | None, unit: str = "") -> str:
            return "-" if value is None else f"{value:.2f}{unit}"

        return [
            ("requests", str(d["assistant_requests_total"])),
            ("by kind", kv(d["assistant_requests_by_intent"])),
            ("by provider", kv(d["assistant_provider_usage"])),
            ("duration p50 / p95", f"{num(dur['p50'], ' s')} / {num(dur['p95'], ' s')}"),
            ("validation attempts p50 / p95", f"{num(att['p50'])} / {num(att['p95'])}"),
            ("first-attempt success", "-" if rate is None else f"{rate:.0%} of {att['count']}"),
            ("model calls", str(d["model_calls"])),
            ("tokens (prompt / completion)", f"{d['prompt_tokens']} / {d['completion_tokens']}"),
            ("prompt characters sent", str(d["prompt_chars"])),
            ("errors", kv(d["assistant_errors_total"])),
            ("cancellations", str(d["assistant_cancellations_total"])),
        ]

    def __repr__(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><th style='text-align:left;padding-right:12px'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in self.rows()
        )
        requests = self.data["requests"][-40:]
        charts = ""
        if requests:
            attempts = [float(r["attempts"]) for r in requests]
            seconds = [float(r["duration_s"]) for r in requests]
            charts = _bars("Validation attempts per request", attempts, "") + _bars(
                "Seconds per request", seconds, " s"
            )
        return f"<div style='font-size:12px'><table>{cells}</table>{charts}</div>"


def _bars(title: str, values: list[float], unit: str) -> str:
    """A tiny bar chart as SVG (one bar per request, oldest first)."""
    width, height, gap = 8, 48, 2
    top = max(values) or 1.0
    bars = []
    for i, v in enumerate(values):
        h = max(1.0, v / top * height) if v > 0 else 0.0
        bars.append(
            f"<rect x='{i * (width + gap)}' y='{height - h:.1f}' width='{width}' height='{h:.1f}' "
            f"fill='var(--jp-brand-color1,#1976d2)'><title>{v:g}{unit}</title></rect>"
        )
    w = max(1, len(values) * (width + gap))
    return (
        f"<div style='margin-top:6px'>{html.escape(title)} (max {top:g}{unit})</div>"
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{height}' role='img' "
        f"aria-label='{html.escape(title)}'>{''.join(bars)}</svg>"
    )
