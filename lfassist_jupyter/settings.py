"""The assistant's settings, declared once: name, type, default, bounds, help text and environment variable.

Every surface reads this one declaration, so they cannot drift:

- ``%config AssistMagics.<name>`` (and ``ipython_config.py``): the magics' traitlets are made
  from these fields (default, help, bounds), and the magics mirror them into the workspace;
- the ``Workspace`` (shared by the magics and the chat panel) holds a ``Settings``;
- ``python -m lfassist_jupyter.eval`` and ``%assist eval`` take their defaults and help from it;
- the environment: ``LFASSIST_<NAME>`` (e.g. ``LFASSIST_MAX_RETRIES=5``) sets a default,
  below ``%config``, ``ipython_config.py`` and command-line flags.  ``LFASSIST_PROVIDER``,
  ``LFASSIST_MODEL`` and ``LFASSIST_INTENT_MODEL`` are preferences the provider registry applies
  when nothing names a provider or model (see ``_setting``).

``Settings`` is a plain dataclass, and pydantic (which parses and bounds-checks the values that
arrive as text: environment variables) is imported only when such a value is read: ``%load_ext``
builds the magics' traitlets from this module and must stay fast (pydantic costs it ~150 ms).

This module deliberately has no ``from __future__ import annotations``: ``dataclasses.fields``
then carries real types, which the traitlets and the parser read.
"""

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENV_PREFIX = "LFASSIST_"


def _setting(
    default: Any,
    text: str,
    *,
    ge: float | None = None,
    le: float | None = None,
    gt: float | None = None,
    preference: bool = False,
) -> Any:
    """A field of ``Settings`` with its help text and bounds (read by every surface).

    ``preference``: the environment variable is a preference the provider registry applies when
    a request names nothing (``providers.available_providers``: a preferred provider that is
    not configured falls back to one that is), so ``env_values`` leaves it there rather than
    turning it into a demand here."""
    meta = {"help": text, "ge": ge, "le": le, "gt": gt, "preference": preference}
    return dataclasses.field(default=default, metadata=meta)


@dataclass
class Settings:
    """What the magics and the chat panel use unless a request says otherwise."""

    provider: str | None = _setting(
        None, "Provider name: openai | anthropic | ollama | scripted; default: the first configured.", preference=True
    )
    model: str | None = _setting(None, "Generation model; default: the provider's.", preference=True)
    intent_model: str | None = _setting(
        None, "Intent classification model; default: the provider's fast model.", preference=True
    )
    flow_model: str | None = _setting(
        None,
        "Model of the language-model nodes in the flows it writes: provider:model "
        "(anthropic:claude-haiku-4-5) or a model of the assistant's provider; default: the assistant's own.",
    )
    max_retries: int = _setting(3, "Total validation attempts (0..10); 0 skips validation.", ge=0, le=10)
    insert: bool = _setting(True, "Insert validated code as a new cell below.")
    server_validation: bool = _setting(
        True, "When connected to Langflow, also build each component on the server (catches lfx version skew)."
    )
    validator_timeout: float = _setting(10.0, "Seconds one validation may take in the sandbox.", gt=0)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **given: Any) -> "Settings":
        """The defaults, overridden by ``LFASSIST_<NAME>`` variables, overridden by ``given`` (those
        that are not None).  A bad variable raises ``ConfigError`` naming it."""
        values = env_values(env)
        values.update({k: v for k, v in given.items() if v is not None})
        return cls(**values)


FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(Settings)}
"""Each setting's field: ``.type``, ``.default``, ``.metadata['help']`` and its bounds."""


def env_name(name: str) -> str:
    """The environment variable of a setting: ``max_retries`` -> ``LFASSIST_MAX_RETRIES``."""
    return ENV_PREFIX + name.upper()


def help_text(name: str) -> str:
    """A setting's help, with the environment variable that sets its default."""
    return f"{FIELDS[name].metadata['help']} Environment: {env_name(name)}."


def bounds(name: str) -> tuple[float | None, float | None]:
    """The inclusive (low, high) bounds of a numeric setting (None: unbounded)."""
    meta = FIELDS[name].metadata
    return meta["ge"], meta["le"]


@functools.cache
def _adapter(name: str) -> Any:
    from typing import Annotated

    from pydantic import Field, TypeAdapter

    meta = FIELDS[name].metadata
    return TypeAdapter(Annotated[FIELDS[name].type, Field(ge=meta["ge"], le=meta["le"], gt=meta["gt"])])


def parse(name: str, value: Any, *, source: str | None = None) -> Any:
    """A setting's value, from text ("5", "false", "gpt-4.1") or a Python value, checked against its
    type and bounds; a bad value is one ``ConfigError`` line naming ``source`` (default: the
    environment variable)."""
    from pydantic import ValidationError

    from lfassist_jupyter.errors import ConfigError

    try:
        return _adapter(name).validate_python(value)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise ConfigError(f"{source or env_name(name)}={value!r}: {problem[:1].lower()}{problem[1:]}.") from None


_BOUNDS = (
    ("ge", "greater than or equal to", lambda value, bound: value >= bound),
    ("le", "less than or equal to", lambda value, bound: value <= bound),
    ("gt", "greater than", lambda value, bound: value > bound),
)


def check(name: str, value: Any, *, source: str) -> Any:
    """``value`` (already of the setting's type: a traitlet checked it) within the setting's bounds,
    or one ``ConfigError`` line naming ``source``.  No pydantic: ``ipython_config.py`` values are
    checked at ``%load_ext``, which must stay fast."""
    from lfassist_jupyter.errors import ConfigError

    meta = FIELDS[name].metadata
    for key, words, within in _BOUNDS:
        if value is not None and meta[key] is not None and not within(value, meta[key]):
            raise ConfigError(f"{source}={value!r}: input should be {words} {meta[key]}.")
    return value


def env_values(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings the environment sets: those whose variable is set and not empty, except the
    preferences (provider and models), which the provider registry reads where it chooses."""
    env = os.environ if env is None else env
    return {
        name: parse(name, env[env_name(name)].strip())
        for name, field in FIELDS.items()
        if not field.metadata["preference"] and env.get(env_name(name), "").strip()
    }
