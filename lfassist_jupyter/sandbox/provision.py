"""Separate environments to judge a flow in: lfx and the packages the flow needs, built with uv.

A flow whose nodes import a package the sandbox's environment lacks cannot be judged there: lfx
stops at the first missing import, and a stale import or a name gone from a package after it is
never reached.  Rather than call such a flow valid (or broken), the flow is judged in an
environment that has what it needs, as lfx itself would run it:

- **what**: the sandbox's own lfx and lfx bundles, pinned at the versions it has, plus the
  distributions lfx's requirement logic names for the flow (``lfx.utils.flow_requirements``, asked
  in the sandbox: ``flows.packages``);
- **how**: ``uv pip compile`` resolves the set (offline first, from uv's cache; then the index);
  the environment is a venv over the sandbox's: its own site-packages holds only the resolved
  packages the sandbox's lacks or has at another version (``uv pip install --no-deps`` of those
  pins), first on ``sys.path``, the sandbox's site-packages after it (read, never written); the
  kernel's environment is never touched;
- **where**: ``LFASSIST_PROVISION_DIR`` (default: the user cache, ``lfassist-jupyter/envs``), one
  directory per requirement set (its hash), reused for the same set, the least recently used
  removed past ``LFASSIST_PROVISION_CACHE_MB``;
- **when**: only when the user said yes (``--provision``, ``validate_flow(provision=True)``, or
  ``LFASSIST_PROVISION=yes``); before that, ``plan`` says what would be installed and its size.

The sandbox's worker runs on any interpreter (``SandboxValidator(python=...)``): ``sandbox_for``
gives the one of an environment, which then judges the flow (``flows.provisioned``).  uv reads its
own settings from the environment (``UV_INDEX_URL``, ``UV_FIND_LINKS``, ``UV_OFFLINE``...).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lfassist_jupyter import settings
from lfassist_jupyter.errors import LfAssistError

__all__ = ["Environment", "ProvisionError", "build", "cache_dir", "plan", "prune", "sandbox_for"]

RESOLVE_TIMEOUT = 180.0
INSTALL_TIMEOUT = 1800.0
_READY = "lfassist-env.json"  # written last: an environment without it is incomplete
_USED = ".last-used"


class ProvisionError(LfAssistError):
    """An environment to judge a flow in could not be made (one line: what uv said)."""


@dataclass
class Environment:
    """A provisioned environment: its interpreter, and what it adds to the sandbox's."""

    path: Path
    adds: list[str]
    requirements: list[str]
    built_seconds: float = 0.0

    @property
    def python(self) -> str:
        return str(self.path / "bin" / "python")

    def describe(self) -> str:
        return f"a provisioned environment ({self.path}: lfx + {', '.join(self.adds)})"


def cache_dir() -> Path:
    """Where provisioned environments are kept (``LFASSIST_PROVISION_DIR``, else the user cache)."""
    chosen = settings.read("provision_dir")
    if chosen:
        return Path(chosen).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("lfassist-jupyter")) / "envs"


def _uv() -> list[str] | None:
    """The uv command: the one installed with this package (``python -m uv``), else one on PATH."""
    import importlib.util

    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    found = shutil.which("uv")
    return [found] if found else None


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"))}
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def _uv_error(proc: subprocess.CompletedProcess[str]) -> str:
    """uv's own words, one line: its last ``error:``/``×`` line and what follows it."""
    text = (proc.stderr or proc.stdout or "").strip()
    lines = [ln.strip(" ×╰─▶│") for ln in text.splitlines() if ln.strip(" ×╰─▶│")]
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(("error", "No solution"))), None)
    picked = lines[start:] if start is not None else lines[-3:]
    return " ".join(picked)[:400] or f"uv exited with {proc.returncode}"


_BASE: dict[str, dict[str, str]] = {}
_BASE_LOCK = threading.Lock()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _base(python: str) -> dict[str, str]:
    """The distributions of the sandbox's interpreter, ``{normalized name: version}`` (uv reads
    its metadata; nothing of it is imported here)."""
    with _BASE_LOCK:
        if python in _BASE:
            return _BASE[python]
    uv = _uv()
    if uv is None:
        raise ProvisionError("uv is not installed (`%pip install uv`)")
    proc = _run([*uv, "pip", "list", "--python", python, "--format", "json"], 60)
    if proc.returncode != 0:
        raise ProvisionError(f"could not list the sandbox's packages: {_uv_error(proc)}")
    found = {_normal(d["name"]): str(d["version"]) for d in json.loads(proc.stdout or "[]")}
    with _BASE_LOCK:
        _BASE[python] = found
    return found


