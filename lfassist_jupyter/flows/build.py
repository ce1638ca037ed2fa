"""Spec text (lfx's compact `nodes:` / `edges:` / `config:` format) <-> Langflow flow JSON.

Building is lfx's own (`parse_flow_spec`, `build_flow_from_spec`, `configure_component`,
`add_connection`, `layout_flow`), and it runs behind the sandbox's one door: setting a
real-time-refresh field runs the node's component code (Langflow's form update), so the
whole build happens in a fresh sandboxed child (``sandbox/worker/_flow_ops.py``), never here.
This module finds the spec in a model reply, sends it with the catalogue's extra entries,
and reads the typed answer. What the op adds to lfx: a spec inside a model reply; leniency
(a malformed line is dropped with a warning); quoted values; dynamic prompt fields; every
problem collected (lfx stops at the first). A built flow has no top-level ``id``: an id is the
flow's identity, given when it is first saved or registered and kept from then on
(``flows/save.py``), not a new one per build.

`flow_to_spec` (flow JSON -> spec text) is pure data work and runs here.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, get_args

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import VARIABLE_REF, is_key_field, name_variable, spec_scalar

from .catalog import Catalog
from .load import require_flow
from .merge import components, merge_flow, spec_ids, spec_kinds
from .results import BuildResult, Change, ErrorCode, FlowProblem
from .spec_text import extract_spec, spec_nodes

__all__ = ["VARIABLE_REF", "build_flow", "extract_spec", "flow_to_spec", "is_key_field", "name_variable"]

_SECTION = re.compile(r"^\s*(nodes|edges|config):\s*$", re.MULTILINE)
_ERROR_CODES = set(get_args(ErrorCode))


def build_flow(text: str, *, catalog: Catalog, repair: bool = True) -> BuildResult:
    """Build Langflow flow JSON from spec text or a model reply holding one.

    Never raises for a problem in the spec's content: the result lists every error (each with
    its node, field and a fix) and still carries the partial flow. Raises `FlowSpecError` only
    when there is no spec at all (found here, before any sandbox work). With ``repair`` the
    deterministic repairs (component near-misses, port names, value coercions) are applied
    and listed in ``changes``. The build runs in the catalogue's sandbox (``catalog.sandbox``);
    when the sandbox itself fails, or the catalogue has none, the result says so as an error.
    (``lfassist_jupyter.build_flow`` is this over the shared sandbox's catalogue.)
    """
    spec_text = extract_spec(text)
    sandbox = catalog.sandbox
    if sandbox is None:
        error = FlowProblem(code="structure", message="The flow could not be built: its catalogue has no sandbox.")
        return BuildResult(ok=False, spec=spec_text, errors=[error])
    control = None
    if repair:  # loop and branch wiring first (flows/control.py): the sandbox builds the fixed spec
        from .control import infer_control_flow

        control = infer_control_flow(spec_text, catalog)
        spec_text = control.spec
    templates, refresh_errors = _refreshed_templates(sandbox, spec_text, catalog, repair)
    if refresh_errors:
        return BuildResult(ok=False, spec=spec_text, errors=refresh_errors)
    answer = sandbox.build_flow(spec_text, extra=catalog.added, repair=repair, templates=templates or None)
    # What comes back from the sandbox is untrusted (the build can run a node's code): shape-checked.
    problem = facts.shape_problem(answer.flow) if answer.flow is not None else None
    if answer.error or problem:
        why = answer.error or f"the sandbox answered a malformed flow ({problem})"
        error = FlowProblem(code="structure", message=f"The flow could not be built: {why}")
        return BuildResult(ok=False, spec=spec_text, errors=[error])
    node_errors = settle_nodes(answer.flow, catalog)
    if node_errors:  # an answer that is not what lfx builds from what was sent: none of it is kept
        return BuildResult(ok=False, spec=spec_text, errors=node_errors)
    errors = [
        FlowProblem.model_validate({**e.model_dump(), "code": e.code if e.code in _ERROR_CODES else "structure"})
        for e in answer.errors
    ]
    kinds = ("port", "component", "value", "quote")
    changes = [Change.model_validate(c.model_dump()) for c in answer.changes if c.kind in kinds]
    if control is not None:
        changes[:0], errors[:0] = control.changes, control.errors
    # This build ran no code but lfx's own (custom refreshes ran before, on their own): what the
    # sandbox refused here is lfx's doing, said but not held against the flow.
    refused = [f"The sandbox refused `{r.get('what')}` while lfx built the flow." for r in answer.refused[:3]]
    if isinstance(answer.flow, dict):
        answer.flow.pop("id", None)  # the builder's is a new UUID per build, not an identity
    return BuildResult(
        ok=answer.ok and not errors and answer.flow is not None,
        flow=answer.flow,
        spec=spec_text,
        errors=errors,
        warnings=[*answer.warnings, *refused],
        changes=changes,
        node_ids=dict(answer.node_ids),
    )


# -- what a build may bring back ---------------------------------------------------------------

_CONFIG_KEY = re.compile(r"^\s*(\w+)\.(\w+)\s*:")


def _code_of(template: object) -> object:
    """The ``code`` value a node template (or a catalogue entry) carries, or None."""
    fields = template.get("template") if isinstance(template, dict) else None
    code = fields.get("code") if isinstance(fields, dict) else None
    return code.get("value") if isinstance(code, dict) else None


def _refreshing_nodes(spec_text: str, catalog: Catalog) -> list[str]:
    """The spec ids of the nodes whose component is not lfx's own (``catalog.added``) and whose
    configuration sets a real-time-refresh field: their form update runs their code."""
    custom = {}
    for spec_id, kind, _line in spec_nodes(spec_text) or []:
        key = kind if kind in catalog.added else catalog.resolve(kind)
        if key in catalog.added:
            custom[spec_id] = catalog.added[key]
    found: list[str] = []
    section = None
    for line in spec_text.splitlines():
        head = _SECTION.match(line)
        if head:
            section = head.group(1)
            continue
        match = _CONFIG_KEY.match(line) if section == "config" else None
        if match and match.group(1) in custom and match.group(1) not in found:
            field = (custom[match.group(1)].get("template") or {}).get(match.group(2))
            if isinstance(field, dict) and field.get("real_time_refresh"):
                found.append(match.group(1))
    return found


def _refreshed_templates(
    sandbox: Any, spec_text: str, catalog: Catalog, repair: bool
) -> tuple[dict[str, dict[str, Any]], list[FlowProblem]]:
    """The templates of the custom nodes whose form update runs their code, from a build of
    their own: its answer is read for those nodes alone, and each must still carry exactly the
    code that was sent.  The flow itself is built afterwards in a fresh child, from these
    templates, where no code but lfx's runs."""
    ids = _refreshing_nodes(spec_text, catalog)
    if not ids:
        return {}, []
    answer = sandbox.build_flow(spec_text, extra=catalog.added, repair=repair, refresh=ids)
    if answer.error or answer.flow is None:
        return {}, []  # the flow's own build says what is wrong with the spec
    nodes = {n.get("id"): n for n in (answer.flow.get("data") or {}).get("nodes") or [] if isinstance(n, dict)}
    templates: dict[str, dict[str, Any]] = {}
    errors: list[FlowProblem] = []
    for spec_id in ids:
        node = nodes.get(answer.node_ids.get(spec_id))
        data = facts.obj(facts.obj(node).get("data"))
        template = data.get("node")
        kind = _node_kind(data)
        sent = _code_of(catalog.added.get(kind)) if isinstance(kind, str) else None
        if not isinstance(template, dict) or sent is None or _code_of(template) != sent:
            errors.append(_changed_code(spec_id, node))
            continue
        templates[spec_id] = template
    for item in answer.refused:
        errors.append(
            FlowProblem(
                code="bad_value",
                node=", ".join(ids),
                message=f"Updating {', '.join(ids)}'s form, its code did `{item.get('what')}`, which the "
                "validation sandbox refuses; the flow was not built.",
                fix="Fix the component's update_build_config (it is refused however it is reached).",
            )
        )
        break
    return templates, errors


def _node_kind(data: dict[str, Any]) -> object:
    """The catalogue entry a built node came from: lfx's builder places a custom component as a
    ``CustomComponent`` node and keeps its catalogue name in ``_flow_builder_registry_type``."""
    registered = data.get("_flow_builder_registry_type")
    return registered if isinstance(registered, str) and registered else data.get("type")


def _changed_code(node_name: str, node: object) -> FlowProblem:
    node_id = str(node.get("id")) if isinstance(node, dict) else None
    return FlowProblem(
        code="structure",
        node=node_name,
        node_id=node_id,
        field="code",
        message=f"The flow could not be built: the sandbox's answer changed the code of node {node_name}; "
        "nothing of that build was kept.",
        fix="Build the flow again; if it happens again, a component's code is interfering with the build.",
    )


def settle_nodes(flow: dict[str, Any] | None, catalog: Catalog) -> list[FlowProblem]:
    """Take from a build's answer only what is about the code that was sent: every built-in
    node's ``code`` is replaced by the catalogue's (the zygote's facts, read before any
    request), and every custom node (``catalog.added``) must carry exactly the code it was
    sent with. Returns the nodes that do not (the build failed); changes ``flow`` in place."""
    if not isinstance(flow, dict):
        return []
    data = facts.obj(flow.get("data"))
    errors: list[FlowProblem] = []
    for node in data.get("nodes") or []:
        if not isinstance(node, dict) or (not facts.is_component(node) and facts.group_flow(node) is None):
            continue  # a canvas note, which lfx does not build (any other type it builds: so it is checked)
        nd = facts.obj(node.get("data"))
        kind, template = _node_kind(nd), nd.get("node")
        fields = template.get("template") if isinstance(template, dict) else None
        shown = template.get("display_name") if isinstance(template, dict) else None
        name = f"{shown} ({node.get('id')})" if shown else str(node.get("id"))
        if not isinstance(kind, str) or not isinstance(fields, dict):
            errors.append(_changed_code(name, node))
        elif kind in catalog.added:
            if _code_of(template) != _code_of(catalog.added[kind]):
                errors.append(_changed_code(name, node))
        elif kind in catalog.registry:
            trusted = (catalog.registry[kind].get("template") or {}).get("code")
            if isinstance(trusted, dict):
                fields["code"] = copy.deepcopy(trusted)
            else:
                fields.pop("code", None)
        else:
            errors.append(_changed_code(name, node))
    return errors


# -- flow JSON -> spec text ----------------------------------------------------------------


def _format_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    if not isinstance(value, str):
        return None
    if "\n" in value:
        return "|\n" + "\n".join(f"    {line}" for line in value.splitlines())
    # Values lfx would coerce or strip keep their meaning only when quoted.
    if value != value.strip() or spec_scalar(value) != value or value[:1] in "\"'":
        return json.dumps(value)
    return value


def _model_value(value: Any) -> str | None:
    """A model selection as the spec writes it: ``{"name": ..., "provider": ...}`` (lfx's own shape
    without its metadata, which the build fills in again for a model lfx lists)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        name, provider = value[0].get("name"), value[0].get("provider")
        if isinstance(name, str) and isinstance(provider, str) and name and provider:
            return json.dumps({"name": name, "provider": provider})
    return None


def flow_to_spec(flow: dict[str, Any], *, catalog: Catalog) -> str:
    """The spec text of a flow: nodes, edges, and the config values that differ from the defaults.

    lfx has no writer (its `flow_to_spec_summary` leaves out values and is not re-parseable),
    so this is a small one; `build_flow(flow_to_spec(f))` rebuilds the same wiring.
    Each node is written as the catalogue entry it is (``merge.spec_kinds``: by its module or
    code); a node no entry expresses (a group, a component this lfx lacks, custom code) is
    added to ``catalog`` as an entry of its own, so the spec names it and an edit keeps it
    (``edit_flow``). Secrets (password fields) and code are never written: a spec lands in a
    notebook cell. ``FlowFileError`` (one line naming the field) when ``flow`` is not flow JSON.
    """
    require_flow(flow)
    nodes = components(flow)
    kinds = spec_kinds(flow, catalog)
    sids = spec_ids(nodes)
    lines = []
    if flow.get("name"):
        lines.append(f"name: {flow['name']}")
    if flow.get("description"):
        lines.append(f"description: {' '.join(str(flow['description']).split())}")
    lines.append("")
    lines.append("nodes:")
    for node in nodes:
        lines.append(f"  {sids[facts.node_id(node)]}: {kinds[facts.node_id(node)]}")
    edges = []
    for edge in facts.edges(flow):
        source, output, target, port = facts.ports(edge)
        if source in sids and target in sids:
            edges.append(f"  {sids[source]}.{output} -> {sids[target]}.{port}")
    if edges:
        lines += ["", "edges:", *edges]
    config = []
    for node in nodes:
        entry = catalog.registry.get(kinds[facts.node_id(node)]) or {}
        defaults = entry.get("template") or {}
        for name, field in facts.fields(node).items():
            if name.startswith("_") or name == "code" or not isinstance(field, dict):
                continue
            if defaults and name not in defaults:
                continue  # a field the entry does not have (the edit keeps it as it is)
            value = field.get("value")
            if field.get("password") or field.get("load_from_db"):
                names_variable = isinstance(value, str) and bool(VARIABLE_REF.match(value.strip()))
                if is_key_field(field) and field.get("load_from_db") and names_variable:  # a name, never a key
                    config.append(f"  {sids[facts.node_id(node)]}.{name}: {str(value).strip()}")
                continue
            default = (defaults.get(name) or {}).get("value") if isinstance(defaults.get(name), dict) else None
            if value in (None, "", [], {}) or value == default:
                continue
            text = _model_value(value) if field.get("type") == "model" else _format_value(value)
            if text is not None:
                config.append(f"  {sids[facts.node_id(node)]}.{name}: {text}")
    if config:
        lines += ["", "config:", *config]
    return "\n".join(lines).strip("\n") + "\n"


def edit_flow(original: dict[str, Any], text: str, *, catalog: Catalog, repair: bool = True) -> BuildResult:
    """Apply an edited spec (or a model reply holding one) to ``original``, the flow it edits.

    ``original`` was shown as ``flow_to_spec(original)``; the edited spec is built with lfx
    (``build_flow``) and merged into the original JSON (``merge.merge_flow``): what the edit keeps
    comes back byte for byte (positions, values, code, groups, components this lfx lacks); only
    what it names changes. The result's ``flow`` is the merged flow, ``node_ids`` its spec id ->
    node id. Raises ``FlowSpecError`` like ``build_flow`` when there is no spec at all.
    """
    old_spec = flow_to_spec(original, catalog=catalog)
    built = build_flow(text, catalog=catalog, repair=repair)
    if built.flow is None:
        return built
    merged = merge_flow(original, old_spec, built.spec, built.flow, built.node_ids)
    return built.model_copy(update={"flow": merged.flow, "node_ids": merged.node_ids})
