"""The flow pipeline: plan -> (custom nodes) -> write -> build -> validate -> probe-run -> repair.

Langflow's own Assistant builds a flow with an agent: about 15 canvas tools, up to 30
iterations over a 27 KB prompt. This pipeline spends two model calls on a first valid flow
(after the classification): *plan* chooses components from the light catalogue, *write*
gets the full interfaces of the chosen ones only and writes lfx's compact spec. Everything
after that is deterministic and local: lfx's builder (with our repairs of near-miss names,
port names and values first), ``validate_flow``, then a probe run of the built flow in the
sandbox with models stubbed. Only when those fail does a model repair round run, with the
top errors (node, field, suggested fix), up to ``max_retries`` attempts in all.

A step the catalogue cannot do becomes a custom node: the component pipeline generates it
(same validation; it never writes the session), the sandbox builds its node template, and
it joins this request's catalogue. A follow-up edits the session's last flow: the write
prompt carries its current spec and the result is validated like a new flow.

Like every pipeline it never touches the session or a view: it reports through the sink
and returns a ``FlowOutcome``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from lfassist_jupyter.core.component.pipeline import ComponentPipeline, check_max_retries
from lfassist_jupyter.core.events import ProgressEvent
from lfassist_jupyter.core.flow import prompts
from lfassist_jupyter.core.intent import COMPONENT_THEN_FLOW, json_object_in
from lfassist_jupyter.core.pipeline import Request, Sink
from lfassist_jupyter.core.request_log import log, log_event, log_request_error
from lfassist_jupyter.core.result import ComponentOutcome, FlowOutcome
from lfassist_jupyter.errors import ProviderError
from lfassist_jupyter.flows.models import FlowReport, Need
from lfassist_jupyter.sandbox.answers import FlowRun

PROBE_TEXT = "Hello! This is a probe run."
"""The text input of the probe run (the user runs the flow with real input later)."""
MAX_CUSTOM_NODES = 2
"""At most this many components are generated for one flow (each costs model calls)."""
MAX_CHOSEN = 14
"""At most this many full interfaces go into the write prompt (it stays within 16 KB)."""
PLAN_TOKENS = 600


class FlowSandbox(Protocol):
    """What the pipeline needs from the sandbox (``SandboxValidator`` has both)."""

    def probe_run_sync(self, flow: dict[str, Any], input_text: str, timeout: float | None = None) -> FlowRun: ...

    def component_template_sync(self, code: str, timeout: float | None = None) -> dict[str, Any]: ...


def custom_templates(flow: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The custom nodes of a flow as catalogue entries (name -> node template): a flow carries
    its custom components' code and ports, so editing it needs no sandbox call."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(flow, Mapping):
        return out
    data = flow.get("data", flow)
    for node in data.get("nodes", []) if isinstance(data, Mapping) else []:
        nd = node.get("data") if isinstance(node, Mapping) else None
        if not isinstance(nd, Mapping) or not isinstance(nd.get("node"), Mapping):
            continue
        template = nd["node"]
        name = nd.get("_flow_builder_registry_type") or (
            nd.get("type") if nd.get("type") != "CustomComponent" else template.get("display_name")
        )
        if nd.get("type") == "CustomComponent" and name and isinstance(template.get("template"), Mapping):
            out[str(name)] = dict(template)
    return out


def without_secrets(flow: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``flow`` whose password fields are empty (a global variable's *name* stays):
    what the session keeps on disk and the prompts see never holds a key."""
    import copy

    clean = copy.deepcopy(flow)
    data = clean.get("data", clean)
    for node in data.get("nodes", []) if isinstance(data, dict) else []:
        template = ((node.get("data") or {}).get("node") or {}).get("template") if isinstance(node, dict) else None
        for field in (template or {}).values():
            secret = isinstance(field, dict) and field.get("password") and not field.get("load_from_db")
            if secret and field.get("value"):
                field["value"] = ""
    return clean


