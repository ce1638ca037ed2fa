"""The validation worker: a zygote that imports lfx once and forks one child per request.

This file runs as a *script* (``python -I _worker.py CONFIG``) in a configurable
interpreter, possibly one where lfassist_jupyter is not installed, so it imports only
the standard library and lfx.  On Linux the parent starts it inside bubblewrap (new user,
PID, network, IPC, UTS and mount namespaces; see ``_isolation.py``); elsewhere it runs
with the same code and only the in-process layers below ("reduced isolation").

Why a zygote: importing lfx costs seconds, forking a warm interpreter costs milliseconds.
Why a child per request: nothing generated code does (threads, detached children, patched
modules, a poisoned protocol channel, files in the scratch directory) outlives its request.
Why a forker: the children are forked by a copy of the warm zygote that no request ever
touched (``_serve._Forker``), never by the zygote itself, which reads every request's header
and every answer: nothing of one request is in the memory the next one starts from.

The protocol: from the parent on stdin, a JSON header line (``op``, ``id``, ``timeout``,
``size``) then ``size`` bytes of the request's JSON, which the zygote hands to the child
unread and then wipes (the spare forked next inherits nothing of it); answers on a private
copy of stdout.  For each request the zygote forks a child that

- closes stdin and the zygote's channel, so it cannot read other requests nor forge
  their answers; it reports on a socket of its own: each refusal of the audit hook as it
  happens, then its single answer, sent by a thread of its own with a secret nothing else holds
  (``_hook.py``); the zygote reads it with a size cap, checks the answer's secret and answers
  (and records) every system call the kernel refuses the child (see ``_serve._Exchange``);
- arms the audit hook for its whole life (nothing it decides with can be changed: its state is
  frozen into its functions' defaults; there is no way to remove an audit hook);
- gets its fds 1 and 2 on a pipe the zygote drains and discards past a cap (a 100 MB
  print neither blocks nor fills a log that would poison the next request);
- runs in its own process group, with PR_SET_PDEATHSIG so it dies with the zygote;
- confines itself before anything of a request runs (Linux): a
  seccomp filter (it can signal only itself: not the zygote, nor any other process; it makes
  no socket and runs no program, C code included; it cannot close, replace or block its report
  channel; each refusal is notified to the zygote) and Landlock (it can write only in its
  scratch directory, through ``open``, sqlite or any C library alike; see ``_confine.py``).

The zygote is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the child forks, even
a detached double-forked daemon, is re-parented to the zygote when its parent dies.  After
the answer (or the deadline) the zygote SIGKILLs the child's whole subtree -- found by a
/proc scan of its own descendants, repeated until every one of them is inside its exit --
before the answer leaves; it removes what the request wrote (its scratch directory under
Landlock; else all of the writable directory, never entering the interpreter's read-only
binds) before it forks the next spare and reads the next request, and reaps the dead later.
So when the parent sees an answer, nothing of that request can run another instruction, and
the next request finds none of its files.  The zygote is non-dumpable (PR_SET_DUMPABLE 0): a
child cannot open its /proc/<pid>/mem or fds.  Its heap is backed by 2 MB pages where the
kernel allows (``_serve.huge_pages``): a fork copies one page-table entry where it copied 512.

The script is the zygote's entry point and its request loop; the rest lives in sibling
modules of one package, loaded from this directory (``_sibling``) in the zygote before the
first fork, so every child inherits them and imports nothing more:

- ``_shared``: configuration, one request's observations, the op registries, the timeout;
- ``_confine``: rlimits, prctl, and a child's seccomp + Landlock layers;
- ``_hook`` (with ``policy``, the deny list the security scan reads too): the audit hook;
- ``policy`` and ``flow`` are not in this directory: they are ``artifacts/policy.py`` and
  ``artifacts/flow.py``, stdlib-only modules the kernel reads too, bound read-only into the
  sandbox and loaded into this package from the paths the config names (``_bound``);
- ``_lfx``: lfx itself, imported once, and the warm-up;
- ``_validate`` (with ``_checks``, ``_smoke``, ``_packages``): the ``validate`` op;
- ``_reference``: the facts about lfx sent with "ready";
- ``_serve``: the fork server (the forker, spare children, answers and the kernel's refusals, kill and wipe).

Ops: ``OPS`` maps an op name to ``fn(request) -> dict`` run in a fresh child.  Op modules
listed in the config's ``op_modules`` (stdlib + lfx only: ``_run_component.py``,
``_probe_run.py``, ``_flow_ops.py``) are imported in the zygote before the first fork and
register more ops with ``register(OPS, FACTS)``; the parent binds this directory read-only
into the sandbox.  ``reference`` is computed in the zygote before any generated code ever
ran and sent with the "ready" message.  An op module may also put *facts* in ``FACTS``
(e.g. ``_flow_ops.py``'s ``flow_catalog``, lfx's bundled component catalogue): answers the
zygote computes (once, on first use) and sends itself when asked -- no child, no request's
code involved.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.machinery
import importlib.util
import json
import os
import resource
import select
import sys
import time
import types
from typing import Any

# -- siblings ----------------------------------------------------------------------------
#
# This script runs with ``-I`` (its directory is not on sys.path) where lfassist_jupyter may
# not be installed: its siblings are the submodules of a package made here, whose only path
# is this script's directory, which the parent binds read-only into the sandbox.  So they
# import each other by name (``from ._shared import Armed``), as they read in the source tree,
# and sys.path stays as ``-I`` makes it (generated code's ``import policy`` finds no file of
# ours).  Generated code can reach them in sys.modules, as it always could reach ``__main__``:
# nothing in them is a switch of the hook, whose state is bound in closures when a child starts.
#
# Everything below happens in ``_boot``, called by ``main``: importing this file does nothing.

_HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "_lfassist_worker"
send: Any = None  # the protocol channel (``_channel.open_channel``)
shared: Any = None  # the sibling modules, once loaded
confinement: Any = None
lfx: Any = None
validation: Any = None
facts_about_lfx: Any = None
server: Any = None
CONFIG: dict = {}
OPS: dict = {}
FACTS: dict = {}
STARTED = 0.0


def _sibling(name: str) -> types.ModuleType:
    """The sibling module ``name``.py of this script, imported once (as ``_lfassist_worker.<name>``)."""
    return importlib.import_module(f"{PACKAGE}.{name}")


def _bound(name: str) -> types.ModuleType:
    """A module the kernel shares with the worker (``artifacts/flow.py``, ``artifacts/policy.py``),
    loaded from the file the config names -- bound read-only into the sandbox -- as the package's
    ``_lfassist_worker.<name>`` (``_channel.bind_module``)."""
    return _sibling("_channel").bind_module(name, CONFIG.get("bound_modules", {})[name])


def _fatal(what: str, exc: BaseException, **extra: object) -> None:
    """The worker cannot serve (its own files, or lfx): say why, once, and exit."""
    send({"op": "fatal", "error": f"{what}{type(exc).__name__}: {exc}", **extra})
    sys.exit(3)


def _op_ping(req: dict) -> dict:
    return {"pong": True, "pid": os.getpid()}


def _boot() -> None:
    """The zygote's set-up, in order: the channel, the confinement (while still single-threaded),
    the audit hook, lfx and the ops; a failure is said once on the channel and the worker exits."""
    global send, shared, confinement, lfx, validation, facts_about_lfx, server, CONFIG, OPS, FACTS, STARTED
    # Importing lfx allocates millions of objects; collecting while importing is wasted work
    # (~15% of the start-up here).  Re-enabled after the warm-up, with the warm heap frozen.
    gc.disable()
    spec = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [_HERE]
    sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
    send = _sibling("_channel").open_channel()

    # -- confinement (``_confine.py``): limits, prctl, seccomp, Landlock -------------------
    try:
        shared = _sibling("_shared")
        shared.configure(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
        confinement = _sibling("_confine")
    except Exception as exc:  # the worker's own files are incomplete: nothing can be confined
        _fatal("the confinement could not be loaded: ", exc)
    CONFIG = shared.CONFIG

    # Before anything else (the zygote must still be single-threaded): the only writable place,
    # remounted noexec in a private user and mount namespace; no file a request writes can be
    # mapped executable or run.
    confinement.CONFINE["noexec"] = CONFIG.get("noexec") is not False and confinement.noexec(shared.SANDBOX_DIR)

    confinement.set_limit(resource.RLIMIT_CORE, 0, 0)
    if CONFIG.get("memory_mb"):
        mem = int(CONFIG["memory_mb"]) * 1024 * 1024
        confinement.set_limit(resource.RLIMIT_AS, mem, mem)
    confinement.set_limit(resource.RLIMIT_FSIZE, 64 * 1024 * 1024, 64 * 1024 * 1024)

    # -- the audit hook (``_hook.py``), whose tables are the deny list of ``policy.py`` ----
    try:  # the deny list the security scan reads too (artifacts/policy.py, bound next to this directory)
        _bound("policy")
        _bound("flow")  # flow facts (artifacts/flow.py): the flow ops' rules and repairs
        _sibling("_hook")
    except Exception as exc:  # the worker's own files are incomplete: nothing can be validated safely
        _fatal("the deny list could not be loaded: ", exc)

    # -- lfx, and everything that uses it --------------------------------------------------
    STARTED = time.perf_counter()
    try:
        lfx = _sibling("_lfx")
        validation = _sibling("_validate")
        facts_about_lfx = _sibling("_reference")
        server = _sibling("_serve")
    except Exception as exc:
        _fatal("", exc, python=sys.executable)

    # -- ops ---------------------------------------------------------------------------------
    OPS, FACTS = shared.OPS, shared.FACTS
    OPS.update(validate=validation.op_validate, ping=_op_ping)
    FACTS["lfx_names"] = facts_about_lfx.names  # where lfx keeps each name: computed on first use


def _load_op_modules() -> list[str]:
    """Import each module of ``CONFIG["op_modules"]`` in the package and let it register its ops."""
    errors = []
    for path in CONFIG.get("op_modules", []):
        try:
            name = f"{PACKAGE}.{os.path.splitext(os.path.basename(path))[0]}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[name] = module
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            module.register(OPS, FACTS)
        except Exception as exc:
            errors.append(f"{os.path.basename(path)}: {type(exc).__name__}: {exc}")
    return errors


# -- the zygote ----------------------------------------------------------------------------


def _answer_fact(req: dict) -> None:
    """A trusted fact: the zygote answers itself, no child involved (computed once, on first use)."""
    try:
        if callable(FACTS[req["op"]]):
            FACTS[req["op"]] = FACTS[req["op"]]()
        send({"id": req.get("id"), "status": "ok", "answer": FACTS[req["op"]]})
    except Exception as exc:
        send({"id": req.get("id"), "status": "crashed", "detail": f"zygote: {type(exc).__name__}: {exc}"})


class _Requests:
    """The parent's requests on stdin, read into buffers the zygote wipes: a header line, then
    the body, which only the child parses.  Nothing of a request outlives its hand-over."""

    HEADER_CAP = 4096

    def __init__(self) -> None:
        self.raw = open(0, "rb", buffering=0, closefd=False)  # noqa: SIM115 - fd 0 for the zygote's life
        self.pending = bytearray()

    def _more(self) -> bool:
        chunk = bytearray(1 << 16)
        n = self.raw.readinto(chunk)
        if not n:
            return False
        self.pending += memoryview(chunk)[:n]
        chunk[:n] = bytes(n)
        return True

    def _take(self, n: int) -> bytes:
        out = bytes(self.pending[:n])
        self.pending[:n] = bytes(n)
        del self.pending[:n]
        return out

    def header(self) -> dict | None:
        """The next header (None at the end of stdin); a line that is not one is skipped."""
        while True:
            newline = self.pending.find(b"\n")
            while newline < 0:
                if len(self.pending) > self.HEADER_CAP:
                    self._take(len(self.pending))  # not our protocol: drop it
                if not self._more():
                    return None
                newline = self.pending.find(b"\n")
            line = self._take(newline + 1)
            try:
                header = json.loads(line)
            except ValueError:
                continue
            if isinstance(header, dict):
                return header

    def body(self, size: int) -> bytearray:
        """Exactly ``size`` bytes (fewer at the end of stdin)."""
        body = bytearray(size)
        have = min(size, len(self.pending))
        body[:have] = self.pending[:have]
        self._take(have)
        view = memoryview(body)[have:]
        while view:
            n = self.raw.readinto(view)
            if not n:
                break
            view = view[n:]
        del view
        return body


def _serve_forever(requests: _Requests) -> None:
    """Each request to a fresh child (or, for a fact, answered here); between two requests the
    zygote holds nothing of either: every name bound to one is dropped before the next fork.

    The next request's child is forked once the answer has left and the request's processes
    are killed and its files wiped: the fork (milliseconds of the kernel copying the zygote's
    page tables) and the child's set-up then never compete with a request for the CPU, and
    while a notebook waits for a model the spare also warms itself up (``_serve._child``).
    After a quarter of a second with no request, the zygote's heap goes back to 2 MB pages."""
    spare = server.new_spare()
    served_since_huge = 0
    while True:
        if (
            not server.FORKER
            and served_since_huge >= 8
            and not requests.pending
            and not select.select([requests.raw], [], [], 0.25)[0]
        ):
            # Spares forked here (no forker): a quarter of a second without a request, and the
            # zygote's own writes while serving split some of its 2 MB pages back into 4 KB ones;
            # merge them again (milliseconds).  The forker's memory does not change.
            server.huge_pages()
            served_since_huge = 0
        header = requests.header()
        if header is None or header.get("op") == "exit":
            break
        size = header.get("size")
        body = requests.body(size if isinstance(size, int) and 0 <= size <= 256 * 1024 * 1024 else 0)
        if header.get("op") in FACTS:
            body[:] = bytes(len(body))
            _answer_fact(header)
            continue
        rid = header.get("id")
        try:
            child, t0, timeout = server.hand_over(header, body, spare)
            del body, header, spare  # the request is with its child: nothing of it is live here
            out = server.verdict(child, t0, timeout)
            del child
        except Exception as exc:  # the zygote's own failure (e.g. fork refused): report it, keep serving
            out = {"status": "crashed", "detail": f"zygote: {type(exc).__name__}: {exc}"}
            if "body" in locals():
                body[:] = bytes(len(body))
            if isinstance(exc, server.ForkerGone):  # no clean spare can be made: the kernel starts afresh
                send({**out, "id": rid})
                break
        out["id"] = rid
        send(out)
        del out
        while server.CLEANUP:
            server.CLEANUP.pop()()
        served_since_huge += 1
        spare = server.new_spare()  # ... when the next request's child is forked
    if spare is not None:
        server.kill_subtree(spare.pid)


