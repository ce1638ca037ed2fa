"""Component sources used across tests -- good ones, and ones broken in one known way each --
and the shapes of the model replies that carry them."""

import json

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

# Wrong import path: static analysis cannot see it; lfx fails at runtime.
WRONG_IMPORT = GOOD.replace(
    "from lfx.custom.custom_component.component import Component", "from lfx.base import Component"
)

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
