"""Zero-call repairs: a first reply with a mechanical mistake validates without a second model
call, the changes are listed (result, events, cards); a mistake with two possible fixes goes to
the model with the original error; the pass never touches code that validates; and the user's
door, ``%%assist_validate --fix``."""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path

import pytest
from _support.components import GOOD, fenced, intent
from _support.display import html_of, text_of
from _support.mistakes import REPAIRABLE, TO_MODEL

from lfassist_jupyter.core.component.repair import repair_component, unprompted_changes
from lfassist_jupyter.core.events import STEP_LABELS
from lfassist_jupyter.validation.report import Finding, ValidationReport


def generation_calls(llm) -> int:
    """Requests that reached the fake model server, minus the intent classifier's."""
    return len(llm.requests) - 1


@pytest.mark.parametrize("name", sorted(REPAIRABLE))
async def test_mistake_is_repaired_without_a_second_model_call(llm, make_assistant, name):
    code, words = REPAIRABLE[name]
    llm.queue(intent("generate_component"), fenced(code))
    result = await make_assistant("openai").arun("a component that uppercases text")

    assert result.validated, result.error
    assert generation_calls(llm) == 1 and llm.pending == 0
    assert result.attempts == 1 and result.usage.model_calls == 2
    assert result.code != code and result.report.is_valid
    changes = "\n".join(result.repairs)
    for word in words:
        assert word in changes, (word, result.repairs)
    # The events carry the same lines, under the "repairing" step the views label.
    repairing = [e for e in result.events if e.event == "progress" and e.step == "repairing"]
    assert repairing and [c for e in repairing for c in e.changes] == result.repairs
    assert result.events[-1].data.repairs == result.repairs
    assert [e.step for e in result.events if e.event == "progress"][-3:] == [
        "validation_failed",
        "repairing",
        "validated",
    ] or name == "two_mistakes"
    # What the user reads shows the changes, and the conversation holds the repaired code.
    assert html.escape("Repaired: " + result.repairs[0]) in html_of(result)
    assert "repaired: " + result.repairs[0] in text_of(result)
    assert result.code in result.result and code not in result.result


async def test_comments_and_layout_survive_the_repair(llm, make_assistant):
    code, _ = REPAIRABLE["str_for_message"]
    llm.queue(intent("generate_component"), fenced(code))
    result = await make_assistant("openai").arun("uppercase component")
    assert result.validated
    assert "        # Uppercase it.\n        return Message(text=text.upper())\n" in result.code
    # Only the repaired line differs.
    before, after = code.splitlines(), result.code.splitlines()
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after, strict=True)) == 1


async def test_two_mistakes_take_two_rounds_and_still_no_model_call(llm, make_assistant):
    code, _ = REPAIRABLE["two_mistakes"]
    llm.queue(intent("generate_component"), fenced(code))
    result = await make_assistant("anthropic").arun("uppercase component with a mode")
    assert result.validated and generation_calls(llm) == 1
    steps = [e.step for e in result.events if e.event == "progress"]
    assert steps.count("repairing") == 2 and steps.count("retrying") == 0


@pytest.mark.parametrize("name", sorted(TO_MODEL))
async def test_no_certain_fix_goes_to_the_model_with_the_original_error(llm, make_assistant, name):
    code = TO_MODEL[name]
    llm.queue(intent("generate_component"), fenced(code), fenced(GOOD))
    result = await make_assistant("openai").arun("uppercase component")

    assert result.validated and result.code == GOOD
    assert generation_calls(llm) == 2 and result.attempts == 2
    assert result.repairs == []
    steps = [e.step for e in result.events if e.event == "progress"]
    assert "repairing" not in steps and "retrying" in steps
    failed = next(e for e in result.events if e.event == "progress" and e.step == "validation_failed")
    retry_prompt = llm.requests[2].last_user
    assert failed.error in retry_prompt and code.strip() in retry_prompt  # the original error and code


