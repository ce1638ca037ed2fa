"""What the sandbox answers, as typed values: the schemas each answer from the zygote is checked
against, and the runs that travel up to the views.

A probe run (``SandboxValidator.probe_run``: models stubbed, no keys, no network) is a
``FlowRun``; a real run (``lfassist_jupyter.run_flow_for_real``: models called with the keys the user
allowed) is a ``RealRun``, a ``FlowRun`` that also says where it ran, with which variables and
which connections the fence refused.  Both travel typed from the sandbox to the views; they become
JSON only at an edge (the ``complete`` event's wire form, a stored session).  A failed run has one
constructor, ``FlowRun.failed`` (``RealRun.failed``, ``ComponentRun.failed``, ``FlowBuild.failed``),
so every layer that must answer "no run" says it the same way.

The few typed *requests* that cross the ``FlowSandbox`` port live here too (``NodeCode``), so the
port and its callers name one type and no ``dict[str, Any]``.

Light on purpose: pydantic and nothing else, so core, flows and the views import these types
without importing the sandbox's process code.  The length caps are for what comes back from a
child that ran untrusted code; the kernel's own values fit them easily.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, Field

CATALOG_CAP = 64 * 1024 * 1024  # the inflated component catalogue (lfx 1.13's is 2 MB)
FLOW_CAP = 64 * 1024 * 1024  # an inflated built flow
CATALOG_MAX_ENTRIES = 5000
_Run = TypeVar("_Run", bound="FlowRun")


# -- runs ---------------------------------------------------------------------------------


class Stubbed(BaseModel):
    """A node the probe run replaced by a deterministic stub (a model, a keyed API), and why."""

    node: str = Field(max_length=200)
    name: str = Field(max_length=200)
    reason: str = Field(max_length=200)


class FlowOutput(BaseModel):
    component: str = Field(default="", max_length=200)
    text: str = ""


class RunNeed(BaseModel):
    """What a run stopped at that the user must provide (not a fault of the flow): a file, a key
    or a service (a server the flow talks to)."""

    kind: Literal["file", "secret", "service"]
    node: str = Field(max_length=300)
    node_id: str | None = Field(default=None, max_length=300)
    field: str | None = Field(default=None, max_length=300)
    message: str = Field(max_length=2000)


class RunFailure(BaseModel):
    """Where a failed probe run stopped, read from lfx's exception in the child that ran it
    (``_probe_run._run_failure``): the node whose build raised, the innermost error, where it was
    raised (``node code``, ``lfx``, ``a library``), and ``kind``: ``code`` when that error is one
    of Python's code errors with nothing of the environment in its chain (no OSError, ImportError,
    timeout; no network tried, nothing refused in the child), else ``environment``.  The child's
    word on its own run: the kernel judges with it only together with the zygote's refusals
    (``FlowRun.sandbox_refusals``), and it can only make that flow look worse."""

    kind: Literal["code", "environment"] = "environment"
    node_id: str | None = Field(default=None, max_length=300)
    node: str | None = Field(default=None, max_length=300)
    error: str = Field(default="", max_length=2000)
    origin: str = Field(default="", max_length=100)


class FlowRun(BaseModel):
    """A probe run's answer: the flow's chat output for one input text, and what was stubbed.

    ``ok`` False carries the reason in ``error`` (the flow failed, or the sandbox could not run
    it); a run never raises.  Build a failed one with ``FlowRun.failed``."""

    ok: bool
    text: str | None = None
    error: str | None = None
    stubbed: list[Stubbed] = Field(default_factory=list, max_length=500)
    outputs: list[FlowOutput] = Field(default_factory=list, max_length=100)
    seconds: float | None = None
    needs: list[RunNeed] = Field(default_factory=list, max_length=100)
    """Filled in the kernel (``flows.needs.run_needs``) when a failed run stopped at a file, a key or
    a service the user must provide: the run did not fail for a fault of the flow."""
    reduced_isolation: str | None = Field(default=None, max_length=500)
    """Why the sandbox that ran this probe run had reduced isolation (no OS-level layer), set by
    the kernel (whatever the child said); None under full isolation."""
    failure: RunFailure | None = None
    """Where a failed probe run stopped and whether it was the flow's code (the child's reading of
    lfx's exception); None for a run that went through or a sandbox that could not run it."""
    sandbox_refusals: int = Field(default=0, ge=0)
    """How many calls the sandbox refused while this run ran, as the zygote recorded them (set by
    the kernel, never the child): a run that met one is never held against the flow."""

    @classmethod
    def failed(cls: type[_Run], error: str, *, stubbed: Iterable[Stubbed] = (), **fields: Any) -> _Run:
        """The one way to say a run did not go through: ``ok`` False with the reason."""
        return cls(ok=False, error=str(error), stubbed=list(stubbed), **fields)

    def require_answer(self, why: str) -> FlowRun:
        """This run, or a failed one when it "succeeded" with no text: an empty answer is not a
        pass (no Chat Output was reached, or a loop body never ran)."""
        if not self.ok or str(self.text or "").strip():
            return self
        return self.failed(why, stubbed=self.stubbed, outputs=self.outputs, seconds=self.seconds)

    def stubbed_names(self) -> str:
        """``"OpenAI (a model), Tavily (an API key)"``: the stubs for a sentence."""
        return ", ".join(f"{s.name or s.node} ({s.reason})" for s in self.stubbed)


