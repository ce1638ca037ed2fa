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
from typing import Any

from ..artifacts import flow as facts  # standard library only, as everything this module imports

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


def _stub_reason(node: dict[str, Any]) -> str | None:
    """Why a node cannot run in the sandbox: it calls a model, or an API that needs a key."""
    template = facts.fields(node)
    if any(isinstance(f, dict) and f.get("type") == "model" for f in template.values()):
        return "calls a language model"
    if any(set(o.get("types") or []) & {"LanguageModel", "Embeddings"} for o in facts.outputs(node)):
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
    edges = facts.edges(flow)
    stubbed: list[dict[str, str]] = []
    for node in facts.components(flow):
        nd = node["data"]
        reason = "asked for" if extra and node.get("id") in extra else _stub_reason(node)
        if reason is None:
            continue
        spec = facts.frontend_node(node)
        name = facts.node_name(node)
        connected = []
        for e in edges:
            th = facts.handles(e)[1]
            if e.get("target") == node.get("id") and th.get("fieldName"):
                field = facts.fields(node).get(th["fieldName"])
                field = field if isinstance(field, dict) else {}
                connected.append((th["fieldName"], list(field.get("input_types") or th.get("inputTypes") or [])))
        # The stub keeps each output's name and method: lfx calls the method the flow JSON names.
        outputs = [
            (str(o.get("name")), list(o.get("types") or ["Message"]), str(o.get("method") or f"build_{o.get('name')}"))
            for o in facts.outputs(node)
        ]
        code = _stub_code(name, connected, outputs)
        template = {
            k: copy.deepcopy(v) for k, v in facts.fields(node).items() if k in dict(connected) and isinstance(v, dict)
        }
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
        stubbed.append({"node_id": facts.node_id(node), "name": name, "reason": reason})
    return flow, stubbed
