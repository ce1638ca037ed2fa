"""The chat panel in a real JupyterLab, in Debian's chromium driven by Playwright.

JupyterLab is started on 127.0.0.1 by the tests (``conftest.py``: one server, shared with the
Jupyter AI tests) with the engine pointed at the local OpenAI-compatible test server.  The test
types a request, watches the progress steps and the component card, inserts the code into the
notebook, stops a long answer mid-stream, switches sessions, saves the notebook and searches it
for the key -- and saves the screenshots the README uses (``make screenshots`` writes them to
docs/screenshots/).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from _support.components import GOOD, ONE_SENTENCE_SPEC, QA_SPEC, WRONG_IMPORT, fenced, intent, named
from _support.fakellm import Reply
from _support.jupyterlab import KEY, TOKEN

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("LFASSIST_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Screenshots go to tests/_artifacts; `make screenshots` refreshes the README's copies in docs/.
_ROOT = Path(__file__).resolve().parents[2]
SHOTS = _ROOT / ("docs/screenshots" if os.environ.get("LFASSIST_UPDATE_SCREENSHOTS") else "tests/_artifacts")

if not Path(CHROMIUM).exists():  # `make test` installs it with apt; elsewhere say why we skip
    pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def notebook(lab):
    """The panel's notebook, in the shared JupyterLab's root (``conftest.py``)."""
    _, root = lab
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("from lfassist_jupyter import ChatPanel\npanel = ChatPanel()\npanel")]
    nbformat.write(nb, str(root / "panel.ipynb"))
    return root / "panel.ipynb"


@pytest.fixture(scope="module")
def page(lab, notebook):
    from playwright.sync_api import sync_playwright

    url, _ = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
        pg = context.new_page()
        pg.goto(f"{url}/lab/tree/panel.ipynb?token={TOKEN}")
        pg.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        with contextlib.suppress(Exception):  # a kernel-selection dialog, if JupyterLab asks anyway
            pg.wait_for_selector(".jp-Dialog", timeout=3_000)
            pg.click(".jp-Dialog .jp-mod-accept")
        pg.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'], .jp-mod-idle", timeout=60_000)
        pg.click(".jp-Cell .cm-content")
        pg.keyboard.press("Control+Enter")
        pg.wait_for_selector(".lfa-panel", timeout=90_000)
        yield pg
        browser.close()


def _cell_texts(page) -> list[str]:
    return page.eval_on_selector_all(".jp-Notebook .jp-Cell .cm-content", "els => els.map(e => e.innerText)")


def test_component_request_progress_card_and_insert(page, llm_server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    slow = {"chunk": 60, "delay": 0.08}  # slow enough to watch the steps go by
    llm_server.queue(
        intent("generate_component", "a component that uppercases text"),
        Reply(fenced(WRONG_IMPORT), **slow),
        Reply(fenced(GOOD), **slow),
    )
    page.fill(".lfa-input", "a component that uppercases text")
    page.press(".lfa-input", "Enter")
    page.wait_for_selector(".lfa-steps >> text=attempt 1 of 3", timeout=30_000)
    page.wait_for_selector(".lfa-steps >> text=attempt 2 of 3", timeout=30_000)
    assert page.locator(".lfa-steps .lfa-done").count() >= 1  # earlier steps ticked off
    assert "null" not in page.inner_text(".lfa-progress")
    page.locator(".lfa-panel").screenshot(path=str(SHOTS / "chat-panel-progress.png"))
    card = page.wait_for_selector(".lfa-card[data-kind='component']", timeout=60_000)
    assert "UppercaseComponent" in card.inner_text() and "validated" in card.inner_text()
    assert "2 attempts" in card.inner_text()
    page.locator(".lfa-panel").screenshot(path=str(SHOTS / "chat-panel.png"))

    before = len(_cell_texts(page))
    page.click("button[aria-label='Insert into notebook']")
    page.wait_for_function(
        "n => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].length > n", arg=before, timeout=20_000
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell .cm-content')]"
        ".some(e => e.innerText.includes('class UppercaseComponent(Component):'))",
        timeout=20_000,
    )
    inserted = [t for t in _cell_texts(page) if "class UppercaseComponent(Component):" in t]
    assert inserted and 'return Message(text=(self.input_text or "").upper())' in inserted[0]
    assert "Inserted UppercaseComponent" in page.inner_text(".lfa-notice")


def test_stop_a_long_answer_mid_stream(page, llm_server):
    llm_server.queue(intent("question"), Reply("streaming word " * 1500, chunk=8, delay=0.01))
    page.fill(".lfa-input", "Explain Langflow in depth")
    page.press(".lfa-input", "Enter")
    page.wait_for_selector(".lfa-streaming", timeout=30_000)
    stop = page.locator("button[aria-label='Stop']")
    assert stop.inner_text() == "Stop"
    stop.click()
    cancelled = page.wait_for_selector("[data-kind='cancelled']", timeout=20_000)
    assert "Request cancelled" in cancelled.inner_text()
    assert page.locator("button[aria-label='Send']").inner_text() == "Send"
    deadline = time.monotonic() + 5
    while not llm_server.requests[-1].disconnected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm_server.requests[-1].disconnected  # the provider stream was really closed


def test_switch_sessions(page, llm_server):
    first_session_cards = page.locator(".lfa-card[data-kind='component']").count()
    assert first_session_cards == 1
    page.click("button[aria-label='New session']")
    page.wait_for_selector(".lfa-empty", timeout=10_000)
    llm_server.queue(intent("question"), "A flow is a graph of components.")
    page.fill(".lfa-input", "What is a flow?")
    page.press(".lfa-input", "Enter")
    page.wait_for_selector(".lfa-md >> text=A flow is a graph of components.", timeout=30_000)
    options = page.eval_on_selector_all("select[aria-label='Session history'] option", "o => o.map(x => x.value)")
    assert len([v for v in options if v]) >= 2  # both sessions are listed
    titles = page.eval_on_selector_all("select[aria-label='Session history'] option", "o => o.map(x => x.textContent)")
    target = options[titles.index(next(t for t in titles if t.startswith("a component that uppercases")))]
    page.select_option("select[aria-label='Session history']", target)
    page.wait_for_selector(".lfa-card[data-kind='component']", timeout=10_000)
    assert "a component that uppercases text" in page.inner_text(".lfa-transcript")


FLOW_SPEC = named(QA_SPEC, "Echo QA")


def test_flow_card_picture_insert_and_run(page, llm_server):
    plan = json.dumps({"components": ["ChatInput", "Prompt Template", "ChatOutput"], "new": []})
    llm_server.queue(intent("build_flow"), plan, f"```yaml\n{FLOW_SPEC}```")
    page.fill(".lfa-input", "a flow that answers with a prompt")
    page.press(".lfa-input", "Enter")
    card = page.wait_for_selector(".lfa-card[data-kind='flow']", timeout=90_000)
    assert "Echo QA" in card.inner_text() and "validated" in card.inner_text()
    texts = page.eval_on_selector_all(
        ".lfa-card[data-kind='flow'] .lfa-picture svg text", "t => t.map(x => x.textContent)"
    )
    assert {"Chat Input", "Prompt Template", "Chat Output", "Message"} <= set(texts)  # the SVG rendered in the DOM
    assert "Flow valid (3 nodes, 2 edges)" in card.inner_text()
    page.locator(".lfa-panel").screenshot(path=str(SHOTS / "chat-panel-flow.png"))
    page.fill(".lfa-probe", "from the browser")
    page.click("button[aria-label='Probe-run the flow']")
    page.wait_for_selector(".lfa-notice >> text=Answer this: from the browser", timeout=60_000)
    before = len(_cell_texts(page))
    page.click("button[aria-label='Insert the flow cell']")
    page.wait_for_function(
        "n => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].length > n", arg=before, timeout=20_000
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell .cm-content')]"
        ".some(e => e.innerText.includes('%%assist_flow'))",
        timeout=20_000,
    )
    inserted = [t for t in _cell_texts(page) if "%%assist_flow" in t]
    assert inserted and "B.template: Answer this: {question}" in inserted[0]


def test_saved_notebook_has_the_panel_state_but_no_secret(page, lab):
    _, root = lab
    page.keyboard.press("Escape")
    page.click(".jp-Notebook")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 20
    saved = ""
    while time.monotonic() < deadline:
        saved = (root / "panel.ipynb").read_text(encoding="utf-8")
        if "application/vnd.jupyter.widget-state+json" in saved:
            break
        time.sleep(0.5)
    assert "application/vnd.jupyter.widget-state+json" in saved  # the widget state was saved...
    assert "UppercaseComponent" in saved  # ...with the transcript in it
    assert KEY not in saved and KEY[:12] not in saved and "OPENAI_API_KEY" not in saved
    shutil.copy(root / "panel.ipynb", root / "saved-copy.ipynb")


# -- the docked panel (same JupyterLab, same notebook and kernel) -------------------------------

DOCKED = "#jp-right-stack .lfa-panel"
DOCK_TAB = ".jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id^='lfassist-assistant-']"


def _palette(page, text: str) -> list[str]:
    """Open JupyterLab's command palette, type ``text``, and return the items it lists."""
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Shift+c")
    page.wait_for_selector(".lm-CommandPalette-input", timeout=10_000)
    page.fill(".lm-CommandPalette-input", text)
    page.wait_for_timeout(300)
    return page.eval_on_selector_all(".lm-CommandPalette-item", "els => els.map(e => e.innerText.trim())")


