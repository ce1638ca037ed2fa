"""The ``Workspace``: what the views of one kernel share.

The magic and the chat panel are two views of the same assistant, so everything they must
agree on lives here, once: the settings (``lfassist_jupyter.settings``; ``%config AssistMagics.*``
and ``LFASSIST_*`` set them), the sandbox (the one given, else the shared one) with the
validators over it (chained with the connected Langflow server's build check), the flow catalogue
of that sandbox, the Langflow connection, the assistants (cached per configuration and session)
and each request's options, registration, the list of configured models and the session store
with its conversion to a transcript.  Everything a view does with flows or code goes to the
workspace's sandbox: a workspace given its own never touches the shared one.
A panel opened with ``%assist panel`` after ``%assist connect`` therefore validates on the
server and classifies with the configured ``intent_model``, exactly like ``%%assist``.

``current_workspace()`` is the kernel's one workspace; tests and scripts may build their
own (``Workspace(data_dir=..., local_validator=...)``).  Imports stay lazy: building a
workspace must not load the engine, the SDKs or lfx (``%load_ext`` stays fast).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from lfassist_jupyter.settings import Settings

if TYPE_CHECKING:
    from lfassist_jupyter.core.assistant import Assistant
    from lfassist_jupyter.core.options import RequestOptions
    from lfassist_jupyter.core.result import AssistResult
    from lfassist_jupyter.core.session import SessionStore
    from lfassist_jupyter.flows.catalog import Catalog
    from lfassist_jupyter.flows.results import FlowReport
    from lfassist_jupyter.langflow.client import LangflowClient, RegisteredComponent
    from lfassist_jupyter.langflow.extension import ExportedExtension
    from lfassist_jupyter.langflow.flows import FlowRunResult, RegisteredFlow
    from lfassist_jupyter.ports import ComponentValidator
    from lfassist_jupyter.providers.table import TaskModels
    from lfassist_jupyter.sandbox.answers import FlowRun
    from lfassist_jupyter.sandbox.client import SandboxValidator
    from lfassist_jupyter.ui.messages import PanelMessage

_MAX_ASSISTANTS = 8  # a few conversations (the magic's, the panel's) stay warm; memory is on disk anyway


class ModelChoice(NamedTuple):
    value: str  # "provider:model"
    label: str


class ProviderModels(NamedTuple):
    name: str
    default_model: str
    """The generation model: named, else the vendor's, else what the server's list gives."""
    models: list[tuple[str, str]]  # (name, display name): the server's own list on a server of yours
    base_url: str | None = None
    """A server of the user's own (without credentials), or None on the vendor's API."""
    uses: str = ""
    """Which model each task uses, in words."""
    error: str | None = None
    """Why the server's list could not be read (one line, naming the setting that fixes it)."""


class _AssistantKey(NamedTuple):
    provider: str | None
    model: str | None
    intent_model: str | None
    flow_model: str | None
    session_id: str
    server: int  # id() of the Langflow client validating on the server, 0 when none


