"""Real flows exported by other authors (``benchmarks/flows_corpus/``), for the tests that must
hold on flows people built, not only on Langflow's own starter projects."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "flows_corpus"


def corpus_text(flow_id: str) -> str:
    """The flow's JSON text as its author exported it (credentials emptied)."""
    with gzip.open(CORPUS / "flows" / f"{flow_id}.json.gz", "rt", encoding="utf-8") as fh:
        return fh.read()


def corpus_flow(flow_id: str) -> dict[str, Any]:
    return json.loads(corpus_text(flow_id))


def corpus_file(flow_id: str, folder: Path) -> Path:
    """The flow written to ``folder`` as a ``.json`` file (what ``%assist flow load`` reads)."""
    path = folder / f"{flow_id}.json"
    path.write_text(corpus_text(flow_id), encoding="utf-8")
    return path


def stored_verdicts() -> dict[str, Any]:
    """lfx's verdicts on the corpus (``benchmarks/flow_corpus.py verdicts``), per flow and environment."""
    return json.loads((CORPUS / "verdicts.json").read_text())


def manifest() -> list[dict[str, Any]]:
    return json.loads((CORPUS / "manifest.json").read_text())["flows"]


_LFX_RUN = r"""
import asyncio, json, sys
from pathlib import Path
from lfx.run.base import RunError, run_flow
from lfx.utils.flow_requirements import find_missing_dependencies
flow = json.loads(Path(sys.argv[1]).read_text())
out = {"missing": sorted(find_missing_dependencies({"data": flow.get("data", flow)}))}
try:
    asyncio.run(run_flow(script_path=Path(sys.argv[1]), input_value="hi", check_dependencies=False,
                         check_variables=False))
    out["error"] = ""
except RunError as exc:
    out["error"] = str(exc)
print("@@" + json.dumps(out))
"""


def lfx_verdict(flow: dict[str, Any], folder: Path) -> dict[str, Any]:
    """lfx's own word on ``flow`` in this (the sandbox's) environment, from a fresh process:
    ``missing``, the packages its dependency preflight finds absent, and ``error``, where its run
    (``lfx run`` without the preflight) stopped ("" when it finished)."""
    import subprocess
    import sys

    path = folder / "lfx_verdict.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    import os

    # Langflow refuses local files to an anonymous caller: a server's policy, not the flow's.
    env = {**os.environ, "LANGFLOW_RESTRICT_LOCAL_FILE_ACCESS": "false", "DO_NOT_TRACK": "true"}
    proc = subprocess.run(
        [sys.executable, "-c", _LFX_RUN, str(path)], capture_output=True, text=True, timeout=300, cwd=folder, env=env
    )
    marker = proc.stdout.rfind("@@")
    assert marker >= 0, proc.stderr[-2000:]
    return json.loads(proc.stdout[marker + 2 :])


def single_node_flow(flow: dict[str, Any], node_id: str) -> dict[str, Any]:
    """A flow of one of ``flow``'s nodes, exactly as saved (nothing else can fail first)."""
    node = next(n for n in flow["data"]["nodes"] if n["id"] == node_id)
    return {"name": node_id, "data": {"nodes": [node], "edges": []}}


EDITED = " (edited)"
"""What ``one_change`` appends to the value it changes."""


def one_change(spec: str, catalog: Any) -> tuple[str, tuple[str, str | None, str]]:
    """``spec`` with one change a user could ask for, chosen from the spec alone, and what it is:
    ``(spec id, field, the new value)``.  In order of preference: a one-line text value of a
    component lfx knows (a text field with no options, no variable in it) gets ``EDITED`` appended;
    else the flow's name (``("", None, name)``)."""
    from lfassist_jupyter.artifacts.flow import spec_scalar
    from lfassist_jupyter.flows.merge import read_spec

    parts = read_spec(spec)
    for (sid, name), text in parts.config.items():
        kind = parts.nodes.get(sid)
        entry = catalog.registry.get(kind) if kind not in catalog.added else None
        field = ((entry or {}).get("template") or {}).get(name)
        if not isinstance(field, dict) or field.get("type") not in ("str", "prompt") or field.get("options"):
            continue
        if field.get("password") or field.get("load_from_db") or field.get("list") or "{" in text:
            continue
        old = f"  {sid}.{name}: {text}\n"
        if "\n" not in text and text[:1] not in "|\"'[" and spec_scalar(text) == text and old in spec:
            return spec.replace(old, f"  {sid}.{name}: {text}{EDITED}\n", 1), (sid, name, text + EDITED)
    name = parts.head.get("name") or "Flow"
    head = f"name: {name}\n"
    edited = spec.replace(head, f"name: {name}{EDITED}\n", 1) if head in spec else f"name: {name}{EDITED}\n{spec}"
    return edited, ("", None, name + EDITED)
