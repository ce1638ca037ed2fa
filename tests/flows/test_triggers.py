"""Langflow 1.13's triggers and ``connection_ref`` fields, as ``validate_flow`` judges them.

The mirrored facts are compared with lfx itself (imported in this test process only, as
``test_flow_facts.py`` does; the kernel package never imports it): a connection handle's grammar
and environment key (``ConnectionRef``), the trigger components and the checks each trigger makes
of its configuration before it is armed.  Then the verdicts through the user's doors:
``validate_flow`` (a flow dict and a saved file), the card's lines and the MCP tool's answer -- a
connection that is not set is a need naming its handle and its variable, the variable set is no
need, a handle lfx cannot read is an error.  The agreement with lfx's own word over the generated
cases (``benchmarks/trigger_cases.py``) is the slow test at the end.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from pathlib import Path

import pytest

from lfassist_jupyter import build_flow, default_catalog, validate_flow
from lfassist_jupyter.flows import connections, triggers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import trigger_cases  # noqa: E402  (the benchmark's cases: the components and specs are lfx's facts)

HANDLES = [
    "slack/work", "slack/team_alerts", "acme.mail-v2/ops_team", "a/b", "9/9", "x.y_z-1/n2",
    "slack", "slack/Work", "Slack/work", "slack/a/b", "/work", "slack/", "slack/_x", "slack/x_", "slack/x__y",
    "-slack/x", ".x/y", "_x/y", "slack\n/x", "slack/x\n", "sl ack/x", "slack/x y", "\u015black/x", "slack/\u0661",
    "s" * 120 + "/x", "s" * 121 + "/x", "slack/" + "x" * 64, "slack/" + "x" * 65, "", 5, None, ["slack/x"],
]  # fmt: skip


def test_handles_parse_and_name_their_variable_as_lfx_s():
    from lfx.inputs.input_mixin import FieldTypes
    from lfx.integrations.models import ConnectionRef

    assert FieldTypes.CONNECTION_REF.value == connections.FIELD_TYPE
    for handle in HANDLES:
        try:
            ref = ConnectionRef.parse(handle)
            expected = (ref.provider, ref.name, ref.env_key())
        except (ValueError, TypeError):
            expected = None
        ours = connections.parse(handle)
        got = (*ours, connections.env_key(*ours)) if ours else None
        assert got == expected, handle


CRONS = ["0 8 * * 1-5", " 0  8 * * * ", "0\t8\n* * 1", "0 8 * *", "0 0 8 * * 1", "every morning", "   ", "*"]
ZONES = ["UTC", "Europe/Lisbon", "EST5EDT", "Mars/Olympus", "europe/lisbon", "Europe", "  ", "../etc/passwd",
         "/etc/localtime", "Europe/Lisbon\x00", "x" * 300]  # fmt: skip
SCHEMAS = ['{"type": "object"}', "{}", "  ", "[1, 2]", "{oops", "1", "null", '"text"', "[" * 5000]


def test_trigger_checks_refuse_what_lfx_s_triggers_refuse():
    """Every non-empty value (an empty one is a required value to give, not checked here)."""
    from lfx.components.triggers import inbound_webhook_trigger, schedule_trigger

    pairs = [(schedule_trigger.validate_cron_expression, triggers.cron_problem, CRONS),
             (schedule_trigger.validate_timezone, triggers.timezone_problem, ZONES),
             (inbound_webhook_trigger.validate_payload_schema, triggers.schema_problem, SCHEMAS)]  # fmt: skip
    for lfx_check, ours, values in pairs:
        for value in values:
            try:
                lfx_check(value)
                refused = False
            except Exception:  # whatever lfx's check raises, the trigger cannot be armed
                refused = True
            assert (ours(value) is not None) == refused, (ours.__name__, value)


def test_the_trigger_components_are_lfx_s():
    from lfx.graph.flow_builder.builder import load_local_registry

    stamped = {
        name: entry["metadata"]["trigger_kind"]
        for name, entry in load_local_registry().items()
        if entry.get("metadata", {}).get("trigger_kind")
    }
    assert stamped == triggers.KINDS


# -- the verdicts, through validate_flow and what shows it -----------------------------------------


@pytest.fixture(scope="module")
def slack_catalog(sandbox):
    """The sandbox's catalogue with the custom component that declares a ``slack`` connection."""
    catalog = default_catalog(sandbox)
    answer = sandbox.component_template(trigger_cases.SLACK_CODE)
    assert answer.ok, answer.error
    catalog.add("PostToSlack", answer.template)
    return catalog


