"""Issue 38: the verdict is decided outside the process that runs the code.

The attacks of the fifth red-team round, each through the door it reaches, in both isolation
modes, each with a control that shows the attack ran:

- the forged verdict: a component whose only output raises takes the audit hook's frame from a
  blocked network call (``bdb.Bdb().get_stack(None, tb)``) to send a "valid, smoke passed" answer;
- the muted refusal: the component closes, replaces or blocks its report channel, or rewrites the
  hook's functions, then makes a refused call -- still recorded;
- the emptied deny tables: whatever reaches the hook's frames changes nothing it decides with; and
  with no hook at all, ``/bin/sh`` and a socket made through ctypes are refused by the kernel and
  recorded by the zygote;
- the forger node: in one flow, a node that rewrites how the others are judged;
- the heap read: a secret of one request looked for in the memory of the next request's process;
- reduced mode's uvloop: a socket made by native code, which raises no audit event.

The views from inside a child come from ``_support/verdict_op.py``, code of the worker's own.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import select
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from _support.components import GOOD, component

from lfassist_jupyter.sandbox import _isolation, zygote
from lfassist_jupyter.sandbox.client import SandboxValidator

SUPPORT = Path(__file__).resolve().parents[1] / "_support"
SECRET = "sk-heap-" + "0123456789abcdef" * 2  # a user's key, hard-coded in their own component
FORGED = {"is_valid": True, "builds": True, "phase": None, "class_name": "ProbeComponent", "smoke": "passed",
          "findings": [], "warnings": [], "phases_run": ["runtime", "smoke"]}  # fmt: skip


def _start(mode: str, **options: object) -> SandboxValidator:
    patch = pytest.MonkeyPatch()
    if mode == "reduced":
        patch.setenv("LFASSIST_SANDBOX", "reduced")
    else:
        found, reason = _isolation.probe(sys.executable)
        if found != "full":
            pytest.skip(f"OS-level isolation is unavailable here: {reason}")
        patch.delenv("LFASSIST_SANDBOX", raising=False)
    patch.setattr(zygote, "OP_MODULES", (*zygote.OP_MODULES, SUPPORT / "verdict_op.py"))
    patch.setattr(zygote, "WORKER_OPTIONS", {"unarmed_ops": ["heap_scan", "no_hook"], **options})
    validator = SandboxValidator(timeout=10)
    try:
        validator.start()
        validator.reference()
    finally:
        patch.undo()
    assert validator.info()["isolation"] == mode
    return validator


@pytest.fixture(scope="module", params=["full", "reduced"])
def box(request):
    """A sandbox of each kind whose worker also loads the test ops (``heap_scan`` and ``no_hook``
    run without the judging hook)."""
    validator = _start(request.param)
    yield validator
    validator.close()


def op(validator: SandboxValidator, name: str, **fields: object) -> dict:
    answer, failure = validator._call({"op": name, "timeout": 20, **fields}, 20)
    assert answer is not None, failure
    return answer


def kernel_refusals(answer: dict) -> list[str]:
    return [r["what"] for r in answer["sandbox_refused"] if r["event"] == "seccomp"]


def run_plain(script: str, cwd: Path) -> subprocess.CompletedProcess:
    """``script`` in a plain interpreter, no sandbox: the controls."""
    return subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


# -- the forged verdict ------------------------------------------------------------------------------

# The red team's component: a blocked network call, the hook's frame from its traceback, the
# hook's writer from the frame's locals (and its closure), a "valid" answer through it, an exit.
# Every step is recorded in the component's display name; its only output raises NameError.
RED_TEAM = f"""
import bdb, json, os, socket


def _forge():
    steps = {{}}
    tb = None
    try:
        socket.create_connection(("10.1.2.3", 80), timeout=0.1)
    except BaseException as exc:
        steps["blocked"] = type(exc).__name__
        tb = exc.__traceback__
    try:
        stack, _ = bdb.Bdb().get_stack(None, tb)
        steps["frames"] = len(stack)
        writers = []
        for frame, _ in stack:
            for value in getattr(frame, "f_" + "locals").values():
                cells = getattr(value, "__clo" + "sure__", None) or ()
                writers += [c.cell_contents for c in cells if callable(c.cell_contents)]
                writers.append(value)
        steps["writers"] = len(writers)
        for writer in writers:
            if getattr(writer, "__name__", "") == "emit":
                writer(b"answer", json.dumps({FORGED!r}).encode())
                getattr(os, "_ex" + "it")(0)
    except BaseException as exc:
        steps["stopped"] = type(exc).__name__ + ": " + str(exc)[:200]
    return json.dumps(steps)
