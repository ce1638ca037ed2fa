"""Intent classification and translation to English, in one stateless model call.

The classifier never sees the conversation (Langflow's ADR: a shared memory made it
classify its own JSON replies).  It only gets one line of context, whether the session
already has a component or a flow, so follow-ups like "now make it lowercase too" or "add a
summariser before the output" are recognised as change requests instead of questions.

Models do not always answer with clean JSON, so parsing is tolerant (Langflow's ADR for
models such as IBM granite): plain JSON, JSON in a markdown fence, JSON embedded in prose,
then a strict ``"intent": "..."`` pattern, else ``question`` -- the safe default, since a
question never produces code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

GENERATE_COMPONENT = "generate_component"
BUILD_FLOW = "build_flow"
COMPONENT_THEN_FLOW = "component_then_flow"
RUN_FLOW = "run_flow"
QUESTION = "question"
OFF_TOPIC = "off_topic"
USE_BUILTIN = "use_builtin"
"""Not a classifier answer: the intent of a reply that offers a built-in component instead of
generating one (the classifier says ``generate_component`` and names the built-in)."""
Intent = Literal["generate_component", "build_flow", "component_then_flow", "run_flow", "question", "off_topic"]
INTENTS: tuple[str, ...] = (GENERATE_COMPONENT, BUILD_FLOW, COMPONENT_THEN_FLOW, RUN_FLOW, QUESTION, OFF_TOPIC)
"""Every intent the classifier may answer, defined here once (prompt, parsing and routing use it)."""
FLOW_INTENTS: tuple[str, ...] = (BUILD_FLOW, COMPONENT_THEN_FLOW)
"""The intents the flow pipeline serves."""

ResultKind = Literal["component", "flow", "answer"]
INTENT_KIND: dict[str, ResultKind] = {
    GENERATE_COMPONENT: "component",
    BUILD_FLOW: "flow",
    COMPONENT_THEN_FLOW: "flow",
    RUN_FLOW: "flow",
    QUESTION: "answer",
    OFF_TOPIC: "answer",
    USE_BUILTIN: "answer",
}
"""What kind of result each intent produces (the discriminator of results and outcomes)."""
INTENT_METRIC: dict[str, str] = {
    GENERATE_COMPONENT: GENERATE_COMPONENT,
    BUILD_FLOW: BUILD_FLOW,
    COMPONENT_THEN_FLOW: COMPONENT_THEN_FLOW,
    RUN_FLOW: RUN_FLOW,
    QUESTION: QUESTION,
    OFF_TOPIC: OFF_TOPIC,
    USE_BUILTIN: USE_BUILTIN,
}
"""How usage metrics name each intent (``assistant_requests_by_intent``): the spec's own intent names,
so the counters read the same as Langflow's Assistant metrics."""

INTENT_SYSTEM_PROMPT = f"""\
You classify requests sent to the Langflow Assistant, which writes Langflow custom \
components (Python classes built on lfx), builds Langflow flows (graphs of components) that \
answer with the user's own model, runs flows, and answers questions about Langflow.

Reply with ONLY a JSON object, no prose, no code fence:
{{"translation": "<the request translated to English; unchanged if already English>", \
"intent": "<{" | ".join(INTENTS)}>"}}

- {GENERATE_COMPONENT}: the user wants a Langflow component created or changed \
(e.g. "make a component that uppercases text", "add a separator input", "now return a DataFrame").
- {BUILD_FLOW}: the user wants a flow (several connected components) built or changed \
(e.g. "a flow that summarises a PDF with an LLM and answers in the chat", \
"add a summariser before the output", "use Anthropic instead").
- {COMPONENT_THEN_FLOW}: the user wants a flow that needs a new custom component of its own \
(e.g. "a chat flow with a custom component that reverses the words of the question").
- {RUN_FLOW}: the user wants an existing flow run on some input, not a new flow \
(e.g. "run my summariser on this text: ...", "run qa.json with 'hello'"); then also answer \
"flow": the flow as the user named it (a name or a .json file; "" for the current flow) and \
"input": the text to run it on, verbatim.
- With {GENERATE_COMPONENT} for a NEW component (not a change to the user's own), when a \
built-in component of the list the request may give already does exactly that job, also answer \
"builtin": its name exactly as listed (the user is offered it instead of a lookalike); when none \
does the job, or the request asks for more than it does, leave "builtin" out.
- {QUESTION}: a question about Langflow, lfx, components, flows, or Python for components.
- {OFF_TOPIC}: anything else (other tools or platforms, general knowledge, chit-chat).
"""

