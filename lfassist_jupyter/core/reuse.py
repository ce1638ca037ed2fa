"""Reuse before generate: a built-in component instead of a lookalike, an existing flow instead of a new one.

Langflow users complain that its Assistant "builds custom components instead of finding
existing ones" (langflow-ai/langflow#14972). Here the classification call already sees the
light catalogue (a name and one line per bundled component, about 5 KB) and may name a
built-in that does the job; the answer then describes it (what it does, its inputs and
outputs, where it is in Langflow) and offers to generate anyway. No generation call is spent.
The user gets a new component with "generate anyway" (or ``%%assist --generate``).

For flows the plan call sees the user's flows and Langflow's starter templates (one line
each, ``reuse_lines``) and may answer "reuse X"; the flow pipeline then edits X.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lfassist_jupyter.core.intent import USE_BUILTIN
from lfassist_jupyter.core.result import AnswerOutcome, BuiltinComponent

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