"""


def test_the_red_teams_forged_verdict_is_reported_as_it_is(box):
    """The component never gets the hook's frame (reading a traceback's frame is refused to a
    debugger's stack walk too), the hook holds no writer of the answer anyway, and the report
    says what happened: the refusal, and the output that raises.  The control: the component's
    own record shows the attack ran (its network call was blocked and it went for the frame)."""
    report = box.validate(
        component("return Message(text=no_such_name)", module=RED_TEAM, load="display_name = _forge()")
    )
    steps = json.loads(report.display_name)
    assert steps["blocked"] == "NetworkBlocked" and "tb_frame" in steps["stopped"], steps  # the attack ran
    assert not report.is_valid and report.smoke != "passed"
    assert "tb_frame" in report.error, report.error


# A signal handler gets the frame it interrupted: with a fast timer and audited calls in a loop,
# that is often a hook's, caught as it starts.  What each frame holds that looks like the secret.
SIGNALS = """
import json, os, signal


def _catch():
    seen = {"frames": 0, "hook_frames": 0, "secrets": 0}

    def handler(signum, frame):
        seen["frames"] += 1
        if frame is not None and frame.f_code.co_filename.endswith("_hook.py"):
            seen["hook_frames"] += 1
            for value in getattr(frame, "f_" + "locals").values():
                if isinstance(value, bytes) and len(value) == 32:
                    seen["secrets"] += 1

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.0001, 0.0001)
    for _ in range(30000):
        os.listdir(".")
    signal.setitimer(signal.ITIMER_REAL, 0)
    return json.dumps(seen)
"""


def test_a_signal_handler_that_catches_the_hook_as_it_starts_finds_no_secret(box):
    """The component's SIGALRM handler, on a fast timer, while it makes audited calls in a loop:
    it is handed the hook's frame, caught as the hook starts -- the control: the route is real --
    and none of those frames holds the answer's secret (it is in a thread no handler runs on)."""
    run = box.run_component(component("return Message(text=_catch())", module=SIGNALS), "x", timeout=20)
    assert run.ok, run.error
    seen = json.loads(run.text)
    assert seen["frames"] > 20 and seen["hook_frames"] > 0, seen  # the control
    assert seen["secrets"] == 0, seen


def test_what_the_hooks_frames_hold_writes_no_answer_and_changes_nothing(box):
    """Seen by code of the worker's own (whose frame walks are allowed): the frames of a refusal
    and of a blocked call, everything they lead to -- no closure cell, nothing like the answer's
    secret, nothing mutable but the child's own notes -- and every way to change the hook's
    functions, tried, is refused; a refused call after it still is, and is recorded.  The control:
    the same search over a hook made the old way (its state in a closure) finds its cells and
    secret."""
    seen = op(box, "hook_frames")
    assert seen["hook_frames"] >= 2 and seen["functions"] > 5, seen  # it did reach the hook's frames
    assert seen["control"]["cells"] and seen["control"]["secrets"], seen
    assert seen["cells"] == 0 and seen["secrets"] == 0 and seen["mutable"] == ["OBSERVED"], seen
    assert seen["tries"] == ["SandboxViolation"], seen
    assert seen["after"] == {"chdir": "SandboxViolation", "ctypes": "SandboxViolation", "system": "SandboxViolation"}
    events = [r["event"] for r in seen["sandbox_refused"]]
    assert events[0] == "os.chdir" and "object.__setattr__" in events and "object.__delattr__" in events
    assert events.count("os.chdir") == 2 and "os.system" in events and "ctypes.dlopen" in events, events


