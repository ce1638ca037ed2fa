"""The fork server: one fresh child per request, its report capped, everything it left killed and wiped.

The zygote (``_worker.py``) gives each request to a child with ``hand_over`` and reads its
``verdict``.  A child is forked *ahead* (``Spare``) by the forker (``_Forker``): a copy of the
zygote made right after its warm-up, before any request, that only ever forks -- it never reads a
request nor an answer -- so nothing a request left in memory (the zygote's heap keeps freed,
unzeroed copies of what it parsed) reaches a later request's process.  The next spare is forked
once an answer has left and its request's processes and files are gone, so the fork never
competes with a request for the CPU.  A child isolates itself (its own process group,
PR_SET_PDEATHSIG, nothing of the zygote's or the forker's fds, seccomp + Landlock), greets the
zygote with its answer's secret and the seccomp listener, starts the thread that will send its
answer, arms the audit hook for its whole life and runs one op.

**The verdict is the zygote's.**  It reads the child's report (``_Exchange``) -- every refusal of
the audit hook as it happens, then the answer, the only frame with the secret (``_hook.py``) --
and answers, itself, every system call the kernel refuses the child (seccomp's user
notifications: a socket, a program, a try at closing or replacing the report channel): those
are recorded here, outside the process that made them, whatever that process did to itself.  A
refusal cannot be taken back, an answer without the secret or bytes that are no frame make the
report "tampered", a child that ends before its answer is a failure.  Its stdout and stderr are
drained and dropped.  Before the verdict leaves, every process of the request gets SIGKILL (the
zygote is their subreaper, so even a detached daemon is found); before the next spare is forked
and the next request read, every one of them has entered its exit (it runs nothing more) and
what they wrote is removed.  The dead are reaped later (the forker reaps its children and sends
their exit statuses): the kernel's teardown of a copy of the zygote's memory is not waited for.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import select
import signal
import socket
import stat
import sys
import time
import traceback

from . import _shared
from ._channel import descendants, reap_exited
from ._confine import (
    CONFINE,
    PR_SET_PDEATHSIG,
    confine,
    listener_closed,
    notification,
    prctl,
    refuse_notification,
    set_limit,
)
from ._hook import DENY_READ, await_answer, make_hook, start_answerer, take_away_process_creation, trusted_roots
from ._lfx import WARMUP, Component, build_custom_component_template
from ._shared import ANSWER_CAP, CONFIG, OPS, OUTPUT_CAP, STRING_CAP, Timeout, on_alarm

ZYGOTE_PID = os.getpid()
ROOT = _shared.SANDBOX_DIR  # the zygote's cwd: every entry under it is wiped after each request
HOME = os.path.join(ROOT, "home")
SCRATCH_MB = int(CONFIG.get("scratch_mb") or 0)  # the size of the sandbox's /tmp, when it has one
UNARMED_OPS = frozenset(CONFIG.get("unarmed_ops") or ())  # none but in the tests (see ``_child``)
# Where the interpreter's, lfx's and the worker's own code lives (read-only in the sandbox).
TRUSTED = trusted_roots(
    (
        os.path.dirname(os.path.abspath(__file__)),
        *(os.path.dirname(p) for p in CONFIG.get("op_modules", [])),
        *(os.path.dirname(str(p)) for p in (CONFIG.get("bound_modules") or {}).values()),
    )
)


def _truncate(obj: object, depth: int = 0) -> object:
    """Every string capped, containers bounded: a child's answer stays small by itself."""
    if isinstance(obj, str):
        return obj if len(obj) <= STRING_CAP else obj[:STRING_CAP] + " [truncated]"
    if depth > 20:
        return None
    if isinstance(obj, dict):
        return {str(k)[:200]: _truncate(v, depth + 1) for k, v in list(obj.items())[:500]}
    if isinstance(obj, list | tuple):
        return [_truncate(v, depth + 1) for v in list(obj)[:500]]
    if obj is None or isinstance(obj, bool | int | float):
        return obj
    return _truncate(str(obj), depth + 1)


