"""The Langflow Assistant where Jupyter AI users already are: its persona in Jupyter AI's chat, and
its tools in Jupyter's own MCP server, in a real JupyterLab (``conftest.py``: the server the
browser tests use) with Jupyter AI installed as the ``jupyter-ai`` extra installs it.

The chat is driven the way its front end drives it: jupyterlab-chat's WebSocket (the chat panel's
wire when no real-time-collaboration provider is on) and Jupyter Events (the persona picker's
list).  The MCP tools are listed and called with the official MCP SDK's client over the Jupyter
MCP server's streamable HTTP endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from _support.components import GOOD, QA_SPEC, WRONG_IMPORT, fenced, intent
from _support.fakellm import Reply
from _support.jupyterlab import KEY, PERSONA_ID, TOKEN, ChatClient, mcp_url, server_modules

pytestmark = pytest.mark.slow  # a JupyterLab, its sandbox and a generation

CARD = "**UppercaseComponent** ✓ validated"


@pytest.fixture(scope="module")
def chat(lab):
    url, root = lab
    client = ChatClient(url, "persona.chat", root)
    yield client
    client.close()


def test_the_persona_is_listed_and_streams_a_validated_component_card(chat, lab, llm_server):
    _, root = lab
    listed = {p["id"]: p["name"] for p in chat.personas()}
    assert listed.get(PERSONA_ID) == "Langflow Assistant", listed

    slow = {"chunk": 40, "delay": 0.02}
    llm_server.queue(
        intent("generate_component", "a component that uppercases text"),
        Reply(fenced(WRONG_IMPORT), **slow),
        Reply(fenced(GOOD), **slow),
    )
    chat.send("a component that uppercases text")
    card = chat.reply(lambda body: CARD in body)["body"]

    # The card: the verdict after two attempts, the ports, the code in a block the chat's toolbar inserts.
    assert "2 attempts" in card and "**Inputs:** input\\_text" in card and "**Outputs:**" in card
    assert "```python\n" + GOOD.strip() in card
    assert "Insert the code into your notebook: *Insert below active cell* on the code block's toolbar" in card
    assert "/register" not in card  # no LANGFLOW_URL: no Register
    # Streamed before it, in the same message: the steps as they went by, the failed first attempt too.
    streamed = [body for _, body in chat.bodies() if CARD not in body]
    assert streamed[0].startswith("… Generating component (attempt 1 of 3)"), streamed[:3]
    assert any("✗ Validation failed: " in body and "LangflowComponent" in body for body in streamed), streamed
    assert any("… Retrying (attempt 2 of 3)" in body for body in streamed), streamed
    ids = {m["id"] for m in chat.messages.values() if m["sender"] == PERSONA_ID}
    assert len(ids) == 1  # one message, rewritten: not one per step

    # The same workspace: the chat's conversation is a stored session of the data directory the
    # kernels use, which a notebook's `%%assist --session chat-<id>` continues.
    sessions = list((root / ".data" / "sessions").glob("agentic_chat-*.json"))
    assert len(sessions) == 1 and "UppercaseComponent" in sessions[0].read_text()
    # The server built and ran the component only in its sandbox: it never imported lfx. The
    # control: these are the modules of the process the persona answered from.
    modules = asyncio.run(server_modules(root))
    assert {"lfassist_jupyter.jupyter_ai.persona", "lfassist_jupyter.sandbox.client"} <= modules
    assert not {m for m in modules if m == "lfx" or m.startswith("lfx.")}


CHROMIUM = os.environ.get("LFASSIST_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
INSERT = "button[aria-label='Insert below active cell']:not([disabled]):visible"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"Debian's chromium is not installed at {CHROMIUM}")
def test_insert_on_the_chat_s_code_toolbar_writes_the_code_into_the_notebook(lab, llm_server):
    """The card's Insert is Jupyter AI's own: the code block's toolbar (jupyterlab-chat's *Insert below
    active cell*), which is enabled only while a notebook with an active cell is visible beside the
    chat.  In chromium: the notebook open with its cell active, the chat opened in the chat side
    panel, the button clicked; the notebook, saved, holds the card's code exactly as generated."""
    import nbformat
    from playwright.sync_api import sync_playwright

    url, root = lab
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell("# the user's first cell")]
    nbformat.write(notebook, str(root / "inserted.ipynb"))
    client = ChatClient(url, "inserted.chat", root)
    try:
        llm_server.queue(intent("generate_component", "a component that uppercases text"), Reply(fenced(GOOD)))
        client.send("a component that uppercases text")
        assert "```python\n" + GOOD.strip() in client.reply(lambda body: "✓ validated" in body)["body"]
    finally:
        client.close()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            page.goto(f"{url}/lab/tree/inserted.ipynb?token={TOKEN}")
            page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
            with contextlib.suppress(Exception):  # a kernel-selection dialog, if JupyterLab asks anyway
                page.wait_for_selector(".jp-Dialog", timeout=3_000)
                page.click(".jp-Dialog .jp-mod-accept")
            page.click(".jp-Notebook .jp-Cell .cm-content")  # its cell is the active cell
            side = ".jp-SideBar .lm-TabBar-tab[data-id='JupyterlabChat:sidepanel']"
            if "lm-mod-current" not in (page.get_attribute(side, "class") or ""):  # the layout JupyterLab restored
                page.click(side)
            panel = page.locator("[id='JupyterlabChat:sidepanel']")
            panel.get_by_text("inserted", exact=True).click()  # "Open an existing chat"
            # The control: before the click, the notebook has only the user's cell.
            page.wait_for_selector(INSERT, timeout=60_000)
            assert page.eval_on_selector_all(".jp-Notebook .jp-Cell", "els => els.length") == 1
            page.click(INSERT)
            page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-Cell').length === 2", timeout=30_000)
            page.click(".jp-Notebook .jp-Cell .cm-content")
            page.keyboard.press("Control+s")
            page.wait_for_function(  # saved: the tab's dirty mark is gone
                "!document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')", timeout=30_000
            )
        finally:
            browser.close()
    cells = nbformat.read(str(root / "inserted.ipynb"), as_version=4).cells
    assert [c.source for c in cells] == ["# the user's first cell", GOOD.strip()]
    assert [c.cell_type for c in cells] == ["code", "code"]


