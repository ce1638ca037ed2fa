"""The provider table: everything this package knows about a model provider, in one entry each.

Every question about a provider is answered here and nowhere else: which SDK talks to it, which
variable holds its key and which moves it to another server, its models per task and how to ask
a server for its own, the hosts a real run of a flow needs for it, and how a flow's model node is
set for it (lfx's provider name, the node's base-URL field, the variable lfx reads instead).
The registry (``_registry.py``: which provider is configured, building one), the flows' model
nodes (``flows/model_nodes.py``) and the real run's plan (``flows/real_run.py``) all read
``PROVIDERS``; no module outside ``providers/`` spells a provider's key variable (a test greps).
Adding a provider is one entry here, plus its SDK adapter when the SDK is new.

Some entries have no SDK (``sdk=None``): the assistant cannot talk to them, but a flow may call
them (a spec that names Google or Groq): their key variable, hosts and lfx name are still facts
the flows need.  The lfx facts (``FlowNode``) mirror lfx 1.13's model registry
(``lfx.base.models.model_metadata.MODEL_PROVIDER_METADATA``); ``tests/providers/test_table.py``
checks them against the installed lfx.

The model of each task is resolved in one place, ``task_models``: with a server of the user's own
(a base URL that is not the vendor's, or Ollama), every task uses the model the user named and
the vendor's defaults are never guessed; when none is named the server is asked
(``Provider.aresolve``).  The standard library only: ``%load_ext`` reads this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Task = Literal["intent", "answer", "component", "flow"]
"""What a model call is for: classifying a request, answering a question, writing a component,
planning and writing a flow."""
TASKS: tuple[Task, ...] = ("intent", "answer", "component", "flow")
GENERATION: tuple[Task, ...] = ("answer", "component", "flow")
"""The tasks ``LFASSIST_MODEL`` sets (``LFASSIST_INTENT_MODEL`` sets ``intent``)."""

Sdk = Literal["openai", "anthropic", "scripted"]
Listing = Literal["openai", "anthropic", "ollama"]
"""How a server lists its models: OpenAI's ``GET /v1/models`` (vLLM, LM Studio, llama.cpp, LiteLLM
and OpenRouter answer it too), Anthropic's ``GET /v1/models``, Ollama's ``GET /api/tags``."""


@dataclass(frozen=True)
class FlowNode:
    """How a flow's language-model node calls a provider, in lfx 1.13's terms."""

    lfx_provider: str
    """The provider's name in lfx's model registry (``M.model: {"name": ..., "provider": "OpenAI"}``)."""
    component: str = "LanguageModelComponent"
    """The node type the flows use for it (lfx's Language Model: one node, every provider)."""
    bundle: str | None = None
    """The distribution that brings its client since lfx 1.13 split providers into bundles."""
    base_url_field: str | None = None
    """The node's field that takes the server's URL (Ollama's ``ollama_base_url``); None when lfx
    1.13 has none for this provider and reads ``base_url_variable`` instead."""
    base_url_variable: str | None = None
    """The variable lfx (or the provider's client) reads for the server's URL when the node has no
    field for it: a Langflow global variable, or the real run's environment."""
    components: tuple[str, ...] = ()
    """lfx component types that call this provider (``OpenAIModel``): a real run of a flow with one
    needs the provider's hosts."""
    model_prefixes: tuple[str, ...] = ()
    """Model-name prefixes that can only mean this provider (``claude``): a spec that writes such a
    name without a provider means this one."""


@dataclass(frozen=True)
class ProviderSpec:
    """One model provider."""

    name: str
    """Ours, lower case (``LFASSIST_PROVIDER``, ``--provider``, ``flow_model=name:model``)."""
    display_name: str
    sdk: Sdk | None = None
    """The adapter the assistant talks to it with; None: flows only (the assistant cannot)."""
    key_variable: str | None = None
    """The variable that holds its key; None: it needs none."""
    base_url_variables: tuple[str, ...] = ()
    """The variables that point it at a server, the first set wins."""
    url_form: Literal["url", "ollama"] = "url"
    """``ollama``: the variable is read as Ollama reads ``OLLAMA_HOST`` (``0.0.0.0``, ``host:port``,
    port 11434 by default), and the SDK talks to its OpenAI-compatible ``/v1``."""
    vendor_url: str | None = None
    """The vendor's own API: a base URL equal to it is the vendor, any other is a server of the
    user's.  None: every server is the user's (Ollama)."""
    hosts: tuple[str, ...] = ()
    """The hosts a real run of a flow calling it needs (port 443)."""
    needs: Literal["key", "key_or_url", "url", "script", "never"] = "key"
    """What configures it for the assistant: its key; its key or a base URL (a keyless local
    server); a base URL; the scripted replies' file; nothing (flows only)."""
    models: tuple[tuple[str, str], ...] = ()
    """The vendor's models as ``%assist models`` shows them (name, display name), in fallback order."""
    default_models: Mapping[Task, str] = field(default_factory=dict)
    """The vendor's model per task; a task missing here (all of them for Ollama) has no default the
    user surely has: the server is asked."""
    listing: Listing | None = None
    aliases: tuple[str, ...] = ()
    """Other names flows and users write for it (``google``, ``mistralai``)."""
    flow: FlowNode | None = None
    """How a flow's model node calls it; None: a flow cannot (the offline scripted demo)."""

    @property
    def base_url_variable(self) -> str | None:
        """The variable named in advice (the first one)."""
        return self.base_url_variables[0] if self.base_url_variables else None

    def names(self) -> tuple[str, ...]:
        """Every name that means this provider, lower case."""
        lfx = (self.flow.lfx_provider.lower(),) if self.flow else ()
        return (self.name, self.display_name.lower(), *lfx, *self.aliases)


_OPENAI_MODELS = (("gpt-4o", "GPT-4o"), ("gpt-4o-mini", "GPT-4o mini"), ("gpt-4.1", "GPT-4.1"),
                  ("gpt-4.1-mini", "GPT-4.1 mini"), ("o4-mini", "o4-mini"))  # fmt: skip

PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        name="openai",
        display_name="OpenAI",
        sdk="openai",
        key_variable="OPENAI_API_KEY",
        base_url_variables=("OPENAI_BASE_URL", "OPENAI_API_BASE"),
        vendor_url="https://api.openai.com/v1",
        hosts=("api.openai.com",),
        needs="key_or_url",
        models=_OPENAI_MODELS,
        default_models={"intent": "gpt-4o-mini", "answer": "gpt-4o", "component": "gpt-4o", "flow": "gpt-4o"},
        listing="openai",
        flow=FlowNode(
            lfx_provider="OpenAI",
            bundle="lfx-openai",
            base_url_variable="OPENAI_BASE_URL",
            components=("OpenAIModel", "OpenAIEmbeddings"),
            model_prefixes=("gpt-", "chatgpt", "o1", "o3", "o4"),
        ),
    ),
    ProviderSpec(
        name="anthropic",
        display_name="Anthropic",
        sdk="anthropic",
        key_variable="ANTHROPIC_API_KEY",
        base_url_variables=("ANTHROPIC_BASE_URL",),
        vendor_url="https://api.anthropic.com",
        hosts=("api.anthropic.com",),
        models=(
            ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
            ("claude-haiku-4-5", "Claude Haiku 4.5"),
            ("claude-opus-4-1", "Claude Opus 4.1"),
        ),
        default_models={
            "intent": "claude-haiku-4-5",
            "answer": "claude-sonnet-4-5",
            "component": "claude-sonnet-4-5",
            "flow": "claude-sonnet-4-5",
        },
        listing="anthropic",
        flow=FlowNode(
            lfx_provider="Anthropic",
            bundle="lfx-anthropic",
            base_url_variable="ANTHROPIC_BASE_URL",  # lfx has none: the anthropic SDK reads this one
            components=("AnthropicModel",),
            model_prefixes=("claude",),
        ),
    ),
    ProviderSpec(
        name="ollama",
        display_name="Ollama",
        sdk="openai",
        base_url_variables=("OLLAMA_HOST", "OLLAMA_BASE_URL"),
        url_form="ollama",
        needs="url",
        listing="ollama",
        flow=FlowNode(
            lfx_provider="Ollama",
            bundle="lfx-ollama",
            base_url_field="ollama_base_url",
            base_url_variable="OLLAMA_BASE_URL",
            components=("OllamaModel", "OllamaEmbeddings"),
        ),
    ),
    ProviderSpec(
        name="scripted",
        display_name="Scripted (offline demo)",
        sdk="scripted",
        needs="script",
        models=(("scripted", "Scripted replies"),),
        default_models=dict.fromkeys(("intent", "answer", "component", "flow"), "scripted"),
    ),
    # Flows only: a spec may name them; the assistant does not talk to them.
    ProviderSpec(
        name="google",
        display_name="Google Generative AI",
        key_variable="GOOGLE_API_KEY",
        hosts=("generativelanguage.googleapis.com",),
        needs="never",
        flow=FlowNode(
            lfx_provider="Google Generative AI", components=("GoogleGenerativeAIModel",), model_prefixes=("gemini",)
        ),
    ),
    ProviderSpec(
        name="groq",
        display_name="Groq",
        key_variable="GROQ_API_KEY",
        hosts=("api.groq.com",),
        needs="never",
        flow=FlowNode(lfx_provider="Groq", components=("GroqModel",)),
    ),
    ProviderSpec(
        name="mistral",
        display_name="Mistral",
        hosts=("api.mistral.ai",),
        needs="never",
        aliases=("mistralai",),
        flow=FlowNode(lfx_provider="Mistral", components=("MistralModel",)),
    ),
    ProviderSpec(
        name="azure-openai",
        display_name="Azure OpenAI",
        key_variable="AZURE_OPENAI_API_KEY",
        needs="never",
        flow=FlowNode(lfx_provider="Azure OpenAI"),
    ),
    ProviderSpec(
        name="azure-ai-foundry",
        display_name="Azure AI Foundry",
        key_variable="AZURE_AI_FOUNDRY_API_KEY",
        needs="never",
        flow=FlowNode(lfx_provider="Azure AI Foundry"),
    ),
    ProviderSpec(
        name="watsonx",
        display_name="IBM WatsonX",
        key_variable="WATSONX_APIKEY",
        needs="never",
        flow=FlowNode(lfx_provider="IBM WatsonX"),
    ),
    ProviderSpec(
        name="openrouter",
        display_name="OpenRouter",
        key_variable="OPENROUTER_API_KEY",
        hosts=("openrouter.ai",),
        needs="never",
        flow=FlowNode(lfx_provider="OpenRouter"),
    ),
)

