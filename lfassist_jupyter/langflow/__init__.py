"""The connection to a running Langflow server (httpx)."""

from lfassist_jupyter.langflow.client import (
    TAG,
    LangflowAuthError,
    LangflowBuildError,
    LangflowClient,
    LangflowConnectionError,
    LangflowDisabledError,
    LangflowNotReadyError,
    LangflowValidator,
    RegisteredComponent,
)

__all__ = [
    "TAG",
    "LangflowAuthError",
    "LangflowBuildError",
    "LangflowClient",
    "LangflowConnectionError",
    "LangflowDisabledError",
    "LangflowNotReadyError",
    "LangflowValidator",
    "RegisteredComponent",
]
