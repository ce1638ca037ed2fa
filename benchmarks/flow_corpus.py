"""Real flows of other authors, and what lfx 1.13 itself says of each: the ground truth of ``make bench``.

The corpus (``benchmarks/flows_corpus/``) is exported Langflow flows (1.0 to 1.11) from public
repositories of many authors: ``manifest.json`` names each one's source (repository, path, commit,
blob), its Langflow version, the credentials that were emptied, and its half: a fixed split by a
hash of the author, so an author's flows never sit on both sides, decided before any rule was
written.  ``dev`` flows are what the rules were built on; ``held_back`` flows are only measured.

lfx's verdict is computed here, in a subprocess per flow (the kernel package never imports lfx),
for two environments:

- ``full``: the cached Langflow 1.13 environment of the test suite (lfx with every bundle:
  ``tests/_support/langflow_env.py``): whether the *flow* is sound, as Langflow would run it;
- ``sandbox``: this project's environment (lfx with the provider bundles the install brings:
  ``lfx-openai``, ``lfx-anthropic``, ``lfx-ollama``, ``lfx-openai-compatible``), as the validation
  sandbox sees it: a node that builds in ``full`` and fails here for an absent module is a package the
  user's environment lacks, not a broken flow.

- ``provisioned``: the environment ``validate_flow(provision=True)`` builds for the flow (lfx as the
  sandbox has it, plus the distributions the flow needs: ``lfassist_jupyter.sandbox.provision``), the
  environment a user who said yes judges the flow in; a flow that needs nothing keeps its ``sandbox``
  verdict.  lfx's run there is the ground truth of the product with provisioning on.

Per flow and environment it records ``lfx validate`` (all four levels: each issue with its level)
and one ``lfx run`` (``lfx.run.base.run_flow``: the dependency preflight, loading the graph,
``graph.prepare()``, then the run) with no keys and no network (a fresh network namespace when
``unshare`` works), and classifies where it stopped::

    ran              the run finished
    needs_key        it stopped at a missing API key / credential
    needs_file       it stopped at a file (a path of the author's machine, or none given)
    needs_service    it stopped reaching a server (a model host, a database, a URL)
    missing_package  a module outside lfx is not installed in that environment
    broken           the flow itself: load/prepare failed, a stale import, a missing method...

Usage::

    python benchmarks/flow_corpus.py verdicts [--env full|sandbox|both|provisioned] [--half H] [--only ID ...]
    python benchmarks/flow_corpus.py measure [--half held_back] [--provision]
    python benchmarks/flow_corpus.py show [ID]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "benchmarks" / "flows_corpus"
MANIFEST = CORPUS / "manifest.json"
VERDICTS = CORPUS / "verdicts.json"
FLOWS = CORPUS / "flows"

# A second set, unseen while the rules were written: Langflow's own starter projects as older
# releases shipped them (langflow-base 0.4-0.11 is Langflow 1.4-1.11), split by project name (every
# version of a project on one side).  The wheels come from the package index with pip; only the
# manifest (with each file's hash) and lfx's verdicts are kept in the repository, the flows in the
# user cache (``starters fetch`` makes them again).
STARTERS = ROOT / "benchmarks" / "starters_corpus"
STARTERS_CACHE = Path.home() / ".cache" / "lfassist-jupyter" / "starters"
STARTER_RELEASES = {"0.4.3": "1.4", "0.7.3": "1.7", "0.11.6": "1.11"}


def select(which: str) -> None:
    """Point the module at a set: ``corpus`` (other authors' exports) or ``starters``."""
    global CORPUS, MANIFEST, VERDICTS, FLOWS
    CORPUS = STARTERS if which == "starters" else ROOT / "benchmarks" / "flows_corpus"
    MANIFEST, VERDICTS = CORPUS / "manifest.json", CORPUS / "verdicts.json"
    FLOWS = STARTERS_CACHE / "flows" if which == "starters" else CORPUS / "flows"


def fetch_starters() -> None:
    """Download langflow-base wheels (``pip download --no-deps``), keep their starter projects
    (one file per project and release, identical files once), write the manifest."""
    import hashlib
    import zipfile

    wheels = STARTERS_CACHE / "wheels"
    (STARTERS_CACHE / "flows").mkdir(parents=True, exist_ok=True)
    flows, seen = [], set()
    for base, release in STARTER_RELEASES.items():
        found = list(wheels.glob(f"langflow_base-{base}-*.whl"))
        if not found:
            pip = [shutil.which("pip3") or shutil.which("pip") or "pip"]  # the project's venv has uv, not pip
            subprocess.run([*pip, "download", "--quiet", "--no-deps", "--only-binary=:all:", f"langflow-base=={base}",
                            "-d", str(wheels)], check=True, timeout=600)  # fmt: skip
            found = list(wheels.glob(f"langflow_base-{base}-*.whl"))
        with zipfile.ZipFile(found[0]) as zf:
            for name in sorted(n for n in zf.namelist() if "/starter_projects/" in n and n.endswith(".json")):
                data = zf.read(name)
                digest = hashlib.sha256(data).hexdigest()
                if digest in seen:
                    continue
                seen.add(digest)
                project = Path(name).stem
                fid = f"{re.sub(r'[^A-Za-z0-9]+', '_', project)}__{release}"
                with gzip.open(STARTERS_CACHE / "flows" / f"{fid}.json.gz", "wb") as fh:
                    fh.write(data)
                half = "held_back" if int(hashlib.sha256(project.encode()).hexdigest(), 16) % 2 else "dev"
                flows.append({"id": fid, "project": project, "langflow_version": release,
                              "source": f"langflow-base {base}", "sha256": digest, "half": half})  # fmt: skip
    STARTERS.mkdir(exist_ok=True)
    about = (
        "Langflow's starter projects as langflow-base 0.4.3, 0.7.3 and 0.11.6 (Langflow 1.4, 1.7, 1.11) shipped "
        "them; split by project name; `flow_corpus.py --set starters fetch` makes the files again."
    )
    MANIFEST.write_text(json.dumps({"about": about, "flows": flows}, indent=1) + "\n")
    print(f"{len(flows)} flows, held back {sum(f['half'] == 'held_back' for f in flows)}")


FULL_VENV = Path(
    os.environ.get("LFASSIST_LANGFLOW_VENV", Path.home() / ".cache" / "lfassist-jupyter" / "langflow-venv")
)
RUN_TIMEOUT = 120  # s per run
BATCH = 8  # flows per lfx process

# Runs in the environment under test: lfx's own validate and run, nothing of ours.
PROBE = r"""
import asyncio, json, signal, sys, time, importlib.util
from pathlib import Path
from lfx.cli.validation import validate_flow_file
from lfx.run.base import run_flow

class Slow(Exception):
    pass

def alarm(signum, frame):
    raise Slow("the run took longer than %s s" % sys.argv[1])

signal.signal(signal.SIGALRM, alarm)

def chain(exc):
    seen = []
    while exc is not None and len(seen) < 6 and exc not in seen:
        seen.append(exc)
        exc = getattr(exc, "original_exception", None) or exc.__cause__ or exc.__context__
    return seen

for path in sys.argv[2:]:
    out = {"path": path}
    t0 = time.perf_counter()
    try:
        res = validate_flow_file(Path(path), level=4)
        out["validate"] = [
            {"level": i.level, "severity": i.severity, "node": i.node_id, "message": i.message[:400]}
            for i in res.issues
        ]
    except Exception as exc:
        out["validate_error"] = f"{type(exc).__name__}: {exc}"[:400]
    signal.alarm(int(sys.argv[1]))
    try:
        result = asyncio.run(run_flow(script_path=Path(path), input_value="Hello", check_variables=False))
        text = result.get("result", "") if isinstance(result, dict) else ""
        out["run"] = {"outcome": "ran", "text": str(text)[:200]}
    except BaseException as exc:
        errs = chain(exc)
        missing = [e.name for e in errs if isinstance(e, ImportError) and getattr(e, "name", None)]
        out["run"] = {
            "message": str(exc)[:1500],
            "chain": [f"{type(e).__name__}: {str(e)[:600]}" for e in errs],
            "modules": [
                {"module": m, "top_installed": importlib.util.find_spec(m.split(".")[0]) is not None}
                for m in missing
            ],
        }
    finally:
        signal.alarm(0)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print("\n@@VERDICT@@" + json.dumps(out), flush=True)
"""

_KEY = (
    "api key",
    "api_key",
    "apikey",
    "token",
    "credential",
    "authenticat",
    "unauthorized",
    "401",
    "password",
    "secret",
    "openai_api_key",
    "must be set",
    "not set",
    "environment variable",
    "project_id",
)
_FILE = ("no such file", "filenotfound", "file not found", "does not exist", "no file", "path", "file_path", "files")
_SERVICE = (
    "connect",
    "connection",
    "network is unreachable",
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname",
    "timed out",
    "timeout",
    "max retries",
    "unreachable",
    "getaddrinfo",
    "resolve",
)


# lfx's model providers (``MODEL_PROVIDER_METADATA``, ``MODEL_PROVIDERS_DICT``), lower-cased.
_PROVIDERS = {
    p.lower()
    for p in (
        "OpenAI", "Anthropic", "Groq", "Google Generative AI", "Ollama", "Azure OpenAI", "Azure AI Foundry",
        "IBM WatsonX", "IBM watsonx.ai", "OpenRouter", "Amazon Bedrock", "NVIDIA", "SambaNova",
    )
}  # fmt: skip


def _inactive_providers() -> set[str]:
    """The providers lfx 1.13 registers as inactive (``"is_active": False`` in its
    ``model_input_constants.py``, read as a file): saved Agent code that indexes ``MODELS_METADATA``
    by one fails with its ``KeyError`` whatever is installed."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("lfx")
    if spec is None or not spec.submodule_search_locations:
        return set()
    source = Path(next(iter(spec.submodule_search_locations))) / "base" / "models" / "model_input_constants.py"
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            key, value = node.targets[0].slice, node.value
            if isinstance(key, ast.Constant) and isinstance(value, ast.Dict):
                flags = dict(zip((getattr(k, "value", None) for k in value.keys), value.values, strict=False))
                if isinstance(flags.get("is_active"), ast.Constant) and flags["is_active"].value is False:
                    found.add(str(key.value).lower())
    return found


_INACTIVE = _inactive_providers()


def classify_stored(item: dict) -> str:
    """``classify`` over a stored summary (its outcome is recomputed, so the rules can be read here)."""
    if item.get("outcome") in ("ran", "timeout", "probe_failed", None):
        return item.get("outcome")
    return classify({"message": item.get("run_stage", ""), "chain": [item.get("run_message", "")],
                     "modules": item.get("modules", [])})  # fmt: skip


def classify(run: dict) -> str:
    """Where a run stopped, from lfx's own error (see the module docstring)."""
    if run.get("outcome") == "ran":
        return "ran"
    text = " | ".join([run.get("message", ""), *run.get("chain", [])]).lower()
    for mod in run.get("modules", []):
        if not mod["top_installed"]:
            return "missing_package"
    if run.get("modules"):  # a module of an installed package is gone: stale code
        return "broken"
    if "not installed" in text and "pip install" in text:  # lfx run's dependency preflight
        return "missing_package"
    key = re.search(r"keyerror: '([^']+)'", text)
    if key and key.group(1) in _INACTIVE:  # a provider lfx keeps inactive: no package brings it back
        return "broken"
    if key and key.group(1) in _PROVIDERS:  # a model provider whose bundle is not installed
        return "missing_package"
    if "invalid value type <class 'nonetype'>" in text:
        return "needs_key"  # a global variable the run was not given (the probe skips lfx's variable check)
    if "storagenamespaceerror" in text or "localfileaccesserror" in text:
        return "needs_file"  # a path in the author's Langflow storage or on their machine
    if text.startswith("failed to load graph") or "failed to prepare graph" in text:
        return "broken"
    if any(k in text for k in _SERVICE):
        return "needs_service"
    if any(k in text for k in _KEY):
        return "needs_key"
    if any(k in text for k in _FILE):
        return "needs_file"
    return "broken"


def lfx_python(env: str) -> Path:
    if env == "full":
        return FULL_VENV / "bin" / "python"
    if env.startswith("/"):  # a provisioned environment's interpreter
        return Path(env)
    return Path(sys.executable)


BENCH_ENVS = Path(os.environ.get("LFASSIST_BENCH_ENVS", Path.home() / ".cache" / "lfassist-jupyter" / "bench-envs"))
"""Where the benchmark keeps the provisioned environments (its own cache, bounded generously)."""


def use_bench_envs() -> None:
    os.environ.setdefault("LFASSIST_PROVISION_DIR", str(BENCH_ENVS))
    os.environ.setdefault("LFASSIST_PROVISION_CACHE_MB", "80000")


def provisioned_envs(fids: list[str]) -> dict[str, str | dict]:
    """Each flow's provisioned interpreter (``validate_flow(provision=True)`` builds it, or finds it
    built), ``"sandbox"`` for a flow that needs nothing, or ``{"error": ...}`` when none could be made.
    A flow ``validate_flow`` finds broken before it would provision (so it builds nothing) still gets
    the environment of the packages it lacks: lfx's word on it is asked where they are, whatever ours."""
    from lfassist_jupyter import validate_flow
    from lfassist_jupyter.sandbox import provision as envs
    from lfassist_jupyter.sandbox import shared

    use_bench_envs()
    found: dict[str, str | dict] = {}
    with tempfile.TemporaryDirectory(prefix="lfassist-provision-") as tmp:
        for i, fid in enumerate(fids, 1):
            path = Path(tmp) / f"{fid}.json"
            path.write_text(flow_text(fid), encoding="utf-8")
            report = validate_flow(path, provision=True)
            plan = report.provision
            # Ours, or lfx's own requirement logic where a check stopped ours first (its preflight's list).
            lacking = sorted({p.distribution for p in report.missing_packages}) or preflight_list(fid)
            if plan is None and lacking:
                planned = envs.plan(lacking, shared().python)
                try:
                    found[fid] = {"error": planned["error"]} if planned.get("error") else envs.build(planned).python
                except Exception as exc:  # uv could not make it: as validate_flow says it
                    found[fid] = {"error": str(exc)[:600]}
            elif plan is None:
                found[fid] = "sandbox"
            elif plan.ready and not plan.error:
                found[fid] = str(Path(plan.path) / "bin" / "python")
            else:
                found[fid] = {"error": str(plan.error)[:600]}
            print(f"[{i}/{len(fids)}] provisioned {fid}: {found[fid]}", flush=True)
    return found


def preflight_list(fid: str) -> list[str]:
    """The distributions lfx's dependency preflight named for ``fid`` in the sandbox's environment
    (its stored ``sandbox`` verdict: "This flow needs Python packages ...:" then ``  - name`` lines)."""
    stored = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {}
    message = str(stored.get(fid, {}).get("sandbox", {}).get("run_message", ""))
    if "needs Python packages that are not installed" not in message:
        return []
    return sorted(set(re.findall(r"^\s+- ([A-Za-z0-9][A-Za-z0-9._-]*)\s*$", message, flags=re.M)))


def compute_provisioned(flows: list[dict], jobs: int) -> None:
    """lfx's verdict on each flow in the environment provisioning builds for it."""
    old = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {}
    where = provisioned_envs([f["id"] for f in flows])
    netns = _netns_prefix()
    batches: dict[str, list[str]] = {}
    for fid, env in where.items():
        if env == "sandbox":
            old.setdefault(fid, {})["provisioned"] = {**old.get(fid, {}).get("sandbox", {}), "env": "sandbox"}
        elif isinstance(env, dict):
            old.setdefault(fid, {})["provisioned"] = {"outcome": "provision_failed", "run_message": env["error"]}
        else:
            batches.setdefault(env, []).append(fid)
    work = [(fids[i : i + BATCH], env) for env, fids in batches.items() for i in range(0, len(fids), BATCH)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for found, (_, env) in zip(pool.map(lambda b: verdicts(b[0], b[1], netns), work), work, strict=True):
            for fid, answer in found.items():
                item = summary(answer) | {"env": Path(env).parent.parent.name}
                old.setdefault(fid, {})["provisioned"] = item
                print(f"provisioned {item['outcome']:15} {fid}  {item['run_message'][:90]!r}", flush=True)
    VERDICTS.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


def _netns_prefix() -> list[str]:
    """A fresh network namespace (no interfaces): a run reaches no host, whatever a node asks."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def flow_text(fid: str) -> str:
    with gzip.open(FLOWS / f"{fid}.json.gz", "rt", encoding="utf-8") as fh:
        return fh.read()


def load_manifest() -> list[dict]:
    return json.loads(MANIFEST.read_text())["flows"]


def verdicts(fids: list[str], env: str, netns: list[str]) -> dict[str, dict]:
    """lfx's verdict on each flow in one environment, from one fresh process per batch (lfx's
    import is paid once); a flow the process did not answer for is retried alone."""
    with tempfile.TemporaryDirectory(prefix="lfassist-corpus-") as tmp:
        paths = {}
        for fid in fids:
            paths[fid] = Path(tmp) / f"{fid}.json"
            paths[fid].write_text(flow_text(fid), encoding="utf-8")
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR")
        environ = {k: v for k, v in os.environ.items() if k in keep}
        # A Langflow install refuses local files to an anonymous caller: a policy of the server, not the flow.
        environ.update(HOME=tmp, LANGFLOW_CONFIG_DIR=tmp, DO_NOT_TRACK="true")
        environ["LANGFLOW_RESTRICT_LOCAL_FILE_ACCESS"] = "false"
        try:
            proc = subprocess.run(
                [*netns, str(lfx_python(env)), "-c", PROBE, str(RUN_TIMEOUT), *map(str, paths.values())],
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT * len(fids) + 120,
                env=environ,
                cwd=tmp,
            )
            stdout, stderr = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            stderr = "timeout"
    found: dict[str, dict] = {}
    by_path = {str(p): fid for fid, p in paths.items()}
    for chunk in stdout.split("@@VERDICT@@")[1:]:
        answer = json.loads(chunk.strip().splitlines()[0])
        fid = by_path[answer.pop("path")]
        answer["outcome"] = classify(answer["run"])
        found[fid] = answer
    missing = [fid for fid in fids if fid not in found]
    if missing and len(fids) > 1:
        for fid in missing:
            found.update(verdicts([fid], env, netns))
    elif missing:
        found[fids[0]] = {"outcome": "probe_failed", "run": {"message": stderr[-1500:]}}
    return found


def summary(v: dict) -> dict:
    """The facts a comparison needs: validate's errors by level, the run's outcome and why."""
    issues = v.get("validate", [])
    run = v.get("run", {})
    return {
        "outcome": v.get("outcome"),
        "validate_errors": {
            str(level): [i["message"] for i in issues if i["severity"] == "error" and i["level"] == level]
            for level in (1, 2, 3, 4)
        },
        "run_message": (run.get("chain") or [run.get("message", "")])[-1][:600] if run.get("outcome") != "ran" else "",
        "run_stage": run.get("message", "")[:60],
        "modules": run.get("modules", []),
        "seconds": v.get("seconds"),
    }


def compute(envs: list[str], only: list[str] | None, jobs: int, half: str = "all") -> None:
    flows = [f for f in load_manifest() if (not only or f["id"] in only) and half in ("all", f["half"])]
    if envs == ["provisioned"]:
        compute_provisioned(flows, jobs)
        return
    old = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {}
    netns = _netns_prefix()
    if not netns:
        print("warning: unshare -n is not available; runs rely on the machine having no network", file=sys.stderr)
    for env in envs:
        if not lfx_python(env).exists():
            sys.exit(f"{env}: {lfx_python(env)} does not exist (tests/_support/langflow_env.py installs it)")

    batches = [([f["id"] for f in flows[i : i + BATCH]], env) for env in envs for i in range(0, len(flows), BATCH)]
    done = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for found, (_, env) in zip(pool.map(lambda b: verdicts(b[0], b[1], netns), batches), batches, strict=True):
            for fid, answer in found.items():
                done += 1
                item = summary(answer)
                old.setdefault(fid, {})[env] = item
                why = item["run_message"][:90]
                print(f"[{done}/{len(flows) * len(envs)}] {env:7} {item['outcome']:15} {fid}  {why!r}", flush=True)
            VERDICTS.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


_SOUND = {"ran", "needs_key", "needs_file", "needs_service"}
_WORD = {"broken": "broken", "missing_package": "not_judged", "provision_failed": "not_judged"}


def expected(verdict: dict, provisioned: bool = False) -> str | None:
    """lfx's word on the flow: ``sound`` (it builds; a run stops only at what the user must
    provide), ``broken``, or ``not_judged`` (it needs a package this environment lacks: it builds
    with every bundle and not here, or even the full environment lacks it).  With ``provisioned``,
    lfx's word in the environment provisioning builds for the flow (not judged: even there a package
    is missing, or no environment could be made).  None when lfx gave no answer (a timeout)."""
    if provisioned:
        there = classify_stored(verdict.get("provisioned", {}))
        return "sound" if there in _SOUND else _WORD.get(there)
    full, here = (classify_stored(verdict.get(env, {})) for env in ("full", "sandbox"))
    if full not in _SOUND | {"broken", "missing_package"}:
        return None
    if full in _SOUND:
        return "sound" if here in _SOUND else "not_judged"
    return _WORD[full]


def ours(report) -> str:
    """``validate_flow``'s word in the same terms: its verdict."""
    return report.verdict


