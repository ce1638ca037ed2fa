"""The packages a flow or a component needs that the sandbox's environment lacks, named before anything runs.

Ground truth is lfx 1.13's own requirements logic (``lfx.utils.flow_requirements``, what
``lfx requirements`` and ``lfx run``'s dependency preflight use), imported here in the test
process only; the product asks it inside the sandbox.  The provider bundles lfx 1.13 moved out of
lfx (``pip install ".[test]"`` brings OpenAI's, Anthropic's, Ollama's and OpenAI-compatible's) are
not missing: a component that imports ``langchain_openai`` or ``lfx.components.openai`` validates.
"""

from __future__ import annotations

import pytest
from _support.components import GOOD, LLM_SPEC

import lfassist_jupyter
from lfassist_jupyter import build_flow, validate_component, validate_flow
from lfassist_jupyter.errors import ConfigError

GROQ = LLM_SPEC + '  M.model: {"name": "llama-3.1-8b-instant", "provider": "Groq"}\n  M.api_key: GROQ_API_KEY\n'
"""A model node on a provider whose bundle is not installed here (lfx: langchain-groq)."""

JQ = """\
nodes:
  A: ChatInput
  T: TypeConverterComponent
  D: DataOperations
  C: ChatOutput
edges:
  A.message -> T.input_data
  T.data_output -> D.data
  D.data_output -> C.input_value
"""
"""A built-in whose code imports ``jq``, which lfx does not bring."""


def _lfx_says(flow: dict) -> list[str]:
    from lfx.utils.flow_requirements import find_missing_dependencies

    return find_missing_dependencies(flow)


def test_a_flow_whose_provider_package_is_missing_is_named_with_its_install_line(flow_ip, llm):
    flow = build_flow(GROQ).flow
    report = validate_flow(flow)
    assert [(p.distribution, p.nodes, p.fix) for p in report.missing_packages] == [
        ("langchain-groq", ["Language Model"], "%pip install langchain-groq")
    ]
    assert [p.distribution for p in report.missing_packages] == _lfx_says(flow)  # lfx's own verdict

    view = flow_ip.run_cell_magic("assist_flow", '--run-local "hi" --env GROQ_API_KEY', GROQ)
    text = str(view) + view._repr_html_()
    assert "Needs langchain-groq, not installed here (Language Model): %pip install langchain-groq" in text
    assert view.run is None and "Not run: the flow needs packages not installed here: langchain-groq" in text
    assert llm.requests == []  # nothing ran
    with pytest.raises(ConfigError, match=r"Install them: %pip install langchain-groq"):
        lfassist_jupyter.run_flow_for_real(GROQ, "hi", env={"GROQ_API_KEY": "gsk-0123456789abcdef"})


def test_a_built_in_that_needs_a_package_is_named_as_lfx_names_it():
    flow = build_flow(JQ).flow
    report = validate_flow(flow)
    assert not report.errors  # the wiring is right: the environment is what lacks
    assert report.verdict == "not_judged" and not report.is_valid  # so it is not judged, never valid
    assert [(p.distribution, p.nodes) for p in report.missing_packages] == [("jq", ["JSON Operations"])]
    assert _lfx_says(flow) == ["jq"]


def test_the_installed_bundles_are_not_missing():
    flows = [LLM_SPEC + '  M.model: {"name": "gpt-4o-mini", "provider": "OpenAI"}\n',
             LLM_SPEC + '  M.model: {"name": "claude-haiku-4-5", "provider": "Anthropic"}\n',
             LLM_SPEC + '  M.model: {"name": "llama3.1", "provider": "Ollama"}\n']  # fmt: skip
    for spec in flows:
        flow = build_flow(spec).flow
        assert validate_flow(flow).missing_packages == [] and _lfx_says(flow) == []


BUNDLE_IMPORTS = GOOD.replace(
    "from lfx.schema.message import Message\n",
    "from lfx.schema.message import Message\nfrom langchain_openai import ChatOpenAI\n"
    "from langchain_anthropic import ChatAnthropic\nfrom lfx.components.openai import OpenAIModelComponent\n",
)
SHIM_OF_A_MISSING_BUNDLE = GOOD.replace(
    "from lfx.schema.message import Message\n",
    "from lfx.schema.message import Message\nfrom lfx.components.composio import ComposioAPIComponent\n",
)


def test_a_component_importing_the_installed_bundles_validates(sandbox):
    report = validate_component(BUNDLE_IMPORTS)
    assert report.is_valid and report.missing_packages == [], report.error


def test_a_component_importing_a_shim_whose_bundle_is_missing_names_the_bundle(sandbox):
    report = validate_component(SHIM_OF_A_MISSING_BUNDLE)
    assert not report.is_valid
    assert [(p.distribution, p.fix) for p in report.missing_packages] == [("lfx-bundles", "%pip install lfx-bundles")]