def _read_all(fd: int, cap: int) -> bytes:
    data = bytearray()
    while len(data) <= cap:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _greet(channel: int, secret: bytes, listener: int | None) -> None:
    """The report's first frame, sent before anything of a request exists in the child: the
    answer's secret, and the seccomp listener's fd when the kernel notifies (the zygote answers
    and records every refused call from now on; the child keeps no copy of it)."""
    import array

    sock = socket.socket(fileno=channel)
    try:
        fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [listener]))] if listener is not None else []
        sock.sendmsg([b"%s hello 0\n" % secret], fds)
    finally:
        sock.detach()
        if listener is not None:
            os.close(listener)


def _child(req_r: int, channel: int, out_w: int, scratch: str, parent: int) -> None:
    """A forked child: isolate itself, wait for one request, answer, exit.

    Children are forked *ahead* (a spare waits for the next request) by ``parent`` -- the forker
    (``_forker``), which never reads a request -- so the fork and this set-up are off the critical
    path, and nothing of an earlier request is in the memory it starts from; the request arrives on
    ``req_r``, a pipe only this child has.  Its answer leaves through the answer thread
    (``start_answerer``), which takes it from this very frame (``await_answer``) on ``channel``;
    what it calls for that is bound before any request code runs.
    """
    code = 0
    answer, dumps, truncate, exit_, setitimer = await_answer, json.dumps, _truncate, os._exit, signal.setitimer
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(70)
        os.dup2(req_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        # Everything else goes: the zygote's and the forker's channels, other children's pipes.
        os.closerange(3, channel)
        os.closerange(channel + 1, 1 << 16)
        os.chdir(scratch)
        _shared.SANDBOX_DIR = scratch
        # Temporary files (tempfile, sqlite's) belong to the request too: its own directory.
        os.environ["TMPDIR"] = scratch
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
        secret = os.urandom(16).hex().encode()
        try:
            # seccomp (its report channel kept open, refusals notified to the zygote) + Landlock,
            # before anything of a request exists here.
            listener = confine(scratch, channel)
        except BaseException:
            os._exit(72)
        _greet(channel, secret, listener)
        gate = start_answerer(channel, sys._getframe(), secret)
        del listener, secret
        signal.signal(signal.SIGALRM, on_alarm)
        # _posixsubprocess.fork_exec raises no audit event: take it away (namespaces contain it anyway).
        # Neither do mkfifo and mknod.
        take_away_process_creation()
        # The hook is made now, off the request's path; it is armed once the request is read,
        # after the warm-up below (whose events would cost, not matter).
        fenced = bool(CONFINE["landlock"]) or not DENY_READ  # Landlock, or a sandbox with no host files in view
        hook, _parts = make_hook(
            scratch, DENY_READ, channel=channel, root=ROOT, trusted=TRUSTED, c_writes_fenced=fenced
        )
        del _parts
        # While waiting anyway: a warm-up build copies the pages a build writes (refcounts,
        # caches) now, rather than one copy-on-write fault at a time during the request.
        # Not when requests come back to back (the build would compete with the request for
        # the CPU): only when none arrived within 50 ms, i.e. while someone waits for a model.
        if not select.select([0], [], [], 0.05)[0]:
            with contextlib.suppress(Exception):
                build_custom_component_template(Component(_code=WARMUP))
        raw = _read_all(0, 64 * 1024 * 1024)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = None  # the zygote's reader (and whatever it buffered) is not ours
        req = json.loads(raw)
        del raw
        timeout = min(max(float(req.get("timeout", 10)), 0.1), 3600.0)
        used = resource.getrusage(resource.RUSAGE_SELF)
        set_limit(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + timeout) + 2)
        gc.enable()
        # From here on, no way back.  (An op the kernel's config names in ``unarmed_ops`` -- the
        # tests' probes of what the kernel alone holds, or of a spare's memory -- runs unhooked.)
        if req.get("op") not in UNARMED_OPS:
            sys.addaudithook(hook)
        del hook
        fn = OPS.get(req.get("op"))
        out = fn(req) if fn else {"error": f"unknown op {req.get('op')!r}"}
    except Timeout:
        out = {"is_valid": False, "phase": "runtime", "error": "Validation timed out."}
    except BaseException as exc:
        out = {
            "is_valid": False,
            "phase": "runtime",
            "error": f"Validator error: {type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    try:
        setitimer(signal.ITIMER_REAL, 0)
        data = dumps(truncate(out if isinstance(out, dict) else {"result": out}), default=str).encode()
        answer(data, *gate)  # the answer thread sends it; the zygote does not wait for our exit
    except BaseException:
        code = 71
    exit_(code)


def kill_subtree(child: int, *, wait: bool = True) -> None:
    """SIGKILL everything the request started, until none of it can run another instruction.

    Everything below the zygote but the forker belongs to the request (no spare exists while it
    runs): its child (the forker's), and orphans it left, which the subreaper setting re-parents
    to the zygote.

    With ``wait``, this returns once two scans in a row found every one of them inside its exit
    (``PF_EXITING``: past its last system call, so it writes nothing and forks nothing more; a
    fork racing the kill fails in the kernel) and the second found no pid the first had not: a
    process forked just before its parent's kill shows in the second scan. Tearing down a dying
    copy of the zygote's memory takes milliseconds of the kernel's time; it is not waited for:
    the dead are reaped by the next call.
    """
    reap_exited()  # what earlier requests left dying has become zombies by now
    with contextlib.suppress(OSError):
        os.killpg(child, signal.SIGKILL)
    if not os.path.isdir("/proc/self/task"):  # no /proc (macOS): the process group is all we have
        reap_exited()
        return
    seen: set[int] | None = None
    end = time.monotonic() + 5
    forker = FORKER[0].pid if FORKER else None
    while time.monotonic() < end:
        procs = [(pid, exiting) for pid, exiting in descendants(ZYGOTE_PID) if pid != forker]
        running = [pid for pid, exiting in procs if not exiting]
        for pid in running:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not wait:
            return
        pids = {pid for pid, _ in procs}
        if not running and seen is not None and pids <= seen:
            return
        seen = None if running else pids
        if running:
            time.sleep(0.0002)


_WIPED = [0]  # directory entries the clean-up has looked at since the start (sent with every verdict)
ROOT_DEV = os.stat(ROOT).st_dev


def clear(top: str, keep: frozenset[str] = frozenset()) -> None:
    """Remove everything below ``top`` that lives on the sandbox's own file system.

    Another mount -- the interpreter and its packages, bound read-only under the sandbox's
    /tmp when the venv lives in /tmp -- is never entered, and the directories that lead to one
    stay (their ``rmdir`` fails); so are the directories in ``keep``.  A directory a request
    made unreadable is opened up first.  Iterative: a request may nest directories thousands
    deep.
    """
    order, todo = [], [top]
    while todo:
        directory = todo.pop()
        order.append(directory)
        try:
            entries = list(os.scandir(directory))
        except PermissionError:
            try:
                os.chmod(directory, 0o700)
                entries = list(os.scandir(directory))
            except OSError:
                continue
        except OSError:
            continue
        for entry in entries:
            _WIPED[0] += 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_dev != ROOT_DEV:
                continue  # a mount point
            if stat.S_ISDIR(st.st_mode):
                if st.st_mode & 0o700 != 0o700:
                    with contextlib.suppress(OSError):
                        os.chmod(entry.path, 0o700)
                todo.append(entry.path)
                continue
            try:
                os.unlink(entry.path)
            except PermissionError:  # in a directory the request made read-only
                with contextlib.suppress(OSError):
                    os.chmod(directory, 0o700)
                    os.unlink(entry.path)
            except OSError:
                pass
    for directory in reversed(order[1:]):  # every directory after all below it
        if directory not in keep:
            with contextlib.suppress(OSError):
                os.rmdir(directory)


def _wipe(scratch: str) -> None:
    """Remove what the request created, and nothing else.

    Under Landlock the request could create files only in its scratch directory: that
    directory is all there is to remove.  Without it (an older kernel), C-level code may
    have written anywhere in the sandbox's writable directory (HOME): all of it is emptied
    (no spare exists yet: the next one is forked after this), other mounts never entered.
    """
    if CONFINE["landlock"]:
        clear(scratch)
        with contextlib.suppress(OSError):
            os.rmdir(scratch)
        return
    clear(ROOT)
    os.makedirs(HOME, exist_ok=True)


def _scratch_full() -> bool:
    """Whether the sandbox's size-limited /tmp (``scratch_mb``) is (nearly) full."""
    if not SCRATCH_MB:
        return False
    try:
        st = os.statvfs(ROOT)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < max(st.f_blocks * st.f_frsize // 20, 1 << 20)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return signal.Signals(sig).name
        except ValueError:
            return f"signal {sig}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


class Spare:
    """A child forked ahead of its request, waiting on its own request pipe.

    Forked by the forker (``FORKER``) when there is one, so that it starts from memory no request
    ever touched; by the zygote itself otherwise (``forker: false`` in the config, the tests'
    control; or before the forker exists)."""

    _count = 0

    def __init__(self) -> None:
        Spare._count += 1
        self.scratch = os.path.join(ROOT, f"req-{Spare._count}")
        os.makedirs(self.scratch, exist_ok=True)
        req_r, self.req_w = os.pipe()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.channel, channel = ours.detach(), theirs.detach()
        self.out_r, out_w = os.pipe()
        try:
            if FORKER:
                self.pid = FORKER[0].fork(req_r, channel, out_w, self.scratch)
            else:
                self.pid = os.fork()
                if self.pid == 0:  # pragma: no cover - the child never returns
                    os.close(self.req_w)
                    os.close(self.channel)
                    _child(req_r, channel, out_w, self.scratch, ZYGOTE_PID)
                with contextlib.suppress(OSError):
                    os.setpgid(self.pid, self.pid)
        except BaseException:
            for fd in (self.req_w, self.channel, self.out_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, channel, out_w):
                os.close(fd)


# -- the forker: spares from memory no request touched ------------------------------------------


class ForkerGone(RuntimeError):
    """The forker died: this zygote cannot make clean spares any more (the kernel restarts it)."""


class _Forker:
    """The zygote's end of the forker, a process forked from the zygote right after its warm-up
    -- before any request -- whose only work is to fork spares: it never reads a request nor an
    answer, so the memory every spare starts from holds nothing of any request (the zygote's own
    heap keeps freed, unzeroed copies of what it parsed: answers carry a request's code and
    texts).  The zygote sends it the spare's pipes and channel (``SCM_RIGHTS``) and gets the pid;
    the forker is the spares' parent, so it reaps them and sends each exit status back."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forker never returns
            ours.close()
            _forker(theirs)
        theirs.close()
        self.pid, self.sock = pid, ours
        self.statuses: dict[int, int] = {}

    def fork(self, req_r: int, channel: int, out_w: int, scratch: str) -> int:
        import array

        try:
            self.sock.sendmsg(
                [b"spare " + scratch.encode()],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [req_r, channel, out_w]))],
            )
            while True:
                kind, pid, status = self._next(block=True)
                if kind == b"pid":
                    return pid
                self._keep(pid, status)
        except OSError as exc:
            raise ForkerGone(f"the forker is gone ({exc})") from None

    def _next(self, block: bool) -> tuple[bytes, int, int]:
        if not block and not select.select([self.sock], [], [], 0)[0]:
            return b"", 0, 0
        data = self.sock.recv(64)
        if not data:
            raise OSError("end of the forker's channel")
        kind, _, rest = data.partition(b" ")
        numbers = [int(x) for x in rest.split()]
        if kind == b"pid" and len(numbers) == 1:
            return kind, numbers[0], 0
        if kind == b"exit" and len(numbers) == 2:
            return kind, numbers[0], numbers[1]
        raise OSError(f"a message the forker does not send: {data[:40]!r}")

    def status(self, pid: int, wait: float = 0.0) -> int | None:
        """``pid``'s wait status once the forker reaped it (waiting up to ``wait`` seconds), else None."""
        end = time.monotonic() + wait
        while pid not in self.statuses:
            remaining = end - time.monotonic()
            if not select.select([self.sock], [], [], max(remaining, 0))[0]:
                return None
            kind, done, status = self._next(block=True)
            if kind == b"exit":
                self._keep(done, status)
        return self.statuses.pop(pid)

    def _keep(self, pid: int, status: int) -> None:
        """An exit status the zygote has not asked for yet (at most the last 64)."""
        self.statuses[pid] = status
        while len(self.statuses) > 64:
            self.statuses.pop(next(iter(self.statuses)))


FORKER: list[_Forker] = []  # the zygote's forker, once started (``start_forker``)


def start_forker() -> bool:
    """Fork the forker (after the warm-up, before the first request); False when the config says
    not to (``forker: false``: the tests' control of what a zygote's heap hands to its spares)."""
    if CONFIG.get("forker") is False or FORKER:
        return bool(FORKER)
    FORKER.append(_Forker())
    return True


def _forker(sock: socket.socket) -> None:
    """The forker's loop: a spare for each message of the zygote, and each exit status back."""
    import array

    code = 0
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != ZYGOTE_PID:
            os._exit(70)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # the zygote's request pipe and protocol channel are not ours
        keep = sock.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 16)
        me = os.getpid()
        pidfds: dict[int, int] = {}
        unwatched = 0  # live children without a pidfd (an older kernel): looked for every 50 ms
        while True:
            readable, _, _ = select.select([sock, *pidfds], [], [], 0.05 if unwatched else None)
            if sock in readable:
                data, ancillary, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(3 * 4))
                if not data:
                    break  # the zygote is gone
                fds = [
                    fd
                    for level, kind, raw in ancillary
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
                    for fd in array.array("i", raw[: len(raw) - len(raw) % 4])
                ]
                if not data.startswith(b"spare ") or len(fds) != 3:
                    break  # not the zygote's: this forker stops
                scratch = data[6:].decode()
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child never returns
                    sock.close()
                    _child(fds[0], fds[1], fds[2], scratch, me)
                for fd in fds:
                    os.close(fd)
                with contextlib.suppress(OSError):
                    os.setpgid(pid, pid)
                try:
                    pidfds[os.pidfd_open(pid)] = pid
                except (AttributeError, OSError):
                    unwatched += 1
                sock.send(b"pid %d" % pid)
            for fd in [fd for fd in readable if fd in pidfds]:
                pidfds.pop(fd)
                os.close(fd)
            while True:  # every child that exited, whether its pidfd said so or not
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    unwatched = 0
                    break
                if not pid:
                    break
                if pid not in pidfds.values():
                    unwatched = max(unwatched - 1, 0)
                for fd in [fd for fd, child in pidfds.items() if child == pid]:
                    pidfds.pop(fd)
                    os.close(fd)
                sock.send(b"exit %d %d" % (pid, status))
    except BaseException:
        code = 1
    os._exit(code)