def test_the_hooks_functions_hold_no_state_the_code_could_change(box):
    """How every child makes its hook, and the answer thread's loop: no function has a closure, a
    keyword-only default or an opcode that reads a global or a cell (the ``builtins`` module, a
    module's dict and a cell are all the code's to rewrite)."""
    parts = op(box, "hook_parts")["parts"]
    assert {p["name"] for p in parts} >= {"hook", "judge", "refuse", "emit", "_answerer"}
    for part in parts:
        assert not part["closure"] and not part["kwdefaults"], part
        assert part["globals"] == [] and part["cells"] == [] and part["inner_globals"] == [], part


# -- the muted refusal ------------------------------------------------------------------------------

MUTE = """
import errno, json, os, socket


def _mute():
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + name).startswith("socket:"):
                found[int(name)] = {}
        except OSError:
            pass
    for fd, tried in found.items():
        calls = (
            ("nonblocking", lambda: os.set_blocking(fd, False)),
            ("shutdown", lambda: socket.socket(fileno=os.dup(fd)).shutdown(socket.SHUT_WR)),
            ("dup2", lambda: os.dup2(0, fd)),
            ("close", lambda: os.close(fd)),
        )
        for what, call in calls:
            try:
                call()
                tried[what] = "done"
            except OSError as exc:
                tried[what] = errno.errorcode.get(exc.errno, str(exc.errno))
    try:
        os.chdir("/")
        found["chdir"] = "done"
    except BaseException as exc:
        found["chdir"] = type(exc).__name__
    return json.dumps(found)
"""


def test_a_refusal_after_muting_the_channel_is_still_recorded(box):
    """The component finds its report channel (its only socket) and closes it, replaces it, shuts
    it down and makes it non-blocking -- each refused by the kernel, and recorded -- then makes a
    refused call: the refusal is in the report.  The control: the component did find the channel
    and try each of these (its record), which the unit test below shows work without the filter."""
    report = box.validate(component("return Message(text='x')", module=MUTE, load="display_name = _mute()"))
    tried = json.loads(report.display_name)
    channels = [v for k, v in tried.items() if k != "chdir"]
    assert len(channels) == 1 and tried["chdir"] == "SandboxViolation", tried  # the attack ran
    assert channels[0] == {"nonblocking": "EPERM", "shutdown": "EPERM", "dup2": "EPERM", "close": "EPERM"}
    evidence = " ".join(f.evidence or "" for f in report.findings)
    assert not report.is_valid and "`os.chdir`" in evidence, evidence  # the refusal, recorded
    for call in ("ioctl", "fcntl", "dup2", "close"):  # and each try at muting it
        assert f"`{call} on the sandbox's report channel (refused by the kernel)`" in evidence, evidence


# -- the emptied deny tables ------------------------------------------------------------------------

