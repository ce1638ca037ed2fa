"""The ``validate`` op: build component code exactly as Langflow does, then look for what breaks.

Langflow's ``POST /api/v1/custom_component`` decides ``builds``; the checks on the built class
(``_checks``) and the smoke test (``_smoke``) decide whether it works when used.  Every phase
runs under one deadline, in the fresh child that serves the request, with the hook armed.
"""

from __future__ import annotations

import contextlib
import time

from ._checks import field_summaries, input_name_findings, line_offset, output_findings, reserved_findings
from ._lfx import LFX_VERSION, Component, build_custom_component_template, prepare_lfx
from ._packages import missing_module, missing_packages, package
from ._shared import OBSERVED, Armed, Timeout, error_text, exc_traceback, finding
from ._smoke import refused_finding
from ._smoke import smoke as run_smoke


def finish(report: dict) -> dict:
    """``is_valid``, ``phase``, ``error`` and ``warnings`` from ``builds`` and the findings."""
    findings = report["findings"]
    errors = [f for f in findings if f["severity"] == "error"]
    report["is_valid"] = report.get("builds") is True and not errors
    report["warnings"] = [f["message"][:1].upper() + f["message"][1:] for f in findings if f["severity"] == "warning"]
    if errors:
        first = errors[0]
        message = first["message"]
        report["phase"] = first["phase"]
        if report.get("builds") is True:
            report["error"] = f"Langflow accepts this, but {message[:1].lower()}{message[1:]}"
        else:
            report["error"] = message
        if first.get("evidence") and first["phase"] == "smoke":
            report.setdefault("traceback", first["evidence"])
    return report


def op_validate(req: dict) -> dict:
    return validate(req["code"], smoke=bool(req.get("smoke", True)), timeout=float(req.get("timeout", 10)))


def validate(code: str, *, smoke: bool, timeout: float) -> dict:
    """Build ``code`` exactly as Langflow's ``POST /api/v1/custom_component`` does (``builds``),
    then look for what will break when it is used (``findings``) and smoke-run its outputs."""
    report: dict = {
        "is_valid": False,
        "builds": None,
        "findings": [],
        "phase": None,
        "warnings": [],
        "phases_run": ["runtime"],
        "smoke": "not_run",
        "timings_ms": {},
        "lfx_version": LFX_VERSION,
    }
    prepare_lfx()
    OBSERVED["violations"] = []
    OBSERVED["refused"] = []
    OBSERVED["network"] = False
    deadline = time.monotonic() + timeout
    built = _build(code, report, deadline, timeout)
    if built is None:
        return finish(report)
    template, instance = built
    cls = type(instance)
    _describe(code, cls, instance, template, report)
    if smoke and not any(f["severity"] == "error" for f in report["findings"]):
        _smoke_phase(code, cls, instance, template, report, deadline, timeout)
    return finish(report)


def _build(code: str, report: dict, deadline: float, timeout: float) -> tuple[dict, object] | None:
    """1. Langflow's build, timed: ``(template, instance)``, or None with the reason in ``report``."""
    t0 = time.perf_counter()
    try:
        with Armed(deadline):
            template, instance = build_custom_component_template(Component(_code=code))
    except Timeout:
        report["findings"].append(
            finding(
                "error",
                "runtime",
                f"Building the component took longer than {timeout:g} s (infinite loop?).",
                rule="build-timeout",
            )
        )
        report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
        return None
    except BaseException as exc:
        report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
        _build_failed(exc, code, report)
        return None
    report["builds"] = True
    report["timings_ms"]["runtime"] = round((time.perf_counter() - t0) * 1000, 3)
    return template, instance


