"""Prepare a flow for a probe run: model and keyed-API nodes become deterministic stubs.

Pure data work on the flow JSON, done in the kernel (``SandboxValidator.probe_run``)
before the flow goes through the sandbox's door; the run itself is lfx's runner in a
sandboxed child (``sandbox/worker/_probe_run.py``). In the sandbox there are no keys and no
network, so a component that calls a model or a keyed API cannot run; it is replaced, in a
copy of the flow, by a stub component with the same ports whose outputs echo their inputs
deterministically (``[stub Language Model] <prompt text>``). Everything else runs for real,
so the wiring, the prompts and the parsing are exercised, and the result says which nodes
were stubbed and why. The stub's code below is text: nothing here imports lfx.
"""

from __future__ import annotations

import copy
import re
from typing import Any

_STUB_PREFIX = "[stub {name}]"

_STUB_HEAD = """\
from lfx.custom.custom_component.component import Component
from lfx.io import HandleInput, Output
from lfx.schema.data import Data
from lfx.schema.dataframe import DataFrame
from lfx.schema.message import Message


class ProbeStub(Component):
    display_name = {display!r}
    description = "Deterministic stand-in used by a probe run (no model, no network)."
    inputs = [HandleInput(name=n, display_name=n, input_types=t or ["Message"]) for n, t in {inputs!r}]
    outputs = [Output(name=n, display_name=n, method=m, types=t) for n, t, m in {outputs!r}]

    def _text(self, value):
        if value is None:
            return ""
        if isinstance(value, list):
            return " ".join(self._text(v) for v in value)
        got = getattr(value, "text", None)
        if isinstance(got, str):
            return got
        data = getattr(value, "data", None)
        if isinstance(data, dict):
            return str(data.get("text", data))
        return str(value)

    def _echo(self):
        parts = [self._text(getattr(self, n, None)) for n in {names!r}]
        text = ({label!r} + " " + " ".join(p for p in parts if p)).strip()
        self.status = text
        return text
"""

# lfx compiles a component's class body only (module-level code is dropped), so every stub
# method is written out inside the class.
_STUB_METHOD = """
    def {method}(self) -> {kind}:
        text = self._echo()
        return {value}
"""


def _stub_code(name: str, inputs: list[tuple[str, list[str]]], outputs: list[tuple[str, list[str], str]]) -> str:
    code = _STUB_HEAD.format(
        display=name,
        inputs=inputs,
        outputs=outputs,
        # Tools and models wired in are not text: the echo leaves them out.
        names=[n for n, t in inputs if not set(t) & {"Tool", "LanguageModel", "Embeddings", "Memory"}],
        label=_STUB_PREFIX.format(name=name),
    )
    for _, types, method in outputs:
        if set(types) & {"DataFrame", "Table"}:
            kind, value = "DataFrame", 'DataFrame([{"text": text}])'
        elif set(types) & {"Data", "JSON"}:
            kind, value = "Data", 'Data(data={"text": text})'
        else:
            kind, value = "Message", "Message(text=text)"
        code += _STUB_METHOD.format(method=method, kind=kind, value=value)
    return code


def _stub_reason(node_data: dict[str, Any]) -> str | None:
    """Why a node cannot run in the sandbox: it calls a model, or an API that needs a key."""
    node = node_data.get("node") or {}
    template = node.get("template") or {}
    outputs = node.get("outputs") or []
    if any(isinstance(f, dict) and f.get("type") == "model" for f in template.values()):
        return "calls a language model"
    if any(set(o.get("types") or []) & {"LanguageModel", "Embeddings"} for o in outputs if isinstance(o, dict)):
        return "builds a model"
    if any(
        isinstance(f, dict) and (f.get("password") or f.get("display_password")) and f.get("show", True)
        for f in template.values()
    ):
        return "needs an API key"
    return None


def stub_flow(flow: dict[str, Any], extra: set[str] | None = None) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A copy of ``flow`` whose model/API nodes (and the ``extra`` node ids) are stubs; and which ones."""
    flow = copy.deepcopy(flow)
    data = flow.get("data", flow)
    edges = data.get("edges", [])
    stubbed: list[dict[str, str]] = []
    for node in data.get("nodes", []):
        nd = node.get("data") or {}
        if node.get("type", "genericNode") != "genericNode":
            continue
        reason = "asked for" if extra and node.get("id") in extra else _stub_reason(nd)
        if reason is None:
            continue
        spec = nd.get("node") or {}
        name = str(spec.get("display_name") or nd.get("type") or node.get("id"))
        connected = []
        for e in edges:
            th = (e.get("data") or {}).get("targetHandle") or {}
            if e.get("target") == node.get("id") and th.get("fieldName"):
                field = (spec.get("template") or {}).get(th["fieldName"]) or {}
                connected.append((th["fieldName"], list(field.get("input_types") or th.get("inputTypes") or [])))
        # The stub keeps each output's name and method: lfx calls the method the flow JSON names.
        outputs = [
            (str(o.get("name")), list(o.get("types") or ["Message"]), str(o.get("method") or f"build_{o.get('name')}"))
            for o in spec.get("outputs") or []
            if isinstance(o, dict)
        ]
        code = _stub_code(name, connected, outputs)
        template = {k: copy.deepcopy(v) for k, v in (spec.get("template") or {}).items() if k in dict(connected)}
        for fname, types in connected:
            template[fname] = {
                **template.get(fname, {}),
                "_input_type": "HandleInput",
                "type": "other",
                "input_types": types or ["Message"],
                "value": "",
                "required": False,
                "show": True,
                "name": fname,
            }
        template["code"] = {"type": "code", "value": code, "name": "code", "show": True, "dynamic": True}
        template["_type"] = "Component"
        spec["template"] = template
        spec["field_order"] = [n for n, _ in connected]
        spec.setdefault("metadata", {}).pop("module", None)
        nd["type"] = "CustomComponent"
        stubbed.append({"node_id": str(node.get("id")), "name": name, "reason": reason})
    return flow, stubbed


# -- what a failed run stopped at --------------------------------------------------------------

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
    data = flow.get("data", flow) if isinstance(flow, dict) else {}
    named = []
    for node in data.get("nodes") or []:
        if not isinstance(node, dict):
            continue
        spec = (node.get("data") or {}).get("node") or {}
        name = str(spec.get("display_name") or node.get("id"))
        mentioned = (
            re.search(rf"(?<![\w-]){re.escape(w.lower())}(?![\w-])", text) for w in (name, str(node.get("id")))
        )
        if name and any(mentioned):
            named.append((node, name, spec.get("template") or {}))
    if not named and any(k in text for k in _FILE_ERRORS):  # a file error that names no node: the file nodes
        named = [
            (n, str(((n.get("data") or {}).get("node") or {}).get("display_name") or n.get("id")), t)
            for n in data.get("nodes") or []
            if isinstance(n, dict)
            and _file_fields(t := ((n.get("data") or {}).get("node") or {}).get("template") or {})
        ]
    out: list[dict[str, Any]] = []
    for node, name, template in named:
        where = {"node": name, "node_id": str(node.get("id"))}
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
