"""Component sources used across tests -- good ones, and ones broken in one known way each --
the shapes of the model replies that carry them, the flow specs, and lfx's own runner as the
ground truth for what a flow answers."""

import asyncio
import json

SHELL_KEY = "sk-magic-test-key-0123456789"
"""The fake key the test shells are given (conftest's ``ip``): tests check it never shows up."""

GOOD = """\
from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message


class UppercaseComponent(Component):
    display_name = "Uppercase"
    description = "Uppercases a text."
    icon = "type"
    name = "Uppercase"

    inputs = [MessageTextInput(name="input_text", display_name="Text")]
    outputs = [Output(display_name="Output", name="output", method="build_output")]

    def build_output(self) -> Message:
        return Message(text=(self.input_text or "").upper())
"""

LOWER_AND_UPPER = GOOD.replace("UppercaseComponent", "CaseComponent").replace(
    """    def build_output(self) -> Message:
        return Message(text=(self.input_text or "").upper())
""",
    """    def build_output(self) -> Message:
        text = self.input_text or ""
        return Message(text=f"{text.upper()} {text.lower()}")
""",
)

# An import of a class lfx does not have (a model's invention): static analysis cannot see it, lfx
# fails at runtime, and no repair is certain (``from lfx.base import Component``, a real name from
# the wrong module, is repaired without a model call: _support/mistakes.py).
WRONG_IMPORT = GOOD.replace(
    "from lfx.custom.custom_component.component import Component", "from lfx.base import LangflowComponent"
).replace("class UppercaseComponent(Component):", "class UppercaseComponent(LangflowComponent):")

# Langflow's own Assistant let this one through: it builds, but the output crashes on first use.
DATA_LIST_BUG = """\
from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.data import Data


class SplitterComponent(Component):
    display_name = "Splitter"
    description = "Splits text into words."
    icon = "scissors"

    inputs = [MessageTextInput(name="input_text", display_name="Text")]
    outputs = [Output(display_name="Words", name="words", method="build_words")]

    def build_words(self) -> Data:
        return Data(data=(self.input_text or "").split())
"""

DANGEROUS = GOOD.replace(
    '        return Message(text=(self.input_text or "").upper())',
    '        import os\n        os.system("echo pwned")\n        return Message(text=(self.input_text or "").upper())',
)


def fenced(code: str, prose: str = "Here is your component:") -> str:
    return f"{prose}\n\n```python\n{code}```\n\nIt uppercases the text input."


def intent(kind: str, translation: str = "") -> str:
    """A classifier reply, as the intent model sends it."""
    return json.dumps({"translation": translation or "request", "intent": kind})


# -- components Langflow builds that a validator must not reject (issue 12, causes 1-8) ---------


def _swap(old: str, new: str, code: str = GOOD) -> str:
    assert old in code, old
    return code.replace(old, new)


# 1. langflow.* imports: lfx maps them to lfx.* when it builds.
LANGFLOW_IMPORTS = (
    GOOD.replace("from lfx.custom.custom_component.component import", "from langflow.custom import")
    .replace("from lfx.io import", "from langflow.io import")
    .replace("from lfx.schema.message import", "from langflow.schema.message import")
)

# 1b. A package imported inside a method only: needed to run, never to build.
METHOD_IMPORT = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    "        import totally_missing_pkg_xyz\n\n"
    '        return Message(text=totally_missing_pkg_xyz.upper(self.input_text or ""))',
)

# 2. A legacy CustomComponent with build() and no outputs.
LEGACY_CUSTOM = """\
from langflow.custom import CustomComponent
from langflow.schema import Data


class LegacyUpperComponent(CustomComponent):
    display_name = "Legacy Upper"
    description = "Uppercases a text, the pre-1.0 way."

    def build_config(self):
        return {"text": {"display_name": "Text"}}

    def build(self, text: str) -> Data:
        return Data(data={"text": text.upper()})
"""

# 3. Outputs created at run time (outputs = [] plus update_outputs), as in lfx's TextOperations.
RUNTIME_OUTPUTS = """\
from typing import Any

from lfx.custom.custom_component.component import Component
from lfx.io import DropdownInput, MessageTextInput, Output
from lfx.schema.message import Message


class ModeComponent(Component):
    display_name = "Mode"
    inputs = [
        MessageTextInput(name="input_text", display_name="Text"),
        DropdownInput(name="mode", display_name="Mode", options=["upper", "lower"], value="upper",
                      real_time_refresh=True),
    ]
    outputs = []

    def update_outputs(self, frontend_node: dict, field_name: str, field_value: Any) -> dict:
        if field_name == "mode":
            frontend_node["outputs"] = [Output(display_name="Result", name="result", method="build_result").to_dict()]
        return frontend_node

    def build_result(self) -> Message:
        text = self.input_text or ""
        return Message(text=text.upper() if self.mode == "upper" else text.lower())
"""

