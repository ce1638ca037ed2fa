"""The warm real runner (``sandbox/local_run.py`` + ``worker/_runner.py``): one process that imported lfx,
one confined child forked per real run.

What a warm process must not cost: a run finds nothing of the run before it -- not its variables in
the environment, nor its files, nor its processes, nor its secret anywhere in its own memory (the
runner never read a run's request: each child reads its own) -- and a stopped run leaves nothing
running. Through ``run_flow_for_real`` and ``%%assist_flow --run-local``; payloads the outgoing gate
refuses go to the runner past it (``run_past_the_gate``): the runner must hold without the gate."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _support.components import OPENAI_CHAT_MODEL, QA_SPEC

import lfassist_jupyter
from lfassist_jupyter import build_flow, default_catalog
from lfassist_jupyter.sandbox import local_run
from lfassist_jupyter.sandbox.worker._channel import descendants

pytestmark = pytest.mark.slow  # each test runs flows for real: the runner imports lfx on first use

RECALL = """
import hashlib
import json
import os
import signal
import os
import subprocess

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output, SecretStrInput
from lfx.schema.message import Message


def _in_memory(head: str, tail_sha: str) -> bool:
    # The whole needle is never built here: its head is searched, what follows is compared by hash.
    head_b, tail_len = head.encode(), int(tail_sha.split(":")[0])
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms or line.rstrip().endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            for at in range(start, end, 1 << 22):
                try:
                    mem.seek(at)
                    chunk = mem.read(min(1 << 22, end - at) + 64)
                except (OSError, OverflowError, ValueError):
                    continue
                i = chunk.find(head_b)
                while i >= 0:
                    tail = chunk[i + len(head_b) : i + len(head_b) + tail_len]
                    if f"{tail_len}:" + hashlib.sha256(tail).hexdigest() == tail_sha:
                        return True
                    i = chunk.find(head_b, i + 1)
    return False


class Recall(Component):
    display_name = "Recall"
    description = "Leaves things behind, or looks for what a run before it left."
    name = "Recall"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        SecretStrInput(name="api_key", display_name="Key", value="DEMO_SERVICE_KEY"),
        MessageTextInput(name="needles", display_name="Needles"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        home = os.path.expanduser("~")
        if self.text == "leave":
            with open(os.path.join(home, "left.txt"), "w") as fh:
                fh.write(str(self.api_key))
            os.environ["LEFT_BEHIND"] = str(self.api_key)
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "lfassist-left-behind"],
                             start_new_session=True)
            return Message(text="left")
        found = {}
        for needle in str(self.needles or "").split(","):
            head, _, tail_sha = needle.partition("=")
            found[head] = _in_memory(head, tail_sha)
        seen = {
            "memory": found,
            "env": sorted(k for k in os.environ if k in ("LEFT_BEHIND", "DEMO_SERVICE_KEY")),
            "home": sorted(os.listdir(home)),
            "key": bool(self.api_key),
        }
        return Message(text=json.dumps(seen))
"""


def _needle(secret: str, head: int = 10) -> str:
    """``secret`` as the Recall node looks for it: its head, and the hash of the rest."""
    tail = secret[head:].encode()
    return f"{secret[:head]}={len(tail)}:{hashlib.sha256(tail).hexdigest()}"


@pytest.fixture(scope="module")
def recall_flow(sandbox):
    catalog = default_catalog()
    catalog.add("Recall", sandbox.component_template(RECALL).template)

    def flow(needles: str = "") -> dict:
        built = build_flow(
            "nodes:\n  A: ChatInput\n  R: Recall\n  C: ChatOutput\nedges:\n  A.message -> R.text\n"
            f"  R.out -> C.input_value\nconfig:\n  R.needles: {needles or '-'}\n",
            catalog=catalog,
        )
        assert built.ok, built.errors
        return built.flow

    return flow


def _left_behind() -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if b"lfassist-left-behind" in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
    return found


def test_a_run_finds_nothing_of_the_run_before_it(recall_flow):
    first_secret = "secret-run-one-7f3a9c02e1"
    own_input = "needle-of-run-two-5b1e90"

    first = run_past_the_gate(recall_flow(), "leave", env={"DEMO_SERVICE_KEY": first_secret})
    assert first.ok and first.text == "left", first
    assert _left_behind() == []  # the process it started went with it
    pid = local_run.real_runner().pid

    needles = f"{_needle(first_secret)},{_needle(own_input)}"
    second = run_past_the_gate(recall_flow(needles), own_input, env={"DEMO_SERVICE_KEY": "another-key-0123456789"})

    assert second.ok, second
    seen = json.loads(second.text)
    assert seen["env"] == ["DEMO_SERVICE_KEY"]  # its own variable; not what the first run set
    assert seen["home"] == []  # a fresh HOME
    assert seen["memory"][first_secret[:10]] is False  # the first run's key is nowhere in this process
    assert seen["memory"][own_input[:10]] is True  # the control: the scan finds this run's own input
    assert local_run.real_runner().pid == pid  # one warm runner served both


SLEEP = """
import time

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class Sleep(Component):
    display_name = "Sleep"
    name = "Sleep"
    inputs = [MessageTextInput(name="text", display_name="Text")]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        time.sleep(600)
        return Message(text="never")
