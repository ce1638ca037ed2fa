"""Pulling component code out of a model reply.

Models wrap code in ```python fences, in bare fences, forget to close the fence when
they run out of tokens, or send no fence at all.  A reply may also hold several blocks
(a usage example, a pip command): we prefer the one that defines a Component subclass.
Fences are found by line, and a fence line that sits *inside* the code (a docstring
that shows markdown) is not taken as the end of the block when a later closing fence
makes the block parse.

This runs in the engine's event-loop thread on text a model chose, so every step is
linear in the reply's size and bounded: only the first ``MAX_REPLY_CHARS`` are read,
fence lines are indexed in one pass, and the "does a longer block parse?" retries are
limited in number and in total characters parsed.  On 1 MB of hostile text the whole
extraction stays well under a second, so the stop button (a task cancel, delivered
between awaits) is never held up.  What counts as a component class is decided by
``lfassist_jupyter.artifacts.component``, the same rule the static validation phase uses.
"""

from __future__ import annotations

import ast
import bisect
import re
import textwrap

from lfassist_jupyter.artifacts.component import defines_component, guess_class_name

__all__ = ["MAX_REPLY_CHARS", "defines_component", "extract_component_code", "guess_class_name"]

MAX_REPLY_CHARS = 1_000_000
"""Only the first megabyte of a reply is searched for code.  A component is a few KB; a
reply beyond this is a runaway model, and reading all of it would only cost time."""

# The fence and its language; the rest of the line is checked with ``in`` (a trailing
# ``[^`]*$`` after ``[\w+.-]*`` backtracks quadratically on one long line).
_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*([\w+.-]*)")
_PY_LANGS = {"", "python", "py", "python3", "py3"}
_CODE_START = re.compile(r"^(?:from[ \t]+\S+[ \t]+import[ \t]|import[ \t]+\S|class[ \t]+\w+)", re.M)

# Retrying a block with a later closing fence re-parses a longer prefix each time: bound both
# how many later fences are tried and how many characters are parsed over the whole reply.
_MAX_REPARSES = 3
_PARSE_BUDGET = 4 * MAX_REPLY_CHARS
_MAX_PARSES = 200  # a real reply has a handful of blocks; past this, blocks are taken as fenced
_MAX_CLOSER_LOOKAHEAD = 64
_MAX_BLOCKS = 1000  # a real reply has a few fenced blocks; past this it is junk, not more code


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _closer(line: str) -> tuple[str, int] | None:
    """(fence character, length) when ``line`` is a bare closing fence, else ``None``."""
    s = line.strip()
    if len(s) >= 3 and s[0] in "`~" and s == s[0] * len(s):
        return s[0], len(s)
    return None


def _blocks(reply: str) -> list[tuple[str, str]]:
    """(language, code) for each fenced block, closed or not -- in time linear in ``reply``."""
    lines = reply.split("\n")
    # One pass: the closing-fence lines, per fence character, in order.
    closer_at: dict[str, list[int]] = {"`": [], "~": []}
    closer_len: dict[int, int] = {}
    for j, line in enumerate(lines):
        c = _closer(line)
        if c:
            closer_at[c[0]].append(j)
            closer_len[j] = c[1]

    def closers_after(i: int, char: str, length: int):
        idx = closer_at[char]
        k = bisect.bisect_right(idx, i)
        for j in idx[k : k + _MAX_CLOSER_LOOKAHEAD]:  # a bounded slice, not the rest of the reply
            if closer_len[j] >= length:
                yield j

    budget, parses = _PARSE_BUDGET, _MAX_PARSES
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines) and len(blocks) < _MAX_BLOCKS:
        m = _OPEN.match(lines[i])
        if not m or (m.group(1)[0] == "`" and "`" in lines[i][m.end() :]):
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        later = closers_after(i, fence[0], len(fence))
        end = next(later, None)
        if end is None:
            blocks.append((lang, "\n".join(lines[i + 1 :])))
            break
        body = "\n".join(lines[i + 1 : end])
        if lang in _PY_LANGS and len(body) <= budget and parses > 0:
            budget, parses = budget - len(body), parses - 1
            if not _parses(body):
                # The first "closing" fence may belong to the code (markdown in a string).
                for _, j in zip(range(_MAX_REPARSES), later, strict=False):
                    longer = "\n".join(lines[i + 1 : j])
                    if len(longer) > budget or parses <= 0:
                        break
                    budget, parses = budget - len(longer), parses - 1
                    if _parses(longer):
                        end, body = j, longer
                        break
        blocks.append((lang, body))
        i = end + 1
    return blocks


def _tidy(code: str) -> str:
    # A fence indented inside a list item indents its code too; lfx wants it at column 0.
    return textwrap.dedent(code.strip("\n")).strip() + "\n"


def extract_component_code(reply: str) -> str | None:
    """The component code in ``reply``, or ``None`` when there is none.

    Preference: a Python block defining a Component subclass, then any block defining
    one, then unfenced code that does, then the first Python block.  Only the first
    ``MAX_REPLY_CHARS`` of the reply are read.
    """
    if not isinstance(reply, str) or not reply.strip():
        return None
    reply = reply[:MAX_REPLY_CHARS]
    blocks = [(lang, _tidy(code)) for lang, code in _blocks(reply) if code.strip()]
    python = [code for lang, code in blocks if lang in _PY_LANGS]
    for code in python:
        if defines_component(code):
            return code
    for _, code in blocks:
        if defines_component(code):
            return code
    if not blocks and defines_component(reply):
        # No fence at all: take from the first line that looks like code.
        m = _CODE_START.search(reply)
        code = reply[m.start() :] if m else reply
        return code.strip() + "\n"
    if python:
        return python[0]
    return None
