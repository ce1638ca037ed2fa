"""The warm real runner: a zygote that imports lfx once and forks one confined child per real run.

Runs as a script (``python -I -u _runner.py CONFIG``) in the interpreter that validates
(``LFASSIST_VALIDATOR_PYTHON``, maybe one where lfassist_jupyter is not installed): stdlib, lfx and
modules of the validation worker's package, its siblings (``_channel``: the protocol channel and
the process tree; ``_confine``: the kernel layers; ``_serve``: removing a run's files), loaded as
the validation zygote loads them (with the ``artifacts/`` modules it binds).
``local_run.RealRunner`` starts it, under bubblewrap where possible, and keeps it warm.
Importing this file does nothing: ``main`` (the script's entry) sets everything up.

Why a zygote: a fresh interpreter per real run pays lfx's import (3-5 s); a fork of a warm one
pays milliseconds.  Why not the validation zygote: a real run is the user's explicit choice and
needs what a validation must never have -- the network (through the kernel's egress proxy) and
the variables the user allowed -- and none of the validation's audit hook; the two never share
a process.

Two processes serve, so that no run's bytes reach a later run:

- the *zygote* imports lfx, warms up, and from then on only forks: spares, on the server's word,
  and ends them (kills their processes, removes their files).  It never reads a request, an
  answer or a log: every spare is forked from a state no run touched;
- the *server*, forked once from the zygote before any run, speaks to the kernel (headers on
  stdin, verdicts on stdout) and to each run's processes (its go, its answer, its log).  Nothing
  is ever forked from it: what runs leave in its heap stays there.

They talk over a socket pair (``spare`` -> ``spare <pid>`` with the spare's pipes attached;
``end`` -> ``ended``), words that carry nothing of a run.

One run, one spare, forked ahead and confined before anything of a run exists in it:

- the spare (its *outer* process): its own process group, PR_SET_PDEATHSIG, none of the zygote's
  file descriptors but its own pipes (and the request pipe its run will read from); it makes the
  run's namespaces -- user, network, mount, IPC and PID -- then forks the run's *init*, the
  first process of the new PID namespace, and waits for it.  Killing the spare kills the init
  (PR_SET_PDEATHSIG), and the kernel then kills every process of the namespace: nothing of a run
  outlives it, however fast it forks.  The network is a loopback of its own (the one way out is
  the proxy's Unix socket in the fence directory, which a forwarder serves on a loopback port);
  the scratch directory -- working directory, HOME and TMPDIR -- is a tmpfs of ``scratch_mb``
  (when the namespaces are refused, the sandbox's bounded /tmp still holds); System V IPC and
  POSIX message queues are the namespace's own;
- the init: Landlock (it may read and execute only the interpreter, its packages and the
  system's libraries, read a few /etc files, its own /proc entry and the harmless devices, and
  write only its scratch directory; no signal and no abstract socket outside its own domain),
  then the validation's seccomp filter, rule for rule (``_confine.SECCOMP_RULES``: no System V
  or POSIX IPC, no new namespace or mount, no signal, priority, scheduling, affinity or limit
  change aimed at another process, no ptrace...);
- its bounds: the kernel puts both processes in a cgroup of their own where the machine offers
  one (``sandbox/_cgroups.py``: processes and memory of the whole run); where not, RLIMIT_NPROC,
  set inside the run's user namespace (it counts that namespace's processes only), and
  RLIMIT_AS per process -- the run's answer says which.

A run's request never passes through the zygote: the kernel sends a small header (id, timeout,
size) that the server reads, then the body (the flow, its input, the allowed variables), which
the waiting init reads itself from the same pipe, after its confinement.  The init first writes
what confinement it got (before the run, so the run cannot forge it; the server announces the
spare to the kernel with it), then ``R`` once it has read its body, then its answer.

After the answer or the deadline the zygote ends the run -- its spare killed, every process left
below the zygote killed until none can run another instruction, its scratch directory removed --
and the server sends the verdict: ``{"id", "status", "answer", "log", "confinement",
"elapsed_ms"}`` (``log``: the tail of what the run printed; the kernel redacts everything).  The
next spare is forked after that.
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
FACTS_CAP = 4096
HERE = os.path.dirname(os.path.abspath(__file__))

# Set by ``_boot`` in the runner's process (never on import: importing this file does nothing).
CONFIG: dict = {}
send: Any = None  # the protocol channel (``_channel.open_channel``)
channel: Any = None  # ``_channel``: the process tree
confine: Any = None  # ``_confine``: the kernel layers
reaper: Any = None  # ``_serve``: removing a run's files
lfx_run_flow: Any = None
STARTED = 0.0
ZYGOTE_PID = 0
ROOT = ""
SCRATCH_MB = 512
PROCESSES = 256


def _boot() -> None:
    """The channel, the worker package's modules by path (this script runs with ``-I``, maybe
    without our package), lfx: whatever fails is said once on the channel, and the runner exits."""
    global CONFIG, send, channel, confine, reaper, lfx_run_flow, STARTED, ZYGOTE_PID, ROOT, SCRATCH_MB, PROCESSES
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
    PROCESSES = max(int(CONFIG.get("processes") or 256), 16)


CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS = 0x10000000, 0x40000000, 0x00020000
CLONE_NEWIPC, CLONE_NEWPID = 0x08000000, 0x20000000
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


def _outer_uid() -> int | None:
    """This process's user id one user namespace up (``/proc/self/uid_map``): 0 is the machine's root,
    for whom the kernel does not enforce RLIMIT_NPROC."""
    uid = os.getuid()
    try:
        with open("/proc/self/uid_map") as fh:
            for line in fh:
                inside, outside, count = (int(x) for x in line.split())
                if inside <= uid < inside + count:
                    return outside + uid - inside
    except (OSError, ValueError):
        pass
    return None


# -- a run: its spare (outside), its init (inside), confined ahead ---------------------------------------------------


def _namespaces(scratch: str) -> dict:
    """Own user, network, mount, IPC and PID namespaces (the PID namespace is the next child's): a
    loopback of its own, a tmpfs of SCRATCH_MB on ``scratch``, and RLIMIT_NPROC counted in the new
    user namespace. What the kernel refuses is reported (the run goes on without it), never silent."""
    import ctypes
    import fcntl
    import struct

    got: dict = {"netns": False, "pidns": False, "ipcns": False}
    got["scratch"] = CONFIG.get("scratch_text") or f"files of at most {SCRATCH_MB} MB each"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid, outer_uid = os.getuid(), os.getgid(), _outer_uid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID) == 0:
            got["pidns"] = got["ipcns"] = True
        elif libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0:
            got["why"] = f"no namespaces of its own ({os.strerror(ctypes.get_errno())})"
            return got
        # Inside the new user namespace, RLIMIT_NPROC counts its processes only (the kernel keeps a
        # count per namespace): a bound for the whole run even where no cgroup is offered.  Set
        # before the unshare, it would be the user's whole count it bounds.
        confine.set_limit(resource.RLIMIT_NPROC, PROCESSES, PROCESSES)
        got["nproc"] = PROCESSES if outer_uid not in (0, None) else 0  # root is exempt from it
        mapped = True
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            try:
                with open(f"/proc/self/{name}", "w") as fh:
                    fh.write(text)
            except OSError:
                mapped = False
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # bring its loopback up
            ifreq = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH14s", b"lo", 0, b""))
            ifflags = struct.unpack("16sH14s", ifreq)[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", ifflags | IFF_UP, b""))
        got["netns"] = True
        if mapped and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
            opts = f"size={SCRATCH_MB}m,mode=0700".encode()
            if libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) == 0:
                got["scratch"] = f"{SCRATCH_MB} MB of its own"
    except Exception as exc:
        got["why"] = f"{type(exc).__name__}: {exc}"
    return got


def _landlock(scratch: str, outer_pid: int) -> int:
    """Read and execute the interpreter and the system, read a few files, write only ``scratch``."""
    abi = confine.landlock_abi()
    if not abi:
        return 0
    writes = confine.landlock_writes(abi)
    read, run = confine.LL_READ, confine.LL_READ | confine.LL_EXECUTE
    rules = [(p, run) for p in (*_SYSTEM, *CONFIG.get("read", []))]
    rules += [(p, read) for p in (*_ETC, *_PROC, f"/proc/{outer_pid}")]
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


def _spare(go_r: int, answer_w: int, log_w: int, scratch: str) -> None:
    """The run's outer process: its namespaces, its init forked into them, then wait. Never returns."""
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != ZYGOTE_PID:
            os._exit(70)
        os.dup2(log_w, 1)
        os.dup2(log_w, 2)
        low = 3
        for fd in sorted((go_r, answer_w)):  # everything else goes: the zygote's channel and control, other pipes
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)
        facts = _namespaces(scratch)
        init = os.fork()
    except BaseException:
        os._exit(71)
    if init == 0:  # pragma: no cover - the init never returns
        _init(go_r, answer_w, scratch, facts)
    for fd in (go_r, answer_w, 0, 1, 2):  # the run's pipes are its init's alone
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(init, 0)
    os._exit(0)