ASSISTANT_PROVIDERS: tuple[ProviderSpec, ...] = tuple(p for p in PROVIDERS if p.sdk is not None)
"""The providers the assistant talks to, in preference order (the first configured one wins)."""
PREFERRED_ORDER: tuple[str, ...] = tuple(p.name for p in ASSISTANT_PROVIDERS)


def find(name: str | None) -> ProviderSpec | None:
    """The provider any of its names means (``openai``, ``OpenAI``, ``Google Generative AI``,
    ``google``), case-insensitively; None for a name nobody has."""
    wanted = (name or "").strip().strip("'\"").lower()
    return next((p for p in PROVIDERS if wanted and wanted in p.names()), None)


def spec(name: str) -> ProviderSpec:
    """The assistant provider ``name`` (``ConfigError`` naming the known ones otherwise)."""
    found = find(name)
    if found is None or found.sdk is None:
        from lfassist_jupyter.errors import ConfigError

        raise ConfigError(f"Unknown provider: {name}. Known providers: {', '.join(PREFERRED_ORDER)}.")
    return found


def for_component(node_type: str) -> ProviderSpec | None:
    """The provider an lfx component type calls (``OllamaModel`` -> Ollama)."""
    return next((p for p in PROVIDERS if p.flow and node_type in p.flow.components), None)


