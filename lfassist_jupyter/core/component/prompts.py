"""Prompts for component generation and repair, grounded in the lfx actually installed.

The list of input classes and their parameters is not written by hand: the validation
worker introspects ``lfx.io`` in the interpreter that will validate the code and hands
us a *reference* (see ``sandbox/worker/_reference.py``), so the prompt never drifts from the
library.  ``FALLBACK_REFERENCE`` is used only when no worker can describe lfx (a custom
validator, or lfx missing), and says so in the prompt.
"""

from __future__ import annotations

from typing import Any

from lfassist_jupyter.sandbox.answers import Reference

IMPORT_STYLE = """\
from lfx.custom.custom_component.component import Component
from lfx.io import MessageTextInput, IntInput, DropdownInput, Output   # every input class comes from lfx.io
from lfx.schema.data import Data
from lfx.schema.dataframe import DataFrame
from lfx.schema.message import Message"""

WORKED_EXAMPLE = """\
from lfx.custom.custom_component.component import Component
from lfx.io import BoolInput, MessageTextInput, Output
from lfx.schema.data import Data
from lfx.schema.message import Message


class WordCounterComponent(Component):
    display_name = "Word Counter"
    description = "Counts the words in a text."
    icon = "hash"
    name = "WordCounter"

    inputs = [
        MessageTextInput(name="input_text", display_name="Text", info="The text to count."),
        BoolInput(name="ignore_numbers", display_name="Ignore numbers", value=False, advanced=True),
    ]
    outputs = [
        Output(display_name="Count", name="count", method="build_count"),
        Output(display_name="Summary", name="summary", method="build_summary"),
    ]

    def _words(self) -> list[str]:
        words = (self.input_text or "").split()
        if self.ignore_numbers:
            words = [w for w in words if not w.isdigit()]
        return words

    def build_count(self) -> Data:
        words = self._words()
        self.status = f"{len(words)} words"
        return Data(data={"count": len(words), "words": words})

    def build_summary(self) -> Message:
        return Message(text=f"The text has {len(self._words())} words.")
"""

RULES = """\
Rules:
1. Exactly one class that inherits from Component; set display_name, description, icon and name.
2. Input and output names are unique, snake_case, and never overlap each other or Component attributes \
(do not use: status, code, inputs, outputs, display_name, icon, build, run, log, set, cache, graph).
3. Each Output has its own method, named after the output (build_<name>) and never after a Component method \
(to_toolkit, run, set, log...: Langflow calls those itself); each method has a return annotation \
(Message, Data, DataFrame) and returns \
an instance of exactly that type.
4. Data wraps a dict: Data(data={"key": value}) -- never Data(data=[...]). For many rows return a DataFrame \
(DataFrame(list_of_dicts)) or a list of Data with the annotation list[Data].
5. Read inputs as attributes (self.input_text). Handle empty or missing values gracefully.
6. Use only the standard library, lfx and packages the user names. Never use exec, eval, compile, \
__import__, os.system, os.remove, os.putenv, subprocess, ctypes, pickle, importlib, shutil.rmtree, \
sys.exit or os._exit -- nor reach them indirectly (an alias, getattr, sys.modules, vars(), globals(), a helper): \
validation follows references, and the sandbox refuses such calls when the code runs.
7. Reply with the complete code in ONE ```python block, followed by at most three sentences of explanation."""

FALLBACK_REFERENCE: dict[str, Any] = {
    "lfx_version": None,
    "common_params": ["name", "display_name", "info", "value", "required", "advanced", "show", "placeholder"],
    "inputs": [
        {
            "name": "MessageTextInput",
            "params": ["input_types", "tool_mode"],
            "doc": "a text field that also accepts a Message",
        },
        {"name": "MultilineInput", "params": ["input_types"], "doc": "a multi-line text field"},
        {"name": "IntInput", "params": ["range_spec"], "doc": "an integer"},
        {"name": "FloatInput", "params": ["range_spec"], "doc": "a float"},
        {"name": "BoolInput", "params": [], "doc": "a checkbox"},
        {"name": "DropdownInput", "params": ["options", "combobox"], "doc": "one value from options"},
        {"name": "DataInput", "params": ["input_types", "is_list"], "doc": "a Data object"},
        {"name": "DataFrameInput", "params": ["input_types"], "doc": "a DataFrame"},
        {"name": "MessageInput", "params": ["input_types"], "doc": "a Message"},
        {"name": "SecretStrInput", "params": ["load_from_db"], "doc": "an API key or password"},
        {"name": "HandleInput", "params": ["input_types", "is_list"], "doc": "a connection of the given types"},
    ],
}


def render_reference(reference: Reference | None) -> str:
    """The input classes, one line each, with their own parameters."""
    ref = reference or Reference.model_validate(FALLBACK_REFERENCE)
    version = ref.lfx_version
    head = (
        f"Input classes available in lfx {version} (all importable from lfx.io):"
        if version
        else ("Input classes (lfx could not be inspected; this is a minimal list):")
    )
    lines = [head, f"Every input accepts: {', '.join(ref.common_params)}."]
    for item in ref.inputs:
        doc = f" -- {item.doc}" if item.doc else ""
        lines.append(f"- {item.name}({', '.join(item.params)}){doc}")
    return "\n".join(lines)


def generation_system_prompt(reference: Reference | None) -> str:
    return (
        "You are the Langflow Assistant. You write Langflow custom components: Python classes built on lfx "
        "that appear as nodes on the Langflow canvas.\n\n"
        f"Imports (use exactly these paths):\n{IMPORT_STYLE}\n\n"
        f"{render_reference(reference)}\n\n"
        "Output(display_name, name, method) declares an output; the method's return annotation sets its type.\n\n"
        f"{RULES}\n\nA complete, correct example:\n```python\n{WORKED_EXAMPLE}```\n"
        "When the user asks to change a component from earlier in the conversation, return the whole updated "
        "component, keeping what they did not ask to change."
    )


RETRY_TEMPLATE = """\
The component you wrote failed validation (attempt {attempt} of {max_attempts}).

Error:
{error}

The code that failed:
```python
{code}
```

Fix the error and reply with the complete corrected component in one ```python block. When the error names a \
refused call, remove what it does; do not reach it another way (that is refused too)."""


def retry_message(*, error: str, code: str, attempt: int, max_attempts: int) -> str:
    return RETRY_TEMPLATE.format(error=error.strip(), code=code.rstrip(), attempt=attempt, max_attempts=max_attempts)
