"""Flows in a running Langflow: register (create or update in place), run, list and delete.

What the Langflow UI does, through its HTTP API (checked against Langflow 1.13's
``api/v1/flows.py`` and ``api/v1/endpoints.py``):

- A flow's ``id`` is its identity (``flows/save.py``: given when it is first saved or
  registered, then kept). Registering a flow whose id the server has updates that flow in place
  with ``PATCH /api/v1/flows/{id}`` (a ``FlowUpdate``: name, description, data); so does
  registering one without an id when a flow of ours (found by our tag) has its name.  A new
  flow is created with ``PUT /api/v1/flows/{id}`` (Langflow 1.13's upsert, what ``lfx push``
  does) under the flow's own id, or with ``POST /api/v1/flows/`` (a ``FlowCreate``: ``name``,
  ``description``, ``data`` with ``nodes``/``edges``, ``tags``) when it has none, which answers
  the id Langflow gave.  Either way the registered id is the flow's from then on, and a second
  registration never makes "Name (1)".
- ``POST /api/v1/run/{id}`` takes a ``SimplifiedAPIRequest`` (``input_value``, ``input_type``,
  ``output_type``) and answers a ``RunResponse``: ``{"session_id", "outputs": [{"inputs",
  "outputs": [ResultData]}]}``, where a chat output's text is in ``results.message.text``.
- A flow without model components needs no keys, so registering and running it is free.

Every failure is a ``LangflowError`` with one clear line (server down, 401/403, 404, 422,
a body that is not JSON); the API key never appears in one.  The functions take the
connected ``LangflowClient`` (its public ``arequest`` handles the URL, the key, the transport
errors and the size cap); each coroutine (``aregister_flow``...) has a blocking twin without the ``a``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from lfassist_jupyter.artifacts import flow as facts
from lfassist_jupyter.errors import LangflowError
from lfassist_jupyter.flows.save import FLOW_TAGS, is_flow_id
from lfassist_jupyter.langflow.client import TAG
from lfassist_jupyter.redaction import redact

if TYPE_CHECKING:
    from lfassist_jupyter.langflow.client import LangflowClient, LangflowResponse

T = TypeVar("T")

FLOW_TAG = FLOW_TAGS[1]
"""Second tag on flows registered from notebooks (the first, ``TAG``, is shared with components);
a flow file of ours carries both, so a pushed file is found like a registered flow."""

SERVER_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
"""An id a server answered, as it may go into the next request's path: Langflow's are UUIDs, and
nothing else than letters, digits, ``-`` and ``_`` is taken (a listed ``../../api/v1/users`` is not)."""

RUN_TIMEOUT = 120.0  # a run can take much longer than a build; the client's timeout is for quick calls


@dataclass
class RegisteredFlow:
    id: str
    name: str
    created: bool  # False: an existing flow of ours was updated in place
    url: str

    @property
    def link(self) -> str:
        """The flow in Langflow's editor."""
        return f"{self.url}/flow/{self.id}"

    def __str__(self) -> str:
        verb = "Registered" if self.created else "Updated"
        return f"{verb} flow '{self.name}' in Langflow at {self.url} (id {self.id})."


class RunOutput(TypedDict):
    """One component's output of a run on the server: its display name and its text (None: none)."""

    component: str
    text: str | None


@dataclass
class FlowRunResult:
    """What ``POST /api/v1/run/{id}`` answered: the chat text and every component's output."""

    flow_id: str
    text: str | None
    outputs: list[RunOutput] = field(default_factory=list)
    session_id: str | None = None

    def __str__(self) -> str:
        return f"Ran in Langflow: {self.text!r}" if self.text is not None else "Ran in Langflow: no chat output."


def _json(response: LangflowResponse, what: str) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        kind = response.headers.get("content-type", "unknown content type")
        raise LangflowError(
            f"Langflow answered {what} with a body that is not JSON ({response.status_code}, {kind}). "
            "Is the URL a Langflow server?"
        ) from exc


def _fail(client: LangflowClient, response: LangflowResponse, what: str, flow_id: str | None = None) -> LangflowError:
    """One clear line for an HTTP failure."""
    status = response.status_code
    if status in (401, 403):
        return client.auth_error(response)
    detail = redact(str(response.detail))[:300]
    if status == 404:
        return LangflowError(
            f"Langflow has no flow {flow_id} (404): it was deleted or belongs to another user. Register it again."
            if flow_id
            else f"Langflow answered 404 to {what}: is this Langflow version too old?"
        )
    if status == 422:
        return LangflowError(f"Langflow rejected {what} as invalid (422): {detail}")
    return LangflowError(f"Langflow answered {status} to {what}: {detail}")


