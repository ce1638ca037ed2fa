"""The real run's edges (issue 31): what a flow run for real can reach and see, tried as a hostile flow would.

Each attack carries its control: the same flow, given what it asks for, gets it -- so a refusal is the
fence's doing, not a broken flow. The flows hold generated components that report what they tried:
``Knock`` (URLs through the run's proxy, as an API Request node would) and ``Look`` (directories
listed, files written, the scratch space filled), and they run through the public doors
(``run_flow_for_real``, ``%%assist_flow --run-local``)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import socket
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest
from _support.components import LLM_SPEC
from _support.pong import pong_server

import lfassist_jupyter
from lfassist_jupyter import build_flow, default_catalog
from lfassist_jupyter.flows.real_run import run_plan
from lfassist_jupyter.sandbox import _isolation
from lfassist_jupyter.sandbox.egress import Allowed, EgressProxy, is_public

KNOCK = """
import json
import urllib.request

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class Knock(Component):
    display_name = "Knock"
    description = "Tries each URL through the run's proxy, as an API Request node would."
    name = "Knock"
    inputs = [MessageTextInput(name="text", display_name="Text"), MessageTextInput(name="urls", display_name="URLs")]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        seen = {}
        for url in str(self.urls or "").split(","):
            try:
                seen[url] = "reached: " + urllib.request.urlopen(url, timeout=5).read().decode()[:40]
            except Exception as exc:
                seen[url] = f"blocked: {type(exc).__name__} {getattr(exc, 'code', '')}".strip()
        return Message(text=json.dumps(seen))
