"""Spec text (lfx's compact `nodes:` / `edges:` / `config:` format) <-> Langflow flow JSON.

Parsing and building are lfx's own (`parse_flow_spec`, `build_flow_from_spec`,
`configure_component`, `add_connection`, `layout_flow`). What this module adds is what lfx
leaves to its callers:

* a spec inside a model reply (fenced, with or without a language tag, or bare);
* leniency: a malformed line is dropped with a warning instead of failing the whole spec;
* quoted values: lfx keeps `" -- "` with its quotes, we take the quotes as delimiters;
* dynamic fields: a Prompt Template's ``{variables}`` become inputs only after the component
  is updated, which lfx's builder never does, so an edge into ``B.question`` fails; we run
  Langflow's own prompt processing (`process_prompt_template`) after configuration;
* the top-level ``id`` Langflow and `lfx validate` expect;
* every problem collected (lfx stops at the first), so one repair round sees them all.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from .catalog import Catalog, default_catalog
from .models import BuildResult, Change, FlowError, FlowSpecError

_FENCE = re.compile(r"```[ \t]*([\w.+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_SECTION = re.compile(r"^\s*(nodes|edges|config):\s*$", re.MULTILINE)
_EDGE_SHAPE = re.compile(r"^(\s*)(\w+\.\w+)\s*(?:->|→|=>)\s*(\w+\.\w+)\s*$")
_BAD_LINE = re.compile(r"^[^']*'(.*)'\.\s", re.DOTALL)
_MAX_DROPPED = 50


def extract_spec(reply: str) -> str:
    """The spec text in a model reply: the first fenced block with a `nodes:` section, or the bare spec."""
    if not isinstance(reply, str) or not reply.strip():
        raise FlowSpecError("The reply is empty: expected a flow spec with a 'nodes:' section.")
    for match in _FENCE.finditer(reply):
        if re.search(r"^\s*nodes:\s*$", match.group(2), re.MULTILINE):
            return match.group(2).strip("\n")
    first = _SECTION.search(reply)
    if first is None or not re.search(r"^\s*nodes:\s*$", reply, re.MULTILINE):
        raise FlowSpecError(
            "No flow spec found: expected a 'nodes:' section (ID: ComponentType lines), "
            "then 'edges:' (A.output -> B.input) and optionally 'config:' (B.field: value)."
        )
    # A bare spec: start at a name:/description: line just above the first section, if any.
    lines = reply[: first.start()].splitlines()
    head: list[str] = []
    for line in reversed(lines):
        if re.match(r"^\s*(name|description):", line):
            head.insert(0, line.strip())
        elif line.strip():
            break
    body = reply[first.start() :].rstrip()
    return "\n".join([*head, body]).strip("\n")


def _normalise(text: str) -> str:
    """Spellings of an edge that models write and lfx rejects: `A.x->B.y`, `A.x → B.y`."""
    out = []
    for line in text.splitlines():
        m = _EDGE_SHAPE.match(line)
        out.append(f"{m.group(1)}{m.group(2)} -> {m.group(3)}" if m else line)
    return "\n".join(out)


def parse_spec(text: str) -> tuple[dict[str, Any], list[str]]:
    """lfx's `parse_flow_spec`, made lenient: each malformed line is dropped with a warning."""
    from lfx.graph.flow_builder.spec import parse_flow_spec

    lines = _normalise(text).splitlines()
    warnings: list[str] = []
    for _ in range(_MAX_DROPPED):
        try:
            return parse_flow_spec("\n".join(lines)), warnings
        except ValueError as exc:
            m = _BAD_LINE.match(str(exc))
            bad = m.group(1) if m else None
            index = next((i for i, line in enumerate(lines) if bad is not None and line.strip() == bad), None)
            if index is None:
                raise FlowSpecError(f"The spec cannot be read: {exc}") from None
            warnings.append(f"Skipped a malformed spec line {index + 1}: {bad!r} ({str(exc).split('. ', 1)[-1]})")
            del lines[index]
    raise FlowSpecError("The spec has too many malformed lines to be read.")