def file_needs(flow: dict[str, Any], error: str) -> list[Need]:
    """Files the probe run lacked: a node with an empty file field that the run's error names.

    A File component's path is optional in its template (a file may arrive by an edge), so
    ``validate_flow`` cannot call it a need; when the probe run fails in exactly such a node,
    the missing file is what the user must provide, not something a model repair can fix.
    """
    out: list[Need] = []
    data = flow.get("data", flow)
    for node in data.get("nodes", []):
        spec = (node.get("data") or {}).get("node") or {}
        name = str(spec.get("display_name") or node.get("id"))
        if not name or name not in error:
            continue
        for fname, field in (spec.get("template") or {}).items():
            if not isinstance(field, dict) or field.get("show") is False:
                continue
            if (field.get("type") == "file" or field.get("_input_type") == "FileInput") and not field.get("value"):
                message = f"Give {name} a file ({fname}): the probe run had none."
                out.append(Need(kind="file", node=name, node_id=str(node.get("id")), field=fname, message=message))
    return out


def _parse_plan(reply: str, catalog: Any) -> tuple[list[str], list[dict[str, str]]]:
    """Chosen catalogue names and the custom components to generate, read tolerantly.

    A JSON object ``{"components": [...], "new": [...]}`` (also inside a fence or prose, or
    nearly-JSON) is read first; a name it lists that the catalogue does not know becomes a
    custom component. Anything else falls back to ``Catalog.parse_choice`` (a bulleted list
    or names in prose).
    """
    obj = json_object_in(reply)
    if not isinstance(obj, dict) or not isinstance(obj.get("components"), list):
        return catalog.parse_choice(reply or ""), []
    chosen: list[str] = []
    new: list[dict[str, str]] = []
    for item in obj["components"]:
        if not isinstance(item, str) or not item.strip():
            continue
        key = catalog.resolve(item)
        if key is None:
            new.append({"name": item.strip(), "description": item.strip()})
        elif key not in chosen:
            chosen.append(key)
    for item in obj.get("new") or []:
        if isinstance(item, dict) and str(item.get("name") or "").strip():
            name = str(item["name"]).strip()
            desc = str(item.get("description") or name).strip()
            new = [n for n in new if n["name"] != name]
            new.append({"name": name, "description": desc})
        elif isinstance(item, str) and item.strip() and catalog.resolve(item) is None:
            new.append({"name": item.strip(), "description": item.strip()})
    return chosen, new


def _spec_types(spec: str | None, catalog: Any) -> list[str]:
    """The component types a spec's ``nodes:`` section names (the current flow's, for an edit)."""
    out: list[str] = []
    section = None
    for line in (spec or "").splitlines():
        stripped = line.strip()
        if stripped in ("nodes:", "edges:", "config:"):
            section = stripped
            continue
        if section == "nodes:" and ":" in stripped:
            key = catalog.resolve(stripped.split(":", 1)[1].strip())
            if key and key not in out:
                out.append(key)
    return out


