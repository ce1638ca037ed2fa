"""The connected Langflow server as a ``ComponentValidator``: one more phase after the sandbox,
and ``ChainValidator``, which puts it there.

They live apart from the HTTP client because they are port adapters (validation speaks
``ValidationReport``), while the client only speaks Langflow's API.  The chain is here, above the
ports, because the server is why there is a chain: the sandbox alone is one validator.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lfassist_jupyter.errors import LangflowBuildError, LangflowError
from lfassist_jupyter.ports import ComponentValidator, FlowSandbox, HasFlowSandbox
from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:
    from lfassist_jupyter.langflow.client import LangflowClient
    from lfassist_jupyter.sandbox.answers import Reference


class LangflowValidator:
    """Validation on the connected server, as one more phase after the local ones.

    A build error there fails the component (the model gets the server's error); a server
    that cannot be reached only adds a warning, since the component already passed locally.
    """

    flow_sandbox: FlowSandbox | None = None
    """A Langflow server validates components but runs no probe (``ports.HasFlowSandbox``)."""

    def __init__(self, client: LangflowClient) -> None:
        self.client = client

    async def avalidate(self, code: str) -> ValidationReport:
        t0 = time.perf_counter()
        report = ValidationReport(is_valid=True, phases_run=["server"])
        try:
            await self.client.avalidate_code(code)
        except LangflowBuildError as exc:
            report.is_valid, report.phase, report.error, report.traceback = False, "runtime", str(exc), exc.traceback
        except LangflowError as exc:
            report.warnings.append(f"Not checked on the Langflow server: {exc}")
        report.timings_ms["server"] = round((time.perf_counter() - t0) * 1000, 3)
        return report

    async def areference(self) -> Reference | None:
        """The server does not describe its lfx here: the local validator's reference is used."""
        return None


class ChainValidator:
    """Validators in order; the first failure decides, and every report's phases, timings,
    warnings and findings are merged into the first one (which knows the inputs and outputs).

    ``builds`` is Langflow's verdict: any validator that saw the code not build makes it
    ``False``; ``True`` needs at least one that saw it build and none that saw it fail; a
    validator that did not ask lfx (``None``) changes nothing.  A later validator that fails
    without a verdict of its own (the Langflow server's build error) also means "does not build"
    when it failed in the runtime phase, where building happens.

    ``flow_sandbox`` is the sandbox that builds and probe-runs this chain's flows: the one given,
    else the first its validators name (``ports.HasFlowSandbox``: the local sandbox; a Langflow
    server validates components but runs no probe), else None."""

    def __init__(self, *validators: ComponentValidator | None, flow_sandbox: FlowSandbox | None = None) -> None:
        self.validators: list[ComponentValidator] = [v for v in validators if v is not None]
        if not self.validators:
            raise ValueError("ChainValidator needs at least one validator")
        if flow_sandbox is None:
            named = (v.flow_sandbox for v in self.validators if isinstance(v, HasFlowSandbox))
            flow_sandbox = next((s for s in named if s is not None), None)
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