class Refused(BaseModel):
    """A connection the real run's network fence refused."""

    host: str
    port: int | None = None
    reason: str = ""
    after_s: float | None = None


class RealRun(FlowRun):
    """A real run's answer (``lfassist_jupyter.run_flow_for_real``): a ``FlowRun`` (nothing is stubbed)
    plus where it ran and what it was given: the names of the variables passed (never their
    values), the allow-list, the connections the fence refused and the isolation."""

    real: Literal[True] = True
    component: str | None = None
    variables: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    refused: list[Refused] = Field(default_factory=list)
    isolation: str = ""


class ComponentRun(BaseModel):
    """What ``run_component`` answers: the first output's text for one input text."""

    ok: bool
    text: str | None = None
    error: str | None = None
    output: str | None = None

    @classmethod
    def failed(cls, error: str) -> ComponentRun:
        return cls(ok=False, error=str(error))


# -- builds -------------------------------------------------------------------------------


class MissingPackage(BaseModel):
    """A package to install: the module that was missing, its distribution, the line to run."""

    module: str = Field(max_length=100, pattern=r"^[A-Za-z0-9_.\- ]+$")
    distribution: str = Field(max_length=100, pattern=r"^[A-Za-z0-9_.\-]+$")
    fix: str = Field(max_length=200)


class Retired(BaseModel):
    """A component lfx retired, in lfx's words (the message names the migration)."""

    component: str = Field(max_length=200)
    message: str = Field(max_length=2000)


class ComponentTemplate(BaseModel):
    """What ``component_template`` answers: the node template lfx built for a component's code
    (the frontend node a flow's custom node carries), or why it built none."""

    ok: bool
    template: dict[str, Any] | None = None
    error: str | None = None
    missing_methods: list[str] = Field(default_factory=list, max_length=50)
    """Of the output methods asked about, those the built component does not have."""
    missing_package: MissingPackage | None = None
    """Why it built none, when that is a package this environment lacks (not the code)."""
    stale_import: str | None = Field(default=None, max_length=200)
    """Why it built none, when that is a module gone from an installed package (code written for
    another version), or the module that no longer has ``stale_name``."""
    stale_name: str | None = Field(default=None, max_length=200)
    """The name ``stale_import`` no longer has (``Qdrant`` of ``langchain_community.vectorstores``)."""
    missing_packages: list[MissingPackage] = Field(default_factory=list, max_length=20)
    """Every distribution the environment lacks for it (a model provider: its bundle and SDK)."""
    provider: str | None = Field(default=None, max_length=200)
    """The model provider missing from lfx's registry, when that is why (``Google Generative AI``)."""
    inactive_provider: str | None = Field(default=None, max_length=200)
    """A provider the code indexes that lfx registers as inactive (``Groq``): lfx fails loading it
    with that provider's ``KeyError`` whatever is installed."""
    retired: Retired | None = None
    """lfx recognised the code as a component it retired: its own message, with the migration."""

    @classmethod
    def failed(cls, error: str, **why: Any) -> ComponentTemplate:
        return cls(ok=False, error=str(error), **why)

    @property
    def judged(self) -> bool:
        """Whether this is lfx's verdict on the code, not the sandbox failing to ask lfx at all
        (unavailable, crashed, out of time: ``NO_VERDICT``)."""
        return self.ok or not str(self.error or "").startswith(NO_VERDICT)


NO_VERDICT = (
    "Runtime validation is unavailable",
    "The validation sandbox",
    "Validation did not finish",
    "Loading the component did not finish in time",
    "Building the component did not finish in time",
)
"""How a sandbox says it could not ask lfx, or that the code's load or build ran out of its time
on a busy machine (the beginning of its error): no verdict on the code."""


class NodeCode(NamedTuple):
    """One node code of a flow to have lfx's verdict on (``FlowSandbox.component_verdicts``)."""

    code: str
    methods: tuple[str, ...] = ()
    """The output methods the node will be asked for (those it lacks are named in the verdict)."""
    naming: dict[str, Any] | None = None
    """What of the node's ``data`` lfx reads to pick the class in the code (its type, the flow
    builder's registry type, the class name in its metadata)."""


class PackageNeeds(BaseModel):
    """What ``FlowSandbox.flow_packages`` answers: the PyPI distributions each built-in component
    type, node code and model provider needs that the sandbox's interpreter lacks (an empty list:
    nothing), for the ones asked."""

    types: dict[str, list[str]] = Field(default_factory=dict)
    codes: dict[str, list[str]] = Field(default_factory=dict)
    providers: dict[str, list[str]] = Field(default_factory=dict)