@pytest.fixture(scope="module")
def built(slack_catalog):
    """Each base flow of the cases, built once (a build is a sandboxed child: seconds on a busy machine)."""
    flows = {}
    for base in ("webhook", "schedule_slack"):
        result = build_flow(trigger_cases.BASES[base], catalog=slack_catalog)
        assert result.ok, result.errors
        flows[base] = result.flow
    return flows


def _with(flow: dict, node: str, field: str, value) -> dict:
    """A copy of ``flow`` whose node (display name) has ``field`` set to ``value``."""
    flow = copy.deepcopy(flow)
    found = next(n for n in flow["data"]["nodes"] if n["data"]["node"].get("display_name") == node)
    found["data"]["node"]["template"][field]["value"] = value
    return flow


def _slack_flow(built: dict, handle: str) -> dict:
    return _with(built["schedule_slack"], "Post to Slack", "connection", handle)


KEY = "LF_CONNECTION__SLACK__MORNING_DIGEST"


def test_a_connection_not_set_is_a_need_naming_its_handle_and_variable(built, slack_catalog, monkeypatch, tmp_path):
    from lfassist_jupyter.flows.save import write_flow_file
    from lfassist_jupyter.mcp import build_server
    from lfassist_jupyter.ui.render.flow import report_lines

    monkeypatch.delenv(KEY, raising=False)
    flow = _slack_flow(built, "slack/morning_digest")
    path = write_flow_file(flow, tmp_path / "digest.json").path
    for report in (validate_flow(flow, catalog=slack_catalog), validate_flow(path, catalog=slack_catalog)):
        assert report.verdict == "sound" and report.errors == [], report.errors
        [need] = [n for n in report.needs if n.kind == "connection"]
        assert (need.node, need.field) == ("Post to Slack", "connection")
        assert "'slack/morning_digest'" in need.message and KEY in need.message
        assert report.warnings == []  # the trigger fires the flow: unwired, it is no warning
    lines = [text for text, _ in report_lines(report)]
    assert any(line.startswith("Needs before a real run: connection:") and KEY in line for line in lines), lines
    # The MCP tool's answer (the same FlowReport, as JSON).
    answer = asyncio.run(build_server(tmp_path).call_tool("validate_flow", {"flow": flow}))
    assert KEY in json.dumps(answer, default=str) and '"connection"' in json.dumps(answer, default=str)

    monkeypatch.setenv(KEY, "xoxb-not-a-real-token-0123")  # set where the run happens: no need
    report = validate_flow(flow, catalog=slack_catalog)
    assert report.verdict == "sound" and not [n for n in report.needs if n.kind == "connection"]
    assert "xoxb" not in report.model_dump_json()


@pytest.mark.parametrize(
    ("handle", "words"),
    [
        ("slack", "not a connection handle"),
        ("slack/Morning", "not a connection handle"),
        ("github/morning", "takes 'slack' connections"),
    ],
)
def test_a_handle_lfx_cannot_use_is_an_error_naming_the_field(built, slack_catalog, handle, words):
    report = validate_flow(_slack_flow(built, handle), catalog=slack_catalog)
    assert report.verdict == "broken"
    [error] = report.errors
    assert (error.node, error.field, error.code) == ("Post to Slack", "connection", "bad_value")
    assert words in error.message and "slack/<name>" in error.fix


def test_an_empty_required_connection_is_a_need_to_choose_one(built, slack_catalog):
    report = validate_flow(_slack_flow(built, ""), catalog=slack_catalog)
    assert report.verdict == "sound"
    [need] = [n for n in report.needs if n.field == "connection"]
    assert need.kind == "connection" and "LF_CONNECTION__SLACK__<NAME>" in need.message


@pytest.mark.parametrize(
    ("base", "node", "field", "value"),
    [
        ("schedule_slack", "Schedule", "cron_expression", "every morning"),
        ("schedule_slack", "Schedule", "timezone", "Mars/Olympus_Mons"),
        ("webhook", "Inbound Webhook", "payload_schema", "[1, 2]"),
    ],
)
def test_a_trigger_that_cannot_be_armed_is_an_error(built, slack_catalog, base, node, field, value):
    assert validate_flow(built[base], catalog=slack_catalog).verdict == "sound"  # the control
    report = validate_flow(_with(built[base], node, field, value), catalog=slack_catalog)
    assert report.verdict == "broken"
    [error] = report.errors
    assert (error.node, error.field, error.code) == (node, field, "bad_value") and error.fix


