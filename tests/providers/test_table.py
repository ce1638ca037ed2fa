"""The provider table (``providers/table.py``) is the one place provider knowledge lives: no other
module spells a provider's key variable, its lfx facts match the installed lfx, the model of each
task is chosen there, and a provider added to it reaches the flows' model nodes and a real run's
plan with no other edit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _support.components import LLM_SPEC

from lfassist_jupyter.providers import table
from lfassist_jupyter.providers.table import PROVIDERS, FlowNode, ProviderSpec, task_models

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lfassist_jupyter"


def test_no_module_outside_providers_spells_a_key_variable():
    keys = table.key_variables()
    assert "OPENAI_API_KEY" in keys and len(keys) >= 8  # the control: the table has them
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, keys)) + r")\b")
    found = [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "providers" not in path.relative_to(PACKAGE).parts[:1]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if (m := pattern.search(line))
    ]
    assert found == []
    inside = [p for p in (PACKAGE / "providers").rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert [p.name for p in inside] == ["table.py"]  # and inside providers/, only the table


def test_the_lfx_facts_of_the_table_are_the_installed_lfxs():
    """Each entry's lfx provider name, key variable, base-URL field and variable, against lfx's own
    model registry (``MODEL_PROVIDER_METADATA``): a drift shows here, not in a flow that fails."""
    from lfx.base.models.model_metadata import MODEL_PROVIDER_METADATA

    checked = 0
    for spec in PROVIDERS:
        if spec.flow is None or spec.flow.lfx_provider not in MODEL_PROVIDER_METADATA:
            continue
        meta = MODEL_PROVIDER_METADATA[spec.flow.lfx_provider]
        variables = meta.get("variables", [])
        secret = next((v["variable_key"] for v in variables if v.get("is_secret")), None)
        url = next((v for v in variables if v.get("langchain_param") == "base_url"), None)
        field = (url.get("component_metadata") or {}).get("mapping_field") if url else None
        assert spec.key_variable == secret, spec.name
        assert spec.flow.base_url_field == field, spec.name
        if url is not None:
            assert spec.flow.base_url_variable == url["variable_key"], spec.name
        if meta.get("base_url"):  # a fixed endpoint (OpenRouter): a real run needs its host
            assert any(h in meta["base_url"] for h in spec.hosts), spec.name
        checked += 1
    assert checked >= 8  # OpenAI, Anthropic, Ollama, Google, Groq, Azure x2, WatsonX, OpenRouter
    ours = {p.flow.lfx_provider for p in PROVIDERS if p.flow}
    assert set(MODEL_PROVIDER_METADATA) <= ours  # every provider lfx knows has an entry


def test_lfxs_language_model_node_has_the_fields_the_table_names(sandbox):
    from lfassist_jupyter.flows.catalog import default_catalog

    catalog = default_catalog(sandbox)  # lfx's node as the sandbox's lfx builds it
    fields = set(catalog.registry[catalog.resolve("LanguageModelComponent")]["template"])
    assert {"model", "api_key"} <= fields  # the control: it is the node
    for spec in PROVIDERS:
        if spec.flow and spec.flow.base_url_field:
            assert spec.flow.base_url_field in fields, spec.name


@pytest.mark.parametrize(
    ("provider", "own", "model", "intent", "expected"),
    [
        ("openai", False, None, None, ("gpt-4o-mini", "gpt-4o")),  # the vendor's pair
        ("openai", False, "gpt-4.1", None, ("gpt-4o-mini", "gpt-4.1")),  # the vendor still classifies cheaply
        ("openai", True, "fake-gpt", None, ("fake-gpt", "fake-gpt")),  # a server of yours: your model, every task
        ("openai", True, "fake-gpt", "fake-mini", ("fake-mini", "fake-gpt")),
        ("openai", True, None, None, ("", "")),  # nothing named there: the server is asked
        ("ollama", True, "qwen3:0.6b", None, ("qwen3:0.6b", "qwen3:0.6b")),
        ("ollama", True, None, None, ("", "")),
        ("anthropic", False, None, None, ("claude-haiku-4-5", "claude-sonnet-4-5")),
    ],
)
def test_the_model_of_each_task_is_chosen_in_one_place(provider, own, model, intent, expected):
    models = task_models(table.find(provider), own=own, model=model, intent_model=intent)
    assert (models.intent, models.component) == expected
    assert models.answer == models.flow == models.component


def test_a_server_of_your_own_is_one_that_is_not_the_vendors_url():
    openai, ollama = table.find("openai"), table.find("ollama")
    assert not table.own_server(openai, None) and not table.own_server(openai, "https://api.openai.com/v1/")
    assert table.own_server(openai, "http://127.0.0.1:8000/v1") and table.own_server(ollama, None)
    assert table.sdk_base_url(ollama, "0.0.0.0") == "http://0.0.0.0:11434/v1"
    assert table.server_root(ollama, "http://gpu-box:11434/v1") == "http://gpu-box:11434"


def test_a_provider_added_to_the_table_reaches_the_model_nodes_and_the_real_runs_plan(monkeypatch, sandbox):
    """Adding a provider a flow can call is one entry: the model node of a spec naming it gets its
    key variable, and a real run's plan its hosts, with no other edit."""
    from lfassist_jupyter import build_flow, default_catalog
    from lfassist_jupyter.flows.model_nodes import configure_model_nodes
    from lfassist_jupyter.flows.real_run import run_plan

    entry = ProviderSpec(
        name="acme",
        display_name="Acme",
        key_variable="ACME_TOKEN",
        hosts=("api.acme.test",),
        needs="never",
        flow=FlowNode(lfx_provider="Groq", components=("AcmeModel",)),  # lfx's spelling: a provider it has
    )
    groq = table.find("groq")
    monkeypatch.setattr(table, "PROVIDERS", (entry, *(p for p in PROVIDERS if p is not groq)))
    spec, changes = configure_model_nodes(LLM_SPEC + "  M.provider: Groq\n", default_catalog(), None)
    assert "  M.api_key: ACME_TOKEN\n" in spec and changes[0].node == "M"
    flow = build_flow(LLM_SPEC + '  M.model: {"name": "x", "provider": "Groq"}\n  M.api_key: ACME_TOKEN\n').flow
    plan = run_plan(flow)
    assert [(h.host, h.port) for h in plan.hosts] == [("api.acme.test", 443)]
    assert plan.variables == [("ACME_TOKEN", "Language Model.api_key")]
    monkeypatch.undo()  # the control: the table as shipped gives Groq's own
    assert [(h.host, h.port) for h in run_plan(flow).hosts] == [("api.groq.com", 443)]
