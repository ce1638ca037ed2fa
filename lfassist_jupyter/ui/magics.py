"""IPython magics: ``%%assist``, ``%assist <subcommand>`` and ``%%assist_validate``.

A thin view over the kernel's ``Workspace``: parse options (``magic_arguments``, so quoting
works like a shell), drive ``Assistant.run`` and hand its events to the live view
(``ui/render/progress.py``).  ``%assist WORD`` dispatches through ``SUBCOMMANDS``; each handler
returns a display object (``ui/render``), never prints.  Defaults are traitlets made from the
settings (``lfassist_jupyter/settings.py``: type, default, help, bounds), so
``%config AssistMagics.model = "gpt-4.1"``, ``ipython_config.py`` and ``LFASSIST_MODEL`` work;
they are mirrored into the workspace, which the chat panel shares.  Heavy imports (engine,
SDKs, lfx, pydantic) happen on first use, not at ``%load_ext``.
"""

from __future__ import annotations

import atexit
import shlex
import string
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Float, Int, TraitError, TraitType, Unicode, observe, validate

from lfassist_jupyter.providers.table import PREFERRED_ORDER
from lfassist_jupyter.settings import FIELDS, NOTEBOOK, help_text
from lfassist_jupyter.ui.render.progress import LiveProgress
from lfassist_jupyter.ui.render.text import Lines
from lfassist_jupyter.ui.workspace import current_workspace, reset_workspace

if TYPE_CHECKING:
    from lfassist_jupyter.core.assistant import Assistant
    from lfassist_jupyter.core.options import RequestOptions
    from lfassist_jupyter.core.result import AssistResult
    from lfassist_jupyter.langflow.client import LangflowClient

_PROVIDERS = " | ".join(PREFERRED_ORDER)

HELP = f"""\
%%assist [options]       the cell body is your request: a component to build, or a question
  --provider NAME        {_PROVIDERS} (default: first configured)
  --model NAME           the generation model
  --max-retries N        total validation attempts, 0..10 (0 skips validation)
  --session NAME         continue a named conversation;  --new-session starts a fresh one
  --interpolate          replace {{name}} in the request with notebook variables (never done silently)
  --no-insert            do not put the code in a new cell below
  --out VAR              bind the result (AssistResult) to VAR
  --register             also save the validated component in the connected Langflow
  --generate             write a new component even when a built-in lfx component does the job
  --quiet                no live progress, only the result

%assist status           providers, models, validator and session
%assist models           configured providers and their models (a server of your own: its own list)
%assist new              start a new conversation
%assist history          this conversation's turns and the stored sessions
%assist connect URL [--api-key KEY | --ask-key] [--no-server-validation]
                         connect to a running Langflow (or set LANGFLOW_URL / LANGFLOW_API_KEY);
                         without a key, Langflow's auto-login is used when it is on
%assist disconnect       forget the Langflow connection
%assist components       the components registered in Langflow from notebooks
%assist export DIR [CLASS ...] [--name NAME]
                         write this conversation's validated components (or the named ones) as a Langflow
                         extension bundle in DIR (lfx extension layout, a test per component; validated
                         again first): `lfx extension validate DIR`, then `pip install DIR` into Langflow
%assist flow load FILE   load a flow (JSON file, or the id of a flow in the connected Langflow) into the
                         conversation: the next %%assist request edits it ("add a summariser before the output");
                         --provision: a flow the sandbox cannot judge (it lacks a package) is judged in a
                         separate environment with lfx and those packages (uv, cached; the kernel's untouched)
%assist flows            the flows registered in Langflow from notebooks
%assist undo             restore the flow before the last edit (each edit keeps a restore point)
%assist panel [--main]   the chat panel, docked in JupyterLab's right sidebar (--main: a tab); again: focus it.
                         Also in the command palette: "Langflow Assistant: Open". Inline where there is no shell
%assist stats            this kernel's usage: requests, attempts, durations, model calls, tokens
%assist eval CASES.toml [--provider P] [--model M] [--json OUT] [-k TEXT] [--max-retries N] [--intent-model M]
                         [--strict]: run eval cases and check each result by running it in the sandbox
                         (defaults: this notebook's %config AssistMagics provider, model, max_retries,
                         intent_model; `%assist eval --help` explains each option)
%assist help             this text (`--help` after a magic or a subcommand: its part of it)
%%assist_validate [options]  validate the component code in the cell body (same validator)
  --no-smoke             skip the smoke run (calling every output with sample inputs)
  --timeout S            seconds the validation may take (default: validator_timeout, 10)
  --fix                  repair mechanical mistakes (no model call): show the repaired code and the changes
%%assist_flow [options]  the cell body is a flow spec (nodes:/edges:/config:) or a flow JSON file path:
                         build it, validate it and draw it (re-run the cell after editing the spec)
  --run "TEXT"           probe-run it in the sandbox on TEXT (models stubbed: no keys, no network)
  --run-local "TEXT"     run it for real on TEXT: its models are called; it shows the variables it wants
                         and the hosts it reaches, and runs only when each wanted variable is allowed:
  --env NAME             allow the variable NAME (from the kernel's environment) to a --run-local run
  --allow-host HOST      let a --run-local run reach HOST or HOST:PORT too (its model providers' hosts
                         are allowed; a local or private address only when named here)
  --save FILE.json       write a flow file Langflow's UI imports (Upload a flow)
  --register             create or update it in the connected Langflow, then run it there once
  --name NAME            the flow's name for --save / --register (default: the spec's name)
  --out VAR              bind the result (FlowView: .flow, .spec, .report, .run) to VAR
  --quiet                show nothing unless something failed

Defaults: %config AssistMagics.model = "..." (also provider, intent_model, flow_model, max_retries, insert,
server_validation, validator_timeout; `%config AssistMagics` lists them), or LFASSIST_<NAME> in the
environment before %load_ext (LFASSIST_MAX_RETRIES=5). %config, then the environment, then the default.
"""