"""

LOOK = """
import json
import os

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class Look(Component):
    display_name = "Look"
    description = "Lists directories, writes files, fills its scratch space; says what it got."
    name = "Look"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        MessageTextInput(name="paths", display_name="Paths"),
        MessageTextInput(name="writes", display_name="Writes"),
        MessageTextInput(name="reads", display_name="Reads"),
        MessageTextInput(name="fill_mb", display_name="Fill MB"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        got = {"list": {}, "write": {}, "read": {}, "cwd": os.getcwd()}
        for path in filter(None, str(self.paths or "").split(",")):
            try:
                got["list"][path] = sorted(os.listdir(path))
            except OSError as exc:
                got["list"][path] = f"error: {exc.strerror}"
        for path in filter(None, str(self.writes or "").split(",")):
            try:
                with open(path, "w") as fh:
                    fh.write("written by a flow")
                got["write"][path] = "written"
            except OSError as exc:
                got["write"][path] = f"error: {exc.strerror}"
        for path in filter(None, str(self.reads or "").split(",")):
            try:
                with open(path) as fh:
                    got["read"][path] = fh.read(100)
            except OSError as exc:
                got["read"][path] = f"error: {exc.strerror}"
        filled, chunk = 0, b"x" * (1 << 20)
        try:
            for i in range(int(str(self.fill_mb or "0").removesuffix("mb")) // 64):
                with open(f"fill-{i}", "wb") as fh:
                    for _ in range(64):
                        fh.write(chunk)
                        filled += len(chunk)
            got["fill"] = "all written"
        except OSError as exc:
            got["fill"] = f"error: {exc.strerror}"
        got["filled_mb"] = filled >> 20
        got["own"] = sorted(os.listdir("."))
        return Message(text=json.dumps(got))
"""


DIAL = """
import json
import socket
import urllib.request

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class Dial(Component):
    display_name = "Dial"
    description = "Connects to a Unix socket by its path, and fetches a URL through the run's proxy."
    name = "Dial"
    inputs = [
        MessageTextInput(name="text", display_name="Text"),
        MessageTextInput(name="path", display_name="Path"),
        MessageTextInput(name="url", display_name="URL"),
    ]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        got = {}
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(5)
                s.connect(str(self.path))
                s.sendall(b"hello from a flow")
                got["unix"] = "reached: " + s.recv(100).decode()
        except OSError as exc:
            got["unix"] = f"blocked: {type(exc).__name__}"
        try:
            got["url"] = "reached: " + urllib.request.urlopen(str(self.url), timeout=5).read().decode()[:40]
        except Exception as exc:
            got["url"] = f"blocked: {type(exc).__name__}"
        return Message(text=json.dumps(got))
"""


def _fenced() -> bool:
    return _isolation.probe(sys.executable)[0] == "full"


# A real run starts the real runner (a process that imports lfx) on first use: ``slow`` (make test, not test-fast).
real_run = pytest.mark.slow


@pytest.fixture(scope="module")
def pong():
    """A local HTTP server on a random port: a stand-in for any local service (the kernel's ports)."""
    with pong_server() as port:
        yield port


@pytest.fixture(scope="module")
def catalog(sandbox):
    catalog = default_catalog()
    catalog.add("Knock", sandbox.component_template(KNOCK).template)
    catalog.add("Look", sandbox.component_template(LOOK).template)
    catalog.add("Dial", sandbox.component_template(DIAL).template)
    return catalog


def _flow(catalog, node: str, **config: str) -> dict:
    lines = "".join(f"  N.{k}: {v}\n" for k, v in config.items())
    spec = (
        f"nodes:\n  A: ChatInput\n  N: {node}\n  C: ChatOutput\nedges:\n  A.message -> N.text\n"
        f"  N.out -> C.input_value\nconfig:\n{lines}"
    )
    built = build_flow(spec, catalog=catalog)
    assert built.ok, built.errors
    return built.flow


# -- a host without a port is its scheme's default ports only ----------------------------------------------------


@real_run
def test_allow_host_without_a_port_cannot_reach_a_second_local_port(flow_ip, catalog, pong, tmp_path):
    path = tmp_path / "knock.json"
    path.write_text(json.dumps(_flow(catalog, "Knock", urls=f"http://localhost:{pong}/")))

    attack = flow_ip.run_cell_magic("assist_flow", "--run-local hi --allow-host localhost", str(path))

    assert attack.run.ok, attack.run
    assert json.loads(attack.run.text) == {f"http://localhost:{pong}/": "blocked: HTTPError 403"}
    assert [(r.host, r.port, r.reason) for r in attack.run.refused] == [
        ("localhost", pong, "not on this run's allow-list")
    ]
    assert attack.run.hosts == ["localhost:80/443"]  # what "localhost" opened: its default ports
    assert f"Refused by the network fence: localhost:{pong}" in str(attack)

    # The control: the same flow, the port named, reaches the same server.
    control = flow_ip.run_cell_magic("assist_flow", f"--run-local hi --allow-host localhost:{pong}", str(path))
    assert json.loads(control.run.text) == {f"http://localhost:{pong}/": "reached: pong"}
    assert control.run.refused == []


def test_a_host_without_a_port_in_the_plan_is_its_default_ports():
    plan = run_plan(
        LLM_SPEC,
        catalog=default_catalog(),
        allow_hosts=["localhost", "http://127.0.0.1", "https://example.com", "[::1]:8080"],
    )
    assert [(h.host, h.port) for h in plan.hosts] == [
        ("localhost", None),
        ("127.0.0.1", 80),
        ("example.com", 443),
        ("::1", 8080),
    ]
    localhost = plan.hosts[0]
    assert localhost.matches("localhost", 80) and localhost.matches("localhost", 443)
    assert not localhost.matches("localhost", 8888) and not localhost.matches("localhost", 11434)
    assert "localhost:80/443 (you)" in str(plan)


def test_the_fence_refuses_the_kernels_own_ports_unless_their_port_is_named(pong, tmp_path):
    """A port of the kernel (from its connection file) is reached only through an entry that names that
    very port: not through a port a setting implied (Ollama's default 11434 could be one of them)."""
    get = f"GET http://127.0.0.1:{pong}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    implied = Allowed("127.0.0.1", pong, True, "OLLAMA_HOST", named=False)
    with EgressProxy([implied], str(tmp_path / "a.sock"), kernel_ports={pong}) as proxy:
        assert _through(proxy.socket_path, get).startswith(b"HTTP/1.1 403")
    assert [(r["port"], r["reason"]) for r in proxy.refused] == [(pong, "a port of the Jupyter kernel")]

    named = Allowed("127.0.0.1", pong, True, "you")
    with EgressProxy([named], str(tmp_path / "b.sock"), kernel_ports={pong}) as proxy:
        assert _through(proxy.socket_path, get).endswith(b"pong")  # the control: named with its port
    assert proxy.refused == []


@real_run
def test_a_flow_run_from_a_kernel_cannot_reach_that_kernels_ports(sandbox, catalog, tmp_path):
    """The issue's attack in a real Jupyter kernel: a flow knocks on all five ZMQ ports of the kernel it
    was run from, with ``allow_hosts=["localhost", "127.0.0.1"]``; each is refused. The control names
    the heartbeat port and reaches it."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, "LFASSIST_DATA_DIR": str(tmp_path / "data")})
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        info = km.get_connection_info()
        ports = sorted(info[f"{name}_port"] for name in ("shell", "iopub", "stdin", "control", "hb"))
        urls = ",".join(f"http://127.0.0.1:{p}/" for p in ports)
        path = tmp_path / "knock.json"
        path.write_text(json.dumps(_flow(catalog, "Knock", urls=urls)))
        code = textwrap.dedent(
            f"""
            import json, lfassist_jupyter
            for hosts in (["localhost", "127.0.0.1"], ["127.0.0.1:{info["hb_port"]}"]):
                run = lfassist_jupyter.run_flow_for_real({str(path)!r}, "x", allow_hosts=hosts)
                print("RESULT" + json.dumps([run.ok, run.text, [[r.port, r.reason] for r in run.refused]]))
            """
        )
        out = _execute(client, code, timeout=600)
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)
    results = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("RESULT")]
    assert len(results) == 2, out
    (ok, text, refused), (ok2, text2, refused2) = results
    assert ok and all(v == "blocked: HTTPError 403" for v in json.loads(text).values()), text
    assert sorted(port for port, _ in refused) == ports
    assert {reason for _, reason in refused} <= {"not on this run's allow-list", "a port of the Jupyter kernel"}
    # The control: the heartbeat port, named with its port, is reached (it echoes whatever it gets).
    assert ok2 and "blocked: HTTPError 403" not in json.loads(text2)[f"http://127.0.0.1:{info['hb_port']}/"]
    assert info["hb_port"] not in [port for port, _ in refused2]


def _execute(client, code: str, timeout: float) -> str:
    msg_id = client.execute(code)
    out = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            out.append("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out)


def _through(proxy_socket: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(proxy_socket)
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


# -- OLLAMA_HOST as Ollama reads it ---------------------------------------------------------------------------------

OLLAMA_CASES = [
    # OLLAMA_HOST, what the run's allow-list gets for it (host, port), what the run is given
    ("0.0.0.0", {("127.0.0.1", 11434), ("localhost", 11434), ("0.0.0.0", 11434), ("::1", 11434)},
     "http://127.0.0.1:11434"),
    ("::", {("127.0.0.1", 11434), ("localhost", 11434), ("::", 11434), ("::1", 11434)}, "http://127.0.0.1:11434"),
    ("[::]:9000", {("127.0.0.1", 9000), ("localhost", 9000), ("::", 9000), ("::1", 9000)}, "http://127.0.0.1:9000"),
    ("0.0.0.0:11435", {("127.0.0.1", 11435), ("localhost", 11435), ("0.0.0.0", 11435), ("::1", 11435)},
     "http://127.0.0.1:11435"),
    ("http://0.0.0.0:11434/", {("127.0.0.1", 11434), ("localhost", 11434), ("0.0.0.0", 11434), ("::1", 11434)},
     "http://127.0.0.1:11434"),
    ("gpu-box", {("gpu-box", 11434)}, "http://gpu-box:11434"),
    ("gpu-box:8080", {("gpu-box", 8080)}, "http://gpu-box:8080"),
    ("http://gpu-box", {("gpu-box", 80)}, "http://gpu-box:80"),
    ("https://ollama.example.com", {("ollama.example.com", 443)}, "https://ollama.example.com:443"),
    (":56789", {("127.0.0.1", 56789), ("localhost", 56789), ("::1", 56789)}, "http://127.0.0.1:56789"),
    ("  '10.0.0.5:11434'  ", {("10.0.0.5", 11434)}, "http://10.0.0.5:11434"),
]  # fmt: skip


def _ollama_flow() -> dict:
    flow = build_flow(LLM_SPEC).flow
    node = next(n for n in flow["data"]["nodes"] if n["data"]["type"] == "LanguageModelComponent")
    node["data"]["node"]["template"]["model"]["value"] = [{"name": "llama3.2", "provider": "Ollama"}]
    return flow


@pytest.mark.parametrize(("value", "hosts", "given"), OLLAMA_CASES, ids=[c[0].strip() for c in OLLAMA_CASES])
def test_ollama_host_is_read_as_ollama_reads_it(monkeypatch, value, hosts, given):
    monkeypatch.setenv("OLLAMA_HOST", value)
    plan = run_plan(_ollama_flow())
    assert {(h.host, h.port) for h in plan.hosts} == hosts
    assert all(h.private_ok and h.why == "OLLAMA_HOST" for h in plan.hosts)
    assert plan.config == {"OLLAMA_HOST": given, "OLLAMA_BASE_URL": given}  # and what lfx reads


def test_an_ollama_flow_without_ollama_host_opens_nothing_local(monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    plan = run_plan(_ollama_flow())
    assert plan.hosts == []  # Ollama's own default (127.0.0.1:11434) is local: only when named
    assert any("--allow-host 127.0.0.1:11434" in note for note in plan.notes), plan.notes


# -- private addresses inside IPv6 forms ----------------------------------------------------------------------------

_PRIVATE_V4 = ["127.0.0.1", "10.1.2.3", "192.168.1.10", "172.16.5.4", "169.254.169.254", "100.64.0.1", "0.0.0.0"]
_PUBLIC_V4 = ["8.8.8.8", "1.1.1.1", "93.184.216.34"]


def _forms(v4: str) -> dict[str, str]:
    """Every IPv6 form that embeds ``v4``, as the address a flow would ask the proxy for."""
    n = int(ipaddress.IPv4Address(v4))
    hi, lo = n >> 16, n & 0xFFFF
    obfuscated = n ^ 0xFFFFFFFF
    return {
        "ipv4-mapped": f"::ffff:{v4}",
        "ipv4-compatible": f"::{v4}",
        "ipv4-translated": f"::ffff:0:{v4}",
        "nat64": f"64:ff9b::{v4}",
        "nat64-local-96": f"64:ff9b:1::{hi:x}:{lo:x}",
        "nat64-local-48": _rfc6052_48(v4),
        "6to4": f"2002:{hi:x}:{lo:x}::1",
        "teredo-client": f"2001:0:4136:e378:8000:63bf:{obfuscated >> 16:x}:{obfuscated & 0xFFFF:x}",
        "teredo-server": f"2001:0:{hi:x}:{lo:x}:8000:63bf:3fff:fdd2",
    }


def _rfc6052_48(v4: str) -> str:
    """RFC 6052 with a /48 prefix: a.b in bits 48-63, bits 64-71 zero, c.d in bits 72-87."""
    a, b, c, d = (int(x) for x in v4.split("."))
    return str(ipaddress.IPv6Address(bytes([0, 0x64, 0xFF, 0x9B, 0, 1, a, b, 0, c, d, 0, 0, 0, 0, 0])))


def test_private_ipv4_inside_every_ipv6_form_is_private():
    table = []
    for v4 in _PRIVATE_V4 + _PUBLIC_V4:
        for form, text in _forms(v4).items():
            table.append((v4, form, is_public(ipaddress.ip_address(text))))
    wrong = [(v4, form) for v4, form, public in table if v4 in _PRIVATE_V4 and public]
    assert wrong == [], wrong
    # The control: the same forms around a public address are public (the checks decode, they do not
    # refuse every form) -- except Teredo and the local-use NAT64 prefix, which are not global themselves.
    public = {(v4, form) for v4, form, ok in table if v4 in _PUBLIC_V4 and ok}
    for v4 in _PUBLIC_V4:
        for form in ("ipv4-mapped", "nat64", "6to4"):
            assert (v4, form) in public, (v4, form)
    assert is_public(ipaddress.ip_address("2606:4700:4700::1111"))
    for text in ("::1", "fe80::1", "fc00::1", "::", "2001:db8::1"):
        assert not is_public(ipaddress.ip_address(text)), text


def test_the_fence_refuses_a_provider_host_given_as_nat64_of_loopback(pong, tmp_path):
    """Through the proxy: a provider's entry (a public address required) asked for as NAT64 or
    IPv4-compatible forms of 127.0.0.1 is refused as local; the plain name of a public host passes the check."""
    hosts = [Allowed("64:ff9b::7f00:1", pong, False, "openai"), Allowed("::127.0.0.1", pong, False, "openai")]
    with EgressProxy(hosts, str(tmp_path / "n.sock")) as proxy:
        for target in ("[64:ff9b::7f00:1]", "[::127.0.0.1]"):
            answer = _through(proxy.socket_path, f"CONNECT {target}:{pong} HTTP/1.1\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 403") and b"local or private address" in answer, answer
    assert len(proxy.refused) == 2


# -- the run's own file system: bounded, read-only, a minimal view -------------------------------------------------


@pytest.fixture
def other_scratch():
    """Another user's scratch folder in the shared /tmp, with something in it."""
    folder = Path(tempfile.mkdtemp(prefix="lfassist-sandbox-otheruser-", dir="/tmp"))
    (folder / "their-notes.txt").write_text("someone else's data")
    yield folder
    (folder / "their-notes.txt").unlink()
    folder.rmdir()


def _needed() -> list[str]:
    """What a run needs to see: the interpreter and its packages, and this package's sandbox files."""
    return [*_isolation.interpreter_paths(sys.executable), str(Path(lfassist_jupyter.__file__).parent)]


def _beyond_needed(listed: dict[str, object]) -> dict[str, list[str]]:
    """For each listed directory, the entries that lead to nothing the run needs."""
    extra = {}
    for path, entries in listed.items():
        if not isinstance(entries, list):
            continue  # refused: nothing seen
        leads = {Path(n).relative_to(path).parts[0] for n in _needed() if Path(n).is_relative_to(path) and n != path}
        if any(n == path or Path(path).is_relative_to(n) for n in _needed()):
            continue  # inside what it needs: all of it is fair game
        surplus = sorted(set(entries) - leads - {"tmp", "proc", "dev", "usr", "etc", "bin", "lib", "lib64", "sbin"})
        if surplus:
            extra[path] = surplus
    return extra


@real_run
@pytest.mark.parametrize("mode", ["full", "reduced"])
def test_a_real_run_is_bounded_read_only_and_sees_only_what_it_needs(
    catalog, mode, monkeypatch, other_scratch, tmp_path
):
    if mode == "full" and not _fenced():
        pytest.skip("bubblewrap is not available here")
    if mode == "reduced":
        monkeypatch.setenv("LFASSIST_SANDBOX", "reduced")
    checkout = Path(lfassist_jupyter.__file__).resolve().parents[1]
    home = Path.home()
    lists = ["/", str(checkout.parent), str(checkout), "/tmp", str(home), "/proc", os.getcwd()]
    writes = ["/lfassist-probe", "/dev/lfassist-probe", "/usr/lfassist-probe", str(tmp_path / "written")]
    flow = _flow(
        catalog,
        "Look",
        paths=",".join(lists),
        writes=",".join(writes),
        reads=f"{other_scratch / 'their-notes.txt'},/proc/{os.getpid()}/environ",
        fill_mb="640mb",  # text: a bare number would be an int, which a text input does not take
    )

    run = lfassist_jupyter.run_flow_for_real(flow, "x")

    assert run.ok, run
    got = json.loads(run.text)
    # Bounded scratch: the flow filled what it had, and no more; it was told "no space". (Where the
    # kernel refuses namespaces to a process, reduced isolation says it has no scratch space of its
    # own; the card must then say so.)
    if mode == "full" or "scratch: 512 MB of its own" in run.isolation:
        assert got["fill"] in ("error: No space left on device", "error: File too large"), got["fill"]
        assert got["filled_mb"] <= 512, got["filled_mb"]
    else:
        assert "scratch: files of at most 512 MB each" in run.isolation, run.isolation
    # Read-only /, /dev and /usr; the host's folders are not there to write to.
    assert all(v.startswith("error: ") for v in got["write"].values()), got["write"]
    assert not (tmp_path / "written").exists()
    # The minimal view: no listing shows anything beyond the way to what the run needs ...
    assert _beyond_needed(got["list"]) == {}, _beyond_needed(got["list"])
    # ... not another user's scratch folder, nor the kernel's environment.
    assert all(v.startswith("error: ") for v in got["read"].values()), got["read"]
    assert other_scratch.name not in json.dumps(got["list"])
    assert str(os.getpid()) not in (got["list"]["/proc"] if isinstance(got["list"]["/proc"], list) else [])
    # The control: the flow did write and list where it may (its own working directory), until the bound.
    assert "fill-0" in got["own"] and got["filled_mb"] >= 64, got


@pytest.fixture
def host_service():
    """A service of the user's on a Unix socket (an ssh-agent, Docker, a D-Bus session bus, a Jupyter
    server started with --sock): what it was told, and the socket's path."""
    folder = Path(tempfile.mkdtemp(prefix="lfassist-hostsvc-", dir="/tmp"))
    path, heard = str(folder / "agent.sock"), []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = server.accept()
                with client:
                    heard.append(client.recv(100))
                    client.sendall(b"the user's signing key")

    threading.Thread(target=serve, daemon=True).start()
    yield path, heard
    server.close()
    with contextlib.suppress(OSError):
        os.unlink(path)
    folder.rmdir()


def _dial(path: str) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        s.sendall(b"hello from the test")
        return s.recv(100).decode()


@real_run
@pytest.mark.parametrize("mode", ["full", "reduced"])
def test_a_real_run_cannot_reach_the_users_unix_sockets(catalog, mode, monkeypatch, host_service, pong):
    """The network fence is the run's one way out: a Unix socket of the host (named by its path,
    which no network namespace hides) is not a way around it. Before, a run under reduced isolation
    talked to any of them. Controls: the socket answers a client outside the sandbox, and the same
    run reaches an allowed host through its proxy (its code ran, its network works)."""
    if mode == "full" and not _fenced():
        pytest.skip("bubblewrap is not available here")
    if mode == "reduced":
        monkeypatch.setenv("LFASSIST_SANDBOX", "reduced")
    path, heard = host_service
    assert _dial(path) == "the user's signing key"  # control: the service answers
    heard.clear()
    url = f"http://127.0.0.1:{pong}/"
    flow = _flow(catalog, "Dial", path=path, url=url)

    run = lfassist_jupyter.run_flow_for_real(flow, "x", allow_hosts=[f"127.0.0.1:{pong}"])

    assert run.ok, run
    got = json.loads(run.text)
    assert got["url"] == "reached: pong", got  # control: the run ran and its proxy works
    assert got["unix"].startswith("blocked"), got
    assert heard == []


# -- a quiet end -------------------------------------------------------------------------------------------------------

LINGER = """
import os
import socket
import urllib.parse

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message

KEPT = []


class Linger(Component):
    display_name = "Linger"
    description = "Opens a tunnel through the run's proxy and leaves it open."
    name = "Linger"
    inputs = [MessageTextInput(name="text", display_name="Text"), MessageTextInput(name="url", display_name="URL")]
    outputs = [Output(display_name="Out", name="out", method="out")]

    def out(self) -> Message:
        proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
        where = urllib.parse.urlsplit(self.url)
        tunnel = socket.create_connection((proxy.hostname, proxy.port))
        tunnel.sendall(f"CONNECT {where.hostname}:{where.port} HTTP/1.1\\r\\n\\r\\n".encode())
        head = tunnel.recv(100).decode().split("\\r\\n")[0]
        tunnel.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n")  # a request never finished
        KEPT.append(tunnel)
        return Message(text=f"left open: {head}")
"""


@real_run
def test_a_run_that_leaves_a_connection_open_ends_quietly(flow_ip, sandbox, tmp_path, capfd, caplog):
    """In a notebook, asyncio's complaints go to stderr (the root logger has no handler there); here
    pytest catches the log records, so both are checked."""
    held = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def accept() -> None:  # a server that keeps every connection open
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    port = server.getsockname()[1]
    catalog = default_catalog()
    catalog.add("Linger", sandbox.component_template(LINGER).template)
    flow = build_flow(
        f"nodes:\n  A: ChatInput\n  L: Linger\n  C: ChatOutput\nedges:\n  A.message -> L.text\n"
        f"  L.out -> C.input_value\nconfig:\n  L.url: http://127.0.0.1:{port}/\n",
        catalog=catalog,
    ).flow
    path = tmp_path / "linger.json"
    path.write_text(json.dumps(flow))
    capfd.readouterr()

    view = flow_ip.run_cell_magic("assist_flow", f"--run-local hi --allow-host 127.0.0.1:{port}", str(path))

    out, err = capfd.readouterr()
    server.close()
    assert view.run.ok and view.run.text == "left open: HTTP/1.1 200 Connection established", view.run
    assert held, "the tunnel reached the server (the control)"
    assert "Traceback" not in out + err and "CancelledError" not in out + err, out + err
    assert "Exception in callback" not in out + err
    assert [r.getMessage() for r in caplog.records if r.name.startswith("asyncio")] == []
