"""A flow the sandbox's environment cannot judge, judged in one that has what it needs.

``validate_flow`` says *not judged* when a node needs a package (or a model provider's bundle) the
sandbox's environment lacks: lfx would stop at that import, and whatever is wrong after it (a
stale import, a name gone from a package) stays unseen.  Here, with the user's yes, the flow's
distributions (lfx's own requirement logic, already asked: ``report.missing_packages``) go into a
separate environment (``sandbox.provision``: lfx as the sandbox has it, plus those, built with uv
and cached), and the same checks run again on a sandbox whose worker runs on that interpreter.
What that environment still lacks (a package lfx only names once the first is installed) gets one
more round.  Without a yes, the report keeps its *not judged* verdict and carries the plan: what
would be installed and its size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lfassist_jupyter import settings

from .catalog import Catalog, default_catalog

if TYPE_CHECKING:
    from lfassist_jupyter.ports import FlowSandbox
from .results import FlowReport, ProvisionPlan

log = logging.getLogger("lfassist_jupyter")

Judge = Callable[[dict[str, Any], Catalog], tuple[FlowReport, "dict[str, Any] | None"]]


def choice(provision: bool | None) -> str:
    """``yes``, ``no`` or ``ask``: the caller's word, else ``LFASSIST_PROVISION``."""
    if provision is not None:
        return "yes" if provision else "no"
    return str(settings.read("provision"))


def judge_elsewhere(
    flow: dict[str, Any], report: FlowReport, catalog: Catalog, provision: bool | None, judge: Judge
) -> FlowReport:
    """``report`` (not judged) with the plan to judge it elsewhere; or, when the user said yes, the
    report of the same checks in that environment (``judged_in`` names it)."""
    from lfassist_jupyter.sandbox import provision as envs

    said = choice(provision)
    python = getattr(getattr(catalog, "sandbox", None), "python", None)
    if said == "no" or not python:
        return report
    adds = sorted({p.distribution for p in report.missing_packages})
    planned = envs.plan(adds, python)
    report.provision = ProvisionPlan.model_validate(planned)
    if said != "yes" or planned.get("error"):
        return report
    for _ in range(2):
        try:
            env = envs.build(planned)
            there = default_catalog(envs.sandbox_for(env))
        except Exception as exc:  # uv, or the sandbox on that interpreter: the flow stays not judged
            why = str(exc).splitlines()[0][:400] if str(exc) else type(exc).__name__
            report.provision = report.provision.model_copy(update={"error": why})
            report.warnings.append(f"The environment to judge it in could not be made: {why}")
            return report
        for name, entry in catalog.added.items():  # what this session added travels along
            there.registry[name] = entry
            there.added[name] = entry
        judged, _ = judge(flow, there)
        judged.judged_in = env.describe()
        judged.provision = ProvisionPlan.model_validate({**planned, "ready": True})
        more = sorted({p.distribution for p in judged.missing_packages} - set(adds))
        if judged.verdict != "not_judged" or not more:
            return judged
        adds = sorted({*adds, *more})  # lfx names some packages only once the first ones are there
        planned = envs.plan(adds, python)
        if planned.get("error"):
            return judged
    return judged


def sandbox_that_judged(report: FlowReport | None) -> FlowSandbox | None:
    """The sandbox of the provisioned environment that judged ``report`` (a probe run of the flow
    belongs there too), or None when the sandbox's own environment did."""
    plan = getattr(report, "provision", None)
    if report is None or plan is None or not plan.ready or report.verdict == "not_judged":
        return None
    from lfassist_jupyter.sandbox import provision as envs

    stored = envs.ready(plan.path)
    return envs.sandbox_for(stored) if stored is not None else None
