"""Live views of long-running magics: one request's steps and tokens (``LiveProgress``), and an
eval run's progress bar (``EvalProgress``).

In a Jupyter front end each is one HTML block updated in place through an IPython display
handle; updates are coalesced to ``UPDATE_INTERVAL`` so a fast token stream never trips Jupyter's
IOPub rate limit, and the final state is always flushed.  In a terminal IPython there is no
in-place update, so the lines are shown one after another; the tokens of a streamed answer go
through ``TerminalEcho``, the one place that prints (see there why).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lfassist_jupyter.core.events import Event

UPDATE_INTERVAL = 0.05  # at most 20 display updates a second: below Jupyter's IOPub rate limit


class TerminalEcho:
    """A request's progress in a terminal: a line per step, and the answer's tokens as they come.

    ``print`` is the right tool here and only here: a token is a fragment of a line, and a
    terminal has neither display handles nor in-place updates, so ``display()`` (which ends
    every output with a newline) would put each token on a line of its own."""

    def line(self, text: str) -> None:
        print(f"· {text}", flush=True)

    def token(self, chunk: str) -> None:
        print(chunk, end="", flush=True)

    def end_tokens(self) -> None:
        print(flush=True)


class LiveProgress:
    """The live view of one request: step lines with attempt counters and streamed tokens.

    ``rich``: an HTML block updated in place (a Jupyter front end); otherwise ``TerminalEcho``.
    ``quiet``: nothing at all."""

    def __init__(self, *, rich: bool, quiet: bool) -> None:
        self.rich = rich
        self.quiet = quiet
        self.lines: list[str] = []
        self.tokens: list[str] = []
        self._echo = None if rich else TerminalEcho()
        self._handle: Any = None
        self._last = 0.0
        self._dirty = False
        self.updates_sent = 0

    def on_event(self, event: Event) -> None:
        if self.quiet:
            return
        if event.event == "progress":
            from lfassist_jupyter.core.events import step_label

            counter = f" ({event.attempt}/{event.max_attempts})" if event.max_attempts > 1 else ""
            line = f"{step_label(event.step, event.reduced_isolation)}{counter}"
            if event.error:
                line += f": {event.error.splitlines()[0][:200]}"
            self.lines.append(line)
            if self._echo:
                self._echo.line(line)
        elif event.event == "token":
            self.tokens.append(event.chunk)
            if self._echo:
                self._echo.token(event.chunk)
        elif self.tokens:
            # The result (the cell's value) shows the whole answer: stop repeating it here.
            if self._echo:
                self._echo.end_tokens()
            else:
                self.tokens = []
        self._dirty = True
        self.refresh(force=event.event in ("complete", "error", "cancelled"))

    def _html(self) -> str:
        import html

        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.lines)
        body = html.escape("".join(self.tokens))
        tokens = f'<div style="white-space:pre-wrap">{body}</div>' if body else ""
        return f'<div style="font-size:12px;opacity:.85"><ul style="margin:2px 0">{items}</ul>{tokens}</div>'

    def refresh(self, *, force: bool = False) -> None:
        if not self.rich or not self._dirty:
            return
        now = time.monotonic()
        if not force and now - self._last < UPDATE_INTERVAL:
            return
        from IPython.display import HTML, display

        if self._handle is None:
            self._handle = display(HTML(self._html()), display_id=True)
        else:
            self._handle.update(HTML(self._html()))
        self.updates_sent += 1
        self._last = now
        self._dirty = False


class EvalProgress:
    """``%assist eval``'s progress: an HTML bar updated in place, or a line per finished case."""

    def __init__(self, *, rich: bool) -> None:
        self.rich = rich
        self._handle: Any = None

    def __call__(self, done: int, total: int, result: Any, case: Any) -> None:
        import html

        from IPython.display import HTML, display

        label = f"running {case.name}" if case is not None else f"{result.name}: {result.status}"
        if not self.rich:
            if result is not None:
                from lfassist_jupyter.ui.render.text import Lines

                display(Lines([f"[{done}/{total}] {label}"]))
            return
        body = HTML(
            f"<progress value='{done}' max='{max(total, 1)}' style='width:240px'></progress> "
            f"<span style='font-size:12px'>{done}/{total} {html.escape(label)}</span>"
        )
        if self._handle is None:
            self._handle = display(body, display_id=True)
        else:
            self._handle.update(body)
