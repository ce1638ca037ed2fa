"""Large JSON through the worker's answer: packed (zlib, base64) in chunks under the string cap.

A child truncates every string of its answer to 20,000 characters (``_shared.STRING_CAP``), and
the catalogue or a built flow is far larger: the worker packs them here and the kernel's client
(``sandbox/client.py``) unpacks them with a cap on the inflated size. Standard library only, as
everything in the worker's directory.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

CHUNK = 16_000


def pack(obj: Any) -> list[str]:
    """``obj`` as JSON, zlib-compressed, base64, in chunks short enough for the worker's caps."""
    # default=str: a value lfx keeps as an object (a UUID in an MCP node's field) travels as its text.
    text = base64.b64encode(zlib.compress(json.dumps(obj, separators=(",", ":"), default=str).encode(), 6)).decode()
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]


def unpack(chunks: Any, cap: int) -> Any:
    """The object ``pack`` packed; ``ValueError`` when it is not one, or inflates past ``cap`` bytes."""
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise ValueError("not a packed answer")
    try:
        raw = base64.b64decode("".join(chunks), validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, cap + 1)
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"not a packed answer ({exc})") from None
    if len(data) > cap or inflater.unconsumed_tail:
        raise ValueError(f"larger than {cap:,} bytes")
    return json.loads(data)
