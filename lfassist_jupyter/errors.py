"""Exceptions raised by lfassist-jupyter.

The tree, so a caller can catch exactly what it can handle::

    LfAssistError
    ├── ConfigError (also ValueError)      a usage mistake: fix the call or the environment
    │   ├── NoProviderError                no model provider is configured at all
    │   └── FlowFileError                  a flow file or flow JSON that is not a Langflow flow
    ├── ProviderError                      the model provider failed at run time
    │   ├── ProviderAuthError              401/403: bad or missing key
    │   ├── ProviderRateLimitError         429 after our bounded retries (also quota)
    │   ├── ProviderTimeoutError           the request timed out
    │   ├── ProviderConnectionError        the server could not be reached
    │   ├── ProviderModelNotFoundError     404: the model name is unknown to the server
    │   ├── ProviderContentPolicyError     the provider refused the content
    │   └── ProviderHTTPError              any other status (5xx, malformed stream, ...)
    └── LangflowError                      talking to a Langflow server failed (code is never lost)
        ├── LangflowConnectionError        the server could not be reached (wrong URL, down, timed out)
        │   └── LangflowNotReadyError      503: it is still starting
        ├── LangflowAuthError              the server refused our credentials
        ├── LangflowDisabledError          the server does not allow custom components
        └── LangflowBuildError             the server could not build the component

A component that fails validation is not an exception: it is a ``ValidationReport`` (and,
from the assistant, a ``complete`` event with ``validated: false``).

Every message says what to do next.  Messages never contain secrets: provider errors
are built from the status and the server's message, never from request headers.
"""

from __future__ import annotations

from typing import Any


class LfAssistError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(LfAssistError, ValueError):
    """A usage mistake by the caller: a bad argument, an unknown provider, a bad option."""


class NoProviderError(ConfigError):
    """No model provider is configured; the message names the variables to set."""


class FlowFileError(ConfigError):
    """A flow file (or flow JSON handed to a public function) that cannot be read as a Langflow
    flow: missing, unreadable, too large, not JSON, or of the wrong shape.  The one line names
    the file and the field (``data.nodes[2].data.node.template is a list, expected an object``)."""


class ProviderError(LfAssistError):
    """The model provider failed; the message is what we show a user (it says what to do)."""

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ProviderAuthError(ProviderError):
    pass


class ProviderRateLimitError(ProviderError):
    pass


class ProviderTimeoutError(ProviderError):
    pass


class ProviderConnectionError(ProviderError):
    pass


class ProviderModelNotFoundError(ProviderError):
    pass


class ProviderContentPolicyError(ProviderError):
    pass


class ProviderHTTPError(ProviderError):
    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None, body: Any = None):
        super().__init__(message, provider=provider, status_code=status_code)
        self.body = body


class LangflowError(LfAssistError):
    """Talking to a Langflow server failed; the component code is never lost by it."""


class LangflowConnectionError(LangflowError):
    """The server could not be reached (wrong URL, down, timed out)."""


class LangflowNotReadyError(LangflowConnectionError):
    """The server answered 503: it is still starting."""


class LangflowAuthError(LangflowError):
    """The server refused our credentials."""


class LangflowDisabledError(LangflowError):
    """The server does not allow custom components."""


class LangflowBuildError(LangflowError):
    """The server could not build the component; ``error`` and ``traceback`` are the server's."""

    def __init__(self, message: str, *, error: str = "", traceback: str = "") -> None:
        super().__init__(message)
        self.error = error
        self.traceback = traceback
