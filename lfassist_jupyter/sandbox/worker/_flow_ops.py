"""Worker op ``flow_build`` (spec text -> Langflow flow JSON) and the fact ``flow_catalog``.

An op module of the worker package (stdlib + lfx only, plus the package's ``flow``: the flow
facts of ``artifacts/flow.py``, bound into the sandbox and loaded by the zygote as a module of
this package), imported in the zygote before its first fork.

* ``flow_catalog`` is a *fact*: lfx's bundled component registry plus the components of the
  installed extension bundles (``lfx-openai``...), with every other name lfx knows each by
  (``names``: its identity index and migration table), read by the zygote itself (on the first
  request for it: a session without flows does not pay for it) and sent by the zygote
  (``FACTS``), packed (zlib + base64 chunks). No request's code ever runs in the zygote (only
  lfx's and the installed bundles'), so it is trusted. The kernel caches it per validator and
  never imports lfx.
* ``flow_build`` runs in a fresh, sandboxed child like every validation, because building a
  flow can run a node's code: Langflow's real-time refresh of a field (a dropdown that
  reshapes the form) instantiates the component from the node's ``code`` and runs its
  ``update_build_config``. That code may come from a model reply, a loaded file, a Langflow
  server or an earlier generated component; here it runs behind the door, under the audit
  hook, with no key and no network.

  **A build whose answer the kernel keeps runs no code but lfx's own.** The code of a node
  whose type is not one of lfx's bundled components (``extra``: generated, or a Langflow
  server's) runs only when ``refresh`` names its spec id, in a build of its own whose answer
  the kernel reads for those nodes' templates alone (and checks their code against what it
  sent); the final build gets those templates (``templates``) and runs no refresh of theirs.
  A spec cannot set a node's ``code`` (a ``bad_value`` error): custom code comes as a
  component of the catalogue, never as a field.  The kernel still takes every built-in node's
  code from the catalogue it holds and compares every custom node's code with what it sent.

Parsing and building are lfx's own (``parse_flow_spec``, ``build_flow_from_spec``,
``configure_component``, ``add_connection``, ``layout_flow``). What this op adds is what lfx
leaves to its callers: leniency (a malformed line is dropped with a warning), quoted values,
dynamic prompt fields (Langflow's ``process_prompt_template``), real-time refreshes, the
deterministic repairs of ``flow`` (the kernel's ``repair_flow`` applies the same) and every
problem collected (lfx stops at the first).
The answer is plain JSON (errors and changes as dicts); the kernel schema-checks it.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any

from . import _models
from . import flow as flow_facts
from ._shared import Armed, Timeout, error_text
from .wire import pack

_EDGE_SHAPE = re.compile(r"^(\s*)(\w+\.\w+)\s*(?:->|→|=>)\s*(\w+\.\w+)\s*$")
_BAD_LINE = re.compile(r"^[^']*'(.*)'\.\s", re.DOTALL)
_MAX_DROPPED = 50


class SpecUnreadable(Exception):
    pass


def _change(kind: str, node: str, field: str | None, before: Any, after: Any, message: str) -> dict[str, Any]:
    return {"kind": kind, "node": node, "field": field, "before": before, "after": after, "message": message}


def _error(code: str, message: str, **where: Any) -> dict[str, Any]:
    return {"code": code, "message": message, "fix": where.pop("fix", ""), **where}


def _missing_port(kind: str, node: str, node_id: str, port: str, ports: list) -> dict[str, Any]:
    """The wording of the kernel's ``FlowProblem.missing_port`` (same fix whoever found it)."""
    return _error(
        "missing_output" if kind == "output" else "missing_input",
        f"{node} has no {kind} {port!r}.",
        node=node,
        node_id=node_id,
        field=port,
        fix=f"Use one of its {kind}s {ports}.",
    )


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
                raise SpecUnreadable(f"The spec cannot be read: {exc}") from None
            warnings.append(f"Skipped a malformed spec line {index + 1}: {bad!r} ({str(exc).split('. ', 1)[-1]})")
            del lines[index]
    raise SpecUnreadable("The spec has too many malformed lines to be read.")


def _template(flow: dict[str, Any], node_id: str) -> dict[str, Any]:
    """The frontend node (``data.node``) of the flow's node ``node_id``."""
    node = flow_facts.by_id(flow_facts.nodes(flow)).get(node_id)
    if node is None:
        raise KeyError(node_id)
    return flow_facts.frontend_node(node)