def test_a_saved_trigger_flow_passes_lfx_validate(built, sandbox, tmp_path):
    """A Schedule trigger and a connection field, saved by the workspace: the real ``lfx validate``
    (level 4) accepts the file."""
    from _support.lfxcli import lfx_validate

    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    path = workspace.save_flow(copy.deepcopy(built["schedule_slack"]), tmp_path / "morning.json")
    [answer] = lfx_validate([path], 4)
    assert answer["ok"], answer["issues"]


def test_the_held_back_cases_agree_with_lfx_s_stored_word(sandbox):
    """``validate_flow`` on the cases held back while the rules were written, against lfx's word as
    stored (recomputed by the slow test below)."""
    found = trigger_cases.measure("held_back")
    assert found["cases"] == 12 and found["agree"] == found["cases"], found["disagreements"]


@pytest.mark.slow
def test_the_held_back_cases_agree_with_lfx(sandbox, tmp_path):
    """lfx's word recomputed now (``lfx validate``, ``lfx run``, the trigger's definition: about
    30 s), then ``validate_flow`` on the half held back while the rules were written."""
    stored = {cid: answer["lfx"] for cid, answer in json.loads(trigger_cases.TRUTH.read_text()).items()}
    now = {cid: answer["lfx"] for cid, answer in trigger_cases.truth(tmp_path / "truth.json").items()}
    assert now == stored, "lfx's word changed: regenerate the truth and measure again"
    found = trigger_cases.measure("held_back")
    assert found["agree"] == found["cases"], found["disagreements"]


# -- a sentence to a scheduled flow, saved, and accepted by lfx validate ---------------------------

DIGEST = "every morning, summarise this feed and post it to my webhook"
DIGEST_SPEC = """\
name: Morning feed digest
description: Every morning, summarises the feed and posts the summary to a webhook.
nodes:
  T: ScheduleTrigger
  F: APIRequest
  X: ParserComponent
  P: Prompt Template
  M: LanguageModelComponent
  J: TypeConverterComponent
  W: APIRequest
  O: ChatOutput
edges:
  F.data -> X.input_data
  X.parsed_text -> P.feed
  P.prompt -> M.input_value
  M.text_output -> J.input_data
  J.data_output -> W.body
  W.data -> O.input_value
config:
  T.cron_expression: 0 7 * * *
  T.timezone: Europe/Lisbon
  F.url_input: https://example.com/feed.xml
  F.method: GET
  X.mode: Stringify
  X.pattern: {text}
  P.template: Summarise this feed in five bullet points: {feed}
  J.output_type: JSON
  W.url_input: https://hooks.example.com/my-webhook
  W.method: POST
"""
"""What a model writes for ``DIGEST`` given the trigger rule of the prompts: lfx's Schedule trigger
(every day at 07:00, Lisbon time), the feed fetched, summarised by the model node, posted."""


@pytest.mark.slow
async def test_every_morning_is_a_scheduled_flow_that_lfx_validate_accepts(llm, make_assistant, sandbox, tmp_path):
    from _support.components import intent, plan, spec_reply
    from _support.lfxcli import lfx_validate

    from lfassist_jupyter.ui.workspace import Workspace

    chosen = ("ScheduleTrigger", "APIRequest", "ParserComponent", "Prompt Template", "LanguageModelComponent",
              "TypeConverterComponent", "ChatOutput")  # fmt: skip
    llm.queue(intent("build_flow"), plan(*chosen), spec_reply(DIGEST_SPEC))
    result = await make_assistant("openai").arun(DIGEST)

    assert result.kind == "flow" and result.ok, result.error
    # The plan saw the trigger rule; the write saw the Schedule trigger's real ports and the cron rule.
    assert "starts with a trigger" in llm.requests[1].text and "ScheduleTrigger: Run this flow" in llm.requests[1].text
    write = llm.requests[2].text
    assert "ScheduleTrigger (Schedule)" in write and "cron_expression: str (required)" in write
    assert "five fields" in write
    report = result.flow_report
    assert report.verdict == "sound" and report.errors == [], report.errors
    assert not any("Schedule" in w for w in report.warnings)  # a trigger is not "not connected to anything"
    trigger = next(n for n in result.flow["data"]["nodes"] if n["data"]["type"] == "ScheduleTrigger")
    template = trigger["data"]["node"]["template"]
    assert (template["cron_expression"]["value"], template["timezone"]["value"]) == ("0 7 * * *", "Europe/Lisbon")
    assert trigger["data"]["node"]["metadata"]["trigger_kind"] == "schedule"

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    path = workspace.save_flow(result.flow, tmp_path / "digest.json")
    assert workspace.validate_flow(path).verdict == "sound"
    [answer] = lfx_validate([path], 4)  # the real lfx validate, on the file as saved
    assert answer["ok"], answer["issues"]
