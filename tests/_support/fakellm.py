"""Local HTTP servers that speak the OpenAI, Anthropic and Ollama wire formats.

Tests drive the *real* ``openai`` and ``anthropic`` SDKs (and lfx's Ollama client, in a real run)
against them: SSE streaming with usage, error statuses (401, 404, 429 with Retry-After, 500), a
stream cut mid-way and malformed chunks.  Replies are queued in order; every request is recorded,
so a test can assert what reached "the model" (the retry prompt carries the error; an off-topic
request never triggers a generation call; a cancelled stream was closed by the client).

``FakeLLM()`` plays the vendors: it lists their models and answers any model.  ``FakeLLM(models=
["fake-gpt", "fake-mini"])`` plays a server of the user's own (vLLM, LM Studio, a gateway): it
lists its own models and answers 404 for any other, as they do, without spending a queued reply.
``FakeOllama(models=[...])`` plays Ollama: ``/api/tags``, ``/api/chat`` (NDJSON) and its
OpenAI-compatible ``/v1``.

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


VENDOR_MODELS = {
    "openai": ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o4-mini"],
    "anthropic": ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"],
}
"""What the fake lists when it plays the vendors (their catalogues, in ``%assist models`` order)."""


class FakeLLM:
    """Start with ``with FakeLLM() as llm:``; queue replies with ``llm.queue(...)``.

    ``models``: the server's own list (404 for any other model); None: the vendors' lists, any
    model answered.  ``listings`` counts the requests for the list."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, models: list[str] | None = None) -> None:
        self.models = list(models) if models is not None else None
        self.listings = 0
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

            def do_GET(self) -> None:  # the model list
                with server._lock:
                    server.listings += 1
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload = server._listing(self.path, headers)
                _send_json(self, status, payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                anthropic = self.path.rstrip("/").endswith("/messages")
                model = str(body.get("model", ""))
                with server._lock:
                    server.requests.append(rec)
                    known = server.models is None or model in server.models
                    reply = server._replies.pop(0) if known and server._replies else server.default
                if not known:  # as vLLM, LM Studio and Ollama answer: no reply spent
                    reply = Status(404, f"The model `{model}` does not exist.", error_type="model_not_found")
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

    def _listing(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """``GET /v1/models`` in OpenAI's shape, or Anthropic's when the client is Anthropic's."""
        if not path.rstrip("/").split("?", 1)[0].endswith("/models"):
            return 404, {"error": {"message": f"no route {path}", "type": "not_found_error"}}
        anthropic = "anthropic-version" in headers
        names = self.models if self.models is not None else VENDOR_MODELS["anthropic" if anthropic else "openai"]
        if anthropic:
            data = [{"id": n, "type": "model", "display_name": n, "created_at": "2025-01-01T00:00:00Z"} for n in names]
            return 200, {"data": data, "has_more": False, "first_id": names[0] if names else None,
                         "last_id": names[-1] if names else None}  # fmt: skip
        return 200, {"object": "list", "data": [{"id": n, "object": "model", "created": 0, "owned_by": "fake"}
                                                for n in names]}  # fmt: skip

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


def _send_json(h: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


class FakeOllama(FakeLLM):
    """A fake Ollama: ``GET /api/tags``, ``POST /api/chat`` (NDJSON when streaming, as Ollama's own
    clients and lfx's ``ChatOllama`` read it), and its OpenAI-compatible ``/v1`` (what the assistant
    talks to).  A model it does not have is a 404 saying to pull it, as Ollama answers."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, models: list[str] | None = None) -> None:
        super().__init__(host, port, models=models if models is not None else ["qwen3:0.6b", "llama3.2:1b"])

    def _listing(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/").split("?", 1)[0] == "/api/tags":
            models = [
                {"name": n, "model": n, "modified_at": "2025-01-01T00:00:00Z", "size": 1, "digest": "0" * 64,
                 "details": {"format": "gguf", "family": "fake", "parameter_size": "1B"}}
                for n in self.models or []
            ]  # fmt: skip
            return 200, {"models": models}
        if path.rstrip("/") == "/api/version":
            return 200, {"version": "0.9.0"}
        return super()._listing(path, headers)

    def _serve(self, h: BaseHTTPRequestHandler, reply: Any, rec: Recorded, *, anthropic: bool) -> None:
        if rec.path.rstrip("/") != "/api/chat":
            super()._serve(h, reply, rec, anthropic=False)
            return
        model = str(rec.body.get("model", ""))
        if isinstance(reply, Status):
            message = f'model "{model}" not found, try pulling it first' if reply.code == 404 else reply.message
            _send_json(h, reply.code, {"error": message})
            rec.finished = True
            return
        if reply is None:
            _send_json(h, 500, {"error": "no reply queued in the fake server"})
            return
        text = reply.text
        pieces = [text[i : i + reply.chunk] for i in range(0, len(text), reply.chunk)] or [""]
        stamp = "2025-01-01T00:00:00Z"
        done = {"model": model, "created_at": stamp, "message": {"role": "assistant", "content": ""}, "done": True,
                "done_reason": "stop", "total_duration": 1, "load_duration": 1, "prompt_eval_count": 11,
                "prompt_eval_duration": 1, "eval_count": len(pieces), "eval_duration": 1}  # fmt: skip
        if rec.body.get("stream") is False:
            _send_json(h, 200, {**done, "message": {"role": "assistant", "content": text}})
            rec.finished = True
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        for piece in pieces:
            line = {
                "model": model,
                "created_at": stamp,
                "message": {"role": "assistant", "content": piece},
                "done": False,
            }
            h.wfile.write(json.dumps(line).encode() + b"\n")
            h.wfile.flush()
        h.wfile.write(json.dumps(done).encode() + b"\n")
        h.wfile.flush()
        rec.finished = True


if __name__ == "__main__":  # pragma: no cover - a manual helper
    import sys

    with FakeLLM(port=int(sys.argv[2]) if len(sys.argv) > 2 else 0) as llm:
        if len(sys.argv) > 1:
            with open(sys.argv[1], encoding="utf-8") as fh:
                llm.queue(*json.load(fh))
        print(llm.openai_base_url, flush=True)
        threading.Event().wait()
