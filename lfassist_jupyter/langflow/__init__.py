"""The connection to a running Langflow server (httpx), and the server as a validator."""

from lfassist_jupyter.errors import (
    LangflowAuthError,
    LangflowBuildError,
    LangflowConnectionError,
    LangflowDisabledError,
    LangflowError,
    LangflowNotReadyError,
)
from lfassist_jupyter.langflow.client import TAG, LangflowClient, RegisteredComponent
from lfassist_jupyter.langflow.validator import ChainValidator, LangflowValidator

__all__ = [
    "TAG",
    "ChainValidator",
    "LangflowAuthError",
    "LangflowBuildError",
    "LangflowClient",
    "LangflowConnectionError",
    "LangflowDisabledError",
    "LangflowError",
    "LangflowNotReadyError",
    "LangflowValidator",
    "RegisteredComponent",
]
