"""The model a flow's model nodes call: the user's, configured for them, never a key in the flow.

A flow the assistant writes (or reuses) answers with the model the user already has: by default
the provider and model the assistant itself runs on, or the ``flow_model`` setting
(``"anthropic:claude-haiku-4-5"``, or a model name of the assistant's provider).  Its model
nodes get, in the spec's ``config:`` (so the user sees and edits them, and a re-run of the cell
builds the same):

- ``M.model: {"name": "<the exact model name>", "provider": "<lfx's provider name>"}``: lfx's own
  selection shape, which the build keeps as written even for a model outside lfx's list (a local
  server's model, a dated name), so that very name reaches the provider;
- ``M.api_key: <the provider's key variable>``: the variable's *name*, never its value (a key
  field's UPPER_SNAKE value names a variable: the real run's ``--env``, Langflow's global variable);
- the server's URL in the node's base-URL field when lfx's node has one for the provider (Ollama's
  ``M.ollama_base_url``).  lfx 1.13's Language Model node has none for OpenAI or Anthropic: lfx reads
  the provider's base-URL variable instead (the real run is given the configured one; on a Langflow
  server it is the provider's Base URL setting), and the change says so.

Every provider fact here (lfx's provider name, its key variable, the node's base-URL field, the
variable lfx reads) comes from the provider table (``providers/table.py``).  What the spec already
says wins: a request that names a model or a provider ("... with Claude") gets a spec that sets
it, and only what is missing (the key's variable) is added.  Pure text work on the spec, no lfx:
the build (in the sandbox) turns the selection into lfx's value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.providers import table
from lfassist_jupyter.redaction import without_credentials

from .results import Change, ModelUse

_SECTION = re.compile(r"^\s*(nodes|edges|config):\s*$")
_NODE = re.compile(r"^\s*([\w-]+)\s*:\s*(\S.*?)\s*$")
_CONFIG = re.compile(r"^\s*([\w-]+)\.(\w+)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True)
class FlowModel:
    """The model the flow's model nodes call, as the spec writes it for them."""

    provider: str
    """lfx's provider name: ``OpenAI``, ``Anthropic``, ``Ollama``."""
    model: str
    """The exact name the provider receives."""
    key_variable: str | None = None
    """The variable the key field names; None: the provider needs no key."""
    base_url_variable: str | None = None
    """The variable lfx reads for the server's URL, when a server of the user's is configured and
    the node has no field for it."""
    base_url: str | None = None
    """The server's URL (an address, not a secret), when it is the user's own."""
    base_url_field: str | None = None
    """The node's field that takes ``base_url`` (Ollama's ``ollama_base_url``), when lfx has one."""

    def selection(self) -> str:
        return json.dumps({"name": self.model, "provider": self.provider})

    def describe(self) -> str:
        """``my-model (OpenAI), key <variable>, base URL <variable> (<url>)``: for a card or an answer."""
        parts = [f"{self.model} ({self.provider})"]
        if self.key_variable:
            parts.append(f"key {self.key_variable}")
        if self.base_url and self.base_url_field:
            parts.append(f"server {self.base_url}")
        elif self.base_url_variable and self.base_url:
            parts.append(f"base URL {self.base_url_variable} ({self.base_url})")
        return ", ".join(parts)


def _flow_providers() -> dict[str, table.ProviderSpec]:
    """Our providers a flow's model node can call, by our name."""
    return {p.name: p for p in table.ASSISTANT_PROVIDERS if p.flow is not None}


