"""The typed results of the flow functions (pydantic, so events and views can serialise them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field, model_validator

from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.validation.report import MissingPackage

ErrorCode = Literal[
    "spec_syntax",
    "unknown_component",
    "unknown_node",
    "missing_output",
    "missing_input",
    "type_mismatch",
    "cycle",
    "required_input",
    "bad_value",
    "bad_prompt",
    "structure",
    "unsafe_code",
    "retired",
    "run_failure",
]


class FlowSpecError(ConfigError):
    """No usable spec in the text (no fenced block or bare spec with a `nodes:` section)."""


class FlowProblem(BaseModel):
    """One thing that stops the flow from running, with where it is and how to fix it.

    Data in a ``FlowReport``, not an exception (an error *raised* while reading a spec is
    ``FlowSpecError``)."""

    code: ErrorCode
    node: str | None = None
    """The node as the user knows it: the spec id (``B``) or the display name."""
    node_id: str | None = None
    """The node's id in the flow JSON (``Prompt Template-x1Y2z``), when it exists."""
    field: str | None = None
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.node}.{self.field}" if self.node and self.field else (self.node or "flow")
        return f"{where}: {self.message}" + (f" Fix: {self.fix}" if self.fix else "")

    @classmethod
    def missing_port(
        cls, kind: Literal["output", "input"], node: str, node_id: str, port: str, ports: list
    ) -> FlowProblem:
        """An edge names a port the node does not have: the fix lists the ones it has (the
        same wording whether lfx's builder or our validator found it)."""
        return cls(
            code="missing_output" if kind == "output" else "missing_input",
            node=node,
            node_id=node_id,
            field=port,
            message=f"{node} has no {kind} {port!r}.",
            fix=f"Use one of its {kind}s {ports}.",
        )


class Need(BaseModel):
    """Something the user must still provide before a real run; not a wiring error."""

    kind: Literal["model", "secret", "file", "choice", "value", "package", "service", "connection"]
    """``package``: a node needs a package the sandbox's environment lacks (the message has the
    ``%pip install`` line): the flow is not broken, this environment is short of it. ``service``:
    a server the flow talks to (a database, a model host) that a run could not reach.
    ``connection``: a ``connection_ref`` field to choose, or whose connection a run outside Langflow
    reads from a variable not set here (the message names the handle and the variable;
    ``flows/connections.py``)."""
    node: str
    node_id: str | None = None
    field: str
    message: str
    package: str | None = None
    """For a ``package`` need: the distribution to install (the message has its install line)."""


class ModelUse(BaseModel):
    """One model node of a flow and what it calls: the model, its provider, the key's variable."""

    node: str
    model: str
    provider: str
    key_variable: str | None = None
    """The variable the key field names (``MY_SERVICE_KEY``), never a key."""
    key_typed: bool = False
    """A key was typed into the node (shown as such, never its value)."""

    def __str__(self) -> str:
        key = f", key {self.key_variable}" if self.key_variable else (", a key typed in" if self.key_typed else "")
        return f"{self.node} calls {self.model} ({self.provider}){key}"


Verdict = Literal["sound", "broken", "not_judged"]
"""A flow's verdict: ``sound`` (lfx builds it; a run stops only at what the user must provide),
``broken`` (an error names the node and the reason), or ``not_judged`` (this environment lacks
what judging it takes: a package, a provider's bundle; the report names it)."""