class FlowPipeline:
    """Builds one Langflow flow from a request, validated and probe-run.

    Args:
        validator: the component validator (for custom nodes, through ``ComponentPipeline``).
        max_retries: total attempts (0..10); 0 builds once and skips validation and the probe run.
        intent: ``build_flow`` or ``component_then_flow`` (the latter always makes a custom node).
        sandbox: runs the probe run and builds custom node templates (``SandboxValidator``).
        extra_components: more catalogue entries, name -> node template (components of a
            connected Langflow server, or made in this session); Langflow's ``GET /api/v1/all``
            shape (category -> name -> template) is accepted too.
        current_flow: the flow a follow-up edits (Langflow JSON); its spec goes into the prompts.
        flows: the user's flows (this conversation's), which the plan may reuse instead of
            writing a new one; ``langflow`` (a connected client) adds the server's flows and
            its starter templates.
        current_spec: that flow's spec, when known (else derived with ``flow_to_spec``).
        probe_timeout: seconds the probe run may take.
    """

    def __init__(
        self,
        validator: Any,
        max_retries: int = 3,
        *,
        intent: str = "build_flow",
        sandbox: FlowSandbox | None = None,
        extra_components: Mapping[str, Any] | None = None,
        current_flow: Mapping[str, Any] | None = None,
        current_spec: str | None = None,
        probe_timeout: float = 30.0,
        flows: list[dict[str, Any]] | None = None,
        langflow: Any = None,
    ) -> None:
        self.validator = validator
        self.max_retries = check_max_retries(max_retries)
        self.intent = intent
        self.sandbox = sandbox
        self.extra_components = extra_components
        self.current_flow = dict(current_flow) if current_flow else None
        self.current_spec = current_spec
        self.probe_timeout = probe_timeout
        self.flows = flows
        self.langflow = langflow
        self.probe_text = PROBE_TEXT
        self._reused: dict[str, Any] | None = None

    # -- the catalogue ---------------------------------------------------------------------

    def catalog(self) -> Any:
        """lfx's bundled components, plus the extra ones and the current flow's custom nodes."""
        from lfassist_jupyter.flows import default_catalog

        # The sandbox that probe-runs the flow also gives the catalogue and builds the flow.
        catalog = default_catalog(self.sandbox if hasattr(self.sandbox, "flow_catalog_sync") else None)
        extra = self.extra_components or {}
        if extra and all(isinstance(v, Mapping) and "template" not in v for v in extra.values()):
            catalog.add_all({k: dict(v) for k, v in extra.items()})  # Langflow's /api/v1/all shape
        else:
            for name, template in extra.items():
                if name not in catalog and isinstance(template, Mapping):
                    try:
                        catalog.add(str(name), dict(template))
                    except ValueError as exc:
                        log.warning("Catalogue entry %s skipped: %s", name, exc)
        for name, template in custom_templates(self.current_flow).items():
            if name not in catalog:
                catalog.add(name, template)
        return catalog

    # -- one request -----------------------------------------------------------------------

    async def run(self, request: Request, sink: Sink) -> FlowOutcome:
        validate = self.max_retries > 0
        max_attempts = self.max_retries if validate else 1

        def progress(step: str, attempt: int, message: str, **extra: Any) -> None:
            sink(ProgressEvent(step=step, attempt=attempt, max_attempts=max_attempts, message=message, **extra))

        catalog = await asyncio.to_thread(self.catalog)
        current_spec = self.current_spec
        if self.current_flow and not current_spec:
            from lfassist_jupyter.flows import flow_to_spec

            current_spec = await asyncio.to_thread(flow_to_spec, self.current_flow, catalog=catalog)

        # 1. Plan: the light catalogue and the user's flows; the model names what it needs, or a flow to reuse.
        progress("planning_flow", 1, "Choosing components...")
        from lfassist_jupyter.core import reuse

        candidates = await reuse.gather_flows(self.flows, self.langflow) if self.flows or self.langflow else []
        flows_text = reuse.reuse_lines(candidates)
        light = prompts.light_catalogue(catalog.light(), catalog.names, prompts.LIGHT_BUDGET - len(flows_text))
        try:
            plan_reply = await request.provider.complete(
                system=prompts.plan_system(light, flows_text),
                messages=[{"role": "user", "content": prompts.plan_message(request.text, current_spec)}],
                model=request.model,
                max_tokens=PLAN_TOKENS,
                temperature=0,
            )
        except ProviderError as exc:
            log_request_error(request.request_id, exc)
            return FlowOutcome(result=exc.friendly, intent=self.intent, error=exc.friendly)
        chosen, new = _parse_plan(plan_reply, catalog)
        reused: dict[str, Any] | None = None
        prebuilt: str | None = None
        name, change, inputs = reuse.parse_reuse(plan_reply)
        candidate = reuse.match_candidate(name, candidates) if name else None
        loaded = await reuse.load_candidate(candidate, self.langflow) if candidate else None
        if candidate is not None and isinstance(loaded, dict) and isinstance(loaded.get("data", loaded), dict):
            # Reuse before generate: the flow becomes the one this request edits.
            from lfassist_jupyter.flows import flow_to_spec

            loaded = without_secrets(loaded)
            for key, template in custom_templates(loaded).items():
                if key not in catalog:
                    catalog.add(key, template)
            try:
                normalised = reuse.normalise_flow(loaded, catalog)
                spec_text = await asyncio.to_thread(flow_to_spec, normalised, catalog=catalog)
            except Exception as exc:  # a flow our spec writer cannot read: plan a new one
                log.info("The flow %s could not be reused: %s", candidate.name, exc)
                spec_text = None
            if spec_text:
                current_spec, shown, chat_text = reuse.apply_inputs(spec_text, inputs, catalog)
                if chat_text:
                    self.probe_text = chat_text
                reused = {"name": candidate.name, "where": candidate.where, "inputs": shown}
                if not change and not new:
                    prebuilt = f"```\n{current_spec}```"  # nothing to change: no write call
                log_event(logging.INFO, "assistant.flow.reused", request_id=request.request_id, where=candidate.where)
        self._reused = reused
        for key in _spec_types(current_spec, catalog):
            if key not in chosen:
                chosen.append(key)
        if self.intent == COMPONENT_THEN_FLOW and not new:
            new = [{"name": "CustomStep", "description": request.text}]
        log_event(
            logging.INFO,
            "assistant.flow.planned",
            request_id=request.request_id,
            components=",".join(chosen)[:300],
            custom=",".join(n["name"] for n in new)[:200],
        )

        # 2. Custom nodes, through the component pipeline (validated like any component).
        components: list[ComponentOutcome] = []
        custom_names: list[str] = []
        for item in new[:MAX_CUSTOM_NODES]:
            outcome, key, error = await self._custom_node(request, sink, catalog, item)
            components.append(outcome)
            if key is None:
                return FlowOutcome(
                    result=f"The custom component {item['name']} could not be made: {error}",
                    intent=self.intent,
                    error=error,
                    components=components,
                )
            custom_names.append(key)
            if key not in chosen:
                chosen.append(key)

        # 3. Write, build, validate, probe-run; repair with the top errors.
        interfaces = self._interfaces(catalog, chosen, custom_names)
        first = {
            "role": "user",
            "content": prompts.write_message(request.text, interfaces, current_spec, custom_names),
        }
        messages = [first]
        flow: dict[str, Any] | None = None
        spec: str | None = None
        report: FlowReport | None = None
        run: FlowRun | None = None
        notes: list[str] = []
        error: str | None = None
        for attempt in range(1, max_attempts + 1):
            if attempt == 1:
                progress("generating_flow", attempt, "Writing the flow...")
            try:
                reply = prebuilt if attempt == 1 and prebuilt else await self._generate(request, messages)
            except ProviderError as exc:
                log_request_error(request.request_id, exc)
                return FlowOutcome(
                    result=exc.friendly,
                    intent=self.intent,
                    flow=flow,
                    spec=spec,
                    attempts=attempt - 1,
                    error=exc.friendly,
                    report=report,
                    run=run,
                    components=components,
                )
            progress("building_flow", attempt, "Building the flow with lfx...")
            built, problems, notes = await asyncio.to_thread(self._build, reply, catalog)
            report = run = None  # the outcome describes the last attempt
            if built is None and not problems:
                if attempt == 1:
                    # No spec at all: the model answered in prose (e.g. asked which model to use).
                    return FlowOutcome(result=reply, intent=self.intent, components=components)
                problems = ["flow: the reply held no spec (a fenced block with 'nodes:' and 'edges:')."]
            if built is not None:
                flow, spec = built.flow, built.spec
                if not built.ok:
                    problems = [str(e) for e in built.errors]
            if not validate and flow is not None:
                return self._finish(flow, spec, False, attempt, None, None, None, notes, components, validate=False)
            if flow is not None and not problems:
                progress("validating_flow", attempt, f"Validating the flow (attempt {attempt} of {max_attempts})...")
                from lfassist_jupyter.flows import validate_flow

                report = await asyncio.to_thread(validate_flow, flow, catalog=catalog)
                problems = [str(e) for e in report.errors]
                if not problems:
                    progress("running_flow", attempt, "Probe run in the sandbox (models stubbed)...")
                    run = await self._probe(flow)
                    if not run.ok:
                        report.needs += file_needs(flow, str(run.error or ""))
                    if not run.ok and not report.needs:
                        problems = [f"flow: the probe run failed: {run.error}"]
            if not problems and flow is not None:
                progress("flow_validated", attempt, "Flow validated.")
                log_event(logging.INFO, "assistant.flow.validated", request_id=request.request_id, attempts=attempt)
                return self._finish(flow, spec, True, attempt, None, report, run, notes, components)
            error = "; ".join(problems[:5]) or "The flow could not be built."
            progress("flow_failed", attempt, "The flow did not validate.", error=error)
            log_event(
                logging.WARNING, "assistant.flow.failed", request_id=request.request_id, error=error, attempt=attempt
            )
            if attempt == max_attempts:
                break
            progress(
                "repairing_flow",
                attempt + 1,
                f"Repairing the flow with the errors as context (attempt {attempt + 1} of {max_attempts})...",
            )
            hint = self._hint(problems, catalog, chosen)
            messages = [
                first,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": prompts.repair_message(problems[:5], attempt, max_attempts, hint)},
            ]
        return self._finish(flow, spec, False, max_attempts, error, report, run, notes, components, validate=validate)

    # -- steps -------------------------------------------------------------------------------

    async def _generate(self, request: Request, messages: list[dict[str, str]]) -> str:
        chunks = request.provider.stream(
            system=prompts.WRITE_SYSTEM, messages=messages, model=request.model, max_tokens=request.max_tokens
        )
        return "".join([chunk async for chunk in chunks])

    @staticmethod
    def _build(reply: str, catalog: Any) -> tuple[Any, list[str], list[str]]:
        """lfx's builder with our deterministic repairs; (result, blocking problems, notes)."""
        from lfassist_jupyter.flows import FlowSpecError, build_flow

        try:
            built = build_flow(reply, catalog=catalog, repair=True)
        except FlowSpecError as exc:
            return None, [str(exc)] if "```" in (reply or "") or "nodes" in (reply or "") else [], []
        notes = [*built.warnings, *(f"Repaired {c.node}: {c.message}" for c in built.changes if c.kind != "quote")]
        if built.flow is None:
            return None, [str(e) for e in built.errors] or ["The spec has no usable node."], notes
        return built, [], notes

    async def _probe(self, flow: dict[str, Any]) -> FlowRun:
        if self.sandbox is None:
            return FlowRun.failed("No sandbox to probe-run the flow in.")
        run = await asyncio.to_thread(self.sandbox.probe_run_sync, flow, self.probe_text, self.probe_timeout)
        return run.require_answer(
            "the probe run answered nothing (no Chat Output was reached, or a loop body never ran)"
        )

    @staticmethod
    def _interfaces(catalog: Any, chosen: list[str], custom: list[str]) -> str:
        """Full interfaces of the chosen components, custom ones first, within the prompt budget."""
        if not chosen:
            return catalog.interfaces(["ChatInput", "ChatOutput"])
        ordered = [*custom, *(c for c in chosen if c not in custom)][:MAX_CHOSEN]
        budget = prompts.MAX_PROMPT_CHARS - len(prompts.WRITE_SYSTEM) - 4_000  # room for the request and spec
        blocks: list[str] = []
        for name in ordered:
            block = catalog.interfaces([name])
            if sum(len(b) + 2 for b in blocks) + len(block) > budget:
                break
            blocks.append(block)
        return "\n\n".join(blocks)

    @staticmethod
    def _hint(problems: list[str], catalog: Any, chosen: list[str]) -> str:
        """For unknown components: the names that do exist (the model's reply named others)."""
        if any("Unknown component" in p for p in problems):
            return "Use only these component types: " + ", ".join(chosen or catalog.names[:40]) + "."
        return ""

    async def _custom_node(
        self, request: Request, sink: Sink, catalog: Any, item: dict[str, str]
    ) -> tuple[ComponentOutcome, str | None, str | None]:
        """Generate one component, build its node template in the sandbox, add it to the catalogue."""
        text = prompts.component_request(item["name"], item["description"], request.text)
        sub = Request(
            text=text,
            messages=[{"role": "user", "content": text}],
            provider=request.provider,
            model=request.model,
            request_id=request.request_id,
            max_tokens=request.max_tokens,
        )
        outcome = await ComponentPipeline(self.validator, self.max_retries).run(sub, sink)
        if not outcome.code or (self.max_retries > 0 and not outcome.validated):
            return outcome, None, outcome.error or "the model wrote no component code"
        if self.sandbox is None:
            return outcome, None, "no sandbox to build its node template in"
        made = await asyncio.to_thread(self.sandbox.component_template_sync, outcome.code)
        if not made.get("ok"):
            return outcome, None, str(made.get("error"))
        key = outcome.class_name or item["name"]
        catalog.add(key, made["template"], description=str(made["template"].get("description") or item["description"]))
        return outcome, key, None

    def _finish(
        self,
        flow: dict[str, Any] | None,
        spec: str | None,
        validated: bool,
        attempts: int,
        error: str | None,
        report: FlowReport | None,
        run: FlowRun | None,
        notes: list[str],
        components: list[ComponentOutcome],
        *,
        validate: bool = True,
    ) -> FlowOutcome:
        text = summary(flow, validated, attempts, error, report, run, components, validate=validate)
        if run is not None and self.probe_text != PROBE_TEXT:
            text = text.replace(f"with {PROBE_TEXT!r}", f"with {self.probe_text[:200]!r}")
        if self._reused is not None and flow is not None:
            what = f"Started from the flow {self._reused['name']!r} ({self._reused['where']})"
            shown = self._reused.get("inputs") or []
            text = what + (f", with {'; '.join(shown)} from the request. " if shown else ". ") + text
        return FlowOutcome(
            result=text,
            reused=self._reused if flow is not None else None,
            intent=self.intent,
            flow=flow,
            spec=spec,
            validated=validated,
            attempts=attempts if validate else 0,
            error=error,
            report=report,
            run=run,
            components=components,
            notes=notes,
        )