async def test_a_repair_that_does_not_validate_falls_through_with_the_original_error(llm, make_assistant):
    # `choices` has a certain fix, but the output then crashes (str has no .text): the model sees
    # the original code and error.
    code, _ = REPAIRABLE["dropdown_choices"]
    broken = code.replace('(self.input_text or "").upper()', "self.input_text.text.upper()")
    llm.queue(intent("generate_component"), fenced(broken), fenced(GOOD))
    result = await make_assistant("openai").arun("uppercase component")

    assert result.validated and result.code == GOOD and generation_calls(llm) == 2 and result.repairs == []
    failed = next(e for e in result.events if e.event == "progress" and e.step == "validation_failed")
    assert "Extra inputs are not permitted" in failed.error and failed.component_code == broken
    assert failed.error in llm.requests[2].last_user and "choices=" in llm.requests[2].last_user


def test_repairing_step_is_labelled_for_every_view():
    from lfassist_jupyter.ui.messages import component_message

    assert STEP_LABELS["repairing"] == "Repairing without a model call"
    card = component_message(code=GOOD, class_name="U", validated=True, attempts=1, repairs=["a change"])
    assert [line.text for line in card.lines] == ["Repaired: a change"]
    assert "lines" not in component_message(code=GOOD, class_name="U", validated=True, attempts=1).to_wire()


# -- never a change to code that validates ------------------------------------------------------

_LFX = importlib.util.find_spec("lfx")
CORPUS = [
    *sorted((Path(_LFX.origin).parent / "components").rglob("*.py")),  # type: ignore[union-attr, arg-type]
    *sorted((Path(__file__).parents[1] / "validation" / "third_party").glob("*.py")),
]


@pytest.mark.slow
def test_repairs_never_change_lfx_builtins_or_third_party_components(sandbox):
    reference = sandbox.reference()
    assert reference and reference.imports["Message"] == "lfx.schema.message"
    assert len(CORPUS) > 200
    changed = {}
    for path in CORPUS:
        if path.name.startswith("_") or path.name == "conftest.py":
            continue
        changes = unprompted_changes(path.read_text(encoding="utf-8"), reference)
        if changes:
            changed[path.name] = changes
    assert changed == {}
    # The check itself finds a mistake when there is one.
    assert unprompted_changes(REPAIRABLE["output_method_typo"][0], reference)


def test_repair_needs_lfx_reference_and_an_error():
    code, _ = REPAIRABLE["dropdown_choices"]
    extra = Finding(severity="error", phase="runtime", rule="build", message="Extra inputs are not permitted")
    assert repair_component(code, ValidationReport(is_valid=False, findings=[extra]), None) is None
    assert repair_component(code, ValidationReport(is_valid=True), {"inputs": []}) is None
    # Unparsable code, a hostile size: no repair and no exception.
    assert repair_component("class (:\n" * 1000, ValidationReport(is_valid=False, findings=[extra]), {}) is None


# -- the user's door: %%assist_validate --fix -------------------------------------------------------


def test_assist_validate_fix_shows_the_repaired_code_and_changes(ip):
    code, _ = REPAIRABLE["output_method_typo"]
    fixed = ip.run_cell_magic("assist_validate", "--fix", code)
    assert fixed.repaired and fixed.report.is_valid
    assert 'method="build_output"' in fixed.code and fixed.code == GOOD
    assert fixed.changes == ["Output `output`: method `build_outputs` (not defined) → `build_output`"]
    shown = html_of(fixed, ip)
    assert "Repaired without a model call (1 change)" in shown and "build_outputs" in shown
    assert "Repaired without a model call" in repr(fixed) and 'method="build_output"' in repr(fixed)
    # A terminal shows the same: the changes, the repaired code, then the report as text.
    terminal = text_of(fixed, ip)
    assert "Repaired without a model call (1 change)" in terminal and 'method="build_output"' in terminal
    assert "UppercaseComponent is valid" in terminal and "ValidationReport(" not in terminal

    # Without --fix the magic still answers with the report of the cell as written.
    assert not ip.run_cell_magic("assist_validate", "", code).is_valid
    # A component that validates: nothing to repair, nothing changed.
    same = ip.run_cell_magic("assist_validate", "--fix", GOOD)
    assert not same.repaired and same.code == GOOD and same.changes == [] and "Nothing to repair" in repr(same)
    # No certain fix: the cell's own report, said plainly.
    stuck = ip.run_cell_magic("assist_validate", "--fix", TO_MODEL["method_two_near_misses"])
    assert not stuck.repaired and not stuck.report.is_valid and "No certain repair" in repr(stuck)
