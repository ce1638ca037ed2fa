"""The network fence of a real flow run: a small HTTP proxy on the kernel's side, on a Unix socket.

A real run (``flows.real_run``, started by ``local_run.py``) has a network namespace of its own with
loopback only; the one way out is this proxy's Unix socket, bound into the sandbox (the runner
forwards a loopback port to it and points ``HTTPS_PROXY`` at that port). The proxy speaks
``CONNECT host:port`` (TLS, what the provider SDKs use) and plain-HTTP absolute-URI requests, and
lets a connection through only when the host is on the run's allow-list *and* the address it
resolves to is public -- loopback, private, link-local, shared and reserved addresses are refused
unless the user named the host. It connects to the very address it checked (a name that resolves
to a public address for the check and to 127.0.0.1 for the connection -- DNS rebinding -- gets
nowhere). Every refusal is recorded (host, port, why, when) so the run's result can say why a node
failed.

Hand-written rather than a proxy library: none is installed, and the part that matters here
(check the resolved address, then connect to that address) is the part a general proxy does
not do; what is left is ~150 lines of asyncio, bounded (header size, connections, timeouts).
It lives for one run only, on its own thread and event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEADER_BYTES = 16_384
MAX_CONNECTIONS = 64
MAX_REFUSALS = 50
CONNECT_TIMEOUT = 10.0
HEADER_TIMEOUT = 30.0


DEFAULT_PORTS = (80, 443)
"""The ports a host named without one opens: its schemes' defaults (http, https), nothing else."""


