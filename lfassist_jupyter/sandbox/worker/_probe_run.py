"""Worker ops ``probe_run`` (a flow, headless, on one input text), ``component_template`` and
``component_verdicts``.

An op module of the worker package (stdlib + lfx only), imported in the zygote before its
first fork; the op runs in a fresh, sandboxed child like every validation.

The kernel side (``SandboxValidator.probe_run``) has already replaced the flow's model
and keyed-API nodes by deterministic stubs (``sandbox/probe.py``'s ``stub_flow``: plain data
work, no code runs there), so this child needs no key and no network. Whatever the flow
does, the answer is ``{"ok", "text", "error", "outputs"}``: a flow that raises is a failed
run, never an exception out of the child.

``component_template`` answers the node template lfx builds for component code, so a
component generated for a flow joins the flow catalogue exactly as Langflow's canvas would
place it (the code is built here, in the sandbox, never in the kernel); ``component_verdicts``
says of a flow's node code whether lfx loads it (``validate_flow``; the kernel sends one code per
request, so that each verdict comes from a child where no other node's code ran).
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

from ._lfx import Component, build_custom_component_template
from ._shared import Armed, Timeout, error_text


def _text_of(value: object) -> str:
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    return "" if value is None else str(value)


def _why(exc: BaseException, code: str = "") -> dict:
    """The environment's share in a failed build: a missing package or a stale import.

    ``langflow.X`` that only Langflow itself has (``langflow.api``...) fails as ``lfx.X`` (lfx's
    loader falls back to it): the package missing is ``langflow``, not a module of lfx.  A model
    provider absent from lfx's registry (``KeyError('Groq')``: its bundle is not installed) is
    missing its bundle and SDK (``missing_packages``: every distribution that brings it back)."""
    from ._packages import missing_module, package

    top = missing_module(exc)
    if top:
        return {"missing_package": package(top)}
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            moved = "langflow." + seen.name.removeprefix("lfx.")
            if seen.name.startswith("lfx.") and moved in code and not _installed("langflow"):
                return {
                    "missing_package": {
                        "module": "langflow",
                        "distribution": "langflow",
                        "fix": "%pip install langflow",
                    }
                }
            return {"stale_import": seen.name}
        if isinstance(seen, KeyError) and len(seen.args) == 1 and isinstance(seen.args[0], str):
            from ._packages import inactive_providers, missing_providers, provider_bundle

            stale = inactive_providers(code)
            if stale:  # lfx would stop there with every package installed
                return {"inactive_provider": stale[0]}
            if provider_bundle(seen.args[0]):
                providers = missing_providers(code, seen.args[0])
                found = [
                    {"module": provider, "distribution": d, "fix": f"%pip install {d}"}
                    for provider in providers
                    for d in provider_bundle(provider)
                ]
                unique = list({f["distribution"]: f for f in found}.values())
                return {"missing_package": unique[0], "missing_packages": unique, "provider": ", ".join(providers)}
        seen = seen.__cause__ or seen.__context__
    return {}


def _installed(top: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _stale_imports(code: str) -> list[dict]:
    """What the code imports at module level (what lfx runs while building) that is gone from a
    package that *is* installed: a module (``lfx.api``) or a name in a module that exists
    (``Qdrant`` from ``langchain_community.vectorstores``): code written for another version of
    that package.  Every import is checked, not only the first that failed: a package this
    interpreter lacks stops the build before a stale import after it is reached, and lfx, with
    every package installed, would stop at the stale one.  (``langflow.X`` and ``langchain.X``
    fall back to ``lfx.X`` and ``langchain_classic.X``, as lfx's loader does.)  Each is
    ``{"module"}`` or ``{"module", "name"}``."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    wanted: list[tuple[str, list[str]]] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            wanted += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            wanted.append((node.module, [a.name for a in node.names if a.name != "*"]))
    stale: list[dict] = []
    for name, names in wanted:
        module = _resolved(name)
        if module is False:
            stale.append({"module": name})
        elif module is not None:
            stale += [{"module": name, "name": n} for n in names if _lacks(module, n)]
    return stale


# lfx's loader tries these before it gives up (``_get_module_fallbacks``).
_FALLBACKS = {"langflow.": "lfx.", "langchain.": "langchain_classic."}


def _found(name: str) -> bool:
    """Whether module ``name`` exists; a module that re-points to a package that is not installed
    (lfx's shims for what moved to a bundle: ``lfx.base.datastax`` -> ``lfx_datastax``) counts as
    existing: that is a missing package, not a stale import."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError as exc:
        moved = (exc.name or "").split(".")[0]
        return bool(moved) and moved != name.split(".")[0] and not _found(moved)
    except (ImportError, ValueError, AttributeError):
        return False


def _resolved(name: str) -> str | bool | None:
    """The module ``import name`` reaches (its name, after lfx's fallbacks), False when it is gone
    from an installed package, None when its package is not installed (nothing to say)."""
    top = name.split(".")[0]
    if not _found(top):
        old = next((o for o in _FALLBACKS if name.startswith(o)), None)
        if old is None or not _found(_FALLBACKS[old] + name.removeprefix(old)):
            return None
        return _FALLBACKS[old] + name.removeprefix(old)
    if "." not in name or _found(name):
        return name
    for old, new in _FALLBACKS.items():
        if name.startswith(old) and _found(new + name.removeprefix(old)):
            return new + name.removeprefix(old)
    return False


def _lacks(module: str, name: str) -> bool:
    """Whether ``from module import name`` fails because the module has no ``name`` (a name gone
    from an installed package).  The module is imported here, in the child, as lfx's build would;
    a module that cannot be imported for a package this interpreter lacks, or a lazy name that
    fails for one, is a missing package, not a stale name: no verdict here."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except BaseException as exc:  # any failure: no verdict on the name
        if isinstance(exc, Timeout):
            raise
        return False
    if name in getattr(mod, "__dict__", {}):
        return False
    try:
        getattr(mod, name)
        return False
    except AttributeError:
        pass
    except BaseException as exc:  # a lazy name that needs a missing package
        if isinstance(exc, Timeout):
            raise
        return False
    return not _found(f"{module}.{name}")  # a submodule that was not imported yet


# Python's own signals that code does not fit what it runs against (an attribute or a name that
# is not there, a call with the wrong types, an iterator run dry, a method left to write): the
# flow's code is wrong for this lfx and these packages, whatever the input.  A ValueError, a
# KeyError or an IndexError may be the probe's input text or a stub's echo (a value, not code);
# an OSError, an ImportError, a MemoryError or a timeout is this environment (no network, no
# file, no package, the sandbox's confinement): none of those is the flow's fault here.
_CODE_ERRORS = (AttributeError, NameError, TypeError, StopIteration, StopAsyncIteration, NotImplementedError)
_ENVIRONMENT = (OSError, ImportError, MemoryError, RecursionError, Timeout, KeyboardInterrupt, SystemExit)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps (lfx's ``RunError.original_exception``, then causes and contexts:
    a context a ``raise ... from None`` hid counts too), outermost first."""
    seen: list[BaseException] = []
    while exc is not None and len(seen) < 12 and all(exc is not s for s in seen):
        seen.append(exc)
        exc = getattr(exc, "original_exception", None) or exc.__cause__ or exc.__context__
    return seen


def _run_failure(exc: BaseException) -> dict:
    """Where and why a probe run failed, from lfx's own exception: the vertex whose build raised
    (the innermost frame of lfx's graph that runs a ``Vertex``: lfx wraps a node's error in
    ``ComponentBuildError`` from that frame), the innermost error, where it was raised (``node
    code``: the code lfx compiled from the node, ``"<string>"``; ``lfx``; or a library), and
    ``kind``: ``code`` when the innermost error is one of Python's code errors and nothing in the
    chain is the environment's, nor did the child try the network or meet a refusal; else
    ``environment``.  The kernel decides the verdict (``flows.probe_verdict``); this is the
    child's word on its own run, and the zygote's list of refusals is checked there too."""
    try:
        return _failure_of(exc)
    except Exception as err:  # never in the way of the run's answer: no node named, nothing judged
        return {"kind": "environment", "error": f"the failure could not be read ({type(err).__name__})"}


def _failure_of(exc: BaseException) -> dict:
    import os
    import traceback

    import lfx

    from ._shared import OBSERVED

    try:
        from lfx.graph.vertex.base import Vertex
    except ImportError:  # an lfx without it: no node to name
        Vertex = None
    chain = _chain(exc)
    root = chain[-1]
    vertex = None
    for err in chain:
        for frame, _ in traceback.walk_tb(err.__traceback__):
            this = frame.f_locals.get("self")
            if Vertex is not None and isinstance(this, Vertex):
                vertex = this
    frames = list(traceback.walk_tb(root.__traceback__))
    filename = frames[-1][0].f_code.co_filename if frames else ""
    lfx_dir = os.path.dirname(str(lfx.__file__)) + os.sep
    origin = "node code" if filename == "<string>" else "lfx" if filename.startswith(lfx_dir) else "a library"
    refused = bool(OBSERVED.get("network") or OBSERVED.get("refused") or OBSERVED.get("violations"))
    environment = refused or any(isinstance(e, _ENVIRONMENT) for e in chain)
    code = isinstance(root, _CODE_ERRORS) and not environment
    found = {
        "kind": "code" if code and vertex is not None else "environment",
        "error": error_text(root)[:1000],
        "origin": origin,
    }
    if vertex is not None:
        found.update(node_id=str(getattr(vertex, "id", ""))[:300], node=str(getattr(vertex, "display_name", ""))[:300])
    return found


def register(ops: dict, facts: dict) -> None:
    """Add ``probe_run`` and ``component_template`` to the worker's op registry."""

    def probe_run(req: dict) -> dict:
        import asyncio
        import json
        import time

        flow, text = req.get("flow"), str(req.get("input_text", ""))
        if not isinstance(flow, dict):
            return {"ok": False, "error": "The flow to run must be a Langflow flow JSON object."}
        deadline = time.monotonic() + float(req.get("timeout", 30))
        started = time.perf_counter()
        try:
            from lfx.run.base import RunError
            from lfx.run.base import run_flow as lfx_run_flow

            # Not asyncio.run: on a timeout it would wait for lfx's executor threads (a component
            # blocked in one never returns); this child answers and exits instead.
            loop = asyncio.new_event_loop()
            with Armed(deadline):
                out = loop.run_until_complete(
                    lfx_run_flow(
                        flow_json=json.dumps(flow),
                        input_value=text,
                        output_format="json",
                        check_variables=False,
                        check_dependencies=False,
                    )
                )
        except Timeout:
            return {"ok": False, "error": "The flow did not finish in time; its run was stopped."}
        except RunError as exc:
            return {"ok": False, "error": f"The flow failed: {exc}", "failure": _run_failure(exc)}
        except BaseException as exc:
            return {"ok": False, "error": f"The flow failed: {error_text(exc)}", "failure": _run_failure(exc)}
        seconds = round(time.perf_counter() - started, 3)
        if not isinstance(out, dict):
            return {"ok": False, "error": "lfx's runner returned no result.", "seconds": seconds}
        ok = bool(out.get("success", True))
        result = out.get("result")
        outputs = [{"component": str(out.get("component") or ""), "text": _text_of(result)}] if ok else []
        return {
            "ok": ok,
            "text": _text_of(result) if ok else None,
            "error": None if ok else f"The flow failed: {out.get('error') or out}",
            "outputs": outputs,
            "seconds": seconds,
        }

    def component_template(req: dict) -> dict:
        """The node template lfx builds for component code (what a flow's custom node carries).

        With ``methods`` (the output methods a flow's saved node will call), the answer lists
        those the built component does not have (``missing_methods``): lfx stops there when the
        node runs. A failed build says why when it is the environment, not the code: a package
        this interpreter lacks (``missing_package``), or a module gone from an installed one
        (``stale_import``: code written for another version)."""
        import time

        deadline = time.monotonic() + float(req.get("timeout", 10))
        return _built(str(req.get("code", "")), req.get("methods"), deadline, template=True)

    def component_verdicts(req: dict) -> dict:
        """lfx's verdict on each of ``builds`` (``{"code", "methods", "node"}``), loaded one after
        another in this child as lfx loads a flow's nodes (``_loaded``): ``ok`` and the
        ``missing_methods``, or the error and its environmental cause, as ``component_template``
        says them.  Each code has ``each`` seconds and all of them ``timeout``; a code the time
        left no room for gets no verdict (the answer's list stops before it).

        Codes that share a child share everything in it: one can write what this op answers for
        the others (a module it patched, the list below).  So the kernel asks for one code per
        request (``SandboxValidator.component_verdicts``), and keeps only such verdicts."""
        import time

        started = time.monotonic()
        deadline = started + float(req.get("timeout", 30))
        each = float(req.get("each", 10))
        verdicts = []
        for item in (req.get("builds") or [])[:200]:
            now = time.monotonic()
            if not isinstance(item, dict) or now >= deadline:
                break
            code, node = str(item.get("code", "")), item.get("node")
            verdicts.append(_loaded(code, item.get("methods"), node, min(deadline, now + each)))
        return {"ok": True, "verdicts": verdicts}

    ops["probe_run"] = probe_run
    ops["component_template"] = component_template
    ops["component_verdicts"] = component_verdicts


def _loaded(code: str, methods: object, node: object, deadline: float) -> dict:
    """What lfx does with a node's code when it loads a flow (``instantiate_class`` in
    ``lfx/interface/initialize/loading.py``): the code evaluated (``eval_custom_component_code``,
    with the class the node names: ``_component_class_name`` over the node's ``data``) and the
    class instantiated; then which of ``methods`` the instance lacks.  No node template is built:
    lfx's run builds none, and building one costs twice the load."""
    try:
        from lfx.custom.eval import eval_custom_component_code
        from lfx.interface.initialize.loading import _component_class_name
    except ImportError:  # an lfx without these: its template build says the same
        return _built(code, methods, deadline)
    class_name = None
    if isinstance(node, dict):
        vertex = SimpleNamespace(data=node, vertex_type=str(node.get("type") or ""))
        with contextlib.suppress(Exception):
            class_name = _component_class_name(vertex)
    try:
        with Armed(deadline):
            instance = eval_custom_component_code(code, class_name=class_name)(_code=code)
    except Timeout:
        return {"ok": False, "error": "Loading the component did not finish in time."}
    except BaseException as exc:
        return _failure(exc, code, deadline)
    retired = _retired(type(instance))
    if retired:
        return {"ok": False, "error": retired["message"], "retired": retired,
                "missing_methods": _lacking(instance, methods)}  # fmt: skip
    return {"ok": True, "missing_methods": _lacking(instance, methods)}


def _failure(exc: BaseException, code: str, deadline: float) -> dict:
    """A failed load or build, with the environment's share in it: a stale import first (lfx
    with every package installed would still stop there), else a missing package or provider."""
    import time

    try:  # the imports a stale check makes: the time left, and at least two seconds
        with Armed(max(deadline, time.monotonic() + 2)):
            stale = _stale_imports(code)
    except Timeout:
        stale = []
    if stale:
        first = {"stale_import": stale[0]["module"]}
        if stale[0].get("name"):
            first["stale_name"] = stale[0]["name"]
        return {"ok": False, "error": error_text(exc), **first}
    return {"ok": False, "error": error_text(exc), **_why(exc, code)}


# Components lfx 1.13 retired: saved code lfx recognises as its own shipped source
# (``lfx.custom.legacy_storage_compat``) loads as one of these import-only classes, whose build
# raises the error named here with the migration.  Mirrored from lfx (a drift test holds it).
RETIRED = {
    "lfx.components.chroma.chroma": "lfx.base.knowledge_bases.backends.chroma.ChromaMigrationRequiredError",
    "lfx.components.chroma.local_db": "lfx.base.knowledge_bases.backends.chroma.ChromaMigrationRequiredError",
}


def _retired(cls: type) -> dict | None:
    """lfx's own words when ``cls`` is a component it retired: its message and the migration."""
    error = RETIRED.get(getattr(cls, "__module__", ""))
    if error is None:
        return None
    import importlib

    module, _, name = error.rpartition(".")
    try:
        message = str(getattr(importlib.import_module(module), name)())
    except Exception:  # an lfx without it: its description says the same
        message = str(getattr(cls, "description", "") or "This component was retired.")
    return {"component": str(getattr(cls, "display_name", "") or cls.__name__), "message": message}


def _lacking(instance: object, methods: object) -> list[str]:
    asked = [m for m in methods if isinstance(m, str)] if isinstance(methods, list) else []
    return [m for m in asked if not callable(getattr(instance, m, None))]


def _built(code: str, methods: object, deadline: float, *, template: bool = False) -> dict:
    """lfx builds ``code`` by the ``deadline``: ``ok`` with the ``missing_methods`` of ``methods``
    (and the ``template`` if asked), or ``ok`` False with the error and its environmental cause."""
    try:
        with Armed(deadline):
            built, instance = build_custom_component_template(Component(_code=code))
    except Timeout:
        return {"ok": False, "error": "Building the component did not finish in time."}
    except BaseException as exc:
        return _failure(exc, code, deadline)
    if not isinstance(built, dict):
        return {"ok": False, "error": "lfx built no template for the component."}
    return {"ok": True, "missing_methods": _lacking(instance, methods), **({"template": built} if template else {})}