def child_status(pid: int, wait: float = 0.0) -> int | None:
    """The wait status of the request's child ``pid`` once it exited (waiting up to ``wait``
    seconds), else None; from the forker when it forked the child."""
    if FORKER:
        return FORKER[0].status(pid, wait)
    end = time.monotonic() + wait
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= end:
            return None
        time.sleep(0.001)


MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25  # <linux/mman.h>; MADV_COLLAPSE since Linux 6.1
_HUGE = 2 << 20


def huge_pages() -> int:
    """Back the zygote's heap with 2 MB pages where the kernel lets us; returns the MB it holds so.

    Every fork copies one page-table entry per 4 KB page the zygote has written (~160 MB of
    objects after lfx's import: ~5 ms of the kernel's time per fork), and every child's exit
    tears as many down; a 2 MB page is one entry.  A child that writes into one gets its own
    copy of that 4 KB page only, as before (the kernel splits the mapping in the child).
    Linux only, best effort: any failure leaves the 4 KB pages as they were.
    """
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import ctypes

        from ._confine import _libc

        madvise = _libc().madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as fh:
            maps = fh.read().splitlines()
        for line in maps:
            parts = line.split()
            if not parts[1].startswith("rw") or (len(parts) > 5 and parts[5] != "[heap]"):
                continue  # anonymous memory and the brk heap only: not the stack, not a file
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            start, end = -(-lo // _HUGE) * _HUGE, hi // _HUGE * _HUGE
            if end > start:
                madvise(start, end - start, MADV_HUGEPAGE)
                madvise(start, end - start, MADV_COLLAPSE)
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) // 1024
    except Exception:
        pass
    return 0