def _trait(name: str) -> TraitType:
    """The ``%config`` traitlet of the setting ``name``: its type, default and help come from
    ``lfassist_jupyter.settings`` (bounds are checked by ``AssistMagics._check_setting``)."""
    field = FIELDS[name]
    kinds: dict[Any, type[TraitType]] = {bool: Bool, int: Int, float: Float}
    kind = kinds.get(field.type, Unicode)
    return kind(field.default, allow_none=field.default is None, help=help_text(name)).tag(config=True)


_HELP_FLAGS = ("-h", "--help")


def help_for(head: str) -> str:
    """The part of ``HELP`` about ``head`` (``%%assist``, ``%assist export``): its lines that
    start with those words and the indented lines under them; all of ``HELP`` when none does.

    One text answers ``%assist help`` and every ``--help``, so they cannot drift apart."""
    words = head.split()
    picked: list[str] = []
    taking = False
    for line in HELP.splitlines():
        if line and not line[0].isspace():
            taking = line.split()[: len(words)] == words
        elif not line:
            taking = False
        if taking:
            picked.append(line)
    return "\n".join(picked) + "\n" if picked else HELP


def _parse(magic: Any, line: str) -> Any:
    """Options parsed like a shell would (quotes removed), errors as ``UsageError``; None for
    ``-h`` / ``--help`` (IPython's magic parsers have no help option of their own): the caller
    shows ``help_for`` its magic instead of running.

    IPython's ``parse_argstring`` keeps quotes on POSIX (``--session "my project"`` would
    name the session ``"my project"`` with its quotes), so split with ``shlex`` instead."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"Could not parse the options: {exc}") from exc
    if any(word in _HELP_FLAGS for word in argv):
        return None
    return magic.parser.parse_args(argv)


def _is_variable_name(name: str) -> bool:
    """Whether ``--out NAME`` can be used afterwards: an identifier that is not a keyword."""
    import keyword

    return name.isidentifier() and not keyword.iskeyword(name)


class _Namespace(dict):
    """``str.format_map`` over the user's namespace that fails clearly on unknown names."""

    def __missing__(self, key: str) -> Any:
        raise UsageError(f"--interpolate: the variable '{key}' is not defined in the notebook.")


