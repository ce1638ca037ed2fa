"""The warm real runner (``sandbox/local_run.py`` + ``worker/_runner.py``): one process that imported lfx,
one confined child forked per real run.

What a warm process must not cost: a run finds nothing of the run before it -- not its variables in
the environment, nor its files, nor its processes, nor its secret anywhere in its own memory (the
runner never read a run's request: each child reads its own) -- and a stopped run leaves nothing
running. Through ``run_flow_for_real`` and ``%%assist_flow --run-local``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from _support.components import QA_SPEC

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

    first = lfassist_jupyter.run_flow_for_real(recall_flow(), "leave", env={"DEMO_SERVICE_KEY": first_secret})
    assert first.ok and first.text == "left", first
    assert _left_behind() == []  # the process it started went with it
    pid = local_run.real_runner().pid

    needles = f"{_needle(first_secret)},{_needle(own_input)}"
    second = lfassist_jupyter.run_flow_for_real(
        recall_flow(needles), own_input, env={"DEMO_SERVICE_KEY": "another-key-0123456789"}
    )

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
