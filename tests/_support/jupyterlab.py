"""A real JupyterLab for the tests and the benchmarks, and the clients that talk to it as its front end does.

``lab_server`` starts JupyterLab (``jupyterlab.labapp.main``) on 127.0.0.1 with the engine pointed at the local
OpenAI-compatible test server (``fakellm.py``), Jupyter AI and jupyter-server-mcp loaded as a user
has them (the ``jupyter-ai`` extra), jupyter-server-mcp on a free port (never 3001: eight helpers
share the machine) with one more tool, ``server_probe.server_modules``: the server process's
``sys.modules``, what says that the server never imports lfx (``server_modules``).

``ChatClient`` speaks Jupyter AI's chat wire: ``/api/chat/ws/<path>`` (jupyterlab-chat's WebSocket
protocol, what the chat panel sends and receives when no real-time-collaboration provider is on)
and ``/api/events/subscribe`` (Jupyter Events: the persona list the picker shows).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KEY = "sk-browser-secret-0123456789abcdef"
TOKEN = "lfassist-browser-test"
PERSONA_ID = "jupyter-ai-personas::lfassist_jupyter::LangflowPersona"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(root: Path) -> None:
    """JupyterLab's settings for a test: widget state saved, no news, the palette shortcut, every cell rendered."""
    settings = root / ".settings" / "@jupyter-widgets" / "jupyterlab-manager"
    settings.mkdir(parents=True)
    # Save widget state into the notebook, so the saved file is what we search for secrets.
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    news = root / ".settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    # The key binding the README tells users to add for the palette command.
    keys = root / ".settings" / "@jupyterlab" / "shortcuts-extension"
    keys.mkdir(parents=True)
    binding = {"command": "lfassist:open-assistant", "keys": ["Alt Shift A"], "selector": "body"}
    (keys / "shortcuts.jupyterlab-settings").write_text(json.dumps({"shortcuts": [binding]}))
    # Every cell rendered: with JupyterLab's default windowing, a cell scrolled out of view may
    # have no editor yet, and its text reads as "" although the notebook holds it.
    tracker = root / ".settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))


@contextlib.contextmanager
def lab_server(root: Path, openai_base_url: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """JupyterLab serving ``root`` on a free port (its URL), stopped on exit; its log is ``root/lab.log``."""
    _settings(root)
    port = free_port()
    # No variable of the developer's own providers or Langflow reaches the server (as ``clean_env``).
    mine = ("OPENAI_", "ANTHROPIC_", "OLLAMA_", "LFASSIST_", "LANGFLOW_")
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith(mine)},
        "OPENAI_BASE_URL": openai_base_url,
        "OPENAI_API_KEY": KEY,
        "LFASSIST_DATA_DIR": str(root / ".data"),
        "JUPYTERLAB_SETTINGS_DIR": str(root / ".settings"),
        "JUPYTER_RUNTIME_DIR": str(root / ".runtime"),
        **(env or {}),
    }
    log = open(root / "lab.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            # tests/ on the server's path only (the probe tool's package), not in the environment
            # its kernels inherit: they run as a user's would.
            f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r}); "
            "from jupyterlab.labapp import main; sys.exit(main())",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.root_dir={root}",
            f"--IdentityProvider.token={TOKEN}",
            "--LabApp.news_url=",
            "--MCPExtensionApp.mcp_port=0",
            "--MCPExtensionApp.mcp_tools=_support.server_probe:server_modules",
            "--allow-root",
        ],
        env=environ,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited ({proc.returncode}); see {root / 'lab.log'}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=1):
                break
            time.sleep(0.3)
        else:
            raise TimeoutError(f"JupyterLab did not start; see {root / 'lab.log'}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def mcp_url(root: Path, timeout: float = 60) -> str:
    """The URL of the Jupyter server's MCP server (jupyter-server-mcp writes it in the runtime
    directory once it listens: its port is the OS's pick)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for info in (root / ".runtime").glob("*mcp*.json"):
            with contextlib.suppress(ValueError, OSError):
                return json.loads(info.read_text())["url"]
        time.sleep(0.2)
    raise TimeoutError(f"jupyter-server-mcp wrote no runtime file in {root / '.runtime'}")


async def server_modules(root: Path) -> set[str]:
    """Every module the Jupyter server process has imported (its ``sys.modules``), asked through
    its MCP server with the official SDK's client."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(mcp_url(root)) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        answer = await session.call_tool("server_modules", {})
    assert not answer.isError, answer.content
    return set(answer.structuredContent["result"])


class ChatClient:
    """One web client of a chat: the chat's WebSocket and the events WebSocket, as the chat panel opens them."""

    def __init__(self, url: str, path: str, root: Path) -> None:
        from websockets.sync.client import connect

        if not (root / path).exists():
            (root / path).write_text("{}")
        ws_url = url.replace("http://", "ws://")
        self.events = connect(f"{ws_url}/api/events/subscribe?token={TOKEN}", open_timeout=30)
        self.chat = connect(f"{ws_url}/api/chat/ws/{path}?token={TOKEN}", open_timeout=30, max_size=None)
        hello = json.loads(self.chat.recv(timeout=30))
        assert hello["action"] == "connection", hello
        self.chat_id: str = hello["id"]
        self.messages: dict[str, dict[str, Any]] = {m["id"]: m for m in hello.get("messages", [])}
        self.frames: list[tuple[float, dict[str, Any]]] = []

    def close(self) -> None:
        for ws in (self.chat, self.events):
            with contextlib.suppress(Exception):
                ws.close()

    def personas(self, timeout: float = 60) -> list[dict[str, Any]]:
        """The persona list of this chat, as Jupyter AI publishes it to the picker (Jupyter Events)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = json.loads(self.events.recv(timeout=max(0.1, deadline - time.monotonic())))
            except TimeoutError:
                break
            if str(event.get("schema_id", "")).endswith("/personas/v1") and event.get("chat_id") == self.chat_id:
                return event["personas"]
        raise TimeoutError("no persona list was published for this chat")

    def send(self, body: str, persona: str = PERSONA_ID) -> float:
        """A user's message to ``persona``; the time it was sent."""
        frame = {"type": "client", "action": "send", "id": uuid.uuid4().hex, "body": body,
                 "metadata": {"to_persona": persona}}  # fmt: skip
        sent = time.monotonic()
        self.chat.send(json.dumps(frame))
        return sent

    def reply(self, until: Any, timeout: float = 180, sender: str = PERSONA_ID) -> dict[str, Any]:
        """Read frames until a message of ``sender`` satisfies ``until(body)``; that message. Every
        frame read is kept in ``frames`` with the time it arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                raw = self.chat.recv(timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                break
            frame = json.loads(raw)
            self.frames.append((time.monotonic(), frame))
            message = frame.get("message") if frame.get("action") == "message" else None
            if message is not None:
                self.messages[message["id"]] = message
                if message.get("sender") == sender and until(message.get("body") or ""):
                    return message
        bodies = [m.get("body", "")[:300] for m in self.messages.values()]
        raise TimeoutError(f"no message of {sender} matched; the chat holds {bodies}")

    def bodies(self, sender: str = PERSONA_ID) -> list[tuple[float, str]]:
        """Every body of ``sender``'s messages as it arrived, streamed updates included."""
        return [
            (t, f["message"].get("body", ""))
            for t, f in self.frames
            if f.get("action") == "message" and f["message"].get("sender") == sender
        ]