@dataclass(frozen=True)
class Allowed:
    """One entry of a run's allow-list: ``host`` (``*.example.com`` for its subdomains), ``port``
    (``None``: the default ports 80 and 443 only, as for a host named without a port), ``private_ok``
    (the user named it, so a local or private address is fine), ``why`` (shown to the user: which
    provider, or "you") and ``named`` (whether its port was written out by the user or a setting,
    rather than implied by a default: only a named port opens a port of the kernel)."""

    host: str
    port: int | None
    private_ok: bool
    why: str
    named: bool = True

    def matches(self, host: str, port: int) -> bool:
        if port not in ((self.port,) if self.port is not None else DEFAULT_PORTS):
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    def __str__(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"{shown}:{self.port}" if self.port is not None else f"{shown}:80/443"


def parse_host(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, ``[v6]:port`` or a URL as ``(host, port)``; a URL without a port gets
    its scheme's.  ``ValueError`` (one line) for anything else."""
    text = str(entry).strip()
    if not text or any(c.isspace() for c in text) or len(text) > 300:
        raise ValueError(f"not a host name: {entry!r}")
    if "://" in text:
        parts = urlsplit(text)
        if not parts.hostname:
            raise ValueError(f"no host in {entry!r}")
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"bad port in {entry!r}") from exc
        return _norm(parts.hostname), port or {"https": 443, "http": 80}.get(parts.scheme.lower())
    host, port = split_host_port(text, None)
    return host, port


def split_host_port(text: str, default: int | None) -> tuple[str, int | None]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:  # a bare name, or a bare IPv6 address
        host, port_text = text, ""
    if not host:
        raise ValueError(f"no host in {text!r}")
    if not port_text:
        return _norm(host), default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port in {text!r}")
    return _norm(host), int(port_text)


def _norm(host: str) -> str:
    return host.strip().lower().rstrip(".")


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_V4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
# RFC 6052: where the IPv4 address sits for each prefix length (the octet at bits 64-71 is skipped).
_RFC6052 = {48: (6, 8, 9, 11), 56: (7, 8, 9, 12), 64: (9, 13, 9, 9), 96: (12, 16, 16, 16)}


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 form carries (mapped, compatible, translated, NAT64, 6to4, Teredo's
    server and client); for the local-use NAT64 prefix, whose length the operator picks, each
    position RFC 6052 allows."""
    found = [a for a in (ip.ipv4_mapped, ip.sixtofour) if a is not None]
    if ip.teredo:
        found += list(ip.teredo)
    raw = ip.packed
    if ip in _NAT64 or ip in _V4_COMPATIBLE or ip in _V4_TRANSLATED:
        found.append(ipaddress.IPv4Address(raw[12:]))
    if ip in _NAT64_LOCAL:
        for a, b, c, d in _RFC6052.values():
            found.append(ipaddress.IPv4Address(raw[a:b] + raw[c:d]))
    return found


def is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """A globally routable unicast address; an IPv6 form that embeds IPv4 addresses is judged by them
    (``64:ff9b::7f00:1`` is 127.0.0.1 through NAT64: local)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded:
            return all(is_public(v4) for v4 in embedded)
    return ip.is_global and not ip.is_multicast


class EgressProxy:
    """The proxy for one run: ``start()`` binds ``socket_path`` and serves on a thread; ``stop()``
    closes every connection, quietly.  ``refused`` lists ``{"host", "port", "reason", "after_s"}``.

    ``kernel_ports`` are the ports of the Jupyter kernel the run was started from (its connection
    file): on a local address they are reached only through an entry that names that very port."""

    def __init__(self, allowed: list[Allowed], socket_path: str, *, kernel_ports: Iterable[int] = ()) -> None:
        self.allowed = list(allowed)
        self.socket_path = socket_path
        self.kernel_ports = frozenset(kernel_ports)
        self.refused: list[dict[str, object]] = []
        self.passed: list[str] = []
        self._started = time.perf_counter()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="lfassist-egress", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self._error: BaseException | None = None

    def start(self) -> EgressProxy:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # nothing left pending, nothing printed

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)

    def __enter__(self) -> EgressProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving --------------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        # A connection the run left open ends when the proxy stops: whatever asyncio has to say
        # about it then (a cancelled handler, a transport closed under a callback) is not the
        # user's business, and never a traceback in their cell.
        self._loop.set_exception_handler(lambda loop, context: None)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_unix_server(self._client, path=self.socket_path, limit=MAX_HEADER_BYTES)
            )
            os.chmod(self.socket_path, 0o600)
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def _refuse(self, host: str, port: int, reason: str) -> None:
        if len(self.refused) < MAX_REFUSALS and not any(r["host"] == host and r["port"] == port for r in self.refused):
            after = round(time.perf_counter() - self._started, 3)
            self.refused.append({"host": host, "port": port, "reason": reason, "after_s": after})

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            if self._slots.locked():
                await _reply(writer, 503, "too many connections from this run")
                return
            async with self._slots:
                await self._handle(reader, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ValueError):
            with contextlib.suppress(Exception):
                await _reply(writer, 400, "bad proxy request")
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:  # the proxy stops: the handler ends, as a handler, not cancelled
            return
        finally:
            self._writers.discard(writer)
            writer.close()  # after what was written (a refusal's 403) has gone out
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 5)
            writer.transport.abort()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEADER_TIMEOUT)
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = [*lines[0].split(" "), "", "", ""][:3]
        if method.upper() == "CONNECT":
            host, port = split_host_port(target, None)
            if port is None:
                raise ValueError("CONNECT without a port")
            forward = b""
        else:
            parts = urlsplit(target)
            if parts.scheme.lower() != "http" or not parts.hostname:
                await _reply(writer, 400, "only CONNECT and absolute http:// requests go through this proxy")
                return
            host, port = _norm(parts.hostname), parts.port or 80
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            headers = [h for h in lines[1:] if h and not h.lower().startswith(("proxy-", "connection:"))]
            forward = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""]).encode(
                "latin-1"
            )
        address, reason = await self._check(host, port)
        if address is None:
            self._refuse(host, port, reason)
            await _reply(writer, 403, f"lfassist network fence: {host}:{port} refused ({reason})")
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError) as exc:
            await _reply(writer, 502, f"{host}:{port} did not answer ({type(exc).__name__})")
            return
        self._writers.add(up_writer)
        self.passed.append(f"{host}:{port}")
        try:
            if forward:
                up_writer.write(forward)
            else:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._writers.discard(up_writer)
            up_writer.transport.abort()

    async def _check(self, host: str, port: int) -> tuple[str | None, str]:
        """The address to connect to, or ``None`` and why not."""
        entry = next((a for a in self.allowed if a.matches(host, port)), None)
        if entry is None:
            return None, "not on this run's allow-list"
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                infos = await asyncio.wait_for(
                    self._loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), CONNECT_TIMEOUT
                )
            except (OSError, asyncio.TimeoutError):
                return None, "the name does not resolve"
            addresses = []
            for info in infos:
                with contextlib.suppress(ValueError):
                    addresses.append(ipaddress.ip_address(str(info[4][0]).split("%")[0]))
        for ip in addresses:
            if not (entry.private_ok or is_public(ip)):
                continue
            if port in self.kernel_ports and not is_public(ip) and not (entry.named and entry.port == port):
                return None, "a port of the Jupyter kernel"
            if ip.is_unspecified:  # "this host" (0.0.0.0, ::), as a client means it: the loopback
                ip = ipaddress.ip_address("127.0.0.1" if ip.version == 4 else "::1")
            return str(ip), ""
        shown = addresses[0] if addresses else "nothing"
        return None, f"resolves to a local or private address ({shown}); name it to allow it"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65_536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.transport.abort()


async def _reply(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Service Unavailable"}
    body = (text + "\n").encode()
    head = f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
    writer.write(f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.drain(), 5)
