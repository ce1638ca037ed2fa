"""Hostile files in the data folder, through the doors a user opens: ``%assist history``,
``%%assist --session`` then ``%assist undo``, the panel (opening it, its session list, switching
to a stored session, Undo) and an ``Assistant`` on a stored session.

A FIFO (a naive reader blocks forever), a link to ``/dev/zero`` (a naive reader fills memory), a
restore point whose ``version`` is ``"two"`` (Undo raised ``ValueError``), a ``panel.json``
holding ``[]`` (opening the panel raised ``AttributeError``), and every field of a stored
session, restore point and panel preferences set to each wrong JSON type: each is set aside with
one warning line, and the valid sessions next to it are still listed and still work. Each door
runs with a deadline (a thread, or a child process with a memory watch), so a regression fails
the test instead of hanging it or exhausting the machine; each attack has a control proving it
is live.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from _support.components import intent

from lfassist_jupyter.core.session import Session, SessionStore, Turn

GOOD_ID = "agentic_good"
FLOW_A = {"name": "Echo", "data": {"nodes": [], "edges": []}}
FLOW_B = {"name": "Shout", "data": {"nodes": [], "edges": []}}
DEADLINE = 60.0
"""Seconds a door may take here (the machine may be loaded); a blocked read never ends."""


def _flow_session(directory: Path, session_id: str = GOOD_ID) -> dict:
    """A stored conversation with two flow versions (so one restore point), as the engine writes it."""
    session = Session(id=session_id)
    session.add(Turn(role="user", content="a flow that echoes"), window=5)
    session.add(Turn("assistant", "nodes: [echo]\n", kind="flow", flow=FLOW_A, validated=True), window=5)
    session.add(Turn(role="user", content="shout instead"), window=5)
    session.add(Turn("assistant", "nodes: [shout]\n", kind="flow", flow=FLOW_B, validated=True), window=5)
    SessionStore(directory).save(session)
    return session.to_json()


def _release(fifo: Path) -> None:
    """Give a reader blocked on ``fifo`` its end of file (so a failed test leaves no stuck thread)."""
    for path in (fifo, *fifo.parent.glob(fifo.name + ".corrupt-*")):
        with contextlib.suppress(OSError):  # no reader waiting: nothing to release
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def bounded(door, *, seconds: float = DEADLINE, fifo: Path | None = None):
    """``door()`` in a thread that must finish within ``seconds``: a hang fails, never blocks the run."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = door()
        except BaseException as exc:  # re-raised on the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            _release(fifo)
        pytest.fail(f"the door was still blocked after {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def set_aside_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "set aside" in r.getMessage() or "ignored" in r.getMessage()]


def _use_data_dir(shell, data: Path, sandbox) -> None:
    from lfassist_jupyter.ui.workspace import Workspace

    shell.magics_manager.registry["AssistMagics"].workspace = Workspace(data_dir=data, local_validator=sandbox)


# -- a FIFO -----------------------------------------------------------------------------------


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def test_a_naive_read_of_the_fifo_blocks(tmp_path):
    """The control: the FIFO is a real trap for a reader that does not look first."""
    fifo = _fifo(tmp_path / "agentic_fifo.json")
    reader = threading.Thread(target=fifo.read_text, daemon=True)
    reader.start()
    reader.join(0.5)
    assert reader.is_alive()
    _release(fifo)
    reader.join(5)
    assert not reader.is_alive()


def test_history_and_undo_with_a_fifo_for_a_session(ip, llm, sandbox, tmp_path, capsys, caplog):
    data = tmp_path / "data"
    _flow_session(data / "sessions")
    fifo = _fifo(data / "sessions" / "agentic_fifo.json")
    _use_data_dir(ip, data, sandbox)
    caplog.set_level(logging.WARNING, "lfassist_jupyter")

    bounded(lambda: ip.run_line_magic("assist", "history"), fifo=fifo)
    out = capsys.readouterr().out
    assert GOOD_ID in out and "agentic_fifo" not in out
    aside = data / "sessions" / "agentic_fifo.json.corrupt-1"
    assert stat.S_ISFIFO(os.lstat(aside).st_mode) and not fifo.exists()  # kept for the user, unread
    assert set_aside_lines(caplog) == [
        "Session file agentic_fifo.json could not be read (UnsafeFile: a FIFO); it was set aside as "
        "agentic_fifo.json.corrupt-1."
    ]

    # The same session by name: it starts fresh, and undo says there is nothing to undo.
    fifo = _fifo(data / "sessions" / "agentic_fifo.json")
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph of components.")
    result = bounded(
        lambda: ip.run_cell_magic("assist", "--session fifo --no-insert --quiet", "What is a flow?"), fifo=fifo
    )
    assert result.status == "complete" and "graph of components" in result.result
    bounded(lambda: ip.run_line_magic("assist", "undo"), fifo=fifo)
    assert "Nothing to undo" in capsys.readouterr().out


def test_the_panel_opens_and_undoes_next_to_fifos(llm, monkeypatch, sandbox, tmp_path, caplog):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-hostile-files-0123456789")
    _flow_session(tmp_path / "sessions")
    prefs = _fifo(tmp_path / "panel.json")
    session_fifo = _fifo(tmp_path / "sessions" / "agentic_fifo.json")
    caplog.set_level(logging.WARNING, "lfassist_jupyter")

    panel = bounded(lambda: ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox)), fifo=prefs)
    _release(session_fifo)
    assert [s["id"] for s in panel.sessions] == [GOOD_ID]
    assert panel.selected_model  # the default model, the preferences being unreadable
    assert len(set_aside_lines(caplog)) == 2
    bounded(lambda: panel.select_model(panel.models[-1]["value"]))  # saving replaces the path, never writes into it
    assert json.loads((tmp_path / "panel.json").read_text()) == {"selected_model": panel.models[-1]["value"]}

    bounded(lambda: panel.switch_session(GOOD_ID))
    assert bounded(panel.undo_flow) is True
    assert "Restored version 1 of 'Echo'" in panel.messages[-2]["text"]