def test_flow_card_run_for_real_shows_the_plan_asks_then_answers(page, llm_server):
    """The panel's real Run in the browser: the plan and the consent on the card (the key's name, ticked
    because the kernel has it; never its value), then the model's answer as a card of its own."""
    chosen = json.dumps(
        {"components": ["ChatInput", "Prompt Template", "LanguageModelComponent", "ChatOutput"], "new": []}
    )
    llm_server.queue(intent("build_flow"), chosen, f"```yaml\n{ONE_SENTENCE_SPEC}```")
    composer = "textarea[aria-label='Message the assistant']"  # a flow card's run input is an .lfa-input too
    page.fill(composer, "a flow that answers in one sentence with a language model")
    page.press(composer, "Enter")
    page.wait_for_selector(".lfa-card[data-kind='flow'] >> text=One Sentence", timeout=180_000)
    card = page.locator(".lfa-card[data-kind='flow']").last
    card.locator(".lfa-probe").fill("what is Langflow?")
    card.locator("button[aria-label='Run the flow for real']").click()
    consent = page.wait_for_selector(".lfa-consent", timeout=30_000)
    assert "OPENAI_API_KEY" in consent.inner_text() and "from the kernel's environment" in consent.inner_text()
    assert "It may reach:" in consent.inner_text() and "(OPENAI_BASE_URL)" in consent.inner_text()
    assert page.locator(".lfa-consent input[aria-label='Allow OPENAI_API_KEY']").is_checked()
    assert KEY not in page.content()
    page.locator(".lfa-panel").screenshot(path=str(SHOTS / "chat-panel-real-run-plan.png"))
    llm_server.queue(Reply("Langflow is a visual builder for AI flows."))
    page.click("button[aria-label='Run for real now']")
    answer = page.wait_for_selector(".lfa-card[data-kind='run']", timeout=180_000)
    assert "Langflow is a visual builder for AI flows." in answer.inner_text()
    assert "Real run on 'what is Langflow?'" in answer.inner_text()  # the input typed before the plan showed
    assert "variables given: OPENAI_API_KEY" in answer.inner_text()
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert page.locator(".lfa-consent").count() == 0  # the plan closes once the run is done
    # A locator, not the handle: the panel may have redrawn the card since (the handle then detaches).
    page.locator(".lfa-card[data-kind='run']").last.scroll_into_view_if_needed()
    page.locator(".lfa-panel").screenshot(path=str(SHOTS / "chat-panel-real-run.png"))
    assert KEY not in page.content()