def _warm_up() -> dict:
    """Everything paid once before "ready": the first build, lfx's services, the op modules,
    the reference, the prctl settings and the confinement probe; the "ready" message's facts."""
    t0 = time.perf_counter()
    # The first build costs ~1 s; pay it now.  A failure here shows up in the first real request.
    with contextlib.suppress(Exception):
        lfx.build_custom_component_template(lfx.Component(_code=lfx.WARMUP))
    lfx.prepare_lfx()  # lfx's settings service (~0.3 s), created before any component code is armed
    op_errors = _load_op_modules()
    try:  # computed here, before any generated code ever ran in this interpreter
        ref: dict | None = facts_about_lfx.reference()
    except Exception:
        ref = None
    confinement.prctl(confinement.PR_SET_DUMPABLE, 0)  # children cannot open our /proc/<pid>/mem, fd/ or ptrace us
    subreaper = confinement.prctl(confinement.PR_SET_CHILD_SUBREAPER, 1)
    probe = os.path.join(server.ROOT, "confinement-probe")
    os.makedirs(os.path.join(probe, "in"), exist_ok=True)
    confinement.CONFINE.update(confinement.confinement(probe))  # seccomp, Landlock (noexec is set already)
    if CONFIG.get("landlock") is False:
        confinement.CONFINE["landlock"] = 0
    if confinement.CONFINE["landlock"] and CONFIG.get("deny_read"):
        # The reduced sandbox: its hook refuses reads of HOME and the notebook's folder to Python
        # code; Landlock refuses them to C code too (readline's history reader, native parsers).
        confinement.CONFINE["reads"] = confinement.read_grants(CONFIG["deny_read"], server.TRUSTED)
    server.clear(server.ROOT)  # what the warm-up wrote (never entering the read-only binds)
    os.makedirs(server.HOME, exist_ok=True)
    return {
        "op": "ready",
        "lfx_version": lfx.LFX_VERSION,
        "python": sys.executable,
        "pid": os.getpid(),
        "import_ms": round((t0 - STARTED) * 1000),
        "warmup_ms": round((time.perf_counter() - t0) * 1000),
        "subreaper": subreaper,
        "confinement": dict(confinement.CONFINE),
        "ops": sorted(OPS),
        "op_errors": op_errors,
        "reference": ref,
    }


def main() -> None:
    _boot()
    ready = _warm_up()
    gc.freeze()  # the imported world is permanent: keep it out of every later collection
    gc.enable()
    ready["huge_pages_mb"] = server.huge_pages()  # fewer page-table entries for every fork to copy
    # The spares' parent from now on: a copy of this warm interpreter that no request will touch.
    ready["forker"] = server.start_forker()
    send(ready)
    _serve_forever(_Requests())


if __name__ == "__main__":
    main()
