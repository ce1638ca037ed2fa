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
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.core.component.pipeline import ComponentPipeline, check_max_retries
from lfassist_jupyter.core.events import ProgressEvent
from lfassist_jupyter.core.flow import prompts
from lfassist_jupyter.core.intent import COMPONENT_THEN_FLOW, json_object_in
from lfassist_jupyter.core.outcome import ComponentOutcome, FlowOutcome, flow_reduced_isolation
from lfassist_jupyter.core.pipeline import Request, Sink
from lfassist_jupyter.core.request_log import log, log_event, log_request_error
from lfassist_jupyter.errors import ProviderError
from lfassist_jupyter.flows.load import without_secrets
from lfassist_jupyter.flows.model_nodes import FlowModel, spec_node_ids
from lfassist_jupyter.flows.results import FlowReport, Need
from lfassist_jupyter.ports import NAME_CAP, ComponentValidator, FlowLibrary, FlowSandbox, one_line
from lfassist_jupyter.sandbox.answers import FlowRun

if TYPE_CHECKING:
    from lfassist_jupyter.flows.catalog import Catalog

PROBE_TEXT = "Hello! This is a probe run."
"""The text input of the probe run (the user runs the flow with real input later)."""
MAX_CUSTOM_NODES = 2
"""At most this many components are generated for one flow (each costs model calls)."""
MAX_CHOSEN = 14
"""At most this many full interfaces go into the write prompt (it stays within 16 KB)."""
PLAN_TOKENS = 600


