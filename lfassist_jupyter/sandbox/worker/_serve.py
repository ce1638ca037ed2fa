"""The fork server: one fresh child per request, its report capped, everything it left killed and wiped.

The zygote (``_worker.py``) gives each request to a child with ``hand_over`` and reads its
``verdict``. A child is forked *ahead* (``Spare``), from a zygote that holds nothing of any
request: the request loop forks the next spare once an answer has left and its request's
processes and files are gone, so the fork never competes with a request for the CPU. A child
isolates itself (its own process group, PR_SET_PDEATHSIG, nothing of the zygote's fds, seccomp
+ Landlock), arms the audit hook for its whole life and runs one op.

Its report comes back on a socket only the hook writes (``_hook.py``): every refusal as it
happens, then the answer, sent by the child's top-level frame, then the end of the channel.
The zygote reads it with a size cap and checks every frame's secret (``_Exchange``): a
refusal cannot be taken back, a frame the hook did not write makes the report "tampered", a
child that ends before its answer is a failure.  Its stdout and stderr are drained and
dropped.  Before the verdict leaves, every process of the request gets SIGKILL (the zygote
is their subreaper, so even a detached daemon is found); before the next spare is forked and
the next request read, every one of them has entered its exit (it runs nothing more) and what
they wrote is removed.  The dead are reaped later: the kernel's teardown of a copy of the
zygote's memory is not waited for.
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
from ._channel import descendants
from ._confine import CONFINE, PR_SET_PDEATHSIG, confine, prctl, set_limit
from ._hook import ANSWER_EVENT, DENY_READ, make_hook, take_away_process_creation, trusted_roots
from ._lfx import WARMUP, Component, build_custom_component_template
from ._shared import ANSWER_CAP, CONFIG, OPS, OUTPUT_CAP, STRING_CAP, Timeout, on_alarm

ZYGOTE_PID = os.getpid()
ROOT = _shared.SANDBOX_DIR  # the zygote's cwd: every entry under it is wiped after each request
HOME = os.path.join(ROOT, "home")
SCRATCH_MB = int(CONFIG.get("scratch_mb") or 0)  # the size of the sandbox's /tmp, when it has one
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


def _child(req_r: int, channel: int, out_w: int, scratch: str) -> None:
    """A forked child: isolate itself from the zygote, wait for one request, answer, exit.

    Children are forked *ahead* (a spare waits for the next request), so the fork and
    this set-up are off the critical path; the request arrives on ``req_r``, a pipe only
    this child has.  Its answer leaves through the hook (``ANSWER_EVENT`` raised from this
    very frame) on ``channel``; what it calls for that is bound before any request code runs.
    """
    code = 0
    audit, dumps, truncate, exit_, setitimer = sys.audit, json.dumps, _truncate, os._exit, signal.setitimer
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != ZYGOTE_PID:
            os._exit(70)
        os.dup2(req_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        # Everything else goes: the zygote's channel, other children's pipes.
        os.closerange(3, channel)
        os.closerange(channel + 1, 1 << 16)
        os.chdir(scratch)
        _shared.SANDBOX_DIR = scratch
        # Temporary files (tempfile, sqlite's) belong to the request too: its own directory.
        os.environ["TMPDIR"] = scratch
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
        try:
            confine(scratch)  # seccomp + Landlock, before anything of a request exists here
        except BaseException:
            os._exit(72)
        signal.signal(signal.SIGALRM, on_alarm)
        # _posixsubprocess.fork_exec raises no audit event: take it away (namespaces contain it anyway).
        # Neither do mkfifo and mknod.
        take_away_process_creation()
        # The hook (and its channel's greeting) is made now, off the request's path; it is armed
        # once the request is read, after the warm-up below (whose events would cost, not matter).
        fenced = bool(CONFINE["landlock"]) or not DENY_READ  # Landlock, or a sandbox with no host files in view
        hook = make_hook(
            scratch,
            DENY_READ,
            channel=channel,
            owner=sys._getframe(),
            root=ROOT,
            trusted=TRUSTED,
            c_writes_fenced=fenced,
        )
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
        sys.addaudithook(hook)  # from here on, no way back
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
        audit(ANSWER_EVENT, data)  # the hook sends it and ends the channel; the zygote does not wait for our exit
    except BaseException:
        code = 71
    exit_(code)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_subtree(child: int, *, wait: bool = True) -> None:
    """SIGKILL everything the request started, until none of it can run another instruction.

    Everything below the zygote belongs to the request (no spare exists while it runs): its
    child, and orphans it left, which the subreaper setting re-parents to us.

    With ``wait``, this returns once two scans in a row found every one of them inside its exit
    (``PF_EXITING``: past its last system call, so it writes nothing and forks nothing more; a
    fork racing the kill fails in the kernel) and the second found no pid the first had not: a
    process forked just before its parent's kill shows in the second scan. Tearing down a dying
    copy of the zygote's memory takes milliseconds of the kernel's time; it is not waited for:
    the dead are reaped by the next call.
    """
    _reap()  # what earlier requests left dying has become zombies by now
    with contextlib.suppress(OSError):
        os.killpg(child, signal.SIGKILL)
    if not os.path.isdir("/proc/self/task"):  # no /proc (macOS): the process group is all we have
        _reap()
        return
    seen: set[int] | None = None
    end = time.monotonic() + 5
    while time.monotonic() < end:
        procs = descendants(ZYGOTE_PID)
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
    """A child forked ahead of its request, waiting on its own request pipe."""

    _count = 0

    def __init__(self) -> None:
        Spare._count += 1
        self.scratch = os.path.join(ROOT, f"req-{Spare._count}")
        os.makedirs(self.scratch, exist_ok=True)
        req_r, self.req_w = os.pipe()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.channel, channel = ours.detach(), theirs.detach()
        self.out_r, out_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child never returns
            os.close(self.req_w)
            os.close(self.channel)
            _child(req_r, channel, out_w, self.scratch)
        for fd in (req_r, channel, out_w):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.setpgid(self.pid, self.pid)


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

        CLEANUP.append(cleanup)
        result = {"elapsed_ms": round((time.monotonic() - t0) * 1000, 3), **exchange.outcome(timeout)}
        return _annotate(result)
    if exchange.status is None:
        # No answer is coming any more (the channel ended, went bad, or time is up): the child's
        # exit status, first ending it if it is still alive (it closed its report and went on).
        with contextlib.suppress(ChildProcessError):
            done, status = exchange.reap(grace=0.1 if exchange.eof else 0.0)  # a dying child closes its end first
            if not done:
                exchange.ended_report = exchange.eof and exchange.answer is None
                with contextlib.suppress(OSError):
                    os.killpg(child.pid, signal.SIGKILL)
                done, status = os.waitpid(child.pid, 0)
            exchange.status = status
    kill_subtree(child.pid)
    exchange.drain()
    outcome = exchange.outcome(timeout)
    exchange.close()
    result: dict = _annotate({})
    _wipe(child.scratch)
    result["elapsed_ms"] = round((time.monotonic() - t0) * 1000, 3)
    return {**result, **outcome}


_SECRET_LEN = 32  # hex digits of the hook's secret
_MAX_REFUSED = 50  # refusals kept per request (the first ones say what happened)


class _Exchange:
    """What one child reports: its refusals and its answer (framed, authenticated, capped), its
    exit status, or the deadline.

    ``verdict`` is set when the zygote gives up on the report (``timeout``, ``oversized``);
    ``problem`` when the report cannot be trusted (a frame without the hook's secret, two
    answers, garbage); ``eof`` when the channel ended (the hook shut it after the answer, or
    every process holding it is gone); ``status`` is the child's wait status once it exited.
    """

    def __init__(self, child: Spare) -> None:
        self.pid, self.channel, self.out_r = child.pid, child.channel, child.out_r
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(self.pid)  # readable when the child exits
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
        """The report is whole (it ended after its answer) and can be trusted: no need to wait for the exit."""
        return self.eof and self.answer is not None and self.problem is None and self.verdict is None

    def wait(self, deadline: float) -> None:
        """Read the report and drain the output until the channel ends, the report goes bad or time is up."""
        pidfd, channel = self.pidfd, self.channel
        kept_output = 0
        watch = [channel, self.out_r] + ([pidfd] if pidfd is not None else [])
        while not self.eof and self.verdict is None and self.problem is None:
            if self.status is None:
                done, st = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    self.status = st
                    # Its end of the channel closed with it; a grandchild holding it gets no more time.
                    deadline = min(deadline, time.monotonic() + 0.2)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self.status is None:
                    self.verdict = "timeout"
                break
            if self.status is not None and pidfd in watch:
                watch.remove(pidfd)  # exited: its end of the channel closes with it (unless a grandchild holds it)
            readable, _, _ = select.select(watch, [], [], min(remaining, 0.05 if pidfd is None else remaining))
            for fd in readable:
                if fd == pidfd:
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                if fd == channel:
                    self.feed(chunk)
                elif chunk:
                    kept_output = min(OUTPUT_CAP, kept_output + len(chunk))  # drained and dropped
                else:
                    watch.remove(fd)

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
            secret, kind, size = head[0], head[1], int(head[2])
            if self.secret is None:
                if kind != b"hello" or size or len(secret) != _SECRET_LEN:
                    self.problem = "a report that did not start with the sandbox's greeting"
                    return
                self.secret = secret
            elif secret != self.secret:
                self.problem = "a frame the sandbox did not write"
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

    def reap(self, grace: float) -> tuple[int, int]:
        """``os.waitpid(pid, WNOHANG)``, waiting up to ``grace`` seconds for the exit."""
        end = time.monotonic() + grace
        while True:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            remaining = end - time.monotonic()
            if done or remaining <= 0:
                return done, status
            if self.pidfd is not None:
                select.select([self.pidfd], [], [], remaining)
            else:
                time.sleep(min(remaining, 0.002))

    def drain(self) -> None:
        """After the child's death: what is left on the channel, without waiting on grandchildren."""
        if self.eof or self.verdict is not None:
            return
        os.set_blocking(self.channel, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while not self.eof and self.verdict is None:
                self.feed(os.read(self.channel, 1 << 16))

    def close(self) -> None:
        self.buf[:] = bytes(len(self.buf))
        for fd in (self.channel, self.out_r, self.pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def outcome(self, timeout: float) -> dict:
        """``status`` (and ``detail`` or ``answer``) of the request, with every refusal the hook reported."""
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
