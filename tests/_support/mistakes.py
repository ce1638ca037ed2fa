"""Model replies with a mechanical mistake, each next to what the repair pass must do with it.

``REPAIRABLE``: one certain fix (the pass repairs it, no model call), with words the change
line must contain.  ``TO_MODEL``: no certain fix (two candidates, a bound that would be a
guess, a name used as a string elsewhere), so the model gets the original error.  The
benchmark (``benchmarks/run.py``) replays both sets, and the tests' own broken components.
"""

from __future__ import annotations

from _support.components import DATA_LIST_BUG, GOOD, _swap

_IO = "from lfx.io import MessageTextInput, Output"
_RETURN = '    def build_output(self) -> Message:\n        return Message(text=(self.input_text or "").upper())'


def _with_input(declaration: str, cls: str, code: str = GOOD) -> str:
    """GOOD with a second input (and its class imported), laid out as models write it."""
    code = _swap(
        'inputs = [MessageTextInput(name="input_text", display_name="Text")]',
        "inputs = [\n"
        '        MessageTextInput(name="input_text", display_name="Text"),  # the text to transform\n'
        f"        {declaration},\n"
        "    ]",
        code,
    )
    return code.replace(_IO, f"from lfx.io import {cls}, MessageTextInput, Output")


REPAIRABLE: dict[str, tuple[str, list[str]]] = {
    "dropdown_choices": (
        _with_input('DropdownInput(name="mode", display_name="Mode", choices=["upper", "lower"], value="upper")',
                    "DropdownInput"),
        ["`choices=`", "`options=`"],
    ),
    "slider_min_max": (
        _with_input('SliderInput(name="ratio", display_name="Ratio", value=0.5, min_value=0, max_value=1)',
                    "SliderInput"),
        ["range_spec=RangeSpec(min=0, max=1)", "imported `RangeSpec`"],
    ),
    "int_minimum_maximum": (
        _with_input('IntInput(name="times", display_name="Times", value=1, minimum=1, maximum=10)', "IntInput"),
        ["`minimum=`", "range_spec=RangeSpec(min=1, max=10"],
    ),
    "input_default": (
        _swap('display_name="Text")', 'display_name="Text", default="hello")'),
        ["`default=`", "`value=`"],
    ),
    "message_not_imported": (
        _swap("from lfx.schema.message import Message\n", ""),
        ["imported `Message`", "lfx.schema.message"],
    ),
    "wrong_module_path": (
        _swap("from lfx.schema.message import Message", "from lfx.schema.messages import Message"),
        ["lfx.schema.messages", "from lfx.schema.message import Message"],
    ),
    "output_method_typo": (
        _swap('method="build_output"', 'method="build_outputs"'),
        ["`build_outputs`", "`build_output`"],
    ),
    "no_return_annotation": (
        _swap("def build_output(self) -> Message:", "def build_output(self):"),
        ["-> Message"],
    ),
    "str_for_message": (
        _swap(
            '        return Message(text=(self.input_text or "").upper())',
            '        text = self.input_text or ""\n        # Uppercase it.\n        return text.upper()',
        ),
        ["Message(text=...)"],
    ),
    "input_named_status": (
        GOOD.replace('name="input_text"', 'name="status"').replace("self.input_text", "self.status"),
        ["`status`", "`status_value`"],
    ),
    "input_named_description": (
        GOOD.replace('name="input_text"', 'name="description"').replace("self.input_text", "self.description"),
        ["`description_value`"],
    ),
    # -- issue 34: one rule per kind of mistake, over lfx's facts --------------------------------
    "stdlib_module_not_imported": (
        _swap('        return Message(text=(self.input_text or "").upper())',
              '        return Message(text=json.dumps((self.input_text or "").upper()))'),
        ["imported `json`", "standard-library module"],
    ),
    "lfx_name_from_a_module_without_it": (  # the module exists, the name lives elsewhere
        _swap("from lfx.custom.custom_component.component import Component", "from lfx.base import Component"),
        ["`lfx.base` has no `Component`", "from lfx.custom.custom_component.component import Component"],
    ),
    "lfx_name_from_a_sibling_module": (
        _swap("from lfx.schema.message import Message", "from lfx.schema.data import Message"),
        ["`lfx.schema.data` has no `Message`", "from lfx.schema.message import Message"],
    ),
    "self_attribute_one_edit_off": (
        _swap('(self.input_text or "")', '(self.input_txt or "")'),
        ["`self.input_txt`", "`self.input_text`"],
    ),
    "keyword_one_edit_off": (
        _swap('MessageTextInput(name="input_text", display_name="Text")',
              'MessageTextInput(name="input_text", display_nam="Text")'),
        ["`display_nam=`", "`display_name=`"],
    ),
    "keyword_of_a_sibling_class": (
        _swap('MessageTextInput(name="input_text", display_name="Text")',
              'MessageTextInput(name="input_text", display_name="Text", multiline=True)'),
        ["`multiline=`", "MultilineInput", "imported `MultilineInput`"],
    ),
    "dict_for_data": (
        _swap(_RETURN, '    def build_output(self) -> Data:\n        return {"text": (self.input_text or "").upper()}',
              _swap("from lfx.schema.message import Message", "from lfx.schema.data import Data")),
        ["`Data(data=...)`"],
    ),
    "rows_for_dataframe": (
        _swap(_RETURN,
              "    def build_output(self) -> DataFrame:\n"
              "        rows = []\n"
              '        for word in (self.input_text or "").split():\n'
              '            rows.append({"word": word.upper()})\n'
              "        return rows",
              _swap("from lfx.schema.message import Message", "from lfx.schema.dataframe import DataFrame")),
        ["`DataFrame(...)`"],
    ),
    "rows_in_data": (  # Data holds a dict: a list of rows is a DataFrame, and the output is re-declared
        _swap(_RETURN,
              "    def build_output(self) -> Data:\n"
              '        return Data(data=[{"word": w} for w in (self.input_text or "").split()])',
              _swap("from lfx.schema.message import Message", "from lfx.schema.data import Data")),
        ["re-declared `-> DataFrame`", "imported `DataFrame`"],
    ),
    "output_named_like_an_input": (
        _swap('name="output", method="build_output"', 'name="input_text", method="build_output"'),
        ["output `input_text` renamed `input_text_output`"],
    ),
    "two_mistakes": (  # the build fails first; the untyped output shows only once it builds
        _with_input(
            'DropdownInput(name="mode", display_name="Mode", choices=["a", "b"], value="a")',
            "DropdownInput",
            _swap("def build_output(self) -> Message:", "def build_output(self):"),
        ),
        ["`options=`", "-> Message"],
    ),
}  # fmt: skip

