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


def manifest() -> list[dict[str, Any]]:
    return json.loads((CORPUS / "manifest.json").read_text())["flows"]