NO_HOOK_PAYLOAD = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    pid = os.fork()
    if pid == 0:
        argv = (ctypes.c_char_p * 4)(b"/bin/sh", b"-c", b"echo ran > MARKER", None)
        libc.execv(b"/bin/sh", argv)
        os._exit(9)
    os.waitpid(pid, 0)
    sock = libc.socket(2, 1, 0)
    address = (ctypes.c_ubyte * 16)(2, 0, *int(sys.argv[1]).to_bytes(2, "big"), 127, 0, 0, 1)
    print(os.path.exists("MARKER"), sock >= 0 and libc.connect(sock, address, 16) == 0)
    """
)


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def test_with_no_hook_at_all_a_shell_and_a_native_socket_are_refused_and_recorded(box, listener, tmp_path):
    """The deny tables as empty as they can be -- no judging hook in the child -- and ctypes runs
    ``/bin/sh`` and makes a socket to a listener here: the kernel refuses both, the zygote records
    both, the marker is never written and the listener sees no one.  The control: the same payload
    in a plain process runs the shell and connects."""
    plain = run_plain(NO_HOOK_PAYLOAD.replace("sys.argv[1]", str(listener.port)), tmp_path)
    assert plain.stdout.split() == ["True", "True"], plain.stderr[-2000:]
    assert (tmp_path / "MARKER").exists() and listener.accepted == 1  # the control
    seen = op(box, "no_hook", port=listener.port)
    assert seen["exec"] == "EPERM" and not seen["marker"] and seen["socket"] == "EPERM", seen
    assert listener.accepted == 1
    refused = kernel_refusals(seen)
    assert "execve (refused by the kernel)" in refused and "socket(AF_INET) (refused by the kernel)" in refused


def test_the_childs_filter_refuses_and_reports_what_it_keeps_from_the_code(tmp_path):
    """The kernel layer itself, in a process with the validation child's filter (its channel kept
    open, refusals notified): a socket, a program, closing or replacing the channel are refused
    (EPERM) and each reaches the supervisor; writing the channel still works.  The control: the
    same calls succeed without the filter."""
    from lfassist_jupyter.sandbox.worker import _confine

    def attempt(confined: bool) -> tuple[dict, list[str]]:
        channel_ours, channel_theirs = socket.socketpair()
        supervisor, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forked probe
            result: dict = {}
            try:
                channel = channel_theirs.fileno()
                if confined:  # the listener goes over the channel, as a child's greeting sends it
                    listener = _confine.install_seccomp(validation=True, channel=channel, notify=True)
                    socket.send_fds(channel_theirs, [b"L"], [listener])
                    os.close(listener)
                libc = ctypes.CDLL(None, use_errno=True)
                made = libc.socket(2, 1, 0)
                result["socket"] = ctypes.get_errno() if made < 0 else 0
                child = os.fork()
                if child == 0:
                    try:
                        os.execv("/bin/true", ["true"])
                    finally:
                        os._exit(7)
                result["execve"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
                result["write"] = os.write(channel, b"x")
                for name, call in (("dup2", lambda: os.dup2(0, channel)), ("close", lambda: os.close(channel))):
                    try:
                        call()
                        result[name] = 0
                    except OSError as exc:
                        result[name] = exc.errno
            except BaseException as exc:
                result["error"] = repr(exc)
            child_end.send(json.dumps(result).encode())
            os._exit(0)
        seen: list[str] = []
        listener = None
        if confined:
            _, fds, _, _ = socket.recv_fds(channel_ours, 1, 1)
            listener = fds[0]
        data = b""
        try:
            while not data:
                ready = select.select([supervisor, *([listener] if listener is not None else [])], [], [], 30)[0]
                assert ready, "the probe hangs"
                if supervisor in ready:
                    data = supervisor.recv(4096)
                elif (taken := _confine.notification(listener)) is not None:
                    seen.append(taken[2])
                    _confine.refuse_notification(listener, taken[0])
        finally:
            os.waitpid(pid, 0)
        if listener is not None:
            os.close(listener)
        return json.loads(data), seen

    plain, none = attempt(False)
    assert plain == {"socket": 0, "execve": 0, "write": 1, "dup2": 0, "close": 0} and none == []
    confined, seen = attempt(True)
    assert confined["socket"] == errno.EPERM and confined["execve"] == 7 and confined["write"] == 1
    assert confined["dup2"] == errno.EPERM and confined["close"] == errno.EPERM, confined
    assert seen == [
        "socket(AF_INET)",
        "execve",
        "dup2 on the sandbox's report channel",
        "close on the sandbox's report channel",
    ], seen


# -- the forger node --------------------------------------------------------------------------------

# A node whose code, while lfx loads it, makes every later load in its process say "it loads".
FORGER = """
import sys


def _forge():
    for name, module in list(sys.modules.items()):
        if name.endswith("._probe_run") and hasattr(module, "_loaded"):
            module._loaded = lambda *args, **kwargs: {"ok": True, "missing_methods": []}
            return "forged"
    return "not found"
