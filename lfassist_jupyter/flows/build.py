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
from pathlib import Path
from typing import Any, get_args

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.artifacts.flow import VARIABLE_REF, is_key_field, name_variable, spec_scalar

from .catalog import Catalog
from .load import base_flow, require_flow
from .merge import (
    Merged,
    components,
    merge_flow,
    node_id_for,
    node_names,
    read_spec,
    rename_nodes,
    spec_ids,
    spec_kinds,
)
from .results import BuildResult, Change, ErrorCode, FlowProblem
from .spec_text import extract_spec, spec_nodes

__all__ = [
    "VARIABLE_REF",
    "apply_spec",
    "build_flow",
    "edit_flow",
    "extract_spec",
    "flow_to_spec",
    "is_key_field",
    "name_variable",
]

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
    spec_text, renamed = _known_names(spec_text, catalog)
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
    changes[:0] = renamed
    # This build ran no code but lfx's own (custom refreshes ran before, on their own): what the
    # sandbox refused here is lfx's doing, said but not held against the flow.
    refused = [f"The sandbox refused `{r.get('what')}` while lfx built the flow." for r in answer.refused[:3]]
    node_ids = dict(answer.node_ids)
    if isinstance(answer.flow, dict):
        answer.flow.pop("id", None)  # the builder's is a new UUID per build, not an identity
        node_ids = _settle_ids(answer.flow, node_ids)
    return BuildResult(
        ok=answer.ok and not errors and answer.flow is not None,
        flow=answer.flow,
        spec=spec_text,
        errors=errors,
        warnings=[*answer.warnings, *refused],
        changes=changes,
        node_ids=node_ids,
    )


def _settle_ids(flow: object, node_ids: dict[str, str]) -> dict[str, str]:
    """Each built node's id from its spec id (``ChatInput-A``, ``merge.node_id_for``) instead of
    lfx's random suffix: the same spec builds the same flow, in this kernel or a fresh one (the
    re-run of an inserted cell reproduces the card's flow), and ``flow_to_spec`` gives the spec
    its own ids back.  ``flow`` is renamed in place; the spec id -> node id map is returned."""
    present = {facts.node_id(n) for n in facts.nodes(flow)}
    renamed = {nid: node_id_for(nid, sid) for sid, nid in node_ids.items() if nid in present}
    finals = set(renamed.values())
    if len(finals) != len(renamed) or finals & (present - set(renamed)):
        return node_ids  # (cannot happen: spec ids are unique) never two nodes under one id
    rename_nodes(flow, renamed)
    return {sid: renamed.get(nid, nid) for sid, nid in node_ids.items()}


_NODE_TYPE = re.compile(r"^(\s*[\w-]+\s*:\s*)(\S.*?)(\s*)$")


def _known_names(spec_text: str, catalog: Catalog) -> tuple[str, list[Change]]:
    """The spec with each component named as the catalogue names it, when lfx knows the name the
    spec wrote as exactly one entry (``Catalog.known``: ``Prompt`` of Langflow 1.0-1.12 is
    ``Prompt Template``; ``OpenAIModelComponent``, ``ext:openai:OpenAIModelComponent@official`` are
    ``OpenAIModel``): before the builder's near-miss repair, which would guess."""
    lines = extract_spec(spec_text).splitlines()  # the text spec_nodes numbers the lines of
    changes: list[Change] = []
    for spec_id, kind, number in spec_nodes(spec_text) or []:
        meant = catalog.known(kind) if kind not in catalog.registry else None
        match = _NODE_TYPE.match(lines[number - 1]) if meant else None
        if match is None or meant is None:
            continue
        lines[number - 1] = f"{match.group(1)}{meant}{match.group(3)}"
        message = f"{kind!r} is lfx's {meant!r}"
        changes.append(Change(kind="component", node=spec_id, before=kind, after=meant, message=message))
    return ("\n".join(lines) if changes else spec_text), changes


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


_NUMERIC = ("float", "int", "slider")