def _init(go_r: int, answer_w: int, scratch: str, facts: dict) -> None:
    """The run's first process (its PID namespace's init): confine itself, wait for its run, read it,
    run it, answer, exit -- and with it every process of its namespace. Never returns."""
    answer: dict = {"ok": False, "text": "", "error": "the runner could not start the run."}
    try:
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)  # the spare killed: this init, then all
        # Its pid in the runner's /proc (in its own namespace it is 1): the kernel finds it there to
        # bound it, and Landlock lets it read its own entry.
        facts["pid"] = int(os.readlink("/proc/self"))
        os.chdir(scratch)
        os.makedirs("home", exist_ok=True)
        facts["landlock"] = _landlock(scratch, facts["pid"])
        try:
            confine.install_seccomp(os.getpid())
            facts["seccomp"] = True
        except OSError as exc:
            facts["seccomp"] = False
            facts.setdefault("why", f"no seccomp filter ({exc})")
        os.write(answer_w, json.dumps(facts).encode() + b"\n")
        go = os.read(go_r, 64)
        if not go:
            os._exit(0)  # no run for this spare (the runner stops)
        body = _read_exactly(0, int(go))
        os.write(answer_w, b"R")  # the body is read: the request channel is the server's again
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


# -- the zygote: forks spares and ends runs, on the server's word; reads nothing of a run ------------------------