def test_an_assistant_on_a_session_whose_file_is_a_fifo(llm, make_assistant, tmp_path, caplog):
    fifo = _fifo(tmp_path / "s" / "agentic_fifo.json")
    _flow_session(tmp_path / "s")
    assistant = make_assistant("openai", session_store=SessionStore(tmp_path / "s"), session_id="agentic_fifo")
    assert "Nothing to undo" in bounded(assistant.undo, fifo=fifo)
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph of components.")
    result = bounded(lambda: assistant.run("What is a flow?"))
    assert result.status == "complete"
    assert SessionStore(tmp_path / "s").load("agentic_fifo").turns[0].content == "What is a flow?"
    assert [s["id"] for s in SessionStore(tmp_path / "s").list()] == ["agentic_fifo", GOOD_ID]


# -- restore points and panel preferences of the wrong shape -----------------------------------


async def test_undo_of_a_restore_point_whose_version_is_two(llm, make_assistant, tmp_path, caplog):
    good = _flow_session(tmp_path / "s")
    control = make_assistant(session_store=SessionStore(tmp_path / "s"), session_id=GOOD_ID)
    assert "Restored version 1 of 'Echo'" in control.undo()  # the door reaches the restore point
    hostile = copy.deepcopy(good)
    hostile["id"] = "agentic_two"
    hostile["restore_points"][0]["version"] = "two"
    (tmp_path / "s" / "agentic_two.json").write_text(json.dumps(hostile))
    caplog.set_level(logging.WARNING, "lfassist_jupyter")

    assistant = make_assistant(session_store=SessionStore(tmp_path / "s"), session_id="agentic_two")
    assert "Nothing to undo" in assistant.undo()
    assert set_aside_lines(caplog) == [
        "Session file agentic_two.json could not be read (ValidationError at restore_points.0.version: "
        "Input should be a valid integer); it was set aside as agentic_two.json.corrupt-1."
    ]
    assert GOOD_ID in [s["id"] for s in SessionStore(tmp_path / "s").list()]