def flow_model_for(
    provider: str | None,
    model: str | None,
    *,
    base_url: str | None = None,
    setting: str | None = None,
    base_urls: Mapping[str, str | None] | None = None,
) -> FlowModel | None:
    """The flow model for an assistant on ``provider``/``model``, or the ``flow_model`` setting.

    ``setting`` is ``"provider:model"`` (``anthropic:claude-haiku-4-5``) or a model name of the
    assistant's provider.  ``base_url`` is the assistant's provider's (its SDK's), ``base_urls``
    the configured base URLs of the others (a setting may name one).  None for a provider a flow
    cannot call (the offline scripted demo).  ``provider:`` without a model is a ``ConfigError``."""
    ours = _flow_providers()
    if setting and setting.strip():
        head, sep, tail = setting.strip().partition(":")
        if sep and head.strip().lower() in ours:  # "anthropic:claude-haiku-4-5"
            if not tail.strip():
                raise ConfigError(f"flow_model={setting!r}: name the model after the provider (provider:model).")
            if head.strip().lower() != (provider or "").lower():
                base_url = (base_urls or {}).get(head.strip().lower())
            provider, model = head.strip().lower(), tail.strip()
        else:  # a model of the assistant's provider ("qwen3:0.6b" is one name)
            model = setting.strip()
    spec = ours.get((provider or "").lower())
    if spec is None or spec.flow is None or not model:
        return None
    own = bool(base_url) and table.own_server(spec, base_url)
    # written into the flow and shown on the card: never a password it carries
    root = without_credentials(table.server_root(spec, base_url)) if own and base_url else None
    node = spec.flow
    return FlowModel(
        provider=node.lfx_provider,
        model=model,
        key_variable=spec.key_variable,
        base_url_variable=node.base_url_variable if root and not node.base_url_field else None,
        base_url=root,
        base_url_field=node.base_url_field if root else None,
    )


# -- the spec ---------------------------------------------------------------------------------


def _spec_parts(spec: str) -> tuple[list[tuple[str, str]], dict[tuple[str, str], str], int | None, int]:
    """``(nodes as (id, type), config as (id, field) -> raw value, config header line, end line)``."""
    lines = spec.splitlines()
    nodes: list[tuple[str, str]] = []
    config: dict[tuple[str, str], str] = {}
    section, header, end = None, None, len(lines)
    for number, line in enumerate(lines):
        head = _SECTION.match(line)
        if head:
            if section == "config":
                end = number
            section = head.group(1)
            if section == "config":
                header, end = number, len(lines)
            continue
        if section == "nodes" and (m := _NODE.match(line)) and not line.lstrip().startswith("#"):
            nodes.append((m.group(1), m.group(2)))
        elif section == "config" and (m := _CONFIG.match(line)):
            config[(m.group(1), m.group(2))] = m.group(3)
    return nodes, config, header, end


def _model_fields(template: Mapping[str, Any]) -> list[str]:
    """The language-model selection fields of a node template (``ModelInput``, model_type language)."""
    return [
        name
        for name, field in template.items()
        if isinstance(field, Mapping)
        and field.get("type") == "model"
        and field.get("model_type", "language") == "language"
    ]


def provider_of(raw: str | None, provider_field: str | None) -> str | None:
    """The provider a spec's model value names: the selection's own, the node's provider field,
    or an unmistakable name prefix (``claude-`` is Anthropic: the table's ``model_prefixes``)."""
    text = (raw or "").strip().strip("'\"") if raw else ""
    if text.startswith(("{", "[")):
        try:
            value = json.loads(raw or "")
        except json.JSONDecodeError:
            value = None
        value = value[0] if isinstance(value, list) and value else value
        if isinstance(value, dict) and isinstance(value.get("provider"), str):
            return value["provider"]
        text = str(value.get("name") or "") if isinstance(value, dict) else ""
    if provider_field and provider_field.strip():
        return provider_field.strip().strip("'\"")
    found = table.for_model_name(text) if text else None
    return found.flow.lfx_provider if found and found.flow else None


def _canonical(provider: str) -> str:
    """lfx's spelling of a provider any of whose names is ``provider``."""
    found = table.find(provider)
    return found.flow.lfx_provider if found and found.flow else provider


def _key_variable(provider: str) -> str | None:
    found = table.find(provider)
    return found.key_variable if found else None


def spec_node_ids(spec: str) -> set[str]:
    """The node ids a spec declares (``A: ChatInput`` -> ``A``)."""
    return {node_id for node_id, _ in _spec_parts(spec)[0]}