class Spare:
    """A run's outer process, forked ahead of its run (the zygote's view)."""

    count = 0

    def __init__(self) -> None:
        Spare.count += 1
        self.scratch = os.path.join(ROOT, f"run-{Spare.count}")
        os.makedirs(self.scratch, mode=0o700, exist_ok=True)
        go_r, self.go_w = os.pipe()
        self.answer_r, answer_w = os.pipe()
        self.log_r, log_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the spare never returns
            _spare(go_r, answer_w, log_w, self.scratch)
        for fd in (go_r, answer_w, log_w):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(self.pid, self.pid)

    def hand_over(self, control: socket.socket) -> None:
        """Give the server the spare's pid and the parent's ends of its pipes, and keep none of them."""
        fds = [self.go_w, self.answer_r, self.log_r]
        try:
            socket.send_fds(control, [f"spare {self.pid}".encode()], fds)
        finally:
            for fd in fds:
                os.close(fd)


def _end(spare: Spare, server: int) -> None:
    """Kill every process of the run and remove its files.

    The spare first: its init dies with it (PR_SET_PDEATHSIG), and with the init the kernel kills
    every process of the run's PID namespace.  Then every process left below the zygote but the
    server -- where the run had no PID namespace, orphans re-parented to the zygote, its subreaper
    -- until two scans in a row find each of them inside its exit (it runs nothing more) and the
    second finds no pid the first had not (a fork racing the kill shows up in the second)."""
    with contextlib.suppress(OSError):
        os.kill(spare.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.killpg(spare.pid, signal.SIGKILL)
    seen: set[int] | None = None
    end = time.monotonic() + 5
    while time.monotonic() < end:
        procs = [(pid, exiting) for pid, exiting in channel.descendants(ZYGOTE_PID) if pid != server]
        running = [pid for pid, exiting in procs if not exiting]
        for pid in running:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pids = {pid for pid, _ in procs}
        if not running and seen is not None and pids <= seen:
            break
        seen = None if running else pids
        if running:
            time.sleep(0.0002)
    channel.reap_exited()  # the server too, if it ended: that ends the loop anyway
    reaper.clear(spare.scratch)
    with contextlib.suppress(OSError):
        os.rmdir(spare.scratch)


def _zygote(control: socket.socket, server: int) -> None:
    """Fork a spare when the server asks; end the run when it says so, then fork the next spare at
    once (its set-up overlaps the verdict's way to the kernel); until the server is gone."""
    spare: Spare | None = None
    while True:
        try:
            word = control.recv(64)
        except InterruptedError:
            continue
        except OSError:
            word = b""
        if word not in (b"spare", b"end"):  # the server is gone (or said something else): nothing more to serve
            break
        if spare is not None:  # one run at a time: an unended one ends now
            _end(spare, server)
            spare = None
        if word == b"end":
            with contextlib.suppress(OSError):
                control.send(b"ended")
        try:
            spare = Spare()
            spare.hand_over(control)
        except OSError as exc:
            with contextlib.suppress(OSError):
                control.send(f"none {exc}".encode()[:200])
    if spare is not None:
        _end(spare, server)
    with contextlib.suppress(OSError):
        os.kill(server, signal.SIGKILL)


# -- the server: the kernel's requests and the runs' answers; nothing is forked from it ---------------------------


class Run:
    """A spare as the server holds it: its pid, the parent's ends of its pipes, and what its init
    said of its confinement before any run existed in it."""

    def __init__(self, pid: int, fds: list[int]) -> None:
        self.pid = pid
        self.go_w, self.answer_r, self.log_r = fds
        self.facts: dict = {}
        self.buf = bytearray()  # what came after the facts line

    def read_facts(self, deadline: float) -> bool:
        """The init's first line (its confinement), before the run; False when it died or stayed silent."""
        while b"\n" not in self.buf and len(self.buf) < FACTS_CAP:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.answer_r], [], [], remaining)[0]:
                return False
            chunk = os.read(self.answer_r, FACTS_CAP)
            if not chunk:
                return False
            self.buf += chunk
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        with contextlib.suppress(ValueError):
            facts = json.loads(line)
            self.facts = facts if isinstance(facts, dict) else {}
        return bool(self.facts)

    def close(self) -> None:
        for fd in (self.go_w, self.answer_r, self.log_r):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.go_w = self.answer_r = self.log_r = -1