def for_model_name(model: str) -> ProviderSpec | None:
    """The provider an unmistakable model name means (``claude-...`` -> Anthropic), else None."""
    low = model.strip().lower()
    return next((p for p in PROVIDERS if p.flow and low.startswith(p.flow.model_prefixes or ("\0",))), None)


def key_variables() -> tuple[str, ...]:
    """Every provider key variable the table knows (what a grep must find nowhere else)."""
    return tuple(p.key_variable for p in PROVIDERS if p.key_variable)


def setup_variables() -> tuple[str, ...]:
    """The variables that configure the assistant's providers (keys, then servers), for help texts."""
    keys = [p.key_variable for p in ASSISTANT_PROVIDERS if p.key_variable]
    servers = [p.base_url_variable for p in ASSISTANT_PROVIDERS if p.base_url_variable]
    return tuple(dict.fromkeys([*keys, *servers]))


def configured_base_url(provider: ProviderSpec, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(variable, value)`` of the first of the provider's base-URL variables set in ``env``."""
    for variable in provider.base_url_variables:
        value = (env.get(variable) or "").strip()
        if value:
            return variable, value
    return None, None


def ollama_host(value: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of an ``OLLAMA_HOST`` value, read as Ollama's server and clients read
    it: the scheme is optional (http), the port defaults to 11434 (80 or 443 after an http:// or
    https:// scheme), quotes, spaces and a path are dropped, an empty host is 127.0.0.1.
    ``ValueError`` for a port that is not one."""
    text = value.strip().strip("\"'").strip()
    scheme, sep, hostport = text.partition("://")
    default = 11434
    if not sep:
        scheme, hostport = "http", text
    elif scheme.lower() in ("http", "https"):
        scheme = scheme.lower()
        default = 80 if scheme == "http" else 443
    hostport = hostport.split("/", 1)[0]
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif hostport.count(":") == 1:
        host, _, port_text = hostport.partition(":")
    else:  # a bare name, or a bare IPv6 address such as "::"
        host, port_text = hostport, ""
    if port_text and (not port_text.isdigit() or not 0 < int(port_text) < 65536):
        raise ValueError(f"bad port in {value!r}")
    return scheme, (host or "127.0.0.1").lower(), int(port_text) if port_text else default


def server_root(provider: ProviderSpec, value: str) -> str:
    """The server's address as its own API is rooted, from a configured value: Ollama's
    ``http://host:11434`` (its ``/api/...``; a ``/v1`` written after it is dropped), another
    provider's URL as written."""
    if provider.url_form != "ollama":
        return value.strip().rstrip("/")
    text = value.strip().strip("\"'").strip().rstrip("/").removesuffix("/v1")
    if "@" in text.split("://", 1)[-1].split("/", 1)[0]:  # credentials in the URL: keep it as written
        return text if "://" in text else f"http://{text}"
    scheme, host, port = ollama_host(text)
    shown = f"[{host}]" if ":" in host else host
    path = text.split("://", 1)[-1].partition("/")[2]
    return f"{scheme}://{shown}:{port}" + (f"/{path}" if path else "")


def sdk_base_url(provider: ProviderSpec, value: str) -> str:
    """The base URL the provider's SDK is given: Ollama's OpenAI-compatible ``/v1``."""
    root = server_root(provider, value)
    return f"{root}/v1" if provider.url_form == "ollama" else root


def own_server(provider: ProviderSpec, base_url: str | None) -> bool:
    """Whether the provider runs on a server of the user's (not the vendor's API): then its models
    are the server's, not the vendor's list."""
    if provider.vendor_url is None:
        return provider.url_form == "ollama"
    return bool(base_url and base_url.rstrip("/") != provider.vendor_url.rstrip("/"))


# -- the model of each task ---------------------------------------------------------------------


@dataclass(frozen=True)
class TaskModels:
    """The model each task runs on; ``""``: none is named or known, the server is asked."""

    intent: str = ""
    answer: str = ""
    component: str = ""
    flow: str = ""

    def __getitem__(self, task: Task) -> str:
        return str(getattr(self, task))

    @property
    def main(self) -> str:
        """The generation model (what ``%assist status`` shows)."""
        return self.component


def task_models(
    provider: ProviderSpec | None,
    *,
    own: bool,
    model: str | None = None,
    intent_model: str | None = None,
    default: str = "",
) -> TaskModels:
    """The one place a model is chosen for each task.

    ``model`` (``LFASSIST_MODEL``, ``--model``, ``%config``) sets the generation tasks and
    ``intent_model`` the classification.  On the vendor's API a task the user left open gets the
    vendor's model for it (a cheaper one classifies).  On a server of the user's own (``own``),
    every task uses the user's model unless they named another one for it: the vendor's names
    mean nothing there, so none is guessed, and a task nobody named is ``""`` (the server's own
    list answers it).  ``default`` stands for a provider outside the table (a custom one)."""
    named = (model or "").strip()
    named_intent = (intent_model or "").strip()
    vendor = {} if own or provider is None else dict(provider.default_models)
    values: dict[str, str] = {}
    for task in TASKS:
        chosen = named_intent if task == "intent" else ""
        if not chosen and (task != "intent" or own):
            chosen = named
        values[task] = chosen or vendor.get(task, "") or (named if task == "intent" else "") or default
    return TaskModels(**values)


def model_setting(task: Task) -> str:
    """The ``LFASSIST_*`` variable that sets ``task``'s model (what an error about it names)."""
    from lfassist_jupyter.settings import env_name

    return env_name("intent_model" if task == "intent" else "model")
