"""The ``run_flow`` intent: "run my summariser on this text" runs a flow, it builds nothing.

The flow is found where the user keeps flows: this conversation (its current flow, the
flows it built or loaded, their restore points), a saved ``.json`` file, or the connected
Langflow server (by name). It is validated and probe-run in the sandbox on the given text,
models stubbed, like every flow the assistant builds: no key and no network is used. A real
run (its models called with the keys it reads) stays an explicit step the user takes
(``%%assist_flow --run-local``, or ``--register`` for the server), never a side effect of a
sentence. No model call is spent here: the classification already named the flow and input.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from pathlib import Path
from typing import Any

from lfassist_jupyter.core.events import ProgressEvent
from lfassist_jupyter.core.intent import RUN_FLOW, parse_run_request
from lfassist_jupyter.core.outcome import FlowOutcome
from lfassist_jupyter.core.pipeline import Request, Sink
from lfassist_jupyter.flows.library import FolderLibrary
from lfassist_jupyter.ports import FlowLibrary, FlowSandbox
from lfassist_jupyter.sandbox.answers import FlowRun


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()


def match_name(wanted: str, named: list[tuple[str, Any]]) -> Any | None:
    """The one flow ``wanted`` names: exact, then a whole-word part of one name, then a near miss."""
    key = _norm(wanted)
    for test in (
        lambda n: _norm(n) == key,
        lambda n: f" {key} " in f" {_norm(n)} ",
        lambda n: bool(difflib.get_close_matches(key, [_norm(n)], n=1, cutoff=0.75)),
    ):
        found = {id(flow): flow for name, flow in named if name and test(name)}
        if len(found) == 1:
            return next(iter(found.values()))
        if found:
            return None  # two flows answer to that name: ask, never pick one
    return None


class RunFlowPipeline:
    """Find the named flow, then validate it and probe-run it on the input text.

    Args:
        session: the conversation (its flows and restore points are searched first).
        sandbox: the ``FlowSandbox`` port: its catalogue validates the flow, its probe run (``probe_run``) runs it.
        flow_name: the flow as the user named it ("" / None: the current flow).
        input_text: the text to run it on (None: read from the request).
        files: the folder where saved flow files are looked for (default: the working
            directory's ``*.json``).
        langflow: the connected Langflow's flows (a ``FlowLibrary``), searched by name last.
    """

    def __init__(
        self,
        session: Any,
        sandbox: FlowSandbox,
        *,
        flow_name: str | None = None,
        input_text: str | None = None,
        files: FolderLibrary | None = None,
        langflow: FlowLibrary | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.session, self.sandbox, self.langflow = session, sandbox, langflow
        self.flow_name, self.input_text = flow_name, input_text
        self.files = files if files is not None else FolderLibrary(Path.cwd())
        self.timeout = timeout

    async def run(self, request: Request, sink: Sink) -> FlowOutcome:
        name, text = self.flow_name, self.input_text
        if name is None or text is None:
            parsed_name, parsed_text = parse_run_request(request.text)
            name = parsed_name if name is None else name
            text = parsed_text if text is None else text
        found, where = await self._find(name or "")
        if found is None:
            return FlowOutcome(result=where, intent=RUN_FLOW, error=where)
        label = str(found.get("name") or name or "the current flow")
        if not text:
            message = f"Which text should {label!r} run on? Say e.g. “run {label} on: your text”."
            return FlowOutcome(result=message, intent=RUN_FLOW, flow=found)
        sink(ProgressEvent(step="validating_flow", attempt=1, max_attempts=1, message=f"Validating {label}..."))
        from lfassist_jupyter.flows import default_catalog, validate_flow

        def check() -> Any:
            return validate_flow(found, catalog=default_catalog(self.sandbox))

        report = await asyncio.to_thread(check)
        if not report.is_valid:
            error = "; ".join(str(e) for e in report.errors[:5])
            message = f"{label} ({where}) was not run: it does not validate: {error}"
            return FlowOutcome(result=message, intent=RUN_FLOW, flow=found, report=report, error=error)
        sink(ProgressEvent(step="running_flow", attempt=1, max_attempts=1, message="Probe run (models stubbed)..."))
        run: FlowRun = await asyncio.to_thread(self.sandbox.probe_run, found, text, self.timeout)
        run = run.require_answer("the probe run answered nothing (no Chat Output was reached)")
        parts = [f"Ran {label} ({where}) on {text[:200]!r} in the sandbox (a probe run: models stubbed)."]
        if run.ok:
            parts.append(f"It answered {str(run.text)[:500]!r}.")
        else:
            parts.append(f"The run failed: {run.error}")
        if run.stubbed:
            parts.append("Stubbed: " + ", ".join(f"{s.name} ({s.reason})" for s in run.stubbed) + ".")
            parts.append('For a real run with its models: `%%assist_flow --run-local "TEXT"` on its spec.')
        return FlowOutcome(
            result=" ".join(parts),
            intent=RUN_FLOW,
            flow=found,
            validated=run.ok,
            attempts=1,
            error=None if run.ok else str(run.error),
            report=report,
            run=run,
        )

    async def _find(self, name: str) -> tuple[dict[str, Any] | None, str]:
        """(the flow, where it came from) or (None, a sentence saying what exists)."""
        flows = [t.flow for t in reversed(self.session.turns) if t.kind == "flow" and isinstance(t.flow, dict)]
        flows += [p.get("flow") for p in reversed(self.session.restore_points) if isinstance(p.get("flow"), dict)]
        if not name:
            if flows:
                return flows[0], "the current flow"
            return None, "There is no flow in this conversation to run: build or load one first."
        hit = match_name(name, [(str(f.get("name") or ""), f) for f in flows])
        if hit is not None:
            return hit, "from this conversation"
        from lfassist_jupyter.errors import LfAssistError

        file_id = await self._file(name)
        if file_id is not None:
            try:
                return await self.files.aget_flow(file_id), f"the file {Path(file_id).name}"
            except LfAssistError as exc:
                return None, str(exc)
        if self.langflow is not None:
            try:
                listed = await self.langflow.alist_flows()
                entry = match_name(name, [(e.name, e) for e in listed])
                if entry is not None:
                    return await self.langflow.aget_flow(entry.id), "from the connected Langflow"
            except LfAssistError as exc:
                return None, f"No flow named {name!r} here, and Langflow could not be asked: {exc}"
        known = [str(f.get("name")) for f in flows if f.get("name")]
        where = f" The flows of this conversation: {', '.join(dict.fromkeys(known))}." if known else ""
        return None, f"No flow named {name!r} in this conversation, as a .json file here, or in Langflow.{where}"

    async def _file(self, name: str) -> str | None:
        """The flow file ``name`` names: a path to a ``.json`` file, or the one file whose stem is
        the name (``echo_qa.json`` for "Echo QA"); None when there is none."""
        if name.endswith(".json"):
            try:
                return name if self.files.path(name).is_file() else None
            except (OSError, ValueError):  # a name no file system takes (too long, a NUL)
                return None
        key = _norm(name)
        entries = await self.files.alist_flows()
        return next((e.id for e in entries if _norm(e.name) == key), None)