def _ask(control: socket.socket, word: bytes | None) -> tuple[bytes, list[int]]:
    """Say ``word`` to the zygote (None: nothing, its answer is on its way) and read its answer."""
    if word is not None:
        control.send(word)
    msg, fds, _flags, _addr = socket.recv_fds(control, 256, 3)
    if not msg:
        raise ConnectionError("the zygote is gone")
    return msg, fds


def _next_run(control: socket.socket, ask: bool = True) -> Run | None:
    """A new spare from the zygote (``ask``: ask for one; else it comes by itself after ``ended``),
    confined and waiting; announced to the kernel, which bounds it before it sends the run. None
    when the zygote could not make one."""
    for _ in range(3):
        msg, fds = _ask(control, b"spare" if ask else None)
        ask = True
        if not msg.startswith(b"spare ") or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            send({"op": "spare", "error": msg.decode("utf-8", "replace")[:200]})
            return None
        run = Run(int(msg.split()[1]), fds)
        if run.read_facts(time.monotonic() + 60):
            send({"op": "spare", "pid": run.pid, "init": run.facts.get("pid")})
            return run
        run.close()
        _ask(control, b"end")  # "ended", then the next spare: read by the next round
        ask = False
    send({"op": "spare", "error": "the run's process did not start"})
    return None