def test_percent_assist_undo_of_a_restore_point_whose_version_is_two(ip, llm, sandbox, tmp_path, capsys, caplog):
    data = tmp_path / "data"
    hostile = _flow_session(data / "sessions", "agentic_two")
    hostile["restore_points"][0]["version"] = "two"
    (data / "sessions" / "agentic_two.json").write_text(json.dumps(hostile))
    _use_data_dir(ip, data, sandbox)
    caplog.set_level(logging.WARNING, "lfassist_jupyter")
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph of components.")
    assert ip.run_cell_magic("assist", "--session two --no-insert --quiet", "What is a flow?").status == "complete"
    ip.run_line_magic("assist", "undo")
    assert "Nothing to undo" in capsys.readouterr().out
    assert len(set_aside_lines(caplog)) == 1


@pytest.mark.parametrize("prefs", [[], "gpt", 7, None, {"selected_model": ["openai:x"]}, "{not json"])
def test_the_panel_opens_whatever_panel_json_holds(llm, monkeypatch, sandbox, tmp_path, caplog, prefs):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-hostile-files-0123456789")
    _flow_session(tmp_path / "sessions")
    text = prefs if prefs == "{not json" else json.dumps(prefs)
    (tmp_path / "panel.json").write_text(text)
    caplog.set_level(logging.WARNING, "lfassist_jupyter")

    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    assert [s["id"] for s in panel.sessions] == [GOOD_ID] and panel.selected_model
    assert (tmp_path / "panel.json.corrupt-1").read_text() == text
    [line] = set_aside_lines(caplog)
    assert line.startswith("Panel preferences panel.json could not be read (ValidationError")


def test_saved_panel_preferences_are_read_back(llm, monkeypatch, sandbox, tmp_path):
    """The control for the above: a well-formed panel.json is honoured, not set aside."""
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-hostile-files-0123456789")
    first = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    choice = first.models[-1]["value"]
    first.select_model(choice)
    again = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    assert again.selected_model == choice and not list(tmp_path.glob("panel.json.corrupt-*"))


# -- every field, every wrong JSON type ---------------------------------------------------------

JSON_VALUES = {"null": None, "bool": True, "int": 7, "float": 2.5, "str": "text", "list": [], "object": {}}
SESSION_FIELDS = {
    "id": {"str"},
    "title": {"str"},
    "turns": {"list"},
    "summary": {"str"},
    "created": {"null", "int", "float"},
    "updated": {"null", "int", "float"},
    "restore_points": {"list"},
    "flow_version": {"int"},
    "flow_versions": {"int"},
}
TURN_FIELDS = {
    "role": set(),  # "user" or "assistant": no value of another type, nor "text", is a role
    "content": {"str"},
    "kind": {"str"},
    "class_name": {"null", "str"},
    "validated": {"null", "bool"},
    "ts": {"int", "float"},
    "original": {"null", "str"},
    "attempts": {"null", "int"},
    "flow": {"null", "object"},
}
POINT_FIELDS = {"version": {"int"}, "spec": {"str"}, "flow": {"null", "object"}, "validated": {"null", "bool"}}


def _wrong_types() -> list[tuple[str, str]]:
    """(field path, wrong JSON type) for every field of a session, one of its turns and one of its
    restore points, and the whole file."""
    cases = [("", t) for t in JSON_VALUES if t != "object"]
    for prefix, fields in (("", SESSION_FIELDS), ("turns.1.", TURN_FIELDS), ("restore_points.0.", POINT_FIELDS)):
        cases += [(prefix + name, t) for name, ok in fields.items() for t in JSON_VALUES if t not in ok]
    return cases


def _with(data: dict, path: str, value):
    if not path:
        return value
    out = copy.deepcopy(data)
    *parents, last = path.split(".")
    target = out
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    target[last] = value
    return out


WRONG = _wrong_types()


