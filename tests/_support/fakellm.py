"""A local HTTP server that speaks the OpenAI and Anthropic streaming wire formats.

Tests drive the *real* ``openai`` and ``anthropic`` SDKs against it: SSE streaming with
usage, error statuses (401, 404, 429 with Retry-After, 500), a stream cut mid-way and
malformed chunks.  Replies are queued in order; every request is recorded, so a test can
assert what reached "the model" (the retry prompt carries the error; an off-topic request
never triggers a generation call; a cancelled stream was closed by the client).

Run it standalone (``python tests/_support/fakellm.py replies.json``) to point a notebook at it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """A streamed text reply."""

    text: str
    chunk: int = 16
    delay: float = 0.0  # seconds between chunks


@dataclass
class Status:
    """An HTTP error status with a vendor-shaped body."""

    code: int
    message: str = "error"
    error_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Cut:
    """Stream ``text`` then drop the connection without finishing the SSE stream."""

    text: str


@dataclass
class Malformed:
    """Send one valid chunk, then a chunk that is not JSON."""

    text: str = "partial"


@dataclass
class Hang:
    """Accept the request, then send nothing (not even headers) for ``seconds``: a hung server."""

    seconds: float = 120.0


@dataclass
class Endless:
    """Stream ``text`` again and again and never finish (until the client hangs up)."""

    text: str = "more text "
    delay: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    disconnected: bool = False  # the client closed the stream before the end
    finished: bool = False

    @property
    def text(self) -> str:
        """Everything the client sent as prompt text (system + messages), for assertions."""
        parts = [self.body.get("system") or ""]
        for m in self.body.get("messages", []):
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(c.get("text", "") for c in content if isinstance(c, dict))
            parts.append(str(content))
        return "\n".join(str(p) for p in parts)

    @property
    def last_user(self) -> str:
        for m in reversed(self.body.get("messages", [])):
            if m.get("role") == "user":
                content = m.get("content")
                if isinstance(content, list):
                    return " ".join(c.get("text", "") for c in content if isinstance(c, dict))
                return str(content)
        return ""


_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FakeLLM:
    """Start with ``with FakeLLM() as llm:``; queue replies with ``llm.queue(...)``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._replies: list[Any] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self.default: Any = None  # served when the queue is empty (None -> 500)
        self._closing = threading.Event()  # releases Hang replies at shutdown
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models for discovery
                body = json.dumps({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(rec)
                    reply = server._replies.pop(0) if server._replies else server.default
                anthropic = self.path.rstrip("/").endswith("/messages")
                try:
                    server._serve(self, reply, rec, anthropic=anthropic)
                except (BrokenPipeError, ConnectionResetError):
                    rec.disconnected = True

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        # serve_forever checks for shutdown() between selects; at its default 0.5 s poll every
        # exit waited ~0.5 s, and some 270 tests start a server: 10 ms costs nothing idle.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True)

    # -- control --------------------------------------------------------------------------

    @property
    def host(self) -> str:
        return self._httpd.server_address[0]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    def queue(self, *replies: Any) -> FakeLLM:
        with self._lock:
            self._replies.extend(Reply(r) if isinstance(r, str) else r for r in replies)
        return self

    @property
    def pending(self) -> int:
        return len(self._replies)

    def clear(self) -> None:
        """Drop the replies still queued (a failed test's), so the next test gets its own."""
        with self._lock:
            self._replies.clear()

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    start = __enter__

    def stop(self) -> None:
        self.__exit__()

    # -- serving ----------------------------------------------------------------------------

    def _serve(self, h: BaseHTTPRequestHandler, reply: Any, rec: Recorded, *, anthropic: bool) -> None:
        model = rec.body.get("model", "model")
        if reply is None:
            reply = Status(500, "no reply queued in the fake server")
        if isinstance(reply, Hang):
            self._closing.wait(reply.seconds)
            rec.disconnected = True
            return
        if isinstance(reply, Status):
            etype = reply.error_type or _ERROR_TYPES.get(reply.code, "api_error")
            if anthropic:
                payload = {"type": "error", "error": {"type": etype, "message": reply.message}}
            else:
                payload = {"error": {"message": reply.message, "type": etype, "code": reply.error_type or None}}
            data = json.dumps(payload).encode()
            h.send_response(reply.code)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
            rec.finished = True
            return
        if rec.body.get("stream") is not True and type(reply) is Reply:
            self._whole(h, reply, model, rec, anthropic=anthropic)  # a client that does not stream (langchain's)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        text = reply.text
        chunk = getattr(reply, "chunk", 16)
        delay = getattr(reply, "delay", 0.0)
        pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)] or [""]
        if anthropic:
            self._anthropic_stream(h, pieces, model, reply, rec, delay)
        else:
            self._openai_stream(h, pieces, model, reply, rec, delay)

    @staticmethod
    def _whole(h: BaseHTTPRequestHandler, reply: Reply, model: str, rec: Recorded, *, anthropic: bool) -> None:
        """The reply as one JSON body, in the vendor's non-streaming shape."""
        if reply.delay:
            time.sleep(reply.delay)
        if anthropic:
            payload: dict[str, Any] = {
                "id": f"msg_{uuid.uuid4().hex[:10]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": reply.text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 5},
            }
        else:
            payload = {
                "id": f"chatcmpl-{uuid.uuid4().hex[:10]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
            }
        data = json.dumps(payload).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        rec.finished = True

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, data: str, event: str | None = None) -> None:
        out = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
        h.wfile.write(out.encode())
        h.wfile.flush()

    def _openai_stream(self, h, pieces, model, reply, rec, delay) -> None:  # type: ignore[no-untyped-def]
        cid = f"chatcmpl-{uuid.uuid4().hex[:10]}"
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None, choices: bool = True) -> str:
            body: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else [],
            }
            if usage is not None:
                body["usage"] = usage
            return json.dumps(body)

        self._send(h, chunk({"role": "assistant", "content": ""}))
        if isinstance(reply, Malformed):
            self._send(h, chunk({"content": reply.text}))
            self._send(h, '{"id": "broken", "choices": [ {"delta": ')
            self._send(h, "[DONE]")
            rec.finished = True
            return
        while isinstance(reply, Endless) and not self._closing.is_set():
            if reply.delay:
                time.sleep(reply.delay)
            self._send(h, chunk({"content": reply.text}))
        for piece in pieces:
            if delay:
                time.sleep(delay)
            self._send(h, chunk({"content": piece}))
        if isinstance(reply, Cut):
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        self._send(h, chunk({}, finish="stop"))
        self._send(
            h,
            chunk(
                {},
                usage={"prompt_tokens": 11, "completion_tokens": len(pieces), "total_tokens": 11 + len(pieces)},
                choices=False,
            ),
        )
        self._send(h, "[DONE]")
        rec.finished = True

    def _anthropic_stream(self, h, pieces, model, reply, rec, delay) -> None:  # type: ignore[no-untyped-def]
        mid = f"msg_{uuid.uuid4().hex[:10]}"
        start = {
            "type": "message_start",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 1},
            },
        }
        self._send(h, json.dumps(start), "message_start")
        self._send(
            h,
            json.dumps({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            "content_block_start",
        )
        if isinstance(reply, Malformed):
            self._send(
                h,
                json.dumps(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply.text}}
                ),
                "content_block_delta",
            )
            self._send(h, '{"type": "content_block_delta", "index": 0, "delta": {', "content_block_delta")
            rec.finished = True
            return
        while isinstance(reply, Endless) and not self._closing.is_set():
            if reply.delay:
                time.sleep(reply.delay)
            endless = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply.text}}
            self._send(h, json.dumps(endless), "content_block_delta")
        for piece in pieces:
            if delay:
                time.sleep(delay)
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            }
            self._send(h, json.dumps(delta), "content_block_delta")
        if isinstance(reply, Cut):
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        self._send(h, json.dumps({"type": "content_block_stop", "index": 0}), "content_block_stop")
        self._send(
            h,
            json.dumps(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": len(pieces)},
                }
            ),
            "message_delta",
        )
        self._send(h, json.dumps({"type": "message_stop"}), "message_stop")
        rec.finished = True


if __name__ == "__main__":  # pragma: no cover - a manual helper
    import sys

    with FakeLLM(port=int(sys.argv[2]) if len(sys.argv) > 2 else 0) as llm:
        if len(sys.argv) > 1:
            with open(sys.argv[1], encoding="utf-8") as fh:
                llm.queue(*json.load(fh))
        print(llm.openai_base_url, flush=True)
        threading.Event().wait()