@magics_class
class AssistMagics(Magics):
    """Configurable defaults for the assistant magics (``%config AssistMagics``)."""

    provider = _trait("provider")
    model = _trait("model")
    intent_model = _trait("intent_model")
    flow_model = _trait("flow_model")
    max_retries = _trait("max_retries")
    insert = _trait("insert")
    validator_timeout = _trait("validator_timeout")
    server_validation = _trait("server_validation")

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        from lfassist_jupyter.errors import ConfigError

        try:  # a bad LFASSIST_* variable: one line
            _check_environment()
            # Before the configuration loads: ipython_config.py's values notify _on_config_change.
            self.workspace = current_workspace()
            super().__init__(shell=shell, **kwargs)
            self._apply_env(kwargs)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        self._push_config()
        self._assistant: Assistant | None = None  # the conversation %assist history shows
        self._session_id: str | None = None

    def _apply_env(self, given: dict[str, Any]) -> None:
        """``LFASSIST_<NAME>`` variables set what ``ipython_config.py`` and the constructor left
        at its default (precedence: ``%config`` > ``ipython_config.py`` > environment > default)."""
        from lfassist_jupyter.settings import env_values

        configured = dict(self.config).get(type(self).__name__) or {}
        for name, value in env_values().items():
            if name not in configured and name not in given:
                setattr(self, name, value)

    @validate(*NOTEBOOK)
    def _check_setting(self, proposal: Any) -> Any:
        """``%config AssistMagics.<name> = value`` is checked against the setting's bounds."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.settings import check

        name = proposal.trait.name
        try:
            return check(name, proposal.value, source=f"{type(self).__name__}.{name}", providers=PREFERRED_ORDER)
        except ConfigError as exc:
            raise TraitError(str(exc)) from None

    @observe(*NOTEBOOK)
    def _on_config_change(self, _change: Any) -> None:
        self._push_config()

    def _push_config(self) -> None:
        """The traitlets are the settings' Jupyter face; the workspace holds them for both views."""
        cfg = self.workspace.config
        for name in NOTEBOOK:
            setattr(cfg, name, getattr(self, name))

    @property
    def langflow(self) -> LangflowClient | None:
        """The connected ``LangflowClient``, or None."""
        return self.workspace.langflow

    # -- helpers ------------------------------------------------------------------------

    @property
    def _rich(self) -> bool:
        """Whether a front end renders HTML (a kernel), as opposed to a terminal shell."""
        return getattr(self.shell, "kernel", None) is not None

    def _get_assistant(self, args: Any) -> tuple[Assistant, RequestOptions]:
        """The conversation's assistant and this request's options (``--max-retries``,
        ``--generate``); a bad option is one ``UsageError`` line, before anything runs."""
        from lfassist_jupyter.errors import ConfigError

        if args.session:
            self._session_id = self.workspace.new_session_id(args.session)
        elif args.new_session or self._session_id is None:
            self._session_id = self.workspace.new_session_id()
        try:
            options = self.workspace.request_options(max_retries=args.max_retries, generate=args.generate)
            assistant = self.workspace.assistant(self._session_id, provider=args.provider, model=args.model)
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        self._assistant = assistant
        return assistant, options

    def _register(self, result: AssistResult) -> Lines:
        """Send a validated component to the connected Langflow; failures are one clear line."""
        from lfassist_jupyter.errors import LangflowError

        if self.workspace.langflow is None:
            why = "no Langflow connection. Use `%assist connect URL` first; the code is in the next cell."
            return Lines([f"Not registered: {why}"])
        try:
            registered = self.workspace.register_result(result)
        except LangflowError as exc:
            return Lines([f"Not registered: {exc}"])
        return Lines([str(registered)])

    # -- %%assist / %assist ----------------------------------------------------------------

    @magic_arguments()
    @argument("--provider", default=None, help=_PROVIDERS)
    @argument("--model", default=None, help="the generation model")
    @argument("--max-retries", type=int, default=None, help="total validation attempts, 0..10")
    @argument("--session", default=None, help="continue a named conversation")
    @argument("--new-session", action="store_true", help="start a fresh conversation")
    @argument("--interpolate", action="store_true", help="replace {name} with notebook variables")
    @argument("--no-insert", action="store_true", help="do not insert the code as a new cell")
    @argument("--out", default=None, help="bind the AssistResult to this variable")
    @argument("--register", action="store_true", help="save the validated component in the connected Langflow")
    @argument("--quiet", action="store_true", help="no live progress")
    @argument("--generate", action="store_true", help="generate even when a built-in component does the job")
    @line_cell_magic
    def assist(self, line: str, cell: str | None = None) -> Any:
        """Ask the Langflow Assistant: build a validated component, or answer a question.

        As a cell magic the body is the request; as a line magic the first word is a
        subcommand (status, models, new, history, help).  See ``%assist help``.
        """
        if cell is None:
            return self._subcommand(line)
        _check_environment()
        args = _parse(self.assist, line)
        if args is None:
            return Lines([help_for("%%assist")]).show()
        if args.out is not None and not _is_variable_name(args.out):
            raise UsageError(
                f"--out needs a Python variable name (letters, digits, _; not starting with a digit; "
                f"not a keyword), not {args.out!r}."
            )
        prompt = cell
        if args.interpolate:
            try:
                prompt = string.Formatter().vformat(cell, (), _Namespace(self.shell.user_ns))
            except (ValueError, IndexError, AttributeError, KeyError) as exc:
                raise UsageError(f"--interpolate could not fill the request: {exc}") from exc
        connecting = self.workspace.auto_connect()  # LANGFLOW_URL, as `%assist connect URL` would
        if connecting:
            Lines([connecting]).show()
        assistant, options = self._get_assistant(args)
        progress = LiveProgress(rich=self._rich, quiet=args.quiet)
        result = assistant.run(prompt, on_event=progress.on_event, raise_on_interrupt=False, options=options)
        if result.kind == "flow":
            self._flow_result(result, args)
        elif result.status == "complete" and result.validated and result.code and self.insert and not args.no_insert:
            self.shell.set_next_input(result.code, replace=False)
        if args.out:
            self.shell.user_ns[args.out] = result
        if args.register and result.kind != "flow" and result.status == "complete" and result.validated and result.code:
            self._register(result).show()
        if result.status != "complete" and not self._rich:
            Lines([result.error or result.status]).show()
        return result

    def _subcommand(self, line: str) -> Any:
        """``%assist WORD ...``: look the word up in `SUBCOMMANDS` and show what its handler returns.

        A handler returns a display object: the cell's value, or `Lines` (text and a value), which
        is displayed here so it reaches the cell's output wherever the magic stands in the cell."""
        words = line.split()
        command = words[0] if words else "help"
        if command in _HELP_FLAGS:
            command = "help"
        elif command in SUBCOMMANDS and command != "eval" and any(word in _HELP_FLAGS for word in words[1:]):
            # (eval's own parser answers --help: the eval CLI's full help, its defaults included)
            return Lines([help_for(f"%assist {command}")]).show()
        handler = SUBCOMMANDS.get(command)
        if handler is None:
            raise UsageError(f"Unknown %assist subcommand '{command}'. Try: {', '.join(SUBCOMMANDS)}.")
        shown = handler(self, words[1:], line.split(None, 1)[1] if len(words) > 1 else "")
        return shown.show() if isinstance(shown, Lines) else shown

    def _help(self, words: list[str], rest: str) -> Lines:
        return Lines([HELP])

    def _new(self, words: list[str], rest: str) -> Lines:
        self._session_id = self.workspace.new_session_id()  # the next request builds an assistant for it
        return Lines(["Started a new conversation."])

    def _disconnect(self, words: list[str], rest: str) -> Lines:
        self.workspace.disconnect()
        return Lines(["Disconnected from Langflow."])

    def _flows(self, words: list[str], rest: str) -> Any:
        return self._flow_subcommand(["list"])

    def _panel(self, words: list[str], rest: str) -> Any:
        from lfassist_jupyter.ui.dock import open_panel

        if any(w not in ("--main", "--right") for w in words):
            raise UsageError("Usage: %assist panel [--main]  (--main: a main-area tab instead of the sidebar)")
        return open_panel(area="main" if "--main" in words else "right", workspace=self.workspace)

    def _stats(self, words: list[str], rest: str) -> Any:
        from lfassist_jupyter.metrics import stats
        from lfassist_jupyter.ui.render.stats import StatsView

        return StatsView(stats())

    def _eval(self, words: list[str], rest: str) -> Any:
        """``%assist eval CASES.toml``: the eval harness in the notebook, with a live progress bar."""
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.eval import build_parser, run_suite, select_cases, write_json
        from lfassist_jupyter.ui.render.progress import EvalProgress

        parser = build_parser(self.workspace.config)  # its defaults: this notebook's %config values
        parser.prog = "%assist eval"
        try:
            args = parser.parse_args(shlex.split(rest))
        except SystemExit as exc:  # argparse already printed the usage line (or, for --help, the help)
            if exc.code == 0:
                return None
            raise UsageError(
                "usage: %assist eval CASES.toml [--provider P] [--model M] [--max-retries N] [--intent-model M] "
                "[--json OUT] [-k TEXT] [--strict]"
            ) from exc
        except ValueError as exc:
            raise UsageError(f"Could not parse the options: {exc}") from exc
        try:
            suite = run_suite(
                select_cases(args.cases, args.k),
                provider=args.provider,
                model=args.model,
                max_retries=args.max_retries,
                intent_model=args.intent_model,
                on_progress=EvalProgress(rich=self._rich),
                sandbox=self.workspace.local_validator(),
            )
            if args.json:
                write_json(suite, args.json)
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        return suite

    def _models(self, words: list[str], rest: str) -> Lines:
        """Each configured provider's models: a server of your own is asked for its list (its
        ``/v1/models``, Ollama's ``/api/tags``), the vendor's API shows its catalogue; with the
        model each task uses."""
        _check_environment()
        providers = self.workspace.configured_providers(
            provider=self.provider, model=self.model, intent_model=self.intent_model
        )
        lines = []
        if not providers:
            from lfassist_jupyter.providers import NO_PROVIDER_MESSAGE

            lines.append(NO_PROVIDER_MESSAGE)
        for p in providers:
            where = f" at {p.base_url}" if p.base_url else ""
            if p.error:
                lines.append(f"{p.name}{where}: {p.error}")
                continue
            names = ", ".join(name for name, _ in p.models) or "(none)"
            lines.append(f"{p.name}{where}: {names}  ({p.uses})")
        return Lines(lines)

    def _status(self, words: list[str], rest: str) -> Lines:
        """Providers and the model of each task, the validator (lfx, isolation), the session and
        Langflow; a bad setting is its one line instead (``UsageError``), never a traceback."""
        _check_environment()
        from lfassist_jupyter.errors import LfAssistError
        from lfassist_jupyter.providers import check_config

        lines: list[str] = []
        cfg = check_config()
        if cfg["configured"]:
            try:
                (chosen,) = self.workspace.configured_providers(
                    provider=self.provider,
                    model=self.model,
                    intent_model=self.intent_model,
                    only=cfg["default_provider"],
                    ask=False,
                )
            except LfAssistError as exc:  # e.g. a script file that is not JSON: its line, not a traceback
                lines.append(f"Providers: {', '.join(cfg['configured_providers'])}: {exc}")
            else:
                where = f" at {chosen.base_url}" if chosen.base_url else ""
                lines.append(
                    f"Providers: {', '.join(cfg['configured_providers'])} (default {cfg['default_provider']}{where}, "
                    f"{chosen.uses})"
                )
        else:
            from lfassist_jupyter.providers import NO_PROVIDER_MESSAGE

            lines.append(f"Providers: none. {NO_PROVIDER_MESSAGE}")
        lines += self._validator_lines()
        lines.append(f"Session: {self._session_id or 'new on first request'}")
        connecting = self.workspace.auto_connect()
        if self.langflow is None:
            lines.append(connecting or "Langflow: not connected (%assist connect URL, or LANGFLOW_URL)")
        else:
            checks = "server validation on" if self.server_validation else "server validation off"
            lines.append(
                f"Langflow: connected to {self.langflow.public_url} (Langflow {self.langflow.version}, "
                f"{self.langflow.auth}, {checks})"
            )
        return Lines(lines)

    def _validator_lines(self) -> list[str]:
        """The sandbox's state, and a warning when its interpreter has no lfx (the ``[lfx]`` extra)."""
        from lfassist_jupyter.sandbox.lfx_check import lfx_missing

        if _warmup is not None:
            _warmup.join(2)  # the spawn itself takes milliseconds; do not report "stopped" while it runs
        validator = self.workspace.local_validator()
        info = validator.info() if hasattr(validator, "info") else None
        if info is None:
            return [f"Validator: {type(validator).__name__}"]
        version = f", lfx {info['lfx_version']}" if info["lfx_version"] else ""
        lines = [f"Validator: {info['state']}{version} ({info['python']}, timeout {info['timeout']:g} s)"]
        missing = lfx_missing(info["python"])
        if missing:
            lines.append(f"  Warning: {missing}")
        elif info["error"]:
            lines.append(f"  {info['error']}")
        if info.get("isolation") == "reduced":  # never silent: see sandbox/_isolation.py
            lines.append(f"  reduced isolation: {info['isolation_reason']}")
        return lines

    def _connect(self, words: list[str], rest: str) -> Lines:
        import argparse

        from lfassist_jupyter.errors import LfAssistError
        from lfassist_jupyter.langflow import LangflowClient

        parser = argparse.ArgumentParser(prog="%assist connect", add_help=False)
        parser.add_argument("url", nargs="?")
        parser.add_argument("--api-key")
        parser.add_argument("--ask-key", action="store_true")
        parser.add_argument("--no-server-validation", action="store_true")
        try:
            args = parser.parse_args(words)
        except SystemExit as exc:
            raise UsageError("Usage: %assist connect URL [--api-key KEY | --ask-key] [--no-server-validation]") from exc
        lines: list[str] = []
        key = args.api_key
        if key:
            lines.append("Note: the key is now part of this cell's source; prefer LANGFLOW_API_KEY or --ask-key.")
        if args.ask_key:
            import getpass

            key = getpass.getpass("Langflow API key: ")
        try:
            client = LangflowClient(url=args.url, api_key=key or None).connect()
        except LfAssistError as exc:
            return Lines([*lines, f"Not connected: {exc}"])
        self.server_validation = not args.no_server_validation
        self.workspace.connect(client, server_validation=self.server_validation)
        return Lines([*lines, f"Connected to Langflow {client.version} at {client.public_url} ({client.auth})."])

    def _components(self, words: list[str], rest: str) -> Lines:
        return self._list_registered("components", "%%assist --register", lambda lf: lf.list_components())

    def _export(self, words: list[str], rest: str) -> Lines:
        """``%assist export DIR [CLASS ...] [--name NAME]``: this conversation's validated components
        (the latest version of each, or the named ones) as a Langflow extension bundle."""
        import argparse

        from lfassist_jupyter.errors import ConfigError

        parser = argparse.ArgumentParser(prog="%assist export", add_help=False)
        parser.add_argument("directory")
        parser.add_argument("classes", nargs="*")
        parser.add_argument("--name")
        try:
            args = parser.parse_args(shlex.split(rest))
        except (SystemExit, ValueError) as exc:
            raise UsageError("Usage: %assist export DIR [CLASS ...] [--name NAME]") from exc
        available = self.workspace.session_components(self._session_id) if self._session_id else {}
        if not available:
            return Lines(["Nothing to export: this conversation has no validated component yet (ask with %%assist)."])
        unknown = [c for c in args.classes if c not in available]
        if unknown:
            raise UsageError(
                f"No validated component named {', '.join(unknown)}; this conversation has: {', '.join(available)}."
            )
        codes = [available[c] for c in args.classes or available]
        try:
            exported = self.workspace.export_extension(args.directory, codes, name=args.name)
        except ConfigError as exc:
            return Lines([f"Not exported: {exc}"])
        return Lines(exported.lines(), exported)

    def _list_registered(self, what: str, how: str, fetch: Any) -> Lines:
        """What notebooks registered in the connected Langflow (``what``: components or flows),
        one line per item, and the items as the value; a dead or lying server is one line,
        never a traceback."""
        from lfassist_jupyter.errors import LfAssistError

        if self.langflow is None:
            return Lines(["Not connected: use `%assist connect URL` first."])
        try:
            items = fetch(self.langflow)
        except LfAssistError as exc:
            return Lines([f"Could not list {what}: {exc}"])
        lines = [] if items else [f"No {what} registered from notebooks yet (use {how})."]
        lines += [f"  {item['name']}  (id {item['id']})" for item in items]
        return Lines(lines, items)

    def _undo(self, words: list[str], rest: str) -> Lines:
        """``%assist undo``: the conversation's flow goes back to its version before the last edit."""
        assistant = self._assistant
        if assistant is None and self._session_id is not None:
            assistant = self._assistant = self.workspace.assistant(self._session_id)
        if assistant is None:
            return Lines(["Nothing to undo: no flow in this conversation yet."])
        return Lines([assistant.undo()])

    def _history(self, words: list[str], rest: str) -> Lines:
        lines = []
        if self._assistant is not None:
            lines.append(f"Session {self._assistant.session_id}:")
            lines += [f"  {m.role:9} {m.summary()}" for m in self.workspace.transcript(self._assistant.session_id)]
        stored = self.workspace.store.list()
        if stored:
            lines.append("Stored sessions (newest first):")
            lines += [f"  {s['id']}  {s['turns']} turns  {s['title']}" for s in stored]
        elif self._assistant is None:
            lines.append("No conversation yet.")
        return Lines(lines)

    # -- %%assist_validate ----------------------------------------------------------------

    @magic_arguments()
    @argument("--no-smoke", action="store_true", help="skip calling the outputs with sample inputs")
    @argument("--timeout", type=float, default=None, help="seconds the validation may take")
    @argument(
        "--fix",
        action="store_true",
        help="repair mechanical mistakes (no model call) and show the repaired code and the changes",
    )
    @cell_magic
    def assist_validate(self, line: str, cell: str) -> Any:
        """Validate the Langflow component in the cell body, in the sandbox, and show the report.

        With ``--fix``, a failed component goes through the zero-call repair pass (the one the
        assistant runs before a model retry); the repaired code is shown with one line per change
        if it validates.  The cell itself is never changed."""
        args = _parse(self.assist_validate, line)
        if args is None:
            return Lines([help_for("%%assist_validate")]).show()
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.sandbox.client import validate_component

        timeout = args.timeout if args.timeout is not None else self.validator_timeout
        sandbox = self.workspace.local_validator()

        def validate(code: str) -> Any:
            return validate_component(code, smoke=not args.no_smoke, timeout=timeout, validator=sandbox)

        try:
            report = validate(cell)
        except ConfigError as exc:  # --timeout nan / inf / -1: one line, not a traceback
            raise UsageError(f"%%assist_validate: {exc}") from None
        if not args.fix:
            return report
        from lfassist_jupyter.core.component.repair import REPAIR_DEADLINE, FixResult, fix_component
        from lfassist_jupyter.core.offload import Skipped, repair_round
        from lfassist_jupyter.runtime import run_sync

        def in_worker(code: str, found: Any, facts: Any) -> Any:  # LibCST in the worker, with its deadline
            return run_sync(repair_round(code, found, facts, deadline=REPAIR_DEADLINE))

        reference = sandbox.reference() if not report.is_valid else None
        try:
            return fix_component(cell, report, validate, reference, repair=in_worker)
        except Skipped as exc:
            return FixResult(code=cell, changes=[], report=report, stopped=str(exc))

    # -- flows -------------------------------------------------------------------------------

    def _flow_result(self, result: AssistResult, args: Any) -> None:
        """A flow from ``%%assist``: insert a re-runnable ``%%assist_flow`` cell with its spec (not
        code), and register it on ``--register``."""
        spec = getattr(result, "spec", None)
        if result.status == "complete" and spec and self.insert and not args.no_insert:
            from lfassist_jupyter.ui.render.flow import flow_cell_source

            self.shell.set_next_input(flow_cell_source(spec), replace=False)
        flow = getattr(result, "flow", None)
        if args.register and result.status == "complete" and flow:
            from lfassist_jupyter.ui.flow_cell import FlowView, register

            view = FlowView(flow=flow, spec=spec, report=getattr(result, "flow_report", None))
            if view.report is None:
                view.report = self.workspace.validate_flow(flow)
            register(self.workspace, view)
            Lines([text for text, _ in view.notes]).show()

    def _flow(self, words: list[str], rest: str) -> Any:
        return self._flow_subcommand(words)

    def _flow_subcommand(self, words: list[str]) -> Any:
        """``%assist flow load FILE|ID [--provision]`` and ``%assist flows``."""
        from lfassist_jupyter.errors import ConfigError, LfAssistError

        provision = "--provision" in words
        words = [w for w in words if w != "--provision"]
        if words[:1] == ["list"]:
            from lfassist_jupyter.langflow.flows import list_flows

            return self._list_registered("flows", "%%assist_flow --register", list_flows)
        if len(words) != 2 or words[0] != "load":
            raise UsageError(
                "Usage: %assist flow load FILE.json [--provision]  (or the id of a flow in the connected Langflow)"
            )
        source: Any = words[1]
        from pathlib import Path

        if not Path(source).expanduser().exists() and self.langflow is not None and not source.endswith(".json"):
            from lfassist_jupyter.langflow.flows import get_flow

            try:
                source = get_flow(self.langflow, source)
            except LfAssistError as exc:
                raise UsageError(f"Could not load the flow from Langflow: {exc}") from exc
        if self._session_id is None:
            self._session_id = self.workspace.new_session_id()
        assistant = self._assistant
        if assistant is None or assistant.session_id != self._session_id:
            assistant = self._assistant = self.workspace.assistant(self._session_id)
        try:
            flow = assistant.load_flow(source)
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        from lfassist_jupyter.flows import flow_to_spec
        from lfassist_jupyter.ui.flow_cell import FlowView

        view = FlowView(flow=flow, report=self.workspace.validate_flow(flow, provision=True if provision else None))
        try:
            view.spec = flow_to_spec(flow, catalog=self.workspace.catalog())
        except Exception:
            view.spec = None
        view.notes.append(("Loaded into this conversation: the next %%assist request edits it.", True))
        return view

    @magic_arguments()
    @argument("--run", default=None, metavar="TEXT", help="probe-run the flow in the sandbox on TEXT")
    @argument(
        "--run-local",
        default=None,
        metavar="TEXT",
        help="run the flow for real on TEXT on this machine (calls its models, with the --env variables you allow)",
    )
    @argument(
        "--env",
        action="append",
        default=None,
        metavar="NAME",
        help="allow the variable NAME (from this kernel's environment) to a --run-local run; repeat for more",
    )
    @argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="HOST",
        help="let a --run-local run reach HOST[:PORT] besides its model providers; repeat for more",
    )
    @argument("--save", default=None, metavar="FILE", help="write a flow JSON file Langflow's UI imports")
    @argument("--register", action="store_true", help="create or update the flow in the connected Langflow")
    @argument("--name", default=None, help="the flow's name for --save and --register")
    @argument("--out", default=None, help="bind the FlowView to this variable")
    @argument("--quiet", action="store_true", help="show nothing unless something failed")
    @argument(
        "--provision",
        action="store_true",
        help="a flow that needs packages the sandbox lacks: judge it in a separate environment with lfx and "
        "those packages (built with uv, cached; the kernel's environment is not touched)",
    )
    @cell_magic
    def assist_flow(self, line: str, cell: str) -> Any:
        """Build, validate and draw the flow in the cell body (lfx's spec, or a flow JSON file path)."""
        args = _parse(self.assist_flow, line)
        if args is None:
            return Lines([help_for("%%assist_flow")]).show()
        from lfassist_jupyter.errors import ConfigError
        from lfassist_jupyter.ui.flow_cell import assist_flow

        try:
            view = assist_flow(
                self.workspace,
                cell,
                run=args.run,
                save_to=args.save,
                register_flow=args.register,
                name=args.name,
                run_local=args.run_local,
                env_names=args.env,
                allow_hosts=args.allow_host,
                provision=True if args.provision else None,
            )
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc
        if args.out:
            self.shell.user_ns[args.out] = view
        failed = not view.ok or (view.run is not None and not view.run.ok) or any(ok is False for _, ok in view.notes)
        if args.quiet and not failed:
            return None
        return view