def test_assist_panel_docks_the_panel_in_the_right_sidebar(page):
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.last.locator(".cm-content").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below the last one
    page.keyboard.press("Enter")
    page.keyboard.type("%load_ext lfassist_jupyter\n%assist panel")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(DOCKED, timeout=60_000)
    assert page.locator(DOCK_TAB).count() == 1
    assert page.get_attribute(DOCK_TAB, "aria-selected") == "true"  # opened and shown
    page.wait_for_selector(".lfa-docknote >> text=open in the right sidebar", timeout=20_000)
    # Again: the same panel is focused, not a second one.
    page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    page.wait_for_timeout(1500)
    assert page.locator(DOCK_TAB).count() == 1 and page.locator(DOCKED).count() == 1


def test_a_request_in_the_docked_panel_then_insert_writes_below_the_active_cell(page, llm_server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    first = page.locator(".jp-Notebook .jp-Cell").first
    first.locator(".cm-content").click()  # the notebook's active cell: the first one
    page.keyboard.press("Escape")
    before = _cell_texts(page)
    llm_server.queue(intent("generate_component", "a component that uppercases text"), Reply(fenced(GOOD)))
    box = page.locator(f"{DOCKED} .lfa-input").first
    box.click()  # the sidebar has the focus from here on
    box.fill("a component that uppercases text")
    box.press("Enter")
    card = page.wait_for_selector(f"{DOCKED} .lfa-card[data-kind='component']", timeout=60_000)
    assert "UppercaseComponent" in card.inner_text() and "validated" in card.inner_text()
    usage = page.inner_text(f"{DOCKED} .lfa-card[data-kind='component'] .lfa-usage")
    assert "2 model calls" in usage and "tokens" in usage and " s · gpt-4o" in usage
    page.screenshot(path=str(SHOTS / "docked-panel.png"))
    page.click(f"{DOCKED} button[aria-label='Insert into notebook']")
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-Notebook .jp-Cell').length > n", arg=len(before), timeout=20_000
    )
    page.wait_for_function(
        "() => (document.querySelectorAll('.jp-Notebook .jp-Cell')[1]?.innerText || '')"
        ".includes('class UppercaseComponent')",
        timeout=20_000,
    )
    after = _cell_texts(page)
    assert after[0] == before[0] and after[2:] == before[1:]  # right below the active cell, nothing else moved
    assert "Inserted UppercaseComponent" in page.inner_text(f"{DOCKED} .lfa-notice")


