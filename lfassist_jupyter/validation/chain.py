"""Running several validators in order: the sandbox first, then (optionally) a Langflow server."""

from __future__ import annotations

from lfassist_jupyter.validation.ports import ComponentValidator, Reference
from lfassist_jupyter.validation.report import ValidationReport


class ChainValidator:
    """Validators in order; the first failure decides, and every report's phases, timings and
    warnings are merged into the first one (which knows the inputs and outputs)."""

    def __init__(self, *validators: ComponentValidator | None) -> None:
        self.validators: list[ComponentValidator] = [v for v in validators if v is not None]
        if not self.validators:
            raise ValueError("ChainValidator needs at least one validator")

    async def validate(self, code: str) -> ValidationReport:
        merged: ValidationReport | None = None
        for validator in self.validators:
            report = await validator.validate(code)
            if merged is None:
                merged = report
            else:
                merged.phases_run += report.phases_run
                merged.timings_ms.update(report.timings_ms)
                merged.warnings += report.warnings
                if not report.is_valid:
                    merged.is_valid, merged.phase, merged.error = False, report.phase, report.error
                    merged.traceback = report.traceback
            if not merged.is_valid:
                break
        assert merged is not None
        return merged

    async def reference(self) -> Reference | None:
        """The first validator that can describe its lfx answers (the sandbox, normally)."""
        for validator in self.validators:
            reference = await validator.reference()
            if reference is not None:
                return reference
        return None