def _unquote(value: Any) -> tuple[Any, bool]:
    """`" -- "` -> ` -- `: matching quotes around a whole value delimit a literal string."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            try:
                return json.loads(value), True  # honours \n, \" ... as a model would mean them
            except json.JSONDecodeError:
                pass
        return inner, True
    return value, False


def _template(flow: dict[str, Any], node_id: str) -> dict[str, Any]:
    for node in flow["data"]["nodes"]:
        if node["id"] == node_id:
            return node["data"]["node"]
    raise KeyError(node_id)


def update_dynamic_fields(node_data: dict[str, Any]) -> list[str]:
    """Create the inputs a component grows from its configuration, as Langflow's update does.

    Prompt fields (``type`` prompt or mustache): their ``{variables}`` become inputs, through
    Langflow's own `process_prompt_template` (what the canvas calls on every prompt edit).
    Returns the names of the fields created.
    """
    from lfx.base.prompts.api_utils import process_prompt_template

    template = node_data.get("template", {})
    before = set(template)
    for name, field in list(template.items()):
        if not isinstance(field, dict) or field.get("type") not in ("prompt", "mustache"):
            continue
        value = field.get("value")
        if not isinstance(value, str) or not value:
            continue
        custom_fields = node_data.setdefault("custom_fields", {})
        process_prompt_template(
            template=value,
            name=name,
            custom_fields=custom_fields,
            frontend_node_template=template,
            is_mustache=field.get("type") == "mustache",
        )
    return [k for k in template if k not in before]


def _run_coroutine(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even when the caller is inside an event loop."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _refresh(node_data: dict[str, Any], field: str, value: Any) -> None:
    """What Langflow's ``/custom_component/update`` does when a real-time-refresh field changes.

    The component is instantiated from the node's code, its ``update_build_config`` and
    ``update_outputs`` run on the node, and the node takes the resulting fields and outputs
    (a Type Convert set to Table shows its Table output; a Text Operations operation shows
    its inputs). Secrets are not loaded: this only reshapes the form, as the endpoint does.
    """
    from lfx.custom.custom_component.component import Component
    from lfx.custom.utils import build_custom_component_template, update_component_build_config
    from lfx.schema.dotdict import dotdict

    template = node_data["template"]
    code = (template.get("code") or {}).get("value")
    if not code:
        return
    component_node, instance = build_custom_component_template(Component(_code=code))
    params = {
        k: v.get("value")
        for k, v in template.items()
        if isinstance(v, dict) and k != "code" and not v.get("password") and not v.get("load_from_db")
    }
    if hasattr(instance, "set_attributes"):
        instance.set_attributes(params)
    build_config = dotdict(template)
    await update_component_build_config(instance, build_config=build_config, field_value=value, field_name=field)
    component_node["template"] = build_config
    if isinstance(instance, Component):
        await instance.run_and_validate_update_outputs(
            frontend_node=component_node, field_name=field, field_value=value
        )
    node_data["template"] = dict(component_node["template"])
    if isinstance(component_node.get("outputs"), list):
        node_data["outputs"] = component_node["outputs"]


def refresh_field(node_data: dict[str, Any], field: str) -> None:
    """Run the component's own update for ``field`` (a ``real_time_refresh`` field) on a node."""
    _run_coroutine(_refresh(node_data, field, node_data["template"][field].get("value")))