def _requirements(python: str, adds: list[str]) -> list[str]:
    """lfx and the lfx bundles the sandbox has, pinned, then the flow's distributions."""
    base = _base(python)
    if "lfx" not in base:
        raise ProvisionError(f"lfx is not installed in the sandbox's environment ({python})")
    lfx = sorted((name, version) for name, version in base.items() if name == "lfx" or name.startswith("lfx-"))
    pinned = [f"{name}=={version}" for name, version in lfx]
    extra = sorted({_normal(a) for a in adds} - {p.split("==")[0] for p in pinned})
    return [*pinned, *extra]


def _key(python: str, requirements: list[str]) -> str:
    """The environment's name: the requirement set, over the sandbox's interpreter as it is now (an
    environment reads the sandbox's packages: when they change, it is another environment)."""
    base = sorted(_base(python).items())
    identity = "\n".join([os.path.abspath(python), *requirements, *(f"{n}=={v}" for n, v in base)])
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def _site_packages(python: str) -> list[str]:
    """The sandbox interpreter's site-packages directories (asked of it; nothing is imported)."""
    ask = "import json, sysconfig; p = sysconfig.get_paths(); print(json.dumps(sorted({p['purelib'], p['platlib']})))"
    proc = _run([python, "-I", "-c", ask], 60)
    if proc.returncode != 0:
        raise ProvisionError(f"could not ask {python} for its site-packages: {proc.stderr.strip()[-200:]}")
    return [str(d) for d in json.loads(proc.stdout.strip().splitlines()[-1])]


def _resolve(python: str, requirements: list[str]) -> list[dict[str, Any]]:
    """uv's resolution of ``requirements`` for ``python``: ``[{name, version, size}]``; offline
    first (uv's cache), then the index.  Raises ``ProvisionError`` with uv's words."""
    uv = _uv()
    if uv is None:
        raise ProvisionError("uv is not installed (`%pip install uv`)")
    with tempfile.TemporaryDirectory(prefix="lfassist-resolve-") as tmp:
        source, lock = Path(tmp) / "requirements.in", Path(tmp) / "pylock.toml"
        source.write_text("\n".join(requirements) + "\n")
        command = [*uv, "pip", "compile", "--quiet", "--format", "pylock.toml", "--python", python,
                   "-o", str(lock), str(source)]  # fmt: skip
        proc = _run([*command, "--offline"], RESOLVE_TIMEOUT)
        if proc.returncode != 0 and os.environ.get("UV_OFFLINE", "").lower() not in ("1", "true", "yes"):
            proc = _run(command, RESOLVE_TIMEOUT)
        if proc.returncode != 0:
            raise ProvisionError(_uv_error(proc))
        return _locked(lock.read_text())