_warmup: threading.Thread | None = None


def _check_environment() -> None:
    """Every ``LFASSIST_*`` variable checked (``settings.check_all`` with the provider table's names):
    a bad one is its one line, as a ``UsageError`` (no traceback), the same line every entry point gives."""
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.providers import check_environment

    try:
        check_environment()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


Handler = Callable[[AssistMagics, list[str], str], Any]
"""A subcommand: (magics, the words after its name, the rest of the line as typed) -> a display
object, or `Lines` to display."""

SUBCOMMANDS: dict[str, Handler] = {
    "status": AssistMagics._status,
    "models": AssistMagics._models,
    "new": AssistMagics._new,
    "history": AssistMagics._history,
    "connect": AssistMagics._connect,
    "disconnect": AssistMagics._disconnect,
    "components": AssistMagics._components,
    "export": AssistMagics._export,
    "flow": AssistMagics._flow,
    "flows": AssistMagics._flows,
    "undo": AssistMagics._undo,
    "panel": AssistMagics._panel,
    "stats": AssistMagics._stats,
    "eval": AssistMagics._eval,
    "help": AssistMagics._help,
}
"""``%assist WORD``: every subcommand, in the order the unknown-subcommand message lists them."""


def _warm_up_in_background() -> None:
    """Start the validation worker so the first validation does not wait for lfx to import."""
    global _warmup

    def start() -> None:
        try:
            from lfassist_jupyter.sandbox import warm_up

            warm_up()
        except Exception:
            pass

    _warmup = threading.Thread(target=start, name="lfassist-warmup", daemon=True)
    _warmup.start()
    # A process that exits right after %load_ext (a script, `ipython -c`) must not finalise while
    # this thread is inside an import: that aborts the interpreter ("exception not rethrown").
    atexit.register(_warmup.join, 10)


def load_ipython_extension(ipython: Any) -> None:
    from lfassist_jupyter.ui.formats import register_formatters

    ipython.register_magics(AssistMagics)
    register_formatters(ipython)  # how reports and results display (by name: imports nothing)
    _warm_up_in_background()
    if getattr(ipython, "kernel", None) is not None:  # "Langflow Assistant: Open" in JupyterLab's palette
        from lfassist_jupyter.ui.dock import register_command

        register_command()


def unload_ipython_extension(ipython: Any) -> None:
    reset_workspace()
    magics = ipython.magics_manager.magics
    for kind, name in (("line", "assist"), ("cell", "assist"), ("cell", "assist_validate"), ("cell", "assist_flow")):
        magics[kind].pop(name, None)
    ipython.magics_manager.registry.pop("AssistMagics", None)
