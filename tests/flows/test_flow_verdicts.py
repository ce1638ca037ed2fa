"""Issue 42: a verdict for every flow -- sound, broken (naming the node and the reason), or not
judged here (naming what the sandbox's environment lacks), never "valid" when it could not tell.

Through the doors a user takes: ``validate_flow``, ``%assist flow load``, the card and its text,
the flow pipeline.  Ground truth is lfx 1.13 itself (its retirement facts, its requirement logic,
its verdict on the same flow where a test needs one).  Judging a flow in a provisioned environment
is tested in ``tests/sandbox/test_provision.py``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from _support.components import GOOD, LLM_SPEC, intent, plan, spec_reply
from _support.corpus import corpus_flow, single_node_flow

from lfassist_jupyter import build_flow, validate_flow
from lfassist_jupyter.flows import FlowReport
from lfassist_jupyter.flows.results import FlowProblem
from lfassist_jupyter.ui.render.flow import flow_report_html, flow_report_text
from lfassist_jupyter.validation.report import MissingPackage

GROQ = LLM_SPEC + '  M.model: {"name": "llama-3.1-8b-instant", "provider": "Groq"}\n  M.api_key: GROQ_API_KEY\n'
ABSENT = "lfa_verdict_absent"  # a package no environment here has


def custom_flow(sandbox, code: str) -> dict:
    """A flow of one custom node carrying ``code`` (its template is lfx's, built from a good component)."""
    made = sandbox.component_template(GOOD)
    template = json.loads(json.dumps(made.template))
    template["template"]["code"]["value"] = code
    node = {"id": "Uppercase-v42aa", "type": "genericNode",
            "data": {"id": "Uppercase-v42aa", "type": "CustomComponent", "node": template}}  # fmt: skip
    return {"name": "verdicts", "data": {"nodes": [node], "edges": []}}


def with_imports(*lines: str) -> str:
    return GOOD.replace("from lfx.schema.message import Message\n", "from lfx.schema.message import Message\n"
                        + "".join(f"{line}\n" for line in lines))  # fmt: skip


def test_a_flow_needing_a_package_is_not_judged_and_never_valid(sandbox, monkeypatch):
    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    report = validate_flow(build_flow(GROQ).flow)
    assert report.verdict == "not_judged" and not report.is_valid and not report.errors
    assert [p.distribution for p in report.missing_packages] == ["langchain-groq"]
    text = flow_report_text(report)
    assert text.startswith("Flow not judged here (4 nodes, 3 edges): this environment lacks langchain-groq")
    assert "%pip install langchain-groq" in text and "valid" not in text.split("\n")[0].replace("not judged", "")
    assert "not judged here" in flow_report_html(report) and "Flow valid" not in flow_report_html(report)
    # The model cannot be told otherwise: a report naming a missing package is never valid.
    missing = MissingPackage(module="x", distribution="x", fix="%pip install x")
    assert FlowReport(is_valid=True, missing_packages=[missing]).is_valid is False
    assert FlowReport.model_validate({"is_valid": True, "missing_packages": [missing.model_dump()]}).verdict == (
        "not_judged"
    )
    # Control: the same flow on an installed provider is judged, and sound.
    sound = validate_flow(build_flow(LLM_SPEC + '  M.model: {"name": "gpt-4o-mini", "provider": "OpenAI"}\n').flow)
    assert sound.verdict == "sound" and sound.is_valid and "Flow valid" in flow_report_text(sound)


def test_ask_shows_what_judging_elsewhere_would_install_and_its_size(sandbox, monkeypatch, tmp_path):
    """``ask`` (the default): the plan, resolved from uv's cache with no network, before any install."""
    monkeypatch.setenv("LFASSIST_PROVISION_DIR", str(tmp_path / "envs"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    report = validate_flow(build_flow(GROQ).flow)
    assert report.verdict == "not_judged" and report.provision is not None, report.provision
    plan = report.provision
    if plan.error:  # uv's cache here lacks langchain-groq: the plan says so instead of a size
        assert "langchain-groq" in plan.error or "offline" in plan.error.lower(), plan.error
    else:
        assert plan.adds == ["langchain-groq"] and any(p.startswith("langchain-groq==") for p in plan.new)
        assert plan.download_bytes and not plan.ready
        assert "--provision" in flow_report_text(report) and "MB to download" in flow_report_text(report)
    assert not (tmp_path / "envs").exists()  # nothing was built without a yes


def test_a_stale_lfx_module_after_a_missing_package_is_broken(sandbox, monkeypatch):
    """The missing package stops lfx's load first; lfx with every package installed would stop at the
    stale lfx import after it: the flow is broken, whatever this environment lacks."""
    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    stale = custom_flow(
        sandbox, with_imports(f"import {ABSENT}", "from lfx.services.auth.utils import get_current_user")
    )
    report = validate_flow(stale)
    assert report.verdict == "broken" and not report.is_valid
    (error,) = report.errors
    assert "lfx.services.auth.utils" in error.message and error.node_id == "Uppercase-v42aa"
    # A name gone from an lfx module that exists is found the same way.
    gone = validate_flow(custom_flow(sandbox, with_imports(f"import {ABSENT}", "from lfx.io import NoSuchInputV42")))
    assert gone.verdict == "broken" and "NoSuchInputV42" in gone.errors[0].message
    assert "lfx.io" in gone.errors[0].message
    # Control: the missing package alone is not judged (not broken, not valid).
    alone = validate_flow(custom_flow(sandbox, with_imports(f"import {ABSENT}")))
    assert alone.verdict == "not_judged" and not alone.errors
    assert [p.distribution for p in alone.missing_packages] == [ABSENT.replace("_", "-")]


def _retired_table() -> dict[str, str]:
    source = Path("lfassist_jupyter/sandbox/worker/_probe_run.py")
    if not source.exists():
        source = Path(__file__).resolve().parents[2] / source
    tree = ast.parse(source.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RETIRED")
    return ast.literal_eval(node.value)


def test_the_retired_components_mirror_lfx():
    """Drift: the worker's table of retired components is lfx's: the classes its shipped-source
    inventory resolves saved code to whose module raises a migration-required error."""
    import importlib
    import json as _json
    from importlib.resources import files

    lfx = files("lfx")  # read as files: importing every component module would take a minute
    inventory = _json.loads(lfx.joinpath("_assets", "legacy_storage_sources.json").read_text())

    def source(module: str) -> str:
        return lfx.joinpath(*module.split(".")[1:]).with_suffix(".py").read_text()

    refusing = {e["module"] for e in inventory["entries"] if "MigrationRequiredError" in source(e["module"])}
    table = _retired_table()
    assert set(table) == refusing
    for error in set(table.values()):
        module, _, name = error.rpartition(".")
        message = str(getattr(importlib.import_module(module), name)())
        assert "retired" in message and "migrat" in message


def test_a_chroma_flow_is_retired_with_the_migration_lfx_names(sandbox, monkeypatch):
    """A Chroma node of a 1.0 export, its code lfx's own shipped source: lfx 1.13 loads it as the
    retired stand-in, whose build refuses with the migration; validate_flow says so in lfx's words."""
    from lfx.base.knowledge_bases.backends.chroma import ChromaMigrationRequiredError

    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    flow = single_node_flow(corpus_flow("paulomuraroferreira__Vector_Store_RAG_RAGAS"), "Chroma-FYr1l")
    report = validate_flow(flow)
    assert report.verdict == "broken"
    retired = [e for e in report.errors if e.code == "retired"]
    assert [e.node_id for e in retired] == ["Chroma-FYr1l"], report.errors
    assert str(ChromaMigrationRequiredError()) in retired[0].message  # lfx's words, the migration in them
    assert "Knowledge Base" in retired[0].message and "retired" in retired[0].message
    # Control: custom code (not lfx's shipped source) defining a class of the same name is not retired.
    code = flow["data"]["nodes"][0]["data"]["node"]["template"]["code"]
    code["value"] = GOOD.replace("UppercaseComponent", "ChromaVectorStoreComponent")
    flow["data"]["nodes"][0]["data"]["node"]["outputs"] = [
        {"name": "output", "method": "build_output", "types": ["Message"]}
    ]
    assert not [e for e in validate_flow(flow).errors if e.code == "retired"]


def test_an_agent_listing_a_provider_lfx_keeps_inactive_is_broken_else_not_judged(sandbox, monkeypatch):
    """An Agent saved by Langflow 1.1 indexes ``MODELS_METADATA`` by the providers it lists; lfx 1.13
    registers Groq as inactive (left out of it): ``KeyError('Groq')`` whatever is installed (lfx's
    own run in the environment with Groq's bundle says so: ``verdicts.json``, ``provisioned``).  So
    the flow is broken, although the Google bundle it also lists is missing here and fails first.
    Control: the same code without Groq is not judged, naming Google's bundle and SDK."""
    from _support.corpus import stored_verdicts

    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    fid = "aekanun2020__HR_Agent_2Agents_v3"
    assert "KeyError: 'Groq'" in stored_verdicts()[fid]["provisioned"]["run_message"]
    flow = corpus_flow(fid)
    agent = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "Agent")
    one = single_node_flow(flow, agent["id"])
    report = validate_flow(one)
    assert report.verdict == "broken", report
    (error,) = report.errors
    assert "Groq" in error.message and "inactive" in error.message and error.node_id == agent["id"]

    code = one["data"]["nodes"][0]["data"]["node"]["template"]["code"]
    assert '"Groq", ' in code["value"]
    code["value"] = code["value"].replace('"Groq", ', "")
    unjudged = validate_flow(one)
    assert unjudged.verdict == "not_judged" and not unjudged.errors and not unjudged.is_valid
    assert {"lfx-google", "langchain-google-genai"} <= {p.distribution for p in unjudged.missing_packages}
    need = next(n for n in unjudged.needs if n.kind == "package" and n.package == "lfx-google")
    assert "Google Generative AI" in need.message and "registry" in need.message


def test_a_malformed_saved_node_is_a_report_line_through_flow_load(flow_ip, tmp_path, monkeypatch):
    """%assist flow load of a flow whose custom node lacks its outputs, or its template: one line
    naming the node (lfx refuses the flow: 'Failed to load graph'), never a traceback."""
    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    good = build_flow(LLM_SPEC + '  M.model: {"name": "gpt-4o-mini", "provider": "OpenAI"}\n').flow
    for part in ("outputs", "template"):
        flow = json.loads(json.dumps(good))
        node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "Prompt Template")
        node["data"]["type"] = "CustomComponent"
        node["data"]["node"]["display_name"] = "RunMigrationJob"
        node["data"]["node"].pop(part)
        path = tmp_path / f"no_{part}.json"
        path.write_text(json.dumps(flow))
        view = flow_ip.run_line_magic("assist", f"flow load {path}")
        assert view.report is not None and view.report.verdict == "broken", part
        (error,) = [e for e in view.report.errors if e.node == "RunMigrationJob" and e.code == "structure"]
        assert f"no {part!r}" in error.message and "Failed to load graph" in error.message
        assert "RunMigrationJob" in repr(view)


async def test_the_pipeline_never_calls_a_flow_it_could_not_judge_validated(llm, make_assistant, monkeypatch):
    """A generated flow on a provider whose package is missing: not validated, no repair round (a
    model cannot install a package), no probe run; the answer says what is missing."""
    monkeypatch.setenv("LFASSIST_PROVISION", "no")
    llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"),
              spec_reply(GROQ))  # fmt: skip
    result = await make_assistant("openai", max_retries=3).arun("a Groq flow")
    assert not result.validated and not result.ok
    assert "Not judged here" in (result.error or "") and "langchain-groq" in (result.error or "")
    assert result.outcome.report.verdict == "not_judged" and result.outcome.run is None
    assert len(llm.requests) == 3  # intent, plan, write: no repair call


@pytest.mark.parametrize("verdict", ["sound", "broken", "not_judged"])
def test_the_verdict_is_in_the_report_json(verdict):
    """What an agent reads (the MCP answer is the report's JSON): the verdict, by name."""
    missing = [MissingPackage(module="x", distribution="x", fix="%pip install x")] if verdict == "not_judged" else []
    errors = [FlowProblem(code="structure", message="m")] if verdict == "broken" else []
    report = FlowReport(is_valid=verdict == "sound", errors=errors, missing_packages=missing)
    assert report.model_dump(mode="json")["verdict"] == verdict


def test_a_card_not_judged_offers_to_judge_elsewhere_and_never_says_validated():
    """The panel's flow card (``flow_message``): amber "not judged here", the plan on the button."""
    from lfassist_jupyter.flows.results import ProvisionPlan
    from lfassist_jupyter.ui.messages import flow_message

    missing = MissingPackage(module="groq", distribution="langchain-groq", fix="%pip install langchain-groq")
    plan = ProvisionPlan(adds=["langchain-groq"], new=["groq==0.37.1", "langchain-groq==1.1.3"], download_bytes=158273)
    report = FlowReport(is_valid=True, missing_packages=[missing], provision=plan, node_count=4, edge_count=3)
    card = flow_message(flow=None, spec="nodes:\n  A: ChatInput\n", report=report)
    assert card.validated is False and card.badge == "not judged here"
    assert card.provision and "langchain-groq==1.1.3" in card.provision and "0.2 MB" in card.provision
    assert card.lines[0].text.startswith("Flow not judged here (4 nodes, 3 edges)") and card.lines[0].ok is None
    # Control: a sound report's card is validated and offers nothing to install.
    sound = flow_message(flow=None, spec="nodes:\n  A: ChatInput\n", report=FlowReport(is_valid=True))
    assert sound.validated and sound.badge == "validated" and sound.provision is None
