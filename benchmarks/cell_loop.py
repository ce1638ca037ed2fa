"""The user's loop in the notebook, measured: load a flow, edit it by one request, run the cell the
assistant inserted in a **fresh kernel**, save, and compare (``make bench``; the tests in
``tests/e2e/test_cell_loop.py`` use the same steps).

Per flow of a half of the corpus (``benchmarks/flow_corpus.py``: other authors' exports):

1. **load**: ``%assist flow load FILE`` in an IPython shell with the extension (a new conversation
   per flow);
2. **edit**: ``%%assist`` with the fake model answering the loaded spec with one change
   (``tests/_support/corpus.one_change``), one attempt (``--max-retries 1``: validated and
   probe-run once); the card's flow and the inserted cell are kept;
3. **save**: ``%assist flow save card.json --force`` writes the card's flow;
4. **re-run**: every inserted cell run in one fresh kernel (nbclient: no conversation, no
   catalogue, nothing of step 1-3 but the files), each with ``--save rerun.json --force``.

A flow is **reproduced** when the fresh kernel's flow is the card's, byte for byte (as JSON); **kept**
when every node the edit did not name is the original file's node (as a saved file normalises it:
``save.normal_node``) and the edit is applied; **saved** when the cell's ``--save`` wrote the file
(the security scan refuses flows whose custom code it does not pass, as for every save).
``python benchmarks/cell_loop.py [dev|held_back] [N]`` prints the figures.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

KEY = "sk-cell-loop-fake-key-not-a-real-one"
"""The fake key the shells and kernels are given (the fake model server takes any)."""


@contextmanager
def workspace(folder: Path, llm: Any) -> Iterator[Any]:
    """An IPython shell with the extension loaded, talking to the fake model server ``llm``,
    working in ``folder`` (files land there), its data folder inside it."""
    from IPython.core.interactiveshell import InteractiveShell

    old_cwd, old_env = Path.cwd(), dict(os.environ)
    os.environ.update(OPENAI_BASE_URL=llm.openai_base_url, OPENAI_API_KEY=KEY, LFASSIST_DATA_DIR=str(folder / "data"))
    os.chdir(folder)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        yield shell
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)


def edit_in_shell(shell: Any, llm: Any, path: Path, catalog: Any) -> dict[str, Any]:
    """Steps 1-3 for the flow file ``path`` (relative to the shell's folder): load, edit, save the
    card.  The times of each step, the inserted cell, the change and the card's file."""
    from _support.components import intent, plan, spec_reply
    from _support.corpus import one_change

    shell.run_line_magic("assist", "new")
    t0 = time.perf_counter()
    view = shell.run_line_magic("assist", f"flow load {shlex.quote(str(path))}")
    t_load = time.perf_counter() - t0
    alone = spec_alone(view.spec, path)
    edited, change = one_change(view.spec, catalog)
    llm.queue(intent("build_flow"), plan("ChatInput", "ChatOutput"), spec_reply(edited))
    shell.rl_next_input = None
    t0 = time.perf_counter()
    result = shell.run_cell_magic("assist", "--max-retries 1 --quiet", "make the change the spec shows")
    t_edit = time.perf_counter() - t0
    card = path.with_name(path.stem + ".card.json")
    t0 = time.perf_counter()
    shell.run_line_magic("assist", f"flow save {shlex.quote(str(card))} --force")
    t_save = time.perf_counter() - t0
    return {
        "cell": shell.rl_next_input,
        "change": change,
        "card": card,
        "flow": result.flow,
        "validated": result.validated,
        "error": result.error,
        "times": {"load": t_load, "edit": t_edit, "save": t_save},
        "alone": alone,
    }


def spec_alone(spec: str, path: Path) -> dict[str, int]:
    """What the loaded flow's spec text makes on its own, in a fresh catalogue (no file to edit):
    nodes and edges of the file, nodes and edges built, and nodes the spec names as lfx's own
    components (the others are carried as themselves: they build only where their file is)."""
    from lfassist_jupyter import build_flow, default_catalog
    from lfassist_jupyter.flows.merge import read_spec

    flow = json.loads(Path(path).read_text(encoding="utf-8"))
    nodes = [n for n in flow["data"]["nodes"] if n.get("type", "genericNode") != "noteNode"]
    catalog = default_catalog()
    named = sum(1 for kind in read_spec(spec).nodes.values() if kind in catalog.registry)
    built = build_flow(spec, catalog=catalog).flow or {"data": {"nodes": [], "edges": []}}
    return {
        "nodes": len(nodes),
        "edges": len(flow["data"]["edges"]),
        "built_nodes": len(built["data"]["nodes"]),
        "built_edges": len(built["data"]["edges"]),
        "lfx_named": named,
    }


def measure(half: str, limit: int | None = None, folder: Path | None = None) -> dict[str, Any]:
    """The loop over one half of the corpus (see the module docstring); figures and rows."""
    import flow_corpus
    from _support.cell_loop import kept, run_in_fresh_kernel, with_save
    from _support.fakellm import FakeLLM

    from lfassist_jupyter import default_catalog

    flows = [f for f in flow_corpus.load_manifest() if f["half"] == half][:limit]
    with tempfile.TemporaryDirectory(prefix="lfassist-cell-loop-") as tmp, FakeLLM() as llm:
        root = folder or Path(tmp)
        rows: list[dict[str, Any]] = []
        with workspace(root, llm) as shell:
            catalog = default_catalog()  # warm: the sandbox and its catalogue before the clock runs
            for flow in flows:
                path = Path(f"{flow['id']}.json")
                (root / path).write_text(flow_corpus.flow_text(flow["id"]), encoding="utf-8")
                row = {"id": flow["id"], **edit_in_shell(shell, llm, path, catalog)}
                rows.append(row)
        cells = []
        for r in rows:
            cells += with_save(r["cell"], f"{r['id']}.rerun.json") if r["cell"] else ["pass", "pass"]
        env = {"OPENAI_BASE_URL": llm.openai_base_url, "OPENAI_API_KEY": KEY, "LFASSIST_DATA_DIR": str(root / "fresh")}
        t0 = time.perf_counter()
        reruns = run_in_fresh_kernel(root, cells, env)
        t_kernel = time.perf_counter() - t0
        for row, rerun in zip(rows, reruns[::2], strict=True):
            made = root / f"{row['id']}.rerun.json.flow.json"
            flow = json.loads(made.read_text()) if made.is_file() else None
            if flow is not None and row["flow"] is not None and "id" not in row["flow"]:
                flow.pop("id", None)  # the id its --save gave it: a flow without one gets one when first saved
            row["rerun_s"] = rerun["seconds"]
            row["reproduced"] = flow is not None and json.dumps(flow) == json.dumps(row["flow"])
            row["saved"] = (root / f"{row['id']}.rerun.json").is_file()
            original = json.loads(flow_corpus.flow_text(row["id"]))
            row["kept"], row["why"] = kept(original, flow, row["change"]) if flow else (False, "no flow")
            if not row["reproduced"]:
                said = " | ".join(
                    str(o.get("text") or o.get("evalue") or (o.get("data") or {}).get("text/plain", ""))[:300]
                    for o in rerun["outputs"]
                )
                row["why"] = (row["why"] or "the fresh kernel's flow differs from the card's") + f" ({said[:600]})"

    def p50(key: str) -> float:
        return statistics.median(r["times"][key] for r in rows) * 1000

    return {
        "half": half,
        "flows": len(rows),
        "reproduced": sum(r["reproduced"] for r in rows),
        "kept": sum(r["kept"] for r in rows),
        "saved": sum(r["saved"] for r in rows),
        "edited_a_value": sum(bool(r["change"][1]) for r in rows),
        "spec_alone_whole": sum(
            r["alone"]["built_nodes"] == r["alone"]["nodes"] and r["alone"]["built_edges"] == r["alone"]["edges"]
            for r in rows
        ),
        "lfx_named_nodes": sum(r["alone"]["lfx_named"] for r in rows),
        "nodes": sum(r["alone"]["nodes"] for r in rows),
        "load_ms_p50": p50("load"),
        "edit_ms_p50": p50("edit"),
        "save_ms_p50": p50("save"),
        "rerun_ms_p50": statistics.median(r["rerun_s"] for r in rows if r["rerun_s"] is not None) * 1000,
        "fresh_kernel_s": t_kernel,
        "failures": [{"id": r["id"], "why": r["why"]} for r in rows if not (r["reproduced"] and r["kept"])],
    }


def sentence_loop() -> dict[str, float]:
    """The loop's steps for a flow made from a sentence (the fake model writes a flow with a
    language model; its real run calls the fake OpenAI server), in ms: the request, ``%assist flow
    save``, the real run of the saved file (``%%assist_flow --run-local ... --env OPENAI_API_KEY
    FILE``: the real runner, models called), its load and its edit."""
    from _support.components import ONE_SENTENCE_ANSWER, ONE_SENTENCE_SPEC, intent, plan, spec_reply
    from _support.fakellm import FakeLLM, Reply

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="lfassist-cell-loop-") as tmp, FakeLLM() as llm:
        with workspace(Path(tmp), llm) as shell:
            llm.queue(intent("build_flow"), plan("ChatInput", "LanguageModelComponent"), spec_reply(ONE_SENTENCE_SPEC))
            t0 = time.perf_counter()
            shell.run_cell_magic("assist", "--max-retries 1 --quiet", "a flow that answers in one sentence")
            out["request_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            shell.run_line_magic("assist", "flow save first.json")
            out["save_ms"] = (time.perf_counter() - t0) * 1000
        with workspace(Path(tmp), llm) as shell:  # a new workspace: nothing but the file
            llm.queue(Reply(ONE_SENTENCE_ANSWER))
            t0 = time.perf_counter()
            view = shell.run_cell_magic("assist_flow", '--run-local "hi" --env OPENAI_API_KEY --quiet', "first.json")
            out["real_run_ms"] = (time.perf_counter() - t0) * 1000
            out["real_run_ok"] = bool(view is None or (view.run is not None and view.run.ok))
            t0 = time.perf_counter()
            loaded = shell.run_line_magic("assist", "flow load first.json")
            out["load_ms"] = (time.perf_counter() - t0) * 1000
            spec = loaded.spec.replace("in one sentence", "in two sentences")
            llm.queue(intent("build_flow"), plan("ChatInput", "LanguageModelComponent"), spec_reply(spec))
            t0 = time.perf_counter()
            shell.run_cell_magic("assist", "--max-retries 1 --quiet", "two sentences")
            out["edit_ms"] = (time.perf_counter() - t0) * 1000
    return out


def rows(found: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """``make bench``'s rows for ``measure`` (plus ``sentence_loop`` under ``sentence``)."""
    n = found["flows"]
    out = [
        (
            f"notebook loop ({found['half']}): fresh-kernel re-run of the inserted cell = the card",
            f"{found['reproduced']}/{n}",
            f"kept {found['kept']}/{n}, saved {found['saved']}/{n}",
            f"load -> one change ({found['edited_a_value']} values, the rest names) -> re-run",
        ),
        (
            f"notebook loop ({found['half']}): the spec text alone (no file) rebuilds the whole flow",
            f"{found['spec_alone_whole']}/{n}",
            f"nodes named as lfx's {found['lfx_named_nodes']}/{found['nodes']}",
            "the others are carried as themselves (their file)",
        ),
        (
            "notebook loop: load / edit (one attempt, probe run) / save p50",
            f"{found['load_ms_p50']:.0f} ms",
            f"edit {found['edit_ms_p50']:.0f} ms, save {found['save_ms_p50']:.0f} ms",
            "model time excluded (fake model)",
        ),
        (
            "notebook loop: re-run of a cell in the fresh kernel p50",
            f"{found['rerun_ms_p50']:.0f} ms",
            f"kernel total {found['fresh_kernel_s']:.0f} s",
            "build + merge + validate + save",
        ),
    ]
    sentence = found.get("sentence")
    if sentence:
        out.append(
            (
                "notebook loop, a sentence's flow: real run of the saved file",
                f"{sentence['real_run_ms']:.0f} ms",
                f"save {sentence['save_ms']:.0f}, load {sentence['load_ms']:.0f}, edit {sentence['edit_ms']:.0f} ms",
                "ran" if sentence["real_run_ok"] else "FAILED",
            )
        )
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    found = measure(args[0] if args else "dev", int(args[1]) if len(args) > 1 else None)
    print(json.dumps(found, indent=1))
