"""The ports: what a pipeline needs from the outside world, declared in one place.

A pipeline never knows *how* code is checked or run; it talks to these protocols.
``SandboxValidator`` (sandbox/client.py), ``LangflowValidator`` (langflow/validator.py)
and ``ChainValidator`` (validation/chain.py) are ``ComponentValidator``s; ``Catalog`` and
``FlowRunner`` are the ports the flow pipeline will use (kept minimal until it lands).

Only the standard library and ``validation.report`` are imported here, so every layer
(core, langflow, views) can depend on this module without pulling anything heavy in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from lfassist_jupyter.validation.report import ValidationReport

Reference = dict[str, Any]
"""What the installed lfx offers (version, input and output classes), for the generation prompt."""


@runtime_checkable
class ComponentValidator(Protocol):
    """Runtime validation of component code.  The static and security phases run before
    it, in-process, so an implementation only ever sees code that parses and looks safe."""

    async def validate(self, code: str) -> ValidationReport: ...

    async def reference(self) -> Reference | None:
        """The lfx this validator builds with, or None when it cannot say (the prompt then
        uses its built-in reference).  Declared here so callers never probe with getattr."""
        ...


Validator = ComponentValidator
"""The name ``lfassist_jupyter.Validator`` has always had; the same protocol."""


@runtime_checkable
class Catalog(Protocol):
    """The components a flow can use: name -> the node template Langflow builds for it."""

    async def components(self) -> Mapping[str, Mapping[str, Any]]: ...


@runtime_checkable
class FlowRunner(Protocol):
    """Runs a flow (Langflow JSON) with one input and returns its output text; raises
    ``LfAssistError`` subclasses with a readable message when it cannot."""

    async def run(self, flow: Mapping[str, Any], input_value: str) -> str: ...