def _locked(text: str) -> list[dict[str, Any]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - declared for Python 3.10
        import tomli as tomllib
    found = []
    for package in tomllib.loads(text).get("packages", []):
        files = [*(package.get("wheels") or []), package.get("sdist") or {}]
        size = next((f.get("size") for f in files if isinstance(f, dict) and f.get("size")), None)
        found.append({"name": str(package["name"]), "version": str(package.get("version", "")), "size": size})
    return found


def plan(adds: list[str], python: str) -> dict[str, Any]:
    """What judging a flow that needs ``adds`` takes, as the fields of ``flows.results.ProvisionPlan``:
    the requirement set, the resolved packages new to the sandbox and their download size, where the
    environment is kept and whether it is ready.  Never raises: ``error`` says why it cannot be made
    (no uv, offline with nothing cached, a package the index does not have)."""
    answer: dict[str, Any] = {"adds": sorted({_normal(a) for a in adds})}
    try:
        requirements = _requirements(python, adds)
        path = cache_dir() / _key(python, requirements)
        answer.update(requirements=requirements, path=str(path), python=python)
        stored = _stored(path)
        if stored is not None:
            return {**answer, "new": stored.get("new", []), "download_bytes": stored.get("download_bytes"),
                    "ready": True}  # fmt: skip
        if str(path) in _PLANS:  # resolved before in this process: the same answer
            return {**_PLANS[str(path)], **answer}
        resolved = _resolve(python, requirements)
    except ProvisionError as exc:
        return {**answer, "error": str(exc)}
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return {**answer, "error": f"{type(exc).__name__}: {exc}"[:400]}
    base = _base(python)
    new = [p for p in resolved if base.get(_normal(p["name"])) != p["version"]]
    sizes = [p["size"] for p in new if isinstance(p.get("size"), int)]
    answer.update(new=[f"{p['name']}=={p['version']}" for p in new], download_bytes=sum(sizes) or None,
                  pins=[f"{p['name']}=={p['version']}" for p in resolved])  # fmt: skip
    _PLANS[str(path)] = dict(answer)
    return answer


_PLANS: dict[str, dict[str, Any]] = {}  # resolutions of this process, by environment path


def ready(path: str | Path) -> Environment | None:
    """The environment kept at ``path``, when it is complete."""
    stored = _stored(Path(path))
    if stored is None:
        return None
    return Environment(
        path=Path(path), adds=list(stored.get("adds", [])), requirements=list(stored.get("requirements", []))
    )


def _stored(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / _READY).read_text())
    except (OSError, ValueError):
        return None


_BUILD_LOCK = threading.Lock()


def build(planned: dict[str, Any]) -> Environment:
    """The environment of ``planned`` (``plan``'s answer), built now or found ready; marked used.
    Raises ``ProvisionError`` (uv's words) when it cannot be made."""
    if planned.get("error"):
        raise ProvisionError(str(planned["error"]))
    path = Path(planned["path"])
    with _BUILD_LOCK, _file_lock(path.parent / f"{path.name}.lock"):
        stored = _stored(path)
        if stored is None:
            stored = _install(path, planned)
        _touch(path)
    prune(keep=path)
    return Environment(path=path, adds=list(stored.get("adds", [])), requirements=list(stored.get("requirements", [])),
                       built_seconds=float(stored.get("built_seconds", 0.0)))  # fmt: skip