"""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_stopped_real_run_leaves_nothing_running_and_the_next_run_works(sandbox, kernel_sigint):
    catalog = default_catalog()
    catalog.add("Sleep", sandbox.component_template(SLEEP).template)
    spec = "nodes:\n  A: ChatInput\n  S: Sleep\n  C: ChatOutput\nedges:\n  A.message -> S.text\n"
    spec += "  S.out -> C.input_value\n"
    hang = build_flow(spec, catalog=catalog).flow
    assert lfassist_jupyter.run_flow_for_real(QA_SPEC, "warm").ok  # the runner is up
    runner, seen = local_run.real_runner(), []

    def stop() -> None:  # the stop button, while the run sleeps: Jupyter sends the kernel a SIGINT
        time.sleep(4)
        seen.extend([runner.pid, *(pid for pid, _ in descendants(runner.pid))])
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=stop).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        lfassist_jupyter.run_flow_for_real(hang, "x", timeout=120)
    assert time.monotonic() - started < 20
    time.sleep(0.5)
    assert len(seen) >= 2 and [p for p in seen if _alive(p)] == []  # the runner and the run, all gone

    after = lfassist_jupyter.run_flow_for_real(QA_SPEC, "again")  # a fresh runner serves the next run
    assert after.ok and after.text == "Answer this: again", after


def test_without_lfx_a_real_run_is_one_line(monkeypatch):
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no system python to stand in for an interpreter without lfx")
    monkeypatch.setenv("LFASSIST_VALIDATOR_PYTHON", "/usr/bin/python3")
    run = lfassist_jupyter.run_flow_for_real(QA_SPEC, "hi")
    assert run.ok is False
    assert run.error.startswith("the real runner could not start: ModuleNotFoundError: No module named 'lfx'")
    assert "\n" not in run.error and "Traceback" not in run.error


SMUGGLE = """
import codecs
import json

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output, SecretStrInput
from lfx.schema.message import Message


