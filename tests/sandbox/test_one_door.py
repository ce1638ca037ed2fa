"""One door (issue 19): lfx and a flow's component code never run in the kernel.

Every flow entry point gets hostile content: a component whose real-time refresh (Langflow's
form update, run when a dropdown like ``output_type`` or ``mode`` is set) writes a marker file
with its pid and the value of a secret environment variable. Each test asserts that nothing
ran in the test process (no marker line with its pid, the secret never read); where the code
is meant to run (a custom node's refresh, in the sandbox), its answer in the flow proves it
ran, elsewhere.  Where the code comes as a spec's ``code`` line (issue 30: a spec cannot set a
node's code), it runs nowhere at all.

The two tests in fresh processes (a stored session shown in ``ChatPanel``; every public entry
point in one process) also assert that ``lfx`` was never imported there.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from _support.components import GOOD, intent, plan, spec_reply

from lfassist_jupyter import build_flow, default_catalog, validate_flow

SECRET = "door-secret-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]

HOSTILE = """\
from lfx.custom.custom_component.component import Component
from lfx.io import DropdownInput, MessageTextInput, Output
from lfx.schema.message import Message


class DoorProbe(Component):
    display_name = "Door Probe"
    description = "Echoes its text."
    inputs = [
        MessageTextInput(name="input_text", display_name="Text"),
        DropdownInput(name="mode", display_name="Mode", options=["plain", "loud"], value="plain",
                      real_time_refresh=True),
    ]
    outputs = [Output(name="output", display_name="Output", method="echo")]

    def _where(self):
        import os

        seen = f"{os.getpid()}:{os.environ.get('LFA_DOOR_SECRET', '')}"
        # Where the test's folder can be seen (the kernel), the marker says the code ran there; the
        # sandbox cannot see it (and a write it tried would be refused, which fails the build).
        if os.path.isdir(os.path.dirname(MARKER)):
            with open(MARKER, "a", encoding="utf-8") as fh:
                fh.write(seen + "\\n")
        return seen

    def update_build_config(self, build_config, field_value, field_name=None):
        build_config["door_probe"] = {"type": "str", "value": self._where(), "show": False, "name": "door_probe"}
        return build_config

    def echo(self) -> Message:
        self._where()
        return Message(text=self.input_text)
"""


class Door:
    """The hostile code for one test, and the checks on what it left behind."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker
        self.code = HOSTILE.replace("MARKER", repr(str(marker)))

    def builtin_spec(self, name: str = "Door attack") -> str:
        """A built-in node whose ``code`` the spec replaces, plus a real-time-refresh field."""
        body = textwrap.indent(self.code, "    ")
        return (
            f"name: {name}\nnodes:\n  A: ChatInput\n  X: TypeConverterComponent\n  C: ChatOutput\n"
            "edges:\n  A.message -> X.input_data\n  X.message_output -> C.input_value\n"
            f"config:\n  X.code: |\n{body}\n  X.output_type: Table\n"
        )

    @staticmethod
    def custom_spec(mode: str | None = None) -> str:
        """A flow with the DoorProbe custom node; ``mode`` sets its real-time-refresh field."""
        spec = (
            "name: Door custom\nnodes:\n  A: ChatInput\n  P: DoorProbe\n  C: ChatOutput\n"
            "edges:\n  A.message -> P.input_text\n  P.output -> C.input_value\n"
        )
        return spec + (f"config:\n  P.mode: {mode}\n" if mode else "")

    def custom_flow(self, sandbox) -> dict:
        """Flow JSON carrying the hostile code in a custom node (built behind the door)."""
        catalog = default_catalog(sandbox)
        made = sandbox.component_template(self.code)
        assert made.ok, made
        catalog.add("DoorProbe", made.template)
        built = build_flow(self.custom_spec(), catalog=catalog)
        assert built.flow is not None, built.errors
        return built.flow

    def pids(self) -> set[int]:
        """The pids that ran the hostile code and could write the marker (the sandbox cannot)."""
        if not self.marker.exists():
            return set()
        return {int(line.split(":", 1)[0]) for line in self.marker.read_text().splitlines() if line}

    def assert_contained(self, *pids: int) -> None:
        pids = pids or (os.getpid(),)
        text = self.marker.read_text() if self.marker.exists() else ""
        assert SECRET not in text
        assert not self.pids() & set(pids), text

    @staticmethod
    def seen(flow: dict | None) -> str | None:
        """What the hostile refresh reported from where it ran (``pid:secret``), if it ran."""
        for node in (flow or {}).get("data", {}).get("nodes", []):
            probe = (node["data"].get("node") or {}).get("template", {}).get("door_probe")
            if isinstance(probe, dict):
                return str(probe.get("value"))
        return None

    def assert_never_ran(self, flow: dict | None) -> None:
        """A spec's ``code`` field is refused by the build: the code ran nowhere, not even in the sandbox."""
        assert self.seen(flow) is None and self.pids() == set(), self.marker.read_text()

    def assert_ran_elsewhere(self, flow: dict | None) -> None:
        """The refresh did run (the flow shows it), in another process, without the secret."""
        seen = self.seen(flow)
        assert seen is not None, "the hostile refresh never ran: the test proves nothing"
        pid, secret = seen.split(":", 1)
        assert int(pid) != os.getpid() and secret == ""


