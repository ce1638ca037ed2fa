"""Reuse before generate: a built-in component instead of a lookalike, an existing flow instead of a new one.

Langflow users complain that its Assistant "builds custom components instead of finding
existing ones" (langflow-ai/langflow#14972). Here the classification call already sees the
light catalogue (a name and one line per bundled component, about 5 KB) and may name a
built-in that does the job; the answer then describes it (what it does, its inputs and
outputs, where it is in Langflow) and offers to generate anyway. No generation call is spent.
The user gets a new component with "generate anyway" (or ``%%assist --generate``).

For flows the plan call sees the user's flows and Langflow's starter templates (one line
each, ``reuse_lines``) and may answer "reuse X"; the flow pipeline then edits X.  Those names
come from a shared server as often as from the user: they are one line, cleaned and capped,
and travel in the user message as quoted data, never in the system prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.core.intent import USE_BUILTIN, json_object_in
from lfassist_jupyter.core.outcome import AnswerOutcome, BuiltinComponent
from lfassist_jupyter.core.request_log import log
from lfassist_jupyter.ports import NAME_CAP, FlowLibrary, one_line

BUILTIN_BUDGET = 8_000
"""What the catalogue may take of the classification prompt (the whole call stays under 16 KB)."""

_GENERATE_ANYWAY = re.compile(
    r"(?:--generate\b|\bgenerate\s+(?:it\s+|one\s+|a\s+new\s+one\s+)?anyway\b|\b(?:write|make)\s+(?:it|one|my\s+own)"
    r"\s+anyway\b|\bno,?\s+generate\b)",
    re.I,
)


def wants_generation(text: str) -> bool:
    """Whether the user asked for a generated component even though a built-in exists."""
    return bool(_GENERATE_ANYWAY.search(text or ""))


def is_bare_generate(text: str) -> bool:
    """A follow-up that only says "generate anyway" (it refers to the request before it)."""
    rest = _GENERATE_ANYWAY.sub(" ", text or "")
    return len(re.sub(r"[\W_]+|\b(?:please|ok|okay|then|thanks?|yes|just)\b", "", rest, flags=re.I)) == 0


def builtin_lines(catalog: Any) -> str | None:
    """The bundled components, a name and one line each, within ``BUILTIN_BUDGET`` (the names
    only past it); None when there is no catalogue."""
    if catalog is None:
        return None
    bundled = {k: v for k, v in catalog.registry.items() if k not in getattr(catalog, "added", {})}
    from lfassist_jupyter.flows.catalog import Catalog

    light = Catalog(bundled).light()
    if len(light) <= BUILTIN_BUDGET:
        return light
    names = ", ".join(bundled)
    return names[:BUILTIN_BUDGET]


def describe_builtin(catalog: Any, name: str) -> BuiltinComponent | None:
    """The built-in ``name`` (resolved like a spec's component type) with its ports, or None."""
    key = catalog.resolve(name) if catalog is not None else None
    if key is None or key in getattr(catalog, "added", {}):
        return None
    entry: Mapping[str, Any] = catalog.registry[key]
    inputs = []
    for fname, field in (entry.get("template") or {}).items():
        if fname.startswith("_") or fname == "code" or not isinstance(field, Mapping) or not field.get("show", True):
            continue
        if field.get("advanced") and not field.get("required"):
            continue
        label = str(field.get("display_name") or fname)
        types = "|".join(field.get("input_types") or []) or str(field.get("type") or "str")
        inputs.append(f"{label} ({fname}): {types}")
    outputs = [
        f"{o.get('display_name') or o.get('name')} ({o.get('name')}): {'|'.join(o.get('types') or [])}"
        for o in entry.get("outputs") or []
        if isinstance(o, Mapping)
    ]
    return BuiltinComponent(
        name=key,
        display_name=str(entry.get("display_name") or key),
        description=" ".join(str(entry.get("description") or "").split()),
        category=str(entry.get("category") or ""),
        inputs=inputs,
        outputs=outputs,
    )


def builtin_outcome(component: BuiltinComponent) -> AnswerOutcome:
    """The answer that offers a built-in instead of generating it: what, ports, how to add it."""
    where = f" (in the {component.category.replace('_', ' ').title()} group)" if component.category else ""
    lines = [
        f"Langflow already has a component for this: **{component.display_name}** (`{component.name}`). "
        f"{component.description}".rstrip(),
        "",
        f"Inputs: {'; '.join(component.inputs) or 'none'}.",
        f"Outputs: {'; '.join(component.outputs) or 'none'}.",
        "",
        f"To add it in Langflow, search for “{component.display_name}” in the components sidebar{where} and "
        f"drag it onto the canvas; in a flow spec it is `X: {component.name}`.",
        "Want your own anyway? Say “generate anyway” (or use `%%assist --generate`) and I will write a new component.",
    ]
    return AnswerOutcome(result="\n".join(lines), intent=USE_BUILTIN, builtin=component)


# -- flows ---------------------------------------------------------------------------------------

FLOWS_BUDGET = 3_500
"""What the list of the user's flows and templates may take of the plan prompt."""
_DESCRIPTION_CAP = 80
_SPEC_DESCRIPTION_CAP = 500
"""A reused flow's description, which its spec (the write call's user message) carries on one line."""


@dataclass
class FlowCandidate:
    """A flow the plan call may reuse: the session's, the connected Langflow's, or a starter template.

    ``name`` and ``description`` are one line each (``ports.one_line``): they may come from a
    shared server, and reach the plan call's user message as quoted data."""

    name: str
    description: str
    where: str
    """"this conversation", "Langflow" or "Langflow template": shown to the model and the user."""
    flow: dict[str, Any] | None = None
    flow_id: str | None = None
    """A Langflow flow listed by its header only: loaded by id when reused."""

    def __post_init__(self) -> None:
        self.name = one_line(self.name, NAME_CAP)
        self.description = one_line(self.description, _DESCRIPTION_CAP)


async def gather_flows(
    session_flows: list[dict[str, Any]] | None, library: FlowLibrary | None = None
) -> list[FlowCandidate]:
    """The flows a request may start from: this conversation's (newest first, one per name),
    then the library's (the connected Langflow's) flows and starter templates. A library that
    cannot be asked only drops its part (the request goes on with what is known)."""
    out: list[FlowCandidate] = []
    seen: set[str] = set()

    def add(candidate: FlowCandidate) -> None:
        key = candidate.name.lower()
        if candidate.name and key not in seen:
            seen.add(key)
            out.append(candidate)

    for flow in session_flows or []:
        add(FlowCandidate(str(flow.get("name") or ""), str(flow.get("description") or ""), "this conversation", flow))
    if library is None:
        return out
    from lfassist_jupyter.errors import LfAssistError

    try:
        for entry in await library.alist_flows():
            add(FlowCandidate(entry.name, entry.description, library.where, None, entry.id))
    except LfAssistError as exc:
        log.info("%s's flows are not offered for reuse: %s", library.where, exc)
    try:
        for entry in await library.astarters():
            add(FlowCandidate(entry.name, entry.description, f"{library.where} template", entry.flow))
    except LfAssistError as exc:
        log.info("%s's starter templates are not offered for reuse: %s", library.where, exc)
    return out


def reuse_lines(candidates: list[FlowCandidate], budget: int = FLOWS_BUDGET) -> str:
    """One line per flow, within ``budget`` (the newest, closest ones first): the name and what it
    does as quoted strings (``- "Echo QA" (this conversation): "Answers with a prompt."``), so a
    name is visibly data however it is worded.  Goes into the plan call's user message."""
    lines: list[str] = []
    size = 0
    for c in candidates:
        line = f"- {_quoted(c.name)} ({c.where}): {_quoted(c.description or 'no description')}"
        if size + len(line) + 1 > budget:
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def parse_reuse(reply: str) -> tuple[str | None, str, dict[str, str]]:
    """(flow to reuse, what to change, extracted inputs) from the plan reply; (None, "", {}) when
    it reuses nothing. Read tolerantly, like the rest of the plan."""
    obj = json_object_in(reply)
    if not isinstance(obj, dict) or not isinstance(obj.get("reuse"), str) or not obj["reuse"].strip():
        return None, "", {}
    change = obj["change"] if isinstance(obj.get("change"), str) else ""
    raw = obj["inputs"] if isinstance(obj.get("inputs"), dict) else {}
    inputs = {str(k).strip(): str(v) for k, v in raw.items() if str(k).strip() and isinstance(v, (str, int, float))}
    return obj["reuse"].strip(), change.strip(), inputs


def match_candidate(name: str, candidates: list[FlowCandidate]) -> FlowCandidate | None:
    """The one candidate the plan named (exact, a whole-word part, a near miss; never a guess
    between two)."""
    from lfassist_jupyter.core.flow.run_request import match_name

    return match_name(name, [(c.name, c) for c in candidates])


async def load_candidate(candidate: FlowCandidate, library: FlowLibrary | None = None) -> dict[str, Any] | None:
    """The candidate's flow JSON (a flow listed by header is fetched by id), named as it was
    listed: a stored flow's own name and description are cleaned like the listing's."""
    flow = candidate.flow
    if flow is None and library is not None and candidate.flow_id:
        from lfassist_jupyter.errors import LfAssistError

        try:
            flow = await library.aget_flow(candidate.flow_id)
        except LfAssistError as exc:
            log.info("The flow %s could not be loaded for reuse: %s", candidate.name, exc)
            return None
    if not isinstance(flow, dict):
        return None
    return {**flow, "name": candidate.name, "description": one_line(flow.get("description"), _SPEC_DESCRIPTION_CAP)}


_CHAT_INPUTS = ("input", "input_value", "text", "message", "question", "query", "chat_input")


def apply_inputs(spec: str, inputs: dict[str, str], catalog: Any) -> tuple[str, list[str], str | None]:
    """Put the request's extracted values into the flow's inputs: ``(spec, what was set, chat text)``.

    A key is ``Node.field`` or a field name of some node (``urls`` finds the URL component's
    ``urls``; ``url`` finds it too); a value no node takes but that reads as the chat's input
    becomes the text of the probe run. Values are one line (a spec value never spans lines here).
    """
    nodes: dict[str, str] = {}
    section = None
    for line in spec.splitlines():
        stripped = line.strip()
        if stripped in ("nodes:", "edges:", "config:"):
            section = stripped
        elif section == "nodes:" and ":" in stripped:
            node_id, kind = (p.strip() for p in stripped.split(":", 1))
            nodes[node_id] = catalog.resolve(kind) or kind
    shown: list[str] = []
    settings: dict[str, str] = {}
    chat_text: str | None = None
    for key, value in inputs.items():
        value = " ".join(value.split())
        target = _field_for(key, nodes, catalog)
        if target is not None:
            settings[target] = value
            shown.append(f"{target} = {value!r}")
        elif key.lower() in _CHAT_INPUTS and chat_text is None:
            chat_text = value
            shown.append(f"the chat input = {value!r}")
    if not settings:
        return spec, shown, chat_text
    lines = spec.rstrip("\n").splitlines()
    kept: list[str] = []
    skipping = False
    for line in lines:
        head = line.strip().split(":", 1)[0]
        if head in settings:
            skipping = line.rstrip().endswith("|")
            continue
        if skipping and line.startswith("    "):
            continue
        skipping = False
        kept.append(line)
    new = [f"  {k}: {v}" for k, v in settings.items()]
    if "config:" in (line.strip() for line in kept):
        at = next(i for i, line in enumerate(kept) if line.strip() == "config:")
        kept[at + 1 : at + 1] = new
    else:
        kept += ["", "config:", *new]
    return "\n".join(kept) + "\n", shown, chat_text


def _field_for(key: str, nodes: dict[str, str], catalog: Any) -> str | None:
    if "." in key:
        node_id, field = key.split(".", 1)
        return key if node_id in nodes and field else None
    wanted = key.lower()
    for exact in (True, False):
        for node_id, kind in nodes.items():
            template = (catalog.registry.get(kind) or {}).get("template") or {}
            if kind in ("ChatInput", "ChatOutput"):
                continue  # the chat's text is the run's input, not a config value
            for field, spec in template.items():
                if field.startswith("_") or field == "code" or not isinstance(spec, dict) or spec.get("password"):
                    continue
                name = field.lower()
                if name == wanted or (not exact and (name.rstrip("s") == wanted.rstrip("s"))):
                    return f"{node_id}.{field}"
    return None


def normalise_flow(flow: dict[str, Any], catalog: Any) -> dict[str, Any]:
    """A copy of a stored flow whose nodes name their catalogue entries, ready for ``flow_to_spec``.

    Langflow's starter templates call a node by its component's short name (``Prompt``), which
    resolves to the wrong entry (``LangChain Hub Prompt``); the node's module names the right one.
    Fields the entry does not have (``tools_metadata`` of a node in tool mode) are dropped: the
    builder would refuse them as unknown parameters, and they hold no value of the user's.
    """
    import copy

    by_module: dict[str, str] = {}
    for key, entry in catalog.registry.items():
        module = (entry.get("metadata") or {}).get("module") if isinstance(entry, Mapping) else None
        if module and not entry.get("custom"):
            by_module.setdefault(str(module), key)
    out = copy.deepcopy(flow)
    for node in facts.nodes(out):
        front = facts.frontend_node(node)
        if facts.node_type(node) == "CustomComponent" or not front:
            continue
        metadata = front.get("metadata")
        module = metadata.get("module") if isinstance(metadata, dict) else None
        key = by_module.get(str(module)) if module else None
        if key is None:
            continue
        node["data"]["type"] = node["data"]["_flow_builder_registry_type"] = key
        known = (catalog.registry[key].get("template") or {}).keys()
        template = facts.fields(node)
        for field in [f for f in template if not f.startswith("_") and f != "code" and f not in known]:
            del template[field]
    return out
