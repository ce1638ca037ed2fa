"""The one Markdown path for model-written text, and highlighted Python.

A model's answer is untrusted: an image (``![x](http://host/?k=...)``) or raw ``<img>`` in it
would make any front end that renders it fetch a URL with zero clicks, and the panel inserts the
rendered HTML with ``innerHTML``.  Every surface that shows an answer -- the ``%%assist`` card, the
chat panel, a restored session -- renders it here, the same way: markdown-it-py parses it as
CommonMark (so what is a code block is decided by the parser, not by a line scan: a fence
indented four spaces, or one whose info string holds a backtick, is not a fence), raw HTML stays
text, an image becomes a link, and the HTML goes through an allow-list sanitiser (nh3) with no
tag or attribute that loads anything.  No view hands ``text/markdown`` to a front end.

markdown-it-py and nh3 are imported on the first answer drawn, never at ``%load_ext``; pygments
(which IPython already depends on) highlights code.
"""

from __future__ import annotations

import html
from html import escape
from typing import Any

# What rendered answers may contain: markdown's own output and the highlighter's -- no images,
# media, forms, frames, SVG or scripts.  Anything that loads a resource would let a model answer
# call any server with zero clicks.
_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "s", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "span", "div",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "span": {"style"}, "pre": {"style"}, "div": {"class"}, "ol": {"start"}}
_STYLE = {"color", "background-color", "font-style", "font-weight", "line-height"}  # no url(): nothing to fetch


def sanitize(fragment: str) -> str:
    """``fragment`` through the allow-list: only the tags and attributes above, absolute http(s)
    and mailto links (a relative URL would reach the Jupyter server itself), ``rel`` set on each."""
    import nh3

    return nh3.clean(
        fragment,
        tags=_TAGS,
        clean_content_tags={"script", "style"},
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        url_relative="deny",
        link_rel="noopener noreferrer",
        filter_style_properties=_STYLE,
    )


def _parser() -> Any:
    """markdown-it as every surface renders a model's text: CommonMark, raw HTML as text, images as
    links (never loaded), Python code highlighted."""
    from markdown_it import MarkdownIt

    def fence(code: str, lang: str, _attrs: str) -> str:
        return highlight(code) if lang.strip().lower() in ("", "python", "py") else ""

    def image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:  # markdown-it's rule signature
        token = tokens[idx]
        alt = escape(renderer.renderInlineAsText(token.children or [], options, env) or "image")
        src = str(token.attrGet("src") or "")
        if src.lower().startswith(("http://", "https://")):
            return f'<a href="{escape(src, quote=True)}">[image: {alt}]</a>'
        return f"[image: {alt}]"

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": fence})
    md.add_render_rule("image", image)
    return md


def render_markdown(text: str) -> str:
    """Model-written Markdown as safe HTML: raw HTML disabled, images shown as links (never
    loaded), Python code highlighted, and the result through the allow-list sanitiser."""
    return sanitize(_parser().render(text))


def chat_markdown(text: str) -> str:
    """Model-written Markdown for a front end that renders Markdown itself (Jupyter AI's chat),
    as safe as ``render_markdown``: its top-level code blocks stay Markdown code blocks (so the
    chat's code toolbar can insert them into a notebook), everything else is this module's
    sanitised HTML on one line each (an HTML block ends at a blank line: with its newlines as
    ``&#10;``, no text inside it, a nested code block's included, is read as Markdown again).
    A model's image is a link here too, and its raw HTML text."""
    md = _parser()
    tokens = md.parse(text)
    parts: list[str] = []
    run: list[Any] = []

    def flush() -> None:
        if run:
            rendered = sanitize(md.renderer.render(run, md.options, {})).strip()
            if rendered:
                parts.append(rendered.replace("\r", "").replace("\n", "&#10;"))
            run.clear()

    for token in tokens:
        if token.level == 0 and token.type in ("fence", "code_block"):
            flush()
            parts.append(code_fence(token.content, token.info if token.type == "fence" else ""))
        else:
            run.append(token)
    flush()
    return "\n\n".join(parts)


def code_fence(code: str, info: str = "") -> str:
    """``code`` as a Markdown fenced code block that nothing in it can close: the fence is longer
    than any run of backticks in the code; the info string is kept only when it is one plain word."""
    import re

    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    word = info.strip().split()[0] if info.strip() else ""
    lang = word if re.fullmatch(r"[A-Za-z0-9_+.-]{1,20}", word) else ""
    body = code if code.endswith("\n") else code + "\n"
    return f"{fence}{lang}\n{body}{fence}"


def highlight(code: str) -> str:
    """Python code as inline-styled HTML (no stylesheet needed), or escaped <pre> without pygments."""
    try:
        from pygments import highlight as _hl
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        return _hl(code, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    except ImportError:  # pragma: no cover - pygments ships with IPython
        return f"<pre>{html.escape(code)}</pre>"