def configure_model_nodes(
    spec: str, catalog: Any, choice: FlowModel | None, *, keep: set[str] | frozenset[str] = frozenset()
) -> tuple[str, list[Change]]:
    """``spec`` with its model nodes set to ``choice`` where the spec leaves them open, and the
    changes made (one per node).  Nodes in ``keep`` (those of a flow being edited: an edit
    changes only what it names) are left as they are.  A node whose spec names a model keeps it; its key field then
    names that provider's variable when the spec gives none.  A node whose spec names only another
    provider gets that provider's key variable and no model (its model is the user's to choose)."""
    nodes, config, header, end = _spec_parts(spec)
    added: list[str] = []
    changes: list[Change] = []
    for node_id, kind in nodes:
        if node_id in keep:
            continue
        key = catalog.resolve(kind) if catalog is not None else None
        template = (catalog.registry.get(key) or {}).get("template", {}) if key else {}
        fields = _model_fields(template)
        if not fields:
            continue
        field = fields[0]
        lines: list[str] = []
        raw = config.get((node_id, field))
        named = config.get((node_id, "provider"), "").strip().strip("'\"")
        if raw is None and choice is not None and (not named or _canonical(named) == choice.provider):
            lines.append(f"{node_id}.{field}: {choice.selection()}")
            provider: str | None = choice.provider
        elif raw is None:  # the spec names another provider and no model: the user picks its model
            provider = named or None
        else:
            provider = provider_of(raw, config.get((node_id, "provider")))
        provider = _canonical(provider) if provider else None
        mine = choice is not None and provider == choice.provider
        if provider and "api_key" in template and (node_id, "api_key") not in config:
            variable = choice.key_variable if choice and mine else _key_variable(provider)
            if variable:
                lines.append(f"{node_id}.api_key: {variable}")
        url_field = choice.base_url_field if choice and mine else None
        if url_field and choice and url_field in template and (node_id, url_field) not in config:
            lines.append(f"{node_id}.{url_field}: {choice.base_url}")
        if lines:
            added += lines
            what = "; ".join(line.split(": ", 1)[0].split(".", 1)[1] + " " + line.split(": ", 1)[1] for line in lines)
            if choice and mine and choice.base_url_variable:
                what += f" (its base URL: lfx reads {choice.base_url_variable}, {choice.base_url})"
            changes.append(
                Change(kind="model", node=node_id, field=field, before=raw, after=lines, message=f"set for you: {what}")
            )
    if not added:
        return spec, []
    text = spec.splitlines()
    block = [f"  {line}" for line in added]
    if header is None:
        text += ["", "config:", *block]
    else:
        while end > header + 1 and not text[end - 1].strip():
            end -= 1
        text[end:end] = block
    return "\n".join(text).rstrip("\n") + "\n", changes


# -- what a built flow's model nodes use (for the cards) --------------------------------------


def model_nodes(flow: Mapping[str, Any] | None) -> list[ModelUse]:
    """The model nodes of ``flow`` with the model, provider and key variable each one uses (the
    Model Name Override and Provider Override fields, when set, are what lfx sends)."""
    from lfassist_jupyter.artifacts import flow as facts
    from lfassist_jupyter.artifacts.flow import VARIABLE_REF

    out: list[ModelUse] = []
    for node in facts.nodes(flow):
        template = facts.fields(node)
        for field in _model_fields(template):
            value = template[field].get("value")
            if not (isinstance(value, list) and value and isinstance(value[0], Mapping)):
                continue
            name, provider = str(value[0].get("name") or ""), str(value[0].get("provider") or "")
            name = str(facts.obj(template.get("model_name")).get("value") or "").strip() or name
            provider = str(facts.obj(template.get("provider")).get("value") or "").strip() or provider
            key = facts.obj(template.get("api_key"))
            raw = given if isinstance(given := key.get("value"), str) else ""
            variable = raw.strip() if key.get("load_from_db") and VARIABLE_REF.match(raw.strip()) else None
            label = str(facts.frontend_node(node).get("display_name") or node.get("id"))
            typed = bool(raw.strip()) and variable is None
            out.append(ModelUse(node=label, model=name, provider=provider, key_variable=variable, key_typed=typed))
    return out
