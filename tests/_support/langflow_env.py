"""The cached real-Langflow test environment, shared by the tests that need Langflow's files.

One place for the environment and its install logic: the Langflow API tests (the server) and the
flow tests (Langflow's starter projects) import it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

LANGFLOW_SPEC = os.environ.get("LFASSIST_LANGFLOW_SPEC", "langflow>=1.13,<1.14")
SERVER_KEY = "sk-langflow-server-key-0123456789"  # the session server's OPENAI_API_KEY
VENV = Path(os.environ.get("LFASSIST_LANGFLOW_VENV", Path.home() / ".cache" / "lfassist-jupyter" / "langflow-venv"))


def ensure_langflow() -> Path:
    """The cached Langflow environment's `langflow` executable, created with uv on first use.

    `make test` runs two pytest workers: the first to get here installs, under a lock file, and
    the other waits for it; an install that did not finish (no stamp) is done again."""
    exe, stamp = VENV / "bin" / "langflow", VENV / ".lfassist-complete"
    if stamp.exists():
        return exe
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "langflow-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            _install()
            stamp.touch()
    return exe


def _install() -> None:
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable, str(VENV)], check=True)
    # --compile-bytecode: without it the server's start-up takes twice as long.
    python = str(VENV / "bin" / "python")
    subprocess.run(
        [*uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, LANGFLOW_SPEC],
        check=True,
        timeout=1800,
    )


def starter_projects() -> list[Path]:
    """Langflow's own starter projects (flow JSON files shipped inside the langflow package)."""
    ensure_langflow()
    found = sorted(VENV.glob("lib/python*/site-packages/langflow/initial_setup/starter_projects/*.json"))
    if not found:
        raise RuntimeError(f"no starter projects under {VENV}; is the langflow package installed there?")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A real Langflow server on a free port.  ``env`` adds variables to its environment (e.g. a
    provider's key and base URL: Langflow makes the key a global variable at start)."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        extra = dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "LANGFLOW_"))}
        env.update(
            LANGFLOW_AUTO_LOGIN="true",
            LANGFLOW_CONFIG_DIR=str(tmp / "config"),
            LANGFLOW_DATABASE_URL=f"sqlite:///{tmp / 'langflow.db'}",
            DO_NOT_TRACK="true",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            LANGFLOW_LOG_LEVEL="error",
        )
        env.update(extra)
        self.log = open(tmp / "langflow.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                str(ensure_langflow()),
                "run",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--backend-only",
                "--no-open-browser",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.started = time.monotonic()

    def wait(self, timeout: float = 300) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Langflow exited with {self.proc.returncode}; see {self.log.name}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/health", timeout=1) as r:
                if r.status == 200:
                    return time.monotonic() - self.started
            time.sleep(0.5)
        raise TimeoutError(f"Langflow did not become healthy in {timeout} s; see {self.log.name}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