class ProvisionPlan(BaseModel):
    """What judging a flow elsewhere takes: a separate environment (lfx and the flow's packages,
    built with uv, cached by requirement set, outside the kernel's environment) -- shown before
    anything is installed (``sandbox.provision``)."""

    adds: list[str] = Field(default_factory=list)
    """The distributions the flow needs that the sandbox's environment lacks."""
    requirements: list[str] = Field(default_factory=list)
    """The environment's whole requirement set (lfx and its bundles pinned as the sandbox has them)."""
    new: list[str] = Field(default_factory=list)
    """Resolved ``name==version`` the sandbox's environment does not have (what gets installed there)."""
    download_bytes: int | None = None
    """The wheels of ``new``, at most (uv's cache may have some)."""
    path: str = ""
    """Where the environment is (or would be) kept."""
    ready: bool = False
    """Already built (a cached environment: nothing to install)."""
    error: str | None = None
    """Why no environment can be made here (offline, a package the index does not have)."""

    def summary(self) -> str:
        """One line for a card: what would be installed, and its size."""
        if self.error:
            return f"Cannot build an environment to judge it here: {self.error}"
        adds = ", ".join(self.adds)
        if self.ready:
            return f"An environment with lfx and {adds} is ready ({self.path})."
        size = f", {self.download_bytes / 1e6:.1f} MB to download at most" if self.download_bytes else ""
        shown = ", ".join(self.new[:8]) + (f" and {len(self.new) - 8} more" if len(self.new) > 8 else "")
        return (
            f"To judge it, a separate environment (lfx and {adds}; the kernel's is not touched) would install "
            f"{len(self.new)} package(s) new to the sandbox ({shown}){size}."
        )


class FlowReport(BaseModel):
    """What `validate_flow` found: errors block the flow; needs are for the user to provide; what
    this environment lacks to judge it (``missing_packages``) makes it *not judged*, never valid."""

    is_valid: bool
    """Judged and sound: no error blocks the flow, and nothing it needs was missing to judge it (the
    same word as ``ValidationReport.is_valid``).  Never true for a flow that was not judged."""
    errors: list[FlowProblem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    needs: list[Need] = Field(default_factory=list)
    models: list[ModelUse] = Field(default_factory=list)
    """What each model node calls (``flows.model_nodes.model_nodes``)."""
    missing_packages: list[MissingPackage] = Field(default_factory=list)
    """Packages the flow needs that the sandbox's environment lacks (lfx's own requirements logic,
    ``flows.packages``): a run fails without them, whatever the wiring."""
    not_judged: list[str] = Field(default_factory=list)
    """Nodes the sandbox gave no verdict on (their code did not load in the time it had, or it could
    not ask lfx), one line each: the flow is not judged, never valid."""
    node_count: int = 0
    edge_count: int = 0
    judged_in: str | None = None
    """Which environment gave the verdict: the sandbox's, or a provisioned one (its path and what it
    adds)."""
    provision: ProvisionPlan | None = None
    """For a flow not judged here: what a separate environment to judge it would install (shown
    before asking), or the one that judged it."""

    @model_validator(mode="after")
    def _never_valid_unjudged(self) -> FlowReport:
        if self.missing_packages or self.not_judged:
            self.is_valid = False
        return self

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented spelling
    @property
    def verdict(self) -> Verdict:
        """``broken`` when an error blocks it, ``not_judged`` when this environment lacks what
        judging it takes (``missing_packages``) or gave no verdict on a node (``not_judged``), else
        ``sound``."""
        unjudged = bool(self.missing_packages or self.not_judged)
        if self.errors or (not self.is_valid and not unjudged):
            return "broken"
        return "not_judged" if unjudged else "sound"

    def feedback(self, limit: int = 5) -> str:
        """The top errors as plain lines, for a repair prompt to a model."""
        return "\n".join(f"- {e}" for e in self.errors[:limit])


class Change(BaseModel):
    """One deterministic repair, shown to the user so nothing changes silently."""

    kind: Literal["port", "component", "value", "quote", "edge", "model"]
    node: str
    field: str | None = None
    before: Any = None
    after: Any = None
    message: str


class BuildResult(BaseModel):
    """The flow built from a spec (even a partial one), and everything that happened on the way."""

    ok: bool
    flow: dict[str, Any] | None = None
    spec: str = ""
    """The spec as built (extracted from the reply, malformed lines dropped, repairs applied)."""
    errors: list[FlowProblem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    node_ids: dict[str, str] = Field(default_factory=dict)
    """Spec id -> flow node id."""


class RepairResult(BaseModel):
    """A repaired copy of a flow and the list of what changed (empty when nothing needed fixing)."""

    flow: dict[str, Any]
    changes: list[Change] = Field(default_factory=list)
