"""Input hygiene: what a prompt goes through before any model sees it.

Normalising is cheap and keeps model calls deterministic (no NULs, no stray control
characters, no trailing blanks); the length cap protects the user's token budget and
the provider's context window; and prompt-injection phrases are refused here, before
classification, so they never cost a model call nor reach a system prompt.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

MAX_PROMPT_CHARS = 8000
"""Prompts longer than this are truncated (with a visible notice).  8,000 characters is
roughly 2,000 tokens: far more than any component request needs, small enough to leave
the model's context window to the conversation, the lfx reference and the answer."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")

# Each pattern needs the *shape* of an attack, not a single word: "ignore" alone is an
# ordinary programming word ("How do I ignore errors in my component?").
# Not "messages" or "context": chat-memory components legitimately "drop all previous messages".
_INSTRUCTION_WORDS = r"(?:instructions?|prompts?|rules|directives|guidelines|constraints)"
_PRIOR = (
    r"(?:all|any|every|the|your|these|those|my|of|previous(?:ly)?|prior|above|earlier|preceding|former"
    r"|original|initial|system|existing|given)"
)
_INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "instruction override",
        re.compile(
            rf"\b(?:ignore|disregard|forget|override|bypass|abandon)\b(?:\s+{_PRIOR}){{1,4}}\s+{_INSTRUCTION_WORDS}\b",
            re.I,
        ),
    ),
    (
        "instruction override",
        re.compile(rf"\b(?:new|updated|real)\s+(?:system\s+)?{_INSTRUCTION_WORDS}\s*:", re.I),
    ),
    (
        "role hijack",
        re.compile(
            r"\byou\s+are\s+(?:now|no\s+longer)\b|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must)\b"
            r"|\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|DAN)\b"
            r"|\bpretend\s+(?:that\s+)?you\s+(?:are|have)\s+(?:no|an?\s+unrestricted)\b"
            r"|\b(?:enter|enable|activate)\s+(?:developer|god|jailbreak|DAN)\s+mode\b",
            re.I,
        ),
    ),
    (
        "prompt extraction",
        re.compile(
            r"\b(?:reveal|show|print|output|repeat|display|leak|dump|tell\s+me|give\s+me|what\s+(?:is|are|was|were))\s+"
            r"(?:me\s+)?(?:"
            # "your ..." points at the assistant itself: any of its prompts or instructions
            r"your\s+(?:full\s+|entire\s+|exact\s+|original\s+|hidden\s+|initial\s+|secret\s+)*"
            r"(?:system\s+(?:prompt|message|instructions?)|instructions|initial\s+prompt|prompt)"
            # "the ..." only for phrases that cannot mean a Langflow feature ("the system message" can)
            r"|the\s+(?:full\s+|entire\s+|exact\s+|original\s+|hidden\s+|initial\s+|secret\s+)*"
            r"(?:system\s+prompt|hidden\s+instructions|initial\s+prompt|prompt\s+above|instructions\s+above)"
            r")\b",
            re.I,
        ),
    ),
    (
        "chat-template delimiter",
        re.compile(r"\[/?INST\]|<</?SYS>>|<\|im_start\|>|<\|im_end\|>|<\|system\|>|<\|start_header_id\|>", re.I),
    ),
)


@dataclass
class CleanPrompt:
    """A prompt after hygiene: the text to use and what happened on the way."""

    text: str
    truncated: bool = False
    original_length: int = 0
    warnings: list[str] = field(default_factory=list)


def normalize(prompt: str) -> str:
    """Drop NULs and control characters, unify newlines, fold runs of blanks, and replace lone
    surrogates (which no SDK can encode as UTF-8) with U+FFFD; a split pair is joined again."""
    prompt = prompt.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    text = unicodedata.normalize("NFC", prompt.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub("", text)
    lines = [_SPACES.sub(" ", line).rstrip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def clean_prompt(prompt: str, max_chars: int = MAX_PROMPT_CHARS) -> CleanPrompt:
    """Normalise and cap a prompt; a truncation is reported, never silent."""
    if not isinstance(prompt, str):
        raise TypeError(f"the prompt must be a string, not {type(prompt).__name__}")
    text = normalize(prompt)
    result = CleanPrompt(text=text, original_length=len(text))
    if len(text) > max_chars:
        result.text = text[:max_chars].rstrip()
        result.truncated = True
        result.warnings.append(
            f"Your request was {len(text):,} characters long; only the first {max_chars:,} were used."
        )
    return result


def detect_injection(text: str) -> str | None:
    """Name the kind of prompt injection ``text`` attempts, or ``None`` if it looks ordinary."""
    for kind, pattern in _INJECTION_PATTERNS:
        if pattern.search(text):
            return kind
    return None


INJECTION_REFUSAL = (
    "This request looks like an attempt to change the assistant's instructions ({kind}), so it was "
    "not sent to the model. Describe the component you want, or ask a question about Langflow."
)
EMPTY_PROMPT_MESSAGE = (
    "The request is empty. Describe the component you want, for example: 'a component that uppercases a text input'."
)
