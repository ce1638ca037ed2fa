"""A test-only op module for the sandbox's worker: ``frames`` looks through every frame of the
child that serves it (the child's top-level frame, then everything below it: the fork server,
the zygote's request loop) and says which of the given markers appear in their local variables.

Loaded like the worker's own op modules (``OP_MODULES``, stdlib only, ``register(ops, facts)``),
so it runs as the worker's code (its frame walking is not the request's), under the child's
hook.  What it finds is what a request's code could find if it could walk frames: the test of
"nothing of one request is visible to the next" asks it about the previous request.
"""

from __future__ import annotations

import sys


def _texts(value: object, depth: int = 0) -> list[str]:
    """Every string in ``value`` (containers, and the attributes of plain objects), bounded."""
    if depth > 4:
        return []
    if isinstance(value, str | bytes | bytearray):
        return [value.decode("latin-1") if isinstance(value, bytes | bytearray) else value]
    if isinstance(value, dict):
        return [t for k, v in list(value.items())[:200] for t in (*_texts(k, depth + 1), *_texts(v, depth + 1))]
    if isinstance(value, list | tuple | set | frozenset):
        return [t for v in list(value)[:200] for t in _texts(v, depth + 1)]
    attrs = getattr(value, "__dict__", None)
    return _texts(attrs, depth + 1) if isinstance(attrs, dict) else []


def register(ops: dict, facts: dict) -> None:
    def frames(req: dict) -> dict:
        # Sent reversed, so that the request itself does not hold the markers it asks about.
        markers = [m[::-1] for m in req.get("reversed") or [] if isinstance(m, str)]
        found: set[str] = set()
        where: set[str] = set()
        depth = 0
        frame = sys._getframe(1)  # from the op's caller down (this frame holds the markers)
        while frame is not None:
            depth += 1
            for name, value in dict(frame.f_locals).items():
                for text in _texts(value):
                    hits = [m for m in markers if m in text]
                    found.update(hits)
                    where.update(f"{frame.f_code.co_name}:{name}" for _ in hits)
            frame = frame.f_back
        return {"found": sorted(found), "where": sorted(where), "frames": depth}

    ops["frames"] = frames
