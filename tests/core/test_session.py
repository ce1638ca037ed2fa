"""Conversation memory: window + summary, persistence, pruning, corrupted files."""

from __future__ import annotations

import itertools
import json
import logging

from lfassist_jupyter.core.session import Session, SessionStore, Turn


def test_window_and_running_summary_keep_context_small():
    s = Session("agentic_x")
    for i in range(10):
        s.add(Turn("user", f"request {i}"), window=2)
        s.add(Turn("assistant", f"code {i}", kind="component", class_name=f"C{i}", validated=True), window=2)
    assert len(s.turns) == 4
    assert "request 0" in s.summary and "C0 (validated)" in s.summary
    msgs = s.messages()
    assert msgs[0]["content"].startswith("Summary of our earlier conversation")
    assert msgs[-1]["content"].startswith("```python\ncode 9")
    roles = [m["role"] for m in msgs]
    assert all(a != b for a, b in itertools.pairwise(roles))  # alternating, as providers require


def test_sessions_persist_and_only_ten_are_kept(tmp_path):
    store = SessionStore(tmp_path)
    for i in range(12):
        s = Session(f"agentic_{i:02d}")
        s.add(Turn("user", f"make component {i}"), window=6)
        store.save(s)
    listed = store.list()
    assert len(listed) == 10
    assert store.load("agentic_11").turns[0].content == "make component 11"
    assert store.load("agentic_11").title == "make component 11"
    assert store.delete("agentic_11") and len(store.list()) == 9
    assert not list(tmp_path.glob(".tmp-*"))  # atomic writes leave no temp files


def test_corrupted_session_is_set_aside_with_a_warning(tmp_path, caplog):
    store = SessionStore(tmp_path)
    (tmp_path / "agentic_bad.json").write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="lfassist_jupyter"):
        s = store.load("agentic_bad")
    assert s.turns == [] and s.id == "agentic_bad"
    assert "set aside" in caplog.text
    assert list(tmp_path.glob("agentic_bad.json.corrupt-*"))
    s.add(Turn("user", "fresh start"), window=6)
    store.save(s)
    assert json.loads((tmp_path / "agentic_bad.json").read_text())["turns"][0]["content"] == "fresh start"


def test_session_ids_cannot_escape_the_directory(tmp_path):
    store = SessionStore(tmp_path / "s")
    s = Session("../../etc/passwd")
    store.save(s)
    assert all(p.parent == tmp_path / "s" for p in (tmp_path / "s").iterdir())


def test_a_loaded_flow_survives_a_session_reload(make_assistant, tmp_path):
    """Issue 21: a flow put in the session (``%assist flow load``) is still the flow a follow-up
    edits after the session is read back from disk, as JSON (data, never rebuilt from its spec)."""
    from _support.components import QA_SPEC

    from lfassist_jupyter import build_flow

    store = SessionStore(tmp_path / "sessions")
    flow = build_flow(QA_SPEC).flow
    make_assistant("openai", session_id="agentic_flow", session_store=store).load_flow(flow)

    again = make_assistant("openai", session_id="agentic_flow", session_store=store)
    last = again.session.last_flow
    assert last is not None and last.flow is not None
    assert [n["id"] for n in last.flow["data"]["nodes"]] == [n["id"] for n in flow["data"]["nodes"]]
    assert again.flow_pipeline().current_flow == last.flow  # the next request edits it
