"""Pulling component code out of a model reply.

Models wrap code in ```python fences, in bare fences, forget to close the fence when
they run out of tokens, or send no fence at all.  A reply may also hold several blocks
(a usage example, a pip command): we prefer the one that defines a Component subclass.
Fences are found by line, and a fence line that sits *inside* the code (a docstring
that shows markdown) is not taken as the end of the block when a later closing fence
makes the block parse.
"""

from __future__ import annotations

import ast
import re

_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+.-]*)[^\n`]*$")
# A base whose last dotted name *ends* with "Component": Component, CustomComponent,
# lfx.custom.Component, LCModelComponent -- but not ComponentFactory.
_COMPONENT_CLASS = re.compile(r"^\s*class\s+\w+\s*\(([^)]*)\)\s*:", re.M)
_COMPONENT_BASE = re.compile(r"(?:^|[\s,.(])\w*Component\s*(?:$|[,)\[])")
_PY_LANGS = {"", "python", "py", "python3", "py3"}
_CODE_START = re.compile(r"^(?:from\s+\S+\s+import\s|import\s+\S|class\s+\w+)", re.M)


def defines_component(code: str) -> bool:
    """Whether ``code`` declares a class with a ``...Component`` base."""
    for match in _COMPONENT_CLASS.finditer(code):
        bases = match.group(1)
        if any(_COMPONENT_BASE.search(f" {b.strip()} ") for b in bases.split(",")):
            return True
    return False


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _blocks(reply: str) -> list[tuple[str, str]]:
    """(language, code) for each fenced block, closed or not."""
    lines = reply.split("\n")
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        closers = [
            j
            for j in range(i + 1, len(lines))
            if lines[j].strip().startswith(fence[0] * len(fence)) and lines[j].strip().strip(fence[0]) == ""
        ]
        if not closers:
            blocks.append((lang, "\n".join(lines[i + 1 :])))
            break
        end = closers[0]
        body = "\n".join(lines[i + 1 : end])
        if lang in _PY_LANGS and not _parses(body):
            # The first "closing" fence may belong to the code (markdown in a string).
            for j in closers[1:]:
                longer = "\n".join(lines[i + 1 : j])
                if _parses(longer):
                    end, body = j, longer
                    break
        blocks.append((lang, body))
        i = end + 1
    return blocks


def extract_component_code(reply: str) -> str | None:
    """The component code in ``reply``, or ``None`` when there is none.

    Preference: a Python block defining a Component subclass, then any block defining
    one, then unfenced code that does, then the first Python block.
    """
    if not reply or not reply.strip():
        return None
    blocks = [(lang, code.strip("\n")) for lang, code in _blocks(reply)]
    blocks = [(lang, code) for lang, code in blocks if code.strip()]
    python = [code for lang, code in blocks if lang in _PY_LANGS]
    for code in python:
        if defines_component(code):
            return code.strip() + "\n"
    for _, code in blocks:
        if defines_component(code):
            return code.strip() + "\n"
    if not blocks and defines_component(reply):
        # No fence at all: take from the first line that looks like code.
        m = _CODE_START.search(reply)
        code = reply[m.start() :] if m else reply
        return code.strip() + "\n"
    if python:
        return python[0].strip() + "\n"
    return None


_CLASS_NAME = re.compile(r"^\s*class\s+(\w+)\s*\(", re.M)


def guess_class_name(code: str) -> str | None:
    """The name of the component class in ``code`` (syntax errors tolerated)."""
    for match in _COMPONENT_CLASS.finditer(code):
        if any(_COMPONENT_BASE.search(f" {b.strip()} ") for b in match.group(1).split(",")):
            name = _CLASS_NAME.match(code, match.start())
            if name:
                return name.group(1)
    m = _CLASS_NAME.search(code)
    return m.group(1) if m else None
