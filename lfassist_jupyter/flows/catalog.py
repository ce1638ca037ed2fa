"""The catalogue of components a flow may use, shown to a model in two phases.

Phase one (`light`) is a name and one line per component, small enough for every planning
prompt; phase two (`interfaces`) gives the full typed ports only for the few the model chose.
Discovery in two phases keeps a prompt far under the size of a full component dump.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.artifacts.flow import loop_port
from lfassist_jupyter.artifacts.flow import resolve as _resolve
from lfassist_jupyter.ports import NAME_CAP, one_line

if TYPE_CHECKING:
    from lfassist_jupyter.ports import FlowSandbox

_DESC_MAX = 80


def _one_line(text: str) -> str:
    """The first sentence of a description, cut to a prompt-friendly length."""
    text = " ".join((text or "").split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return first if len(first) <= _DESC_MAX else first[: _DESC_MAX - 1].rstrip() + "…"


_RELEASED = Path(__file__).with_name("builtin_codes.json")


@functools.cache
def _released() -> dict[str, list[str]]:
    """SHA-256 of each component module's text as Langflow's released wheels shipped it -> the
    component types it defines (``builtin_codes.json``, made by ``benchmarks/builtin_codes.py``;
    modules that run other text are not in it).  Empty when the file is missing or unreadable:
    then nothing older than this lfx is taken for Langflow's own."""
    try:
        codes = json.loads(_RELEASED.read_text(encoding="utf-8")).get("codes")
    except (OSError, ValueError):
        return {}
    return codes if isinstance(codes, dict) else {}


def released_code_types(code: str) -> frozenset[str]:
    """The component types a Langflow release shipped exactly ``code`` for (empty: none did)."""
    if not isinstance(code, str) or not code:
        return frozenset()
    types = _released().get(hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest())
    return frozenset(t for t in types if isinstance(t, str)) if isinstance(types, list) else frozenset()


