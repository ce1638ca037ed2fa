"""The warm real runner: a zygote that imports lfx once and forks one confined child per real run.

Runs as a script (``python -I -u _runner.py CONFIG``) in the interpreter that validates
(``LFASSIST_VALIDATOR_PYTHON``, maybe one where lfassist_jupyter is not installed): stdlib, lfx and
modules of the validation worker's package, its siblings (``_channel``: the protocol channel;
``_confine``: the kernel layers; ``_serve``: killing a request's processes and removing its
files), loaded as the validation zygote loads them (with the ``artifacts/`` modules it binds).
``local_run.RealRunner`` starts it, under bubblewrap where possible, and keeps it warm.
Importing this file does nothing: ``main`` (the script's entry) sets everything up.

Why a zygote: a fresh interpreter per real run pays lfx's import (3-5 s); a fork of a warm one
pays milliseconds.  Why not the validation zygote: a real run is the user's explicit choice and
needs what a validation must never have -- the network (through the kernel's egress proxy) and
the variables the user allowed -- and none of the validation's audit hook; the two never share
a process.

One run, one child, forked ahead (a *spare*) and confined before anything of a run exists in it:

- its own process group, PR_SET_PDEATHSIG, none of the zygote's file descriptors but its own pipes
  (and the request pipe it will read its run from);
- its own user, network and mount namespaces: the network is a loopback of its own (the one way
  out is the proxy's Unix socket in the fence directory, which a forwarder serves on a loopback
  port); its scratch directory -- working directory, HOME and TMPDIR -- is a tmpfs of
  ``scratch_mb`` (when the namespaces are refused, the sandbox's bounded /tmp still holds);
- Landlock: it may read and execute only the interpreter, its packages and the system's
  libraries, read a few /etc files, its own /proc entry and the harmless devices, and write only
  its scratch directory; no signal and no abstract socket outside its own domain.

A run's request never passes through the zygote: the kernel sends a small header (id, timeout,
size) that the zygote reads, then the body (the flow, its input, the allowed variables), which
the waiting child reads itself from the same pipe, after its confinement.  So the zygote -- and
every child forked from it later -- never held a byte of any run's variables.  The child first
writes what confinement it got (before the run, so the run cannot forge it), then ``R`` once it
has read its body, then its answer.

After the answer or the deadline every process of the run is killed (the zygote is their
subreaper), the scratch directory removed, and the verdict sent: ``{"id", "status", "answer",
"log", "confinement", "elapsed_ms"}`` (``log``: the tail of what the run printed; the kernel
redacts everything).  The next spare is forked after that.
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
import signal
import socket
import sys
import threading
import time
from typing import Any

ANSWER_CAP = 1_000_000
LOG_TAIL = 8192
HEADER_CAP = 4096
BODY_CAP = 64 * 1024 * 1024
HERE = os.path.dirname(os.path.abspath(__file__))

# Set by ``_boot`` in the runner's process (never on import: importing this file does nothing).
CONFIG: dict = {}
send: Any = None  # the protocol channel (``_channel.open_channel``)
confine: Any = None  # ``_confine``: the kernel layers
reaper: Any = None  # ``_serve``: killing a run's processes and removing its files
lfx_run_flow: Any = None
STARTED = 0.0
ZYGOTE_PID = 0
ROOT = ""
SCRATCH_MB = 512


def _boot() -> None:
    """The channel, the worker package's modules by path (this script runs with ``-I``, maybe
    without our package), lfx: whatever fails is said once on the channel, and the runner exits."""
    global CONFIG, send, confine, reaper, lfx_run_flow, STARTED, ZYGOTE_PID, ROOT, SCRATCH_MB
    gc.disable()  # importing lfx allocates millions of objects: collect after the warm-up, not during it
    CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    spec = importlib.machinery.ModuleSpec("_lfassist_worker", None, is_package=True)
    spec.submodule_search_locations = [HERE]
    sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    channel = importlib.import_module("_lfassist_worker._channel")
    send = channel.open_channel()
    try:
        for name, path in (CONFIG.get("bound_modules") or {}).items():  # artifacts/policy.py, as the worker does
            channel.bind_module(name, path)
        importlib.import_module("_lfassist_worker._shared").configure(CONFIG)
        confine = importlib.import_module("_lfassist_worker._confine")
        STARTED = time.perf_counter()
        reaper = importlib.import_module("_lfassist_worker._serve")  # imports lfx too (the validation's warm names)
        from lfx.run.base import run_flow

        lfx_run_flow = run_flow
    except Exception as exc:  # lfx missing or broken, or our files incomplete: say so, once
        send({"op": "fatal", "error": f"{type(exc).__name__}: {exc}", "python": sys.executable})
        sys.exit(3)
    ZYGOTE_PID = os.getpid()
    ROOT = os.path.realpath(os.getcwd())  # the zygote's writable place: each run's scratch is a directory here
    if CONFIG.get("root") != ROOT:  # what it wipes is its working directory: never one it was not given
        send({"op": "fatal", "error": f"the runner must start in its own directory, not {ROOT}"})
        sys.exit(3)
    SCRATCH_MB = max(int(CONFIG.get("scratch_mb") or 512), 16)


CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS = 0x10000000, 0x40000000, 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
_ETC = ("/etc/ld.so.cache", "/etc/localtime", "/etc/mime.types", "/etc/ssl", "/etc/nsswitch.conf",
        "/etc/resolv.conf", "/etc/hosts", "/etc/gai.conf", "/etc/host.conf")  # fmt: skip
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# The model providers' SDKs and lfx's provider bundles, imported once here: a run's model node
# would otherwise import them afresh in every child (2-4 s), which is most of a real run's time.
PRELOAD = ("httpx", "openai", "anthropic", "langchain_openai", "langchain_anthropic", "langchain_ollama",
           "lfx_openai", "lfx_anthropic", "lfx_ollama", "lfx_openai_compatible")  # fmt: skip
_PROC = ("/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/loadavg", "/proc/sys/kernel/osrelease")


def _set_limits() -> None:
    confine.set_limit(resource.RLIMIT_CORE, 0, 0)
    if CONFIG.get("memory_mb"):
        memory = int(CONFIG["memory_mb"]) * 1024 * 1024
        confine.set_limit(resource.RLIMIT_AS, memory, memory)
    confine.set_limit(resource.RLIMIT_FSIZE, SCRATCH_MB << 20, SCRATCH_MB << 20)


# -- a child: confined ahead, then one run ---------------------------------------------------------------------------


def _namespaces(scratch: str) -> dict:
    """Own user, network and mount namespaces: a loopback of its own, and a tmpfs of SCRATCH_MB on
    ``scratch``. What the kernel refuses is reported (the run goes on without it), never silent."""
    import ctypes
    import fcntl
    import struct

    got = {"netns": False, "scratch": CONFIG.get("scratch_text") or f"files of at most {SCRATCH_MB} MB each"}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0:
            got["why"] = f"no namespaces of its own ({os.strerror(ctypes.get_errno())})"
            return got
        mapped = True
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            try:
                with open(f"/proc/self/{name}", "w") as fh:
                    fh.write(text)
            except OSError:
                mapped = False
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # bring its loopback up
            ifreq = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH14s", b"lo", 0, b""))
            flags = struct.unpack("16sH14s", ifreq)[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))
        got["netns"] = True
        if mapped and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
            opts = f"size={SCRATCH_MB}m,mode=0700".encode()
            if libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) == 0:
                got["scratch"] = f"{SCRATCH_MB} MB of its own"
    except Exception as exc:
        got["why"] = f"{type(exc).__name__}: {exc}"
    return got


def _landlock(scratch: str) -> int:
    """Read and execute the interpreter and the system, read a few files, write only ``scratch``."""
    abi = confine.landlock_abi()
    if not abi:
        return 0
    writes = confine.landlock_writes(abi)
    read, run = confine.LL_READ, confine.LL_READ | confine.LL_EXECUTE
    rules = [(p, run) for p in (*_SYSTEM, *CONFIG.get("read", []))]
    rules += [(p, read) for p in (*_ETC, *_PROC, f"/proc/{os.getpid()}")]
    rules += [(p, read | writes) for p in _DEVICES]
    rules += [(scratch, read | writes)]
    confine.restrict_paths(abi, rules, read | confine.LL_EXECUTE | writes)
    return abi


def _read_exactly(fd: int, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _child(go_r: int, answer_w: int, log_w: int, scratch: str) -> None:
    """A spare: confine itself, wait for its run, read it, run it, answer, exit. Never returns."""
    answer: dict = {"ok": False, "text": "", "error": "the runner could not start the run."}
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != ZYGOTE_PID:
            os._exit(70)
        os.dup2(log_w, 1)
        os.dup2(log_w, 2)
        low = 3
        for fd in sorted((go_r, answer_w)):  # everything else goes: the zygote's channel, other pipes
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)
        facts = _namespaces(scratch)
        os.chdir(scratch)
        os.makedirs("home", exist_ok=True)
        facts["landlock"] = _landlock(scratch)
        os.write(answer_w, json.dumps(facts).encode() + b"\n")
        go = os.read(go_r, 64)
        if not go:
            os._exit(0)  # no run for this spare (the runner stops)
        body = _read_exactly(0, int(go))
        os.write(answer_w, b"R")  # the body is read: the request channel is the zygote's again
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        answer = _run(json.loads(body), scratch)
    except BaseException as exc:  # reported, never a traceback in the user's notebook
        answer = {"ok": False, "text": "", "error": f"{type(exc).__name__}: {exc}"}
    with contextlib.suppress(BaseException):
        data = memoryview(json.dumps(answer, default=str).encode()[:ANSWER_CAP])
        while data:
            data = data[os.write(answer_w, data) :]
    os._exit(0)  # not waiting for threads a component left behind (lfx's executor, a stuck call)


def forward_to(socket_path: str) -> int:
    """Listen on 127.0.0.1 (the run's own loopback) and pipe each connection to ``socket_path``.

    The forwarding is a process of its own, forked before the run's code exists: the run itself
    then opens no Unix socket (``confine.deny_unix_sockets``), and cannot make the forwarder open
    one elsewhere either (another process, non-dumpable, out of its ptrace's reach)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    port = server.getsockname()[1]
    if os.fork() != 0:
        server.close()
        return port
    # pragma: no cover - the forwarder: serves until the run's processes are killed
    try:
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        confine.prctl(confine.PR_SET_DUMPABLE, 0)

        def pump(src: socket.socket, dst: socket.socket, done: list[int], lock: threading.Lock) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            with lock:
                done.append(1)
                last = len(done) == 2
            if last:  # both directions finished
                src.close()
                dst.close()

        while True:
            client, _ = server.accept()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError:
                client.close()
                upstream.close()
                continue
            done: list[int] = []
            lock = threading.Lock()
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pump, args=(a, b, done, lock), daemon=True).start()
    finally:
        os._exit(0)


def _run(request: dict, scratch: str) -> dict:
    """One flow through lfx's own runner, with only the request's variables and the proxy's network."""
    import asyncio
    import tempfile

    os.environ["HOME"] = os.path.join(scratch, "home")
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = None
    os.environ.update({str(k): str(v) for k, v in (request.get("env") or {}).items()})  # the allowed ones only
    if request.get("proxy"):
        url = f"http://127.0.0.1:{forward_to(str(request['proxy']))}"
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            os.environ[name] = os.environ[name.lower()] = url
        for name in ("NO_PROXY", "no_proxy"):
            os.environ.pop(name, None)
    # The proxy is the one way out: no Unix socket of the host (which a path reaches from any
    # network namespace) either -- the forwarder, forked above, keeps the one to the proxy.
    confine.deny_unix_sockets()
    gc.enable()
    # Not asyncio.run: it would wait for lfx's executor threads (a component blocked in one never
    # returns); the child answers and exits instead.
    loop = asyncio.new_event_loop()
    out = loop.run_until_complete(
        lfx_run_flow(
            flow_json=json.dumps(request["flow"]),
            input_value=str(request.get("input", "")),
            output_format="json",
            check_variables=True,
            check_dependencies=True,
        )
    )
    ok = bool(out.get("success", True))
    return {
        "ok": ok,
        "text": str(out.get("result", ""))[:200_000] if ok else "",
        "component": str(out.get("component") or "")[:200] or None,
        "error": None if ok else str(out.get("error") or out)[:20_000],
    }


# -- the zygote ------------------------------------------------------------------------------------------------------


class Spare:
    """A child forked ahead of its run, confined, waiting for its go."""

    count = 0

    def __init__(self) -> None:
        Spare.count += 1
        self.scratch = os.path.join(ROOT, f"run-{Spare.count}")
        os.makedirs(self.scratch, mode=0o700, exist_ok=True)
        go_r, self.go_w = os.pipe()
        self.answer_r, answer_w = os.pipe()
        self.log_r, log_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child never returns
            _child(go_r, answer_w, log_w, self.scratch)
        for fd in (go_r, answer_w, log_w):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(self.pid, self.pid)


def _read_header() -> dict | None:
    """The next run's header line, read a byte at a time (the body after it is the child's)."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            return None
        line += byte
        if len(line) > HEADER_CAP:
            raise ValueError("an oversized header")
    header = json.loads(line)
    if not isinstance(header, dict) or not isinstance(header.get("size"), int) or not 0 < header["size"] <= BODY_CAP:
        raise ValueError("a malformed header")
    return header


def serve(header: dict, spare: Spare) -> dict:
    """Hand the run to ``spare``; its verdict once it answered, died or ran out of time."""
    timeout = min(max(float(header.get("timeout", 300)), 0.1), 24 * 3600.0)
    t0 = time.monotonic()
    try:
        os.write(spare.go_w, f"{header['size']}\n".encode())
    except OSError:  # the spare died before its run: its body stays in the pipe
        return {"status": "crashed", "detail": "the run's process died before it started", "desync": True}
    finally:
        os.close(spare.go_w)
    buf, log = bytearray(), bytearray()
    watch = [spare.answer_r, spare.log_r]
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(spare.pid)
        watch.append(pidfd)
    status, verdict = None, None
    while spare.answer_r in watch:
        remaining = t0 + timeout - time.monotonic()
        if remaining <= 0:
            verdict = "timeout"
            break
        readable, _, _ = select.select(watch, [], [], min(remaining, 0.05 if pidfd is None else remaining))
        for fd in readable:
            if fd == pidfd:
                watch.remove(pidfd)
                continue
            chunk = os.read(fd, 1 << 16)
            if fd == spare.answer_r:
                if not chunk:
                    watch.remove(fd)
                buf += chunk
                if len(buf) > ANSWER_CAP + 4096:
                    verdict = "oversized"
            elif not chunk:
                watch.remove(fd)
            else:
                log = (log + chunk)[-LOG_TAIL:]
        if verdict:
            break
        if (pidfd is not None and pidfd not in watch) or (pidfd is None and _exited(spare)):
            # The child is gone: what is left in its pipe is all there will be.
            os.set_blocking(spare.answer_r, False)
            with contextlib.suppress(BlockingIOError, OSError):
                while chunk := os.read(spare.answer_r, 1 << 16):
                    buf += chunk
            break
    with contextlib.suppress(ChildProcessError):
        pid, st = os.waitpid(spare.pid, os.WNOHANG)
        status = st if pid else status
    reaper.kill_subtree(spare.pid)  # every process of the run, before the verdict leaves
    for fd in (spare.answer_r, spare.log_r, pidfd):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    reaper.clear(spare.scratch)
    with contextlib.suppress(OSError):
        os.rmdir(spare.scratch)
    facts_line, _, rest = bytes(buf).partition(b"\n")
    acked = rest[:1] == b"R"
    result: dict = {"elapsed_ms": round((time.monotonic() - t0) * 1000, 1), "log": log.decode("utf-8", "replace")}
    with contextlib.suppress(ValueError):
        result["confinement"] = json.loads(facts_line)
    if not acked:
        result["desync"] = True  # the body may still be in the pipe: this runner cannot read the next header
    if verdict:
        return {**result, "status": verdict}
    try:
        answer = json.loads(rest[1:]) if acked else None
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        return {**result, "status": "ok", "answer": answer}
    if status is not None and (not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0):
        return {**result, "status": "crashed", "detail": _status_text(status)}
    return {**result, "status": "malformed", "detail": "no answer" if not rest[1:] else "not one JSON object"}


def _exited(spare: Spare) -> bool:
    with contextlib.suppress(ChildProcessError):
        return os.waitpid(spare.pid, os.WNOHANG)[0] != 0
    return True


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        with contextlib.suppress(ValueError):
            return signal.Signals(os.WTERMSIG(status)).name
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


_WARM_OPENAI = {"id": "w", "object": "chat.completion", "created": 0, "model": "warm-up",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
_WARM_CHUNK = {"id": "w", "object": "chat.completion.chunk", "created": 0, "model": "warm-up",
               "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]}  # fmt: skip
_WARM_ANTHROPIC = {"id": "w", "type": "message", "role": "assistant", "model": "warm-up", "stop_reason": "end_turn",
                   "content": [{"type": "text", "text": "ok"}], "stop_sequence": None,
                   "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip


def _warm_models() -> list[str]:
    """One call of each provider SDK (and of langchain's chat models on them) against an in-memory
    transport -- no network, no key, no thread left: what a model node pays the first time (lazy
    modules, response models' validators, the client's set-up) is paid once here, not in every run."""
    import asyncio

    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/messages"):
            return httpx.Response(200, json=_WARM_ANTHROPIC)
        if b'"stream": true' in request.content or b'"stream":true' in request.content:
            body = f"data: {json.dumps(_WARM_CHUNK)}\n\ndata: [DONE]\n\n"
            return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=_WARM_OPENAI)

    sync, asynchronous = httpx.Client(transport=httpx.MockTransport(answer)), None
    asynchronous = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    base, warmed = "http://warm-up.invalid/v1", []
    loop = asyncio.new_event_loop()
    steps = {
        "openai": lambda: __import__("openai").OpenAI(api_key="w", base_url=base, http_client=sync),
        "anthropic": lambda: __import__("anthropic").Anthropic(api_key="w", base_url=base, http_client=sync),
    }
    for name, make in steps.items():
        with contextlib.suppress(Exception):
            client = make()
            hi = [{"role": "user", "content": "hi"}]
            if name == "openai":
                client.chat.completions.create(model="w", messages=hi)
                list(client.chat.completions.create(model="w", messages=hi, stream=True))
            else:
                client.messages.create(model="w", max_tokens=1, messages=hi)
            warmed.append(name)
    with contextlib.suppress(Exception):
        from langchain_openai import ChatOpenAI

        chat = ChatOpenAI(model="w", api_key="w", base_url=base, http_client=sync, http_async_client=asynchronous)
        chat.invoke("hi")
        loop.run_until_complete(chat.ainvoke("hi"))
        warmed.append("langchain_openai")
    with contextlib.suppress(Exception):
        from langchain_anthropic import ChatAnthropic

        chat = ChatAnthropic(model="w", api_key="w", base_url=base.removesuffix("/v1"), max_tokens=1)
        chat._client._client = sync  # no such host: the in-memory transport answers instead
        chat.invoke("hi")
        warmed.append("langchain_anthropic")
    with contextlib.suppress(Exception):
        loop.run_until_complete(asynchronous.aclose())
        loop.run_until_complete(loop.shutdown_default_executor())  # no thread may outlive the warm-up
    loop.close()
    sync.close()
    return warmed


def _lfx_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("lfx")
    except Exception:
        return None


def _warm_up() -> dict:
    t0 = time.perf_counter()
    with contextlib.suppress(Exception):
        from lfx.services.deps import get_settings_service

        get_settings_service()
    preloaded = []
    for name in PRELOAD:  # what is not installed is simply not preloaded
        with contextlib.suppress(Exception):
            importlib.import_module(name)
            preloaded.append(name)
    warmed = _warm_models()
    confine.prctl(confine.PR_SET_DUMPABLE, 0)  # a child cannot open our /proc/<pid>/mem or fds
    subreaper = confine.prctl(confine.PR_SET_CHILD_SUBREAPER, 1)
    reaper.clear(ROOT)  # what the warm-up wrote (never entering the read-only binds)
    return {
        "op": "ready",
        "lfx_version": _lfx_version(),
        "pid": os.getpid(),
        "import_ms": round((t0 - STARTED) * 1000),
        "warmup_ms": round((time.perf_counter() - t0) * 1000),
        "subreaper": subreaper,
        "preloaded": preloaded,
        "warmed": warmed,
        "threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None,
    }


def main() -> None:
    _boot()
    _set_limits()
    ready = _warm_up()
    gc.freeze()
    gc.enable()
    send(ready)
    spare: Spare | None = Spare()
    while True:
        try:
            header = _read_header()
        except ValueError as exc:
            send({"id": None, "status": "malformed", "detail": str(exc), "desync": True})
            break
        if header is None:
            break
        spare = spare or Spare()
        try:
            out = serve(header, spare)
        except Exception as exc:  # the zygote's own failure: report it; the kernel starts a new runner
            out = {"status": "crashed", "detail": f"runner: {type(exc).__name__}: {exc}", "desync": True}
        send({**out, "id": header.get("id")})
        spare = None
        if out.get("desync"):
            break
        spare = Spare()
    if spare is not None:
        reaper.kill_subtree(spare.pid)


if __name__ == "__main__":
    main()
