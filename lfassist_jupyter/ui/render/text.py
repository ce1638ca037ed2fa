"""``Lines``: what a magic says in plain text (``%assist status``, ``models``, ``history``, a
registration's outcome...), as a display object.

The magics show it with ``IPython.display.display`` rather than returning it, so it reaches the
cell's output wherever the magic stands in the cell, and return ``value`` (the components listed,
or None) as the cell's value.  Only ``text/plain``: the lines read the same in JupyterLab, a
terminal IPython and a test's captured output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Lines:
    """Text lines to show, and the value the magic returns (None shows nothing)."""

    lines: list[str] = field(default_factory=list)
    value: Any = None

    def __bool__(self) -> bool:
        return bool(self.lines)

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    def show(self) -> Any:
        """Display the lines (when there are any) and give back ``value``."""
        if self.lines:
            from IPython.display import display

            display(self)
        return self.value