class _Images(http.server.BaseHTTPRequestHandler):
    """Where a model's image would be fetched from: records every path asked for."""

    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def images():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, _Images.hits
    server.shutdown()


def test_an_answer_streams_as_it_is_written_and_a_model_image_is_never_an_image(chat, lab, llm_server, images):
    """A question's answer streams into the message token batch by token batch; the model's
    Markdown image and raw <img> arrive as a link and as text (``chat_markdown``), so no front end
    fetches them; the server's key, echoed by the model, reaches neither a message nor the chat file."""
    from markdown_it import MarkdownIt

    _, root = lab
    port, _ = images
    said = f"Langflow builds flows with {KEY}. ![chart](http://127.0.0.1:{port}/leak.png) <img src=http://127.0.0.1:{port}/raw.png>\n\n"
    llm_server.queue(intent("question"), Reply(said + "More words. " * 60, chunk=12, delay=0.01))
    chat.send("what is Langflow?")
    answer = chat.reply(lambda body: body.count("More words.") == 60)["body"]
    bodies = [body for _, body in chat.bodies() if "Langflow builds flows" in body]
    assert len({b.count("More words.") for b in bodies}) >= 3  # the text grew in several writes
    md = MarkdownIt("commonmark")
    assert any(t.type == "image" for t in md.parseInline(said)[0].children)  # the control: it is an image
    assert "[image: chart]" in answer and "<img" not in answer and "&lt;img" in answer
    assert not any(c.type == "image" for t in md.parse(answer) if t.children for c in t.children)
    # The key the model echoed (the server's OPENAI_API_KEY) is in no message the chat holds.
    assert KEY in said and "Langflow builds flows with ***" in answer.replace("\\*", "*")  # the control: it was sent
    assert not any(KEY in body or KEY[:12] in body for _, body in chat.bodies())
    assert KEY not in (root / "persona.chat").read_text() and KEY not in answer


async def test_jupyter_mcp_server_serves_the_same_tools(lab):
    """The tools of ``python -m lfassist_jupyter.mcp`` in Jupyter's own MCP server: the same names,
    arguments and descriptions, the same gate (no LANGFLOW_URL: no register tools), one-line
    errors, progress, and files written under the Jupyter server's root only."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from lfassist_jupyter.mcp import build_server

    _, root = lab
    stdio = {t.name: t for t in await build_server(root).list_tools()}
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with streamablehttp_client(mcp_url(root)) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        served = {t.name: t for t in (await session.list_tools()).tools}
        ours = {name: served[name] for name in stdio if name in served}
        assert list(ours) == list(stdio) and "register_flow" not in served
        for name, tool in stdio.items():
            assert ours[name].description == tool.description
            assert ours[name].inputSchema["properties"].keys() == tool.inputSchema["properties"].keys()
            assert set(ours[name].inputSchema.get("required", [])) == set(tool.inputSchema.get("required", []))

        bad = await session.call_tool("validate_flow", {"flow": "{not json"})
        assert bad.isError and bad.content[0].text.startswith("flow is not JSON") and "\n" not in bad.content[0].text
        huge = await session.call_tool("build_flow", {"spec": "x" * 100_001})
        assert huge.isError and "at most 100,000 are accepted" in huge.content[0].text

        built = await session.call_tool("build_flow", {"spec": QA_SPEC}, progress_callback=on_progress)
        assert not built.isError, built.content[0].text
        answer = json.loads(built.content[0].text)
        assert answer["ok"] and answer["report"]["is_valid"], answer["errors"]
        assert "Building the flow" in progress and "Flow built" in progress

        saved = await session.call_tool("save_flow", {"flow": answer["flow"], "path": "qa"})
        assert not saved.isError, saved.content[0].text
        assert json.loads(saved.content[0].text)["path"] == str(root / "flows" / "qa.json")
        assert json.loads((root / "flows" / "qa.json").read_text())["data"]["nodes"]
        outside = await session.call_tool("save_flow", {"flow": answer["flow"], "path": "../../escaped"})
        assert outside.isError and f"give a file in {root / 'flows'}" in outside.content[0].text
        assert not (root.parent / "escaped.json").exists()
