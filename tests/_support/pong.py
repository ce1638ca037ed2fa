"""A local HTTP server that answers every GET with ``pong``: a stand-in for any service on this
machine (the kernel's ports, a database) that a real run must not reach unless allowed."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pong(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"pong")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def pong_server() -> Iterator[int]:
    """The server on a free port of 127.0.0.1, serving in a thread until the block ends: its port."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pong)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv.server_port
    finally:
        srv.shutdown()
        srv.server_close()