class Catalog:
    """Component templates by type name (lfx's registry shape: ``{type: node template}``).

    ``registry`` is data only: lfx's bundled templates as the sandbox's zygote read them
    (``default_catalog``), plus what ``add`` put in. ``sandbox`` is where flows over this
    catalogue are built, their node code judged and their packages found (``build_flow``,
    ``validate_flow``): the sandbox whose lfx the registry describes.  A catalogue without one
    (data only, e.g. for a prompt) builds nothing and says so.  ``added`` are the entries beyond
    the bundled ones, which a build sends along.
    """

    def __init__(
        self,
        registry: dict[str, dict[str, Any]],
        *,
        sandbox: FlowSandbox | None = None,
        names: dict[str, list[str]] | None = None,
    ) -> None:
        # A shallow copy: add() must never change the validator's cached catalogue.
        self.registry: dict[str, dict[str, Any]] = dict(registry)
        self.sandbox = sandbox
        self.added: dict[str, dict[str, Any]] = {}
        self.names_of: dict[str, list[str]] = dict(names or {})
        """Every other name lfx knows an entry by -> the entries it may mean (the sandbox's
        ``flow_names``: lfx's identity index and migration table)."""
        self._builtin_codes: frozenset[str] | None = None

    @property
    def builtin_codes(self) -> frozenset[str]:
        """The code lfx's own components carry (not what was added: that is custom), computed
        once per catalogue: every check of a flow asks which of its nodes' codes are lfx's."""
        if self._builtin_codes is None:
            codes = set()
            for entry in self.registry.values():
                if not isinstance(entry, dict) or entry.get("custom"):
                    continue
                field = (entry.get("template") or {}).get("code")
                if isinstance(field, dict) and isinstance(field.get("value"), str):
                    codes.add(field["value"])
            self._builtin_codes = frozenset(codes)
        return self._builtin_codes

    def is_builtin_code(self, code: str, kind: str | None = None) -> bool:
        """Whether ``code`` is Langflow's own: what one of this catalogue's built-ins carries (this
        lfx's release), or, for a node of type ``kind``, exactly what an older Langflow release
        shipped for a component of that type (``released_code_types``: the SHA-256 of the text,
        recorded from the released wheels).  Identity only, never a likeness: one byte changed and
        it is custom code, scanned and loaded as such."""
        if code in self.builtin_codes:
            return True
        return bool(kind) and kind in released_code_types(code)

    # -- contents -------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self.registry)

    def __contains__(self, name: object) -> bool:
        return name in self.registry

    def __len__(self) -> int:
        return len(self.registry)

    def add(
        self, name: str, template: dict[str, Any], *, description: str | None = None, category: str = "custom"
    ) -> None:
        """Add a component (generated in this session, or from a Langflow server).

        ``template`` is a component's node template as Langflow serves it (the object with
        ``template``, ``outputs``, ``display_name``...), e.g. one entry of ``GET /api/v1/all``.
        Added components are marked custom, so lfx's builder places them as ``CustomComponent``
        nodes that carry their own code, as Langflow's canvas does.
        """
        if not isinstance(template, dict) or not isinstance(template.get("template"), dict):
            raise ValueError(f"component {name!r}: a template needs a 'template' dict of fields and 'outputs'")
        entry = copy.deepcopy(template)
        entry.setdefault("outputs", [])
        entry.setdefault("display_name", name)
        if description is not None:
            entry["description"] = description
        entry["category"] = category
        entry["custom"] = True
        entry["legacy"] = False  # listed by light(): what the session made is what the user wants used
        self.registry[name] = entry
        self.added[name] = entry
        self._builtin_codes = None

    def add_all(self, all_types: dict[str, dict[str, dict[str, Any]]]) -> int:
        """Add every component of a Langflow server's ``GET /api/v1/all`` answer not already here."""
        added = 0
        for category, components in all_types.items():
            if not isinstance(components, dict):
                continue
            for name, template in components.items():
                if name not in self.registry and isinstance(template, dict) and "template" in template:
                    self.add(name, template, category=category)
                    self.registry[name]["custom"] = False
                    self._builtin_codes = None
                    added += 1
        return added

    # -- finding a name ---------------------------------------------------------------------
    def known(self, name: str) -> str | None:
        """The entry ``name`` is, without a guess: the entry of that name, else the one entry lfx
        knows by it (a display name, a class name, the name of an earlier Langflow version:
        ``Prompt`` is ``Prompt Template``, ``OpenAIModelComponent`` is ``OpenAIModel``).  None when
        lfx knows no entry by it, or several (an ambiguous name is never settled by a guess)."""
        if name in self.registry:
            return name
        meant = [key for key in self.names_of.get(name, []) if key in self.registry]
        return meant[0] if len(meant) == 1 else None

    def resolve(self, name: str) -> str | None:
        """The catalogue name meant by ``name``: exact, one lfx knows by that name (``known``), else
        case-insensitive, display name, or a near miss (a model's slip of the pen)."""
        stripped = (name or "").strip().strip("`'\"*")
        return self.known(stripped) or (None if stripped in self.names_of else _resolve(stripped, self.registry))

    def parse_choice(self, reply: str) -> list[str]:
        """The components a model chose, from a JSON list, a bulleted list, or names in prose.

        Unknown names are dropped (near misses are resolved); the order of the reply is kept.
        """
        candidates: list[str] = []
        for match in re.finditer(r"\[[^\[\]]*\]", reply or ""):
            try:
                value = json.loads(match.group(0))
            except json.JSONDecodeError:
                continue
            if isinstance(value, list):
                candidates += [str(v) for v in value if isinstance(v, (str, int))]
        if not candidates:
            for line in (reply or "").splitlines():
                m = re.match(r"^\s*(?:[-*•+]|\d+[.)])\s+(.+)$", line)
                if m:
                    # "- ChatInput: reads the question" / "- **ChatInput** — ..." -> the name part
                    item = re.split(r"\s+[—–-]\s+|:\s|\s\(", m.group(1), maxsplit=1)[0]
                    candidates.append(item.strip().strip("`*"))
        chosen: list[str] = []
        for cand in candidates:
            resolved = self.resolve(cand)
            if resolved and resolved not in chosen:
                chosen.append(resolved)
        if chosen:
            return chosen
        return self._names_in_prose(reply or "")

    def _names_in_prose(self, text: str) -> list[str]:
        """Catalogue names (or display names) mentioned anywhere in free text, in order of mention."""
        found: list[tuple[int, str]] = []
        lowered = text.lower()
        for key, entry in self.registry.items():
            positions = []
            for label in {key, str(entry.get("display_name") or "")}:
                if len(label) < 3:
                    continue
                m = re.search(r"(?<![\w])" + re.escape(label.lower()) + r"(?![\w])", lowered)
                if m:
                    positions.append(m.start())
            if positions:
                found.append((min(positions), key))
        found.sort()
        out: list[str] = []
        for _, key in found:
            if key not in out:
                out.append(key)
        return out

    # -- what a model sees --------------------------------------------------------------------
    def light(self) -> str:
        """lfx's own components, names and one line each, grouped by category: the compact list a
        planner chooses from, for the system prompt.  What was added (``added``: this session's,
        a loaded flow's, a server's) is not here: its words are someone else's (``light_added``)."""
        groups: dict[str, list[str]] = {}
        for key, entry in self.registry.items():
            if entry.get("legacy") or key in self.added:
                continue
            about = _one_line(one_line(entry.get("description") or entry.get("display_name") or "", 400))
            line = f"{one_line(key, NAME_CAP)}: {about}"
            groups.setdefault(one_line(entry.get("category") or "other", NAME_CAP), []).append(line)
        return "\n".join(f"[{cat}]\n" + "\n".join(lines) for cat, lines in groups.items())

    def light_added(self) -> str:
        """The added components as data for a user message: one line each, every part quoted
        JSON (``- "name" [category]: "what it does"``), cleaned and capped -- names and
        descriptions written by whoever made the flow, file or server they came from."""
        lines = []
        for key, entry in self.added.items():
            about = one_line(entry.get("description") or entry.get("display_name") or "", 200)
            category = one_line(entry.get("category") or "custom", NAME_CAP)
            lines.append(f"- {json.dumps(one_line(key, NAME_CAP))} [{json.dumps(category)}]: {json.dumps(about)}")
        return "\n".join(lines)

    @property
    def own_names(self) -> list[str]:
        """The names of lfx's own components (``names`` without what was added)."""
        return [name for name in self.names if name not in self.added]

    def interfaces(self, names: list[str]) -> str:
        """Full inputs and outputs with their types, for the chosen components only."""
        blocks = []
        for raw in names:
            key = self.resolve(raw)
            if key is None:
                blocks.append(f"{raw}: not in the catalogue")
                continue
            blocks.append(describe_component(key, self.registry[key]))
        return "\n\n".join(blocks)