@pytest.fixture
def door(tmp_path, monkeypatch, sandbox) -> Door:
    monkeypatch.setenv("LFA_DOOR_SECRET", SECRET)
    return Door(tmp_path / "door-marker")


@pytest.fixture
def door_ip(flow_ip, llm, monkeypatch):
    """A real IPython shell on the session's sandbox, talking to the fake model server."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-one-door-test-0123456789")
    return flow_ip


# -- spec text with a code field, through every flow entry point --------------------------------------


def test_build_flow_runs_the_code_in_the_sandbox_only(door, sandbox):
    catalog = default_catalog(sandbox)
    made = sandbox.component_template(door.code)
    catalog.add("DoorProbe", made.template)
    built = build_flow(door.custom_spec("loud"), catalog=catalog)
    assert built.ok, built.errors
    door.assert_ran_elsewhere(built.flow)
    door.assert_contained()


def test_a_spec_cannot_set_a_nodes_code(door):
    """The code a node runs is its component's: a spec's ``code`` line is an error naming the node,
    and the code runs nowhere (the test above is the control: the same code as a custom node runs)."""
    built = build_flow(door.builtin_spec())
    assert not built.ok
    assert any(e.field == "code" and e.node == "X" and "cannot set a node's code" in e.message for e in built.errors)
    door.assert_never_ran(built.flow)


def test_validate_flow_of_a_spec(door):
    validate_flow(door.builtin_spec())
    door.assert_contained()


def test_run_flow_of_a_spec(door):
    from lfassist_jupyter import run_flow_for_real
    from lfassist_jupyter.errors import ConfigError

    with contextlib.suppress(ConfigError):  # not run (errors, a variable missing): the build went through the door
        run_flow_for_real(door.builtin_spec(), "hello", env={}, timeout=60)
    door.assert_contained()


def test_the_hostile_refresh_writes_its_marker_unconfined(tmp_path):
    """The control for this file: the probe's code, run where nothing confines it, writes the
    marker with its pid and reads the secret, so a marker without this pid means it ran elsewhere."""
    door = Door(tmp_path / "door-marker")
    where = next(f for f in ast.walk(ast.parse(door.code)) if getattr(f, "name", "") == "_where")
    script = f"{ast.unparse(where)}\nprint(_where(None))\n"
    env = {**os.environ, "LFA_DOOR_SECRET": SECRET}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    pid, secret = run.stdout.strip().split(":", 1)
    assert secret == SECRET
    assert door.marker.read_text() == f"{pid}:{SECRET}\n" and door.pids() == {int(pid)}


def test_assist_flow_magic(door, flow_ip):
    flow_ip.run_cell_magic("assist_flow", '--quiet --out door_view --run "hi"', door.builtin_spec())
    view = flow_ip.user_ns["door_view"]
    assert not view.ok and any(e.field == "code" for e in view.report.errors)
    door.assert_never_ran(view.flow)
    door.assert_contained()


def test_assist_flow_load_of_a_spec_file(door, flow_ip, tmp_path):
    (tmp_path / "attack.json").write_text(json.dumps(build_flow(door.builtin_spec()).flow), encoding="utf-8")
    view = flow_ip.run_line_magic("assist", "flow load attack.json")
    assert view.flow is not None
    door.assert_contained()


def test_assistant_load_flow_of_spec_text(door, make_assistant):
    """``Assistant.load_flow`` (what ``%assist flow load`` calls) also takes spec text: built behind the door."""
    flow = make_assistant("openai").load_flow(door.builtin_spec())
    door.assert_never_ran(flow)
    door.assert_contained()


def test_model_reply_with_a_code_field(door, llm, make_assistant):
    spec = door.builtin_spec()
    llm.queue(intent("build_flow"), plan("ChatInput", "TypeConverterComponent", "ChatOutput"), spec_reply(spec))
    result = make_assistant("openai", max_retries=1).run("convert the chat message to a table")
    assert result.kind == "flow" and not result.validated
    door.assert_never_ran(result.flow)
    door.assert_contained()


# -- custom nodes: loaded, served by Langflow, generated earlier ----------------------------------------


def _edit(ip, llm) -> object:
    """A follow-up whose model reply only sets the custom node's dropdown (no code written by anyone)."""
    llm.queue(intent("build_flow"), plan("ChatInput", "DoorProbe", "ChatOutput"), spec_reply(Door.custom_spec("loud")))
    return ip.run_cell_magic("assist", "--quiet", "make the probe loud")


