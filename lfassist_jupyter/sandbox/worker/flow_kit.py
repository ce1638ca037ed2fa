"""Pure flow helpers, shared by the kernel and the sandbox worker: standard library only.

The kernel never imports lfx, yet checking a flow needs a few of lfx's small rules (which
types an input accepts, how Langflow spells an edge handle, how a spec value is read). They
are re-implemented here, each citing the lfx 1.13 source it mirrors, so the kernel's flow
code handles text and JSON only. The worker's flow ops (``_flow_ops.py``) import this file
as their sibling (inside the directory the sandbox binds read-only) and use the same
repairs, so a spec is repaired the same way wherever it is built.

Nothing here imports lfassist_jupyter or lfx: the worker's interpreter may not have the
package installed.
"""

from __future__ import annotations

import base64
import copy
import difflib
import json
import re
import zlib
from typing import Any

# -- lfx's rules, mirrored ------------------------------------------------------------------

# lfx/graph/edge/base.py: TYPE_MIGRATIONS
TYPE_MIGRATIONS: dict[str, str] = {"Data": "JSON", "DataFrame": "Table"}


def types_compatible(output_types: list[str], input_types: list[str]) -> bool:
    """lfx/graph/edge/base.py ``types_compatible``: an output fits an input when any type
    matches, directly or through a migration (Data <-> JSON, DataFrame <-> Table)."""
    for out in output_types:
        migrated_out = TYPE_MIGRATIONS.get(out, out)
        for inp in input_types:
            migrated_in = TYPE_MIGRATIONS.get(inp, inp)
            if inp in {out, migrated_out} or migrated_in in {out, migrated_out}:
                return True
    return False


_DATA_LIKE = frozenset({"Data", "JSON", "DataFrame", "Table"})


def conversion_hint(
    source: str, output: str, source_types: list[str], target: str, port: str, target_types: list[str]
) -> str:
    """lfx/graph/flow_builder/connect.py ``_conversion_hint``: the converter edge that fixes the
    two common Data <-> Message mismatches ("" for any other)."""
    src, tgt = set(source_types or []), set(target_types or [])
    if "Message" in tgt and src & _DATA_LIKE:
        return (
            f" Fix: insert a ParserComponent between them \u2014 {source}.{output} -> ParserComponent.input_data, "
            f"ParserComponent.parsed_text -> {target}.{port}."
        )
    if "Message" in src and tgt & _DATA_LIKE:
        converter = "data_output" if tgt & {"Data", "JSON"} else "dataframe_output"
        return (
            f" Fix: insert a TypeConverterComponent between them \u2014 {source}.{output} -> "
            f"TypeConverterComponent.input_data, TypeConverterComponent.{converter} -> {target}.{port}."
        )
    return ""


def _stringify(obj: Any) -> str:
    """lfx/graph/flow_builder/connect.py ``_custom_stringify`` (Langflow's frontend customStringify)."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, (int, float)):
        return str(obj)
    if isinstance(obj, str):
        return json.dumps(obj)
    if isinstance(obj, list):
        return "[" + ",".join(_stringify(item) for item in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ",".join(f'"{k}":{_stringify(obj[k])}' for k in sorted(obj)) + "}"
    return str(obj)


def handle_json(obj: Any) -> str:
    """lfx/graph/flow_builder/connect.py ``_scaped_json_stringify``: an edge handle as Langflow
    writes it in ``sourceHandle``/``targetHandle`` (sorted keys, compact, quotes as ``œ``)."""
    return _stringify(obj).replace('"', "\u0153")


def spec_scalar(text: str) -> Any:
    """lfx/graph/flow_builder/spec.py ``_coerce_value``: how lfx reads an unquoted spec value."""
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low in ("null", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# -- key fields -------------------------------------------------------------------------------

VARIABLE_REF = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
"""A key field's value that names a variable (``OPENAI_API_KEY``) rather than being the key."""


def is_key_field(field: dict[str, Any]) -> bool:
    """A password field (``SecretStrInput``): the only kind of field that may read a variable."""
    return field.get("password") is True or field.get("_input_type") == "SecretStrInput"


def name_variable(field: dict[str, Any]) -> None:
    """A key field holding an UPPER_SNAKE name reads that variable: ``load_from_db``, as a
    Langflow global variable is read (lfx's ``configure_component`` writes every value as a
    literal).  So ``M.api_key: OPENAI_API_KEY`` means the variable in Langflow too, never a key
    that reads "OPENAI_API_KEY"."""
    value = field.get("value")
    if is_key_field(field) and isinstance(value, str) and VARIABLE_REF.match(value.strip()):
        field["load_from_db"] = True


# -- names ------------------------------------------------------------------------------------


def norm(name: str) -> str:
    """Case, spaces, underscores and a trailing 'Component' do not distinguish two names."""
    n = re.sub(r"[\s_\-]", "", name).lower()
    return n.removesuffix("component") or n


def resolve(name: str, registry: dict[str, Any]) -> str | None:
    """The registry name meant by ``name``: exact, case-insensitive, display name, or a near miss."""
    name = (name or "").strip().strip("`'\"*")
    if not name:
        return None
    if name in registry:
        return name
    by_norm: dict[str, str] = {}
    for key, entry in registry.items():
        by_norm.setdefault(norm(key), key)
        if isinstance(entry, dict):
            by_norm.setdefault(norm(str(entry.get("display_name") or "")), key)
    if norm(name) in by_norm:
        return by_norm[norm(name)]
    close = difflib.get_close_matches(norm(name), list(by_norm), n=1, cutoff=0.8)
    return by_norm[close[0]] if close else None


