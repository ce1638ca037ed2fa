"""Keeping secrets out of messages, logs, widget state and the sandbox.

Provider SDK errors sometimes echo part of a key ("Incorrect API key provided: sk-ab***"),
and a user may paste a key into a prompt.  Everything we show or log goes through
``redact`` first; the sandbox gets an environment built from an allow-list, not a copy.
"""

from __future__ import annotations

import os
import re

SECRET_ENV_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")

_KEY_PATTERNS = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-*]{8,}|sk-[A-Za-z0-9_\-*]{8,}|gsk_[A-Za-z0-9*]{8,}|xai-[A-Za-z0-9*]{8,}"
    r"|hf_[A-Za-z0-9]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})"
)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(h in upper for h in SECRET_ENV_HINTS)


def secret_values(extra: tuple[str | None, ...] = ()) -> list[str]:
    """Values of secret-looking environment variables (and ``extra``), longest first."""
    values = [v for k, v in os.environ.items() if is_secret_name(k) and v and len(v) >= 6]
    values.extend(v for v in extra if v and len(v) >= 6)
    return sorted(set(values), key=len, reverse=True)


def redact(text: str, extra: tuple[str | None, ...] = ()) -> str:
    """``text`` with known secret values and key-shaped strings replaced by ``***``."""
    if not text:
        return text
    for value in secret_values(extra):
        text = text.replace(value, "***")
    return _KEY_PATTERNS.sub("***", text)
