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
_INSTRUCTION_WORDS = (
    r"(?:instructions?|prompts?|rules|directives|directions|guidelines|constraints|programming|guardrails)"
)
_PRIOR = (
    r"(?:all|any|every|the|your|these|those|my|of|previous(?:ly)?|prior|above|earlier|preceding|former"
    r"|original|initial|system|existing|given)"
)
# "override the system prompt" is how Langflow users talk about the Agent component; only the
# assistant's own ("your") or earlier ("previous") instructions make override/bypass an attack.
_OWN = r"(?:your|all|previous(?:ly)?|prior|above|earlier|preceding|former|original|initial)"
_TOLD = (
    r"(?:(?:that\s+)?(?:you(?:'ve|\s+have|\s+were|\s+was)?\s+(?:been\s+)?(?:told|given|taught|instructed)"
    r"|(?:i|we)\s+(?:said|wrote|told\s+you)))"
)
_LIMITS = r"(?:restrictions|filters?|filtering|censorship|limitations|limits|rules|guidelines|guardrails)"
_INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "instruction override",
        re.compile(
            rf"\b(?:ignore|disregard|forget|abandon)\b(?:\s+{_PRIOR}){{1,4}}\s+{_INSTRUCTION_WORDS}\b"
            rf"|\b(?:override|bypass|circumvent)\s+(?:the\s+|all\s+)?(?:{_OWN}\s+){{1,3}}(?:system\s+)?{_INSTRUCTION_WORDS}\b"
            rf"|\b(?:ignore|disregard|forget)\s+(?:about\s+)?(?:everything|anything|whatever|what|all(?:\s+of)?(?:\s+(?:that|this))?)\s+{_TOLD}"
            rf"|\b(?:do\s+not|don'?t|stop|no\s+longer)\s+(?:follow(?:ing)?|obey(?:ing)?|adher(?:e|ing)\s+to)\s+"
            rf"(?:(?:the|any|{_OWN}|system)\s+){{1,3}}{_INSTRUCTION_WORDS}\b"
            rf"|\b(?:override|bypass|disable|ignore|turn\s+off)\s+your\s+(?:own\s+)?(?:safety\s+|content\s+|security\s+)?"
            rf"(?:settings|filters?|{_INSTRUCTION_WORDS}|restrictions|training)\b",
            re.I,
        ),
    ),
    (
        "instruction override",
        re.compile(
            rf"\b(?:new|updated|real)\s+(?:system\s+)?{_INSTRUCTION_WORDS}\s*:"
            r"|\byour\s+(?:new|real|true)\s+(?:role|persona|identity|instructions|task|purpose)\s+(?:is|are|will\s+be)\b",
            re.I,
        ),
    ),
    (
        "role hijack",
        re.compile(
            r"\byou\s+are\s+(?:now|no\s+longer)\b|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must)\b"
            r"|\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|DAN)\b"
            r"|\bpretend\s+(?:that\s+)?you\s+(?:are|have)\s+(?:no|an?\s+unrestricted)\b"
            r"|\b(?:pretend\s+to\s+be|roleplay\s+as|you\s+are|you're)\s+(?:now\s+)?(?:DAN|an?\s+(?:unrestricted|unfiltered|uncensored|jailbroken)\b)"
            r"|\bdo\s+anything\s+now\b"
            rf"|\b(?:act|behave|respond|answer)\s+(?:as|like)\s+(?:an?\s+)?(?:AI|assistant|model|chatbot|bot|LLM)\s+"
            rf"(?:that\s+has\s+no|with\s+no|without(?:\s+any)?)\s+{_LIMITS}\b"
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
            r")\b"
            # "repeat everything above" / "print the text above.": only when "above" ends the request
            r"|\b(?:repeat|print|output|show|display|echo|reveal|dump|recite)\s+(?:me\s+)?(?:back\s+)?"
            r"(?:everything|all|the\s+(?:text|words|message|content|lines))\s+(?:(?:written|said|that\s+(?:came|comes|is|was))\s+)?"
            r"(?:above|before\s+this)\s*(?:verbatim\b|word\s+for\s+word\b|[.!?:;,]|$)"
            r"|\bwhat\s+(?:instructions|rules|guidelines|directives)\s+(?:were\s+you|have\s+you\s+been|did\s+you\s+get)\b",
            re.I,
        ),
    ),
    (
        "chat-template delimiter",
        re.compile(r"\[/?INST\]|<</?SYS>>|<\|im_start\|>|<\|im_end\|>|<\|system\|>|<\|start_header_id\|>", re.I),
    ),
)

# Look-alike letters an attack swaps in so a pattern does not see "ignore": Greek and Cyrillic
# letters drawn like Latin ones (full-width and mathematical letters are handled by NFKC).
_CONFUSABLES = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u043a\u04bb\u0432\u043d\u043c\u0442"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0423\u0406\u0408\u0405"
    "\u03b1\u03bf\u03b5\u03b9\u03ba\u03bd\u03c1\u03c4\u03c5\u03c7\u03c9\u03b3"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
    "aeopcyxijsdqwkhbhmtABEKMHOPCTXYIJSaoeikvptuxwyABEZHIKMNOPTYX",
)


def _for_matching(text: str) -> str:
    """``text`` as the injection patterns see it: NFKC (full-width and styled letters become plain),
    format characters (zero-width spaces and joiners, soft hyphens, bidi controls) and combining
    marks removed, look-alike letters mapped to Latin, and whitespace folded.  Used for matching
    only; the prompt itself is not changed."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Mn"))
    return " ".join(text.translate(_CONFUSABLES).split())


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
        from lfassist_jupyter.errors import ConfigError

        # A ConfigError is shown as one clear line (a TypeError would read "Unexpected error").
        hint = " (decode it first: data.decode())" if isinstance(prompt, (bytes, bytearray)) else ""
        raise ConfigError(f"The request must be text (str), not {type(prompt).__name__}{hint}.")
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
    text = _for_matching(text)
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
