"""Langflow 1.13's ``connection_ref`` fields: a node's named connection, checked as lfx checks it.

A ``ConnectionRefInput`` (``lfx/inputs/inputs.py``; field type ``connection_ref``) holds no secret:
its value is a portable handle ``<provider>/<name>`` (``lfx/integrations/models.py``,
``ConnectionRef``), resolved when the node runs by the host's connection resolver.  Outside
Langflow (``lfx run``, ``lfx serve``) that resolver is lfx's
``EnvConnectionResolver``: it reads the environment variable ``ConnectionRef.env_key()``
(``LF_CONNECTION__<PROVIDER>__<NAME>``: a token or a credential JSON).  No built-in component has
such a field; extension bundles and custom components declare one, with the provider it takes.

What lfx does with one, and what this module says of it (``check``):

- ``lfx validate`` (1.13, level 4) checks only that a *required* one has a value ("Required input
  ... has no value"); it never reads the handle or the environment.  An empty required field is
  a ``connection`` need here (the user picks the connection, like a model or a key).
- ``lfx run`` refuses the flow before any node runs (``run/base.py`` ->
  ``cli/validation/_env_validation.validate_connection_refs_for_env``) when a handle does not parse
  (``Connection '<malformed connection reference>' could not be resolved``): no environment can
  fix that, so it is an error of the flow (``bad_value``), and so is a handle of another provider
  than the field declares (lfx refuses to build the node: ``ConnectionRefInput``'s validator).
- ``lfx run`` refuses it too when the handle's key is in neither the run's request variables nor
  the environment (``ConnectionUnresolvedError``, reason ``missing``: "Set LF_CONNECTION__... to a
  token or credential JSON object").  That is not a fault of the flow: once the key is set it runs
  (measured on ``benchmarks/trigger_cases.py``'s cases).  So a missing connection is a
  ``connection`` **need**, named by its handle and its key, and the verdict stays ``sound``: not
  ``broken`` (``lfx validate`` accepts the file, and nothing in it is wrong), and not ``not_judged``
  either, which says this environment lacks what *judging* the flow takes (a package); judging it
  takes no credential, a run does (the same as an empty API key field).  Whether the key is set is
  read here from the kernel's environment, as lfx reads its own (presence only: the value is never
  read into a report).

Standard library only (the kernel never imports lfx); ``tests/flows/test_connections.py`` compares
the handle's grammar and key with lfx's ``ConnectionRef`` over many handles.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from lfassist_jupyter.artifacts import flow as facts

from .results import FlowProblem, Need

FIELD_TYPE = "connection_ref"
"""The template field type of a ``ConnectionRefInput`` (``lfx/inputs/input_mixin.py``'s
``FieldTypes.CONNECTION_REF``): what lfx's run check looks for."""

# lfx/integrations/models.py: PROVIDER_ID_PATTERN, CONNECTION_NAME_PATTERN and ConnectionRef's max_length.
_PROVIDER = re.compile(r"[a-z0-9][a-z0-9._-]*")
_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
_PROVIDER_MAX, _NAME_MAX = 120, 64
_ENV_PREFIX, _ENV_SEPARATOR = "LF_CONNECTION__", "__"


def parse(value: object) -> tuple[str, str] | None:
    """``(provider, name)`` of a handle ``<provider>/<name>``, or None where lfx's
    ``ConnectionRef.parse`` refuses it (not a string, not exactly one ``/``, a part outside its
    pattern or longer than lfx allows)."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    provider, name = value.split("/", 1)
    if len(provider) > _PROVIDER_MAX or len(name) > _NAME_MAX:
        return None
    if not _PROVIDER.fullmatch(provider) or not _NAME.fullmatch(name):
        return None
    return provider, name


def env_key(provider: str, name: str) -> str:
    """lfx's ``ConnectionRef.env_key()``: ``LF_CONNECTION__`` + the provider id with letters and
    digits upper-cased and every other character as ``_`` and its two hex digits (``acme.mail-v2``
    -> ``ACME_2EMAIL_2DV2``) + ``__`` + the name upper-cased."""
    segment = "".join(c.upper() if c.isalnum() else f"_{ord(c):02X}" for c in provider)
    return f"{_ENV_PREFIX}{segment}{_ENV_SEPARATOR}{name.upper()}"


def is_set(key: str) -> bool:
    """Whether a run here would find the key: lfx reads the variable or its header alias
    (``x-langflow-global-var-...``) from the environment; only their presence is read."""
    alias = f"x-langflow-global-var-{key.lower().replace('_', '-')}"
    return bool(os.environ.get(key) or os.environ.get(alias))


def _example(provider: str) -> str:
    return f"'{provider or '<provider>'}/<name>'"


def check(
    nodes: dict[str, dict[str, object]],
    connected: set[tuple[str, str]],
    add: Callable[[FlowProblem], None],
    needs: list[Need],
) -> None:
    """Each node's ``connection_ref`` fields, as lfx validates and runs them (see the module
    docstring): a malformed handle or another provider's is an error, an empty required one or one
    whose key is not set here is a ``connection`` need.  A field an edge fills is the edge check's
    (such a field takes no connection)."""
    for nid, node in nodes.items():
        name = facts.node_name(node)
        for fname, field in facts.fields(node).items():
            if not isinstance(field, dict) or field.get("type") != FIELD_TYPE or (nid, fname) in connected:
                continue
            declared = str(field.get("provider") or "")
            value = field.get("value")
            where = {"node": name, "node_id": nid, "field": fname}
            if value in (None, ""):
                if field.get("required"):
                    variable = (
                        env_key(declared, "<name>") if parse(f"{declared}/x") else f"{_ENV_PREFIX}<PROVIDER>__<NAME>"
                    )
                    message = (
                        f"Choose a connection for {name}.{fname}: a handle {_example(declared)} "
                        f"(Langflow's connection of that name; lfx run reads {variable})."
                    )
                    needs.append(Need(kind="connection", message=message, **where))
                continue
            ref = parse(value)
            if ref is None:
                add(
                    FlowProblem(
                        code="bad_value",
                        message=f"{name}.{fname} is not a connection handle lfx can read; lfx run refuses the "
                        "flow ('Connection <malformed connection reference> could not be resolved').",
                        fix=f"Set {fname} to a handle {_example(declared)}: a lower-case provider id, one '/', "
                        "a snake_case name.",
                        **where,
                    )
                )
                continue
            provider, conn = ref
            handle = f"{provider}/{conn}"
            if declared and provider != declared:
                add(
                    FlowProblem(
                        code="bad_value",
                        message=f"{name}.{fname} names the connection {handle!r} of provider {provider!r}, but the "
                        f"field takes {declared!r} connections; lfx refuses to build {name}.",
                        fix=f"Set {fname} to a handle {_example(declared)}.",
                        **where,
                    )
                )
                continue
            key = env_key(provider, conn)
            if not is_set(key):
                message = (
                    f"{name}.{fname} uses the connection {handle!r}: lfx run reads it from {key} (a token or "
                    "a credential JSON), which is not set here; Langflow uses its own connection of that name. "
                    "Set one of them before a real run."
                )
                needs.append(Need(kind="connection", message=message, **where))