# 4. Output(types=[...]) and no return annotation: Langflow types the output from `types`.
TYPES_NO_ANNOTATION = _swap(
    'outputs = [Output(display_name="Output", name="output", method="build_output")]',
    'outputs = [Output(display_name="Output", name="output", method="build_output", types=["Message"])]',
    _swap("def build_output(self) -> Message:", "def build_output(self):"),
)

# 5. A retired component whose output always raises.
ALWAYS_RAISES = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    '        msg = "Uppercase was retired: use the Text Operations component."\n        raise NotImplementedError(msg)',
)

# 6. A class that reaches Component through an intermediate base.
INTERMEDIATE_BASE = _swap(
    "from lfx.custom.custom_component.component import Component",
    "from lfx.custom.custom_component.component_with_cache import ComponentWithCache",
    GOOD.replace("class UppercaseComponent(Component):", "class UppercaseComponent(ComponentWithCache):"),
)

# 7. Input names: read through self.<name> although a class attribute of that name wins.
INPUT_SHADOWED_AND_READ = _swap(
    'MessageTextInput(name="input_text", display_name="Text")',
    'MessageTextInput(name="description", display_name="Text")',
    GOOD.replace("self.input_text", "self.description"),
)
INPUT_SHADOWED_NOT_READ = _swap(
    'MessageTextInput(name="input_text", display_name="Text")',
    'MessageTextInput(name="input_text", display_name="Text"), MessageTextInput(name="display_name", display_name="N")',
)

# 8. Works in Langflow, but runs a shell command: a policy finding for a user, refused for generated code.
USES_SUBPROCESS = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    "        import subprocess\n\n"
    '        out = subprocess.run(["tr", "a-z", "A-Z"], input=self.input_text or "", capture_output=True, text=True)\n'
    "        return Message(text=out.stdout)",
)

# -- smoke rules: each bug next to its fixed twin ------------------------------------------------

COROUTINE_BUG = _swap(
    """    def build_output(self) -> Message:
        return Message(text=(self.input_text or "").upper())
""",
    """    async def _upper(self) -> Message:
        return Message(text=(self.input_text or "").upper())

    def build_output(self) -> Message:
        return self._upper()
""",
)
COROUTINE_OK = COROUTINE_BUG.replace(
    "    def build_output(self) -> Message:\n        return self._upper()",
    "    async def build_output(self) -> Message:\n        return await self._upper()",
)

TEXT_ATTRIBUTE_BUG = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    "        return Message(text=self.input_text.text.upper())",
)
TEXT_ATTRIBUTE_OK = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    "        return Message(text=self.input_text.upper())",
)

NETWORK_RETRIES = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    """        import time
        import urllib.request

        while True:  # retries until the service answers
            try:
                return Message(text=urllib.request.urlopen("http://127.0.0.1:9/").read().decode())
            except Exception:
                time.sleep(0.05)""",
)
BUSY_LOOP = _swap(
    '        return Message(text=(self.input_text or "").upper())',
    """        while True:  # waits forever, no network involved
            pass
        return Message(text="never")""",
)


# -- flows: specs in lfx's compact syntax, and the replies that carry them ----------------------

QA_SPEC = """\
nodes:
  A: ChatInput
  B: Prompt Template
  C: ChatOutput
edges:
  A.message -> B.question
  B.prompt -> C.input_value
config:
  B.template: Answer this: {question}
"""
"""ChatInput -> Prompt Template -> ChatOutput: runs with no model, "Answer this: <input>"."""

UPPER_SPEC = """\
nodes:
  A: ChatInput
  X: TextOperations
  C: ChatOutput
edges:
  A.message -> X.text_input
  X.message -> C.input_value
config:
  X.operation: Case Conversion
  X.case_type: uppercase
"""
"""ChatInput -> Text Operations (uppercase) -> ChatOutput: a built-in that transforms the text."""


