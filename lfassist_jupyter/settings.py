"""Every ``LFASSIST_*`` setting, declared once: name, type, default, bounds, help text and variable.

Two groups, declared alike:

- ``Settings``: what a notebook configures.  ``%config AssistMagics.<name>`` (and
  ``ipython_config.py``): the magics' traitlets are made from these fields (default, help) and
  checked by ``check``; the ``Workspace`` (shared by the magics and the chat panel) holds a
  ``Settings``; ``python -m lfassist_jupyter.eval`` and ``%assist eval`` take their defaults and
  help from it.  ``LFASSIST_<NAME>`` sets a default, below ``%config``, ``ipython_config.py`` and
  command-line flags.  ``provider``, ``model`` and ``intent_model`` are *preferences*: the
  provider registry applies them where it chooses a provider (``env_values`` leaves them there).
- ``ProcessSettings``: what the process reads from its environment where it takes effect (the
  sandbox when it starts, a provider when it is made, the session store): no ``%config``, since
  changing them in a running kernel would change nothing already started.  ``read(name)``.

One parser (``parse``: text from the environment, or a Python value), one bounds check (``check``:
the bounds, finite numbers, the allowed values, what a value names: a model name, an existing
file, an interpreter), one error type: a bad value is one ``ConfigError`` line naming its source
(``LFASSIST_VALIDATOR_TIMEOUT='ten': input should be a valid number, ...``), whichever surface
read it.  ``check_all`` checks every variable at once: each entry point (``%load_ext``, ``%assist
status``, ``%%assist``, the panel, the MCP server, the eval CLI) calls it first, so a bad value is
the same line wherever it is met, and none is met halfway through a request.  The provider names
are the provider table's (``providers/table.py``, a layer above): its callers hand them in
(``providers.check_environment``).  The standard library only: ``%load_ext`` imports this module
to build the magics, and must stay fast.

This module deliberately has no ``from __future__ import annotations``: ``dataclasses.fields``
then carries real types, which the traitlets and the parser read.
"""

import dataclasses
import math
import os
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

ENV_PREFIX = "LFASSIST_"

NO_KEY = "no-key-configured"
"""The key given where none is configured and an OpenAI-compatible server is (``OPENAI_BASE_URL``
alone): local servers (vLLM, LM Studio, Ollama) want none, but the SDK, and lfx's OpenAI nodes in a
real run, refuse to start without a string.  It is no secret and is never shown: a server that
answers 401 to it gets its own line (``providers/_errors.py``)."""


def _setting(
    default: Any,
    text: str,
    *,
    ge: float | None = None,
    le: float | None = None,
    gt: float | None = None,
    preference: bool = False,
    kind: str | None = None,
) -> Any:
    """A field of ``Settings`` or ``ProcessSettings`` with its help text and bounds (read by every
    surface).

    ``preference``: the environment variable is a preference the provider registry applies when
    a request names nothing (``providers.available_providers``: a preferred provider that is
    not configured falls back to one that is), so ``env_values`` leaves it there rather than
    turning it into a demand here.

    ``kind``: what a text value names, checked with the rest (``_KINDS``): ``provider`` (a name of
    the provider table), ``model`` (one model name), ``flow_model`` (``provider:model`` or a model),
    ``file``, ``python`` (an interpreter that exists), ``directory`` (not an existing file)."""
    meta = {"help": text, "ge": ge, "le": le, "gt": gt, "preference": preference, "kind": kind}
    return dataclasses.field(default=default, metadata=meta)


@dataclass
class Settings:
    """What the magics and the chat panel use unless a request says otherwise."""

    provider: str | None = _setting(
        None,
        "Provider name: openai | anthropic | ollama | scripted; default: the first configured.",
        preference=True,
        kind="provider",
    )
    model: str | None = _setting(
        None,
        "Generation model; default: the provider's (on a server of your own, also the model of every other task).",
        preference=True,
        kind="model",
    )
    intent_model: str | None = _setting(
        None,
        "Intent classification model; default: the provider's fast model (on a server of your own: the model).",
        preference=True,
        kind="model",
    )
    flow_model: str | None = _setting(
        None,
        "Model of the language-model nodes in the flows it writes: provider:model "
        "(anthropic:claude-haiku-4-5) or a model of the assistant's provider; default: the assistant's own.",
        kind="flow_model",
    )
    max_retries: int = _setting(3, "Total validation attempts, between 0 and 10; 0 skips validation.", ge=0, le=10)
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