class Smuggle(Component):
    display_name = "Smuggle"
    description = "Answers with the key it was given, in lossless disguises."
    name = "Smuggle"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        SecretStrInput(name="api_key", display_name="Key", value="DEMO_SERVICE_KEY"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        key = str(self.api_key)
        forms = {"length": len(key), "plain": key, "swapcase": key.swapcase(), "rot13": codecs.encode(key, "rot13")}
        forms["rot13 upper"] = forms["rot13"].swapcase()
        return Message(text=json.dumps(forms))
"""


def test_a_run_cannot_smuggle_its_key_back_with_its_letters_recased_or_rotated(sandbox):
    """What a run answers is redacted of the keys it was given, in their disguises: besides hex,
    base64, reversed and split, a key with its case swapped or rot13'd (lossless, one call each)
    came back as it was. The control: the run had the key (its length) and its plain form is redacted."""
    catalog = default_catalog()
    catalog.add("Smuggle", sandbox.component_template(SMUGGLE).template)
    spec = "nodes:\n  A: ChatInput\n  S: Smuggle\n  C: ChatOutput\nedges:\n  A.message -> S.text\n"
    flow = build_flow(spec + "  S.out -> C.input_value\n", catalog=catalog).flow
    key = "sk-Smuggle-9fQ2xLm7Rt4Kp8Wz3Yb6"

    run = lfassist_jupyter.run_flow_for_real(flow, "x", env={"DEMO_SERVICE_KEY": key})

    assert run.ok, run
    forms = json.loads(run.text)
    assert forms["length"] == len(key) and key not in run.text and "***" in forms["plain"], forms  # control
    import codecs

    for shown in (key.swapcase(), codecs.encode(key, "rot13"), codecs.encode(key, "rot13").swapcase()):
        assert shown not in run.text and shown[3:13] not in run.text, forms


# -- runs share nothing, and are bounded as a whole (issue 38) ------------------------------------------------------
#
# Two runs through the public door, one after the other, in each isolation mode: run A (a model flow
# with the user's key, the fake OpenAI server) parks its key in System V and POSIX IPC, aims at every
# process it can name (priority, scheduling, affinity, limits), probes each rule of the validation's
# seccomp filter and leaves a process that forks and exits every few milliseconds; run B (another
# flow, no key, one webhook allowed: the fake server again) looks for the key in IPC and for run A's
# input and answer in its own memory, posts what it found, and says how it is scheduled.  The
# payloads are module-level functions, so each control runs the very same code outside the sandbox.

PAYLOADS = r'''
import ctypes
import errno
import hashlib
import json
import os
import resource
import select
import time

IPC_KEY = 0x4C46A55
MQ_NAME = b"/lfassist-park"


_LIBC = []


def _lib():
    """libc, loaded on first use (not while the component is built: the validation refuses ctypes)."""
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
        _LIBC[0].syscall.restype = ctypes.c_long
        _LIBC[0].shmat.restype = ctypes.c_void_p
    return _LIBC[0]


def _errno(call):
    try:
        call()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))


def _c(result):
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def park(key):
    """The key in a System V message queue, a POSIX message queue and a System V segment."""
    out = {}
    data = key.encode()

    def msg():
        q = _c(_lib().msgget(IPC_KEY, 0o1666))
        buf = ctypes.create_string_buffer(8 + len(data))
        ctypes.memmove(ctypes.addressof(buf), (1).to_bytes(8, "little"), 8)
        ctypes.memmove(ctypes.addressof(buf) + 8, data, len(data))
        _c(_lib().msgsnd(q, buf, len(data), 0o4000))

    def mq():
        q = _c(_lib().mq_open(MQ_NAME, os.O_CREAT | os.O_RDWR, ctypes.c_uint(0o666), ctypes.c_void_p(0)))
        _c(_lib().mq_send(q, data, len(data), 0))

    def shm():
        s = _c(_lib().shmget(IPC_KEY, 4096, 0o1666))
        at = _lib().shmat(s, None, 0)
        if at in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        ctypes.memmove(at, data + b"\0", len(data) + 1)

    for name, call in (("msg", msg), ("mq", mq), ("shm", shm)):
        out[name] = _errno(call)
    return out


def fetch():
    """What the IPC holds for the key IPC_KEY / MQ_NAME, or why not."""
    out = {}

    def msg():
        q = _c(_lib().msgget(IPC_KEY, 0))
        buf = ctypes.create_string_buffer(8 + 4096)
        n = _c(_lib().msgrcv(q, buf, 4096, 0, 0o4000))
        out["msg_text"] = buf.raw[8 : 8 + n].decode()

    def mq():
        q = _c(_lib().mq_open(MQ_NAME, os.O_RDWR | os.O_NONBLOCK, ctypes.c_uint(0), ctypes.c_void_p(0)))
        buf = ctypes.create_string_buffer(1 << 16)
        n = _c(_lib().mq_receive(q, buf, 1 << 16, None))
        out["mq_text"] = buf.raw[:n].decode()

    def shm():
        s = _c(_lib().shmget(IPC_KEY, 0, 0))
        at = _lib().shmat(s, None, 0)
        if at in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        out["shm_text"] = ctypes.string_at(at).decode()

    for name, call in (("msg", msg), ("mq", mq), ("shm", shm)):
        out[name] = _errno(call)
    return out


def aim(targets):
    """Renice, reschedule, pin and re-limit every process of ``targets`` (pids); a process group
    and a user (one that has no process: a refusal is the filter's); the caller itself, the control."""
    seen = {}

    def note(kind, result):
        seen.setdefault(kind, set()).add(result)

    for pid in targets:
        note("renice", _errno(lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)))
        note("idle", _errno(lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))))
        note("pin", _errno(lambda: os.sched_setaffinity(pid, {0})))
        note("limit", _errno(lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64))))
    note("renice group", _errno(lambda: os.setpriority(os.PRIO_PGRP, 0, 19)))
    note("renice user", _errno(lambda: os.setpriority(os.PRIO_USER, 54321, 19)))
    result = {k: sorted(v) for k, v in seen.items()}
    result["self"] = _errno(lambda: os.setpriority(os.PRIO_PROCESS, 0, 5))
    result["self_nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    return result


def state():
    """How this process is scheduled and limited."""
    return {
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "policy": os.sched_getscheduler(0),
        "cpus": len(os.sched_getaffinity(0)),
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
    }


def probe(table):
    """Each rule of the filter, aimed where only a missing filter would let it through: arguments -1
    (a pid or a descriptor nothing has), a pid that does not exist, a group, a new namespace."""
    out = {}
    for name, nr, rule in table:
        if rule in ("deny", "quiet"):
            args = [-1] * 6
        elif rule in ("self", "self_or_0"):
            args = [99999, 0, 0, 0, 0, 0]
        elif rule == "who":
            args = [2 if name == "ioprio_set" else 1, 0, 0, 0, 0, 0]  # IOPRIO_WHO_PGRP / PRIO_PGRP
        elif rule == "no_new_ns":
            args = [0x10000000 | 0x10000, 0, 0, 0, 0, 0]  # CLONE_NEWUSER | CLONE_THREAD: EINVAL unfiltered
        else:
            args = [0, 0, 0, 0, 0, 0]
        result = _lib().syscall(nr, *[ctypes.c_long(a) for a in args])
        out[name] = "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    return out


def hop(times):
    """Leave a process that forks and exits every 3 ms; return once it hopped ``times`` times."""
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        os.close(r)
        _lib().prctl(15, b"lfassist-hopper", 0, 0, 0)
        while True:
            try:
                if os.fork():
                    os._exit(0)
            except OSError:  # at its bound (the dead not reaped yet): it waits, and goes on
                time.sleep(0.01)
                continue
            try:
                os.write(w, b"h")
            except OSError:
                pass
            time.sleep(0.003)
    os.close(w)
    hops, end = 0, time.monotonic() + 10
    while hops < times and time.monotonic() < end and select.select([r], [], [], 1)[0]:
        hops += len(os.read(r, 64))
    return hops


def in_memory(head, tail_sha):
    """Whether this process's memory holds ``head`` followed by the tail whose hash is ``tail_sha``."""
    head_b, tail_len = head.encode(), int(tail_sha.split(":")[0])
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms or line.rstrip().endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            for at in range(start, end, 1 << 22):
                try:
                    mem.seek(at)
                    chunk = mem.read(min(1 << 22, end - at) + 64)
                except (OSError, OverflowError, ValueError):
                    continue
                i = chunk.find(head_b)
                while i >= 0:
                    tail = chunk[i + len(head_b) : i + len(head_b) + tail_len]
                    if f"{tail_len}:" + hashlib.sha256(tail).hexdigest() == tail_sha:
                        return True
                    i = chunk.find(head_b, i + 1)
    return False
'''

_HEAD = """
import json
import urllib.request

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output, SecretStrInput
from lfx.schema.message import Message
"""

PARK = (
    _HEAD
    + PAYLOADS
    + """

class Park(Component):
    display_name = "Park"
    description = "Parks its key where another run could find it, aims at every process, leaves a hopper."
    name = "Park"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        MessageTextInput(name="question", display_name="Question"),
        SecretStrInput(name="api_key", display_name="Key", value="OPENAI_API_KEY"),
        MessageTextInput(name="table", display_name="Table"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        others = sorted({1, os.getppid(), *range(2, 64)} - {0, os.getpid()})  # 0 would be itself
        report = {"ipc": park(str(self.api_key)), "aim": aim(others)}
        report["filter"] = probe(json.loads(str(self.table)))
        report["hops"] = hop(5)
        report.update(question=str(self.question), model=str(self.text))  # its input and answer, in its answer
        return Message(text=json.dumps(report))
"""
)

FETCH = (
    _HEAD
    + PAYLOADS
    + """

class Fetch(Component):
    display_name = "Fetch"
    description = "Looks for another run's key and bytes, posts what it found to its webhook."
    name = "Fetch"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        MessageTextInput(name="needles", display_name="Needles"),
        MessageTextInput(name="url", display_name="Webhook"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        found = {"ipc": fetch(), "state": state(), "memory": {}}
        for needle in str(self.needles).split(","):
            head, _, tail_sha = needle.partition("=")
            found["memory"][head] = in_memory(head, tail_sha)
        request = urllib.request.Request(str(self.url), data=json.dumps(found).encode(), method="POST")
        try:
            found["posted"] = urllib.request.urlopen(request, timeout=10).status
        except Exception as exc:
            found["posted"] = type(exc).__name__
        return Message(text=json.dumps(found))
"""
)


def _table() -> list[tuple[str, int, str]]:
    """The filter's rules with this machine's system call numbers (``_confine``, importable as is)."""
    import platform

    from lfassist_jupyter.sandbox.worker import _confine

    numbers = {**_confine._SECCOMP_ARCH[platform.machine()][2], **_confine._SECCOMP_SAME}
    return [(name, numbers[name], rule) for name, rule in sorted(_confine.SECCOMP_RULES.items())]


def _host_pid(runner: local_run.RealRunner) -> int:
    """The runner's zygote as this process numbers it."""
    from lfassist_jupyter.sandbox import _cgroups

    assert runner._ready is not None and runner._proc is not None
    pid = runner._ready["pid"]
    return _cgroups.host_pids(runner._proc.pid, {pid})[pid] if runner.isolation == "full" else pid


def _sched(pid: int) -> dict:
    return {
        "nice": os.getpriority(os.PRIO_PROCESS, pid),
        "policy": os.sched_getscheduler(pid),
        "cpus": len(os.sched_getaffinity(pid)),
        "nofile": list(resource.prlimit(pid, resource.RLIMIT_NOFILE)),
    }


def _named(comm: str) -> list[int]:
    found = []
    for path in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if path.read_text().strip() == comm and _alive(int(path.parent.name)):
                found.append(int(path.parent.name))
    return found


MODES = ["full", "reduced"]


@contextlib.contextmanager
def _in_mode(mode: str):
    """The runner of ``mode`` (``local_run.real_runner`` picks one per mode), in a module-scoped fixture."""
    if mode == "full" and local_run._isolation.probe(sys.executable)[0] != "full":
        pytest.skip("bubblewrap is not available here")
    patch = pytest.MonkeyPatch()
    if mode == "reduced":
        patch.setenv("LFASSIST_SANDBOX", "reduced")
    try:
        yield
    finally:
        patch.undo()


def run_past_the_gate(flow: dict, input_text: str, *, env: dict | None = None, allow_hosts=()) -> object:
    """A real run of ``flow`` handed to the runner as ``run_flow_for_real`` hands it after its checks,
    without them: the outgoing gate refuses these payloads' ctypes, os.fork and /proc reads before any
    run (tests/flows/test_outgoing_gate.py proves that door).  What these tests prove is the runner's
    own isolation, which is the kernel's: what holds if such code ran anyway (a scan can be wrong)."""
    from lfassist_jupyter.flows.real_run import prepare_flow, run_plan

    plan = run_plan(flow, env=env, allow_hosts=allow_hosts)
    prepared, _ = prepare_flow(flow)
    return local_run.run(prepared, input_text, plan, 300.0)


@pytest.fixture(scope="module")
def two_runs(sandbox):
    """Per mode, once: run A (its key parked, every process aimed at, a hopper left) then run B."""
    from _support.fakellm import FakeLLM, Reply

    catalog = default_catalog()
    catalog.add("Park", sandbox.component_template(PARK).template)
    catalog.add("Fetch", sandbox.component_template(FETCH).template)
    catalog.add("ChatModel", sandbox.component_template(OPENAI_CHAT_MODEL).template)
    done: dict[str, dict] = {}

    def runs(mode: str) -> dict:
        if mode in done:
            return done[mode]
        with _in_mode(mode), FakeLLM() as llm:
            # Each begins with its own random head: the scan looks for a head, then the rest by its hash.
            key = f"sk-{os.urandom(5).hex()}-park-{mode}"
            question, token = f"{os.urandom(5).hex()}-question-of-run-a", f"{os.urandom(5).hex()}-answer-of-run-a"
            llm.queue(Reply(f"the model says {token}"))
            flow_a = build_flow(
                "nodes:\n  A: ChatInput\n  M: ChatModel\n  P: Park\n  C: ChatOutput\nedges:\n"
                "  A.message -> M.prompt\n  A.message -> P.question\n  M.text -> P.text\n  P.out -> C.input_value\n"
                f"config:\n  M.api_key: OPENAI_API_KEY\n  M.base_url: {llm.openai_base_url}\n"
                f"  P.table: '{json.dumps(_table())}'\n",
                catalog=catalog,
            )
            assert flow_a.ok, flow_a.errors
            runner = local_run.real_runner()
            run_a = run_past_the_gate(flow_a.flow, question, env={"OPENAI_API_KEY": key}, allow_hosts=[llm.url])
            # Right after the answer, and for half a second: a scan may miss a process that hops every
            # 3 ms (gone before its name is read), twenty in a row do not.
            hoppers, end = [], time.monotonic() + 0.5
            while time.monotonic() < end:
                hoppers += _named("lfassist-hopper")
                time.sleep(0.02)
            own = f"{os.urandom(5).hex()}-input-of-run-b"
            needles = ",".join(_needle(s) for s in (question, token, key, own))
            flow_b = build_flow(
                "nodes:\n  A: ChatInput\n  F: Fetch\n  C: ChatOutput\nedges:\n  A.message -> F.text\n"
                f"  F.out -> C.input_value\nconfig:\n  F.needles: {needles}\n  F.url: {llm.url}/webhook\n",
                catalog=catalog,
            )
            assert flow_b.ok, flow_b.errors
            run_b = run_past_the_gate(flow_b.flow, own, allow_hosts=[llm.url])
            assert local_run.real_runner() is runner
            done[mode] = {
                "a": run_a,
                "b": run_b,
                "key": key,
                "needles": {"question": question[:10], "token": token[:10], "key": key[:10], "own": own[:10]},
                "posted": [r for r in llm.requests if r.path.endswith("/webhook")],
                "model_calls": [r for r in llm.requests if not r.path.endswith("/webhook")],
                "hoppers": hoppers,
                "runner": _sched(_host_pid(runner)),
            }
        return done[mode]

    return runs


def _report(run) -> dict:
    assert run.ok, run
    return json.loads(run.text)


@pytest.mark.parametrize("mode", MODES)
def test_another_runs_key_does_not_pass_through_ipc(two_runs, mode):
    """Run A parks its key in a System V queue, a POSIX queue and a System V segment; run B, with no
    key and one webhook allowed, looks for it there and posts what it found. Nothing is parked, each
    run has an IPC namespace of its own, and the webhook gets no key. The control: the same two
    payloads, run outside the sandbox one after the other, hand the key over."""
    got = two_runs(mode)
    a, b = _report(got["a"]), _report(got["b"])
    assert got["model_calls"] and got["model_calls"][0].headers["authorization"] == f"Bearer {got['key']}"  # A had it
    assert a["ipc"] == {"msg": "EPERM", "mq": "EPERM", "shm": "EPERM"}, a["ipc"]
    assert {b["ipc"][k] for k in ("msg", "mq", "shm")} == {"EPERM"}, b["ipc"]
    assert len(got["posted"]) == 1 and b["posted"] in (200, "HTTPError")  # B's webhook was reached ...
    assert got["key"] not in json.dumps(got["posted"][0].body) and "_text" not in json.dumps(b["ipc"])  # ... emptied


_OWN_NAMESPACES = """
import sys
ids = os.getuid(), os.getgid()
_lib().unshare({flags})
maps = ("setgroups", "deny"), ("uid_map", f"{{ids[0]}} {{ids[0]}} 1"), ("gid_map", f"{{ids[1]}} {{ids[1]}} 1")
for name, text in maps:
    with open(f"/proc/self/{{name}}", "w") as fh:
        fh.write(text)
"""
"""The controls' way out of this machine's IPC (and mounts): namespaces of their own, our ids mapped."""


def test_the_ipc_hand_off_works_outside_the_sandbox(tmp_path):
    """The control of the IPC test: its payloads, unconfined, in a private IPC namespace of this
    machine (nothing is left in the real one), do hand a key from one process to the next."""
    script = tmp_path / "hand_off.py"
    script.write_text(
        PAYLOADS
        + _OWN_NAMESPACES.format(flags="0x10000000 | 0x08000000")  # CLONE_NEWUSER | CLONE_NEWIPC
        + "print(json.dumps(park('sk-handed-over')))\n"
        + "if os.fork() == 0:\n    print(json.dumps(fetch()))\n    sys.stdout.flush()\n    os._exit(0)\n"
        + "os.wait()\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True)
    parked, fetched = (json.loads(line) for line in out.stdout.splitlines())
    assert parked == {"msg": "ok", "mq": "ok", "shm": "ok"}, out.stdout
    assert fetched["msg_text"] == fetched["mq_text"] == fetched["shm_text"] == "sk-handed-over", fetched


@pytest.mark.parametrize("mode", MODES)
def test_a_run_reads_nothing_of_the_run_before_it_from_the_runners_heap(two_runs, mode):
    """Run A's input and answer went through the runner; run B scans all of its own memory for them
    (and for A's key). None is there: B was forked from a zygote that never read a run. The control:
    the scan finds B's own input."""
    got = two_runs(mode)
    a, b = _report(got["a"]), _report(got["b"])
    needles = got["needles"]
    assert needles["question"] in a["question"] and needles["token"] in a["model"]  # A answered with both
    assert b["memory"] == {needles["question"]: False, needles["token"]: False, needles["key"]: False,
                           needles["own"]: True}, b["memory"]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_a_run_cannot_renice_reschedule_pin_or_relimit_the_runner(two_runs, mode):
    """Run A aims at every process it can name (its parent, pid 1 and every pid up to 64, its process
    group, a user); the runner and run B are scheduled as before. The control: A renices itself."""
    got = two_runs(mode)
    a, b = _report(got["a"]), _report(got["b"])
    for kind in ("renice", "idle", "pin", "limit", "renice group", "renice user"):
        assert "ok" not in a["aim"][kind], (kind, a["aim"])
    assert a["aim"]["self"] == "ok" and a["aim"]["self_nice"] == 5  # the control: the calls work on itself
    ours = _sched(os.getpid())  # the runner is scheduled and limited as the kernel that started it
    assert got["runner"] == ours, got["runner"]
    assert b["state"] == ours, b["state"]  # and so is every later run


def test_the_aim_payload_renices_reschedules_pins_and_relimits_outside_the_sandbox():
    """The control of the test above: the same payload, unconfined (in a session of its own), does
    change a process of ours."""
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        before = _sched(victim.pid)
        code = PAYLOADS + f"\nprint(json.dumps(aim([{victim.pid}])))\n"
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, timeout=60, check=True, start_new_session=True
        )
        after = _sched(victim.pid)
    finally:
        victim.kill()
        victim.wait()
    assert before["nice"] == 0 and after["nice"] == 19
    assert after["policy"] == os.SCHED_IDLE and after["cpus"] == 1 and after["nofile"] == [64, 64]


@pytest.mark.parametrize("mode", MODES)
def test_the_runs_filter_has_every_rule_of_the_validations(two_runs, mode):
    """One table makes both filters (``_confine.SECCOMP_RULES``): run A tries each rule, aimed where
    only a missing rule would let it through, and each is refused."""
    a = _report(two_runs(mode)["a"])
    table = _table()
    assert len(table) > 40
    refused = {name: ("ENOSYS" if rule == "enosys" else "EPERM") for name, _, rule in table}
    assert a["filter"] == refused, {k: v for k, v in a["filter"].items() if v != refused[k]}


def test_the_filter_probe_gets_through_without_the_filter():
    """The control of the test above: unconfined (in namespaces of its own), the same probes are
    answered by the kernel -- not one EPERM."""
    unshare = _OWN_NAMESPACES.format(flags="0x10000000 | 0x08000000 | 0x00020000")  # USER | IPC | NS
    code = PAYLOADS + unshare + f"print(json.dumps(probe({_table()!r})))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, start_new_session=True
    )
    answers = json.loads(out.stdout)
    assert [name for name, value in answers.items() if value == "EPERM"] == [], answers


def test_the_validations_filter_has_every_rule_of_the_table_and_its_own_layer():
    """The other half of the one table: a validation's child installs ``SECCOMP_RULES`` with its own
    layer in the same filter (``VALIDATION_RULES``: no socket, no program, its report channel kept),
    never in place of a rule of the table -- the probes above are refused there too, and so are the
    layer's own calls; the real run's filter (the table alone, as its init installs it) refuses the
    table's and not the layer's.  The control: the same probes without a filter, none EPERM."""
    import platform

    from lfassist_jupyter.sandbox.worker import _confine

    assert set(_confine.SECCOMP_RULES).isdisjoint(_confine.VALIDATION_RULES)  # a layer adds, never overrides
    numbers = {**_confine._SECCOMP_ARCH[platform.machine()][2], **_confine._SECCOMP_SAME}
    layer = [(name, numbers[name], rule) for name, rule in sorted(_confine.VALIDATION_RULES.items()) if rule == "deny"]
    assert {name for name, _, _ in layer} == {"socket", "execve", "execveat"}
    table = _table() + layer

    def probed(install: str) -> dict:
        unshare = "" if install else _OWN_NAMESPACES.format(flags="0x10000000 | 0x08000000 | 0x00020000")
        script = (
            "import socket\nfrom lfassist_jupyter.sandbox.worker import _confine\n"
            f"channel, _ = socket.socketpair()\n{install}\n"
            f"print(json.dumps(probe({table!r})), flush=True)\nos._exit(0)\n"
        )
        code = PAYLOADS + unshare + script
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, start_new_session=True
        )
        return json.loads(out.stdout)

    unfiltered = probed("")
    assert [name for name, value in unfiltered.items() if value == "EPERM"] == [], unfiltered
    refused = {name: ("ENOSYS" if rule == "enosys" else "EPERM") for name, _, rule in table}
    answers = probed("_confine.install_seccomp(validation=True, channel=channel.fileno())")
    assert answers == refused, {k: v for k, v in answers.items() if v != refused[k]}
    run = probed("_confine.install_seccomp(os.getpid())")  # what a real run's init installs
    assert {k: v for k, v in run.items() if k in _confine.SECCOMP_RULES} == {
        k: v for k, v in refused.items() if k in _confine.SECCOMP_RULES
    }, run
    assert [name for name, _, _ in layer if run[name] == "EPERM"] == [], run


@pytest.mark.parametrize("mode", MODES)
def test_a_hopper_is_killed_with_its_run(two_runs, mode):
    """Run A leaves a process that forks and exits every 3 ms (the control: it hopped); when A's
    answer is back, it is gone, and it is not back a moment later."""
    got = two_runs(mode)
    assert _report(got["a"])["hops"] >= 5
    assert got["hoppers"] == []


STORM = """
import json
import subprocess
import sys

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message

# The storm itself runs in a small interpreter (a fork of the run's own, lfx in it, costs ~50 ms):
# it forks until refused or ``cap`` children, each waiting for its parent's end.
STORM = '''
import ctypes, os, sys
cap, (r, w), kids, error = int(sys.argv[1]), os.pipe(), 0, None
while kids < cap:
    try:
        pid = os.fork()
    except OSError as exc:
        error = type(exc).__name__
        break
    if pid == 0:
        ctypes.CDLL(None).prctl(15, b"lfassist-storm", 0, 0, 0)
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids += 1
print(kids, error, flush=True)
'''


class Storm(Component):
    display_name = "Storm"
    description = "Forks until it is refused (or has ``cap`` children), each child waiting."
    name = "Storm"
    inputs = [MessageTextInput(name="text", display_name="Text"), MessageTextInput(name="cap", display_name="Cap")]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        cap = str(self.cap).split()[0]
        done = subprocess.run([sys.executable, "-I", "-S", "-c", STORM, cap], capture_output=True, text=True)
        kids, error = done.stdout.split()
        return Message(text=json.dumps({"kids": int(kids), "error": None if error == "None" else error}))
"""

HOG = """
import json
import os
import select
import time

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class Hog(Component):
    display_name = "Hog"
    description = "Starts ``count`` processes that each hold ``mb`` MB, and says how much they hold at once."
    name = "Hog"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        MessageTextInput(name="count", display_name="Count"),
        MessageTextInput(name="mb", display_name="MB"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        count, mb, kids, allocated = int(str(self.count).split()[0]), int(str(self.mb).split()[0]), [], 0
        for _ in range(count):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                block = b"x" * (mb << 20)  # every page written
                os.write(w, b"ok")
                time.sleep(120)
                os._exit(len(block) and 0)
            os.close(w)
            if select.select([r], [], [], 30)[0] and os.read(r, 2) == b"ok":
                allocated += 1
            kids.append(pid)
        time.sleep(0.5)
        alive = [pid for pid in kids if os.waitpid(pid, os.WNOHANG)[0] == 0]
        return Message(text=json.dumps({"allocated": allocated, "alive": len(alive), "held_mb": len(alive) * mb}))
"""

BOUND_PROCESSES, BOUND_MB = 64, 512


@pytest.fixture(scope="module")
def bounded_flow(sandbox):
    """A flow around the Storm or the Hog node."""
    catalog = default_catalog()
    catalog.add("Storm", sandbox.component_template(STORM).template)
    catalog.add("Hog", sandbox.component_template(HOG).template)

    def flow(node: str, **config: str) -> dict:
        lines = "".join(f"  N.{k}: {v}\n" for k, v in config.items())
        built = build_flow(
            f"nodes:\n  A: ChatInput\n  N: {node}\n  C: ChatOutput\nedges:\n  A.message -> N.text\n"
            f"  N.out -> C.input_value\nconfig:\n{lines}",
            catalog=catalog,
        )
        assert built.ok, built.errors
        return built.flow

    return flow


def _bounded(mode: str, monkeypatch) -> local_run.RealRunner:
    """The kernel's runner of ``mode``, each run's whole bounds lowered for this test (64 processes and
    threads, 512 MB: the kernel sets them per run, on the run's cgroup)."""
    if mode == "full" and local_run._isolation.probe(sys.executable)[0] != "full":
        pytest.skip("bubblewrap is not available here")
    if mode == "reduced":
        monkeypatch.setenv("LFASSIST_SANDBOX", "reduced")
    runner = local_run.real_runner()
    monkeypatch.setattr(runner, "processes", BOUND_PROCESSES)
    monkeypatch.setattr(runner, "run_memory_mb", BOUND_MB)
    return runner


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_storm_and_a_memory_hog_are_bounded_as_a_whole(bounded_flow, mode, monkeypatch):
    """A run that forks as fast as it can is refused at its bound (64 processes and threads, all of
    them together); one whose four processes each take 200 MB holds at most its 512 MB at once; the
    answer says both. The controls: the storm ran until refused, the hog's processes did allocate."""
    runner = _bounded(mode, monkeypatch)
    if runner.bounds is None:
        pytest.skip(f"no cgroup here ({runner.bounds_reason}): the test below covers what is said then")

    storm = run_past_the_gate(bounded_flow("Storm", cap="400 forks"), "x")
    got = _report(storm)
    assert got["error"] == "BlockingIOError" and 20 <= got["kids"] < BOUND_PROCESSES, got
    assert f"bounded as a whole ({runner.bounds.text}): 64 processes and threads, 512 MB" in storm.isolation
    assert "it reached its bound of 64 processes and threads" in storm.isolation, storm.isolation
    assert _named("lfassist-storm") == []

    hog = run_past_the_gate(bounded_flow("Hog", count="4 processes", mb="200 MB"), "x")
    got = _report(hog)
    assert got["allocated"] >= 2 and got["held_mb"] <= BOUND_MB, got
    assert "it reached its memory bound of 512 MB" in hog.isolation, hog.isolation


@pytest.mark.parametrize("mode", MODES)
def test_without_a_cgroup_the_answer_says_the_bounds_are_per_process(bounded_flow, mode, monkeypatch):
    """Where the machine offers no cgroup, a run is bounded per process (RLIMIT_AS) and by the
    number of its processes in its own user namespace (RLIMIT_NPROC) -- except for the root user,
    whom the kernel exempts: the answer says which, and what it says holds. The control of the test
    above: the same hog now holds more than a whole run's bound."""
    runner = _bounded(mode, monkeypatch)
    monkeypatch.setattr(runner, "bounds", None)
    monkeypatch.setattr(runner, "bounds_reason", "none offered (the test)")

    hog = run_past_the_gate(bounded_flow("Hog", count="4 processes", mb="200 MB"), "x")
    assert _report(hog)["held_mb"] == 800
    assert f"bounded per process only: {runner.memory_mb} MB each, " in hog.isolation, hog.isolation

    said = re.search(r"(\d+) processes and threads in its user namespace \(no cgroup here", hog.isolation)
    cap = int(said.group(1)) + 50 if said else 150  # past the bound the answer states, if it states one
    storm = run_past_the_gate(bounded_flow("Storm", cap=f"{cap} forks"), "x")
    got = _report(storm)
    if said:
        assert got["error"] == "BlockingIOError" and got["kids"] < int(said.group(1)), got
    else:
        assert "processes not bounded: the kernel exempts the root user (no cgroup here" in storm.isolation
        assert got == {"kids": cap, "error": None}
    assert _named("lfassist-storm") == []
