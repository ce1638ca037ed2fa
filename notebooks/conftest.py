"""The demo notebooks run under nbval in the test run, always offline.

Kernels inherit this process's environment, so before any notebook is collected we drop
real provider keys (tests never call a real model) and point the assistant at the scripted
replies in demo-script.json, with a private data directory.
"""

import os
import tempfile
from pathlib import Path

_PROVIDER_VARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST", "OLLAMA_BASE_URL", "LFASSIST_PROVIDER", "LFASSIST_MODEL", "LFASSIST_INTENT_MODEL",
)  # fmt: skip
for var in _PROVIDER_VARS:
    os.environ.pop(var, None)
os.environ["LFASSIST_SCRIPT"] = str(Path(__file__).with_name("demo-script.json"))
os.environ.setdefault("LFASSIST_DATA_DIR", tempfile.mkdtemp(prefix="lfassist-notebooks-"))
