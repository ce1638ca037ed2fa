"""A folder of flow files as a flow library (``flows/library.py``): listing reads no file, and a file
is read only when it is a regular one, size-capped and flow-shaped -- a FIFO or a link to a device
named like a flow is one line, never a hang. Through the library and ``Assistant.load_flow``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os

import pytest
from _support.components import QA_SPEC, named

from lfassist_jupyter import build_flow
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.flows.library import FolderLibrary


def within(seconds: float, call, *args):
    """``call(*args)`` in a thread, failing the test (not hanging it) past ``seconds``."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(call, *args).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "echo_qa.json").write_text(json.dumps(build_flow(named(QA_SPEC, "Echo QA")).flow))
    (tmp_path / "notes.json").write_text('{"a": 1}')
    (tmp_path / "list.json").write_text('{"data": []}')
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "readme.txt").write_text("not a flow")
    return tmp_path


def test_listing_names_the_regular_json_files_only(folder):
    entries = within(10, asyncio.run, FolderLibrary(folder).alist_flows())
    assert [(e.id, e.name) for e in entries] == [
        ("echo_qa.json", "echo_qa"),
        ("list.json", "list"),
        ("notes.json", "notes"),
    ]


def test_a_flow_file_loads_and_anything_else_is_one_line(folder):
    library = FolderLibrary(folder)
    flow = within(10, asyncio.run, library.aget_flow("echo_qa.json"))
    assert flow["name"] == "Echo QA" and flow["data"]["nodes"]  # control: a real flow loads
    for name, words in [
        ("pipe.json", "not a regular file"),
        ("zero.json", "not a regular file"),
        ("notes.json", "not a Langflow flow"),
        ("list.json", "not a Langflow flow"),
        ("missing.json", "Could not read the flow file"),
    ]:
        with pytest.raises(ConfigError) as caught:
            within(10, asyncio.run, library.aget_flow(name))
        assert words in str(caught.value) and "\n" not in str(caught.value), name


def test_load_flow_of_a_fifo_is_one_line_not_a_hang(folder, make_assistant):
    assistant = make_assistant("openai")
    with pytest.raises(ConfigError, match="not a regular file"):
        within(10, assistant.load_flow, str(folder / "pipe.json"))
    assert assistant.session.last_flow is None