COMBINE_SPEC = """\
nodes:
  A: ChatInput
  B: Prompt Template
  C: ChatOutput
  D: CombineText
edges:
  A.message -> B.question
  B.prompt -> D.text1
  A.message -> D.text2
  D.combined_text -> C.input_value
config:
  B.template: Answer this: {question}
  D.delimiter: " -- "
"""
"""QA_SPEC with the question joined after the prompt by Combine Text: "Answer this: <input> -- <input>".
The quoted delimiter is one of lfx's builder gaps (its quotes would be kept)."""

LLM_SPEC = """\
nodes:
  A: ChatInput
  B: Prompt Template
  M: LanguageModelComponent
  C: ChatOutput
edges:
  A.message -> B.question
  B.prompt -> M.input_value
  M.text_output -> C.input_value
config:
  B.template: Be brief. {question}
"""
"""A flow with a language model: valid, but it needs a model and a key before it can run."""

ONE_SENTENCE_ANSWER = "Langflow is a visual builder for AI flows."
"""What the fake model answers a real run of that flow."""


def named(spec: str, name: str) -> str:
    """``spec`` with a flow name (the name Langflow shows)."""
    return f"name: {name}\n{spec}"


ONE_SENTENCE_SPEC = named(
    LLM_SPEC.replace("Be brief. {question}", "Answer in one sentence: {question}"), "One Sentence"
)
"""What a model writes for "a flow that answers in one sentence with a language model": the model
node left open, as the write prompt asks (the assistant configures it for the user's model)."""


def plan(*names: str, new: list | None = None) -> str:
    """The flow planner's reply: the catalogue components it chose, and new ones to generate."""
    return json.dumps({"components": list(names), "new": new or []})


def spec_reply(spec: str, lang: str = "") -> str:
    """A model reply carrying a spec in a fenced block (with or without a language tag)."""
    return f"Here is the flow:\n\n```{lang}\n{spec}```\n"


def lfx_run(flow: dict, text: str) -> str:
    """Run a flow with lfx's own headless runner (in this test process) and return its chat output.

    On a thread of its own, so async tests (whose loop is running) can call it too."""
    from concurrent.futures import ThreadPoolExecutor

    from lfx.run.base import run_flow

    def go() -> dict:
        return asyncio.run(
            run_flow(flow_json=json.dumps(flow), input_value=text, check_variables=False, check_dependencies=False)
        )

    with ThreadPoolExecutor(1) as pool:
        out = pool.submit(go).result()
    assert out.get("success"), out
    return out["result"]


# A model node that asks an OpenAI-compatible server with the real openai SDK: the real local run's
# tests and its benchmark point it at the fake provider through the network fence.
OPENAI_CHAT_MODEL = """
from openai import OpenAI

from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output, SecretStrInput
from lfx.schema.message import Message


class ChatModel(Component):
    display_name = "Chat Model"
    description = "Asks an OpenAI-compatible model, with the real openai SDK."
    name = "ChatModel"

    inputs = [
        MessageTextInput(name="prompt", display_name="Prompt"),
        SecretStrInput(name="api_key", display_name="API Key"),
        MessageTextInput(name="base_url", display_name="Base URL"),
    ]
    outputs = [Output(display_name="Text", name="text", method="answer")]

    def answer(self) -> Message:
        client = OpenAI(api_key=self.api_key, base_url=self.base_url or None, max_retries=0, timeout=20)
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": self.prompt}], stream=True
        )
        return Message(text="".join(c.choices[0].delta.content or "" for c in stream if c.choices))
"""


# A probe component for sandbox tests: one output running ``body``.
PROBE_HEAD = """\
from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, Output
from lfx.schema.message import Message
"""


def component(body: str, *, module: str = "", out: str = "Message", inputs: str = "", load: str = "") -> str:
    """A component whose only output runs ``body``; ``load`` runs in the class body, i.e. while
    Langflow builds the component (lfx executes class bodies, imports and module-level
    assignments -- not other module-level statements)."""
    method = "\n".join("        " + line for line in body.strip().splitlines())
    at_load = "".join("    " + line + "\n" for line in load.strip().splitlines())
    inputs = inputs or 'MessageTextInput(name="input_text", display_name="Text")'
    return (
        f"{PROBE_HEAD}{module}\n\nclass ProbeComponent(Component):\n    display_name = 'Probe'\n{at_load}"
        f"    inputs = [{inputs}]\n"
        f"    outputs = [Output(display_name='Out', name='out', method='build_out')]\n\n"
        f"    def build_out(self) -> {out}:\n{method}\n"
    )
