"""A Langflow look-alike on a local port, in a process of its own, serving what a hostile or
careless server could: flow names with newlines and orders in them, and a listing of tens of
megabytes streamed without a ``Content-Length`` (so only a client that counts while it reads
can stop early).

Its own process, so that what it builds to send never counts in the test's (the kernel's)
memory; ``sent()`` says how many bytes each path sent, so a test can prove the attack ran.
The real ``LangflowClient`` talks to it over HTTP, as to a real server::

    with FakeLangflow(flows=[...], stored={"f-1": flow}, starters=[template], starters_mb=50) as server:
        client = LangflowClient(url=server.url, api_key="lf-test-key-0123456789")
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from typing import Any


class FakeLangflow:
    """``flows``: the headers ``GET /api/v1/flows/`` lists; ``stored``: id -> the flow
    ``GET /api/v1/flows/{id}`` answers (``PUT`` there stores one, as Langflow 1.13's upsert);
    ``starters``: ``GET /api/v1/starter-projects/``; ``variables``: the names ``GET /api/v1/variables/``
    lists; with
    ``starters_mb``, that list is padded to about that many megabytes (copies of the first
    template, as a server with a huge template list would send), streamed in chunks."""

    def __init__(
        self,
        *,
        flows: list[dict[str, Any]] | None = None,
        stored: dict[str, dict[str, Any]] | None = None,
        starters: list[dict[str, Any]] | None = None,
        starters_mb: int = 0,
        variables: list[str] | None = None,
    ) -> None:
        self.config = {
            "flows": flows or [],
            "stored": stored or {},
            "starters": starters or [],
            "starters_mb": starters_mb,
            "variables": variables or [],
        }
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> FakeLangflow:
        self._proc = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(self.config))
        self._proc.stdin.close()
        self.url = f"http://127.0.0.1:{int(self._proc.stdout.readline())}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def sent(self) -> dict[str, int]:
        """Bytes sent per path so far (a client that hung up early stops the count there)."""
        with urllib.request.urlopen(f"{self.url}/_stats", timeout=10) as answer:
            return json.loads(answer.read())


def _serve(config: dict[str, Any]) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sent: dict[str, int] = {}
    lock = threading.Lock()

    def count(path: str, n: int) -> None:
        with lock:
            sent[path] = sent.get(path, 0) + n

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, body: Any, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            count(self.path.split("?")[0], len(data))

        def _stream_starters(self) -> None:
            """The starter list padded to ``starters_mb``, chunked, with no length up front."""
            path = self.path.split("?")[0]
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            template = config["starters"][0] if config["starters"] else {"name": "t", "data": {"nodes": []}}
            piece = json.dumps(template).encode()  # copies of a real template: many small objects
            target = config["starters_mb"] * 1024 * 1024
            total = 0

            def chunk(data: bytes) -> None:
                nonlocal total
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                total += len(data)
                count(path, len(data))

            try:
                chunk(b"[" + piece)
                while total < target:
                    chunk(b"," + piece)
                chunk(b"]")
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what it took is counted

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/_stats":
                with lock:
                    counts = dict(sent)
                return self._json(counts)
            if path == "/health":
                return self._json({"status": "ok"})
            if path == "/api/v1/version":
                return self._json({"version": "1.13.0"})
            if path == "/api/v1/flows/":
                return self._json(config["flows"])
            if path.startswith("/api/v1/flows/") and path.rsplit("/", 1)[1] in config["stored"]:
                return self._json(config["stored"][path.rsplit("/", 1)[1]])
            if path == "/api/v1/variables/":  # names only, as a client may see them
                return self._json([{"name": n, "type": "Credential", "has_value": True} for n in config["variables"]])
            if path == "/api/v1/starter-projects/":
                if config["starters_mb"]:
                    return self._stream_starters()
                return self._json(config["starters"])
            return self._json({"detail": "Not Found"}, 404)

        def do_PUT(self) -> None:
            """Langflow 1.13's upsert: the flow is stored (and listed) under the id in the path."""
            path = self.path.split("?")[0]
            flow_id = path.rstrip("/").rsplit("/", 1)[1]
            if not path.startswith("/api/v1/flows/"):
                return self._json({"detail": "Not Found"}, 404)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            created = flow_id not in config["stored"]
            config["stored"][flow_id] = {**body, "id": flow_id}
            if created:
                config["flows"].append({"id": flow_id, "name": body.get("name"), "tags": body.get("tags") or []})
            return self._json(config["stored"][flow_id], 201 if created else 200)

        def do_POST(self) -> None:
            """A new flow (``POST /api/v1/flows/``) is stored under a fresh id; nothing else runs here."""
            import uuid

            path = self.path.split("?")[0]
            if path != "/api/v1/flows/":
                return self._json({"detail": "Not Found"}, 404)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            flow_id = str(uuid.uuid4())
            config["stored"][flow_id] = {**body, "id": flow_id}
            config["flows"].append({"id": flow_id, "name": body.get("name"), "tags": body.get("tags") or []})
            return self._json(config["stored"][flow_id], 201)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    _serve(json.loads(sys.stdin.read()))