def measure(half: str, out: Path | None = None, provision: bool = False, probe: bool = False) -> dict:
    """Agreement of ``validate_flow`` with lfx, full round trips (load -> spec -> rebuild with no
    change) and ``validate_flow``'s time per flow, on one half of the corpus.  ``provision``: flows
    the sandbox cannot judge are judged in their provisioned environment (built before, by
    ``verdicts --env provisioned``), against lfx's verdict there; off, they are not judged.  ``probe``:
    a sound flow is probe-run too and a node failing there for the flow's own fault makes it broken
    (``validate_flow(probe=True)``)."""
    from lfassist_jupyter import Assistant, ScriptedProvider, default_catalog, validate_flow
    from lfassist_jupyter.flows import build as spec_module
    from lfassist_jupyter.flows import flow_to_spec
    from lfassist_jupyter.sandbox import shared

    stored = json.loads(VERDICTS.read_text())
    flows = [f for f in load_manifest() if half == "all" or f["half"] == half]
    rows = []
    default_catalog()  # the sandbox started and its catalogue read before the clock runs
    ops: list[str] = []
    sandbox = shared()
    call = sandbox._call

    def counted(payload: dict, timeout: float):  # the sandbox requests (each a child) per flow
        ops.append(str(payload.get("op")))
        return call(payload, timeout)

    sandbox._call = counted
    if provision:
        use_bench_envs()
    with tempfile.TemporaryDirectory(prefix="lfassist-measure-") as tmp:
        for flow in flows:
            path = Path(tmp) / f"{flow['id']}.json"
            path.write_text(flow_text(flow["id"]), encoding="utf-8")
            original = json.loads(path.read_text())
            ops.clear()
            t0 = time.perf_counter()
            report = validate_flow(path, provision=provision, probe=probe)
            ms = (time.perf_counter() - t0) * 1000
            row = {"id": flow["id"], "lfx": expected(stored.get(flow["id"], {}), provision), "ours": ours(report),
                   "ms": ms, "sandbox_ops": len(ops), "judged_in": report.judged_in}  # fmt: skip
            row["errors"] = [str(e)[:300] for e in report.errors]
            api = (Assistant, ScriptedProvider, spec_module, flow_to_spec, default_catalog)
            if not provision:  # the round trip does not depend on where the flow was judged
                row.update(round_trip(path, original, *api))
            rows.append(row)
            trip = row.get("trip", "-")
            print(f"{row['id'][:50]:50} lfx={row['lfx']!s:11} ours={row['ours']:11} trip={trip!s:5} {ms:7.0f} ms")
    judged = [r for r in rows if r["lfx"] is not None]
    agree = sum(r["lfx"] == r["ours"] for r in judged)
    times = sorted(r["ms"] for r in rows)
    classes = ("sound", "broken", "not_judged")
    summary_ = {
        "half": half,
        "provision": provision,
        "probe": probe,
        "flows": len(rows),
        "judged": len(judged),
        "agree": agree,
        "not_judged": sum(r["ours"] == "not_judged" for r in rows),
        "valid_when_lfx_not_sound": sum(r["ours"] == "sound" and r["lfx"] not in ("sound", None) for r in rows),
        "confusion": {
            f"{a}->{b}": sum(1 for r in judged if r["lfx"] == a and r["ours"] == b) for a in classes for b in classes
        },
        "full_round_trips": sum(r.get("trip", False) for r in rows),
        "nodes_kept": sum(r.get("nodes_kept", 0) for r in rows),
        "nodes": sum(r.get("nodes", 0) for r in rows),
        "nodes_identical": sum(r.get("nodes_identical", 0) for r in rows),
        "edges_kept": sum(r.get("edges_kept", 0) for r in rows),
        "edges": sum(r.get("edges", 0) for r in rows),
        "sandbox_ops_per_flow_max": max((r["sandbox_ops"] for r in rows), default=None),
        "sandbox_ops": sum(r["sandbox_ops"] for r in rows),
        "validate_ms_p50": times[len(times) // 2] if times else None,
        "validate_ms_p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] if times else None,
        "rows": rows,
    }
    if out is not None:
        out.write_text(json.dumps(summary_, indent=1))
    return summary_


def components(flow: dict) -> list[dict]:
    data = flow.get("data", flow)
    return [n for n in data.get("nodes", []) if isinstance(n, dict) and n.get("type", "genericNode") == "genericNode"]


def spec_ids(nodes: list[dict]) -> dict[str, str]:
    return {n["id"]: chr(ord("A") + i % 26) + (str(i // 26) if i >= 26 else "") for i, n in enumerate(nodes)}


def same_node(a: dict, b: dict) -> bool:
    return json.dumps(a) == json.dumps(b)


def round_trip(path, original, assistant_cls, provider_cls, spec_module, flow_to_spec, default_catalog) -> dict:
    """``%assist flow load FILE`` (``Assistant.load_flow``), its spec, and the rebuild an edit
    makes with that spec unchanged: is every node and edge there, every node byte-identical?"""
    nodes = components(original)
    edges = [e for e in original.get("data", original).get("edges", []) if isinstance(e, dict)]
    result = {"nodes": len(nodes), "edges": len(edges), "nodes_kept": 0, "nodes_identical": 0, "edges_kept": 0}
    try:
        assistant = assistant_cls(provider=provider_cls([]), session_store=False)
        loaded = assistant.load_flow(str(path))
        catalog = default_catalog()
        spec = flow_to_spec(loaded, catalog=catalog)
        edit = getattr(spec_module, "edit_flow", None)
        if edit is not None:
            rebuilt = edit(loaded, spec, catalog=catalog).flow or {}
            by_id = {n["id"]: n for n in components(rebuilt)}
            result["nodes_kept"] = sum(n["id"] in by_id for n in nodes)
            result["nodes_identical"] = sum(same_node(n, by_id[n["id"]]) for n in nodes if n["id"] in by_id)
            texts = {json.dumps(e) for e in rebuilt.get("data", rebuilt).get("edges", [])}
            result["edges_kept"] = sum(json.dumps(e) in texts for e in edges)
            extra = len(by_id) - result["nodes_kept"] + len(texts) - result["edges_kept"]
        else:  # the code before the merge: an edit rebuilt the flow from its spec
            built = spec_module.build_flow(spec, catalog=catalog)
            rebuilt = built.flow or {}
            sids = spec_ids(nodes)
            by_id = {n["id"]: n for n in components(rebuilt)}
            result["nodes_kept"] = sum(built.node_ids.get(sids[n["id"]]) in by_id for n in nodes)
            back = {v: k for k, v in built.node_ids.items()}
            have = set()
            for e in rebuilt.get("data", rebuilt).get("edges", []):
                ed = e.get("data") or {}
                have.add((back.get(e["source"]), (ed.get("sourceHandle") or {}).get("name"), back.get(e["target"]),
                          (ed.get("targetHandle") or {}).get("fieldName")))  # fmt: skip
            for e in edges:
                ed = e.get("data") or {}
                key = (sids.get(e["source"]), (ed.get("sourceHandle") or {}).get("name"), sids.get(e["target"]),
                       (ed.get("targetHandle") or {}).get("fieldName"))  # fmt: skip
                result["edges_kept"] += key in have
            extra = 0
    except Exception as exc:  # a flow that cannot be loaded or rebuilt: nothing kept
        result["error"] = f"{type(exc).__name__}: {exc}"[:300]
        extra = 0
    result["trip"] = (
        result["nodes_identical"] == result["nodes"] and result["edges_kept"] == result["edges"] and extra == 0
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["corpus", "starters"], default="corpus")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help="starters: download the wheels, extract the starter projects, write the manifest")
    v = sub.add_parser("verdicts", help="compute lfx's verdicts (writes verdicts.json)")
    v.add_argument("--env", choices=["full", "sandbox", "both", "provisioned"], default="both")
    v.add_argument("--half", choices=["dev", "held_back", "all"], default="all")
    v.add_argument("--only", nargs="*")
    v.add_argument("--jobs", type=int, default=2)
    m = sub.add_parser("measure", help="agreement with lfx and round trips on one half")
    m.add_argument("--half", choices=["dev", "held_back", "all"], default="dev")
    m.add_argument("--out", type=Path)
    m.add_argument("--provision", action="store_true", help="judge what the sandbox cannot in provisioned envs")
    m.add_argument("--probe", action="store_true", help="fold the probe run into the verdict")
    s = sub.add_parser("show", help="print the stored verdicts")
    s.add_argument("ids", nargs="*")
    args = parser.parse_args()
    select(args.set)
    if args.cmd == "fetch":
        fetch_starters()
    elif args.cmd == "verdicts":
        compute(["full", "sandbox"] if args.env == "both" else [args.env], args.only, args.jobs, args.half)
    elif args.cmd == "measure":
        found = measure(args.half, args.out, args.provision, args.probe)
        print(json.dumps({k: v for k, v in found.items() if k != "rows"}, indent=1))
    else:
        stored = json.loads(VERDICTS.read_text())
        for fid in args.ids or sorted(stored):
            print(fid, json.dumps(stored.get(fid), indent=1))


if __name__ == "__main__":
    main()
