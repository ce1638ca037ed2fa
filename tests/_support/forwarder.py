"""A TCP forwarder on 127.0.0.1: a stand-in address for a server that a test can make vanish.

The session shares one real Langflow server; a test that needs "the server went away mid-session"
talks to it through a ``Forwarder`` and stops the forwarder. To the client that is the server
stopping: the port refuses new connections and every open connection is cut, while the shared
server goes on serving the other tests.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class Forwarder:
    """Forwards each connection to ``127.0.0.1:upstream_port`` until ``stop()``."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self.upstream = (host, upstream_port)
        self._listener = socket.create_server((host, 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.connections = 0  # how many it forwarded: a test can check its client came through
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # stop() shut the listener down
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._stopped:
                    client.close()
                    upstream.close()
                    return
                self._open |= {client, upstream}
                self.connections += 1
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        self._cut(src, dst)  # either side hung up: so does the other, as a real server would

    def _cut(self, *socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with self._lock:
                self._open.discard(sock)

    def stop(self) -> None:
        """Refuse new connections and cut the open ones, as a stopped server does."""
        with self._lock:
            self._stopped = True
            open_now = list(self._open)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        self._listener.close()
        self._cut(*open_now)
        self._thread.join(timeout=5)

    def __enter__(self) -> Forwarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