def flow_body(flow: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The flow as Langflow's create/import endpoints take it: name, description, data{nodes, edges}.

    The same shape is what Langflow's UI imports from a file (its upload endpoint builds a
    ``FlowCreate`` from it), so ``--save`` writes this too.
    """
    problem = facts.shape_problem(flow)
    if problem is not None:
        raise LangflowError(f"Not a Langflow flow: {problem}.")
    nodes = copy.deepcopy(facts.nodes(flow))
    for node in nodes:  # a key field naming a variable (MY_SERVICE_KEY) reads Langflow's global variable of that name
        for value in facts.fields(node).values():
            if isinstance(value, dict):
                facts.name_variable(value)
    return {
        "name": (name or flow.get("name") or "Flow from a notebook").strip(),
        "description": flow.get("description") or "",
        "data": {
            "nodes": nodes,
            "edges": copy.deepcopy(facts.edges(flow)),
            "viewport": facts.graph(flow).get("viewport") or {"x": 0, "y": 0, "zoom": 1},
        },
        "is_component": False,
    }


async def alist_flows(client: LangflowClient, *, ours_only: bool = True) -> list[dict[str, Any]]:
    """The server's flows (not components); by default only those registered from notebooks."""
    response = await client.arequest(
        "GET", "/api/v1/flows/", params={"get_all": "true", "header_flows": "true", "remove_example_flows": "true"}
    )
    if response.status_code != 200:
        raise _fail(client, response, "the list of flows")
    flows = _json(response, "the list of flows")
    if isinstance(flows, dict):  # paginated answers
        flows = flows.get("items", [])
    if not isinstance(flows, list):
        raise LangflowError("Langflow's list of flows was not a list.")
    return [
        f
        for f in flows
        if isinstance(f, dict) and not f.get("is_component") and (not ours_only or FLOW_TAG in (f.get("tags") or []))
    ]


async def aregister_flow(client: LangflowClient, flow: dict[str, Any], name: str | None = None) -> RegisteredFlow:
    """Save ``flow`` in Langflow, tagged as ours, and answer the id it is kept under: the flow's
    own id, updated in place when the server has it and created under it when not; without an
    id, ours of the same name updated in place, else a new flow with the id Langflow gives."""
    body = flow_body(flow, name)
    own = flow.get("id") if is_flow_id(flow.get("id")) else None
    listed = [f for f in await alist_flows(client, ours_only=False) if SERVER_ID.fullmatch(str(f.get("id")))]
    known = {str(f.get("id")) for f in listed}
    ours = [f for f in listed if FLOW_TAG in (f.get("tags") or []) and f.get("name") == body["name"]]
    if own in known or (own is None and ours):
        flow_id = own or str(ours[0]["id"])
        update = {k: body[k] for k in ("name", "description", "data")}
        response = await client.arequest("PATCH", f"/api/v1/flows/{flow_id}", json=update)
        created = False
    elif own is not None:
        flow_id = own
        response = await client.arequest("PUT", f"/api/v1/flows/{own}", json={**body, "tags": [TAG, FLOW_TAG]})
        if response.status_code == 405:  # a Langflow before the upsert: the id it gives
            response = await client.arequest("POST", "/api/v1/flows/", json={**body, "tags": [TAG, FLOW_TAG]})
        created = True
    else:
        flow_id = None
        response = await client.arequest("POST", "/api/v1/flows/", json={**body, "tags": [TAG, FLOW_TAG]})
        created = True
    if response.status_code not in (200, 201):
        raise _fail(client, response, "the flow", flow_id)
    saved = _json(response, "the saved flow")
    if not isinstance(saved, dict) or not SERVER_ID.fullmatch(str(saved.get("id") or "")):
        raise LangflowError("Langflow saved the flow but did not answer its id.")
    return RegisteredFlow(
        id=str(saved["id"]), name=str(saved.get("name") or body["name"]), created=created, url=client.public_url
    )


