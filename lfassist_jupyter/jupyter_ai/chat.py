"""What the persona writes in Jupyter AI's chat: Markdown bodies made from the assistant's events.

Jupyter AI's chat renders a message's body as Markdown (JupyterLab's renderer), so the persona's
message is Markdown: while a request runs, the steps so far and the model's text as it streams;
at the end, the same card the panel draws (``ui.messages.outcome_message``: a component card, a
flow card or an answer), written out as Markdown.  Every piece of text that is not ours (a
model's reply, a node's name, a validation message, an error) goes in through one of two doors:
``chat_markdown`` (``ui/render/markdown.py``: the one Markdown path, where a model's image is a
link and its raw HTML is text) or ``plain`` (every ASCII punctuation escaped: text, never
syntax).  Code goes in a fenced block no line of it can close, so the chat's code toolbar
(*Insert below active cell*) inserts exactly the code into the active notebook.

Pure formatting: nothing here imports Jupyter AI (the persona module does), so the cards are
tested without a Jupyter server.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.ui.render.markdown import chat_markdown, code_fence

if TYPE_CHECKING:
    from lfassist_jupyter.ui.messages import PanelMessage, ProgressStep

MAX_LIVE_TEXT = 20_000
"""The streamed text a live message shows (its tail): the card replaces it at the end."""

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def plain(text: Any, limit: int = 2_000) -> str:
    """``text`` as Markdown that reads as the text itself: one line, every ASCII punctuation
    character backslash-escaped (CommonMark reads each as itself), so no link, image, emphasis,
    code span or HTML can come from it."""
    line = " ".join(str(text if text is not None else "").split())
    if len(line) > limit:
        line = line[: limit - 1] + "…"
    return _PUNCTUATION.sub(r"\\\1", line)


def progress_line(step: ProgressStep) -> str:
    """One step of the request in flight: a tick when done, a cross when it failed."""
    mark = "✗" if step.failed else ("✓" if step.done else "…")
    attempt = f" (attempt {step.attempt} of {step.max_attempts})" if step.show_attempt else ""
    error = f": {plain(step.error, 300)}" if step.error else ""
    return f"{mark} {plain(step.label)}{attempt}{error}"


def live_body(steps: list[ProgressStep], tokens: list[str] | str) -> str:
    """The message while the request runs: its steps, then the model's text so far (its tail)."""
    text = tokens if isinstance(tokens, str) else "".join(tokens)
    lines = [progress_line(s) for s in steps]
    body = "  \n".join(lines)
    if text.strip():
        tail = text[-MAX_LIVE_TEXT:]
        if tail.count("```") % 2:  # a code block still being written: shown as code, not as prose
            head, _, rest = tail.rpartition("```")
            streamed = "\n\n".join(p for p in (chat_markdown(head), code_fence(rest.partition("\n")[2])) if p)
        else:
            streamed = chat_markdown(tail)
        body = f"{body}\n\n{streamed}" if body else streamed
    return body or "…"


def _fields(title: str, fields: list[dict[str, Any]] | None) -> str:
    if not fields:
        return ""
    items = ", ".join(
        f"{plain(f.get('name'), 80)} ({plain(f.get('type') or '/'.join(f.get('types') or []) or '?', 80)})"
        for f in fields
    )
    return f"**{title}:** {items}"


def _verdict(message: PanelMessage) -> str:
    ok = "✓" if message.validated else "✗"
    attempts = f" · {message.attempts} attempt{'' if message.attempts == 1 else 's'}" if message.attempts else ""
    return f"{ok} {plain(message.badge or '')}{attempts}"


def _actions(message: PanelMessage, *, connected: bool) -> str:
    what = "the flow's cell" if message.kind == "flow" else "the code"
    said = [f"Insert {what} into your notebook: *Insert below active cell* on the code block's toolbar"]
    if message.kind == "flow":
        said.append("`/save` writes it as a Langflow flow file (flows/)")
    if connected:
        said.append("`/register` saves it in your Langflow")
    return " · ".join(said)


def component_card(message: PanelMessage, *, connected: bool = False) -> str:
    """A component card (or a failure card) as Markdown: name, verdict, ports, the code, what
    the repair pass changed, the steps, and what to do with it."""
    parts = [f"**{plain(message.class_name or 'Component')}** {_verdict(message)}"]
    if message.error and not message.validated:
        parts.append(f"**Why:** {plain(message.error, 600)}")
    ports = "  \n".join(p for p in (_fields("Inputs", message.inputs), _fields("Outputs", message.outputs)) if p)
    if ports:
        parts.append(ports)
    parts.append(code_fence(message.code or "", "python"))
    parts += [plain(line.text, 400) for line in message.lines or []]
    return "\n\n".join([*parts, *_footer(message), _actions(message, connected=connected)])


def flow_card(message: PanelMessage, *, connected: bool = False) -> str:
    """A flow card as Markdown: name, verdict, the report and probe-run lines, and the
    re-runnable ``%%assist_flow`` cell (the panel's Insert puts the same cell in the notebook)."""
    parts = [f"**Flow: {plain(message.flow_name or 'Flow')}** {_verdict(message)}"]
    marks = {True: "✓", False: "✗", None: "•"}
    lines = [f"{marks[line.ok]} {plain(line.text, 400)}" for line in message.lines or []]
    if lines:
        parts.append("  \n".join(lines))
    if message.cell:
        parts.append(code_fence(message.cell, "python"))
        parts.append("*The cell runs with the extension loaded: `%load_ext lfassist_jupyter`.*")
    return "\n\n".join([*parts, *_footer(message), _actions(message, connected=connected)])


def answer_card(message: PanelMessage) -> str:
    """An answer: the model's Markdown through the one Markdown path."""
    return "\n\n".join([chat_markdown(message.text or ""), *_footer(message)])


def _footer(message: PanelMessage) -> list[str]:
    out = []
    if message.steps:
        out.append("*Steps: " + " → ".join(plain(s, 120) for s in message.steps) + "*")
    out += [f"*Note: {plain(note, 400)}*" for note in message.notes or []]
    if message.usage:
        out.append(f"*{plain(message.usage, 300)}*")
    return out


def card(message: PanelMessage, *, connected: bool = False) -> str:
    """The Markdown of any card the assistant answers with (``outcome_message``'s kinds)."""
    if message.kind == "flow":
        return flow_card(message, connected=connected)
    if message.kind in ("component", "failure"):
        return component_card(message, connected=connected)
    if message.kind in ("error", "cancelled"):
        said = message.note or "Request cancelled" if message.kind == "cancelled" else "Error"
        text = f"\n\n{chat_markdown(message.text)}" if message.text else ""
        return f"**{plain(said)}**{text}" + "".join(f"\n\n{p}" for p in _footer(message))
    return answer_card(message)
