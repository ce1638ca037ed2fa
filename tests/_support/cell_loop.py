"""The notebook loop's shared steps (``tests/e2e/test_cell_loop.py`` and ``benchmarks/cell_loop.py``):
an inserted cell made to save what it makes, cells run in one fresh kernel, and the check that a
saved flow is the original with one change and nothing else."""

from __future__ import annotations

import json
import os
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any


def with_save(cell: str, target: str) -> list[str]:
    """The inserted cell with ``--save target --force --quiet --out view`` added to its magic line,
    and the flow it made written as JSON beside the saved file (``target`` with ``.flow.json``):
    what the fresh kernel's cell made, before any file normalisation."""
    head, _, body = cell.partition("\n")
    dump = f"import json; open({target + '.flow.json'!r}, 'w').write(json.dumps(view.flow))"
    return [f"{head} --save {shlex.quote(target)} --force --quiet --out view\n{body}\n", dump]


CAPTURE = "_inserted = []; get_ipython().set_next_input = lambda text, replace=False: _inserted.append(text)"
"""A fresh kernel's first cell: what the magics insert as the next cell (``set_next_input``, which
Jupyter turns into a new cell) is kept in ``_inserted``, so a later cell can write it to a file."""


def dump(names: dict[str, str], target: str) -> str:
    """A cell writing ``{name: the expression's value}`` as JSON to ``target`` (in the kernel)."""
    body = ", ".join(f"{k!r}: {v}" for k, v in names.items())
    return f"import json; open({target!r}, 'w').write(json.dumps({{{body}}}, default=str))"


def run_in_fresh_kernel(folder: Path, cells: list[str], env: dict[str, str], timeout: float = 900) -> list[dict]:
    """``cells`` run in one fresh kernel started in ``folder`` (after ``%load_ext``), with ``env``:
    each cell's outputs and seconds (nbclient's own timing of the cell)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext lfassist_jupyter"), *map(nbformat.v4.new_code_cell, cells)]
    old = dict(os.environ)
    os.environ.update(env)
    try:
        NotebookClient(
            nb, timeout=timeout, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(folder)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = []
    for cell in nb.cells[1:]:
        timing = cell.metadata.get("execution", {})
        start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        seconds = None
        if start and end:
            seconds = (
                datetime.fromisoformat(end.rstrip("Z")) - datetime.fromisoformat(start.rstrip("Z"))
            ).total_seconds()
        out.append({"outputs": cell.outputs, "seconds": seconds})
    return out


def _edges(flow: dict[str, Any]) -> list[str]:
    """A flow's edges as a saved file writes them (sorted keys), in a stable order."""
    from lfassist_jupyter.flows.save import flow_file

    return sorted(
        json.dumps(e) for e in flow_file(flow, flow_id="00000000-0000-4000-8000-000000000000")["data"]["edges"]
    )


def kept(original: dict[str, Any], saved: dict[str, Any], change: tuple[str, str | None, str]) -> tuple[bool, str]:
    """Whether ``saved`` is ``original`` with ``change`` (``corpus.one_change``) applied and nothing
    else: every node identical as a saved file normalises nodes (``save.normal_node``), the
    changed one apart from its changed value, the same edges.  (ok, why not)."""
    from lfassist_jupyter.flows.merge import spec_ids
    from lfassist_jupyter.flows.save import normal_node

    sid, field, value = change
    old = {n["id"]: normal_node(n) for n in original["data"]["nodes"]}
    new = {n["id"]: normal_node(n) for n in saved["data"]["nodes"]}
    if set(old) != set(new):
        return False, f"nodes differ: lost {sorted(set(old) - set(new))[:3]}, new {sorted(set(new) - set(old))[:3]}"
    components = [n for n in original["data"]["nodes"] if n.get("type") != "noteNode"]
    target = {s: nid for nid, s in spec_ids(components).items()}.get(sid) if field else None
    for nid, node in old.items():
        now = new[nid]
        if nid == target:
            fields = now["data"]["node"]["template"]
            if fields.get(field, {}).get("value") != value:
                return False, f"{nid}.{field} is {fields.get(field, {}).get('value')!r}, not {value!r}"
            now = json.loads(json.dumps(now))
            now["data"]["node"]["template"][field]["value"] = node["data"]["node"]["template"][field]["value"]
        if json.dumps(now) != json.dumps(node):
            return False, f"{nid} changed" + (f" beyond {field}" if nid == target else "")
    if _edges(original) != _edges(saved):
        return False, "edges differ"
    if field is None and saved.get("name") != value:
        return False, f"name is {saved.get('name')!r}"
    return True, ""