@dataclass
class ProcessSettings:
    """What the process reads from ``LFASSIST_<NAME>`` where it takes effect (``read(name)``)."""

    validator_python: str | None = _setting(
        None,
        "Interpreter of the validation sandbox (e.g. your Langflow server's environment, to validate with its "
        "lfx); default: this kernel's.",
        kind="python",
    )
    validator_memory_mb: int = _setting(
        4096, "Memory limit of the validation sandbox in MB (each request's child included).", ge=256
    )
    sandbox: Literal["auto", "reduced"] = _setting(
        "auto",
        "Isolation of the sandbox: auto (full, with bubblewrap, where it works) or reduced (the in-process "
        "layers only).",
    )
    sandbox_landlock: bool = _setting(
        True, "Confine each sandboxed request's files with Landlock where the kernel has it."
    )
    timeout: float = _setting(
        45.0, "How many seconds a model server may take to start answering, or stay silent mid-reply.", gt=0
    )
    script: str | None = _setting(None, "A JSON file of scripted replies: the offline demo provider.", kind="file")
    data_dir: str | None = _setting(
        None,
        "Where conversations and panel preferences are kept; default: the per-user data directory.",
        kind="directory",
    )
    provision: Literal["ask", "yes", "no"] = _setting(
        "ask",
        "A flow that needs packages the sandbox lacks is not judged there; it can be judged in a separate "
        "environment with lfx and those packages (built with uv, cached, never the kernel's): ask (show what "
        "would be installed and its size; --provision says yes once), yes (build it without asking) or no.",
    )
    provision_dir: str | None = _setting(
        None, "Where the environments that judge flows are kept; default: the user cache (lfassist-jupyter/envs)."
    )
    provision_cache_mb: int = _setting(
        6000, "The most those environments may take on disk, in MB; the least recently used go first.", ge=100
    )


FIELDS: dict[str, dataclasses.Field] = {
    f.name: f for group in (Settings, ProcessSettings) for f in dataclasses.fields(group)
}
"""Each setting's field: ``.type``, ``.default``, ``.metadata['help']`` and its bounds."""
NOTEBOOK = tuple(f.name for f in dataclasses.fields(Settings))
"""The settings a notebook configures (``%config AssistMagics.<name>``)."""


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


# -- the one parser and the one check -------------------------------------------------------------

_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _shape(name: str) -> tuple[type, bool, tuple[str, ...]]:
    """(base type, whether None is allowed, the allowed values of a ``Literal``)."""
    kind = FIELDS[name].type
    args = typing.get_args(kind)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        (base,) = [a for a in args if a is not type(None)]
        return base, True, ()
    if typing.get_origin(kind) is Literal:
        return str, False, tuple(args)
    # A plain type: the annotations are evaluated (no ``from __future__ import annotations`` here).
    return typing.cast(type, kind), False, ()


def _convert(name: str, value: Any) -> Any:
    """``value`` as the setting's type, or a ``ValueError`` worded for the user."""
    base, optional, _ = _shape(name)
    if isinstance(value, str):
        value = value.strip()
        if optional and not value:
            return None
    if value is None:
        if optional:
            return None
        raise ValueError(f"input should be a valid {_WORDS[base]}")
    if base is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise ValueError("input should be a valid boolean, unable to interpret input")
    if base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                raise ValueError("input should be a valid integer, unable to parse string as an integer") from None
        raise ValueError("input should be a valid integer")
    if base is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise ValueError("input should be a valid number, unable to parse string as a number") from None
        raise ValueError("input should be a valid number")
    if not isinstance(value, str):
        raise ValueError("input should be a valid string")
    return value


_WORDS = {bool: "boolean", int: "integer", float: "number", str: "string"}
_BOUNDS = (
    ("ge", "greater than or equal to", lambda value, bound: value >= bound),
    ("le", "less than or equal to", lambda value, bound: value <= bound),
    ("gt", "greater than", lambda value, bound: value > bound),
)


def _model_problem(value: str) -> str | None:
    if len(value) > 200 or any(c.isspace() or not c.isprintable() for c in value):
        return "input should be one model name (no spaces), as the provider lists it"
    return None


def _provider_problem(value: str, providers: Collection[str]) -> str | None:
    if providers and value.lower() not in providers:
        return "input should be " + " or ".join(repr(p) for p in providers)
    return None


def _flow_model_problem(value: str, providers: Collection[str]) -> str | None:
    head, sep, tail = value.partition(":")
    if sep and head.strip().lower() in providers and not tail.strip():
        return "input should be provider:model, with the model named after the colon"
    return _model_problem(tail.strip() if sep and head.strip().lower() in providers else value)