def custom_templates(flow: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The custom nodes of a flow as catalogue entries (name -> node template): a flow carries
    its custom components' code and ports, so editing it needs no sandbox call."""
    out: dict[str, dict[str, Any]] = {}
    for node in facts.nodes(flow):
        template = facts.frontend_node(node)
        if facts.node_type(node) != "CustomComponent" or not isinstance(template.get("template"), Mapping):
            continue
        kind = facts.registry_type(node)  # the catalogue name lfx's builder noted, if any
        name = kind if kind != "CustomComponent" else template.get("display_name")
        if name:
            out[str(name)] = dict(template)
    return out


def file_needs(flow: dict[str, Any], error: str) -> list[Need]:
    """Files the probe run lacked: a node with an empty file field that the run's error names.

    A File component's path is optional in its template (a file may arrive by an edge), so
    ``validate_flow`` cannot call it a need; when the probe run fails in exactly such a node,
    the missing file is what the user must provide, not something a model repair can fix.
    """
    out: list[Need] = []
    for node in facts.nodes(flow):
        name = facts.node_name(node)
        if not name or name not in error:
            continue
        for fname, field in facts.fields(node).items():
            if not isinstance(field, dict) or field.get("show") is False:
                continue
            if (field.get("type") == "file" or field.get("_input_type") == "FileInput") and not field.get("value"):
                message = f"Give {name} a file ({fname}): the probe run had none."
                out.append(Need(kind="file", node=name, node_id=facts.node_id(node), field=fname, message=message))
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


@dataclass(frozen=True)
class SessionComponent:
    """A component validated earlier in the conversation, which "now use it in a flow" means:
    its class name and code.  Its node template is built in the sandbox when the pipeline runs."""

    name: str
    code: str


@dataclass
class _Plan:
    """What the plan step decided for one request (PocketFlow's shared store, for one node)."""

    chosen: list[str]
    """Catalogue names to give the write prompt full interfaces of."""
    new: list[dict[str, str]]
    """Custom components to generate: ``{name, description}``."""
    current_spec: str | None
    """The spec the write prompt edits: the current flow's, or a reused flow's."""
    prebuilt: str | None = None
    """A reused flow's spec as a reply, when nothing is to change (no write call)."""


@dataclass
class _Attempt:
    """The products of the latest write/build/check attempt (the outcome describes the last one)."""

    flow: dict[str, Any] | None = None
    spec: str | None = None
    report: FlowReport | None = None
    run: FlowRun | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None


class FlowPipeline:
    """Builds one Langflow flow from a request, validated and probe-run.

    Args:
        validator: the component validator (for custom nodes, through ``ComponentPipeline``).
        max_retries: total attempts (0..10); 0 builds once and skips validation and the probe run.
        intent: ``build_flow`` or ``component_then_flow`` (the latter always makes a custom node).
        sandbox: the ``FlowSandbox`` port: the catalogue, custom node templates, builds and the
            probe run (``SandboxValidator``).
        extra_components: more catalogue entries, name -> node template (components of a
            connected Langflow server); Langflow's ``GET /api/v1/all`` shape (category -> name
            -> template) is accepted too.
        session_component: the conversation's last validated component, added to the catalogue
            (its template built in the sandbox during ``run``), so "now use it in a flow" finds it.
        templates: node templates by component code, a cache the caller keeps across requests
            (building one costs a sandbox child); the last one built replaces the others.
        current_flow: the flow a follow-up edits (Langflow JSON); its spec goes into the prompts.
        flows: the user's flows (this conversation's), which the plan may reuse instead of
            writing a new one; ``library`` (a ``FlowLibrary``: the connected Langflow) adds its
            flows and its starter templates.
        current_spec: that flow's spec, when known (else derived with ``flow_to_spec``).
        base: the flow file ``current_flow`` is its spec applied to (a loaded flow's file): an edit
            is applied to that file's flow (``flows.apply_spec``), as the inserted cell will be;
            None: ``current_flow`` is what its spec builds, and so is the edit.
        probe_timeout: seconds the probe run may take.
        flow_model: the model the flow's model nodes call (``provider:model`` or a model of the
            request's provider); default: the request's own provider and model
            (``flows.model_nodes``: set in the spec, the key as its variable's name).
    """

    def __init__(
        self,
        validator: ComponentValidator | None,
        max_retries: int = 3,
        *,
        sandbox: FlowSandbox,
        intent: str = "build_flow",
        extra_components: Mapping[str, Any] | None = None,
        session_component: SessionComponent | None = None,
        templates: dict[str, dict[str, Any]] | None = None,
        current_flow: Mapping[str, Any] | None = None,
        current_spec: str | None = None,
        base: str | None = None,
        probe_timeout: float = 30.0,
        flows: list[dict[str, Any]] | None = None,
        library: FlowLibrary | None = None,
        flow_model: str | None = None,
    ) -> None:
        self.validator = validator
        self.max_retries = check_max_retries(max_retries)
        self.intent = intent
        self.sandbox = sandbox
        self.extra_components = extra_components
        self.session_component = session_component
        self.templates = {} if templates is None else templates
        self.current_flow = dict(current_flow) if current_flow else None
        self.current_spec = current_spec
        self.base = base
        self._base_used: str | None = None  # the file the last build applied its spec to
        self.probe_timeout = probe_timeout
        self.flows = flows
        self.library = library
        self.probe_text = PROBE_TEXT
        self._reused: dict[str, Any] | None = None
        self.flow_model = flow_model
        self.choice: FlowModel | None = None
        self._edited_ids: set[str] = set()  # the node ids of the flow being edited, as its spec names them

    # -- the catalogue ---------------------------------------------------------------------

    def catalog(self) -> Any:
        """lfx's bundled components, plus the extra ones, the session's component and the
        current flow's custom nodes.  Blocking (it asks the sandbox): ``run`` calls it in a thread."""
        from lfassist_jupyter.flows import default_catalog

        # The sandbox that probe-runs the flow also gives the catalogue and builds the flow.
        catalog = default_catalog(self.sandbox)
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
        made = self.session_component
        if made is not None and made.name not in catalog:
            template = self._session_template(made)
            try:
                if template is not None:
                    catalog.add(made.name, dict(template))
            except ValueError as exc:
                log.warning("Catalogue entry %s skipped: %s", made.name, exc)
        for name, template in custom_templates(self.current_flow).items():
            if name not in catalog:
                catalog.add(name, template)
        return catalog

    def _session_template(self, made: SessionComponent) -> dict[str, Any] | None:
        """The node template of the session's component: cached, else built in the sandbox."""
        template = self.templates.get(made.code)
        if template is None and self.sandbox is not None:
            template = self.sandbox.component_template(made.code).template
            if template is not None:  # the last one is the one reused
                self.templates.clear()
                self.templates[made.code] = template
        return template

    # -- one request -----------------------------------------------------------------------

    async def run(self, request: Request, sink: Sink) -> FlowOutcome:
        """Plan, make the custom nodes, then write, build, validate and probe-run with repairs."""
        self.choice = self._flow_model(request)
        catalog = await asyncio.to_thread(self.catalog)
        current_spec = self.current_spec
        if self.current_flow:
            # The spec an edit is applied against (``edit_flow``): written from the flow itself,
            # so its ids map back onto the flow's nodes; it also names the nodes no catalogue
            # entry expresses (their own entries join the catalogue).
            from lfassist_jupyter.flows import flow_to_spec

            edited = await asyncio.to_thread(flow_to_spec, self.current_flow, catalog=catalog)
            self._edited_ids = spec_node_ids(edited)
            current_spec = edited
        plan = await self._plan(request, sink, catalog, current_spec)
        if isinstance(plan, FlowOutcome):
            return plan
        components: list[ComponentOutcome] = []
        custom_names: list[str] = []
        # Custom nodes, through the component pipeline (validated like any component).
        for item in plan.new[:MAX_CUSTOM_NODES]:
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
            if key not in plan.chosen:
                plan.chosen.append(key)
        return await self._write_and_check(request, sink, catalog, plan, components, custom_names)

    def _progress(self, sink: Sink) -> Callable[..., None]:
        """``progress(step, attempt, message, **extra)``: one progress event of this request."""
        max_attempts = self.max_retries or 1

        def progress(step: str, attempt: int, message: str, **extra: Any) -> None:
            sink(ProgressEvent(step=step, attempt=attempt, max_attempts=max_attempts, message=message, **extra))

        return progress

    async def _plan(self, request: Request, sink: Sink, catalog: Any, current_spec: str | None) -> _Plan | FlowOutcome:
        """Step 1: the light catalogue and the user's flows go to the model, which names the
        components it needs, the custom ones to make, or a flow to reuse."""
        self._progress(sink)("planning_flow", 1, "Choosing components...")
        from lfassist_jupyter.core import reuse

        candidates = await reuse.gather_flows(self.flows, self.library) if self.flows or self.library else []
        flows_text = reuse.reuse_lines(candidates)
        light, added = prompts.plan_catalogues(  # the added components are others' words: the user message
            catalog.light(),
            catalog.own_names,
            catalog.light_added(),
            [one_line(name, NAME_CAP) for name in catalog.added],
            prompts.LIGHT_BUDGET - len(flows_text),
        )
        message = prompts.plan_message(request.text, current_spec, flows_text, added)
        try:
            plan_reply = await request.provider.complete(
                request.call(
                    prompts.plan_system(light, reuse=bool(flows_text), added=bool(added)),
                    [{"role": "user", "content": message}],
                    max_tokens=PLAN_TOKENS,
                    temperature=0,
                )
            )
        except ProviderError as exc:
            log_request_error(request.request_id, exc)
            return FlowOutcome(result=str(exc), intent=self.intent, error=str(exc))
        if self.choice is None:  # the model the plan was written by: known now, even if none was named
            self.choice = self._flow_model(request)
        chosen, new = await asyncio.to_thread(_parse_plan, plan_reply, catalog)  # lenient JSON: off the loop
        plan = _Plan(chosen=chosen, new=new, current_spec=current_spec)
        await self._reuse(request, plan_reply, candidates, catalog, plan)
        for key in _spec_types(plan.current_spec, catalog):
            if key not in plan.chosen:
                plan.chosen.append(key)
        if self.intent == COMPONENT_THEN_FLOW and not plan.new:
            plan.new = [{"name": "CustomStep", "description": request.text}]
        log_event(
            logging.INFO,
            "assistant.flow.planned",
            request_id=request.request_id,
            components=",".join(plan.chosen)[:300],
            custom=",".join(n["name"] for n in plan.new)[:200],
        )
        return plan

    async def _reuse(self, request: Request, plan_reply: str, candidates: list[Any], catalog: Any, plan: _Plan) -> None:
        """Reuse before generate: when the plan names one of the user's flows, that flow (its
        inputs set from the request) becomes the one this request edits."""
        from lfassist_jupyter.core import reuse

        self._reused = None
        name, change, inputs = await asyncio.to_thread(reuse.parse_reuse, plan_reply)
        candidate = reuse.match_candidate(name, candidates) if name else None
        loaded = await reuse.load_candidate(candidate, self.library) if candidate else None
        if candidate is None or loaded is None or facts.shape_problem(loaded) is not None:  # checked there first
            return
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
            return
        if not spec_text:
            return
        plan.current_spec, shown, chat_text = reuse.apply_inputs(spec_text, inputs, catalog)
        if chat_text:
            self.probe_text = chat_text
        self._reused = {"name": candidate.name, "where": candidate.where, "inputs": shown}
        if not change and not plan.new:
            plan.prebuilt = f"```\n{plan.current_spec}```"  # nothing to change: no write call
        log_event(logging.INFO, "assistant.flow.reused", request_id=request.request_id, where=candidate.where)

    async def _write_and_check(
        self,
        request: Request,
        sink: Sink,
        catalog: Any,
        plan: _Plan,
        components: list[ComponentOutcome],
        custom_names: list[str],
    ) -> FlowOutcome:
        """Step 3: write, build, validate, probe-run; repair with the top errors, up to
        ``max_retries`` attempts (0: build once, unchecked)."""
        validate = self.max_retries > 0
        max_attempts = self.max_retries if validate else 1
        progress = self._progress(sink)
        interfaces = self._interfaces(catalog, plan.chosen, custom_names)
        first = {
            "role": "user",
            "content": prompts.write_message(request.text, interfaces, plan.current_spec, custom_names),
        }
        messages = [first]
        last = _Attempt()
        for attempt in range(1, max_attempts + 1):
            if attempt == 1:
                progress("generating_flow", attempt, "Writing the flow...")
            try:
                reply = plan.prebuilt if attempt == 1 and plan.prebuilt else await self._generate(request, messages)
            except ProviderError as exc:
                log_request_error(request.request_id, exc)
                return FlowOutcome(
                    result=str(exc),
                    intent=self.intent,
                    flow=last.flow,
                    spec=last.spec,
                    attempts=attempt - 1,
                    error=str(exc),
                    report=last.report,
                    run=last.run,
                    components=components,
                )
            progress("building_flow", attempt, "Building the flow with lfx...")
            built, problems, last.notes = await asyncio.to_thread(self._build, reply, catalog)
            last.report = last.run = None  # the outcome describes the last attempt
            if built is None and not problems:
                if attempt == 1:
                    # No spec at all: the model answered in prose (e.g. asked which model to use).
                    # Its words are the answer; the card and the text view say why there is no flow.
                    said = one_line(reply or "", 300) or "(nothing)"
                    why = f"No flow was built: the model's reply held no flow spec ('nodes:'). It said: {said}"
                    return FlowOutcome(result=reply, intent=self.intent, components=components, error=why)
                problems = ["flow: the reply held no spec (a fenced block with 'nodes:' and 'edges:')."]
            if built is not None:
                last.flow, last.spec = built.flow, built.spec
                if not built.ok:
                    problems = [str(e) for e in built.errors]
            if not validate and last.flow is not None:
                return self._finish(last, False, attempt, components, validate=False)
            if last.flow is not None and not problems:
                problems = await self._check(last, catalog, progress, attempt, max_attempts)
            if not problems and last.report is not None and last.report.verdict == "not_judged":
                progress("flow_failed", attempt, "The flow was not judged here.", error=last.error)
                return self._finish(last, False, attempt, components)
            if not problems and last.flow is not None:
                progress(
                    "flow_validated",
                    attempt,
                    "Flow validated.",
                    reduced_isolation=flow_reduced_isolation(last.run, components),
                )
                log_event(logging.INFO, "assistant.flow.validated", request_id=request.request_id, attempts=attempt)
                last.error = None
                return self._finish(last, True, attempt, components)
            last.error = "; ".join(problems[:5]) or "The flow could not be built."
            progress("flow_failed", attempt, "The flow did not validate.", error=last.error)
            log_event(logging.WARNING, "assistant.flow.failed", request_id=request.request_id, error=last.error,
                      attempt=attempt)  # fmt: skip
            if attempt == max_attempts:
                break
            progress(
                "repairing_flow",
                attempt + 1,
                f"Repairing the flow with the errors as context (attempt {attempt + 1} of {max_attempts})...",
            )
            hint = self._hint(problems, catalog, plan.chosen)
            messages = [
                first,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": prompts.repair_message(problems[:5], attempt, max_attempts, hint)},
            ]
        return self._finish(last, False, max_attempts, components, validate=validate)

    async def _check(
        self, last: _Attempt, catalog: Any, progress: Callable[..., None], attempt: int, max_attempts: int
    ) -> list[str]:
        """``validate_flow``, then the probe run; the problems a repair round gets (none: valid).
        A probe run that failed only for a file the user must give is a need, not a problem."""
        assert last.flow is not None
        flow = last.flow
        progress("validating_flow", attempt, f"Validating the flow (attempt {attempt} of {max_attempts})...")
        from lfassist_jupyter.flows import validate_flow

        report = await asyncio.to_thread(validate_flow, flow, catalog=catalog)
        last.report = report
        problems = [str(e) for e in report.errors]
        if not problems and report.verdict == "not_judged":
            # Not valid, and nothing a model could repair: this environment lacks what judging it
            # takes.  No probe run either: it would stop at the same missing import.
            lacking = ", ".join(p.distribution for p in report.missing_packages)
            why = f"the sandbox's environment lacks {lacking}" if lacking else "; ".join(report.not_judged[:3])
            last.error = f"Not judged here: {why}."
            return []
        if not problems:
            progress("running_flow", attempt, "Probe run in the sandbox (models stubbed)...")
            run = last.run = await self._probe(flow, report)
            if not run.ok:
                report.needs += file_needs(flow, str(run.error or ""))
                known = {(n.kind, n.node_id) for n in report.needs}
                report.needs += [Need(**n.model_dump()) for n in run.needs if (n.kind, n.node_id) not in known]
            provide = [n for n in report.needs if n.kind != "package"]
            from lfassist_jupyter.flows.probed import with_probe

            # A node that fails for the flow's own fault makes the verdict broken, naming it.
            report = last.report = with_probe(report, flow, run)
            if not run.ok and not provide:  # a run that failed at no need is a failed flow
                problems = [str(e) for e in report.errors] or [f"flow: the probe run failed: {run.error}"]
        return problems

    # -- steps -------------------------------------------------------------------------------

    async def _generate(self, request: Request, messages: list[dict[str, str]]) -> str:
        chunks = request.provider.stream(request.call(prompts.WRITE_SYSTEM, messages))
        return "".join([chunk async for chunk in chunks])

    def _flow_model(self, request: Request) -> FlowModel | None:
        """The model the flow's model nodes call: ``flow_model``, else the request's own."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.flows.model_nodes import flow_model_for
        from lfassist_jupyter.providers import available_providers

        provider = request.provider
        model = request.model_in_use
        if not model and not self.flow_model:
            return None  # none is named: known once the server is asked (the first call)
        try:
            return flow_model_for(
                getattr(provider, "name", None),
                model,
                base_url=getattr(provider, "base_url", None),
                setting=self.flow_model,
                base_urls={info.name: info.base_url for info in available_providers()},
            )
        except ConfigError as exc:
            log.warning("%s The flow's model nodes are left for the user to choose.", exc)
            return None

    def _build(self, reply: str, catalog: Catalog) -> tuple[Any, list[str], list[str]]:
        """lfx's builder with our deterministic repairs, the model nodes set to the user's model
        first (``flows.model_nodes``); (result, blocking problems, notes).

        The flow is made as the inserted ``%%assist_flow`` cell will make it (``apply_spec``), so
        the card and a re-run of the cell are one flow: an edit of a loaded flow is applied to its
        file's flow (``base``; ``edit_flow``: what the edit does not name comes back byte for byte,
        its model nodes included -- only the nodes the edit adds get the user's model); any other
        flow is what its spec builds.  A file that can no longer be read: the edit is applied to
        the conversation's copy of the flow, and a note says the cell holds the spec alone."""
        from lfassist_jupyter.errors import FlowFileError
        from lfassist_jupyter.flows import FlowSpecError, apply_spec, edit_flow, extract_spec
        from lfassist_jupyter.flows.model_nodes import configure_model_nodes

        editing = bool(self.current_flow and not self._reused)
        base = self.base if editing else None
        lost: list[str] = []
        try:
            keep = self._edited_ids if editing else set()
            spec, configured = configure_model_nodes(extract_spec(reply), catalog, self.choice, keep=keep)
            try:
                built = apply_spec(spec, base=base, catalog=catalog, repair=True)
            except FlowFileError as exc:
                assert self.current_flow is not None
                lost = [f"{exc} The edit was applied to the conversation's copy; the cell holds its spec alone."]
                base = None
                built = edit_flow(self.current_flow, spec, catalog=catalog, repair=True)
        except FlowSpecError as exc:
            return None, [str(exc)] if "```" in (reply or "") or "nodes" in (reply or "") else [], []
        self._base_used = base
        notes = [*lost, *(f"{c.node}: {c.message}" for c in configured)]
        notes += [*built.warnings, *(f"Repaired {c.node}: {c.message}" for c in built.changes if c.kind != "quote")]
        if built.flow is None:
            return None, [str(e) for e in built.errors] or ["The spec has no usable node."], notes
        return built, [], notes

    async def _probe(self, flow: dict[str, Any], report: FlowReport | None = None) -> FlowRun:
        """The probe run, in the environment that judged the flow (a provisioned one, when the
        sandbox's lacked what the flow needs)."""
        from lfassist_jupyter.flows.provisioned import sandbox_that_judged

        sandbox = sandbox_that_judged(report) or self.sandbox
        if sandbox is None:
            return FlowRun.failed("No sandbox to probe-run the flow in.")
        from lfassist_jupyter.flows.needs import explain_run

        run = await asyncio.to_thread(sandbox.probe_run, flow, self.probe_text, self.probe_timeout)
        run = explain_run(flow, run)  # stopped at a file, key or service the user must provide
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
            task="component",
        )
        outcome = await ComponentPipeline(self.validator, self.max_retries).run(sub, sink)
        if not outcome.code or (self.max_retries > 0 and not outcome.validated):
            return outcome, None, outcome.error or "the model wrote no component code"
        if self.sandbox is None:
            return outcome, None, "no sandbox to build its node template in"
        made = await asyncio.to_thread(self.sandbox.component_template, outcome.code)
        if not made.ok or made.template is None:
            return outcome, None, str(made.error)
        key = outcome.class_name or item["name"]
        catalog.add(key, made.template, description=str(made.template.get("description") or item["description"]))
        return outcome, key, None

    def _finish(
        self,
        last: _Attempt,
        validated: bool,
        attempts: int,
        components: list[ComponentOutcome],
        *,
        validate: bool = True,
    ) -> FlowOutcome:
        flow, run = last.flow, last.run
        text = summary(
            flow,
            validated,
            attempts,
            last.error,
            last.report,
            run,
            components,
            validate=validate,
            reduced_isolation=flow_reduced_isolation(run, components),
        )
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
            spec=last.spec,
            validated=validated,
            attempts=attempts if validate else 0,
            error=last.error,
            report=last.report,
            run=run,
            components=components,
            notes=last.notes,
            base=self._base_used if flow is not None else None,
        )


def _node_names(flow: dict[str, Any]) -> list[str]:
    return [facts.node_name(node) for node in facts.nodes(flow)]


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
    reduced_isolation: str | None = None,
) -> str:
    """One paragraph: what was built, what the probe run did and stubbed, what the user must provide.
    "Validated" under reduced isolation says so (``reduced_isolation``: why)."""
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
        reduced = f" (reduced isolation: {reduced_isolation})" if reduced_isolation else ""
        parts.append(f"It validated{reduced} after {attempts} attempt{plural}.")
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
    if report is not None and report.models:
        parts.append(f"Its model nodes call: {'; '.join(str(m) for m in report.models[:4])}.")
    if report is not None and report.missing_packages:
        names = [p.distribution for p in report.missing_packages]
        fix = report.missing_packages[0].fix.rsplit(" ", 1)[0] + " " + " ".join(names)
        parts.append(f"It needs packages not installed here: {', '.join(names)} (`{fix}`).")
    provide = [n for n in report.needs if n.kind != "package"] if report is not None else []  # packages: above
    if provide:
        needs = "; ".join(n.message for n in provide[:6])
        parts.append(f"Before a real run, provide: {needs}")
    return " ".join(parts)
