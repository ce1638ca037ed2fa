"""The cached real-Langflow test environment, shared by the tests that need Langflow's files.

One place for the environment and its install logic: tests/test_langflow.py (the server) and the
flow tests (Langflow's starter projects) import it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LANGFLOW_SPEC = os.environ.get("LFASSIST_LANGFLOW_SPEC", "langflow>=1.13,<1.14")
VENV = Path(os.environ.get("LFASSIST_LANGFLOW_VENV", Path.home() / ".cache" / "lfassist-jupyter" / "langflow-venv"))


def ensure_langflow() -> Path:
    """The cached Langflow environment's `langflow` executable, created with uv on first use."""
    exe = VENV / "bin" / "langflow"
    if exe.exists():
        return exe
    VENV.parent.mkdir(parents=True, exist_ok=True)
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, str(VENV)], check=True)
    # --compile-bytecode: without it the server's start-up takes twice as long.
    python = str(VENV / "bin" / "python")
    subprocess.run(
        [*uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, LANGFLOW_SPEC],
        check=True,
        timeout=1800,
    )
    return exe


def starter_projects() -> list[Path]:
    """Langflow's own starter projects (flow JSON files shipped inside the langflow package)."""
    ensure_langflow()
    found = sorted(VENV.glob("lib/python*/site-packages/langflow/initial_setup/starter_projects/*.json"))
    if not found:
        raise RuntimeError(f"no starter projects under {VENV}; is the langflow package installed there?")
    return found
