"""What a failed run stopped at that the user must provide: a file, a key or a service.

A probe run (or any run) that stops because the author's file is not on this machine, a key is
not set, or a server is not reachable has not found a fault of the flow; saying "failed" sends the
user (or a model's repair round) after the wrong thing. Read from lfx's error and the node it
names; pure data work (stdlib and the flow facts of ``artifacts/flow.py``, plus the run's own
answer type for ``explain_run``).
"""

from __future__ import annotations

import re
from typing import Any

from lfassist_jupyter.artifacts import flow as facts

_FILE_ERRORS = ("no such file", "filenotfound", "file not found", "does not exist", "no files", "storagenamespace",
                "localfileaccess", "is not a file", "not a valid file")  # fmt: skip
_KEY_ERRORS = ("api key", "api_key", "apikey", "credential", "authenticat", "unauthorized", "401", "token")
_SERVICE_ERRORS = ("connection refused", "connect call failed", "all connection attempts failed", "connecterror",
                   "name or service not known", "temporary failure in name resolution", "nodename nor servname",
                   "network is unreachable", "failed to establish a new connection", "connection error",
                   "max retries exceeded", "could not connect", "timed out")  # fmt: skip


def _file_fields(template: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (name, field.get("value"))
        for name, field in template.items()
        if isinstance(field, dict)
        and field.get("show") is not False
        and (field.get("type") == "file" or field.get("_input_type") == "FileInput" or name in ("path", "file_path"))
    ]


def _mentions(text: str, words: tuple[str, ...]) -> bool:
    """Whether lower-cased ``text`` names one of ``words`` as a whole word."""
    return any(w and re.search(rf"(?<![\w-]){re.escape(w.lower())}(?![\w-])", text) for w in words)


def run_needs(flow: dict[str, Any], error: str) -> list[dict[str, Any]]:
    """What a failed probe run stopped at that the user must provide, read from lfx's error and the
    node it names: a file (none given, or a path from the author's machine or Langflow storage),
    a key, or a service the flow talks to. Empty when the error is the flow's own fault.
    (Dicts of ``RunNeed``'s fields: this module stays free of pydantic.)"""
    text = (error or "").lower()
    named = []
    for node in facts.nodes(flow):
        name = facts.node_name(node)
        mentioned = (
            re.search(rf"(?<![\w-]){re.escape(w.lower())}(?![\w-])", text) for w in (name, facts.node_id(node))
        )
        if name and any(mentioned):
            named.append((node, name, facts.fields(node)))
    if not named and any(k in text for k in _FILE_ERRORS):  # a file error that names no node: the file nodes
        named = [(n, facts.node_name(n), facts.fields(n)) for n in facts.nodes(flow) if _file_fields(facts.fields(n))]
    out: list[dict[str, Any]] = []
    for node, name, template in named:
        where = {"node": name, "node_id": facts.node_id(node)}
        variables = [(f, v["value"]) for f, v in template.items() if isinstance(v, dict) and v.get("load_from_db")
                     and isinstance(v.get("value"), str) and v["value"]]  # fmt: skip
        if variables and "nonetype" in text:  # a global variable the run could not read came in as None
            field, variable = variables[0]
            kind = "file" if any(f == field for f, _ in _file_fields(template)) else "secret"
            message = f"{name}.{field} reads the global variable {variable!r}, which is not set here: set it"
            out.append({**where, "kind": kind, "field": field, "message": message + " before a real run."})
            continue
        files = _file_fields(template)
        if files and (any(k in text for k in _FILE_ERRORS) or any(not v for _, v in files)):
            fname, value = files[0]
            saved = value[0] if isinstance(value, list) and value else value
            why = f"the saved path {str(saved)[:200]!r} is not on this machine" if saved else "it was given none"
            out.append({**where, "kind": "file", "field": fname,
                        "message": f"Give {name} a file you choose ({fname}): {why}."})  # fmt: skip
        elif any(k in text for k in _SERVICE_ERRORS):
            url = next((f for f in template if "url" in f.lower() or f.lower() in ("host", "endpoint", "api_endpoint")),
                       None)  # fmt: skip
            hint = f" (its {url})" if url else ""
            out.append({**where, "kind": "service", "field": url,
                        "message": f"{name} needs a service it could not reach{hint}: start it, or point it at one "
                        "that runs."})  # fmt: skip
        elif any(k in text for k in _KEY_ERRORS):
            key = next((f for f, v in template.items() if isinstance(v, dict) and v.get("password")), None)
            which = f" ({key})" if key else ""
            message = f"{name} needs a key{which}: set it before a real run."
            out.append({**where, "kind": "secret", "field": key, "message": message})
    return out


def explain_run(flow: dict[str, Any], run: Any) -> Any:
    """``run`` (a ``FlowRun``) with ``needs`` filled when it failed at what the user must provide."""
    if getattr(run, "ok", True) or getattr(run, "needs", None):
        return run
    from lfassist_jupyter.sandbox.answers import RunNeed

    needs = [RunNeed(**n) for n in run_needs(flow, str(run.error or ""))]
    return run.model_copy(update={"needs": needs}) if needs else run
