"""Langflow 1.13's trigger nodes (``lfx/components/triggers/``): what starts a flow without a chat.

A trigger node is a *declaration* (``lfx/base/triggers/base.py``): on every save Langflow's
reconciler reads its ``trigger_definition()`` and arms a trigger row -- a ``ScheduleTrigger`` fires
the flow on a five-field cron expression in an IANA timezone, an ``InboundWebhookTrigger`` when a
signed request reaches its own URL.  When it fires, the whole flow runs; the node hands the firing
event on through its ``trigger_event`` output (``JSON``), which a flow may use or leave unwired (a
manual run gets an empty event).  lfx stamps the node's kind on its template
(``metadata.trigger_kind``, ``custom/utils.py``'s ``_stamp_trigger_kind``).

``lfx validate`` checks a trigger like any node (a required field needs a value); a run never
reads its configuration.  The trigger itself refuses one it cannot arm (``trigger_config``:
``validate_cron_expression``, ``validate_timezone``, ``validate_payload_schema``), so a flow whose
schedule says ``every morning`` saves and never fires.  ``check`` mirrors those three checks: an
expression given that is not five fields, a zone that is not IANA, a payload schema that is not a
JSON object are errors of the flow (``bad_value``); an empty required one is the required-value
need ``validate_flow`` already reports.  Standard library only (the kernel never imports lfx);
``tests/flows/test_triggers.py`` compares each check with lfx's own functions.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from lfassist_jupyter.artifacts import flow as facts

from .results import FlowProblem

KINDS = {"ScheduleTrigger": "schedule", "InboundWebhookTrigger": "inbound_webhook"}
"""lfx 1.13's trigger components (their ``name``) and their ``trigger_kind``."""

_CRON_FIELDS = 5


def trigger_kind(node: dict[str, object]) -> str | None:
    """The node's trigger kind: lfx's stamp on its template, else its component's."""
    stamped = facts.obj(facts.frontend_node(node).get("metadata")).get("trigger_kind")
    if isinstance(stamped, str) and stamped:
        return stamped
    return KINDS.get(str(facts.node_type(node) or ""))


def cron_problem(expression: str) -> str | None:
    """Why lfx's ``validate_cron_expression`` refuses a non-empty expression, or None."""
    parts = expression.split()
    if len(parts) == _CRON_FIELDS:
        return None
    return f"a cron expression has {_CRON_FIELDS} fields (minute hour day-of-month month day-of-week), got {len(parts)}"


def timezone_problem(name: str) -> str | None:
    """Why lfx's ``validate_timezone`` refuses a non-empty zone name (``zoneinfo.ZoneInfo``), or None."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if name.isspace():
        return "it is blank"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # lfx catches the first two; OSError escapes it: refused too
        return "it is not an IANA timezone (e.g. 'Europe/Lisbon')"
    return None


def schema_problem(raw: str) -> str | None:
    """Why lfx's ``validate_payload_schema`` refuses a non-empty payload schema, or None (blank is
    no schema)."""
    if raw.isspace():
        return None
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return "it is not valid JSON"
    return None if isinstance(parsed, dict) else "it is not a JSON object"


_CHECKS: dict[str, list[tuple[str, Callable[[str], str | None], str]]] = {
    "schedule": [
        ("cron_expression", cron_problem, "Use five fields, e.g. '0 8 * * 1-5' (weekdays at 08:00)."),
        ("timezone", timezone_problem, "Use an IANA name such as 'Europe/Lisbon' or 'UTC'."),
    ],
    "inbound_webhook": [
        ("payload_schema", schema_problem, 'Use a JSON object (e.g. {"type": "object"}) or leave it empty.'),
    ],
}


def check(nodes: dict[str, dict[str, object]], add: Callable[[FlowProblem], None]) -> None:
    """Each trigger's configuration, as the trigger itself checks it before it is armed."""
    for nid, node in nodes.items():
        kind = trigger_kind(node)
        template = facts.fields(node)
        for fname, problem_of, fix in _CHECKS.get(kind or "", []):
            field = template.get(fname)
            value = field.get("value") if isinstance(field, dict) else None
            if not isinstance(value, str) or not value:
                continue  # empty: a required value to give (validate_flow's need), or no schema at all
            why = problem_of(value)
            if why is not None:
                name = facts.node_name(node)
                add(
                    FlowProblem(
                        code="bad_value",
                        node=name,
                        node_id=nid,
                        field=fname,
                        message=f"{name}.{fname} cannot be armed: {why}; Langflow's {name} trigger refuses it.",
                        fix=fix,
                    )
                )