@contextlib.contextmanager
def _file_lock(path: Path):
    """One builder per environment across kernels (an advisory lock file)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _install(path: Path, planned: dict[str, Any]) -> dict[str, Any]:
    """An environment over the sandbox's: a venv whose own site-packages holds only the resolved
    packages the sandbox's lacks (or has at another version), first on ``sys.path``, then the
    sandbox's site-packages (a ``.pth`` that adds them, read-only).  The resolution is the whole
    environment, so ``--no-deps`` of those pins makes exactly it; lfx and everything else already
    compiled there is not copied nor compiled again: a new environment is the flow's few packages.
    What it holds is written last (``lfassist-env.json``), so a build that was interrupted is made
    again."""
    uv = _uv()
    if uv is None:
        raise ProvisionError("uv is not installed (`%pip install uv`)")
    pins = planned.get("new") or []
    started = time.monotonic()
    shutil.rmtree(path, ignore_errors=True)
    try:
        base_sites = _site_packages(str(planned["python"]))
        proc = _run([*uv, "venv", "--quiet", "--python", str(planned["python"]), str(path)], 120)
        if proc.returncode != 0:
            raise ProvisionError(f"uv venv failed: {_uv_error(proc)}")
        (own,) = sorted(path.glob("lib/python*/site-packages"))[:1] or [None]
        if own is None:
            raise ProvisionError(f"uv venv made no site-packages in {path}")
        # ``import`` lines of a .pth run at start-up: addsitedir also reads the sandbox's own .pth files.
        lines = [f"import site; site.addsitedir({d!r})" for d in base_sites]
        (own / "_lfassist_sandbox_site.pth").write_text("\n".join(lines) + "\n")
        source = path / "lfassist-requirements.txt"
        source.write_text("\n".join(pins) + "\n")
        # --compile-bytecode: the sandbox imports read-only, so without .pyc files every worker start
        # would compile these packages again.
        install = [*uv, "pip", "install", "--quiet", "--compile-bytecode", "--no-deps",
                   "--python", str(path / "bin" / "python"), "-r", str(source)]  # fmt: skip
        proc = _run([*install, "--offline"], INSTALL_TIMEOUT)
        if proc.returncode != 0 and os.environ.get("UV_OFFLINE", "").lower() not in ("1", "true", "yes"):
            proc = _run(install, INSTALL_TIMEOUT)
        if proc.returncode != 0:
            raise ProvisionError(f"installing failed: {_uv_error(proc)}")
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(path, ignore_errors=True)
        raise ProvisionError(f"uv did not finish in {exc.timeout:.0f} s") from None
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    stored = {
        "adds": planned.get("adds", []),
        "requirements": planned.get("requirements", []),
        "new": planned.get("new", []),
        "download_bytes": planned.get("download_bytes"),
        "built_seconds": round(time.monotonic() - started, 1),
        "size_bytes": _size(path),
    }
    (path / _READY).write_text(json.dumps(stored, indent=1))
    return stored


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        (path / _USED).write_text(str(time.time()))


def _size(path: Path) -> int:
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
    return total


def environments() -> list[tuple[Path, dict[str, Any], float]]:
    """The ready environments: (path, what it holds, when it was last used), most recent first."""
    root = cache_dir()
    found = []
    for path in root.iterdir() if root.is_dir() else []:
        stored = _stored(path) if path.is_dir() and not path.name.startswith(".") else None
        if stored is None:
            continue
        try:
            used = (path / _USED).stat().st_mtime
        except OSError:
            used = (path / _READY).stat().st_mtime
        found.append((path, stored, used))
    return sorted(found, key=lambda item: item[2], reverse=True)


def prune(keep: Path | None = None, limit_mb: int | None = None) -> list[Path]:
    """Remove the least recently used environments until the rest fit in ``limit_mb``
    (``LFASSIST_PROVISION_CACHE_MB``); ``keep`` (the one in use) stays.  Returns what was removed."""
    limit = (settings.read("provision_cache_mb") if limit_mb is None else limit_mb) * 1_000_000
    found = environments()
    total = sum(int(stored.get("size_bytes") or 0) for _, stored, _ in found)
    removed = []
    for path, stored, _used in reversed(found):  # the least recently used first
        if total <= limit:
            break
        if keep is not None and path == keep:
            continue
        _forget(path)
        shutil.rmtree(path, ignore_errors=True)
        total -= int(stored.get("size_bytes") or 0)
        removed.append(path)
    return removed


_SANDBOXES: dict[str, Any] = {}
_SANDBOX_LOCK = threading.Lock()
_ALIVE = 2  # provisioned sandboxes kept running (each a zygote with lfx imported)


def sandbox_for(env: Environment) -> Any:
    """The sandbox (a ``SandboxValidator``) whose worker runs on ``env``'s interpreter: kept for the
    next flow that needs the same environment; the oldest of more than two is closed."""
    from lfassist_jupyter.sandbox.client import SandboxValidator

    with _SANDBOX_LOCK:
        found = _SANDBOXES.pop(env.python, None)
        if found is None:
            found = SandboxValidator(
                env.python, timeout=settings.read("validator_timeout"), memory_mb=settings.read("validator_memory_mb")
            )
        _SANDBOXES[env.python] = found  # most recent last
        while len(_SANDBOXES) > _ALIVE:
            _, old = next(iter(_SANDBOXES.items()))
            _SANDBOXES.pop(next(iter(_SANDBOXES)))
            with contextlib.suppress(Exception):
                old.close()
    _touch(env.path)
    return found


def _forget(path: Path) -> None:
    with _SANDBOX_LOCK:
        python = str(path / "bin" / "python")
        old = _SANDBOXES.pop(python, None)
    if old is not None:
        with contextlib.suppress(Exception):
            old.close()


def close_all() -> None:
    """Stop every provisioned sandbox (tests, the benchmark)."""
    with _SANDBOX_LOCK:
        olds = list(_SANDBOXES.values())
        _SANDBOXES.clear()
    for old in olds:
        with contextlib.suppress(Exception):
            old.close()
