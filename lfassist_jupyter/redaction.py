"""Keeping secrets out of messages, logs, widget state and the sandbox.

Provider SDK errors sometimes echo part of a key ("Incorrect API key provided: sk-ab***"),
and a user may paste a key into a prompt.  Everything we show or log goes through
``redact`` first; the sandbox gets an environment built from an allow-list, not a copy.
"""

from __future__ import annotations

import base64
import codecs
import os
import re
from typing import Any

SECRET_ENV_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")

_KEY_PATTERNS = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-*]{8,}|sk-[A-Za-z0-9_\-*]{8,}|gsk_[A-Za-z0-9*]{8,}|xai-[A-Za-z0-9*]{8,}"
    r"|hf_[A-Za-z0-9]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})"
)

_SECRET_QUERY_NAMES = r"(?:api[-_]?key|key|token|access[-_]?token|auth|password|secret|sig|signature)"
_SECRET_QUERY = re.compile(_SECRET_QUERY_NAMES, re.IGNORECASE)
_URL_SECRETS = re.compile(
    r"(?i)(://[^\s/?#@:]{0,256}:)[^\s/?#@]{1,512}(?=@)"  # the password of scheme://user:password@host
    rf"|([?&]{_SECRET_QUERY_NAMES}=)[^&\s#\"'<>]+"  # a key in the query
    r"|(://)[^\s/?#@:]{1,512}(?=@)"  # a user part alone: scheme://TOKEN@host (a token is often put there)
)
"""Credentials written into a URL (a password before ``@``, a user part alone, a key in the
query): a base URL is not a secret-named variable, so its value is not among ``secret_values``.
Bounded quantifiers and a literal start keep the scan linear."""


def _url_secret(match: re.Match[str]) -> str:
    return (match.group(1) or match.group(2) or match.group(3)) + "***"


def without_credentials(url: str) -> str:
    """``url`` without its user part and credential-named query parameters: what may be written
    into a flow, a card or a session.  A flow carries the names of the variables that hold secrets,
    never their values; a password inside a base URL is such a value (the user gives it to their
    Langflow, as they give it the key)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _SECRET_QUERY.fullmatch(k)]
        netloc = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query)))
    except ValueError:  # not a URL urllib can take apart: cut what the pattern finds
        return _URL_SECRETS.sub(_url_secret, url)


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
    return _URL_SECRETS.sub(_url_secret, _KEY_PATTERNS.sub("***", text))


FRAGMENT = 10
"""A passed key is redacted wherever this many of its letters and digits appear in a row, in
order or reversed, in any case or rot13'd, whatever separates them (``sk-ab cd…``, one
character per line, halves, ``key.swapcase()``)."""


_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def redact_fragments(text: str, values: tuple[str | None, ...]) -> str:
    """``text`` with every run of ``FRAGMENT`` consecutive letters/digits of a value in ``values``
    (or of it reversed, or rot13'd) replaced by ``***``, in any case, ignoring whatever
    non-alphanumeric text is between them -- the split, reversed, recased and rotated forms a
    component can print a key in, one call each, to get it past a plain search.  For keys given
    to a run (random strings), where a chance match of ten characters in a row is negligible;
    one pass over the text per window length."""
    if not text:
        return text
    windows: dict[int, set[str]] = {}
    for value in values:
        core = "".join(c for c in value or "" if c.isalnum()).translate(_FOLD)
        if len(core) < 8:
            continue
        size = min(FRAGMENT, len(core))
        rotated = codecs.encode(core, "rot13")
        for form in (core, core[::-1], rotated, rotated[::-1]):
            windows.setdefault(size, set()).update(form[i : i + size] for i in range(len(form) - size + 1))
    if not windows:
        return text
    positions = [i for i, c in enumerate(text) if c.isalnum()]
    skeleton = "".join(text[i] for i in positions).translate(_FOLD)  # one character for one
    spans: list[tuple[int, int]] = []
    for size, grams in windows.items():
        spans += [
            (positions[i], positions[i + size - 1] + 1)
            for i in range(len(skeleton) - size + 1)
            if skeleton[i : i + size] in grams
        ]
    out, last = [], 0
    for start, end in sorted(spans):
        if end <= last:
            continue
        if start >= last:
            out.append(text[last:start])
            out.append("***")
        last = end
    out.append(text[last:])
    return "".join(out)


def _encoded_forms(secret: str) -> list[str]:
    """Hex and base64 spellings of ``secret``, as they would appear inside a longer text.

    base64 of a substring depends on its offset modulo 3, so each of the three alignments
    gets its stable middle part (the first and last groups mix in neighbouring bytes).
    """
    raw = secret.encode()
    forms = [raw.hex(), raw.hex().upper()]
    for pad in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * pad + raw).decode().rstrip("=")
            core = text[4 if pad else 0 : -4]
            if len(core) >= 8:
                forms.append(core)
    return forms


def redact_text(text: str, extra: tuple[str, ...] = ()) -> str:
    """``redact`` plus the hex, base64 and reversed forms of secret environment values (and of
    ``extra``: keys given to a real run that are not in this process's environment), and their
    fragments: what comes back from generated code may have disguised a key on purpose."""
    if not text:
        return text
    for value in secret_values(extra):
        if len(value) >= 8:
            for form in (*_encoded_forms(value), *_encoded_forms(value[::-1]), value[::-1]):
                text = text.replace(form, "***")
    return redact_fragments(redact(text, extra), extra)  # a passed key split or reversed, too


def redact_tree(obj: Any) -> Any:
    """``redact_text`` on every string of a JSON-like tree (an answer from the sandbox)."""
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        return {k: redact_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_tree(v) for v in obj]
    return obj