def _node_names(flow: dict[str, Any]) -> list[str]:
    data = flow.get("data", flow)
    names = []
    for node in data.get("nodes", []):
        nd = node.get("data") or {}
        names.append(str((nd.get("node") or {}).get("display_name") or nd.get("type") or node.get("id")))
    return names


def summary(
    flow: dict[str, Any] | None,
    validated: bool,
    attempts: int,
    error: str | None,
    report: FlowReport | None,
    run: FlowRun | None,
    components: list[ComponentOutcome],
    *,
    validate: bool = True,
) -> str:
    """One paragraph: what was built, what the probe run did and stubbed, what the user must provide."""
    if flow is None:
        return f"No flow could be built: {error or 'the reply held no flow spec.'}"
    names = _node_names(flow)
    parts = [f"Built a flow of {len(names)} components ({', '.join(names)})"]
    made = [c.class_name for c in components if c.code and c.class_name]
    if made:
        parts[0] += f", including the custom component{'s' * (len(made) > 1)} {', '.join(made)}"
    parts[0] += "."
    if not validate:
        parts.append("It was not validated (max_retries=0).")
    elif validated:
        plural = "s" * (attempts > 1)
        parts.append(f"It validated after {attempts} attempt{plural}.")
    else:
        parts.append(f"It did not validate after {attempts} attempt{'s' * (attempts > 1)}: {error}")
    if run is not None:
        if run.ok:
            parts.append(f"The probe run with {PROBE_TEXT!r} answered {str(run.text or '')[:200]!r}.")
        else:
            parts.append(f"The probe run failed: {run.error}")
        if run.stubbed:
            what = ", ".join(f"{s.name} ({s.reason})" for s in run.stubbed)
            parts.append(f"Stubbed in the probe run (no keys or network in the sandbox): {what}.")
    if report is not None and report.needs:
        needs = "; ".join(n.message for n in report.needs[:6])
        parts.append(f"Before a real run, provide: {needs}")
    return " ".join(parts)
