"""The Python packages a flow needs that the sandbox's environment lacks, named before anything runs.

Since Langflow 1.13 the provider components live in extension bundles, so a flow can need a
package a bare lfx does not bring (``langchain-groq`` for a Groq model node, ``jq`` for Data
Operations, ``lfx-bundles`` behind an ``lfx.components.composio`` shim).  lfx's own logic decides
(``lfx requirements``, the dependency preflight of ``lfx run``): it runs in the catalogue's sandbox
(``FlowSandbox.flow_packages``, worker ``_packages.py``); here the flow's nodes are sorted
into built-in types (asked by name), custom code (sent) and model providers, and the answer is
put back on the nodes.  Pure data work in the kernel; no lfx.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.validation.report import MissingPackage

from .results import Need

if TYPE_CHECKING:
    from .catalog import Catalog

log = logging.getLogger("lfassist_jupyter")


def _node_parts(node: Mapping[str, Any]) -> tuple[str, str, str | None, list[str], str]:
    """``(name, type, code, providers, model field)`` of one node of flow JSON."""
    template = facts.fields(node)
    code_field = facts.obj(template.get("code"))
    code = code_field.get("value") if isinstance(code_field.get("value"), str) else None
    providers: list[str] = []
    model_field = "code"
    for fname, field in template.items():
        if isinstance(field, Mapping) and field.get("type") == "model" and isinstance(field.get("value"), list):
            providers += [str(m["provider"]) for m in field["value"] if isinstance(m, Mapping) and m.get("provider")]
            model_field = str(fname)
    override = facts.obj(template.get("provider")).get("value")
    if isinstance(override, str) and override.strip() and providers:
        providers.append(override.strip())
    kind = facts.registry_type(node) or ""
    name = str(facts.frontend_node(node).get("display_name") or kind or node.get("id"))
    return name, kind, code, [p for p in dict.fromkeys(providers) if p not in ("", "Unknown")], model_field


def package_need(name: str, node_id: str | None, field: str, distribution: str, fix: str) -> Need:
    """The ``package`` need of a node: the flow is not broken, this environment lacks a package."""
    return Need(
        kind="package",
        node=name,
        node_id=node_id,
        field=field,
        message=f"{name} needs the package {distribution}, which is not installed in the sandbox's "
        f"environment: {fix} (then restart the kernel).",
        package=distribution,
    )


def install_line(distributions: list[str], python: str | None = None) -> str:
    """``%pip install a b`` for the kernel's own interpreter; the other interpreter's pip otherwise."""
    names = " ".join(distributions)
    if python and python != sys.executable:
        return f"{python} -m pip install {names}"
    return f"%pip install {names}"


def packages_needed(flow: Mapping[str, Any] | None, catalog: Catalog) -> tuple[list[MissingPackage], list[Need]]:
    """The distributions ``flow`` needs that the catalogue's sandbox lacks, each with the nodes
    that need it and the line that installs it, and the same as one ``package`` need per node and
    distribution.  ([], []) when nothing is missing, or when the sandbox cannot tell (it then
    says so in the log, and a run would find out), or when the catalogue has no sandbox."""
    nodes = facts.components(flow)
    parts = [_node_parts(n) for n in nodes]
    sandbox = catalog.sandbox
    if not parts or sandbox is None:
        return [], []
    registry = catalog.registry

    def builtin(kind: str, code: str | None) -> bool:
        """A node of lfx's own component (asked by its type) rather than code of its own."""
        own = ((registry.get(kind) or {}).get("template") or {}).get("code") or {}
        return code is None or code == own.get("value")

    types: list[str] = []
    codes: list[str] = []
    providers: list[str] = []
    for _name, kind, code, used, _field in parts:
        if code is None or builtin(kind, code):
            types.append(kind)
        else:
            codes.append(code)
        providers += used
    answer = sandbox.flow_packages(types, codes, providers)
    if answer is None:
        log.info("The sandbox could not tell which packages the flow needs.")
        return [], []
    python = sandbox.python
    needed: dict[str, list[str]] = {}
    needs: list[Need] = []
    for node, (name, kind, code, used, model_field) in zip(nodes, parts, strict=True):
        own = answer.types.get(kind, []) if builtin(kind, code) else answer.codes.get(code or "", [])
        found = [(dist, "code") for dist in own]
        for provider in used:
            found += [(dist, model_field) for dist in answer.providers.get(provider, [])]
        for dist, field in dict.fromkeys(found):
            if name not in needed.setdefault(dist, []):
                needed[dist].append(name)
            needs.append(package_need(name, facts.node_id(node), field, dist, install_line([dist], python)))
    packages = [
        MissingPackage(module=dist, distribution=dist, fix=install_line([dist], python), nodes=names)
        for dist, names in sorted(needed.items())
    ]
    return packages, needs
