"""Which packages a component's code, or a flow, needs that this interpreter does not have.

For a component: judged the way lfx imports at build time (module-level imports run while
building, imports inside methods only when they run), so a report says "install X" only where
Langflow would fail for lack of X, and names the distribution to install rather than the module.

For a flow (the op ``flow_packages``): lfx 1.13's own logic, the one ``lfx requirements`` and
``lfx run``'s dependency preflight use (``lfx.utils.flow_requirements``): a node's code imports
(less the standard library and what lfx itself brings), and a model node's provider (its
bundle's imports, or lfx's fallback table: ``OpenAI`` -> ``langchain-openai``).  One thing lfx
leaves out is added: ``lfx.components.X`` is a shim since the bundle split (1.13), and importing
it fails when its bundle (``lfx-openai``...) is not installed, although lfx counts ``lfx.*``
imports as always present.
"""

from __future__ import annotations

import ast
import contextlib
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
    """What to install for ``module``: its top-level name, or ``ns.sub`` for a namespace package
    (a ``lfx.components.X`` shim: its bundle).  lfx's own import-name overrides first
    (``IMPORT_NAME_OVERRIDES``), then the names lfx would guess wrong (``_DIST_ALIASES``)."""
    bundle = shim_bundle(module)
    if bundle:
        return {"module": module, "distribution": bundle, "fix": f"%pip install {bundle}"}
    parts = module.split(".")
    depth = 3 if parts[:2] == ["google", "cloud"] else 2 if parts[0] in _NAMESPACES else 1
    top = ".".join(parts[:depth])
    dist = _lfx_overrides().get(top) or _DIST_ALIASES.get(top, top.replace("_", "-").replace(".", "-"))
    return {"module": top, "distribution": dist, "fix": f"%pip install {dist}"}


try:  # at import, in the zygote: a child importing it lazily reads lfx's files, which the reduced
    # sandbox refuses when the environment lives under the notebook's folder (a Validator error)
    from lfx.utils.flow_requirements import IMPORT_NAME_OVERRIDES as _IMPORT_NAME_OVERRIDES
except ImportError:  # an lfx before 1.13
    _IMPORT_NAME_OVERRIDES = {}


def _lfx_overrides() -> dict[str, str]:
    return dict(_IMPORT_NAME_OVERRIDES)


_SHIM_HEAD = "# lfx-bundles-shim"
_SHIM_TARGET = re.compile(r'import_module\("([\w.]+)"\)')
_SHIM_DIST = re.compile(r"moved to the '([\w.-]+)' distribution")


def shim_bundle(module: str) -> str | None:
    """The bundle a ``lfx.components.X`` module stands in for, when that bundle is not installed
    (lfx 1.13 left 78 such shims; each re-points to ``lfx_X`` and fails without it)."""
    parts = module.split(".")
    if parts[:2] != ["lfx", "components"] or len(parts) < 3:
        return None
    try:
        spec = importlib.util.find_spec(".".join(parts[:3]))
        if spec is None or not spec.origin:
            return None
        with open(spec.origin, encoding="utf-8") as fh:
            head = fh.read(4000)
    except (ImportError, ValueError, OSError):
        return None
    target = _SHIM_TARGET.search(head)
    if not head.startswith(_SHIM_HEAD) or target is None:
        return None
    top = target.group(1).split(".")[0]
    try:
        installed = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        return None
    dist = _SHIM_DIST.search(head)
    return dist.group(1) if dist else top.replace("_", "-")


_NAMESPACES = {"google", "azure"}