def _build_failed(exc: BaseException, code: str, report: dict) -> None:
    """Why the build raised: sys.exit, a refusal of the sandbox (``builds`` unknown), or Langflow's own no."""
    findings = report["findings"]
    text = error_text(exc)
    report["traceback"] = exc_traceback(exc)
    if isinstance(exc, SystemExit):
        findings.append(
            finding("error", "runtime", "The component's code called sys.exit() while being loaded.", rule="build")
        )
    elif OBSERVED["violations"] or OBSERVED["network"]:
        # The sandbox refused something the code does while loading: what Langflow would
        # answer is unknown (it would let it happen), so ``builds`` stays None.
        findings.append(
            finding(
                "error",
                "runtime",
                f"While loading, the code did something the validation sandbox refuses, so whether Langflow "
                f"builds it is unknown: {text}",
                evidence="; ".join(map(str, OBSERVED["violations"][:5])) or "network access",
                rule="build-sandbox",
            )
        )
    else:
        report["builds"] = False
        module = missing_module(exc)
        if module:  # a module-level import (or one inside lfx) needs a package that is not installed
            missing = missing_packages(code, when="build")
            if package(module)["distribution"] not in {m["distribution"] for m in missing}:
                missing.insert(0, package(module))
            report["missing_packages"] = missing
            fixes = " ".join(m["fix"] for m in missing)
            names = ", ".join(m["module"] for m in missing)
            text = f"{text} Langflow needs {names} installed to build it: {fixes}"
        findings.append(finding("error", "runtime", f"Langflow rejects this: {text}", rule="build"))


def _describe(code: str, cls: type, instance: object, template: dict, report: dict) -> None:
    """2. What the built class says about itself, and what is wrong with it without calling it."""
    findings = report["findings"]
    OBSERVED["line_offset"] = line_offset(cls, code)
    report["class_name"] = cls.__name__
    report["display_name"] = template.get("display_name")
    report["description"] = template.get("description")
    report["inputs"], report["outputs"] = field_summaries(instance, template)
    run_missing = missing_packages(code, when="run")
    for m in run_missing:
        findings.append(
            finding(
                "warning",
                "runtime",
                f"needs {m['module']} to run: a method imports it and it is not installed here. Fix: {m['fix']}",
                rule="needs-package",
            )
        )
    report["missing_packages"] = run_missing
    findings.extend(output_findings(cls, report["outputs"]))
    with contextlib.suppress(Exception):
        findings.extend(input_name_findings(code, instance))
    findings.extend(reserved_findings(cls, report["outputs"]))
    if not report["outputs"]:
        legacy = not isinstance(instance, Component)
        if not legacy and not (callable(getattr(cls, "update_outputs", None)) and "update_outputs" in code):
            # An error for generated code (it is retried); the kernel makes it a warning for a user's code.
            findings.append(
                finding(
                    "error",
                    "runtime",
                    "the component defines no outputs: nothing can connect to it. Add at least one "
                    "`Output(display_name=..., name=..., method=...)` to `outputs`.",
                    rule="no-outputs",
                )
            )


def _smoke_phase(
    code: str, cls: type, instance: object, template: dict, report: dict, deadline: float, timeout: float
) -> None:
    """3. The smoke test, timed; whatever ends it early (the network, the deadline, a refusal) is judged here."""
    findings = report["findings"]
    report["phases_run"].append("smoke")
    t1 = time.perf_counter()
    try:
        if not isinstance(instance, Component):
            report.update(
                smoke="skipped",
                smoke_reason="it is a legacy CustomComponent: Langflow calls its build() with the flow's values",
            )
        else:
            run_smoke(cls, code, instance, template, report, deadline)
    except BaseException as exc:
        if OBSERVED["network"]:  # the refusal, not the component, ended it
            report.update(smoke="skipped", smoke_reason="it uses the network (refused while validating)")
        elif isinstance(exc, Timeout):
            report["smoke"] = "failed"
            message = f"an output did not finish within {timeout:g} s (infinite loop?)."
            findings.append(finding("error", "smoke", message, rule="smoke-timeout"))
        elif OBSERVED["refused"]:
            report.update(smoke="skipped", smoke_reason="creating it did something the sandbox refuses")
            findings.append(refused_finding("creating the component", 0, exc))
        else:
            report["smoke"] = "failed"
            message = f"it cannot be created with sample inputs: {error_text(exc)}"
            findings.append(finding("error", "smoke", message, evidence=exc_traceback(exc), rule="smoke-init"))
    report["timings_ms"]["smoke"] = round((time.perf_counter() - t1) * 1000, 3)