def _message_text(value: object) -> str | None:
    """The text of a Message as the run endpoint serialises it (a dict with ``text``, or a str)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("text", "message"):
            if isinstance(value.get(key), str):
                return value[key]
    return None


def parse_run_response(flow_id: str, payload: object) -> FlowRunResult:
    """The chat text and each component's text from a ``RunResponse``."""
    if not isinstance(payload, dict):
        raise LangflowError("Langflow's run answer was not a JSON object.")
    outputs: list[RunOutput] = []
    for run in payload.get("outputs") or []:
        for result in (run or {}).get("outputs") or [] if isinstance(run, dict) else []:
            if not isinstance(result, dict):
                continue
            text = None
            results = result.get("results")
            if isinstance(results, dict):
                text = next((t for t in map(_message_text, results.values()) if t is not None), None)
            if text is None:
                for message in result.get("messages") or []:
                    text = _message_text(message)
                    if text is not None:
                        break
            outputs.append({"component": result.get("component_display_name") or "", "text": text})
    text = next((o["text"] for o in outputs if o["text"] is not None), None)
    return FlowRunResult(flow_id=flow_id, text=text, outputs=outputs, session_id=payload.get("session_id"))


async def arun_on_server(
    client: LangflowClient, flow_id: str, input_text: str, *, timeout: float = RUN_TIMEOUT
) -> FlowRunResult:
    """The **run on the server**: Langflow runs a stored flow on ``input_text`` (chat in, chat out),
    with its own variables and network, and this returns what it answered.  Not the probe run
    (``SandboxValidator.probe_run``) nor the real local run (``lfassist_jupyter.run_flow_for_real``)."""
    response = await client.arequest(
        "POST",
        f"/api/v1/run/{flow_id}",
        json={"input_value": str(input_text), "input_type": "chat", "output_type": "chat"},
        params={"stream": "false"},
        timeout=timeout,
    )
    if response.status_code != 200:
        if response.status_code >= 500 or response.status_code == 400:
            detail = redact(str(response.detail))[:300]
            raise LangflowError(f"The flow failed in Langflow ({response.status_code}): {detail}")
        raise _fail(client, response, "the run request", flow_id)
    return parse_run_response(flow_id, _json(response, "the run"))


async def alist_variables(client: LangflowClient) -> list[str]:
    """The names of the global variables the server holds a value for (never their values):
    what a registered flow's key fields may name (``GET /api/v1/variables/``)."""
    response = await client.arequest("GET", "/api/v1/variables/")
    if response.status_code != 200:
        raise _fail(client, response, "the list of global variables")
    found = _json(response, "the list of global variables")
    if not isinstance(found, list):
        raise LangflowError("Langflow's list of global variables was not a list.")
    return sorted(
        str(v["name"])
        for v in found
        if isinstance(v, dict) and isinstance(v.get("name"), str) and v.get("has_value", v.get("value") is not None)
    )


async def aget_flow(client: LangflowClient, flow_id: str) -> dict[str, Any]:
    """A stored flow's JSON (name, description, data{nodes, edges}), to load it for edits."""
    response = await client.arequest("GET", f"/api/v1/flows/{flow_id}")
    if response.status_code != 200:
        raise _fail(client, response, "the flow request", flow_id)
    flow = _json(response, "the flow")
    problem = facts.shape_problem(flow)  # what a server sends is untrusted: one line naming the field
    if problem is not None:
        raise LangflowError(f"Langflow's flow {flow_id} is not a Langflow flow: {problem}.")
    return flow


async def adelete_flow(client: LangflowClient, flow_id: str) -> None:
    response = await client.arequest("DELETE", f"/api/v1/flows/{flow_id}")
    if response.status_code not in (200, 204):
        raise _fail(client, response, "the delete request", flow_id)


# -- blocking twins ------------------------------------------------------------------------------


def _sync(coro: Coroutine[object, object, T]) -> T:
    from lfassist_jupyter.runtime import run_sync

    return run_sync(coro)


def register_flow(client: LangflowClient, flow: dict[str, Any], name: str | None = None) -> RegisteredFlow:
    return _sync(aregister_flow(client, flow, name))


def run_on_server(
    client: LangflowClient, flow_id: str, input_text: str, *, timeout: float = RUN_TIMEOUT
) -> FlowRunResult:
    return _sync(arun_on_server(client, flow_id, input_text, timeout=timeout))


def list_flows(client: LangflowClient, *, ours_only: bool = True) -> list[dict[str, Any]]:
    return _sync(alist_flows(client, ours_only=ours_only))


def list_variables(client: LangflowClient) -> list[str]:
    return _sync(alist_variables(client))


def get_flow(client: LangflowClient, flow_id: str) -> dict[str, Any]:
    return _sync(aget_flow(client, flow_id))


def delete_flow(client: LangflowClient, flow_id: str) -> None:
    return _sync(adelete_flow(client, flow_id))
