"""The eval harness: how often does the assistant succeed with *your* model, checked by running it.

``python -m lfassist_jupyter.eval CASES.toml [--provider P] [--model M] [--json OUT]`` (or
``%assist eval CASES.toml``) sends each case's request through the same ``Assistant`` a
notebook uses, then judges the result the way a user would: it must be validated and, when
the case has a ``[case.check]``, running it in the sandbox (a component's first output, or
the whole flow) with ``input`` must give the expected text.  No LLM judge: a pass is a
program that ran.

A case file::

    [[case]]
    name = "uppercase"
    request = "a component that converts text to uppercase"
    kind = "component"          # or "flow"
    [case.check]                # optional
    input = "hello"
    expect = "HELLO"            # exact text (surrounding whitespace ignored); or expect_contains = "..."

Reading the numbers: *pass rate* is passes over cases; *first-attempt rate* is cases that
passed without a repair round; *calls per success* is every model call of the run (the
classification call included) over the passes, the number that turns into your bill.
Exit status: 0 when every case ran (passed or failed), 1 when a case *errored* (the provider
failed, the check could not run), 2 for a usage error; ``--strict`` also makes failures exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lfassist_jupyter.errors import ConfigError, LfAssistError
from lfassist_jupyter.providers import check_environment
from lfassist_jupyter.providers.table import setup_variables
from lfassist_jupyter.runtime import blocking_twin
from lfassist_jupyter.settings import Settings, check, help_text

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.answers import ComponentRun, FlowRun
    from lfassist_jupyter.sandbox.client import SandboxValidator

MAX_CASES = 1000
OUTPUT_PREVIEW = 200  # characters of a check's output kept in the report


class Check(BaseModel):
    """Run the result with ``input`` and compare its text with ``expect`` or ``expect_contains``."""

    model_config = ConfigDict(extra="forbid")
    input: str = ""
    expect: str | None = None
    expect_contains: str | None = None

    @model_validator(mode="after")
    def _one_expectation(self) -> Check:
        if (self.expect is None) == (self.expect_contains is None):
            raise ValueError("a check needs exactly one of `expect` or `expect_contains`")
        return self

    def judge(self, output: str) -> bool:
        if self.expect is not None:
            return output.strip() == self.expect.strip()
        return (self.expect_contains or "") in output


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    request: str = Field(min_length=1)
    kind: Literal["component", "flow"] = "component"
    check: Check | None = None
    before: list[str] = Field(default_factory=list, max_length=5)
    """Earlier requests of the same conversation (a flow to run or edit), sent first."""
    undo: bool = False
    """After ``before``, restore the flow before the last edit (``Assistant.undo``)."""


CaseStatus = Literal["pass", "fail", "error"]


@dataclass
class CaseResult:
    name: str
    kind: str
    status: CaseStatus
    reason: str = ""  # why it failed or errored; empty on a pass
    attempts: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0
    seconds: float = 0.0
    checked: bool = False  # a check ran (and passed, when status is pass)
    output: str | None = None  # the check's output, truncated
    reduced_isolation: str = ""  # why the sandbox that validated it had reduced isolation; "" under full

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass
class SuiteResult:
    cases: list[CaseResult] = field(default_factory=list)
    provider: str = ""
    model: str = ""
    started: str = ""
    versions: dict[str, str | None] = field(default_factory=dict)

    def totals(self) -> dict[str, Any]:
        n = len(self.cases)
        passes = [c for c in self.cases if c.passed]
        calls = sum(c.model_calls for c in self.cases)
        return {
            "cases": n,
            "passed": len(passes),
            "failed": sum(c.status == "fail" for c in self.cases),
            "errored": sum(c.status == "error" for c in self.cases),
            "pass_rate": round(len(passes) / n, 4) if n else None,
            "first_attempt_rate": round(sum(c.attempts == 1 for c in passes) / n, 4) if n else None,
            "median_seconds": round(statistics.median(c.seconds for c in self.cases), 3) if n else None,
            "calls_per_success": round(calls / len(passes), 2) if passes else None,
            "model_calls": calls,
            "prompt_tokens": sum(c.prompt_tokens for c in self.cases),
            "completion_tokens": sum(c.completion_tokens for c in self.cases),
            "prompt_chars": sum(c.prompt_chars for c in self.cases),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "started": self.started,
            "versions": self.versions,
            "totals": self.totals(),
            "cases": [asdict(c) for c in self.cases],
        }

    def table(self) -> str:
        """The per-case table and the totals, as aligned text."""
        head = ("case", "kind", "result", "attempts", "calls", "tokens", "seconds", "prompt chars")
        rows = [
            (
                c.name[:40],
                c.kind,
                c.status
                + ("" if c.passed or not c.reason else f": {c.reason[:60]}")
                + (" (reduced isolation)" if c.passed and c.reduced_isolation else ""),
                str(c.attempts),
                str(c.model_calls),
                str(c.prompt_tokens + c.completion_tokens),
                f"{c.seconds:.1f}",
                str(c.prompt_chars),
            )
            for c in self.cases
        ]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
        t = self.totals()

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{v:.0%}"

        lines.append("")
        lines.append(
            f"{t['passed']}/{t['cases']} passed ({pct(t['pass_rate'])}), first attempt {pct(t['first_attempt_rate'])}, "
            f"median {t['median_seconds'] if t['median_seconds'] is not None else '-'} s, "
            f"{t['calls_per_success'] if t['calls_per_success'] is not None else '-'} calls per success, "
            f"{t['failed']} failed, {t['errored']} errored"
        )
        reduced = sorted({c.reduced_isolation for c in self.cases if c.passed and c.reduced_isolation})
        if reduced:  # a pass is "validated": never without saying the sandbox ran without its OS layer
            lines.append(f"Validated with reduced isolation: {'; '.join(reduced)}")
        # The plain closing line test runners print, so CI logs read the same way.
        lines.append(f"{t['passed']} passed, {t['failed'] + t['errored']} failed")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()


class CheckRunner(Protocol):
    """Runs a result in the sandbox with a text input and returns the text it produced."""

    def run_component(self, code: str, input_text: str) -> str: ...

    def probe_run(self, flow: dict[str, Any], input_text: str) -> str: ...


class SandboxCheckRunner:
    """Checks in the sandboxed worker: generated code never runs in this process.  ``sandbox``
    is the one given, else the shared one (the eval harness is an edge)."""

    def __init__(self, timeout: float = 30.0, *, sandbox: SandboxValidator | None = None) -> None:
        self.timeout = timeout
        if sandbox is None:
            from lfassist_jupyter.sandbox import shared

            sandbox = shared()
        self.sandbox = sandbox

    def run_component(self, code: str, input_text: str) -> str:
        answer = self.sandbox.run_component(code, input_text, timeout=self.timeout)
        return _answer_text(answer)

    def probe_run(self, flow: dict[str, Any], input_text: str) -> str:
        answer = self.sandbox.probe_run(flow, input_text, timeout=self.timeout)
        return _answer_text(answer)


def _answer_text(answer: ComponentRun | FlowRun) -> str:
    if not answer.ok:
        raise _RunFailed(str(answer.error or "the run failed"))
    return answer.text or ""


class _RunFailed(Exception):
    """The result ran and raised: a failed case, not an errored one."""


def load_cases(path: str | Path) -> list[Case]:
    """Parse a cases file; every problem is one ``ConfigError`` line naming the case."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read the cases file {path}: {exc.strerror or exc}.") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.") from exc
    raw = data.get("case")
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{path} has no cases: write them as [[case]] tables.")
    if len(raw) > MAX_CASES:
        raise ConfigError(f"{path} has {len(raw)} cases; at most {MAX_CASES} run in one go.")
    cases: list[Case] = []
    for i, item in enumerate(raw, 1):
        try:
            cases.append(Case.model_validate(item))
        except ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'case'}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"{path}, case {i}{f' ({name})' if name else ''}: {problems}.") from exc
    names = [c.name for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) != len(names) else []
    if dupes:
        raise ConfigError(f"{path}: case names must be unique ({', '.join(dupes)}).")
    return cases


