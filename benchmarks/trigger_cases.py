"""Langflow 1.13's triggers and ``connection_ref`` fields: flow cases written from lfx's facts, and
what lfx itself says of each (the ground truth of ``validate_flow`` on them).

No public Langflow export uses them yet, so the cases are generated here from what lfx 1.13 defines:

- the trigger components (``lfx/components/triggers/``): ``ScheduleTrigger`` (a five-field
  ``cron_expression``, an IANA ``timezone``, ``catchup_policy``, ``share_session``) and
  ``InboundWebhookTrigger`` (an optional ``payload_schema``, a JSON object), each with the
  ``trigger_event`` output of ``BaseTriggerComponent``;
- ``ConnectionRefInput`` fields (``lfx/inputs/inputs.py``, type ``connection_ref``): a handle
  ``<provider>/<name>`` (``lfx/integrations/models.py``'s ``ConnectionRef``: lower-case provider id
  ``[a-z0-9][a-z0-9._-]*``, snake-case name), resolved at run time from ``ConnectionRef.env_key()``
  (``LF_CONNECTION__<PROVIDER>__<NAME>``).  No built-in component declares one (extension bundles
  do), so two custom components declare one the way lfx allows (``CONNECTION_COMPONENTS``): a required
  ``slack`` connection and an optional one whose provider id has punctuation (``acme.mail-v2``,
  escaped in its environment key).

Each case is a base flow (built with ``build_flow`` over the sandbox's catalogue) with one variation
(a value set, cleared or malformed), a sound, broken or needs-a-connection variant; ``CASES`` lists
them with the environment each is judged in (one connection's key set, the others absent).  The
split (``half``: ``sha256(case id)``'s first byte odd -> ``held_back``) was committed with the cases,
before any rule of ``validate_flow`` about them was written.

lfx's word on a case (``truth``, computed in a subprocess with lfx; the kernel package never imports
it), from lfx's own code only:

- ``lfx validate --format json`` (the CLI, level 4);
- ``lfx run``'s own run (``lfx.run.base.run_flow`` with ``check_variables=True``, as the CLI runs it):
  its connection check (``validate_connection_refs_for_env``, before any node runs) and the run;
- the trigger's ``trigger_definition()`` (what Langflow's flow-save reconciler reads to arm it:
  ``validate_cron_expression``, ``validate_timezone``, ``validate_payload_schema``), which neither
  ``lfx validate`` nor a run calls.

and classified as::

    broken   lfx validate errors at levels 1-3, a trigger whose definition lfx refuses (a value
             given that it cannot arm), or a run refused for anything but a missing connection (a
             malformed handle), or one that fails even with every connection it names given (a
             handle of a provider other than the field declares)
    needs    lfx validate's level-4 "Required input ... has no value" only (a trigger refuses an
             empty required value too), or a run refused for connections absent from the
             environment only (``ConnectionUnresolvedError``, reason ``missing``) that runs once
             they are given (a second run with each named connection's key set): something the
             user provides
    sound    neither

``validate_flow``'s word: ``broken`` / ``not_judged`` as its verdict says; else ``needs`` when it lists
a ``connection`` or ``value`` need, else ``sound``.

Usage::

    python benchmarks/trigger_cases.py generate          # the case files and manifest (needs the sandbox)
    python benchmarks/trigger_cases.py truth             # lfx's word on each (writes truth.json)
    python benchmarks/trigger_cases.py measure [--half dev|held_back|all]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "benchmarks" / "trigger_cases"
MANIFEST = CASES_DIR / "manifest.json"
TRUTH = CASES_DIR / "truth.json"
FLOWS = CASES_DIR / "flows"

PRESENT_KEY = "LF_CONNECTION__SLACK__PRESENT"
CASE_ENV = {PRESENT_KEY: "xoxb-case-token-not-a-secret"}
"""The environment every case is judged in (lfx's and ours): the connection ``slack/present`` is
set, every other connection is absent."""

SLACK_CODE = """\
from lfx.custom.custom_component.component import Component
from lfx.io import ConnectionRefInput, MessageTextInput, Output
from lfx.schema.message import Message


class PostToSlack(Component):
    display_name = "Post to Slack"
    description = "Posts a message to a Slack channel through a named connection."
    name = "PostToSlack"

    inputs = [
        ConnectionRefInput(name="connection", display_name="Slack connection", provider="slack", required=True),
        MessageTextInput(name="text", display_name="Text"),
    ]
    outputs = [Output(display_name="Posted", name="posted", method="post")]

    async def post(self) -> Message:
        lease = self.resolve_connection("connection")
        token = await lease.get_token()
        return Message(text=f"posted with a token of {len(token)} characters: {self.text}")
"""

MAIL_CODE = """\
from lfx.custom.custom_component.component import Component
from lfx.io import ConnectionRefInput, MessageTextInput, Output
from lfx.schema.message import Message


class SendMail(Component):
    display_name = "Send Mail"
    description = "Sends the text by mail when a mail connection is chosen; passes it on otherwise."
    name = "SendMail"

    inputs = [
        ConnectionRefInput(name="mailbox", display_name="Mailbox", provider="acme.mail-v2"),
        MessageTextInput(name="text", display_name="Text"),
    ]
    outputs = [Output(display_name="Sent", name="sent", method="send")]

    async def send(self) -> Message:
        if not self.mailbox:
            return Message(text=f"not sent: {self.text}")
        lease = self.resolve_connection("mailbox")
        await lease.get_token()
        return Message(text=f"sent: {self.text}")
"""

CONNECTION_COMPONENTS = {"PostToSlack": SLACK_CODE, "SendMail": MAIL_CODE}

BASES = {
    "schedule": """\
name: Morning greeting
nodes:
  T: ScheduleTrigger
  P: Prompt Template
  C: ChatOutput
edges:
  P.prompt -> C.input_value
config:
  T.cron_expression: 0 8 * * *
  P.template: Write today's greeting.
""",
    "schedule_wired": """\
name: Tick report
nodes:
  T: ScheduleTrigger
  X: ParserComponent
  C: ChatOutput
edges:
  T.trigger_event -> X.input_data
  X.parsed_text -> C.input_value
config:
  X.mode: Stringify
  X.pattern: {text}
""",
    "webhook": """\
name: Inbound order
nodes:
  H: InboundWebhookTrigger
  X: ParserComponent
  C: ChatOutput
edges:
  H.trigger_event -> X.input_data
  X.parsed_text -> C.input_value
config:
  X.mode: Stringify
  X.pattern: {text}
""",
    "slack": """\
name: Slack post
nodes:
  A: ChatInput
  S: PostToSlack
  C: ChatOutput
edges:
  A.message -> S.text
  S.posted -> C.input_value
config:
  S.connection: slack/present
""",
    "slack_mail": """\
name: Slack then mail
nodes:
  A: ChatInput
  S: PostToSlack
  M: SendMail
  C: ChatOutput
edges:
  A.message -> S.text
  S.posted -> M.text
  M.sent -> C.input_value
config:
  S.connection: slack/present
""",
    "schedule_slack": """\
name: Morning Slack post
nodes:
  T: ScheduleTrigger
  P: Prompt Template
  S: PostToSlack
  C: ChatOutput
edges:
  P.prompt -> S.text
  S.posted -> C.input_value
config:
  T.cron_expression: 30 7 * * 1-5
  T.timezone: Europe/Lisbon
  P.template: Good morning, team.
  S.connection: slack/present
""",
    "webhook_slack": """\
name: Webhook to Slack
nodes:
  H: InboundWebhookTrigger
  X: ParserComponent
  S: PostToSlack
  C: ChatOutput
edges:
  H.trigger_event -> X.input_data
  X.parsed_text -> S.text
  S.posted -> C.input_value
config:
  X.mode: Stringify
  X.pattern: {text}
  S.connection: slack/present
""",
}

# (case id, base, {spec id: {field: value}}, what it varies).  The values are lfx's facts' edges:
# cron field counts and spacing, IANA zones, JSON that is or is not an object, every way a handle
# can fail ConnectionRef.parse (no slash, two, upper case, another provider), a provider id with
# punctuation (its key segment escaped), a connection present, absent, empty, optional.
CASES: list[tuple[str, str, dict[str, dict[str, object]], str]] = [
    ("schedule-ok", "schedule", {}, "a weekday-morning schedule, unwired"),
    ("schedule-cron-four-fields", "schedule", {"T": {"cron_expression": "0 8 * *"}}, "cron with 4 fields"),
    ("schedule-cron-six-fields", "schedule", {"T": {"cron_expression": "0 0 8 * * 1"}}, "cron with 6 fields"),
    ("schedule-cron-empty", "schedule", {"T": {"cron_expression": ""}}, "no cron expression"),
    ("schedule-cron-spaced", "schedule", {"T": {"cron_expression": " 0  8 * * 1-5 "}}, "cron with extra spaces"),
    ("schedule-tz-unknown", "schedule", {"T": {"timezone": "Mars/Olympus_Mons"}}, "a timezone that is not IANA"),
    ("schedule-tz-empty", "schedule", {"T": {"timezone": ""}}, "no timezone"),
    ("schedule-tz-skip", "schedule", {"T": {"timezone": "America/New_York", "catchup_policy": "skip"}}, "skip"),
    ("schedule-wired-ok", "schedule_wired", {}, "the tick event parsed into the output"),
    ("schedule-wired-shared", "schedule_wired", {"T": {"share_session": True}}, "one shared session"),
    ("webhook-ok", "webhook", {}, "an inbound webhook, any body"),
    ("webhook-schema-object", "webhook", {"H": {"payload_schema": '{"type": "object"}'}}, "a JSON object schema"),
    ("webhook-schema-list", "webhook", {"H": {"payload_schema": "[1, 2]"}}, "a schema that is a JSON list"),
    ("webhook-schema-not-json", "webhook", {"H": {"payload_schema": "{type: object"}}, "a schema that is not JSON"),
    ("slack-present", "slack", {}, "the connection's key is set"),
    ("slack-missing", "slack", {"S": {"connection": "slack/team_alerts"}}, "the connection's key is absent"),
    ("slack-empty", "slack", {"S": {"connection": ""}}, "the required connection not chosen"),
    ("slack-no-slash", "slack", {"S": {"connection": "slack"}}, "a handle without a slash"),
    ("slack-upper-name", "slack", {"S": {"connection": "slack/Team"}}, "a handle with an upper-case name"),
    ("slack-two-slashes", "slack", {"S": {"connection": "slack/team/alerts"}}, "a handle with two slashes"),
    ("slack-other-provider", "slack", {"S": {"connection": "github/team"}}, "another provider's handle"),
    ("mail-optional-empty", "slack_mail", {}, "the optional mail connection left empty"),
    ("mail-punct-missing", "slack_mail", {"M": {"mailbox": "acme.mail-v2/ops_team"}}, "punctuated provider, absent"),
    ("schedule-slack-missing", "schedule_slack", {"S": {"connection": "slack/morning"}}, "a schedule, absent"),
    ("schedule-slack-present", "schedule_slack", {}, "a schedule posting with a present connection"),
    ("webhook-slack-upper-provider", "webhook_slack", {"S": {"connection": "Slack/present"}}, "upper-case provider"),
    ("schedule-slack-bad-cron", "schedule_slack", {"T": {"cron_expression": "every morning"}}, "cron in words"),
]


def half(case_id: str) -> str:
    """The fixed split: ``held_back`` when the first byte of sha256(case id) is odd."""
    return "held_back" if hashlib.sha256(case_id.encode()).digest()[0] % 2 else "dev"


def load_manifest() -> list[dict]:
    return json.loads(MANIFEST.read_text())["cases"]


def unpack(case_id: str, folder: Path) -> Path:
    """The case's flow file, written plain into ``folder`` (``lfx validate`` reads plain files)."""
    path = folder / f"{case_id}.json"
    path.write_bytes(gzip.decompress((FLOWS / f"{case_id}.json.gz").read_bytes()))
    return path


# -- generate ------------------------------------------------------------------------------------


def generate() -> None:
    """Build each base over the sandbox's catalogue (the custom components added from their
    templates as the sandbox builds them), apply each case's values, write the flow files
    (``flows/save.py``: Langflow 1.13 flow files, ids stable per case) and the manifest."""
    from lfassist_jupyter import default_catalog
    from lfassist_jupyter.flows import build_flow
    from lfassist_jupyter.flows.save import write_flow_file
    from lfassist_jupyter.sandbox import shared

    catalog = default_catalog()
    for name, code in CONNECTION_COMPONENTS.items():
        answer = shared().component_template(code)
        if not answer.ok:
            sys.exit(f"{name}: the sandbox did not build it: {answer.error}")
        catalog.add(name, answer.template)
    built = {}
    for base, spec in BASES.items():
        result = build_flow(spec, catalog=catalog)
        if not result.ok or result.flow is None:
            sys.exit(f"{base}: {[str(e) for e in result.errors]}")
        built[base] = (result.flow, result.node_ids)
    FLOWS.mkdir(parents=True, exist_ok=True)
    rows = []
    for case_id, base, values, about in CASES:
        flow, ids = copy.deepcopy(built[base][0]), built[base][1]
        for spec_id, fields in values.items():
            node = next(n for n in flow["data"]["nodes"] if n["id"] == ids[spec_id])
            for field, value in fields.items():
                node["data"]["node"]["template"][field]["value"] = value
        flow["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"lfassist/trigger-cases/{case_id}"))
        with tempfile.TemporaryDirectory() as tmp:  # stored compressed (each node carries its code)
            saved = write_flow_file(flow, Path(tmp) / f"{case_id}.json", name=case_id).path
            (FLOWS / f"{case_id}.json.gz").write_bytes(gzip.compress(saved.read_bytes(), mtime=0))
        rows.append({"id": case_id, "base": base, "values": values, "about": about, "half": half(case_id)})
    MANIFEST.write_text(
        json.dumps(
            {
                "about": "Flow cases with Langflow 1.13 triggers and connection_ref fields, generated from lfx's "
                "facts by benchmarks/trigger_cases.py; half = sha256(case id)[0] odd: held_back. Judged in "
                f"an environment where only {PRESENT_KEY} is set.",
                "env_keys": sorted(CASE_ENV),
                "cases": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"{len(rows)} cases: {sum(r['half'] == 'held_back' for r in rows)} held back")


# -- lfx's word ----------------------------------------------------------------------------------

_PROBE = r"""
import asyncio, json, os, sys
from pathlib import Path

from lfx.run.base import run_flow

def chain(exc):
    seen = []
    while exc is not None and len(seen) < 6 and exc not in seen:
        seen.append(exc)
        exc = getattr(exc, "original_exception", None) or exc.__cause__ or exc.__context__
    return seen

def trigger_refusal(flow):
    from lfx.components.triggers import InboundWebhookTriggerComponent, ScheduleTriggerComponent
    classes = {"ScheduleTrigger": ScheduleTriggerComponent, "InboundWebhookTrigger": InboundWebhookTriggerComponent}
    for node in flow["data"]["nodes"]:
        cls = classes.get(node["data"].get("type"))
        if cls is None:
            continue
        template = node["data"]["node"]["template"]
        values = {k: v.get("value") for k, v in template.items() if isinstance(v, dict) and k not in ("code", "_type")}
        try:
            cls(**values).trigger_definition()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
    return None

def run(path):
    try:
        result = asyncio.run(run_flow(script_path=Path(path), input_value="hello", check_variables=True))
        return {"ran": True, "text": str(result.get("result", ""))[:200] if isinstance(result, dict) else ""}
    except BaseException as exc:
        errs = chain(exc)
        return {
            "ran": False,
            "chain": [f"{type(e).__name__}: {str(e)[:400]}" for e in errs],
            "unresolved": [
                {"reason": getattr(e, "reason", None), "env_key": getattr(e, "env_key", None),
                 "handle": getattr(e, "handle", None)}
                for e in errs if type(e).__name__ == "ConnectionUnresolvedError"
            ],
        }

def connection_keys(flow):
    from lfx.integrations.models import ConnectionRef
    keys = set()
    for node in flow["data"]["nodes"]:
        for field in node["data"]["node"]["template"].values():
            if isinstance(field, dict) and field.get("type") == "connection_ref" and field.get("value"):
                try:
                    keys.add(ConnectionRef.parse(field["value"]).env_key())
                except ValueError:
                    pass
    return keys

for path in sys.argv[1:]:
    flow = json.loads(Path(path).read_text())
    out = {"path": path, "trigger_refusal": trigger_refusal(flow), "run": run(path)}
    if not out["run"]["ran"] and out["run"]["unresolved"]:
        # Past the missing connection: the same run with every connection the flow names given.
        given = [k for k in connection_keys(flow) if k not in os.environ]
        os.environ.update(dict.fromkeys(given, "xoxb-given-for-the-second-run"))
        out["provided_run"] = run(path)
        for key in given:
            del os.environ[key]
    print("\n@@CASE@@" + json.dumps(out), flush=True)
"""


def lfx_env() -> dict[str, str]:
    """The environment lfx judges the cases in: this one less every connection key, plus ``CASE_ENV``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LF_CONNECTION__")}
    return {**env, **CASE_ENV}


def truth(out: Path = TRUTH) -> dict:
    """lfx's word on every case (see the module docstring), written to ``out`` (``truth.json``)."""
    cases = load_manifest()
    lfx = Path(sys.executable).with_name("lfx")
    with tempfile.TemporaryDirectory(prefix="lfassist-trigger-truth-") as home:
        paths = [str(unpack(c["id"], Path(home))) for c in cases]
        env = {**lfx_env(), "LANGFLOW_CONFIG_DIR": home, "HOME": home}
        done = subprocess.run([str(lfx), "validate", *paths, "--format", "json"], capture_output=True, text=True,
                              env=env, timeout=600, check=False)  # fmt: skip
        validated = {Path(r["path"]).stem: r for r in json.loads(done.stdout)}
        probe = subprocess.run([sys.executable, "-c", _PROBE, *paths], capture_output=True, text=True, env=env,
                               timeout=1200, check=False)  # fmt: skip
    probed = {}
    for chunk in probe.stdout.split("@@CASE@@")[1:]:
        answer = json.loads(chunk.strip().splitlines()[0])
        probed[Path(answer.pop("path")).stem] = answer
    missing = [c["id"] for c in cases if c["id"] not in probed or c["id"] not in validated]
    if missing:
        sys.exit(f"no answer for {missing}: {probe.stderr[-3000:]}")
    found = {}
    for case in cases:
        cid = case["id"]
        issues = [i for i in validated[cid]["issues"] if i["severity"] == "error"]
        found[cid] = {
            "validate_ok": validated[cid]["ok"],
            "validate_errors": [f"L{i['level']} {i['message']}" for i in issues],
            **probed[cid],
        }
        found[cid]["lfx"] = classify(found[cid])
        print(f"{cid:32} {case['half']:9} {found[cid]['lfx']:7} {found[cid]['validate_errors'][:1]}")
    out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    return found


def classify(answer: dict) -> str:
    """lfx's word (``broken``, ``needs``, ``sound``) from its answers (see the module docstring)."""
    errors = answer["validate_errors"]
    if any(not e.startswith("L4 ") for e in errors):
        return "broken"
    if errors:  # a required value not given (a trigger refuses it too: "A cron expression is required")
        return "needs"
    if answer["trigger_refusal"]:
        return "broken"
    run = answer["run"]
    if run["ran"]:
        return "sound"
    missing = run["unresolved"] and all(u["reason"] == "missing" and u["env_key"] for u in run["unresolved"])
    if missing and answer.get("provided_run", {}).get("ran"):
        return "needs"  # it runs once the connections it names are given
    return "broken"


# -- ours ----------------------------------------------------------------------------------------


def ours(report) -> str:
    """``validate_flow``'s word in the same terms."""
    if report.verdict != "sound":
        return report.verdict
    return "needs" if any(n.kind in ("connection", "value") for n in report.needs) else "sound"


def measure(which: str) -> dict:
    """Agreement of ``validate_flow`` (each case file, in the cases' environment) with lfx's word."""
    from lfassist_jupyter import validate_flow

    stored = json.loads(TRUTH.read_text())
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("LF_CONNECTION__")}
    os.environ.update(CASE_ENV)
    rows = []
    tmp = tempfile.TemporaryDirectory(prefix="lfassist-trigger-measure-")
    try:
        for case in load_manifest():
            if which != "all" and case["half"] != which:
                continue
            report = validate_flow(unpack(case["id"], Path(tmp.name)))
            row = {"id": case["id"], "lfx": stored[case["id"]]["lfx"], "ours": ours(report),
                   "errors": [str(e)[:200] for e in report.errors],
                   "needs": [n.message[:200] for n in report.needs if n.kind in ("connection", "value")]}  # fmt: skip
            rows.append(row)
            mark = "" if row["lfx"] == row["ours"] else "  <-- differs"
            print(f"{row['id']:32} lfx={row['lfx']:7} ours={row['ours']:10}{mark}")
    finally:
        tmp.cleanup()
        for key in CASE_ENV:
            os.environ.pop(key, None)
        os.environ.update(saved)
    agree = sum(r["lfx"] == r["ours"] for r in rows)
    summary = {"half": which, "cases": len(rows), "agree": agree,
               "disagreements": [r for r in rows if r["lfx"] != r["ours"]]}  # fmt: skip
    print(f"{which}: {agree}/{len(rows)} agree with lfx")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("generate")
    sub.add_parser("truth")
    m = sub.add_parser("measure")
    m.add_argument("--half", default="held_back", choices=["dev", "held_back", "all"])
    args = parser.parse_args()
    if args.command == "generate":
        generate()
    elif args.command == "truth":
        truth()
    else:
        measure(args.half)


if __name__ == "__main__":
    main()
