# Source: https://github.com/Empreiteiro/langflow-factory/blob/3cf9b6388d66d3f21b9e728a3342e1aedaa9c0d0/components/environment_manegement/secret_input.py
from langflow.base.io.text import TextComponent
from langflow.io import MultilineInput, Output, SecretStrInput
from langflow.schema.message import Message


class SecretInputComponent(TextComponent):
    display_name = "Secret Input"
    description = "Allows the selection of a secret to be generated as output.."
    documentation: str = "https://docs.langflow.org/components-io#text-input"
    icon = "type"
    name = "SecretInput"

    inputs = [
        SecretStrInput(
            name="input_value",
            display_name="Secret",
            info="Text to be passed as input.",
        ),
    ]
    outputs = [
        Output(display_name="Output Text", name="text", method="text_response"),
    ]

    def text_response(self) -> Message:
        return Message(
            text=self.input_value,
        )