def describe_component(key: str, entry: dict[str, Any]) -> str:
    """One component's ports, in the words the spec uses (``Node.field``, ``Node.output``)."""
    lines = [f"{key} ({entry.get('display_name', key)}): {_one_line(str(entry.get('description') or ''))}"]
    ins = []
    advanced = []
    for fname, field in (entry.get("template") or {}).items():
        if fname.startswith("_") or not isinstance(field, dict) or fname == "code":
            continue
        if not field.get("show", True):
            continue
        if field.get("advanced") and not field.get("required"):
            if not field.get("password"):
                advanced.append(fname)
            continue
        types = field.get("input_types") or []
        desc = f"  {fname}: {field.get('type', 'str')}"
        if types:
            desc += f" <- {'|'.join(types)}"
        if field.get("required"):
            desc += " (required)"
        opts = field.get("options")
        if isinstance(opts, list) and opts and all(isinstance(o, str) for o in opts):
            desc += f" one of {opts[:8]}" + ("…" if len(opts) > 8 else "")
        if field.get("type") in ("prompt", "mustache"):
            desc += " ({variables} in it become inputs named after them)"
        ins.append(desc)
    outs = [f"  {o.get('name')}: {'|'.join(o.get('types') or [])}" for o in entry.get("outputs") or []]
    loop = loop_port(entry)
    if loop is not None:  # lfx's describe tool lists it as an input too
        ins.append(f"  {loop[0]}: feedback <- {'|'.join(loop[1])} (the loop body's result comes back here)")
    lines.append("inputs:\n" + ("\n".join(ins) if ins else "  (none)"))
    if advanced:
        lines.append(f"also settable in config: {', '.join(advanced)}")
    lines.append("outputs:\n" + ("\n".join(outs) if outs else "  (none)"))
    return "\n".join(lines)


def default_catalog(sandbox: FlowSandbox) -> Catalog:
    """A fresh catalogue of ``sandbox``'s lfx components (about 130 bundled, plus the installed
    extension bundles' such as ``lfx-openai``), with the other names lfx knows each by, ready for
    `add`, carrying that sandbox: whatever builds, checks or runs a flow over it uses that one.

    The templates come from the sandbox: its zygote read them before any request ran, and it
    caches them. Raises ``ConfigError`` when the sandbox cannot give them (lfx missing in the
    worker's interpreter).  (``lfassist_jupyter.default_catalog()`` is this over the shared one.)
    """
    return Catalog(sandbox.flow_catalog(), sandbox=sandbox, names=sandbox.flow_names())