def build_flow(text: str, *, catalog: Catalog | None = None, repair: bool = True) -> BuildResult:
    """Build Langflow flow JSON from spec text or a model reply holding one.

    Never raises for a problem in the spec's content: the result lists every error (each with
    its node, field and a fix) and still carries the partial flow. Raises `FlowSpecError` only
    when there is no spec at all. With ``repair`` the deterministic repairs of `repair.py`
    (component near-misses, port names, value coercions) are applied and listed in ``changes``.
    """
    from lfx.graph.flow_builder.builder import build_flow_from_spec
    from lfx.graph.flow_builder.component import configure_component, sync_dropdown_selected_outputs
    from lfx.graph.flow_builder.connect import add_connection
    from lfx.graph.flow_builder.layout import layout_flow
    from lfx.graph.flow_builder.spec import validate_spec_references

    from . import repair as fixes

    catalog = catalog or default_catalog()
    spec_text = extract_spec(text)
    parsed, warnings = parse_spec(spec_text)
    errors: list[FlowError] = []
    changes: list[Change] = []

    # 1. Components: every type must be in the catalogue (a near miss is repaired).
    nodes = []
    for node in parsed["nodes"]:
        kind = node["type"]
        if kind not in catalog:
            fixed = fixes.fix_component_name(kind, catalog) if repair else None
            if fixed is None:
                near = catalog.resolve(kind)
                errors.append(
                    FlowError(
                        code="unknown_component",
                        node=node["id"],
                        message=f"Unknown component type {kind!r}.",
                        fix=f"Use {near!r}." if near else "Pick a component from the catalogue or generate one.",
                    )
                )
                continue
            changes.append(
                Change(kind="component", node=node["id"], before=kind, after=fixed, message=f"{kind!r} -> {fixed!r}")
            )
            node = {**node, "type": fixed}
        nodes.append(node)
    known = {n["id"] for n in nodes}
    all_ids = {n["id"] for n in parsed["nodes"]}

    # 2. Nodes, by lfx's own builder (a spec of the nodes alone: config and edges follow below).
    head = [f"name: {parsed.get('name') or 'Untitled Flow'}"]
    if parsed.get("description"):
        head.append(f"description: {parsed['description']}")
    nodes_spec = "\n".join([*head, "nodes:", *(f"  {n['id']}: {n['type']}" for n in nodes)])
    if not nodes:
        errors.append(FlowError(code="spec_syntax", message="The spec has no usable node.", fix="List nodes."))
        return BuildResult(ok=False, spec=spec_text, errors=errors, warnings=warnings, changes=changes)
    built = build_flow_from_spec(nodes_spec, registry=catalog.registry)
    if "error" in built:
        errors.append(FlowError(code="spec_syntax", message=f"{built['error']}: {built.get('details', '')}"))
        return BuildResult(ok=False, spec=spec_text, errors=errors, warnings=warnings, changes=changes)
    flow: dict[str, Any] = built["flow"]
    ids: dict[str, str] = built["node_id_map"]

    # 3. Config: fields that exist now, then dynamic fields, then fields that exist only after that.
    pending: list[tuple[str, str, Any]] = []
    for spec_id, params in parsed.get("config", {}).items():
        if spec_id not in all_ids:
            errors.append(
                FlowError(
                    code="unknown_node",
                    node=spec_id,
                    message=f"Config names node {spec_id!r}, which is not in 'nodes:'.",
                    fix=f"Use one of {sorted(all_ids)} or add {spec_id} under 'nodes:'.",
                )
            )
            continue
        if spec_id not in known:
            continue  # its component is unknown, already reported
        for field, raw in params.items():
            value, quoted = _unquote(raw)
            if quoted:
                changes.append(
                    Change(kind="quote", node=spec_id, field=field, before=raw, after=value, message="quotes removed")
                )
            pending.append((spec_id, field, value))

    def apply(spec_id: str, field: str, value: Any) -> None:
        template = _template(flow, ids[spec_id])["template"]
        if repair and field in template:
            coerced = fixes.coerce_value(template[field], value)
            if coerced != value or type(coerced) is not type(value):
                changes.append(
                    Change(
                        kind="value", node=spec_id, field=field, before=value, after=coerced, message="value coerced"
                    )
                )
                value = coerced
        try:
            configure_component(flow, ids[spec_id], {field: value})
            if template[field].get("real_time_refresh") and field != "api_key":
                try:
                    refresh_field(_template(flow, ids[spec_id]), field)
                except Exception as exc:  # the component's own update failed: keep the static form
                    warnings.append(f"{spec_id}.{field}: the component's update did not run ({exc}).")
        except ValueError as exc:
            errors.append(
                FlowError(
                    code="bad_value",
                    node=spec_id,
                    node_id=ids[spec_id],
                    field=field,
                    message=str(exc).split(". Available:")[0],
                    fix=_field_fix(template, field),
                )
            )

    later = []
    for spec_id, field, value in pending:
        if field in _template(flow, ids[spec_id])["template"]:
            apply(spec_id, field, value)
        else:
            later.append((spec_id, field, value))
    for node_id in ids.values():
        try:
            update_dynamic_fields(_template(flow, node_id))
        except ValueError as exc:
            spec_id = next(k for k, v in ids.items() if v == node_id)
            errors.append(
                FlowError(
                    code="bad_prompt",
                    node=spec_id,
                    node_id=node_id,
                    field="template",
                    message=f"The prompt template cannot be read: {exc}",
                    fix="Use {name} for variables and double the braces of literal ones ({{ }}).",
                )
            )
    for spec_id, field, value in later:
        apply(spec_id, field, value)

    # 4. Edges, by lfx's add_connection, which checks port names and type compatibility.
    for edge in parsed["edges"]:
        try:
            validate_spec_references({"nodes": parsed["nodes"], "edges": [edge], "config": {}})
        except ValueError as exc:
            missing = edge["source_id"] if edge["source_id"] not in all_ids else edge["target_id"]
            errors.append(
                FlowError(
                    code="unknown_node",
                    node=missing,
                    message=str(exc),
                    fix=f"Add {missing} under 'nodes:' or connect an existing node.",
                )
            )
            continue
        if edge["source_id"] not in known or edge["target_id"] not in known:
            continue
        src, tgt = ids[edge["source_id"]], ids[edge["target_id"]]
        out_name, in_name = edge["source_output"], edge["target_input"]
        if repair:
            out_name, in_name, edge_changes = fixes.fix_edge_ports(
                _template(flow, src), out_name, _template(flow, tgt), in_name
            )
            for ch in edge_changes:
                ch.node = edge["source_id"] if ch.field == "output" else edge["target_id"]
            changes += edge_changes
        try:
            add_connection(flow, src, out_name, tgt, in_name, registry=catalog.registry)
        except ValueError as exc:
            errors.append(_edge_error(str(exc), edge, src, tgt, out_name, in_name, flow))

    sync_dropdown_selected_outputs(flow)
    layout_flow(flow)
    flow["id"] = str(uuid.uuid4())
    flow["name"] = parsed.get("name") or "Untitled Flow"
    flow["description"] = parsed.get("description") or ""
    flow.setdefault("is_component", False)
    return BuildResult(
        ok=not errors,
        flow=flow,
        spec=spec_text,
        errors=errors,
        warnings=warnings,
        changes=changes,
        node_ids=ids,
    )