def _read_header() -> dict | None:
    """The next run's header line, read a byte at a time (the body after it is the run's init's)."""
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


def serve(header: dict, run: Run | None) -> dict:
    """Hand the run to its spare's init; its verdict once it answered, died or ran out of time.
    Ending its processes is the zygote's (``_end``), asked for by the caller before the verdict leaves."""
    if run is None:
        return {"status": "crashed", "detail": "the run's process could not be started", "desync": True}
    timeout = min(max(float(header.get("timeout", 300)), 0.1), 24 * 3600.0)
    t0 = time.monotonic()
    try:
        os.write(run.go_w, f"{header['size']}\n".encode())
    except OSError:  # the spare died before its run: its body stays in the pipe
        return {"status": "crashed", "detail": "the run's process died before it started", "desync": True}
    finally:
        with contextlib.suppress(OSError):
            os.close(run.go_w)
        run.go_w = -1
    buf, log = run.buf, bytearray()
    watch = [run.answer_r, run.log_r]
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(run.pid)
        watch.append(pidfd)
    verdict = None
    while run.answer_r in watch:
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
            if fd == run.answer_r:
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
        if (pidfd is not None and pidfd not in watch) or (pidfd is None and not _alive(run.pid)):
            # The spare is gone (its init with it): what is left in the pipe is all there will be.
            os.set_blocking(run.answer_r, False)
            with contextlib.suppress(BlockingIOError, OSError):
                while chunk := os.read(run.answer_r, 1 << 16):
                    buf += chunk
            break
    if pidfd is not None:
        with contextlib.suppress(OSError):
            os.close(pidfd)
    acked = buf[:1] == b"R"
    result: dict = {"elapsed_ms": round((time.monotonic() - t0) * 1000, 1), "log": log.decode("utf-8", "replace")}
    result["confinement"] = run.facts
    if not acked:
        result["desync"] = True  # the body may still be in the pipe: this runner cannot read the next header
    if verdict:
        return {**result, "status": verdict}
    try:
        answer = json.loads(bytes(buf[1:])) if acked else None
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        return {**result, "status": "ok", "answer": answer}
    if not buf[1:]:
        return {**result, "status": "crashed", "detail": "the run ended without an answer"}
    return {**result, "status": "malformed", "detail": "not one JSON object"}


def _alive(pid: int) -> bool:
    """Whether ``pid`` (the zygote's child, not ours: no waitpid here) still runs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _server(control: socket.socket) -> None:
    """The request loop: a spare announced, a header read, the run served, its end asked of the
    zygote, the verdict sent; until stdin ends or the wire cannot be trusted. Never returns."""
    confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        if os.getppid() != ZYGOTE_PID:
            os._exit(0)
        run = _next_run(control)
        while True:
            try:
                header = _read_header()
            except ValueError as exc:
                send({"id": None, "status": "malformed", "detail": str(exc), "desync": True})
                break
            if header is None:
                break
            try:
                out = serve(header, run)
            except Exception as exc:  # the server's own failure: report it; the kernel starts a new runner
                out = {"status": "crashed", "detail": f"runner: {type(exc).__name__}: {exc}", "desync": True}
            if run is not None:
                run.close()
            _ask(control, b"end")  # every process of the run is gone before its verdict leaves
            send({**out, "id": header.get("id")})
            if out.get("desync"):
                break
            run = _next_run(control, ask=False)  # the zygote forks it as soon as the run has ended
    except BaseException:  # the zygote gone, the kernel's pipe closed: the runner ends
        pass
    os._exit(0)


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
    # The server: forked now, from the warm zygote, before any run existed; from here on the zygote
    # only forks spares and ends runs, and never holds the channel to the kernel again.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = os.fork()
    if server == 0:  # pragma: no cover - the server never returns
        ours.close()
        _server(theirs)
    theirs.close()
    send.close()
    _zygote(ours, server)


if __name__ == "__main__":
    main()
