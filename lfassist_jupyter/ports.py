"""The ports: what a pipeline needs from the outside world, declared in one place.

A pipeline never knows *how* code is checked, a flow is run or a flow is found; it talks to
these protocols, and the composition (``Assistant``, the workspace) plugs the adapters in:

- ``ComponentValidator`` checks component code: ``SandboxValidator`` (sandbox/client.py),
  ``LangflowValidator`` and ``ChainValidator`` (langflow/validator.py).
- ``FlowSandbox`` is what the flows and the flow pipelines use: the catalogue, node templates for
  generated code, lfx's verdict on a flow's node code, the packages a flow needs, building and
  probe-running flows -- everything that runs lfx, which happens behind the sandbox's door and
  never in the kernel.  ``SandboxValidator`` is one; its answers are the typed values of
  ``sandbox/answers.py``.  Everything below the edges takes the one it uses (a ``Catalog``
  carries it), and what it remembers (the catalogue, verdicts, packages) stays with it.
- ``HasFlowSandbox``: a validator that names the sandbox building and running flows with its
  lfx (``flow_sandbox``: the sandbox itself, a chain's local one, None for a Langflow server),
  so the assistant never has to guess which validator can run a flow.
- ``FlowLibrary`` is where stored flows are found: ``LangflowLibrary`` over a connected
  Langflow (langflow/library.py) and ``FolderLibrary`` over a folder of flow JSON files
  (flows/library.py).  What a library lists is *data from elsewhere* (a shared server, a
  file someone sent): a ``FlowEntry``'s name and description are one line, with control
  characters removed and a length cap, whatever the source sent (``one_line``).

Only the standard library is imported at run time (the answers' types are pydantic models,
named for type checkers only), so every layer can depend on this module for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lfassist_jupyter.artifacts.flow import one_line  # text from elsewhere as one line (re-exported)

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.answers import (
        ComponentTemplate,
        FlowBuild,
        FlowRun,
        NodeCode,
        PackageNeeds,
        Reference,
    )
    from lfassist_jupyter.validation.report import ValidationReport

# -- checking and running ---------------------------------------------------------------------


@runtime_checkable
class ComponentValidator(Protocol):
    """Runtime validation of component code.  The static and security phases run before
    it, in-process, so an implementation only ever sees code that parses and looks safe."""

    async def avalidate(self, code: str) -> ValidationReport: ...

    async def areference(self) -> Reference | None:
        """The lfx this validator builds with (``sandbox.answers.Reference``: version, input
        classes, output types, where lfx keeps each name, schema-checked where it entered), or
        None when it cannot say (the prompt then uses its built-in reference).  Declared here
        so callers never probe with getattr."""
        ...


@runtime_checkable
class FlowSandbox(Protocol):
    """The sandbox as the flow pipelines see it.  Each call blocks (a sandboxed child does the
    work), so a pipeline makes them from its async run through ``asyncio.to_thread``, never
    while it is assembled; none raises for a bad flow or code: the answer says what failed."""

    python: str
    """The interpreter the sandbox runs lfx with (an install line names its pip when it is not
    the kernel's)."""

    def flow_catalog(self) -> dict[str, dict[str, Any]]:
        """lfx's bundled components, ``{type: node template}`` (cached by the sandbox)."""
        ...

    def component_template(
        self, code: str, timeout: float | None = None, *, methods: list[str] | None = None
    ) -> ComponentTemplate:
        """The node template lfx builds for generated code (``ok``, ``template`` or ``error``; with
        ``methods``, those the component lacks; on failure, a missing package or stale import)."""
        ...

    def build_flow(
        self,
        spec: str,
        *,
        extra: dict[str, dict[str, Any]] | None = None,
        repair: bool = True,
        timeout: float | None = None,
        refresh: list[str] | None = None,
        templates: dict[str, dict[str, Any]] | None = None,
    ) -> FlowBuild:
        """Langflow flow JSON from spec text, built by lfx's builder (``flows.build_flow``); the
        code of ``extra``'s components runs only for the spec ids in ``refresh``, and
        ``templates`` are such nodes' refreshed templates for a build that runs none of it."""
        ...

    def probe_run(self, flow: dict[str, Any], input_text: str, timeout: float | None = None) -> FlowRun:
        """The probe run: ``flow`` run on ``input_text`` with its models stubbed."""
        ...

    def component_verdicts(
        self, builds: list[NodeCode], timeout: float | None = None
    ) -> list[ComponentTemplate | None]:
        """lfx's verdict on each node code of a flow, loaded as lfx loads a flow's nodes (None: no
        time was left for it); remembered by the sandbox."""
        ...

    def flow_packages(
        self, types: list[str], codes: list[str], providers: list[str], timeout: float | None = None
    ) -> PackageNeeds | None:
        """What built-in types, node codes and model providers need that the sandbox's interpreter
        lacks, None when it cannot tell."""
        ...


@runtime_checkable
class HasFlowSandbox(Protocol):
    """A validator that names the sandbox building and probe-running flows with its lfx."""

    @property
    def flow_sandbox(self) -> FlowSandbox | None:
        """That sandbox (the validator itself when it is one), or None (a Langflow server's check)."""
        ...


# -- finding stored flows ---------------------------------------------------------------------

NAME_CAP = 100
"""The longest flow name a prompt or a view shows (Langflow's UI truncates far shorter)."""
DESCRIPTION_CAP = 160


@dataclass(frozen=True)
class FlowEntry:
    """One flow a library holds, by its header: what a prompt or a listing may show of it.

    ``name`` and ``description`` are cleaned on construction (``one_line``, capped), so no
    library can hand a multi-line name onwards.  ``flow`` is the flow JSON when the listing
    already carries it (a starter template); otherwise ``FlowLibrary.aget_flow(id)`` loads it."""

    id: str
    name: str
    description: str = ""
    flow: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", one_line(self.id, 200))
        object.__setattr__(self, "name", one_line(self.name, NAME_CAP))
        object.__setattr__(self, "description", one_line(self.description, DESCRIPTION_CAP))


@runtime_checkable
class FlowLibrary(Protocol):
    """Where stored flows are found: listed by header, loaded one at a time, plus the starter
    templates the place offers.  Async (a server is asked); a failure is one
    ``LfAssistError`` line (``LangflowError``, ``ConfigError``), never a traceback."""

    where: str
    """How a person calls the place: "Langflow", "the folder ~/flows"."""

    async def alist_flows(self) -> list[FlowEntry]:
        """The stored flows, by header (not components)."""
        ...

    async def aget_flow(self, flow_id: str) -> dict[str, Any]:
        """One stored flow's JSON (name, description, data{nodes, edges}), shape-checked."""
        ...

    async def astarters(self) -> list[FlowEntry]:
        """The starter templates, each with its ``flow`` ([] where there are none)."""
        ...
