"""Where sessions and saved things live: a module of its own so ``%load_ext`` can know the place
without importing the session schema (pydantic builds its models at import, ~150 ms)."""

from __future__ import annotations

import os
from pathlib import Path


def default_data_dir() -> Path:
    """``$LFASSIST_DATA_DIR`` or the platform's per-user data directory."""
    env = os.environ.get("LFASSIST_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("lfassist-jupyter", appauthor=False))