def new_spare() -> Spare | None:
    try:
        return Spare()
    except Exception:  # e.g. fork refused: the request will fork its own child
        return None


CLEANUP: list = []  # what is left to do once the answer is sent


def _annotate(result: dict) -> dict:
    """What the zygote adds to a verdict: a full scratch space (the request's doing, whatever
    it answered) and how many entries clean-up has looked at so far."""
    if _scratch_full():
        result["scratch_full"] = f"{SCRATCH_MB} MB"
    result["wiped"] = _WIPED[0]
    return result


def hand_over(header: dict, body: bytearray, child: Spare | None) -> tuple[Spare, float, float]:
    """Give the request (``body``, its JSON, unread here) to a child, then wipe it: nothing of it
    stays in the zygote for the next spare to inherit.  Returns (child, start, timeout)."""
    timeout = min(max(float(header.get("timeout", 10)), 0.1), 3600.0)
    child = child or Spare()
    t0 = time.monotonic()
    with contextlib.suppress(OSError):  # a child that died meanwhile shows up as crashed below
        data = memoryview(body)
        while data:
            data = data[os.write(child.req_w, data) :]
        del data
    os.close(child.req_w)
    body[:] = bytes(len(body))
    return child, t0, timeout


def verdict(child: Spare, t0: float, timeout: float) -> dict:
    """The zygote's verdict on what ``child`` reported (its answer and refusals, or why not).

    No other child exists meanwhile (the next request's spare is forked after the answer has
    left), so every process below the zygote but the dying ones of earlier requests is this
    request's.
    """
    exchange = _Exchange(child)
    exchange.wait(t0 + timeout + 1.0)  # the child's alarm fires at ``timeout``; this is for code that eats it
    if exchange.complete():
        # The report ended with the answer: every process of the request gets SIGKILL (it
        # cannot run another instruction) before the verdict leaves; reaping them and wiping
        # their files happen after.
        kill_subtree(child.pid, wait=False)

        def cleanup() -> None:
            kill_subtree(child.pid)
            exchange.close()
            _wipe(child.scratch)
            child_status(child.pid)  # the forker's word on its exit, if already there: not kept

        CLEANUP.append(cleanup)
        result = {"elapsed_ms": round((time.monotonic() - t0) * 1000, 3), **exchange.outcome(timeout)}
        return _annotate(result)
    if exchange.status is None:
        # No answer is coming any more (the channel ended, went bad, or time is up): the child's
        # exit status, first ending it if it is still alive (it closed its report and went on).
        status = child_status(child.pid, wait=0.1 if exchange.eof else 0.0)  # a dying child closes its end first
        if status is None:
            exchange.ended_report = exchange.eof and exchange.answer is None
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            status = child_status(child.pid, wait=10.0)
        exchange.status = status
    kill_subtree(child.pid)
    exchange.drain()
    outcome = exchange.outcome(timeout)
    exchange.close()
    result: dict = _annotate({})
    _wipe(child.scratch)
    result["elapsed_ms"] = round((time.monotonic() - t0) * 1000, 3)
    return {**result, **outcome}