def test_every_field_of_the_wrong_type_is_set_aside_and_the_rest_still_works(ip, sandbox, tmp_path, capsys, caplog):
    data = tmp_path / "data"
    sessions = data / "sessions"
    template = _flow_session(sessions, "agentic_template")
    names = {}
    for n, (path, kind) in enumerate(WRONG):
        name = f"agentic_case{n:03d}"
        body = _with({**template, "id": name}, path, copy.deepcopy(JSON_VALUES[kind]))
        (sessions / f"{name}.json").write_text(json.dumps(body))
        names[name] = (path, kind)
    _use_data_dir(ip, data, sandbox)
    caplog.set_level(logging.WARNING, "lfassist_jupyter")

    bounded(lambda: ip.run_line_magic("assist", "history"))
    out = capsys.readouterr().out
    assert "agentic_template  4 turns" in out  # the valid session: listed, whole
    listed = [name for name in names if name in out]
    assert listed == [], [names[n] for n in listed]  # every wrong type was caught by the schema
    lines = set_aside_lines(caplog)
    assert len(lines) == len(WRONG) and all("\n" not in line for line in lines)
    for name, (path, _kind) in names.items():
        assert (sessions / f"{name}.json.corrupt-1").exists()
        assert any(line.startswith(f"Session file {name}.json could not be read") for line in lines)
        if path:  # the line names the field
            assert any(line.startswith(f"Session file {name}.json") and f" at {path}:" in line for line in lines)
    store = SessionStore(sessions)
    assert [s["id"] for s in store.list()] == ["agentic_template"]
    again = ip.magics_manager.registry["AssistMagics"].workspace.assistant("agentic_template")
    assert "Restored version 1 of 'Echo'" in again.undo()


def test_the_template_of_the_wrong_type_cases_loads():
    """The control: each case differs from a session that loads by its one wrong field."""
    assert len(WRONG) > 60
    assert {path for path, _ in WRONG} >= {"restore_points.0.version", "turns.1.flow", "flow_version", ""}


# -- a link to /dev/zero, in a child process with a memory watch ---------------------------------