def _is_number(text: str) -> bool:
    return isinstance(spec_scalar(text), (int, float)) and not isinstance(spec_scalar(text), bool)


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
            if field.get("type") == "model":
                text = _model_value(value)
            elif field.get("type") in _NUMERIC and isinstance(value, str) and _is_number(value.strip()):
                text = value.strip()  # an old flow's "0.9" in today's slider: the number it means
            else:
                text = _format_value(value)
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
    node id, ``errors`` the build's errors about what the edit changes (``_edit_errors``). Raises
    ``FlowSpecError`` like ``build_flow`` when there is no spec at all.
    """
    old_spec = flow_to_spec(original, catalog=catalog)
    kinds, sids = spec_kinds(original, catalog), spec_ids(components(original))
    names = {sids[n["id"]]: node_names(n, kinds[n["id"]], catalog) for n in components(original)}
    built = build_flow(text, catalog=catalog, repair=repair)
    if built.flow is None:
        return built
    merged = merge_flow(original, old_spec, built.spec, built.flow, built.node_ids, names, catalog.registry)
    errors = _edit_errors(built.errors, old_spec, built.spec, merged)
    update = {"flow": merged.flow, "node_ids": merged.node_ids, "errors": errors, "ok": not errors}
    return built.model_copy(update=update)


def _edit_errors(errors: list[FlowProblem], old_spec: str, new_spec: str, merged: Merged) -> list[FlowProblem]:
    """The build's errors that concern what the edit changed.  A node the edit keeps is the
    original node (``merge_flow``): a value of it the edit left as it was, or a port of it an
    unchanged edge uses, is the original's, not the build's -- an old flow's ``temperature: "0.9"``
    that today's slider refuses to rebuild is not an error of the edit (``validate_flow`` of the
    merged flow judges what the flow really holds)."""
    old, new = read_spec(old_spec), read_spec(new_spec)
    kept = {sid for sid, nid in merged.node_ids.items() if nid in merged.kept}
    same_edges = set(old.edges) & set(new.edges)
    ports = {(e[0], e[1]) for e in same_edges} | {(e[2], e[3]) for e in same_edges}
    # The nodes the edit touches: a new edge to them, a value of theirs it changes.
    touched = {e[0] for e in set(new.edges) - same_edges} | {e[2] for e in set(new.edges) - same_edges}
    touched |= {sid for (sid, name), text in new.config.items() if old.config.get((sid, name)) != text}
    out = []
    for error in errors:
        node, field = error.node or "", error.field or ""
        untouched_value = (node, field) in old.config and old.config.get((node, field)) == new.config.get((node, field))
        untouched_port = error.code in ("missing_input", "missing_output", "type_mismatch") and (node, field) in ports
        # A kept node the spec names as it was named before (its own entry, which this catalogue
        # does not hold): the file's node, which the edit does not touch.
        untouched_node = error.code == "unknown_component" and node not in touched
        if node in kept and ((field and (untouched_value or untouched_port)) or untouched_node):
            continue
        out.append(error)
    return out


def apply_spec(text: str, *, catalog: Catalog, base: str | Path | None = None, repair: bool = True) -> BuildResult:
    """The flow a spec makes, the one way every view makes it: built from nothing (``base`` None),
    or applied to the flow in the file ``base`` names (``edit_flow`` on ``load.base_flow``: the
    file's flow without its keys), so every node the spec keeps is the file's, byte for byte.

    What a ``%%assist_flow [--edit FILE]`` cell runs, and what the assistant runs for the card it
    inserts that cell for: the same spec and file give the same flow, in this kernel or a fresh
    one (node ids come from spec ids, ``merge.node_id_for``).  ``FlowFileError`` (one line) when
    ``base`` is not a readable flow file; ``FlowSpecError`` when ``text`` holds no spec."""
    if base is None:
        return build_flow(text, catalog=catalog, repair=repair)
    return edit_flow(base_flow(base), text, catalog=catalog, repair=repair)
