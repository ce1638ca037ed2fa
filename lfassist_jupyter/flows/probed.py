"""A probe run's failure in the verdict: a flow whose node fails when it runs is broken, named.

``validate_flow`` judges what lfx does before a flow runs (loading it, its wiring, its nodes'
code); lfx's own run finds more: saved code that no longer fits this lfx or its packages (an
Agent whose ``get_llm`` ends in ``StopIteration``, a Chat Output whose old code hands lfx a
coroutine: ``'coroutine' object has no attribute 'text'``, ``lfx.logging.logger`` without
``debug``).  The probe run (``SandboxValidator.probe_run``: models and keyed APIs stubbed, no
network) runs the rest of the flow with lfx's runner, so where it reaches the failing node it
meets the same error, and the verdict says so.

Only the flow's own faults count (``probe_problem``), decided from where the error came from, not
from its words: the child that ran the flow reads lfx's exception (``RunFailure``: the vertex whose
build raised, the innermost error) and says ``code`` only for Python's code errors with nothing of
the environment in the chain; here, the node must be one that really ran (not a stub, nor fed by a
stub an object it stands in for with text: a language model, a tool), the zygote
must have refused nothing while it ran (``FlowRun.sandbox_refusals``: the sandbox's confinement is
never the flow's fault), and the error must not be a file, key or service the user must provide
(``flows.needs``).  Everything else keeps the verdict it had: a run stopped by no network, no key
or no model server says nothing about the flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lfassist_jupyter.artifacts import flow as facts

from .results import FlowProblem, FlowReport

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.answers import FlowRun

PROBE_INPUT = "Hello! This is a probe run."
"""What ``validate_flow(probe=True)`` types into the flow's Chat Input (the pipeline's own text)."""


def probe_problem(flow: dict[str, object], run: FlowRun | None) -> FlowProblem | None:
    """The error a failed probe run found in the flow itself, naming the node, or None when the
    run went through or stopped for a reason that is not the flow's (see the module docstring)."""
    failure = getattr(run, "failure", None)
    if run is None or run.ok or failure is None or failure.kind != "code" or not failure.node_id:
        return None
    if run.sandbox_refusals or run.needs or failure.node_id in {s.node for s in run.stubbed}:
        return None
    from .needs import run_needs

    nodes = facts.by_id(facts.components(flow))
    node = nodes.get(failure.node_id)
    if node is None or run_needs(flow, f"{run.error or ''} {failure.error}"):
        return None
    if _fed_a_stand_in(flow, nodes, failure.node_id, {s.node for s in run.stubbed}):
        return None
    name = facts.node_name(node)
    where = {"node code": "in its code", "lfx": "in lfx, with what the node gave it"}.get(failure.origin, "")
    return FlowProblem(
        code="run_failure",
        node=name,
        node_id=failure.node_id,
        message=f"{name} fails when the flow runs{' (' + where + ')' if where else ''}: {failure.error} "
        "(lfx's run in the sandbox, models stubbed).",
        fix=f"Replace {name} with a fresh copy of its component (its saved code was written for another "
        "Langflow), or fix its code.",
    )


# What a stub's output really is (``sandbox/probe.py``: a Message, Data or DataFrame echoing its input).
_ECHOED = frozenset({"Message", "Text", "str", "Data", "JSON", "DataFrame", "Table"})


def _fed_a_stand_in(
    flow: dict[str, object], nodes: dict[str, dict[str, object]], node_id: str, stubbed: set[str]
) -> bool:
    """Whether the node gets, from a stubbed node, an output that is an object in a real run (a
    language model, embeddings, a tool...): the stub hands it text instead, and what the node then
    does wrong is the stub's doing, not the flow's."""
    for edge in facts.edges(flow):
        source, output, target, _ = facts.ports(edge)
        if target != node_id or source not in stubbed or source not in nodes:
            continue
        types = next((o.get("types") or [] for o in facts.outputs(nodes[source]) if o.get("name") == output), [])
        if not types or not set(types) <= _ECHOED:
            return True
    return False


def with_probe(report: FlowReport, flow: dict[str, object], run: FlowRun | None) -> FlowReport:
    """``report`` with the probe run's finding: broken, naming the node, when the run failed there
    for the flow's own fault; otherwise ``report`` unchanged (a not-judged or broken report keeps
    its verdict: the probe adds a reason, never removes one)."""
    problem = probe_problem(flow, run)
    if problem is None or report.verdict != "sound":
        return report
    return report.model_copy(update={"errors": [*report.errors, problem], "is_valid": False})
