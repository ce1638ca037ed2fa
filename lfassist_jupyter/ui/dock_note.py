"""``DockNote``: the line ``%assist panel`` leaves in the cell (apart from ``ui/dock.py`` so that
``%load_ext``, which registers the palette command, does not import anywidget)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

if TYPE_CHECKING:
    from lfassist_jupyter.ui.panel import ChatPanel

_DOCK_NOTE_ESM = """
export default {
  render({ model, el }) {
    const line = document.createElement("div");
    line.className = "lfa-docknote";
    line.style.cssText = "font-size:12px;color:var(--jp-ui-font-color2,#555);padding:2px 0";
    const show = () => { line.textContent = model.get("text"); };
    model.on("change:text", show);
    show();
    el.append(line);
    // The notebook this output lives in: the kernel's own notebook, where Insert writes.
    const notebook = el.closest(".jp-NotebookPanel");
    if (notebook && notebook.id && model.get("notebook_id") !== notebook.id) {
      model.set("notebook_id", notebook.id);
      model.save_changes();
    }
    return () => model.off("change:text", show);
  },
};
"""


class DockNote(anywidget.AnyWidget):
    """What ``%assist panel`` leaves in the cell: one line saying where the panel is.  Its view
    also tells the kernel which notebook it is in (``notebook_id``), for Insert."""

    _esm = _DOCK_NOTE_ESM
    text = traitlets.Unicode("").tag(sync=True)
    notebook_id = traitlets.Unicode("").tag(sync=True)
    panel: ChatPanel | None = None
    """The docked panel this line is about (not synced)."""

    def __repr__(self) -> str:  # a terminal, or a front end without widgets
        return self.text

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            bundle[0]["text/plain"] = self.text
        elif isinstance(bundle, dict):
            bundle["text/plain"] = self.text
        return bundle