class Workspace:
    """One per kernel: configuration, validators, Langflow, assistants and sessions for every view."""

    def __init__(
        self,
        *,
        data_dir: str | Path | None = None,
        config: Settings | None = None,
        local_validator: SandboxValidator | None = None,
        langflow: LangflowClient | None = None,
        assistant_factory: Callable[..., Assistant] | None = None,
    ) -> None:
        """``local_validator`` is the workspace's sandbox (default: the shared one): it validates,
        gives the flow catalogue, builds, checks and probe-runs flows, for every view of this
        workspace.  ``assistant_factory`` (benchmarks, scripts) builds each assistant itself from
        the keyword arguments provider, model, intent_model, flow_model, max_retries, session_id
        and session_store."""
        from lfassist_jupyter.core.datadir import default_data_dir

        self.config = config or Settings.from_env()
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self._local_validator = local_validator
        self._langflow = langflow
        self._auto = True  # LANGFLOW_URL may connect it, until an explicit disconnect
        self._store: SessionStore | None = None
        self._factory = assistant_factory
        self._assistants: OrderedDict[_AssistantKey, Assistant] = OrderedDict()
        self._auto_error: tuple[str, str] | None = None  # (LANGFLOW_URL, why it did not connect)

    # -- sessions ---------------------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            from lfassist_jupyter.core.session import SessionStore

            self._store = SessionStore(self.data_dir / "sessions")
        return self._store

    @staticmethod
    def new_session_id(name: str | None = None) -> str:
        """A fresh session id, or the id of the named conversation (``--session NAME``)."""
        from lfassist_jupyter.core.session import SESSION_PREFIX, new_session_id

        return f"{SESSION_PREFIX}{name}" if name else new_session_id()

    def transcript(self, session_id: str) -> list[PanelMessage]:
        """A stored session as transcript messages (the panel shows them; ``%assist history`` lists them)."""
        from lfassist_jupyter.ui.messages import transcript

        return transcript(self.store.load(session_id))

    def session_components(self, session_id: str) -> dict[str, str]:
        """A conversation's validated components, the latest version of each class (class name ->
        code): what ``%assist export`` exports."""
        found: dict[str, str] = {}
        for turn in self.store.load(session_id).turns:
            if turn.kind == "component" and turn.validated and turn.class_name:
                found[turn.class_name] = turn.content
        return found

    def export_extension(self, directory: str | Path, codes: list[str], name: str | None = None) -> ExportedExtension:
        """Blocking: ``codes`` validated again (security scan in reject mode) and written as a
        Langflow extension bundle in ``directory`` (``langflow/extension.py``)."""
        from lfassist_jupyter.langflow.extension import export_extension

        return export_extension(directory, codes, name=name, validator=self.local_validator())

    # -- validation and Langflow ----------------------------------------------------------------

    @property
    def langflow(self) -> LangflowClient | None:
        """The connected Langflow; with ``LANGFLOW_URL`` set, the first view that asks connects to it
        (``auto_connect``), as ``%assist connect URL`` would."""
        if self._langflow is None:
            self.auto_connect()
        return self._langflow

    @langflow.setter
    def langflow(self, client: LangflowClient | None) -> None:
        self._langflow = client

    @property
    def connected(self) -> bool:
        return self.langflow is not None and self.langflow.connected

    def connect(self, client: LangflowClient, *, server_validation: bool = True) -> None:
        self._langflow = client
        self.config.server_validation = server_validation

    def disconnect(self) -> None:
        self._langflow = None
        self._auto = False  # stays disconnected: LANGFLOW_URL does not connect it again

    @property
    def _server(self) -> LangflowClient | None:
        return self.langflow if self.langflow is not None and self.config.server_validation else None

    def local_validator(self) -> SandboxValidator:
        """The workspace's sandbox: the one it was given, else the shared one (the edge picks it)."""
        if self._local_validator is None:
            from lfassist_jupyter.sandbox import shared

            self._local_validator = shared()
        return self._local_validator

    def validator(self) -> ComponentValidator:
        """The sandbox, then the connected Langflow server when server validation is on."""
        local = self.local_validator()
        server = self._server
        if server is None:
            return local
        from lfassist_jupyter.langflow.validator import ChainValidator, LangflowValidator

        return ChainValidator(local, LangflowValidator(server), flow_sandbox=local)

    def catalog(self) -> Catalog:
        """A fresh flow catalogue of the workspace's sandbox (its templates are cached there):
        what the views build, check and run flows over.  ``ConfigError`` when the sandbox cannot
        give it (lfx missing in its interpreter)."""
        from lfassist_jupyter.flows.catalog import default_catalog

        return default_catalog(self.local_validator())

    # -- assistants -------------------------------------------------------------------------

    def assistant(
        self,
        session_id: str,
        *,
        provider: str | None = None,
        model: str | None = None,
    ) -> Assistant:
        """The assistant for this configuration and session, reused while neither changes (so
        a conversation keeps its memory in-process).  A request's own options (attempts, reuse,
        the connected Langflow) are not part of it: ``request_options`` gives them."""
        from lfassist_jupyter.core.assistant import Assistant

        cfg = self.config
        key = _AssistantKey(
            provider=provider or cfg.provider,
            model=model or cfg.model,
            intent_model=cfg.intent_model,
            flow_model=cfg.flow_model,
            session_id=session_id,
            server=id(self._server) if self._server is not None else 0,
        )
        assistant = self._assistants.get(key)
        if assistant is None:
            settings: dict[str, Any] = dict(
                provider=key.provider,
                model=key.model,
                intent_model=key.intent_model,
                flow_model=key.flow_model,
                max_retries=cfg.max_retries,
                session_id=session_id,
                session_store=self.store,
            )
            if self._factory is not None:
                assistant = self._factory(**settings)
            else:
                local = self.local_validator()
                assistant = Assistant(**settings, validator=self.validator(), sandbox=local)
            self._assistants[key] = assistant
            while len(self._assistants) > _MAX_ASSISTANTS:
                self._assistants.popitem(last=False)
        self._assistants.move_to_end(key)
        return assistant

    def request_options(self, *, max_retries: int | None = None, generate: bool = False) -> RequestOptions:
        """One request's options from a view: its attempts (else the configured ones), ``generate``
        (``--generate``: no built-in is offered this time) and the connected Langflow ("run X on
        Y" finds X there too).  A bad ``max_retries`` raises ``ConfigError``."""
        from lfassist_jupyter.core.options import RequestOptions

        return RequestOptions(
            reuse=False if generate else None,
            max_retries=self.config.max_retries if max_retries is None else max_retries,
            langflow=self.langflow,
        )

    # -- registration -----------------------------------------------------------------------

    def _client(self) -> LangflowClient:
        from lfassist_jupyter.errors import LangflowError

        if self.langflow is None:
            raise LangflowError("no Langflow connection. Use `%assist connect URL` first.")
        return self.langflow

    @staticmethod
    def _outgoing_component(code: str) -> None:
        """Only code the security scan passes in reject mode leaves for Langflow (``LangflowError``)."""
        from lfassist_jupyter.errors import LangflowError
        from lfassist_jupyter.flows.code_checks import code_refusal

        why = code_refusal(code)
        if why is not None:
            raise LangflowError(f"the security scan refuses this code ({why}); it was not sent.")

    async def register(self, code: str) -> RegisteredComponent:
        """Save ``code`` as a component in the connected Langflow (``LangflowError`` when it cannot)."""
        self._outgoing_component(code)
        return await self._client().aregister(code)

    def register_result(self, result: AssistResult) -> RegisteredComponent:
        """Blocking: register a result's code, and record it on the result."""
        from lfassist_jupyter.errors import LangflowError

        if not result.code:
            raise LangflowError("there is no component code to register.")
        self._outgoing_component(result.code)
        registered = self._client().register(result.code)
        result.record_registration(registered)
        return registered

    # -- flows ------------------------------------------------------------------------------

    def outgoing_flow_problem(self, flow: dict[str, Any]) -> str | None:
        """Why ``flow`` may not leave for Langflow (Save, Register, a run there), or None.

        Every node's code that no lfx built-in carries must pass the security scan in reject
        mode, the mode generated code is held to: a flow file or a server's flow can carry
        anything.  Built-in code is known from the sandbox's catalogue (the zygote's facts)."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.flows.code_checks import outgoing_flow_problem

        try:
            catalog = self.catalog()
        except ConfigError as exc:
            return f"its code cannot be checked without the component catalogue ({exc})"
        return outgoing_flow_problem(flow, catalog)

    def register_flow(self, flow: dict[str, Any], name: str | None = None) -> RegisteredFlow:
        """Blocking: create the flow in the connected Langflow, or update it in place (the flow
        with its id, else ours of the same name). The flow keeps the id it is registered under,
        so a later Save writes that id and ``lfx push`` of the file updates the same flow.  Only
        custom code the security scan passes is sent (``outgoing_flow_problem``)."""
        from lfassist_jupyter.errors import LangflowError
        from lfassist_jupyter.langflow.flows import register_flow

        problem = self.outgoing_flow_problem(flow)
        if problem is not None:
            raise LangflowError(f"{problem}; nothing was sent.")
        registered = register_flow(self._client(), flow, name)
        if isinstance(flow, dict):
            flow["id"] = registered.id
        return registered

    def run_registered_flow(self, flow_id: str, input_text: str) -> FlowRunResult:
        """Blocking: run a flow stored in the connected Langflow on ``input_text``."""
        from lfassist_jupyter.langflow.flows import run_on_server

        return run_on_server(self._client(), flow_id, input_text)

    def langflow_variables(self) -> list[str]:
        """Blocking: the names of the connected Langflow's global variables (never their values)."""
        from lfassist_jupyter.langflow.flows import list_variables

        return list_variables(self._client())

    def probe_run(self, flow: dict[str, Any], input_text: str) -> FlowRun:
        """Probe-run ``flow`` in the sandbox (models stubbed, no keys, no network); never raises."""
        from lfassist_jupyter.flows.needs import explain_run

        run = self.local_validator().probe_run(flow, input_text)
        return explain_run(flow, run)  # a file, key or service to provide, not "failed"

    def validate_flow(self, flow: dict[str, Any] | str | Path, provision: bool | None = None) -> FlowReport:
        """``validate_flow`` over the workspace's catalogue, in its sandbox (never raises on bad
        input; ``ConfigError`` when the sandbox cannot give the catalogue).  ``provision``: judge a
        flow the sandbox cannot judge in an environment built for it (see ``flows.validate_flow``)."""
        from lfassist_jupyter.flows.validate import validate_flow

        return validate_flow(flow, catalog=self.catalog(), provision=provision)

    def save_flow(self, flow: dict[str, Any], path: str | Path, name: str | None = None) -> Path:
        """Write ``flow`` as a Langflow 1.13 flow file (``flows/save.py``): Langflow's UI
        imports it, ``lfx validate`` checks it, ``lfx push`` upserts it by its stable id.

        The flow keeps the id it was saved with (its own, the overwritten file's, or a new one),
        so saving it again, or registering it, uses the same id. Raises ``ConfigError`` with one
        line when it is not a flow, the file cannot be written, or custom code in it does not pass
        the security scan (``outgoing_flow_problem``): the file is for Langflow."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.flows.save import write_flow_file

        problem = self.outgoing_flow_problem(flow) if isinstance(flow, dict) else None
        if problem is not None:
            raise ConfigError(f"{problem}; nothing was written.")
        saved = write_flow_file(flow, path, name=name)
        flow["id"] = saved.id
        return saved.path

    # -- models -----------------------------------------------------------------------------

    def configured_providers(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        intent_model: str | None = None,
        only: str | None = None,
        ask: bool = True,
    ) -> list[ProviderModels]:
        """The configured providers with their models (no secrets), in preference order.

        ``model``/``intent_model`` apply to ``provider`` (default: the first configured), as a
        request's do.  A server of the user's own is asked for its list (``ask``): its
        ``/v1/models``, Ollama's ``/api/tags``; the vendor's API shows its catalogue."""
        from lfassist_jupyter.errors import LfAssistError
        from lfassist_jupyter.providers import available_providers, create_provider
        from lfassist_jupyter.providers.table import server_root
        from lfassist_jupyter.redaction import without_credentials
        from lfassist_jupyter.runtime import run_sync

        infos = [i for i in available_providers() if i.configured]
        chosen = (provider or (infos[0].name if infos else "")).lower()
        out = []
        for info in infos:
            if only is not None and info.name != only:
                continue
            made = create_provider(info.name)
            mine = info.name == chosen
            models = made.task_models(model if mine else None, intent_model if mine else None)
            listed: list[tuple[str, str]] = [(m.name, m.display_name) for m in made.models]
            error = None
            if made.own_server and ask:
                try:
                    listed = [(n, n) for n in run_sync(made.alist_models(), timeout=30)]
                except (LfAssistError, TimeoutError) as exc:
                    error = f"{exc} Set {settings_env('model')} to the model to use."
                finally:
                    run_sync(made.aclose(), timeout=10)
            picked = models.main or made.pick_from([n for n, _ in listed], "component") or ""
            out.append(
                ProviderModels(
                    info.name,
                    picked,
                    listed,
                    without_credentials(server_root(info.spec, info.base_url))
                    if made.own_server and info.spec and info.base_url
                    else None,
                    _uses(models, made.own_server, picked),
                    error,
                )
            )
        return out

    def model_choices(self) -> tuple[list[ModelChoice], str]:
        """Every configured model as a choice, and the default ("provider:model", or "" when none)."""
        providers = self.configured_providers(
            provider=self.config.provider, model=self.config.model, intent_model=self.config.intent_model
        )
        choices = [
            ModelChoice(f"{p.name}:{name}", f"{p.name} · {display}") for p in providers for name, display in p.models
        ]
        first = providers[0] if providers else None
        default = f"{first.name}:{first.default_model}" if first and first.default_model else ""
        if default and default not in {c.value for c in choices}:
            provider, model = default.split(":", 1)
            choices.insert(0, ModelChoice(default, f"{provider} · {model}"))
        return choices, default

    # -- Langflow from the environment ------------------------------------------------------

    def auto_connect(self) -> str | None:
        """``LANGFLOW_URL`` (and ``LANGFLOW_API_KEY``) used as ``%assist connect URL`` is: the first
        view that needs Langflow connects, once.  A connection that fails is one line (returned
        each time it is asked, never raised): the views show it and go on without Langflow."""
        import os

        url = os.environ.get("LANGFLOW_URL", "").strip()
        if self._langflow is not None or not url or not self._auto:
            return None
        if self._auto_error is not None and self._auto_error[0] == url:
            return self._auto_error[1]
        from lfassist_jupyter.errors import LfAssistError
        from lfassist_jupyter.langflow import LangflowClient

        try:
            client = LangflowClient(url=url).connect()
        except LfAssistError as exc:
            self._auto_error = (url, f"Langflow: not connected to LANGFLOW_URL: {exc}")
            return self._auto_error[1]
        self.connect(client, server_validation=self.config.server_validation)
        return None


def settings_env(name: str) -> str:
    from lfassist_jupyter.settings import env_name

    return env_name(name)


def _uses(models: TaskModels, own: bool, picked: str) -> str:
    """Which model each task uses, in words (``%assist status`` and ``%assist models``)."""
    if models.main and models.intent in ("", models.main):
        return f"model {models.main} for every task"
    if models.main:
        return f"model {models.main}, intent model {models.intent}"
    if own:
        chosen = f"'{picked}', " if picked else ""
        return f"no model named ({settings_env('model')}): {chosen}the one it lists, for every task"
    return "no model"


_current: Workspace | None = None


def current_workspace() -> Workspace:
    """The kernel's workspace, made on first use."""
    global _current
    if _current is None:
        _current = Workspace()
    return _current


def reset_workspace() -> None:
    """Forget the kernel's workspace (``%unload_ext``): the next view starts from defaults."""
    global _current
    _current = None