_SECRET_LEN = 32  # hex digits of the answer's secret
_MAX_REFUSED = 50  # refusals kept per request (the first ones say what happened)


class _Exchange:
    """What one child reports: its refusals and its answer (framed, the answer authenticated,
    capped), what the kernel refused it (seccomp's notifications, answered and recorded here),
    its exit status, or the deadline.

    ``verdict`` is set when the zygote gives up on the report (``timeout``, ``oversized``);
    ``problem`` when the report cannot be trusted (an answer without the secret, two answers,
    garbage, a file descriptor after the greeting); ``eof`` when the channel ended (every process
    holding it is gone); ``status`` is the child's wait status once it exited.
    """

    def __init__(self, child: Spare) -> None:
        self.pid, self.channel, self.out_r = child.pid, child.channel, child.out_r
        self.sock = socket.socket(fileno=child.channel)
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(self.pid)  # readable when the child exits
        self.listener: int | None = None  # the child's seccomp listener (sent with its greeting)
        self.unheard = False  # every process under that filter is gone
        self.buf = bytearray()
        self.received = 0
        self.frames = 0
        self.secret: bytes | None = None
        self.refused: list[dict] = []
        self.answer: dict | None = None
        self.problem: str | None = None
        self.verdict: str | None = None
        self.status: int | None = None
        self.eof = False
        self.ended_report = False  # the channel ended, without an answer, while the child lived on

    def complete(self) -> bool:
        """The answer arrived and the report can be trusted: no need to wait for the exit (what
        follows the answer is the component running on after its validation: it is killed)."""
        return self.answer is not None and self.problem is None and self.verdict is None

    def wait(self, deadline: float) -> None:
        """Read the report, answer the kernel's notifications and drain the output until the
        answer, the channel's end, a bad report or the deadline."""
        pidfd, channel = self.pidfd, self.channel
        kept_output = 0
        watch = [channel, self.out_r] + ([pidfd] if pidfd is not None else [])
        while not self.eof and self.verdict is None and self.problem is None and self.answer is None:
            if self.status is None:
                self.status = child_status(self.pid)
                if self.status is not None:
                    # Its end of the channel closed with it; a grandchild holding it gets no more time.
                    deadline = min(deadline, time.monotonic() + 0.2)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self.status is None:
                    self.verdict = "timeout"
                break
            if self.listener is not None and self.listener not in watch and not self.unheard:
                watch.append(self.listener)
            if self.status is None and pidfd in watch and _exited(pidfd):
                watch.remove(pidfd)  # exited: its status comes from the forker, at once
                self.status = child_status(self.pid, wait=1.0)
                continue
            readable, _, _ = select.select(watch, [], [], min(remaining, 0.05 if pidfd is None else remaining))
            for fd in readable:
                if fd == pidfd:
                    continue
                if fd == self.listener:
                    if not self.notified() and listener_closed(fd):
                        watch.remove(fd)  # no process is left under the filter: nothing more to answer
                        self.unheard = True
                    continue
                if fd == channel:
                    self.receive()
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                if chunk:
                    kept_output = min(OUTPUT_CAP, kept_output + len(chunk))  # drained and dropped
                else:
                    watch.remove(fd)

    def receive(self) -> None:
        """One read of the channel: its bytes, and the file descriptors passed with them (the
        greeting's seccomp listener; any other is closed, and the report is not the sandbox's)."""
        import array

        try:
            chunk, ancillary, flags, _addr = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(4 * 4))
        except OSError:
            chunk, ancillary, flags = b"", [], 0
        fds = [
            fd
            for level, kind, raw in ancillary
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
            for fd in array.array("i", raw[: len(raw) - len(raw) % 4])
        ]
        greeting = self.secret is None and self.frames == 0 and not self.buf
        if fds and greeting and self.listener is None:
            self.listener = fds.pop(0)
        for fd in fds:
            os.close(fd)
            self.problem = self.problem or "a file descriptor on the report channel"
        if flags & socket.MSG_CTRUNC:
            self.problem = self.problem or "a file descriptor on the report channel"
        self.feed(chunk)

    def notified(self) -> bool:
        """A system call the kernel refused the request (seccomp's notification): answered with
        EPERM and recorded here, outside the process that made it.  False when there was none."""
        taken = notification(self.listener) if self.listener is not None else None
        if taken is None:
            return False
        ident, _pid, what = taken
        refuse_notification(self.listener, ident)
        if len(self.refused) < _MAX_REFUSED:
            self.refused.append({"event": "seccomp", "what": f"{what} (refused by the kernel)", "line": None})
        return True

    def feed(self, chunk: bytes) -> None:
        """Channel bytes: frames parsed as they complete; b"" is the channel's end."""
        if not chunk:
            self.eof = True
            if self.buf and self.problem is None:
                self.problem = "the report ended inside a frame"
            return
        self.received += len(chunk)
        if self.received > ANSWER_CAP + 64 * 1024:
            self.verdict = "oversized"
            return
        self.buf += chunk
        while self.problem is None and self.verdict is None:
            newline = self.buf.find(b"\n", 0, 128)
            if newline < 0:
                if len(self.buf) >= 128:
                    self.problem = "a frame the sandbox did not write"
                return
            head = bytes(self.buf[:newline]).split(b" ")
            if len(head) != 3 or not head[2].isdigit():
                self.problem = "a frame the sandbox did not write"
                return
            tag, kind, size = head[0], head[1], int(head[2])
            if self.secret is None:
                if kind != b"hello" or size or len(tag) != _SECRET_LEN:
                    self.problem = "a report that did not start with the sandbox's greeting"
                    return
                self.secret = tag
            elif kind != b"refused" and tag != self.secret:
                self.problem = "a frame the sandbox did not write"  # a greeting or an answer without the secret
                return
            if size > ANSWER_CAP:
                self.verdict = "oversized"
                return
            end = newline + 1 + size
            if len(self.buf) < end:
                return
            payload = bytes(self.buf[newline + 1 : end])
            self.buf[:end] = bytes(end)
            del self.buf[:end]
            self._frame(kind, payload)

    def _frame(self, kind: bytes, payload: bytes) -> None:
        self.frames += 1
        if kind == b"hello":
            if self.frames > 1:  # only the very first frame is a greeting
                self.problem = "a second greeting"
        elif kind == b"refused":
            try:
                item = json.loads(payload)
            except ValueError:
                item = None
            if not isinstance(item, dict) or not isinstance(item.get("event"), str):
                self.problem = "a malformed refusal"
                return
            if len(self.refused) < _MAX_REFUSED:
                line = item.get("line")
                self.refused.append(
                    {
                        "event": item["event"][:200],
                        "what": str(item.get("what") or item["event"])[:500],
                        "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
                    }
                )
        elif kind == b"answer":
            if self.answer is not None:
                self.problem = "two answers"
                return
            try:
                answer = json.loads(payload)
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                self.problem = "an answer that is not one JSON object"
                return
            self.answer = answer
        else:
            self.problem = "a frame of an unknown kind"

    def drain(self) -> None:
        """After the child's death: what is left on the channel, without waiting on grandchildren."""
        if self.eof or self.verdict is not None:
            return
        os.set_blocking(self.channel, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while not self.eof and self.verdict is None:
                self.receive()

    def close(self) -> None:
        self.buf[:] = bytes(len(self.buf))
        with contextlib.suppress(OSError):
            self.sock.detach()
        for fd in (self.channel, self.out_r, self.pidfd, self.listener):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def outcome(self, timeout: float) -> dict:
        """``status`` (and ``detail`` or ``answer``) of the request, with every refusal the hook or
        the kernel reported."""
        verdict, status, refused = self.verdict, self.status, self.refused
        if verdict is not None:
            detail = f"{timeout:g} s" if verdict == "timeout" else str(self.received)
            return {"status": verdict, "detail": detail, "refused": refused}
        if self.problem is None and self.ended_report:
            self.problem = "its report channel was closed before the answer"
        if self.problem is not None:
            return {"status": "tampered", "detail": self.problem, "refused": refused}
        if self.answer is not None:
            return {"status": "ok", "answer": self.answer, "refused": refused}
        if status is None or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            detail = _status_text(status) if status is not None else "unknown"
            return {"status": "crashed", "detail": detail, "refused": refused}
        return {"status": "unfinished", "detail": "it ended before its report was complete", "refused": refused}


def _exited(pidfd: int) -> bool:
    """Whether the process of ``pidfd`` has exited (its pidfd is readable)."""
    return bool(select.select([pidfd], [], [], 0)[0])