# -- deterministic repairs (shared by the kernel's repair_flow and the worker's build) --------

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def unquote(value: Any) -> tuple[Any, bool]:
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


def coerce_value(field: dict[str, Any], value: Any) -> Any:
    """A value read as its field's type: "3" -> 3 for an int, "true" -> True for a bool, "0.5" -> 0.5."""
    kind = field.get("type")
    options = field.get("options")
    if isinstance(value, str) and isinstance(options, list) and options and all(isinstance(o, dict) for o in options):
        # A sortable list (Text Operations' operation) holds the chosen option objects:
        # "Case Conversion" -> [{"name": "Case Conversion", "icon": "type"}].
        wanted = value.strip().lower()
        match = [o for o in options if str(o.get("name", "")).lower() == wanted]
        if match and kind == "sortableList":
            return copy.deepcopy(match[:1])
    if isinstance(value, str) and value.strip()[:1] in "[{" and kind not in ("str", "prompt", "mustache", "code"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, str):
        text = value.strip()
        if kind == "bool":
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
        elif kind == "int":
            try:
                return int(text)
            except ValueError:
                try:
                    as_float = float(text)
                except ValueError:
                    return value
                return int(as_float) if as_float.is_integer() else value
        elif kind == "float":
            try:
                return float(text)
            except ValueError:
                return value
    elif kind == "str" and isinstance(value, (int, float)) and not isinstance(value, bool) and not field.get("list"):
        # A dropdown of strings given a number ("1" parsed as 1 by the spec reader).
        if isinstance(options, list) and str(value) in options:
            return str(value)
    elif kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def input_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    return {
        k: list(v.get("input_types") or [])
        for k, v in (node.get("template") or {}).items()
        if isinstance(v, dict) and v.get("input_types") and v.get("show", True)
    }


def output_ports(node: dict[str, Any]) -> dict[str, list[str]]:
    return {str(o.get("name")): list(o.get("types") or []) for o in node.get("outputs") or [] if isinstance(o, dict)}


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _pick(wrong: str, candidates: list[str]) -> str | None:
    """The single candidate, or the one a near miss of the wrong name points to."""
    if len(candidates) == 1:
        return candidates[0]
    close = difflib.get_close_matches(wrong, candidates, n=2, cutoff=0.6)
    if len(close) == 1 or (
        len(close) == 2 and close[0] != close[1] and _ratio(wrong, close[0]) > _ratio(wrong, close[1])
    ):
        return close[0]
    return None


def fix_edge_ports(
    source: dict[str, Any], output: str, target: dict[str, Any], input_name: str
) -> tuple[str, str, list[dict[str, Any]]]:
    """Rename an edge's unknown output or input when the types leave one port that fits.

    ``source`` and ``target`` are the nodes' templates (``node["data"]["node"]``); the
    changes are plain dicts (``kind``, ``field``, ``before``, ``after``, ``message``).
    """
    changes: list[dict[str, Any]] = []
    outputs, inputs = output_ports(source), input_ports(target)
    loop_inputs = {o.get("name") for o in source.get("outputs") or [] if isinstance(o, dict) and o.get("allows_loop")}
    target_is_loop = input_name in {
        o.get("name") for o in target.get("outputs") or [] if isinstance(o, dict) and o.get("allows_loop")
    }
    if output not in outputs:
        wanted = inputs.get(input_name)
        fits = [n for n, t in outputs.items() if wanted is None or types_compatible(t, wanted)]
        fits = [n for n in fits if n not in loop_inputs or wanted is not None]
        chosen = _pick(output, fits)
        if chosen:
            changes.append(
                {"kind": "port", "field": "output", "before": output, "after": chosen, "message": "output renamed"}
            )
            output = chosen
    if input_name not in (target.get("template") or {}) and not target_is_loop:
        produced = outputs.get(output)
        fits = [n for n, t in inputs.items() if produced is None or types_compatible(produced, t)]
        chosen = _pick(input_name, fits)
        if chosen:
            changes.append(
                {"kind": "port", "field": "input", "before": input_name, "after": chosen, "message": "input renamed"}
            )
            input_name = chosen
    return output, input_name, changes


# -- the wire: large JSON through the worker's answer (strings capped at 20,000 characters) ---

CHUNK = 16_000


def pack(obj: Any) -> list[str]:
    """``obj`` as JSON, zlib-compressed, base64, in chunks short enough for the worker's caps."""
    # default=str: a value lfx keeps as an object (a UUID in an MCP node's field) travels as its text.
    text = base64.b64encode(zlib.compress(json.dumps(obj, separators=(",", ":"), default=str).encode(), 6)).decode()
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]


def unpack(chunks: Any, cap: int) -> Any:
    """The object ``pack`` packed; ``ValueError`` when it is not one, or inflates past ``cap`` bytes."""
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise ValueError("not a packed answer")
    try:
        raw = base64.b64decode("".join(chunks), validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, cap + 1)
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"not a packed answer ({exc})") from None
    if len(data) > cap or inflater.unconsumed_tail:
        raise ValueError(f"larger than {cap:,} bytes")
    return json.loads(data)
