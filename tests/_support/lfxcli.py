"""The installed lfx's own command line, run as a subprocess: the ground truth for flow files
(``lfx validate``, ``lfx export``, ``lfx push``) and extension bundles (``lfx extension validate``).

Each call is a fresh ``.venv/bin/lfx`` process (lfx imports in a few seconds), so tests batch
files into one call where they can.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

LFX = Path(sys.executable).with_name("lfx")


def lfx(
    *args: str, cwd: str | Path | None = None, timeout: float = 180, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``lfx ARGS`` as a user types it; its output and exit code."""
    return subprocess.run(
        [str(LFX), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def lfx_validate(paths: list[Path], level: int) -> list[dict[str, Any]]:
    """``lfx validate --level N --format json`` over ``paths``: one result per file (path, ok, issues)."""
    done = lfx("validate", *map(str, paths), "--level", str(level), "--format", "json")
    try:
        return json.loads(done.stdout)
    except ValueError as exc:
        raise AssertionError(f"lfx validate did not answer JSON ({done.returncode}): {done.stderr[-2000:]}") from exc


_MISMATCH = re.compile(
    r"Possible type mismatch on edge from '(?P<src>[^']*)' -> '(?P<tgt>[^']*)': "
    r"source emits '(?P<emits>[^']*)', target expects '(?P<expects>[^']*)'"
)


def known_lfx_false_positive(issue: dict[str, Any], flow: dict[str, Any]) -> str | None:
    """Why an ``lfx validate`` warning about ``flow`` is lfx's own mistake, or None.

    - level 2 "Could not load component registry": lfx 1.13.0's check imports
      ``initialize_components`` from ``lfx.interface.utils``, which that version no longer has, so
      it skips level 2 for every flow (Langflow's own starter projects included).
    - level 3 "Possible type mismatch": lfx compares the source's first output type with the
      target handle's ``type`` (the field's widget type: ``str``, ``other``), not with its
      ``inputTypes``, which is what Langflow's canvas connects by. It is a false positive when an
      edge between those two nodes has the source type among the target's ``inputTypes``.
    """
    if issue["level"] == 2 and "Could not load component registry" in issue["message"]:
        return "lfx 1.13.0 cannot import its own component registry"
    match = _MISMATCH.search(issue["message"]) if issue["level"] == 3 else None
    if match is None:
        return None
    names = {n["id"]: n["data"]["node"].get("display_name") for n in flow["data"]["nodes"]}
    for edge in flow["data"]["edges"]:
        handle = edge["data"]
        if (names.get(edge["source"]), names.get(edge["target"])) != (match["src"], match["tgt"]):
            continue
        if match["emits"] in handle["sourceHandle"].get("output_types", []) and match["emits"] in (
            handle["targetHandle"].get("inputTypes") or []
        ):
            return f"the target accepts {match['emits']} (inputTypes), lfx read its widget type {match['expects']!r}"
    return None
