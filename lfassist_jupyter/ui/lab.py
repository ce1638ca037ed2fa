"""The kernel's one ipylab front end, shared by the docked panel (``ui/dock.py``) and every
``ChatPanel`` (whose Insert button drives JupyterLab's notebook commands through it).

Apart from ``ui/dock.py`` so that the panel and the dock both depend on it and not on each
other: the dock makes panels, panels only need the front end.

ipylab's front-end model answers "lab_ready" when it is created; that answer is a comm message
the kernel reads only after the running cell has finished, so ``when_ready`` queues callbacks
until then.  Front ends without ipylab's front end (Notebook 7 without it, VS Code, Colab) never
answer, and the callbacks never run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _Lab:
    """ipylab's ``JupyterFrontEnd`` (None until first asked for), whether it answered, and what
    waits for its answer."""

    def __init__(self) -> None:
        self.lab: Any = None
        self.ready = False
        self.callbacks: list[Callable[[], None]] = []


_state = _Lab()
_shell_watchers: list[Callable[[dict[str, Any]], None]] = []


def current_shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return get_ipython()


def in_kernel() -> bool:
    """Whether we run in a Jupyter kernel (a front end may show widgets), not a terminal or script."""
    return getattr(current_shell(), "kernel", None) is not None


def frontend() -> Any:
    """The kernel's one ipylab ``JupyterFrontEnd`` (made on first use), or None outside a kernel
    or without ipylab."""
    state = _state
    if state.lab is None and in_kernel():
        try:
            from ipylab import JupyterFrontEnd

            lab = JupyterFrontEnd()
        except Exception:  # ipylab missing or broken: the inline panel still works
            return None
        lab.on_ready(_on_ready)
        lab.shell.observe(_on_shell_widgets, "_widgets")
        state.lab = lab
    return state.lab


def is_ready() -> bool:
    """Whether ipylab's front end has answered (JupyterLab's shell and commands are there)."""
    return _state.ready


def _on_ready() -> None:
    state = _state
    state.ready = True
    callbacks, state.callbacks = state.callbacks, []
    for callback in callbacks:
        callback()


def when_ready(callback: Callable[[], None]) -> None:
    """Call ``callback`` once ipylab's front end has answered (now, when it has)."""
    if _state.ready:
        callback()
    else:
        _state.callbacks.append(callback)


def watch_shell(callback: Callable[[dict[str, Any]], None]) -> None:
    """Call ``callback`` with each change of the widgets ipylab added to JupyterLab's shell."""
    if callback not in _shell_watchers:
        _shell_watchers.append(callback)


def _on_shell_widgets(change: dict[str, Any]) -> None:
    for callback in list(_shell_watchers):
        callback(change)