_FENCE_JSON = re.compile(r"```(?:json|JSON)?\s*(\{.*?\})\s*```", re.S)
_EMBEDDED_JSON = re.compile(r"\{[^{}]*\"intent\"[^{}]*\}", re.S)
_STRICT_INTENT = re.compile(r"[\"']intent[\"']\s*:\s*[\"'](" + "|".join(INTENTS) + r")[\"']", re.I)
_STRICT_TRANSLATION = re.compile(r"[\"']translation[\"']\s*:\s*\"((?:[^\"\\]|\\.)*)\"", re.S)


@dataclass(frozen=True)
class IntentResult:
    intent: str
    translation: str
    parsed_by: str  # json | fenced_json | embedded_json | pattern | default
    flow: str | None = None
    """For ``run_flow``: the flow to run, as the user named it ("" or None: the current flow)."""
    input: str | None = None
    """For ``run_flow``: the text to run it on."""
    builtin: str | None = None
    """For ``generate_component``: a built-in component the classifier found doing the job."""


def build_intent_messages(
    text: str, *, has_component: bool = False, has_flow: bool = False, builtins: str | None = None
) -> tuple[str, list[dict[str, str]]]:
    """The system prompt and the single user message of the classification call.

    With ``has_flow`` the context line says a flow exists, so an edit of it ("add a
    summariser before the output") is recognised as ``build_flow``; a flow is the later
    artefact when both exist, so it is named last.
    """
    context = ""
    if has_component:
        context += (
            f"Context: the user already has a component in this session; requests to change it are "
            f"{GENERATE_COMPONENT}.\n"
        )
    if has_flow:
        context += (
            f"Context: the user already has a flow in this session; requests to change it "
            f"(add, remove or swap a component, rewire it) are {BUILD_FLOW}.\n"
        )
    system = INTENT_SYSTEM_PROMPT
    if builtins:  # in the system prompt: the same for every request, and the request keeps its own budget
        system += f"\nBuilt-in components (name: what it does):\n{builtins}\n"
    return system, [{"role": "user", "content": f"{context}Request:\n{text}"}]


def _from_obj(obj: Any, original: str, how: str) -> IntentResult | None:
    if not isinstance(obj, dict):
        return None
    intent = str(obj.get("intent", "")).strip().lower()
    if intent not in INTENTS:
        return None
    translation = obj.get("translation")
    if not isinstance(translation, str) or not translation.strip():
        translation = original
    if intent == RUN_FLOW:
        flow, text = parse_run_request(original)
        given_flow, given_input = obj.get("flow"), obj.get("input")
        flow = given_flow.strip() if isinstance(given_flow, str) else flow
        text = given_input if isinstance(given_input, str) and given_input.strip() else text
        return IntentResult(intent=intent, translation=translation.strip(), parsed_by=how, flow=flow, input=text)
    builtin = obj.get("builtin")
    named = builtin.strip()[:100] if intent == GENERATE_COMPONENT and isinstance(builtin, str) else ""
    return IntentResult(intent=intent, translation=translation.strip(), parsed_by=how, builtin=named or None)


_RUN_HEAD = re.compile(r"^\s*(?:please\s+)?(?:run|execute|try|test)\s+(?:(?:my|the|this|our)\s+)?", re.I)
_RUN_SPLIT = re.compile(r"\s(?:on|with)\b\s*:?\s*", re.I)