def _provider_homes() -> tuple[dict[str, str], dict[str, bool]]:
    """Each model provider lfx 1.13 registers in ``MODEL_PROVIDERS_DICT`` -> the module its
    component is imported from, read from lfx's own source (each provider is one ``try:`` that
    imports its component and assigns ``MODEL_PROVIDERS_DICT["Name"]``; an ``ImportError`` leaves
    it out), and whether lfx offers it as active (its ``"is_active"``: ``MODELS_METADATA``, what
    saved Agent code indexes, holds the active ones only).  Read once, in the zygote: without the
    module's bundle the provider is missing from lfx's registry, and code that looks it up fails
    with ``KeyError('Google Generative AI')``; an inactive one fails so whatever is installed."""
    try:
        spec = importlib.util.find_spec("lfx.base.models.model_input_constants")
        with open(spec.origin, encoding="utf-8") as fh:  # type: ignore[union-attr]
            tree = ast.parse(fh.read())
    except (ImportError, ValueError, AttributeError, OSError, SyntaxError):
        return {}, {}
    homes: dict[str, str] = {}
    active: dict[str, bool] = {}
    for block in tree.body:
        if not isinstance(block, ast.Try):
            continue
        modules = [n.module for n in block.body if isinstance(n, ast.ImportFrom) and n.module]
        for node in ast.walk(block):
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if (
                modules
                and isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == "MODEL_PROVIDERS_DICT"
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                homes[target.slice.value] = modules[0]
                if isinstance(node.value, ast.Dict):
                    flags = [v for k, v in zip(node.value.keys, node.value.values, strict=False)
                             if isinstance(k, ast.Constant) and k.value == "is_active"]  # fmt: skip
                    if flags and isinstance(flags[0], ast.Constant) and isinstance(flags[0].value, bool):
                        active[target.slice.value] = flags[0].value
    return homes, active


_PROVIDER_HOMES, _PROVIDER_ACTIVE = _provider_homes()


def inactive_providers(code: str) -> list[str]:
    """The providers ``code`` names that lfx 1.13 registers as inactive, when the code indexes
    ``MODELS_METADATA`` (the active ones only): lfx's load fails with their ``KeyError`` whatever is
    installed (an Agent saved by Langflow 1.1 lists Groq): stale code, not a missing package."""
    if "MODELS_METADATA[" not in code:
        return []
    named = []
    with contextlib.suppress(SyntaxError, ValueError, MemoryError, RecursionError):
        named = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return list(dict.fromkeys(n for n in named if _PROVIDER_ACTIVE.get(n) is False))


def provider_bundle(provider: str) -> list[str]:
    """What brings ``provider`` back into lfx's model registry when this interpreter lacks it:
    the bundle its component lives in (``lfx-openai``; ``lfx-bundles`` behind a
    ``lfx.components.groq`` shim) and the SDK lfx names for it (``langchain-groq``), those not
    installed.  Empty when lfx does not know the provider."""
    home = _PROVIDER_HOMES.get(provider)
    needs: list[str] = []
    if home:
        top = home.split(".")[0]
        if top.startswith("lfx_") and not _module_available(top):
            needs.append(top.replace("_", "-"))
        bundle = shim_bundle(home)
        if bundle:
            needs.append(bundle)
    try:
        from lfx.utils.flow_requirements import _PROVIDER_PACKAGE_FALLBACKS
    except ImportError:
        _PROVIDER_PACKAGE_FALLBACKS = {}
    for dist in sorted(_PROVIDER_PACKAGE_FALLBACKS.get(provider, ())):
        if not _dist_installed(dist):
            needs.append(dist)
    if not home and not needs:
        return []
    return list(dict.fromkeys(needs))


def missing_providers(code: str, first: str) -> list[str]:
    """The model providers ``code`` names (its string constants: ``MODEL_PROVIDERS_LIST = [...]``)
    that lfx's registry lacks here, ``first`` (the one its load failed at) first: lfx would stop at
    each in turn, so every one is named at once."""
    try:
        from lfx.base.models.model_input_constants import MODEL_PROVIDERS_DICT
    except ImportError:
        return [first]
    named = []
    with contextlib.suppress(SyntaxError, ValueError, MemoryError, RecursionError):
        named = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    missing = (n for n in named if _PROVIDER_ACTIVE.get(n) is not False and n in _PROVIDER_HOMES)
    return list(dict.fromkeys([first, *(n for n in missing if n not in MODEL_PROVIDERS_DICT)]))


def _dist_installed(dist: str) -> bool:
    import importlib.metadata as md

    try:
        md.version(dist)
    except md.PackageNotFoundError:
        return False
    return True


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
        gone = not _module_available(name) or shim_bundle(name) is not None
        if gone and pkg["distribution"] not in {m["distribution"] for m in missing}:
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


# -- a flow's packages: lfx's requirements logic, in a sandboxed child ------------------------


def _flow_of(node_data: dict) -> dict:
    return {"data": {"nodes": [{"id": "n", "type": "genericNode", "data": {"node": node_data}}], "edges": []}}


def code_needs(code: str) -> list[str]:
    """The distributions a node's ``code`` needs and this interpreter lacks (lfx's analysis,
    plus the bundles behind ``lfx.components.X`` shims)."""
    import warnings

    from lfx.utils.flow_requirements import find_missing_dependencies

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lfx warns about code it cannot parse: the build says so
        needs = list(find_missing_dependencies(_flow_of({"template": {"code": {"value": code}}})))
    build, run = _imports(code)
    for name, _line in [*build, *run]:
        bundle = shim_bundle(name)
        if bundle and bundle not in needs:
            needs.append(bundle)
    return sorted(needs)


def provider_needs(provider: str) -> list[str]:
    """The distributions a model node on ``provider`` needs and this interpreter lacks."""
    import warnings

    from lfx.utils.flow_requirements import find_missing_dependencies

    model = {"type": "model", "value": [{"name": "", "provider": provider}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unknown provider: lfx has nothing to say
        return sorted(find_missing_dependencies(_flow_of({"template": {"model": model}})))


def warm() -> None:
    """Load what lfx's requirements logic caches (the installed distributions, what lfx brings, its
    providers' components): in the zygote, so each child's answer takes milliseconds, not seconds.
    Only lfx's own code runs here."""
    import warnings

    from lfx.utils import flow_requirements

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flow_requirements.generate_requirements_from_flow(_flow_of({"template": {}}), include_lfx=False)
        provider_needs("OpenAI")  # imports lfx's provider table (and the installed bundles' components)
        code_needs("import json\n")  # lfx's index of shipped component sources


def register(ops: dict, facts: dict) -> None:
    """Add the op ``flow_packages``: what built-in types, codes and providers need (lfx's logic).

    The flow catalogue (a fact, first asked when a session works with flows) also warms lfx's
    requirement caches in the zygote, so a session without flows does not pay for it."""
    from ._shared import Armed, Timeout, error_text

    catalog = facts.get("flow_catalog")
    if callable(catalog):

        def catalog_then_warm() -> object:
            answer = catalog()
            with contextlib.suppress(Exception):  # an lfx before 1.13: the op says so itself
                warm()
            return answer

        facts["flow_catalog"] = catalog_then_warm

    def flow_packages(req: dict) -> dict:
        import time

        from lfx.graph.flow_builder.builder import load_local_registry

        from ._models import providers as lfx_providers

        deadline = time.monotonic() + float(req.get("timeout", 30))
        registry = load_local_registry()
        types = list(registry) if req.get("types") == "all" else [str(t) for t in req.get("types") or []]
        codes = [str(c) for c in req.get("codes") or []][:200]
        names = lfx_providers() if req.get("providers") == "all" else [str(p) for p in req.get("providers") or []]
        try:
            with Armed(deadline):
                by_type = {
                    t: code_needs(str(((registry[t].get("template") or {}).get("code") or {}).get("value") or ""))
                    for t in types
                    if t in registry
                }
                by_code = [code_needs(code) for code in codes]
                by_provider = {p: provider_needs(p) for p in names[:100]}
        except Timeout:
            return {"ok": False, "error": "Finding the flow's packages did not finish in time."}
        except Exception as exc:
            return {"ok": False, "error": f"Finding the flow's packages failed: {error_text(exc)}"}
        return {"ok": True, "types": by_type, "codes": by_code, "providers": by_provider}

    ops["flow_packages"] = flow_packages
