"""Benchmarks, measured side by side in one run: ``make bench`` (or ``python benchmarks/run.py``).

Prints one table and writes ``benchmarks/results/<git sha>.json``.  Offline and
deterministic inputs: a fixed component, the scripted provider (zero model time), so
what is measured is our overhead, not a model's.

- extension load: ``%load_ext lfassist_jupyter`` in a fresh IPython, vs. IPython alone
- validation: warm worker (p50/p95) vs. the same lfx build in-process (the floor) vs.
  a cold process per validation
- first validation after ``%load_ext`` and 3 s of idle time
- pipeline overhead per request, model time excluded: a full scripted request vs. its
  validation alone
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from components import GOOD, fenced  # noqa: E402

from lfassist_jupyter import Assistant, ScriptedProvider  # noqa: E402
from lfassist_jupyter.validation.sandbox import SandboxValidator, validate_component  # noqa: E402

N = 40


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def extension_load() -> tuple[float, float]:
    """Median ms of a fresh process that starts IPython with and without %load_ext."""
    base = "from IPython.core.interactiveshell import InteractiveShell as S; ip = S.instance()"
    code = base + "\nimport time; t=time.perf_counter(); {load}; print((time.perf_counter()-t)*1000)"
    with_ext, without = [], []
    for _ in range(5):
        for load, sink in (("ip.run_line_magic('load_ext', 'lfassist_jupyter')", with_ext), ("pass", without)):
            out = subprocess.run([sys.executable, "-c", code.format(load=load)], capture_output=True, text=True)
            sink.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(with_ext), statistics.median(without)


IN_PROCESS = """
import sys, time, json
from lfx.custom.custom_component.component import Component
from lfx.custom.utils import build_custom_component_template
code = sys.stdin.read()
build_custom_component_template(Component(_code=code))
times = []
for _ in range({n}):
    t0 = time.perf_counter()
    build_custom_component_template(Component(_code=code))
    times.append((time.perf_counter() - t0) * 1000)
print(json.dumps(times))
"""


def in_process_floor(n: int) -> list[float]:
    """lfx's own build, in a process that has lfx imported: what Langflow's endpoint does."""
    out = subprocess.run([sys.executable, "-c", IN_PROCESS.format(n=n)], input=GOOD, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold(n: int) -> list[float]:
    times = []
    for _ in range(n):
        validator = SandboxValidator()
        t0 = time.perf_counter()
        validator.validate_sync(GOOD, smoke=False)
        times.append((time.perf_counter() - t0) * 1000)
        validator.close()
    return times


def first_after_idle() -> float:
    validator = SandboxValidator()
    validator.start()  # what %load_ext does
    time.sleep(3)
    t0 = time.perf_counter()
    report = validator.validate_sync(GOOD)
    elapsed = (time.perf_counter() - t0) * 1000
    assert report.is_valid, report.error
    validator.close()
    return elapsed


def pipeline(validator: SandboxValidator, n: int) -> tuple[list[float], list[float]]:
    """Full requests with zero model time vs. their validation alone (static + worker)."""
    intent = json.dumps({"translation": "uppercase", "intent": "generate_component"})

    async def one() -> float:
        provider = ScriptedProvider(replies=[intent, fenced(GOOD)], chunk_size=10_000)
        assistant = Assistant(provider=provider, validator=validator, session_store=False)
        t0 = time.perf_counter()
        result = await assistant.arun("a component that uppercases text")
        assert result.validated, result.error
        return (time.perf_counter() - t0) * 1000

    full = [asyncio.run(one()) for _ in range(n)]
    alone = timed(lambda: validate_component(GOOD, validator=validator), n)
    return full, alone


def main() -> None:
    print("measuring... (about a minute)", flush=True)
    load_with, load_without = extension_load()
    validator = SandboxValidator()
    validator.start()
    validator.validate_sync(GOOD)
    warm_runtime = timed(lambda: validator.validate_sync(GOOD, smoke=False), N)
    warm_full = timed(lambda: validator.validate_sync(GOOD), N)
    floor = in_process_floor(N)
    cold_times = cold(3)
    idle_first = first_after_idle()
    full, alone = pipeline(validator, 20)
    validator.close()

    p50_floor = pct(floor, 50)
    rows = [
        ("%load_ext lfassist_jupyter (added to IPython)", f"{load_with - load_without:.1f} ms",
         f"{load_with:.1f} vs {load_without:.1f} ms", "target < 300 ms"),
        ("validation, in-process lfx build (floor) p50", f"{p50_floor:.1f} ms", "1.00x", ""),
        ("validation, warm worker, runtime phase p50", f"{pct(warm_runtime, 50):.1f} ms",
         f"{pct(warm_runtime, 50) / p50_floor:.2f}x floor", "target <= 1.5x"),
        ("validation, warm worker, runtime phase p95", f"{pct(warm_runtime, 95):.1f} ms",
         f"{pct(warm_runtime, 95) / pct(floor, 95):.2f}x floor p95", ""),
        ("validation, warm worker, runtime + smoke p50", f"{pct(warm_full, 50):.1f} ms",
         f"{pct(warm_full, 50) / p50_floor:.2f}x floor", ""),
        ("validation, cold process per validation", f"{statistics.median(cold_times):.0f} ms",
         f"{statistics.median(cold_times) / pct(warm_runtime, 50):.0f}x warm", ""),
        ("first validation after load + 3 s idle", f"{idle_first:.1f} ms", "", "target < 100 ms"),
        ("pipeline per request, model time excluded p50", f"{pct(full, 50):.1f} ms",
         f"{pct(full, 50) / pct(alone, 50):.2f}x validation alone", "target < 50 ms"),
        ("  of which our overhead (request - validation)", f"{pct(full, 50) - pct(alone, 50):.1f} ms", "", ""),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure':<{width}}  {'value':>10}  {'ratio':<26}  note")
    print("-" * (width + 56))
    for name, value, ratio, note in rows:
        print(f"{name:<{width}}  {value:>10}  {ratio:<26}  {note}")

    git = ["git", "rev-parse", "--short", "HEAD"]
    sha = subprocess.run(git, capture_output=True, text=True, cwd=ROOT).stdout.strip() or "unknown"
    raw = {"floor": floor, "warm_runtime": warm_runtime, "warm_full": warm_full, "cold": cold_times,
           "pipeline": full, "validation_alone": alone}  # fmt: skip
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{sha}.json").write_text(json.dumps({"sha": sha, "rows": rows, "raw": raw}, indent=1))


if __name__ == "__main__":
    main()
