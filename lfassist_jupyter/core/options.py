"""How one request is served, given with the request: ``RequestOptions``.

A view used to set these on the ``Assistant`` before a request and put them back after
(``--generate`` flipped ``reuse``; a workspace set ``langflow`` on every hand-out; the MCP server
set ``max_retries``): two views sharing an assistant could see each other's setting.  Now the
assistant's constructor says its defaults and a request says what it wants for itself; nothing is
written on the assistant for one request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lfassist_jupyter.core.component.pipeline import check_max_retries

if TYPE_CHECKING:
    from lfassist_jupyter.langflow.client import LangflowClient


@dataclass(frozen=True)
class RequestOptions:
    """One request's options; a field left ``None`` takes the assistant's default.

    ``max_retries`` is checked here (an integer 0..10, else ``ConfigError``), so a view learns of
    a bad value before anything runs."""

    reuse: bool | None = None
    """Reuse before generate: a component request a built-in lfx component covers is answered with
    that component (no generation call).  False: generate whatever exists (``--generate``)."""
    max_retries: int | None = None
    """Total validation attempts for this request, 0..10 (0: generate once, no validation)."""
    langflow: LangflowClient | None = None
    """The connected Langflow: "run X" finds a flow X stored there too, and a flow request may
    reuse its flows."""

    def __post_init__(self) -> None:
        if self.max_retries is not None:
            object.__setattr__(self, "max_retries", check_max_retries(self.max_retries))

    def over(self, defaults: RequestOptions) -> ResolvedOptions:
        """These options with every field left out taken from ``defaults`` (the assistant's)."""
        reuse = self.reuse if self.reuse is not None else defaults.reuse
        retries = self.max_retries if self.max_retries is not None else defaults.max_retries
        return ResolvedOptions(
            reuse=True if reuse is None else reuse,
            max_retries=check_max_retries(3 if retries is None else retries),
            langflow=self.langflow if self.langflow is not None else defaults.langflow,
        )


@dataclass(frozen=True)
class ResolvedOptions:
    """A request's options with nothing left out: what the assistant serves it with."""

    reuse: bool
    max_retries: int
    langflow: LangflowClient | None
