"""The chat panel where JupyterLab users look for an assistant: docked in the shell, by ipylab.

``%assist panel`` (and the command palette's "Langflow Assistant: Open") put the kernel's one
docked ``ChatPanel`` in JupyterLab's right sidebar (``--main``: a main-area tab); when it is
open already they focus it.  Closing it only detaches the view: the ``ChatPanel`` lives on in
the kernel, so reopening shows the same conversation.

Why ipylab and not a JupyterLab extension of our own: ipylab is already installed for the
panel's Insert button, and it drives the shell (``Shell.add``) and the command registry
(``CommandRegistry.add_command``, ``CommandPalette.add_item``) from the kernel, so the
package stays a pure-Python wheel with one anywidget bundle.

How the kernel learns that the front end has JupyterLab's shell: ipylab's front-end model
answers "lab_ready" when it is created.  That answer is a comm message, which the kernel can
only read after the running cell has finished; so ``%assist panel`` in the cell that loaded
the extension shows a placeholder, and docks (or falls back to the inline panel, saying why,
once) when the cell is done and the answer came (or did not, within ``READY_WAIT`` seconds).
Front ends without ipylab's front end (Notebook 7 without it, VS Code, Colab) never answer.

Which notebook Insert writes to: the one whose kernel owns the panel.  A small view rendered in
that notebook (the ``%assist panel`` output, or an inline ``ChatPanel``) reports the id of its
``NotebookPanel``; JupyterLab's notebook commands take it as ``widgetId``, so a click in the
sidebar cannot send the code to another notebook.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.ui.lab import current_shell, frontend, in_kernel, is_ready, watch_shell, when_ready

if TYPE_CHECKING:
    from lfassist_jupyter.ui.dock_note import DockNote
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import Workspace

COMMAND_ID = "lfassist:open-assistant"
COMMAND_LABEL = "Langflow Assistant: Open"
PALETTE_CATEGORY = "Langflow Assistant"
TITLE = "Langflow Assistant"
READY_WAIT = 3.0
"""Seconds after the cell ends that ``%assist panel`` waits for ipylab's front end to answer."""
NO_SHELL = (
    "This front end does not offer JupyterLab's shell to the kernel (ipylab's front end did not answer: "
    "Notebook 7 without ipylab, VS Code, Colab...), so the Langflow Assistant opens here, in the cell."
)

_ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">'
    '<path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5'
    'a2 2 0 0 1 2-2zm3 5v2h2V8H7zm4 0v2h2V8h-2zm4 0v2h2V8h-2z"/></svg>'
)


class _Dock:
    """The kernel's docking state: the docked panel and its host, where it is, and what was said
    already (ipylab's front end itself is ``ui/lab.py``'s)."""

    def __init__(self) -> None:
        self.no_shell = False  # ipylab's front end did not answer in time: inline from now on
        self.said_why = False
        self.panel: ChatPanel | None = None
        self.host: Any = None
        self.area: str | None = None  # where the panel was added ("right" | "main"), None when closed
        self.activate_pending = False
        self.notebook_id = ""
        self.command_registered = False
        self.palette: Any = None  # ipylab's CommandPalette, kept alive with the kernel
        self.lock = threading.Lock()


_state = _Dock()
_KERNEL_FALLBACK_ID = uuid.uuid4().hex


def kernel_id() -> str:
    """This kernel's id (from its connection file), which names its docked panel."""
    try:
        from ipykernel.connect import get_connection_file

        return Path(get_connection_file()).stem.removeprefix("kernel-")
    except Exception:
        return _KERNEL_FALLBACK_ID


def dock_id() -> str:
    """The docked panel's widget id in JupyterLab's shell: one per kernel."""
    return f"lfassist-assistant-{kernel_id()[:12]}"


def _on_shell_widgets(change: dict[str, Any]) -> None:
    """ipylab syncs the widgets it added to the shell: ours appears once added (focus it then)
    and disappears when the user closes it."""
    state = _state
    ids = {w.get("id") for w in change["new"] or []}
    if dock_id() in ids:
        if state.activate_pending:
            state.activate_pending = False
            _activate()
    elif state.area is not None and not state.activate_pending:
        state.area = None  # closed by the user: the next open adds it again


watch_shell(_on_shell_widgets)


def _activate() -> None:
    lab = frontend()
    if lab is not None:
        lab.commands.execute("tabsmenu:activate-by-id", {"id": dock_id()})


# -- the command palette ---------------------------------------------------------------------


def register_command() -> None:
    """ "Langflow Assistant: Open" in JupyterLab's command palette, once ipylab's front end answers.

    Called by ``%load_ext`` in a kernel.  ipylab's ``add_command`` refuses an id the front end
    already knows (another kernel, or this one before a restart, registered it), while the front
    end itself replaces such a command: so we send ipylab's message directly, and the palette
    opens the panel of the kernel that registered last."""
    lab = frontend()
    if lab is None:
        return

    def add() -> None:
        if _state.command_registered:
            return
        _state.command_registered = True
        from ipylab.commands import CommandPalette

        commands = lab.commands
        commands._execute_callbacks[COMMAND_ID] = lambda **_args: open_panel()
        commands.send(
            {
                "func": "addCommand",
                "payload": {
                    "id": COMMAND_ID,
                    "caption": "Open the Langflow Assistant's chat panel in the right sidebar",
                    "label": COMMAND_LABEL,
                    "iconClass": "",
                    "icon": None,
                },
            }
        )
        palette = CommandPalette()
        palette.add_item(COMMAND_ID, PALETTE_CATEGORY)
        _state.palette = palette

    when_ready(add)