def update_dynamic_fields(node_data: dict[str, Any]) -> list[str]:
    """Create the inputs a component grows from its configuration, as Langflow's update does.

    Prompt fields (``type`` prompt or mustache): their ``{variables}`` become inputs, through
    Langflow's own `process_prompt_template` (what the canvas calls on every prompt edit).
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
        process_prompt_template(
            template=value,
            name=name,
            custom_fields=node_data.setdefault("custom_fields", {}),
            frontend_node_template=template,
            is_mustache=field.get("type") == "mustache",
        )
    return [k for k in template if k not in before]


async def _refresh(node_data: dict[str, Any], field: str, value: Any) -> None:
    """What Langflow's ``/custom_component/update`` does when a real-time-refresh field changes.

    The component is instantiated from the node's code, its ``update_build_config`` and
    ``update_outputs`` run on the node, and the node takes the resulting fields and outputs.
    This is where a node's code runs: only ever here, in a sandboxed child.
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
) -> dict[str, Any]:
    """Name the side of the edge that is wrong and list what would fit."""
    src_t, tgt_t = _template(flow, src), _template(flow, tgt)
    outputs = [o.get("name") for o in src_t.get("outputs", [])]
    if "not found" in message and out_name not in outputs:
        return _missing_port("output", edge["source_id"], src, out_name, outputs)
    if "not found" in message:
        inputs = [k for k, v in tgt_t["template"].items() if isinstance(v, dict) and v.get("input_types")]
        return _missing_port("input", edge["target_id"], tgt, in_name, inputs)
    return _error(
        "type_mismatch" if "Type mismatch" in message else "structure",
        f"{edge['source_id']}.{out_name} -> {edge['target_id']}.{in_name}: {message.split(' Fix:')[0]}",
        node=edge["target_id"],
        node_id=tgt,
        field=in_name,
        fix=message.split(" Fix: ", 1)[1] if " Fix: " in message else "Connect an output whose type the input accepts.",
    )