def parse_run_request(text: str) -> tuple[str, str | None]:
    """(flow, input) of "run my summariser on this text: ...", read without a model.

    The flow is what comes between the verb and the first " on " / " with "; the input is
    the rest, unquoted (one pass each: linear in the text).
    """
    head = _RUN_HEAD.match(text or "")
    rest = text[head.end() :] if head else (text or "")
    split = _RUN_SPLIT.search(rest)
    if split is None:
        return _flow_name(rest), None
    value = rest[split.end() :].strip()
    value = re.sub(r"^(?:(?:this|the following|the)\s+)?(?:text|input|message)\s*:\s*", "", value, flags=re.I)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return _flow_name(rest[: split.start()]), value or None


def _flow_name(name: str) -> str:
    name = re.sub(r"\s+flow$", "", name.strip(), flags=re.I)
    return "" if name.lower() in ("", "it", "flow", "this", "that") else name


LENIENT_CHARS = 8_000
"""Nearly-JSON is repaired only up to this size, with at most ``LENIENT_BRACKETS`` brackets: the
repair (``json_repair``, pure Python) takes about a millisecond per unclosed brace on a loaded
machine, so a reply of 30,000 ``{`` held a kernel thread for half a minute (a megabyte: a quarter
of an hour).  An intent or a plan is a few hundred characters and a few dozen brackets; past
the bounds only strict JSON is read (linear, in C)."""
LENIENT_BRACKETS = 400


def loads_lenient(text: str) -> Any:
    """JSON, or nearly-JSON (a trailing comma, single quotes, an unclosed brace): a model's
    reply is still an answer when it is almost valid; None when nothing can be read (or the
    nearly-JSON is past ``LENIENT_CHARS``/``LENIENT_BRACKETS``)."""
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):  # RecursionError: JSON nested past the interpreter's limit
        pass
    if not isinstance(text, str) or len(text) > LENIENT_CHARS:
        return None
    if text.count("{") + text.count("[") > LENIENT_BRACKETS:
        return None
    try:
        from json_repair import repair_json

        return repair_json(text, return_objects=True)
    except Exception:
        return None


def json_object_in(reply: str) -> Any:
    """The outermost ``{...}`` of a reply (inside a fence or prose), read leniently; None
    when there is none. The plan replies of the flow pipeline and of reuse are read so."""
    start, end = (reply or "").find("{"), (reply or "").rfind("}")
    return loads_lenient(reply[start : end + 1]) if start != -1 and end > start else None


def parse_intent(reply: str, original: str) -> IntentResult:
    """Parse a classifier reply; ``original`` is used when no translation comes back."""
    text = (reply or "").strip()
    try:
        direct = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        direct = None
    if (result := _from_obj(direct, original, "json")) is not None:
        return result
    for match in _FENCE_JSON.finditer(text):
        if (result := _from_obj(loads_lenient(match.group(1)), original, "fenced_json")) is not None:
            return result
    for match in _EMBEDDED_JSON.finditer(text):
        if (result := _from_obj(loads_lenient(match.group(0)), original, "embedded_json")) is not None:
            return result
    if strict := _STRICT_INTENT.search(text):
        translation = original
        if tmatch := _STRICT_TRANSLATION.search(text):
            try:
                translation = json.loads(f'"{tmatch.group(1)}"') or original
            except ValueError:
                translation = tmatch.group(1) or original
        return IntentResult(intent=strict.group(1).lower(), translation=translation, parsed_by="pattern")
    return IntentResult(intent=QUESTION, translation=original, parsed_by="default")


OFF_TOPIC_REFUSAL = (
    "I can only help with Langflow: writing custom components, building flows that answer with your "
    "own model and running them, and answering questions about Langflow and lfx. Try something like "
    "'a component that splits text into sentences' or 'a flow that answers in one sentence with a "
    "language model'."
)
