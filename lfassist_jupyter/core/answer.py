"""The answer pipeline: a question about Langflow, answered by streaming the model's reply.

Answers are never mined for code (a snippet in an answer is an illustration, not a
component to validate).  A provider failure is raised: the assistant then forgets the
unanswered question and ends the stream with one ``error`` event.
"""

from __future__ import annotations

from lfassist_jupyter.core.events import ProgressEvent, TokenEvent
from lfassist_jupyter.core.intent import QUESTION
from lfassist_jupyter.core.outcome import AnswerOutcome
from lfassist_jupyter.core.pipeline import Request, Sink

ANSWER_SYSTEM_PROMPT = (
    "You are the Langflow Assistant: you write Langflow custom components, build flows whose model nodes "
    "call the user's own model, and run them. Answer questions about Langflow, lfx, flows and writing custom "
    "components concisely and accurately, in Markdown. Use short code snippets only when they help; components import "
    "from lfx (`from lfx.custom.custom_component.component import Component`, inputs from `lfx.io`)."
)


class AnswerPipeline:
    async def run(self, request: Request, sink: Sink) -> AnswerOutcome:
        sink(ProgressEvent(step="generating", attempt=1, max_attempts=1, message="Thinking..."))
        parts: list[str] = []
        async for chunk in request.provider.stream(request.call(ANSWER_SYSTEM_PROMPT, request.messages)):
            parts.append(chunk)
            sink(TokenEvent(chunk=chunk))
        return AnswerOutcome(result="".join(parts), intent=QUESTION)
