"""Real custom components published by others (tests/validation/third_party/, each with its source URL):
``report.builds`` must equal lfx's own in-process verdict for every one, and every ``is_valid``
rejection of a component that builds must be a listed, real bug."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.ground_truth import Background

from lfassist_jupyter import validate_component

HERE = Path(__file__).parent / "third_party"
FILES = sorted(p for p in HERE.glob("*.py") if p.name != "conftest.py")

GROUND_TRUTH = r"""
import json, sys, warnings
from pathlib import Path
warnings.filterwarnings("ignore")
from lfx.custom.custom_component.component import Component
from lfx.custom.utils import build_custom_component_template

out = {}
for name in sys.argv[1:]:
    try:
        build_custom_component_template(Component(_code=Path(name).read_text(encoding="utf-8")))
        out[Path(name).name] = True
    except BaseException:
        out[Path(name).name] = False
print(json.dumps(out))
"""

# Components that build but are rejected by is_valid, with the rule of the error finding and why.
KNOWN_BUGS: dict[str, str] = {}


@pytest.fixture(scope="module")
def truth_run():
    """lfx's verdict on every file, started in the background (``_support.ground_truth``)."""
    run = Background(GROUND_TRUTH, *map(str, FILES), timeout=300)
    yield run
    run.close()


def test_the_corpus_is_real_third_party_code():
    assert len(FILES) >= 15
    for path in FILES:
        head = path.read_text(encoding="utf-8").splitlines()[0]
        assert head.startswith("# Source: https://github.com/") and "/blob/" in head, path.name
        assert "langflow-ai/langflow" not in head, path.name


@pytest.mark.slow  # the whole third-party corpus, through the sandbox and through lfx itself
def test_builds_agrees_with_lfx_on_third_party_components(sandbox, truth_run):
    reports = {path: validate_component(path.read_text(encoding="utf-8"), validator=sandbox) for path in FILES}
    truth = truth_run.result()  # computed beside the sandbox's reports
    disagreements, rejected = [], {}
    for path, report in reports.items():
        if report.builds is not truth[path.name]:
            disagreements.append(f"{path.name}: lfx builds={truth[path.name]}, we say {report.builds}: {report.error}")
        if truth[path.name] and not report.is_valid:
            errors = [f for f in report.findings if f.severity == "error"]
            rejected[path.name] = (errors[0].rule if errors else None, report.error)
    assert disagreements == [], "\n".join(disagreements)
    assert {name: rule for name, (rule, _) in rejected.items()} == KNOWN_BUGS, "\n".join(
        f"{name}: {error}" for name, (_, error) in rejected.items()
    )
