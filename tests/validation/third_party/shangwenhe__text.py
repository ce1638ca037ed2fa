# Source: https://github.com/shangwenhe/langflow/blob/c098292e852d8c5452a86ce472383ec8163c2caa/components/shangwenhe/text.py
from langflow.base.io.text import TextComponent
from langflow.io import MultilineInput, Output
from langflow.schema.message import Message


class TextInputComponentXX(TextComponent):
    display_name = "Text Input XX"
    description = "Get text inputs from the Playground."
    icon = "type"
    name = "TextInputComponentXX"

    inputs = [
        MultilineInput(
            name="input_value",
            display_name="Text",
            info="Text to be passed as input.",
        ),
    ]
    outputs = [
        Output(display_name="Message", name="text", method="text_response"),
    ]

    def text_response(self) -> Message:
        return Message(
            text=self.input_value,
        )