TO_MODEL: dict[str, str] = {
    # Two methods are near misses of the name the Output gives: either could be meant.
    "method_two_near_misses": _swap(
        '    def build_output(self) -> Message:\n        return Message(text=(self.input_text or "").upper())\n',
        "    def make_texts(self) -> Message:\n"
        '        return Message(text=(self.input_text or "").upper())\n\n'
        "    def make_next(self) -> Message:\n"
        '        return Message(text=(self.input_text or "").lower())\n',
        _swap('method="build_output"', 'method="make_text"'),
    ),
    # One bound only: the other would be invented.
    "range_one_bound": _with_input('IntInput(name="times", display_name="Times", value=1, minimum=1)', "IntInput"),
    # A keyword with no known lfx spelling.
    "unknown_keyword": _with_input(
        'DropdownInput(name="mode", display_name="Mode", items=["a", "b"])', "DropdownInput"
    ),
    # Text, say the sample inputs, but not certainly text on every path (an attribute, not a str expression).
    "str_for_message_from_attribute": _swap(
        '        return Message(text=(self.input_text or "").upper())', "        return self.input_text"
    ),
    # One edit from two declared inputs: `text` could be `text1` or `text2`.
    "self_attribute_one_edit_from_two_inputs": _swap(
        'MessageTextInput(name="input_text", display_name="Text")',
        'MessageTextInput(name="text1", display_name="First"), MessageTextInput(name="text2", display_name="Second")',
        _swap('(self.input_text or "")', '(self.text or "")'),
    ),
    # Two sibling classes take `options`: a Dropdown or a Multiselect.
    "keyword_two_sibling_classes": _with_input(
        'StrInput(name="mode", display_name="Mode", options=["upper", "lower"], value="upper")', "StrInput"
    ),
    # lfx defines a `DEFAULT_TIMEOUT` in three modules (three values): which one is meant is not certain.
    "lfx_name_defined_thrice": _swap(
        '        return Message(text=(self.input_text or "").upper())',
        '        self.log(f"within {DEFAULT_TIMEOUT} s")\n        return Message(text=(self.input_text or "").upper())',
    ),
    # Words in Data: a table of what columns, or a dict under what key?  (Langflow's own Assistant's bug.)
    "words_in_data": DATA_LIST_BUG,
    # The reserved name is also a key the code looks up: renaming only some uses would be a guess.
    "reserved_name_used_as_key": GOOD.replace('name="input_text"', 'name="status"').replace(
        'return Message(text=(self.input_text or "").upper())',
        'return Message(text=str(self._attributes.get("status") or "").upper())',
    ),
}
