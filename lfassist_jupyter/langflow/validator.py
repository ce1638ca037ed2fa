"""The connected Langflow server as a ``ComponentValidator``: one more phase after the sandbox.

It lives apart from the HTTP client because it is a port adapter (validation speaks
``ValidationReport``), while the client only speaks Langflow's API.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lfassist_jupyter.errors import LangflowBuildError, LangflowError
from lfassist_jupyter.validation.report import ValidationReport

if TYPE_CHECKING:
    from lfassist_jupyter.langflow.client import LangflowClient
    from lfassist_jupyter.sandbox.answers import Reference


class LangflowValidator:
    """Validation on the connected server, as one more phase after the local ones.

    A build error there fails the component (the model gets the server's error); a server
    that cannot be reached only adds a warning, since the component already passed locally.
    """

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
