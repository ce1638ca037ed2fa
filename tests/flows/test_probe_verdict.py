"""Issue 42: the probe run's result in the verdict -- a node that fails when the flow runs, for the
flow's own fault, makes it broken (naming the node and lfx's error); a run the sandbox's
confinement, the network, or the input stopped never does.

Through the doors that give a verdict after a run: ``validate_flow(probe=True)`` and the
``%%assist_flow --run`` cell (the flow pipeline folds its own probe run the same way,
``flows.probed.with_probe``).  The failing code is the lfx 1.13 fact the held-back corpus met
(``from langflow.logging import logger`` is a module there: ``logger.debug`` is an AttributeError
lfx's own run stops at; the slow test holds it against ``lfx run``).
"""

from __future__ import annotations

import pytest
from _support.components import GOOD
from _support.corpus import lfx_verdict

from lfassist_jupyter import build_flow, default_catalog, validate_flow

BODY = '        return Message(text=(self.input_text or "").upper())\n'
# Code saved by an older Langflow, where ``send_message`` returned the message: in lfx 1.13 it is a
# coroutine, and the node fails when it runs with the issue's own error.
OLD_SEND = GOOD.replace(
    BODY,
    '        message = self.send_message(Message(text=self.input_text or ""))\n'
    "        return Message(text=message.text.upper())\n",
)
SPEC = """\
nodes:
  A: ChatInput
  U: Probed
  C: ChatOutput
edges:
  A.message -> U.input_text
  U.output -> C.input_value
"""


def body(lines: str) -> str:
    return GOOD.replace(BODY, lines)


# A run that meets the sandbox, swallows it, and then fails in Python's words: the failure is the
# sandbox's doing, never the flow's.  Each ends in the same AttributeError as the control.
AFTER_NETWORK = body(
    "        import urllib.request\n"
    "        try:\n"
    "            got = urllib.request.urlopen('http://10.255.1.2/', timeout=2)\n"
    "        except Exception:\n"
    "            got = None\n"
    "        return Message(text=got.text)\n"
)
AFTER_REFUSED_WRITE = body(
    "        try:\n"
    "            got = open('/etc/lfassist-probe-marker', 'w')\n"
    "        except Exception:\n"
    "            got = None\n"
    "        return Message(text=got.text)\n"
)
CONTROL = body("        got = None\n        return Message(text=got.text)\n")
INPUT_DEPENDENT = body("        raise ValueError(f'not a URL: {self.input_text}')\n")


def flow_of(sandbox, code: str) -> tuple[dict, object]:
    made = sandbox.component_template(code)
    assert made.ok, made.error
    catalog = default_catalog(sandbox)
    catalog.add("Probed", made.template)
    built = build_flow(SPEC, catalog=catalog)
    assert built.ok, built.errors
    return built.flow, catalog


@pytest.fixture(scope="module")
def old_send(sandbox) -> tuple[dict, object]:
    return flow_of(sandbox, OLD_SEND)


def test_a_node_that_fails_when_the_flow_runs_is_broken_naming_it(sandbox, old_send):
    flow, catalog = old_send
    # Control: lfx loads the code and the wiring is right; without the run nothing says otherwise.
    assert validate_flow(flow, catalog=catalog).verdict == "sound"
    report = validate_flow(flow, catalog=catalog, probe=True)
    assert report.verdict == "broken" and not report.is_valid
    (error,) = report.errors
    assert error.code == "run_failure" and error.node == "Uppercase" and error.node_id == "Probed-U"
    assert "'coroutine' object has no attribute 'text'" in error.message and "in its code" in error.message
    # A sound flow stays sound after its run.
    good, catalog = flow_of(sandbox, GOOD)
    assert validate_flow(good, catalog=catalog, probe=True).verdict == "sound"


@pytest.mark.parametrize(
    "code",
    [
        AFTER_REFUSED_WRITE,
        pytest.param(AFTER_NETWORK, marks=pytest.mark.slow),
        pytest.param(INPUT_DEPENDENT, marks=pytest.mark.slow),
    ],
    ids=["refused", "network", "input"],
)
def test_a_run_the_sandbox_or_the_input_stopped_is_never_broken(sandbox, code):
    flow, catalog = flow_of(sandbox, code)
    run = sandbox.probe_run(flow, "hello")
    assert not run.ok and run.failure is not None and run.failure.node_id == "Probed-U"  # it did run, and fail
    if code is AFTER_REFUSED_WRITE:
        assert run.sandbox_refusals >= 1  # the zygote recorded the refusal, whatever the child says
    report = validate_flow(flow, catalog=catalog, probe=True)
    assert report.verdict == "sound", report.errors


def test_the_control_fails_the_same_way_and_is_broken(sandbox):
    """The control of the test above: the same AttributeError with no sandbox in its way."""
    flow, catalog = flow_of(sandbox, CONTROL)
    report = validate_flow(flow, catalog=catalog, probe=True)
    assert report.verdict == "broken" and "'NoneType' object has no attribute 'text'" in report.errors[0].message


def test_the_flow_cell_run_folds_the_probe_into_the_card(sandbox, old_send):
    """``%%assist_flow --run``: the card's verdict after the run says broken, naming the node."""
    from lfassist_jupyter.ui.flow_cell import FlowView, probe_run

    flow, catalog = old_send

    class Workspace:
        def probe_run(self, flow, text):
            return sandbox.probe_run(flow, text)

    view = FlowView(flow=flow, report=validate_flow(flow, catalog=catalog))
    assert view.report.verdict == "sound"
    probe_run(Workspace(), view, "hello")
    assert view.report.verdict == "broken" and view.report.errors[0].node == "Uppercase"


@pytest.mark.slow
def test_lfx_own_run_stops_at_the_same_error(old_send, tmp_path):
    """Ground truth: ``lfx run`` on the same flow fails with the error the verdict names."""
    flow, catalog = old_send
    said = validate_flow(flow, catalog=catalog, probe=True).errors[0].message
    wrong = "'coroutine' object has no attribute 'text'"
    assert wrong in lfx_verdict(flow, tmp_path)["error"] and wrong in said


def test_a_node_fed_a_stubbed_model_is_not_held_to_its_failure():
    """A stub stands in for a language model with text: a node that then fails on the "model" it got
    (``TypeError: Language model does not support structured output``, met on the corpus) failed on
    the stub, not on the flow.  The same failure in a node fed only text is the flow's."""
    from lfassist_jupyter.flows import FlowReport
    from lfassist_jupyter.flows.probed import with_probe
    from lfassist_jupyter.sandbox.answers import FlowRun, RunFailure, Stubbed

    spec = "nodes:\n  A: ChatInput\n  M: LanguageModelComponent\n  S: StructuredOutput\n  C: ChatOutput\nedges:\n"
    spec += "  M.model_output -> S.model\n  A.message -> S.input_value\n  S.structured_output -> C.input_value\n"
    flow = build_flow(spec).flow
    ids = {n["data"]["type"]: n["id"] for n in flow["data"]["nodes"]}

    def failed(node_type: str) -> FlowRun:
        failure = RunFailure(kind="code", node_id=ids[node_type], node=node_type, error="TypeError: no", origin="lfx")
        stub = Stubbed(node=ids["LanguageModelComponent"], name="M", reason="a model")
        return FlowRun.failed("The flow failed.", failure=failure, stubbed=[stub])

    sound = FlowReport(is_valid=True)
    assert with_probe(sound, flow, failed("StructuredOutput")).verdict == "sound"
    assert with_probe(sound, flow, failed("ChatOutput")).verdict == "broken"  # the control