class BuildProblem(BaseModel):
    """One problem lfx found while building a flow from a spec (data, not an exception)."""

    code: str = Field(max_length=40)
    node: str | None = Field(default=None, max_length=500)
    node_id: str | None = Field(default=None, max_length=500)
    field: str | None = Field(default=None, max_length=500)
    message: str = Field(max_length=20_000)
    fix: str = Field(default="", max_length=20_000)


class BuildChange(BaseModel):
    kind: str = Field(max_length=40)
    node: str = Field(default="", max_length=500)
    field: str | None = Field(default=None, max_length=500)
    before: Any = None
    after: Any = None
    message: str = Field(max_length=2_000)


class FlowBuild(BaseModel):
    """What ``build_flow`` answers: the flow lfx built from a spec, and every problem on the way.

    ``error`` (with ``ok`` False and no flow) is the sandbox's own failure (a timeout, a crash)."""

    ok: bool
    flow: dict[str, Any] | None = None
    spec: str = ""
    errors: list[BuildProblem] = Field(default_factory=list, max_length=5_000)
    warnings: list[str] = Field(default_factory=list, max_length=5_000)
    changes: list[BuildChange] = Field(default_factory=list, max_length=5_000)
    node_ids: dict[str, str] = Field(default_factory=dict)
    error: str | None = None
    refused: list[dict[str, Any]] = Field(default_factory=list, max_length=50)
    """What the sandbox's runtime layer refused during the build, as the zygote read it (not the answer)."""

    @classmethod
    def failed(cls, error: str | None, *, spec: str = "") -> FlowBuild:
        return cls(ok=False, spec=spec, error=error)


# -- facts the zygote computed before any request ----------------------------------------


class ReferenceInput(BaseModel):
    name: str = Field(max_length=80)
    params: list[str] = Field(default_factory=list, max_length=80)
    doc: str = Field(default="", max_length=300)
    fields: list[Annotated[str, Field(max_length=80)]] = Field(default_factory=list, max_length=120)
    """Every keyword the class accepts (the repair pass tells a misspelt keyword from a real one)."""
    family: str = Field(default="", max_length=80)
    """The kind of value it holds (lfx's ``field_type``, ``/secret`` when masked): its siblings."""


_Name = Annotated[str, Field(max_length=120)]


class Reference(BaseModel):
    """The lfx reference for prompts and the repair pass, as the zygote computed it before any fork."""

    lfx_version: str | None = Field(default=None, max_length=40)
    common_params: list[str] = Field(default_factory=list, max_length=40)
    inputs: list[ReferenceInput] = Field(default_factory=list, max_length=300)
    component_attrs: list[Annotated[str, Field(max_length=80)]] = Field(default_factory=list, max_length=1000)
    """Attributes and methods of lfx's ``Component``: names an input must not take."""
    imports: dict[_Name, _Name] = Field(default_factory=dict, max_length=20_000)
    """Public name -> the lfx module it is imported from (lfx.io's exports, the schema types,
    Component, and every name lfx defines in exactly one module)."""
    stdlib_modules: list[_Name] = Field(default_factory=list, max_length=2_000)
    """The standard library's top-level modules, as the sandbox's interpreter lists them."""
    output_types: dict[_Name, _Name] = Field(default_factory=dict, max_length=50)
    """The name an lfx output type goes by -> the class built for it (``JSON`` -> ``Data``)."""


def check_catalog(registry: Any) -> dict[str, dict[str, Any]]:
    """The catalogue's shape: ``{type name: node template with a 'template' dict}``, bounded."""
    if not isinstance(registry, dict) or not registry or len(registry) > CATALOG_MAX_ENTRIES:
        raise ValueError("not a component catalogue")
    for name, entry in registry.items():
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValueError("a catalogue entry has no usable name")
        if not isinstance(entry, dict) or not isinstance(entry.get("template"), dict):
            raise ValueError(f"catalogue entry {name[:80]!r} has no template")
        if not isinstance(entry.get("outputs", []), list):
            raise ValueError(f"catalogue entry {name[:80]!r} has no outputs list")
    return registry


def check_names(names: object, registry: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The catalogue's other names: ``{name: [entries of the catalogue it may mean]}``, bounded;
    a name pointing at an entry the catalogue does not hold is dropped."""
    if not isinstance(names, dict) or len(names) > 20 * CATALOG_MAX_ENTRIES:
        raise ValueError("not a table of component names")
    out: dict[str, list[str]] = {}
    for name, keys in names.items():
        if not isinstance(name, str) or not name or len(name) > 300 or not isinstance(keys, list):
            raise ValueError("a component name is not usable")
        known = [k for k in keys if isinstance(k, str) and k in registry]
        if known:
            out[name] = known
    return out
