"""Exceptions raised by lfassist-jupyter.

The tree, so a caller can catch exactly what it can handle::

    LfAssistError
    ├── ConfigError (also ValueError)      a usage mistake: fix the call or the environment
    │   └── NoProviderError                no model provider is configured at all
    ├── ProviderError                      the model provider failed at run time
    │   ├── ProviderAuthError              401/403: bad or missing key
    │   ├── ProviderRateLimitError         429 after our bounded retries (also quota)
    │   ├── ProviderTimeoutError           the request timed out
    │   ├── ProviderConnectionError        the server could not be reached
    │   ├── ProviderModelNotFoundError     404: the model name is unknown to the server
    │   ├── ProviderContentPolicyError     the provider refused the content
    │   └── ProviderHTTPError              any other status (5xx, malformed stream, ...)
    ├── ExtractionError                    no component code found in a model reply
    ├── ValidationFailedError              carries the ValidationReport
    │   └── SandboxTimeoutError            the validation worker ran out of time
    └── LangflowError                      talking to a Langflow server failed

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


class ProviderError(LfAssistError):
    """The model provider failed.  ``friendly`` is what we show a user."""

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code

    @property
    def friendly(self) -> str:
        return str(self)


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


class ExtractionError(LfAssistError):
    """The model reply held no Python code that defines a component."""


class ValidationFailedError(LfAssistError):
    """Validation rejected a component; ``report`` says where and why."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class SandboxTimeoutError(ValidationFailedError):
    """The validation worker did not answer in time and was restarted."""


class LangflowError(LfAssistError):
    """Talking to a Langflow server failed; the component code is never lost by it."""
