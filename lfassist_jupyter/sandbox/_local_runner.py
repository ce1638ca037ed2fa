"""Runs one flow for real with lfx's own runner, in a process of its own (see ``local_run``).

Started as ``python -I -u _local_runner.py`` with the request as JSON on stdin; it imports only
lfx, so it can run inside bubblewrap with nothing but the interpreter bound.  What the flow's
components print goes to stderr; the one JSON answer goes to the saved stdout, written last.

The network: the sandbox has loopback only.  When the request names the kernel's egress proxy
(a Unix socket bound in), a forwarder listens on a loopback port here and pipes each connection
to that socket, and ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` point at it: the provider SDKs
(httpx), urllib and requests go through the kernel's allow-list; anything else finds no route.
"""

import asyncio
import json
import os
import socket
import sys
import threading


def forward_to(socket_path: str) -> int:
    """Listen on 127.0.0.1 (the sandbox's own loopback) and pipe each connection to ``socket_path``."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def pump(src: socket.socket, dst: socket.socket, done: list[int], lock: threading.Lock) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with lock:
            done.append(1)
            last = len(done) == 2
        if last:  # both directions finished
            src.close()
            dst.close()

    def serve() -> None:
        while True:
            client, _ = server.accept()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError:
                client.close()
                upstream.close()
                continue
            done: list[int] = []
            lock = threading.Lock()
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pump, args=(a, b, done, lock), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def use_proxy(socket_path: str) -> None:
    url = f"http://127.0.0.1:{forward_to(socket_path)}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        os.environ[name] = os.environ[name.lower()] = url
    for name in ("NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)


def main() -> None:
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a component's print() must not corrupt the answer
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.read())
    os.environ.update(request.get("env") or {})  # only the variables the user allowed
    if request.get("proxy"):
        use_proxy(request["proxy"])
    try:
        from lfx.run.base import run_flow

        out = asyncio.run(
            run_flow(
                flow_json=json.dumps(request["flow"]),
                input_value=request["input"],
                output_format="json",
                check_variables=True,
                check_dependencies=True,
            )
        )
        ok = bool(out.get("success", True))
        result = {
            "ok": ok,
            "text": str(out.get("result", "")) if ok else "",
            "component": out.get("component"),
            "error": None if ok else str(out.get("error") or out),
        }
    except BaseException as exc:  # reported, never a traceback in the user's notebook
        result = {"ok": False, "text": "", "component": None, "error": f"{type(exc).__name__}: {exc}"}
    answer.write(json.dumps(result, default=str))
    answer.flush()
    os._exit(0)  # not waiting for threads a component left behind (lfx's executor, a stuck call)


if __name__ == "__main__":
    main()
