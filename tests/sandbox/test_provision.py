"""Issue 42: a flow the sandbox's environment cannot judge is judged in one that has what it needs.

A custom node imports a package the sandbox lacks *and* a name that package no longer has: here lfx
stops at the missing package, so the flow is *not judged* (never valid); offline, it stays so, with
the ``%pip install`` line.  With provisioning, the package comes from a wheel folder built in the
test (``UV_FIND_LINKS``, ``UV_OFFLINE``: no network), lfx and the rest from uv's cache; the flow is
judged in that environment, *broken*, naming the name.  The environment is made once per
requirement set and reused, the cache is bounded, and the kernel's environment is unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from _support.components import GOOD
from _support.wheels import make_wheel

from lfassist_jupyter.flows import validate_flow
from lfassist_jupyter.sandbox import provision
from lfassist_jupyter.ui.render.flow import flow_report_text

PACKAGE = "lfa-verdict-probe"
MODULE = "lfa_verdict_probe"


def _flow(sandbox, line: str) -> dict:
    code = GOOD.replace("from lfx.schema.message import Message\n", f"from lfx.schema.message import Message\n{line}\n")
    made = sandbox.component_template(GOOD)
    template = json.loads(json.dumps(made.template))
    template["template"]["code"]["value"] = code
    node = {"id": "Uppercase-p42aa", "type": "genericNode",
            "data": {"id": "Uppercase-p42aa", "type": "CustomComponent", "node": template}}  # fmt: skip
    return {"name": "provisioned", "data": {"nodes": [node], "edges": []}}


def _freeze(python: str) -> str:
    """``pip freeze`` of an interpreter (uv's, which needs no pip in it)."""
    return subprocess.run([sys.executable, "-m", "uv", "pip", "freeze", "--python", python], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip


@pytest.fixture(scope="session")
def wheels(tmp_path_factory):
    """A local wheel folder: the package as it is now, with ``Present`` and without ``Gone``."""
    folder = tmp_path_factory.mktemp("wheels")
    make_wheel(folder, PACKAGE, "2.0", {f"{MODULE}/__init__.py": "Present = 'here'\n"})
    return folder


@pytest.fixture(scope="session")
def envs(tmp_path_factory):
    yield tmp_path_factory.mktemp("envs")
    provision.close_all()


@pytest.fixture
def offline(monkeypatch, envs):
    monkeypatch.setenv("LFASSIST_PROVISION_DIR", str(envs))
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.delenv("UV_FIND_LINKS", raising=False)
    return envs


def test_offline_the_flow_is_not_judged_with_its_pip_line(sandbox, offline, monkeypatch):
    flow = _flow(sandbox, f"from {MODULE} import Gone")
    for said in (None, False, True):  # ask, no, yes: offline, nothing can be built
        report = validate_flow(flow, provision=said)
        assert report.verdict == "not_judged" and not report.is_valid and not report.errors, said
        assert [(p.distribution, p.fix) for p in report.missing_packages] == [(PACKAGE, f"%pip install {PACKAGE}")]
        assert f"%pip install {PACKAGE}" in flow_report_text(report)
        assert "valid" not in flow_report_text(report).splitlines()[0].replace("not judged", "")
    assert report.provision is not None and report.provision.error  # uv's word: it cannot be had offline
    assert PACKAGE in report.provision.error or "offline" in report.provision.error.lower()
    assert not any(p.is_dir() for p in offline.iterdir())  # nothing half-built left behind


@pytest.mark.slow  # builds an environment: lfx from uv's cache, compiled (about a minute)
def test_provisioned_the_flow_is_judged_broken_naming_the_name(sandbox, offline, wheels, monkeypatch):
    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    kernel_before, sandbox_before = _freeze(sys.executable), _freeze(sandbox.python)
    flow = _flow(sandbox, f"from {MODULE} import Gone")

    asked = validate_flow(flow)  # ask: the plan, nothing built
    plan = asked.provision
    assert asked.verdict == "not_judged" and plan is not None and not plan.error, plan
    assert plan.adds == [PACKAGE] and f"{PACKAGE}==2.0" in plan.new and not plan.ready
    assert "--provision" in flow_report_text(asked)

    started = time.monotonic()
    report = validate_flow(flow, provision=True)
    first = time.monotonic() - started
    assert report.verdict == "broken" and not report.is_valid, report
    (error,) = report.errors
    assert "Gone" in error.message and MODULE in error.message and error.node_id == "Uppercase-p42aa"
    assert report.judged_in and str(offline) in report.judged_in and PACKAGE in report.judged_in
    assert f"Judged in {report.judged_in}" in flow_report_text(report)

    # Reused for the same requirements: not built again.
    (env_dir,) = [p for p in offline.iterdir() if p.is_dir()]
    stamp = (env_dir / "lfassist-env.json").stat().st_mtime_ns
    control = validate_flow(_flow(sandbox, f"from {MODULE} import Present"), provision=True)
    assert control.verdict == "sound" and control.is_valid, control  # the name that exists: judged sound
    assert control.judged_in == report.judged_in
    assert (env_dir / "lfassist-env.json").stat().st_mtime_ns == stamp
    assert [p for p in offline.iterdir() if p.is_dir()] == [env_dir]

    # The kernel's environment (and the sandbox's own) is unchanged; the package is only there.
    assert _freeze(sys.executable) == kernel_before and _freeze(sandbox.python) == sandbox_before
    assert f"{PACKAGE}==" not in kernel_before
    assert f"{PACKAGE}==2.0" in _freeze(str(env_dir / "bin" / "python"))
    print(f"first verdict in a new environment {first:.1f} s")


def test_the_cache_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    monkeypatch.setenv("LFASSIST_PROVISION_DIR", str(tmp_path))
    for i, name in enumerate(["old", "mid", "new"]):
        env = tmp_path / name
        (env / "bin").mkdir(parents=True)
        (env / "lfassist-env.json").write_text(json.dumps({"adds": [name], "size_bytes": 400_000_000}))
        (env / ".last-used").write_text("")
        stamp = time.time() - 100 + i
        os.utime(env / ".last-used", (stamp, stamp))
    removed = provision.prune(keep=tmp_path / "old", limit_mb=900)
    assert [p.name for p in removed] == ["mid"] and not (tmp_path / "mid").exists()  # "old" is in use
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "old"]
    # Past the bound, even the most recently used goes; the one in use stays.
    assert [p.name for p in provision.prune(keep=tmp_path / "old", limit_mb=500)] == ["new"]
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "lfassist-env.json").write_text(json.dumps({"size_bytes": 400_000_000}))
    # Control: within the bound nothing goes.
    assert provision.prune(limit_mb=10_000) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["new", "old"]