"""
BROKEN = GOOD.replace('    icon = "type"', "    icon = no_such_name", 1)


PLAIN = "name: Plain\nnodes:\n  A: ChatInput\n  C: ChatOutput\nedges:\n  A.message -> C.input_value\n"


def _flow_with(codes: list[str], catalog) -> dict:
    from lfassist_jupyter import build_flow

    flow = build_flow(PLAIN, catalog=catalog).flow
    template = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "ChatOutput")
    for i, code in enumerate(codes):
        node = json.loads(json.dumps(template))
        node["id"] = node["data"]["id"] = f"Custom-{i}"
        node["data"]["type"] = "CustomComponent"
        node["data"]["node"]["template"]["code"]["value"] = code
        node["data"]["node"]["display_name"] = f"Custom {i}"
        node["data"]["node"]["outputs"] = []  # no output is called: whether the code loads is the question
        flow["data"]["nodes"].append(node)
    return flow


def test_a_forger_node_cannot_write_the_other_nodes_verdicts(box, monkeypatch):
    """A flow with a node that, while it loads, makes every later load of its process say "it
    loads", and a node whose class body raises: ``validate_flow`` names the broken node with lfx's
    error, and again from the remembered verdicts (the forger itself is named by the outgoing gate,
    whose scan refuses its code; that does not keep its code from loading first).  The control: the
    same two codes loaded in one child (as the flow check did before) give the broken node a forged
    "ok"."""
    from lfassist_jupyter import default_catalog, validate_flow

    forger = component("return Message(text='x')", module=FORGER, load="description = _forge()")
    builds = [{"code": code, "methods": ["build_out", "build_output"], "node": None} for code in (forger, BROKEN)]
    shared = op(box, "component_verdicts", builds=builds, each=10)
    assert [v["ok"] for v in shared["verdicts"]] == [True, True]  # the control: the forger wrote the verdict
    monkeypatch.setattr(box, "_verdicts", {})
    catalog = default_catalog(box)
    flow = _flow_with([forger, BROKEN], catalog)
    for _ in range(2):  # the second time from the verdicts remembered by their code's hash
        errors = validate_flow(flow, catalog=catalog).errors
        assert [(e.node_id, e.code) for e in errors[:1]] == [("Custom-0", "unsafe_code")], errors
        broken = [e for e in errors if e.node_id == "Custom-1"]
        assert len(errors) == 2 and len(broken) == 1 and "no_such_name" in broken[0].message, errors


# -- the heap read ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def box_without_forker():
    """The control's sandbox: its spares forked by the zygote itself, as before.  One, reduced
    (the quicker to start), for both kinds of ``box``: what a spare inherits is the zygote's memory
    whatever namespaces it is in, so one control shows the scan finds a key that is there."""
    validator = _start("reduced", forker=False)
    yield validator
    validator.close()


def _secret_request_then_scan(validator: SandboxValidator) -> dict:
    code = GOOD.replace(
        'description = "Uppercases a text."', f'description = "Uppercases a text."\n    key = {SECRET!r}'
    )
    assert validator.component_template(code).ok  # its answer carries the code: the zygote parsed it
    return op(validator, "heap_scan", reversed=[SECRET[::-1], "no-such-marker-0123456789abcdef"[::-1]])


def test_the_next_request_finds_nothing_of_the_previous_one_in_its_memory(box, box_without_forker):
    """Request A carries a user's key; request B reads every writable page of its own process for
    it.  Spares are forked by the forker, which never held a request: not there.  The control: a
    zygote that forks its spares itself hands A's key to B's process."""
    assert _secret_request_then_scan(box_without_forker)["found"] == [0]  # the control
    seen = _secret_request_then_scan(box)
    assert seen["found"] == [] and seen["scanned_mb"] > 50, seen
    assert box.info()["state"] == "ready" and box._ready["forker"] is True


# -- reduced mode's uvloop --------------------------------------------------------------------------

UVLOOP = """
import asyncio, json


def _connect(port):
    import uvloop

    async def go():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()
        return "connected"

    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(go())
    except BaseException as exc:
        return type(exc).__name__ + ": " + str(exc)[:200]
    finally:
        loop.close()
"""


def test_a_socket_made_by_uvloop_reaches_no_one_and_is_recorded(box, listener, tmp_path):
    """uvloop makes its sockets in C, with no audit event: the kernel refuses the socket, the
    zygote records it, the listener sees no one.  The control: the same code in a plain process
    connects."""
    pytest.importorskip("uvloop")
    plain = run_plain(UVLOOP + f"\nprint(_connect({listener.port}))\n", tmp_path)
    assert plain.stdout.strip() == "connected" and listener.accepted == 1, plain.stderr[-2000:]  # the control
    report = box.validate(component(f"return Message(text=_connect({listener.port}))", module=UVLOOP))
    assert listener.accepted == 1
    assert not report.is_valid and "socket(AF_INET) (refused by the kernel)" in report.error, report.error