CHILD = textwrap.dedent(
    """
    import json, logging, sys
    logging.getLogger("lfassist_jupyter").addHandler(logging.StreamHandler(sys.stderr))
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    shell.run_line_magic("assist", "history")
    result = shell.run_cell_magic("assist", "--session zero --no-insert --quiet", "What is a flow?")
    shell.run_line_magic("assist", "undo")
    from lfassist_jupyter.ui.panel import ChatPanel

    panel = ChatPanel()
    panel.switch_session("agentic_good")
    undone = panel.undo_flow()
    print("RESULT " + json.dumps({"status": result.status, "sessions": [s["id"] for s in panel.sessions],
                                  "undone": undone, "selected": panel.selected_model}))
    """
)
RSS_BOUND_MB = 50
"""How much more memory (peak RSS) the child may use with the hostile files than without."""


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _run_child(data: Path, llm, *, limit_mb: float) -> tuple[str, str, float]:
    """The child's output and its peak RSS; killed past ``limit_mb`` or the deadline."""
    env = {**os.environ, "LFASSIST_DATA_DIR": str(data), "OPENAI_BASE_URL": llm.openai_base_url,
           "OPENAI_API_KEY": "sk-hostile-files-0123456789", "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.communicate()), daemon=True)
    reader.start()
    peak, deadline = 0.0, time.monotonic() + 3 * DEADLINE
    while proc.poll() is None:
        peak = max(peak, _rss_mb(proc.pid))
        if peak > limit_mb or time.monotonic() > deadline:
            proc.kill()
            reader.join(10)
            pytest.fail(f"the child was killed at {peak:.0f} MB after reading the hostile files: {out}")
        time.sleep(0.02)
    reader.join(10)
    stdout, stderr = out
    assert proc.returncode == 0, stderr[-3000:]
    return stdout, stderr, peak


@pytest.mark.skipif(not os.path.exists("/dev/zero") or not Path("/proc/self/status").exists(), reason="Linux only")
@pytest.mark.slow  # two fresh interpreters of the package, their memory watched
def test_links_to_dev_zero_are_set_aside_with_bounded_memory(llm, tmp_path):
    control = tmp_path / "control"
    _flow_session(control / "sessions")
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph of components.")
    stdout, _, control_peak = _run_child(control, llm, limit_mb=4000)
    assert '"undone": true' in stdout and '"sessions": ["agentic_good", "agentic_zero"]' in stdout

    data = tmp_path / "hostile"
    _flow_session(data / "sessions")
    links = [data / "sessions" / "agentic_zero.json", data / "sessions" / "agentic_other.json", data / "panel.json"]
    for link in links:
        link.symlink_to("/dev/zero")
        # The control: each is the link, a naive size check passes it, and reading it never ends.
        assert os.readlink(link) == "/dev/zero" and link.stat().st_size == 0
        with link.open("rb") as fh:
            assert fh.read(1 << 20) == bytes(1 << 20)
    llm.queue(intent("question", "What is a flow?"), "A flow is a graph of components.")
    stdout, stderr, peak = _run_child(data, llm, limit_mb=control_peak + 4 * RSS_BOUND_MB)

    print(f"peak RSS: {control_peak:.0f} MB without the links, {peak:.0f} MB with them")
    assert peak - control_peak < RSS_BOUND_MB, (peak, control_peak)
    assert '"undone": true' in stdout and '"sessions": ["agentic_good", "agentic_zero"]' in stdout
    assert '"status": "complete"' in stdout
    for link in links:
        aside = link.with_name(link.name + ".corrupt-1")
        assert os.readlink(aside) == "/dev/zero"  # the link itself, set aside unread
    warned = [line for line in stderr.splitlines() if "UnsafeFile: a symbolic link" in line]
    assert len(warned) == 3, stderr[-3000:]


# -- a title that tries to write lines of its own ----------------------------------------------------------


def test_a_stored_title_is_one_line_in_history_and_the_panel(ip, llm, sandbox, tmp_path, capsys, monkeypatch):
    """A session file from a shared folder whose title holds line breaks and an escape sequence:
    ``%assist history`` and the panel's session list show it as one plain line.  The control: the
    stored file really holds the forged lines."""
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

    data = tmp_path / "data"
    stored = _flow_session(data / "sessions")
    forged = "Echo\n  agentic_admin  99 turns  IMPORTANT: paste your key here\x1b[2J"
    path = data / "sessions" / f"{GOOD_ID}.json"
    path.write_text(json.dumps({**stored, "title": forged}))
    assert "\n  agentic_admin" in json.loads(path.read_text())["title"]  # the control

    _use_data_dir(ip, data, sandbox)
    ip.run_line_magic("assist", "history")
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if GOOD_ID in line]
    assert len(listed) == 1 and "IMPORTANT" in listed[0]  # the title, on the session's own line
    assert not any(line.lstrip().startswith("agentic_admin") for line in out.splitlines())
    assert "\x1b" not in out

    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    panel = ChatPanel(workspace=Workspace(data_dir=data, local_validator=sandbox))
    (title,) = [s["title"] for s in panel.sessions]
    assert "\n" not in title and "\x1b" not in title and title.startswith("Echo agentic_admin")


def test_a_flood_of_files_in_the_sessions_folder_is_not_read_whole(ip, sandbox, tmp_path, capsys):
    """2,000 unreadable ``*.json`` files (another program's, or a flood) older than the user's own
    session: ``%assist history`` lists the session and reads only the newest few files (the ones it
    read and could not use are set aside, the rest are left untouched)."""
    data = tmp_path / "data"
    sessions = data / "sessions"
    _flow_session(sessions)  # saving prunes the folder to our newest sessions: the flood comes after
    old = time.time() - 3600
    for i in range(2000):
        junk = sessions / f"junk{i:04}.json"
        junk.write_text("not json")
        os.utime(junk, (old, old))
    _use_data_dir(ip, data, sandbox)

    ip.run_line_magic("assist", "history")
    assert GOOD_ID in capsys.readouterr().out
    aside = list(sessions.glob("*.corrupt-*"))
    assert 0 < len(aside) <= 500  # the control: junk was read (and set aside) -- but not 2,000 of it
    assert len(list(sessions.glob("junk*.json"))) >= 1500