def _usage(result: Any) -> dict[str, int]:
    record = getattr(result, "usage", None)
    return {
        "model_calls": int(getattr(record, "model_calls", 0) or 0),
        "prompt_tokens": int(getattr(record, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(record, "completion_tokens", 0) or 0),
        "prompt_chars": int(getattr(record, "prompt_chars", 0) or 0),
    }


async def run_case(case: Case, assistant: Any, runner: CheckRunner) -> CaseResult:
    """One case through the public ``Assistant.arun``, then its check in the sandbox."""
    t0 = time.perf_counter()
    try:
        for earlier in case.before:
            done = await assistant.arun(earlier)
            if done.status != "complete":
                reason = f"an earlier request failed: {done.error or done.status}"
                return CaseResult(case.name, case.kind, "error", reason=reason, seconds=time.perf_counter() - t0)
        if case.undo:
            assistant.undo()
        result = await assistant.arun(case.request)
    except LfAssistError as exc:
        return CaseResult(case.name, case.kind, "error", reason=str(exc), seconds=time.perf_counter() - t0)
    out = CaseResult(case.name, case.kind, "fail", attempts=int(result.attempts or 0), **_usage(result))
    out.reduced_isolation = (getattr(result, "reduced_isolation", None) or "") if result.validated else ""
    flow = getattr(result, "flow", None)
    if result.status == "error":
        out.status, out.reason = "error", result.error or "the request failed"
    elif result.status == "cancelled":
        out.status, out.reason = "error", "cancelled"
    elif case.kind == "component" and not result.code:
        out.reason = "no component code in the reply"
    elif case.kind == "flow" and not flow:
        out.reason = "no flow in the reply"
    elif not result.validated:
        out.reason = f"not validated: {result.error or 'validation failed'}"
    elif case.check is None:
        out.status = "pass"
    else:
        try:
            if case.kind == "component":
                text = await asyncio.to_thread(runner.run_component, result.code, case.check.input)
            else:
                text = await asyncio.to_thread(runner.probe_run, flow, case.check.input)
        except _RunFailed as exc:
            out.reason = f"the check run failed: {exc}"
        except Exception as exc:  # the sandbox itself failed: not the model's fault
            out.status, out.reason = "error", f"the check could not run: {exc}"
        else:
            out.checked = True
            out.output = text[:OUTPUT_PREVIEW]
            if case.check.judge(text):
                out.status = "pass"
            else:
                want = case.check.expect if case.check.expect is not None else f"…{case.check.expect_contains}…"
                out.reason = f"check mismatch: got {text[:80]!r}, expected {want!r}"
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


def _versions(model: str) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    def dist(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {
        "lfassist_jupyter": dist("lfassist-jupyter"),
        "lfx": dist("lfx"),
        "python": sys.version.split()[0],
        "model": model,
    }


async def arun_suite(
    cases: Sequence[Case],
    *,
    provider: str | None = None,
    model: str | None = None,
    max_retries: int = 3,
    intent_model: str | None = None,
    runner: CheckRunner | None = None,
    assistant_factory: Callable[..., Any] | None = None,
    on_progress: Callable[[int, int, CaseResult | None, Case | None], None] | None = None,
    sandbox: SandboxValidator | None = None,
) -> SuiteResult:
    """Run ``cases`` one after another (a fair clock per case), each in a fresh conversation.
    ``sandbox`` validates, builds and checks everything (default: the shared one)."""
    from lfassist_jupyter.core.assistant import Assistant

    factory = assistant_factory or Assistant
    runner = runner or SandboxCheckRunner(sandbox=sandbox)
    options: dict[str, Any] = {
        "model": model,
        "max_retries": max_retries,
        "intent_model": intent_model,
        "session_store": False,
    }
    if sandbox is not None and assistant_factory is None:
        options.update(validator=sandbox, sandbox=sandbox)
    first = factory(provider=provider, **options)
    chosen = first.provider  # raises ConfigError with the fix when nothing is configured
    named = chosen.task_models(model, intent_model).main
    suite = SuiteResult(
        provider=chosen.name,
        model=named or "(the server's first model)",
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    for i, case in enumerate(cases):
        if on_progress:
            on_progress(i, len(cases), None, case)
        assistant = first if i == 0 else factory(provider=chosen, **options)
        suite.cases.append(await run_case(case, assistant, runner))
        if on_progress:
            on_progress(i + 1, len(cases), suite.cases[-1], None)
    in_use = getattr(chosen, "model_in_use", None)  # the model that wrote (after a fallback, or the server's pick)
    if callable(in_use) and in_use(named, "component"):
        suite.model = in_use(named, "component")
    suite.versions = _versions(suite.model)
    return suite


run_suite = blocking_twin(arun_suite)


class _Bar:
    """A one-line progress bar on stderr (a line per case when stderr is not a terminal)."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, result: CaseResult | None, case: Case | None) -> None:
        width = 24
        filled = math.floor(width * done / total) if total else width
        bar = "#" * filled + "-" * (width - filled)
        label = f"running {case.name}" if case else f"{result.name}: {result.status}" if result else ""
        line = f"[{bar}] {done}/{total} {label}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line[:120] + ("\n" if done == total and case is None else ""))
        elif result is not None:
            self.stream.write(line + "\n")
        self.stream.flush()


def build_parser(settings: Settings | None = None) -> argparse.ArgumentParser:
    """The command line, its defaults taken from ``settings`` (default: ``Settings.from_env()``, so
    ``LFASSIST_MAX_RETRIES`` works; ``%assist eval`` passes the notebook's ``%config`` values)."""
    settings = settings if settings is not None else Settings.from_env()

    def setting(name: str) -> str:
        value = getattr(settings, name)
        return help_text(name) + ("" if value is None else f" Default: {value}.")

    parser = argparse.ArgumentParser(
        prog="python -m lfassist_jupyter.eval",
        description="Run eval cases through the assistant and check each result by running it in the sandbox.",
        epilog=f"Providers are configured as for %%assist ({', '.join(setup_variables())}). "
        "Exit status: 0 all cases ran, 1 a case errored (or failed, with --strict), 2 usage error.",
    )
    parser.add_argument("cases", help="a TOML file of [[case]] tables (see evals/ for the shipped suites)")
    parser.add_argument("--provider", default=settings.provider, help=setting("provider"))
    parser.add_argument("--model", default=settings.model, help=setting("model"))
    parser.add_argument("--max-retries", type=int, default=settings.max_retries, help=setting("max_retries"))
    parser.add_argument("--intent-model", default=settings.intent_model, help=setting("intent_model"))
    parser.add_argument("--json", metavar="OUT", help="also write the results, totals and versions as JSON")
    parser.add_argument("-k", metavar="TEXT", help="only the cases whose name contains TEXT")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any case fails, not only when one errors")
    return parser


def select_cases(path: str | Path, k: str | None = None) -> list[Case]:
    """The cases of ``path``, only those whose name contains ``k`` when given (shared by the
    command line and ``%assist eval``)."""
    cases = load_cases(path)
    if k:
        cases = [c for c in cases if k in c.name]
        if not cases:
            raise ConfigError(f"No case name contains {k!r}.")
    return cases


def write_json(suite: SuiteResult, path: str | Path) -> None:
    """Save the results, totals and versions; a write failure is one ``ConfigError`` line."""
    try:
        Path(path).write_text(json.dumps(suite.to_json(), indent=2), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Could not write {path}: {exc.strerror or exc}.") from exc


def main(argv: Sequence[str] | None = None) -> int:
    try:
        check_environment()  # every LFASSIST_* variable: a bad one is its one line, as everywhere
        parser = build_parser()
    except ConfigError as exc:  # a bad LFASSIST_* variable
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        cases = select_cases(args.cases, args.k)
        check("max_retries", args.max_retries, source="--max-retries")
        suite = run_suite(
            cases,
            provider=args.provider,
            model=args.model,
            max_retries=args.max_retries,
            intent_model=args.intent_model,
            on_progress=_Bar(),
        )
        print(suite.table())
        if args.json:
            write_json(suite, args.json)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    totals = suite.totals()
    if totals["errored"] or (args.strict and totals["failed"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
