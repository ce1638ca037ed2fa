"""Which packages a component's code needs that this interpreter does not have.

Judged the way lfx imports at build time (module-level imports run while building, imports
inside methods only when they run), so a report says "install X" only where Langflow would
fail for lack of X, and names the distribution to install rather than the module.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys

from ._shared import error_text

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_DIST_ALIASES = {
    "sklearn": "scikit-learn",
    "cv2": "opencv-python",
    "PIL": "Pillow",
    "yaml": "PyYAML",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "fitz": "PyMuPDF",
    "Crypto": "pycryptodome",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "magic": "python-magic",
    "serial": "pyserial",
    "usb": "pyusb",
    "skimage": "scikit-image",
    "attr": "attrs",
    "google": "google-api-python-client",
    "google.oauth2": "google-auth",
    "OpenSSL": "pyOpenSSL",
    "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary",
    "zmq": "pyzmq",
    "telegram": "python-telegram-bot",
    "discord": "discord.py",
    "slack_sdk": "slack-sdk",
    "git": "GitPython",
}


def _module_available(name: str) -> bool:
    """Whether ``import name`` can succeed, judged the way lfx imports at build time: a
    ``langflow.X`` that is not installed falls back to ``lfx.X`` (``_get_module_fallbacks`` in
    ``lfx/custom/validate.py``), so it is not missing when ``lfx.X`` exists."""
    candidates = [name]
    if name.startswith("langflow."):
        candidates.append("lfx." + name[len("langflow.") :])
    for candidate in candidates:
        top = candidate.split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
            if spec is None:
                continue
            parts = candidate.split(".")
            if spec.origin is None and len(parts) > 1 and importlib.util.find_spec(".".join(parts[:2])) is None:
                continue  # a namespace package (google.*) without this sub-package
            # The fallback must exist as a module, not just its package.
            if candidate != name and importlib.util.find_spec(candidate) is None:
                continue
            return True
        except (ImportError, ValueError, AttributeError):
            continue
    return False


def _imports(code: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(module-level imports lfx performs at build time, every other import), as (module, line).

    lfx runs only the ``import``/``from`` statements directly in the module body
    (``prepare_global_scope``); an import inside a method (or a ``try:``) runs when that
    code runs, so a missing package there never stops Langflow from building the component.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [], []
    top_level = {id(n) for n in tree.body}
    build, run = [], []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != "__future__":
            names = [node.module]
        for name in names:
            (build if id(node) in top_level else run).append((name, node.lineno))
    return build, run


def package(module: str) -> dict:
    """What to install for ``module``: its top-level name, or ``ns.sub`` for a namespace package."""
    parts = module.split(".")
    depth = 3 if parts[:2] == ["google", "cloud"] else 2 if parts[0] in _NAMESPACES else 1
    top = ".".join(parts[:depth])
    dist = _DIST_ALIASES.get(top, top.replace("_", "-").replace(".", "-"))
    return {"module": top, "distribution": dist, "fix": f"%pip install {dist}"}


_NAMESPACES = {"google", "azure"}


def missing_packages(code: str, *, when: str = "build") -> list[dict]:
    """Packages the code imports that are not installed: ``when="build"`` for the imports lfx
    performs while building (module level), ``"run"`` for those inside methods."""
    build, run = _imports(code)
    seen, missing = set(), []
    for name, _line in build if when == "build" else run:
        top = name.split(".")[0]
        if top in _STDLIB or name in seen:
            continue
        seen.add(name)
        pkg = package(name)
        if not _module_available(name) and pkg["distribution"] not in {m["distribution"] for m in missing}:
            missing.append(pkg)
    return missing


def missing_module(exc: BaseException) -> str | None:
    """The top-level module a ModuleNotFoundError (possibly wrapped by lfx) names."""
    name = None
    seen: BaseException | None = exc
    while seen is not None and name is None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            name = seen.name
        seen = seen.__cause__ or seen.__context__
    if name is None:
        match = re.search(r"No module named '([\w.]+)'", error_text(exc))
        name = match.group(1) if match else None
    if name is None:
        return None
    top = name.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return top
    if spec.origin is None and "." in name:
        # A namespace package (google, azure): each sub-package is its own distribution,
        # so "No module named 'google.auth'" means google-auth is missing, not a wrong path.
        return ".".join(name.split(".")[:2])
    return None  # an installed package with a wrong submodule is a wrong path