def _file_problem(value: str) -> str | None:
    return None if os.path.isfile(os.path.expanduser(value)) else "input should be an existing file"


def _python_problem(value: str) -> str | None:
    path = os.path.expanduser(value)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return None
    return "input should be the path of a Python interpreter that exists"


def _directory_problem(value: str) -> str | None:
    path = os.path.expanduser(value)
    return (
        "input should be a directory, not an existing file"
        if os.path.exists(path) and not os.path.isdir(path)
        else None
    )


def _kind_problem(kind: str | None, value: object, providers: Collection[str]) -> str | None:
    """What is wrong with a text setting's value for what it names (``kind``), or None."""
    if kind is None or not isinstance(value, str):
        return None
    if kind == "provider":
        return _provider_problem(value, providers)
    if kind == "flow_model":
        return _flow_model_problem(value, providers)
    checks = {
        "model": _model_problem,
        "file": _file_problem,
        "python": _python_problem,
        "directory": _directory_problem,
    }
    return checks[kind](value)


def _problem(name: str, value: Any, providers: Collection[str] = ()) -> str | None:
    """What is wrong with ``value`` (already of the setting's type) for the setting, or None."""
    _, _, choices = _shape(name)
    if choices and value not in choices:
        return "input should be " + " or ".join(repr(c) for c in choices)
    if isinstance(value, float) and not math.isfinite(value):
        return "input should be a finite number"
    meta = FIELDS[name].metadata
    for key, words, within in _BOUNDS:
        if value is not None and meta[key] is not None and not within(value, meta[key]):
            return f"input should be {words} {meta[key]:g}"
    return _kind_problem(meta["kind"], value, providers)


def _error(name: str, value: Any, problem: str, source: str | None) -> Exception:
    from lfassist_jupyter.errors import ConfigError

    shown = value if not isinstance(value, str) else value[:80]
    return ConfigError(f"{source or env_name(name)}={shown!r}: {problem}. {FIELDS[name].metadata['help']}")


def check(name: str, value: Any, *, source: str | None = None, providers: Collection[str] = ()) -> Any:
    """``value`` (already of the setting's type: a traitlet or the parser made it so) within the
    setting's bounds, finite and one of its allowed values; else one ``ConfigError`` line naming
    ``source`` (default: the environment variable).  The one bounds check: ``%config``, the
    environment, the eval CLI's flags and the assistant's arguments all come through here.
    ``providers``: the provider table's names, for the settings that name a provider."""
    problem = _problem(name, value, providers)
    if problem is not None:
        raise _error(name, value, problem, source)
    return value


def parse(name: str, value: Any, *, source: str | None = None, providers: Collection[str] = ()) -> Any:
    """A setting's value, from text ("5", "false", "gpt-4.1") or a Python value, checked against its
    type and bounds; a bad value is one ``ConfigError`` line naming ``source`` (default: the
    environment variable)."""
    try:
        converted = _convert(name, value)
    except ValueError as exc:
        raise _error(name, value, str(exc), source) from None
    problem = _problem(name, converted, providers)
    if problem is not None:
        raise _error(name, value, problem, source)  # the value as it was given ('11', not 11)
    return converted


def read(name: str, env: Mapping[str, str] | None = None, *, providers: Collection[str] = ()) -> Any:
    """The setting's value from ``LFASSIST_<NAME>`` in ``env`` (default: this process's
    environment), parsed and checked; its default when the variable is unset or empty."""
    env = os.environ if env is None else env
    raw = env.get(env_name(name), "")
    if not str(raw).strip():
        return FIELDS[name].default
    return parse(name, raw, providers=providers)


def check_all(env: Mapping[str, str] | None = None, *, providers: Collection[str] = ()) -> None:
    """Every ``LFASSIST_*`` variable of ``env`` parsed and checked, in declaration order: the first
    bad one is a ``ConfigError`` line, the same line ``read`` gives wherever it is read later.
    What every entry point calls first (through ``providers.check_environment``, which hands in
    the provider names)."""
    for name in FIELDS:
        read(name, env, providers=providers)


def env_values(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The notebook settings the environment sets: those whose variable is set and not empty,
    except the preferences (provider and models), which the provider registry reads where it
    chooses."""
    env = os.environ if env is None else env
    return {
        name: parse(name, env[env_name(name)])
        for name in NOTEBOOK
        if not FIELDS[name].metadata["preference"] and env.get(env_name(name), "").strip()
    }