def build(
    spec_text: str,
    registry: dict[str, Any],
    repair: bool,
    run: Any,
    *,
    untrusted: frozenset[str] = frozenset(),
    refresh: frozenset[str] = frozenset(),
    templates: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The flow of ``spec_text`` over ``registry``; ``run`` runs a coroutine to completion.

    ``untrusted``: the component types whose code is not lfx's own; their real-time refresh
    runs only for the spec ids in ``refresh``.  ``templates``: node templates (by spec id) of
    such nodes, refreshed by an earlier build, put in place before the configuration.

    Returns ``{"ok", "flow", "spec", "errors", "warnings", "changes", "node_ids"}`` (plain JSON).
    """
    from lfx.graph.flow_builder.component import sync_dropdown_selected_outputs
    from lfx.graph.flow_builder.layout import layout_flow

    state = _FlowBuild(spec_text, registry, repair, run)
    state.untrusted, state.refresh, state.templates = untrusted, refresh, templates or {}
    try:
        state.parsed, state.warnings = parse_spec(spec_text)
    except SpecUnreadable as exc:
        state.errors.append(_error("spec_syntax", str(exc)))
        return state.result()
    state.resolve_components()
    if not state.build_nodes():
        return state.result()
    state.configure()
    state.connect()
    flow, parsed = state.flow, state.parsed
    sync_dropdown_selected_outputs(flow)
    layout_flow(flow)
    flow["id"] = str(uuid.uuid4())
    flow["name"] = parsed.get("name") or "Untitled Flow"
    flow["description"] = parsed.get("description") or ""
    flow.setdefault("is_component", False)
    return state.result(ready=True)


class _FlowBuild:
    """One build of a spec, step by step; every problem is collected, none stops the others.

    1. ``resolve_components``: every type must be in the catalogue (a near miss is repaired).
    2. ``build_nodes``: the nodes, by lfx's own builder.
    3. ``configure``: fields that exist now, then dynamic fields, then fields that exist only after that.
    4. ``connect``: edges, by lfx's ``add_connection`` (port names and type compatibility).
    """

    def __init__(self, spec_text: str, registry: dict[str, Any], repair: bool, run: Any) -> None:
        self.spec_text, self.registry, self.repair, self.run = spec_text, registry, repair, run
        self.errors: list[dict[str, Any]] = []
        self.changes: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.parsed: dict[str, Any] = {}
        self.nodes: list[dict[str, Any]] = []  # the spec's nodes whose component is known
        self.known: set[str] = set()  # their spec ids
        self.all_ids: set[str] = set()  # every spec id under 'nodes:'
        self.flow: dict[str, Any] = {}
        self.ids: dict[str, str] = {}  # spec id -> node id in the flow
        self.untrusted: frozenset[str] = frozenset()  # component types whose code is not lfx's own
        self.refresh: frozenset[str] = frozenset()  # spec ids whose untrusted code may run here
        self.templates: dict[str, Any] = {}  # spec id -> refreshed template of an untrusted node
        self.kinds: dict[str, str] = {}  # spec id -> component type
        self.written: dict[tuple[str, str], Any] = {}  # (spec id, field) -> the value the spec wrote
        self.applied: set[tuple[str, str]] = set()  # the ones set so far

    def result(self, *, ready: bool = False) -> dict[str, Any]:
        flow = self.flow if ready else None
        return {
            "ok": not self.errors and flow is not None,
            "flow": flow,
            "spec": self.spec_text,
            "errors": self.errors,
            "warnings": self.warnings,
            "changes": self.changes,
            "node_ids": (self.ids or {}) if ready else {},
        }

    def resolve_components(self) -> None:
        """1. Components: every type must be in the catalogue (a near miss is repaired)."""
        registry = self.registry
        for node in self.parsed["nodes"]:
            kind = node["type"]
            if kind not in registry:
                fixed = flow_facts.resolve(kind, registry) if self.repair else None
                if fixed is None:
                    near = flow_facts.resolve(kind, registry)
                    self.errors.append(
                        _error(
                            "unknown_component",
                            f"Unknown component type {kind!r}.",
                            node=node["id"],
                            fix=f"Use {near!r}." if near else "Pick a component from the catalogue or generate one.",
                        )
                    )
                    continue
                self.changes.append(_change("component", node["id"], None, kind, fixed, f"{kind!r} -> {fixed!r}"))
                node = {**node, "type": fixed}
            self.nodes.append(node)
        self.known = {n["id"] for n in self.nodes}
        self.all_ids = {n["id"] for n in self.parsed["nodes"]}

    def build_nodes(self) -> bool:
        """2. Nodes, by lfx's own builder (a spec of the nodes alone: config and edges follow)."""
        from lfx.graph.flow_builder.builder import build_flow_from_spec

        parsed, nodes = self.parsed, self.nodes
        head = [f"name: {parsed.get('name') or 'Untitled Flow'}"]
        if parsed.get("description"):
            head.append(f"description: {parsed['description']}")
        nodes_spec = "\n".join([*head, "nodes:", *(f"  {n['id']}: {n['type']}" for n in nodes)])
        if not nodes:
            self.errors.append(_error("spec_syntax", "The spec has no usable node.", fix="List nodes."))
            return False
        built = build_flow_from_spec(nodes_spec, registry=self.registry)
        if "error" in built:
            self.errors.append(_error("spec_syntax", f"{built['error']}: {built.get('details', '')}"))
            return False
        self.flow, self.ids = built["flow"], built["node_id_map"]
        self.kinds = {n["id"]: n["type"] for n in nodes}
        for spec_id, template in self.templates.items():
            if spec_id in self.ids and self.kinds.get(spec_id) in self.untrusted and isinstance(template, dict):
                _template(self.flow, self.ids[spec_id]).clear()
                _template(self.flow, self.ids[spec_id]).update(template)
        return True

    def configure(self) -> None:
        """3. Config: fields that exist now, then dynamic fields, then fields that exist only after that.

        Model selections go first, whatever the spec's order: a selection's real-time refresh
        resets the fields of its provider (the key among them), so ``M.api_key`` written above
        ``M.model`` would otherwise be lost.  And after every refresh the values the spec wrote
        on that node are put back if the refresh changed them (``_restore``)."""
        later = []
        pending = self._pending_config()
        self.written = {(spec_id, field): value for spec_id, field, value in pending}
        pending.sort(key=lambda p: not self._is_selection(*p[:2]))
        for spec_id, field, value in pending:
            if field in _template(self.flow, self.ids[spec_id])["template"]:
                self._apply(spec_id, field, value)
            else:
                later.append((spec_id, field, value))
        for node_id in self.ids.values():
            try:
                update_dynamic_fields(_template(self.flow, node_id))
            except ValueError as exc:
                spec_id = next(k for k, v in self.ids.items() if v == node_id)
                self.errors.append(
                    _error(
                        "bad_prompt",
                        f"The prompt template cannot be read: {exc}",
                        node=spec_id,
                        node_id=node_id,
                        field="template",
                        fix="Use {name} for variables and double the braces of literal ones ({{ }}).",
                    )
                )
        for spec_id, field, value in later:
            self._apply(spec_id, field, value)

    def _pending_config(self) -> list[tuple[str, str, Any]]:
        """The spec's config values, unquoted, for the nodes that exist; unknown nodes reported."""
        pending: list[tuple[str, str, Any]] = []
        for spec_id, params in self.parsed.get("config", {}).items():
            if spec_id not in self.all_ids:
                self.errors.append(
                    _error(
                        "unknown_node",
                        f"Config names node {spec_id!r}, which is not in 'nodes:'.",
                        node=spec_id,
                        fix=f"Use one of {sorted(self.all_ids)} or add {spec_id} under 'nodes:'.",
                    )
                )
                continue
            if spec_id not in self.known:
                continue  # its component is unknown, already reported
            for field, raw in params.items():
                value, quoted = flow_facts.unquote(raw)
                if quoted:
                    self.changes.append(_change("quote", spec_id, field, raw, value, "quotes removed"))
                pending.append((spec_id, field, value))
        return pending

    def _is_selection(self, spec_id: str, field: str) -> bool:
        template = _template(self.flow, self.ids[spec_id])["template"]
        return isinstance(template.get(field), dict) and template[field].get("type") == "model"

    def _apply(self, spec_id: str, field: str, value: Any) -> None:
        """One field's value (coerced when repairing), and the component's real-time refresh if it has one."""
        from lfx.graph.flow_builder.component import configure_component

        flow, ids = self.flow, self.ids
        template = _template(flow, ids[spec_id])["template"]
        if field == "code":  # the code a node runs is its component's, from the catalogue
            self.errors.append(
                _error(
                    "bad_value",
                    f"{spec_id}.code: a spec cannot set a node's code.",
                    node=spec_id,
                    node_id=ids[spec_id],
                    field="code",
                    fix="Remove the code line; for new code, generate a custom component and use it as a node.",
                )
            )
            return
        if self.repair and field in template and not self._is_selection(spec_id, field):
            coerced = flow_facts.coerce_value(template[field], value)
            if coerced != value or type(coerced) is not type(value):
                self.changes.append(_change("value", spec_id, field, value, coerced, "value coerced"))
                value = coerced
        try:
            if self._is_selection(spec_id, field):
                value = self._selection(spec_id, field, value)
            configure_component(flow, ids[spec_id], {field: value})
            flow_facts.name_variable(template[field])
            untrusted = self.kinds.get(spec_id) in self.untrusted
            if untrusted and (spec_id not in self.refresh or spec_id in self.templates):
                return  # its code runs only in a build of its own (``refresh``), never in this one
            if template[field].get("real_time_refresh") and field != "api_key":
                node_data = _template(flow, ids[spec_id])
                try:
                    self.run(_refresh(node_data, field, node_data["template"][field].get("value")))
                except Exception as exc:  # the component's own update failed: keep the static form
                    self.warnings.append(f"{spec_id}.{field}: the component's update did not run ({exc}).")
                self._restore(spec_id, field, value)
            self.applied.add((spec_id, field))
        except _models.SelectionError as exc:
            self.errors.append(
                _error("bad_value", str(exc), node=spec_id, node_id=ids[spec_id], field=field, fix=exc.fix)
            )
        except ValueError as exc:
            self.errors.append(
                _error(
                    "bad_value",
                    str(exc).split(". Available:")[0],
                    node=spec_id,
                    node_id=ids[spec_id],
                    field=field,
                    fix=_field_fix(template, field),
                )
            )

    def _selection(self, spec_id: str, field: str, value: Any) -> Any:
        """A model field's value as lfx stores it, with the user's exact model name (``_models``);
        the provider may come from the node's provider field in the spec."""
        wanted = _models.wanted_selection(value)
        if wanted is None:
            return value
        name, provider = wanted
        hint = self.written.get((spec_id, "provider"))
        template = _template(self.flow, self.ids[spec_id])["template"]
        model_type = str(template[field].get("model_type") or "language")
        return _models.selection(name, provider or (str(hint) if hint else None), model_type)

    def _restore(self, spec_id: str, refreshed: str, value: Any) -> None:
        """Put back what a real-time refresh changed of the values the spec wrote on this node
        (the refreshed field included: lfx resets a selection it does not list)."""
        from lfx.graph.flow_builder.component import configure_component

        template = _template(self.flow, self.ids[spec_id])["template"]
        for (sid, field), written in self.written.items():
            if sid != spec_id or field not in template or not isinstance(template[field], dict):
                continue
            want = value if field == refreshed else written
            if field != refreshed and self.repair:
                want = flow_facts.coerce_value(template[field], want)
            if field != refreshed and self._is_selection(sid, field):
                continue  # applied first, and already checked after its own refresh
            if template[field].get("value") != want and (field == refreshed or (sid, field) in self.applied):
                try:
                    configure_component(self.flow, self.ids[sid], {field: want})
                except ValueError:
                    continue  # no longer a valid value after the refresh: left as lfx made it
                flow_facts.name_variable(template[field])

    def connect(self) -> None:
        """4. Edges, by lfx's add_connection, which checks port names and type compatibility."""
        from lfx.graph.flow_builder.connect import add_connection
        from lfx.graph.flow_builder.spec import validate_spec_references

        flow, ids, parsed = self.flow, self.ids, self.parsed
        for edge in parsed["edges"]:
            try:
                validate_spec_references({"nodes": parsed["nodes"], "edges": [edge], "config": {}})
            except ValueError as exc:
                missing = edge["source_id"] if edge["source_id"] not in self.all_ids else edge["target_id"]
                self.errors.append(
                    _error(
                        "unknown_node",
                        str(exc),
                        node=missing,
                        fix=f"Add {missing} under 'nodes:' or connect an existing node.",
                    )
                )
                continue
            if edge["source_id"] not in self.known or edge["target_id"] not in self.known:
                continue
            src, tgt = ids[edge["source_id"]], ids[edge["target_id"]]
            out_name, in_name = edge["source_output"], edge["target_input"]
            if self.repair:
                out_name, in_name, edge_changes = flow_facts.fix_edge_ports(
                    _template(flow, src), out_name, _template(flow, tgt), in_name
                )
                for ch in edge_changes:
                    ch["node"] = edge["source_id"] if ch["field"] == "output" else edge["target_id"]
                self.changes += edge_changes
            try:
                add_connection(flow, src, out_name, tgt, in_name, registry=self.registry)
            except ValueError as exc:
                self.errors.append(_edge_error(str(exc), edge, src, tgt, out_name, in_name, flow))


_CATALOG: dict[str, Any] = {}


def _bundle_entries(bundled: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The components of the installed extension bundles (``lfx-openai``, ``lfx-anthropic``...), as
    Langflow's palette builds them (``import_extension_components``: the class instantiated, its
    template made by ``create_component_template``), keyed by the name saved flows carry as their
    node type (the class's ``name``, lfx's ``legacy_name``: ``OpenAIModel``), which lfx's builder
    writes as ``data.type``.  Installed packages' code, like lfx's own; a bundle that fails to load
    is left out (lfx logs it), as Langflow leaves it out of its palette.

    lfx's ``build_custom_class`` copies every module a class's code imported into the globals of
    ``lfx.custom.validate``, which every class made afterwards starts from: read here, in the
    zygote, the bundles' imports (``json``...) would reach every component validated in its forked
    children, and a component that uses ``json`` without importing it would pass.  Those globals
    are put back as they were."""
    import logging

    found: dict[str, dict[str, Any]] = {}
    logging.disable(logging.WARNING)  # lfx's loader warns on stderr about bundles it skips
    try:
        from lfx.custom import validate as lfx_validate
        from lfx.custom.utils import create_component_template
        from lfx.extension import load_installed_extensions

        scope = vars(lfx_validate)
        before = dict(scope)
        results = load_installed_extensions()
    except Exception:  # an lfx without extension bundles (before 1.10)
        return found
    finally:
        logging.disable(logging.NOTSET)
    try:
        _read_bundles(results, bundled, found, create_component_template)
    finally:
        for name in [n for n in scope if n not in before]:
            del scope[name]
        scope.update(before)
    return found


def _read_bundles(results: Any, bundled: dict[str, Any], found: dict[str, Any], make_template: Any) -> None:
    """Each loaded bundle component's template into ``found`` (see ``_bundle_entries``)."""
    import contextlib

    for result in results:
        for loaded in result.components:
            with contextlib.suppress(Exception):
                instance = loaded.klass()
                template, _ = make_template(component_extractor=instance, module_name=loaded.module_name)
                name = str(getattr(instance, "name", None) or loaded.class_name)
                if name in bundled or name in found or not isinstance(template.get("template"), dict):
                    continue
                template["category"] = str(result.bundle or "bundles")
                template["namespaced_id"] = loaded.namespaced_id
                found[name] = template


def _names(registry: dict[str, Any]) -> dict[str, list[str]]:
    """Every other name lfx knows a catalogue entry by -> the entries it may mean: lfx's own
    identity index (``build_component_identity_index``: each entry's ``name``, class name, module
    class name, display name, and lfx's ``LEGACY_TYPE_ALIASES`` such as ``Prompt`` -> ``Prompt
    Template``), then lfx's migration table (the bare class names, import paths and earlier slots
    of components that moved to a bundle) for the bundles installed here, then each bundle
    component's namespaced id.  An ambiguous name keeps every candidate: none is guessed."""
    import contextlib

    names: dict[str, list[str]] = {}
    with contextlib.suppress(ImportError):  # lfx's identity index (1.13)
        from lfx.utils.component_aliases import build_component_identity_index

        index = build_component_identity_index({"components": registry})
        names = {alias: sorted(keys) for alias, keys in index.aliases.items() if alias and alias not in registry}
    by_slot = {str(e["namespaced_id"]): key for key, e in registry.items() if isinstance(e.get("namespaced_id"), str)}
    with contextlib.suppress(Exception):
        from lfx.extension.migration import load_migration_table

        table, _ = load_migration_table()
        for entry in table.entries if table is not None else []:
            old = entry.bare_class_name or entry.import_path or entry.legacy_slot
            key = by_slot.get(entry.target)
            if old and key and old not in registry:
                names.setdefault(old, [key])
    for slot, key in by_slot.items():
        names.setdefault(slot, [key])
    return names


def catalogue() -> dict[str, Any]:
    """lfx's bundled components plus the installed bundles' (``{type: node template}``) and the
    other names of each (``names``): computed once, in the zygote when the kernel first asks
    for the catalogue (children forked afterwards inherit it)."""
    if not _CATALOG:
        from lfx.graph.flow_builder.builder import load_local_registry

        bundled = load_local_registry()
        registry = {**bundled, **_bundle_entries(bundled)}
        _CATALOG.update(registry=registry, names=_names(registry))
    return _CATALOG


def register(ops: dict, facts: dict) -> None:
    """Add the fact ``flow_catalog`` and the op ``flow_build`` (in the zygote, before any fork)."""

    def flow_catalog() -> dict:
        found = catalogue()
        return {"ok": True, "z": pack(found["registry"]), "names": pack(found["names"])}

    # lfx caches the registry in its module: children forked after this ran inherit it.
    facts["flow_catalog"] = flow_catalog

    def flow_build(req: dict) -> dict:
        spec_text = str(req.get("spec", ""))
        extra = req.get("extra") if isinstance(req.get("extra"), dict) else {}
        bundled = catalogue()["registry"]
        added = {str(k): v for k, v in extra.items() if isinstance(v, dict)}
        registry = {**bundled, **added}
        refresh = req.get("refresh") if isinstance(req.get("refresh"), list) else []
        templates = req.get("templates") if isinstance(req.get("templates"), dict) else {}
        deadline = time.monotonic() + float(req.get("timeout", 30))
        # Not asyncio.run: a refresh that blocks must not keep the answer waiting on executor threads.
        loop = asyncio.new_event_loop()
        try:
            with Armed(deadline):
                out = build(
                    spec_text,
                    registry,
                    bool(req.get("repair", True)),
                    loop.run_until_complete,
                    untrusted=frozenset(added),
                    refresh=frozenset(str(x) for x in refresh),
                    templates={str(k): v for k, v in templates.items()},
                )
        except Timeout:
            return {"ok": False, "error": "Building the flow did not finish in time."}
        except BaseException as exc:
            return {"ok": False, "error": f"Building the flow failed: {error_text(exc)}"}
        return {"ok": True, "z": pack(out)}

    ops["flow_build"] = flow_build
