"""Where sessions and saved things live: a module of its own so ``%load_ext`` can know the place
without importing the session schema (pydantic builds its models at import, ~150 ms)."""

from __future__ import annotations

from pathlib import Path

from lfassist_jupyter import settings


def default_data_dir() -> Path:
    """``$LFASSIST_DATA_DIR`` or the platform's per-user data directory."""
    configured = settings.read("data_dir")
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("lfassist-jupyter", appauthor=False))
