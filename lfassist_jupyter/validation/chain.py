"""Running several validators in order: the sandbox first, then (optionally) a Langflow server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lfassist_jupyter.ports import ComponentValidator, FlowSandbox
from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.answers import Reference


class ChainValidator:
    """Validators in order; the first failure decides, and every report's phases, timings,
    warnings and findings are merged into the first one (which knows the inputs and outputs).

    ``builds`` is Langflow's verdict: any validator that saw the code not build makes it
    ``False``; ``True`` needs at least one that saw it build and none that saw it fail; a
    validator that did not ask lfx (``None``) changes nothing.  A later validator that fails
    without a verdict of its own (the Langflow server's build error) also means "does not build"
    when it failed in the runtime phase, where building happens.

    ``flow_sandbox`` is the sandbox that builds and probe-runs this chain's flows: the one given,
    else the first validator that is a ``FlowSandbox`` (the local sandbox; a Langflow server
    validates components but runs no probe), else None."""

    def __init__(self, *validators: ComponentValidator | None, flow_sandbox: FlowSandbox | None = None) -> None:
        self.validators: list[ComponentValidator] = [v for v in validators if v is not None]
        if not self.validators:
            raise ValueError("ChainValidator needs at least one validator")
        if flow_sandbox is None:
            flow_sandbox = next((v for v in self.validators if isinstance(v, FlowSandbox)), None)
        self.flow_sandbox: FlowSandbox | None = flow_sandbox

    async def avalidate(self, code: str) -> ValidationReport:
        merged: ValidationReport | None = None
        for validator in self.validators:
            report = await validator.avalidate(code)
            if merged is None:
                merged = report
            else:
                merged.phases_run += report.phases_run
                merged.timings_ms.update(report.timings_ms)
                merged.warnings += [w for w in report.warnings if w not in merged.warnings]
                seen = {(f.rule, f.phase, f.message) for f in merged.findings}
                merged.findings += [f for f in report.findings if (f.rule, f.phase, f.message) not in seen]
                merged.missing_packages += [m for m in report.missing_packages if m not in merged.missing_packages]
                verdict = report.builds
                if verdict is None and not report.is_valid and report.phase == "runtime":
                    verdict = False
                if verdict is not None:
                    merged.builds = verdict if merged.builds is None else (merged.builds and verdict)
                if not report.is_valid:
                    merged.is_valid, merged.phase, merged.error = False, report.phase, report.error
                    merged.traceback = report.traceback
            if not merged.is_valid:
                break
        assert merged is not None
        return merged

    async def areference(self) -> Reference | None:
        """The first validator that can describe its lfx answers (the sandbox, normally)."""
        for validator in self.validators:
            reference = await validator.areference()
            if reference is not None:
                return reference
        return None