def _field_fix(template: dict[str, Any], field: str) -> str:
    if field not in template:
        fields = [k for k, v in template.items() if isinstance(v, dict) and not k.startswith("_") and k != "code"]
        return f"Use one of the fields {fields}."
    options = template[field].get("options")
    if isinstance(options, list) and options:
        return f"Use one of {options[:10]}."
    return f"Give a value of type {template[field].get('type', 'str')}."


def _edge_error(
    message: str, edge: dict[str, str], src: str, tgt: str, out_name: str, in_name: str, flow: dict[str, Any]
) -> FlowError:
    """Name the side of the edge that is wrong and list what would fit."""
    src_t, tgt_t = _template(flow, src), _template(flow, tgt)
    outputs = [o.get("name") for o in src_t.get("outputs", [])]
    if "not found" in message and out_name not in outputs:
        return FlowError.missing_port("output", edge["source_id"], src, out_name, outputs)
    if "not found" in message:
        inputs = [k for k, v in tgt_t["template"].items() if isinstance(v, dict) and v.get("input_types")]
        return FlowError.missing_port("input", edge["target_id"], tgt, in_name, inputs)
    code = "type_mismatch" if "Type mismatch" in message else "structure"
    return FlowError(
        code=code,
        node=edge["target_id"],
        node_id=tgt,
        field=in_name,
        message=f"{edge['source_id']}.{out_name} -> {edge['target_id']}.{in_name}: {message.split(' Fix:')[0]}",
        fix=message.split(" Fix: ", 1)[1] if " Fix: " in message else "Connect an output whose type the input accepts.",
    )


# -- flow JSON -> spec text ----------------------------------------------------------------


def _spec_ids(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """Short spec ids (A, B, ... Z, A1 ...) in the order of the flow's nodes."""
    out = {}
    for i, node in enumerate(nodes):
        letter = chr(ord("A") + i % 26)
        out[node["id"]] = letter if i < 26 else f"{letter}{i // 26}"
    return out


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
    from lfx.graph.flow_builder.spec import _coerce_value

    if value != value.strip() or _coerce_value(value) != value or value[:1] in "\"'":
        return json.dumps(value)
    return value


def flow_to_spec(flow: dict[str, Any], *, catalog: Catalog | None = None) -> str:
    """The spec text of a flow: nodes, edges, and the config values that differ from the defaults.

    lfx has no writer (its `flow_to_spec_summary` leaves out values and is not re-parseable),
    so this is a small one; `build_flow(flow_to_spec(f))` rebuilds the same wiring.
    Secrets (password fields) and code are never written: a spec lands in a notebook cell.
    """
    catalog = catalog or default_catalog()
    data = flow.get("data", flow)
    nodes = [n for n in data.get("nodes", []) if n.get("type", "genericNode") == "genericNode"]
    sids = _spec_ids(nodes)
    lines = []
    if flow.get("name"):
        lines.append(f"name: {flow['name']}")
    if flow.get("description"):
        lines.append(f"description: {' '.join(str(flow['description']).split())}")
    lines.append("")
    lines.append("nodes:")
    for node in nodes:
        kind = node["data"].get("_flow_builder_registry_type") or node["data"].get("type")
        lines.append(f"  {sids[node['id']]}: {kind}")
    edges = []
    for edge in data.get("edges", []):
        if edge.get("source") not in sids or edge.get("target") not in sids:
            continue
        sh = (edge.get("data") or {}).get("sourceHandle", {})
        th = (edge.get("data") or {}).get("targetHandle", {})
        port = th.get("fieldName") or th.get("name")
        edges.append(f"  {sids[edge['source']]}.{sh.get('name')} -> {sids[edge['target']]}.{port}")
    if edges:
        lines += ["", "edges:", *edges]
    config = []
    for node in nodes:
        kind = node["data"].get("type")
        defaults = (catalog.registry.get(kind) or {}).get("template", {})
        for name, field in node["data"]["node"].get("template", {}).items():
            if name.startswith("_") or name == "code" or not isinstance(field, dict):
                continue
            if field.get("password") or field.get("load_from_db"):
                continue
            value = field.get("value")
            default = (defaults.get(name) or {}).get("value") if isinstance(defaults.get(name), dict) else None
            if value in (None, "", [], {}) or value == default:
                continue
            text = _format_value(value)
            if text is not None:
                config.append(f"  {sids[node['id']]}.{name}: {text}")
    if config:
        lines += ["", "config:", *config]
    return "\n".join(lines).strip("\n") + "\n"