# -- opening ------------------------------------------------------------------------------------


def _docked_panel(workspace: Workspace | None) -> ChatPanel:
    """The kernel's docked panel: made once, so closing and reopening keeps its conversation
    (a new one only when the extension was reloaded and the workspace changed)."""
    from lfassist_jupyter.ui.panel import ChatPanel
    from lfassist_jupyter.ui.workspace import current_workspace

    state = _state
    workspace = workspace or current_workspace()
    if state.panel is None or state.panel.workspace is not workspace:
        state.panel = ChatPanel(workspace=workspace)
        state.panel.docked = True
        if state.notebook_id:
            state.panel.notebook_id = state.notebook_id
        if state.host is not None:
            state.host.children = [state.panel]
    return state.panel


def _host() -> Any:
    """The ipylab ``Panel`` the shell shows (it carries the tab's title and icon)."""
    state = _state
    if state.host is None:
        from ipylab import Icon, Panel

        host = Panel(children=[state.panel])
        host.title.label = TITLE
        host.title.caption = "Langflow Assistant: build validated Langflow components and flows"
        host.title.icon = Icon(name="lfassist:assistant", svgstr=_ICON_SVG)
        host.layout.height = "100%"
        host.add_class("lfa-dock-host")
        state.host = host
    return state.host


def _dock(area: str) -> None:
    """Add the panel to the shell, or focus it where it is."""
    state = _state
    with state.lock:
        if state.area is not None:
            _activate()
            return
        host = _host()
        args = {"rank": 600} if area == "right" else {"mode": "split-right"}
        frontend().shell.send(
            {
                "func": "add",
                "payload": {
                    "serializedWidget": f"IPY_MODEL_{host.model_id}",
                    "area": area,
                    "args": args,
                    "id": dock_id(),
                },
            }
        )
        state.area = area
        state.activate_pending = True  # focused once the front end says it is there


def _track_notebook(note: DockNote) -> None:
    def update(change: dict[str, Any]) -> None:
        _state.notebook_id = change["new"]
        if _state.panel is not None and change["new"]:
            _state.panel.notebook_id = change["new"]

    note.observe(update, "notebook_id")


def _where(area: str) -> str:
    return (
        "The Langflow Assistant is open in the right sidebar"
        if area == "right"
        else "The Langflow Assistant is open in a tab"
    ) + f" (command palette: {COMMAND_LABEL}; Insert writes into this notebook)."


def _say_why_once() -> str:
    if _state.said_why:
        return ""
    _state.said_why = True
    return NO_SHELL


def open_panel(*, area: str = "right", workspace: Workspace | None = None) -> Any:
    """``%assist panel``: dock the kernel's panel (or focus it) and return the line for the cell.

    Outside a kernel, or where JupyterLab's shell is not available, returns the inline
    ``ChatPanel`` instead, and says why the first time."""
    if area not in ("right", "main"):
        raise ValueError(f"area must be 'right' or 'main', not {area!r}")
    state = _state
    lab = frontend()
    panel = _docked_panel(workspace)
    if lab is None:
        return _inline(panel)
    from lfassist_jupyter.ui.dock_note import DockNote

    if is_ready():
        _dock(area)
        note = DockNote(text=_where(area))
        note.panel = panel  # for scripts: `%assist panel` then `.panel.send_prompt(...)`
        _track_notebook(note)
        return note
    if state.no_shell:
        return _inline(panel)
    return _pending(panel, area)


def _inline(panel: ChatPanel) -> Any:
    """The inline panel, with the reason the first time (not docked: full cell width)."""
    panel.docked = False
    why = _say_why_once() if in_kernel() else ""
    if not why:
        return panel
    import ipywidgets

    from lfassist_jupyter.ui.dock_note import DockNote

    return ipywidgets.VBox([DockNote(text=why), panel])


def _pending(panel: ChatPanel, area: str) -> Any:
    """The cell's output while we wait for ipylab's answer (it arrives after this cell ends):
    a line that becomes "docked", or the inline panel with the reason."""
    import ipywidgets

    from lfassist_jupyter.ui.dock_note import DockNote

    note = DockNote(text="Opening the Langflow Assistant...")
    note.panel = panel
    _track_notebook(note)
    box = ipywidgets.VBox([note])
    box.panel = panel  # for scripts, as on DockNote

    def docked() -> None:
        if box.children[-1] is panel:  # already fell back inline
            return
        _dock(area)
        note.text = _where(area)

    def give_up() -> None:
        if is_ready():
            return
        _state.no_shell = True
        panel.docked = False
        note.text = _say_why_once() or "The Langflow Assistant opens here, in the cell."
        box.children = [note, panel]

    when_ready(docked)
    shell = current_shell()

    def after_cell(*_args: Any) -> None:
        shell.events.unregister("post_run_cell", after_cell)
        timer = threading.Timer(READY_WAIT, give_up)
        timer.daemon = True
        timer.start()

    if shell is not None:
        shell.events.register("post_run_cell", after_cell)
    return box