@pytest.mark.slow  # the environment of the test above (built there, or here)
def test_the_panel_cards_judge_elsewhere_button_judges_it_there(sandbox, offline, wheels, monkeypatch, tmp_path):
    """**Judge elsewhere** on a panel card (the view's message, through ipywidgets' dispatch): the
    card then carries the provisioned environment's verdict and says where it came from."""
    from lfassist_jupyter.core.session import Session, Turn
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    monkeypatch.chdir(tmp_path)
    workspace = Workspace(data_dir=tmp_path / "panel", local_validator=sandbox)
    session = Session(id="lfassist-provision", title="a stale flow")
    spec = "name: provisioned\nnodes:\n  A: ChatInput\n"
    flow = _flow(sandbox, f"from {MODULE} import Gone")
    answer = Turn(role="assistant", content=f"```\n{spec}```\n", kind="flow", validated=None, flow=flow)
    session.turns = [Turn(role="user", content="check it"), answer]
    workspace.store.save(session)
    panel = ChatPanel(workspace=workspace)
    panel.switch_session("lfassist-provision")
    card_id = panel.messages[-1]["id"]
    panel._handle_msg({"content": {"data": {"method": "custom", "content": {"type": "provision_flow", "id": card_id}}},
                       "buffers": []})  # fmt: skip
    deadline = time.monotonic() + 900
    while not panel.notice.startswith(("Judged in", "Still not judged", "Failed")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert panel.notice.startswith("Judged in a provisioned environment") and panel.notice.endswith("broken."), (
        panel.notice
    )
    card = next(m for m in panel.messages if m["id"] == card_id)
    assert card["validated"] is False and card["badge"] == "not validated"
    texts = [line["text"] for line in card["lines"]]
    assert any("Gone" in t and MODULE in t for t in texts) and any(t.startswith("Judged in") for t in texts)
    json.dumps(panel.messages)
