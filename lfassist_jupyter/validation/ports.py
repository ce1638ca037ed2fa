"""The ports: what a pipeline needs from the outside world, declared in one place.

A pipeline never knows *how* code is checked or run; it talks to these protocols.
``ComponentValidator`` checks component code: ``SandboxValidator`` (sandbox/client.py),
``LangflowValidator`` (langflow/validator.py) and ``ChainValidator`` (validation/chain.py)
are ones.  ``FlowSandbox`` is what the flow pipelines use: the catalogue, node templates
for generated code, building and probe-running flows -- everything that runs lfx, which
happens behind the sandbox's door and never in the kernel.  ``SandboxValidator`` is one,
and a ``ChainValidator`` names the one in its chain (``flow_sandbox``), so the assistant
never has to guess which of its validators can run a flow.

Only the standard library and ``validation.report`` are imported here, so every layer
(core, langflow, views) can depend on this module without pulling anything heavy in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:  # the answers' types (pydantic models); the protocol itself needs none of them
    from lfassist_jupyter.sandbox.answers import FlowBuild, FlowRun

Reference = dict[str, Any]
"""What the installed lfx offers (version, input and output classes), for the generation prompt."""


@runtime_checkable
class ComponentValidator(Protocol):
    """Runtime validation of component code.  The static and security phases run before
    it, in-process, so an implementation only ever sees code that parses and looks safe."""

    async def avalidate(self, code: str) -> ValidationReport: ...

    async def areference(self) -> Reference | None:
        """The lfx this validator builds with, or None when it cannot say (the prompt then
        uses its built-in reference).  Declared here so callers never probe with getattr."""
        ...


Validator = ComponentValidator
"""The name ``lfassist_jupyter.Validator`` has always had; the same protocol."""


def adapt_validator(validator: Any) -> Any:
    """``validator`` as a ``ComponentValidator``.  One written before the rule "the plain name
    blocks, its coroutine twin has an ``a`` prefix" (a coroutine ``validate``, no ``avalidate``)
    still works for this release, with a DeprecationWarning that names the new methods."""
    import inspect
    import warnings

    if hasattr(validator, "avalidate") or not inspect.iscoroutinefunction(getattr(validator, "validate", None)):
        return validator
    warnings.warn(
        f"{type(validator).__name__}: a validator's coroutines are now avalidate() and areference(); "
        "async validate()/reference() stop working in the next release.",
        DeprecationWarning,
        stacklevel=3,
    )
    from types import SimpleNamespace

    reference = getattr(validator, "reference", None) or _no_reference
    return SimpleNamespace(avalidate=validator.validate, areference=reference, adapted=validator)


async def _no_reference() -> None:
    return None


@runtime_checkable
class FlowSandbox(Protocol):
    """The sandbox as the flow pipelines see it.  Each call blocks (a sandboxed child does the
    work), so a pipeline makes them from its async run through ``asyncio.to_thread``, never
    while it is assembled; none raises for a bad flow or code: the answer says what failed."""

    def flow_catalog(self) -> dict[str, dict[str, Any]]:
        """lfx's bundled components, ``{type: node template}`` (cached by the sandbox)."""
        ...

    def component_template(self, code: str, timeout: float | None = None) -> dict[str, Any]:
        """``{"ok": True, "template": ...}``: the node template lfx builds for generated code."""
        ...

    def build_flow(
        self,
        spec: str,
        *,
        extra: dict[str, dict[str, Any]] | None = None,
        repair: bool = True,
        timeout: float | None = None,
    ) -> FlowBuild:
        """Langflow flow JSON from spec text, built by lfx's builder (``flows.build_flow``)."""
        ...

    def probe_run(self, flow: dict[str, Any], input_text: str, timeout: float | None = None) -> FlowRun:
        """The probe run: ``flow`` run on ``input_text`` with its models stubbed."""
        ...