def test_palette_command_opens_or_focuses_the_docked_panel(page):
    items = _palette(page, "Langflow Assistant")
    assert [i.split("\n") for i in items] == [["Langflow Assistant: Open", "Alt+Shift+A"]]  # the README's binding
    page.keyboard.press("Escape")
    page.click(DOCK_TAB)  # clicking the current tab collapses the sidebar
    page.wait_for_function("s => !document.querySelector(s)?.checkVisibility()", arg=DOCKED, timeout=10_000)
    _palette(page, "Langflow Assistant: Open")
    page.keyboard.press("Enter")
    page.wait_for_selector(DOCKED, state="visible", timeout=20_000)
    assert page.locator(DOCK_TAB).count() == 1
    # The key binding from the README does the same.
    page.click(DOCK_TAB)
    page.wait_for_function("s => !document.querySelector(s)?.checkVisibility()", arg=DOCKED, timeout=10_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+Shift+A")
    page.wait_for_selector(DOCKED, state="visible", timeout=20_000)


def test_closing_and_reopening_the_docked_panel_keeps_the_conversation(page):
    page.click(DOCK_TAB, button="middle")  # close the tab (Lumino's middle click on a closable tab)
    page.wait_for_selector(DOCK_TAB, state="detached", timeout=10_000)
    assert page.locator(DOCKED).count() == 0
    _palette(page, "Langflow Assistant: Open")
    page.keyboard.press("Enter")
    page.wait_for_selector(DOCKED, state="visible", timeout=20_000)
    transcript = page.inner_text(f"{DOCKED} .lfa-transcript")
    assert "a component that uppercases text" in transcript and "UppercaseComponent" in transcript


def test_insert_after_the_notebook_was_closed_copies_and_says_so(page):
    """Last: it closes the notebook.  The docked view outlives it, but Insert has nowhere to write."""
    page.click(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon")
    with contextlib.suppress(Exception):  # unsaved changes: discard them
        page.click(".jp-Dialog button:has-text('Discard')", timeout=5_000)
    page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=20_000)
    page.evaluate("navigator.clipboard.writeText('')")
    page.click(f"{DOCKED} button[aria-label='Insert into notebook']")
    page.wait_for_selector(f"{DOCKED} .lfa-notice >> text=is not open any more", timeout=10_000)
    assert "copied to the clipboard" in page.inner_text(f"{DOCKED} .lfa-notice")
    assert "class UppercaseComponent(Component):" in page.evaluate("navigator.clipboard.readText()")
