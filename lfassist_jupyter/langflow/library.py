"""A connected Langflow as a ``FlowLibrary``: its stored flows and its starter templates.

What a server sends is data from elsewhere -- a shared server's flow names are written by
anyone who can save a flow there -- so it is capped, shaped and cleaned where it enters:

- every answer is read through ``LangflowClient.arequest``, which stops at a byte cap
  (``MAX_RESPONSE_BYTES``: Langflow 1.13's starter list is about 6 MB);
- a flow or a starter template is shape-checked (``artifacts.flow.shape_problem``): a template
  that is not flow JSON is not offered, a flow that is not is one ``LangflowError`` line;
- a listing keeps at most ``MAX_ENTRIES`` flows, each a ``FlowEntry`` whose name and
  description are one line, without control characters, length-capped (``ports.one_line``);
- the starter templates (``GET /api/v1/starter-projects/``, which change with the server's
  version only) are cached per client, compressed, for at most ``STARTER_SLOTS`` clients: a
  reconnect reads them again, and a kernel that met many servers keeps a few megabytes at most.
"""

from __future__ import annotations

import json
import threading
import weakref
import zlib
from collections import OrderedDict
from typing import Any

from lfassist_jupyter.artifacts.flow import shape_problem
from lfassist_jupyter.langflow.client import LangflowClient
from lfassist_jupyter.langflow.flows import SERVER_ID, aget_flow, alist_flows
from lfassist_jupyter.ports import FlowEntry

MAX_ENTRIES = 1000
"""The most flows (or templates) one listing offers; a plan prompt shows far fewer."""
STARTER_SLOTS = 4

_starters: OrderedDict[int, tuple[weakref.ref[LangflowClient], bytes]] = OrderedDict()
_starters_lock = threading.Lock()


class LangflowLibrary:
    """The flows and starter templates of the connected Langflow behind ``client``."""

    where = "Langflow"

    def __init__(self, client: LangflowClient) -> None:
        self.client = client

    async def alist_flows(self) -> list[FlowEntry]:
        """Every flow the key may see (not only ours: the user's own flows are worth reusing)."""
        heads = await alist_flows(self.client, ours_only=False)
        return [
            FlowEntry(id=str(head.get("id")), name=str(head.get("name") or ""), description=_text(head))
            for head in heads[:MAX_ENTRIES]
            if isinstance(head.get("id"), (str, int)) and SERVER_ID.fullmatch(str(head["id"]))  # a path part: no "../"
        ]

    async def aget_flow(self, flow_id: str) -> dict[str, Any]:
        return await aget_flow(self.client, flow_id)

    async def astarters(self) -> list[FlowEntry]:
        """Langflow's starter templates, each with its flow (read once per client, then cached)."""
        raw = _cached(self.client)
        if raw is None:
            response = await self.client.arequest("GET", "/api/v1/starter-projects/")
            if response.status_code != 200:
                return []
            raw = response.content
            _remember(self.client, raw)
        try:
            items = json.loads(raw)
        except ValueError:
            return []
        return [
            FlowEntry(str(item.get("name") or ""), str(item.get("name") or ""), description=_text(item), flow=item)
            for item in (items if isinstance(items, list) else [])[:MAX_ENTRIES]
            if isinstance(item, dict) and "data" in item and shape_problem(item) is None  # flow JSON only
        ]


def _text(item: dict[str, Any]) -> str:
    description = item.get("description")
    return description if isinstance(description, str) else ""


def _cached(client: LangflowClient) -> bytes | None:
    with _starters_lock:
        hit = _starters.get(id(client))
        if hit is None or hit[0]() is not client:  # a dead client's id can be reused
            return None
        _starters.move_to_end(id(client))
        return zlib.decompress(hit[1])


def _remember(client: LangflowClient, raw: bytes) -> None:
    packed = zlib.compress(raw, 1)  # ~6 MB of templates keep ~0.6 MB
    with _starters_lock:
        _starters[id(client)] = (weakref.ref(client), packed)
        _starters.move_to_end(id(client))
        while len(_starters) > STARTER_SLOTS:
            _starters.popitem(last=False)