def test_custom_node_edited_after_flow_load(door, door_ip, llm, sandbox, tmp_path):
    (tmp_path / "door.json").write_text(json.dumps(door.custom_flow(sandbox)), encoding="utf-8")
    door_ip.run_line_magic("assist", "flow load door.json")
    door.assert_contained()
    result = _edit(door_ip, llm)
    assert result.kind == "flow"
    door.assert_ran_elsewhere(result.flow)
    door.assert_contained()


def test_flow_from_a_langflow_server(door, door_ip, llm, sandbox):
    flow = {"id": "f-door", "name": "Door custom", **door.custom_flow(sandbox)}

    def langflow(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path == "/api/v1/flows/f-door":
            return httpx.Response(200, json=flow)
        return httpx.Response(404, json={"detail": "not found"})

    from lfassist_jupyter.langflow import LangflowClient

    client = LangflowClient(
        url="http://langflow.test", api_key="lf-0123456789abcdef", transport=httpx.MockTransport(langflow)
    )
    client.version = "1.13.0"
    door_ip.magics_manager.registry["AssistMagics"].workspace.connect(client, server_validation=False)
    door_ip.run_line_magic("assist", "flow load f-door")
    door.assert_contained()
    result = _edit(door_ip, llm)
    door.assert_ran_elsewhere(result.flow)
    door.assert_contained()


def test_generated_component_reused_in_a_flow(door, llm, make_assistant, tmp_path):
    from lfassist_jupyter.core.session import Session, SessionStore, Turn

    store = SessionStore(tmp_path / "sessions")
    session = Session(id="door-session")
    session.turns = [
        Turn(role="user", content="a component that echoes its text"),
        Turn(role="assistant", content=door.code, kind="component", class_name="DoorProbe", validated=True),
    ]
    store.save(session)
    assistant = make_assistant("openai", session_id="door-session", session_store=store, max_retries=1)
    llm.queue(intent("build_flow"), plan("ChatInput", "DoorProbe", "ChatOutput"), spec_reply(Door.custom_spec("loud")))
    result = assistant.run("use it in a chat flow, loud")
    assert result.kind == "flow"
    door.assert_ran_elsewhere(result.flow)
    door.assert_contained()


# -- fresh processes ---------------------------------------------------------------------------------------


def _python(script: str, env: dict[str, str], timeout: float = 600) -> dict:
    """Run ``script`` in a fresh interpreter of this environment; its last stdout line is JSON."""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        cwd=env.get("LFA_DOOR_CWD") or None,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_stored_session_reopened_in_a_new_process_builds_nothing(door, sandbox, tmp_path):
    from lfassist_jupyter.core.session import Session, SessionStore, Turn

    data = tmp_path / "data"
    flow = build_flow(door.builtin_spec()).flow
    session = Session(id="door-stored", title="a flow")
    session.turns = [
        Turn(role="user", content="a flow"),
        Turn(role="assistant", content=door.builtin_spec(), kind="flow", validated=False, flow=flow),
        Turn(role="user", content="another"),
        Turn(role="assistant", content=door.builtin_spec("Spec only"), kind="flow", validated=False),  # an old file
    ]
    SessionStore(data / "sessions").save(session)
    script = textwrap.dedent(
        f"""
        import json, os, sys
        from lfassist_jupyter.ui.panel import ChatPanel
        from lfassist_jupyter.ui.workspace import Workspace
        from lfassist_jupyter.sandbox import use_shared

        panel = ChatPanel(workspace=Workspace(data_dir={str(data)!r}))
        panel.switch_session("door-stored")
        cards = [m for m in panel.messages if m["kind"] == "flow"]
        print(json.dumps({{
            "pid": os.getpid(),
            "cards": [(c.get("flow_name"), bool(c.get("picture_html"))) for c in cards],
            "lfx": "lfx" in sys.modules,
            "sandbox": (made := use_shared(None)) is not None and made.pid is not None,
        }}))
        """
    )
    shown = _python(script, {"LFASSIST_DATA_DIR": str(data)})
    assert shown["cards"] == [["Door attack", True], ["Spec only", False]]  # data shown, nothing rebuilt
    assert shown["lfx"] is False and shown["sandbox"] is False
    door.assert_contained(os.getpid(), shown["pid"])


def test_every_public_entry_point_in_one_process_never_imports_lfx(tmp_path):
    """Both magics, the panel's Python API, validate_flow, build_flow, flow load, a probe run and a
    picture, in one fresh process: lfx is imported by the sandbox's worker only."""
    marker = tmp_path / "door-marker"
    hostile = Door(marker)
    (tmp_path / "spec.txt").write_text(hostile.builtin_spec(), encoding="utf-8")
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import json, os, sys
        from pathlib import Path

        sys.path.insert(0, {str(ROOT / "tests")!r})
        from _support.components import QA_SPEC, intent, plan, spec_reply
        from _support.fakellm import FakeLLM

        llm = FakeLLM().__enter__()
        os.environ["OPENAI_BASE_URL"] = llm.openai_base_url
        os.environ["OPENAI_API_KEY"] = "sk-one-door-test-0123456789"
        from IPython.core.interactiveshell import InteractiveShell

        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "lfassist_jupyter")
        spec = Path("spec.txt").read_text()
        report = ip.run_cell_magic("assist_validate", "", Path("good.py").read_text())
        ip.run_cell_magic("assist_flow", '--quiet --out view --run "hi" --save qa.json', QA_SPEC)
        view = ip.user_ns["view"]
        ip.run_cell_magic("assist_flow", "--quiet", spec)
        loaded = ip.run_line_magic("assist", "flow load qa.json")
        llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(QA_SPEC))
        result = ip.run_cell_magic("assist", "--quiet", "a flow that answers with a prompt")

        from lfassist_jupyter import build_flow, validate_flow
        from lfassist_jupyter import flow_picture
        from lfassist_jupyter.ui.panel import ChatPanel

        built = build_flow(spec)
        checked = validate_flow(spec)
        picture = flow_picture(built.flow)._repr_html_()
        panel = ChatPanel()
        llm.queue(intent("build_flow"), plan("ChatInput", "Prompt Template", "ChatOutput"), spec_reply(QA_SPEC))
        panel.send_prompt("a flow that answers with a prompt")
        panel.wait(300)
        card = panel.messages[-1]
        panel.probe_run(card["id"], "ping").result(120)
        panel.switch_session(panel.session_id)
        print(json.dumps({{
            "pid": os.getpid(),
            "validated_component": bool(report.is_valid),
            "probe": view.run.text,
            "flow_result": bool(result.ok),
            "loaded": loaded.flow is not None,
            "card": card["kind"],
            "panel_run": panel.notice,
            "picture": "<svg" in picture,
            "built": built.flow is not None,
            "checked": checked.node_count,
            "lfx": "lfx" in sys.modules,
            "lfx_modules": sorted(m for m in sys.modules if m == "lfx" or m.startswith("lfx."))[:5],
        }}))
        """
    )
    out = _python(script, {"LFA_DOOR_SECRET": SECRET, "LFA_DOOR_CWD": str(tmp_path)})
    assert out["validated_component"] and out["flow_result"] and out["loaded"] and out["built"]
    assert out["probe"] == "Answer this: hi" and out["card"] == "flow" and out["picture"]
    assert out["panel_run"] == "Probe run on 'ping': 'Answer this: ping'"
    assert out["checked"] == 3
    assert out["lfx"] is False, out["lfx_modules"]
    hostile.assert_contained(out["pid"])


# -- what the kernel accepts from the door -----------------------------------------------------------------


def test_no_lfx_in_the_workers_interpreter_is_one_clear_line(tmp_path):
    """A worker interpreter without lfx: the catalogue and a build say so in one line (no traceback)."""
    import shutil

    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.sandbox.client import SandboxValidator

    python = shutil.which("python3", path="/usr/bin")
    if python is None or subprocess.run([python, "-c", "import lfx"], capture_output=True).returncode == 0:
        pytest.skip("needs a system python3 without lfx")
    validator = SandboxValidator(python=python)
    try:
        with pytest.raises(ConfigError, match="lfx could not be imported") as caught:
            default_catalog(validator)
        assert "\n" not in str(caught.value)
        built = validator.build_flow("nodes:\n  A: ChatInput\n")
        assert built.ok is False and "lfx could not be imported" in str(built.error)
    finally:
        validator.close()


@pytest.mark.parametrize(
    "answer",
    [
        {"ok": True, "z": ["not base64!"]},
        {"ok": True, "z": None},
        {"ok": True},
    ],
)
def test_a_catalogue_that_is_not_one_is_refused(answer, monkeypatch):
    """The kernel checks what comes through the door: a garbled catalogue is a clear error, not data."""
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.sandbox.client import SandboxValidator

    validator = SandboxValidator()
    monkeypatch.setattr(validator, "_call", lambda payload, timeout: (answer, None))
    with pytest.raises(ConfigError, match="no usable flow catalogue"):
        default_catalog(validator)


def test_a_catalogue_of_the_wrong_shape_or_size_is_refused(monkeypatch):
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.sandbox import client as sandbox_module
    from lfassist_jupyter.sandbox.worker.wire import pack

    validator = sandbox_module.SandboxValidator()
    for registry in ({"ChatInput": {"no": "template"}}, [1, 2, 3], {"X" * 500: {"template": {}}}):
        monkeypatch.setattr(validator, "_call", lambda payload, timeout, r=registry: ({"ok": True, "z": pack(r)}, None))
        with pytest.raises(ConfigError, match="no usable flow catalogue"):
            default_catalog(validator)
    monkeypatch.setattr(sandbox_module, "CATALOG_CAP", 1000)  # a zip bomb inflates past the cap
    bomb = {"ChatInput": {"template": {"x": {"value": "a" * 100_000}}}}
    monkeypatch.setattr(validator, "_call", lambda payload, timeout: ({"ok": True, "z": pack(bomb)}, None))
    with pytest.raises(ConfigError, match="larger than"):
        default_catalog(validator)
