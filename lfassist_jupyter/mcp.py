"""The assistant as an MCP server: ``python -m lfassist_jupyter.mcp`` (stdio).

Agents (Claude Code, Codex, jupyter-ai's personas) reach tools over the Model Context Protocol.
This is a view beside ``ui/``: the same assistant, validators and ports, no Jupyter (it imports no
IPython, traitlets or widget library; ``.importlinter`` says so). Each tool answers the typed
result of the Python API as JSON (structured content): a ``ValidationReport``, a ``FlowReport``,
a ``FlowRun``, the assistant's outcome, a saved flow file's path and id, an exported bundle.

What sets it apart from Langflow's own MCP tools: component and flow code is only ever run in
this project's sandbox (a fresh confined child per request), never in the server's process.

- **Progress.** Long tools send MCP progress notifications (when the client asked for them with
  a progress token): the assistant's typed ``progress`` events (``generating``, ``validating``,
  ``retrying``...) map to one notification each, with the step's label as the message.
- **Secrets.** Every tool answer (results and errors alike) goes through ``redact_tree``: the
  values of secret-looking variables of the server's environment (also hex, base64, reversed)
  never appear in it.
- **Bad arguments.** A hostile or huge argument is one tool error naming the limit: a request is
  at most 8,000 characters (as in a notebook), a component's code 200 KB, a spec 100 KB, a flow
  20 MB of JSON, at most 50 components an export. A message the server cannot parse (not JSON,
  not JSON-RPC, nested deeper than the SDK's parser goes) is answered with a JSON-RPC error
  under its id (``_stdio``): the SDK's own transport only logged it, and the agent waited.
- **What it writes and reads.** Everything under the server's root (``--root``, default: the
  directory it started in), resolved with its links, never a hidden path (a component starting
  with a dot: ``.ipython``, ``.git``, an export's marker). ``save_flow`` writes flow files (a
  flow's known fields only, ``flows/save.py``) in the folder it owns, ``<root>/flows/``, and a
  request to run a flow file reads it from there; ``export_extension`` writes a bundle in a folder
  of the root outside it, and overwrites only files whose bytes it wrote. A path elsewhere is one
  line. No answer carries the value of a flow's password field (a key typed into a node).
- **URLs.** Every answer and log line goes through ``redact``: a URL's user part (a token in
  ``LANGFLOW_URL``) and credential-named query parameters never appear.
- **One conversation.** ``generate_component`` keeps one conversation per server process (in
  memory only): a follow-up ("now make it also lowercase the text") changes the last component,
  as in a notebook's session; ``new_conversation=true`` starts afresh.
- **Langflow.** With ``LANGFLOW_URL`` (and ``LANGFLOW_API_KEY``, or a server with auto-login), the
  ``register_component`` and ``register_flow`` tools are offered too.

Nothing is written to stdout but the protocol: the process's own fd 1 is pointed at stderr
once the transport holds the real one, so a stray print, or a child process that inherited
it, cannot corrupt the stream. The modules the tools use are imported before the server answers
(``import_tool_modules``): imported lazily, the first tool call raced the sandbox's warm-up thread for
``lfassist_jupyter.validation`` and answered ``KeyError``. A bug of ours is one line for the agent
and a redacted traceback on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.fastmcp import FastMCP  # the official MCP SDK (not this module)
from mcp.server.fastmcp.exceptions import ToolError

from lfassist_jupyter.providers.table import setup_variables

if TYPE_CHECKING:
    from lfassist_jupyter.flows.catalog import Catalog
    from lfassist_jupyter.sandbox.client import SandboxValidator

NAME = "lfassist"
MAX_REQUEST = 8_000  # the notebook's prompt limit (core/hygiene.py)
MAX_CODE = 200_000
MAX_SPEC = 100_000
MAX_FLOW = 20_000_000  # flows/files' cap on a flow file
MAX_TEXT = 8_000  # a probe run's input
MAX_PATH = 1_000
MAX_COMPONENTS = 50
FLOWS = "flows"
"""The folder of the root that ``save_flow`` owns: flow files are written (and read by name) there."""

log = logging.getLogger(__name__)

USAGE = f"""\
usage: python -m lfassist_jupyter.mcp [--root DIR] [--max-retries N]

The Langflow Assistant as an MCP server on stdio: generate Langflow components through your
configured model provider, validate component code in a sandbox, build, validate and probe-run
flows, save Langflow 1.13 flow files, export components as a Langflow extension bundle, and
register them with a Langflow server. No Jupyter needed.

options:
  --root DIR        where the tools may write (default: the current directory): save_flow writes flow
                    files in DIR/flows/, export_extension a bundle in a folder of DIR
  --max-retries N   validation attempts of generate_component, 0..10 (default: LFASSIST_MAX_RETRIES or 3)
  -h, --help        show this help and exit

environment: {" / ".join(setup_variables())} (the model provider,
as in the notebook; LFASSIST_PROVIDER, LFASSIST_MODEL), LANGFLOW_URL and LANGFLOW_API_KEY (offer the
register tools), LFASSIST_SANDBOX, LFASSIST_VALIDATOR_TIMEOUT (the sandbox).

Add it to Claude Code:
  claude mcp add lfassist -- python -m lfassist_jupyter.mcp
Add it to jupyter-ai (v3: .jupyter/mcp_settings.json at the root JupyterLab serves; restart JupyterLab):
  {{"mcp_servers": [{{"name": "lfassist", "command": "python", "args": ["-m", "lfassist_jupyter.mcp"]}}]}}

Tools: generate_component, validate_component, build_flow, validate_flow, probe_run_flow,
save_flow, export_extension (and register_component, register_flow with LANGFLOW_URL set).
Limits: a request {MAX_REQUEST:,} characters, code {MAX_CODE // 1000} KB, a spec {MAX_SPEC // 1000} KB,
a flow {MAX_FLOW // 1_000_000} MB, {MAX_COMPONENTS} components an export.
"""


class ToolFailure(Exception):
    """A tool's answer to bad input or a failure: one line, redacted, shown to the agent as a tool error."""


# -- checks ------------------------------------------------------------------------------------


def _text(value: Any, what: str, limit: int, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ToolFailure(f"{what} must be a string, not {type(value).__name__}.")
    if len(value) > limit:
        raise ToolFailure(f"{what} is {len(value):,} characters; at most {limit:,} are accepted.")
    if not empty and not value.strip():
        raise ToolFailure(f"{what} is empty.")
    return value


def _flow(value: Any) -> dict[str, Any]:
    """Langflow flow JSON given as an object or as its text, capped and shape-checked."""
    if isinstance(value, str):
        _text(value, "flow", MAX_FLOW)
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise ToolFailure(f"flow is not JSON: {str(exc)[:200]}") from None
    elif isinstance(value, dict):
        try:
            size = len(json.dumps(value))
        except (TypeError, ValueError, RecursionError):
            raise ToolFailure("flow is not plain JSON (or is nested too deeply).") from None
        if size > MAX_FLOW:
            raise ToolFailure(f"flow is {size:,} bytes of JSON; at most {MAX_FLOW:,} are accepted.")
    if not isinstance(value, dict):
        raise ToolFailure("flow must be Langflow flow JSON: an object with data.nodes and data.edges.")
    data = value.get("data", value)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ToolFailure("flow has no data.nodes: is it Langflow flow JSON?")
    if not isinstance(data.get("edges", []), list):
        raise ToolFailure("flow's data.edges is not a list.")
    return value


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") for part in parts)


def _flow_name(flow: dict[str, Any], name: str | None) -> str:
    """The name a saved or registered flow gets: the one given, the flow's own, else one that says
    an agent made it (the notebook's default says "from a notebook")."""
    own = flow.get("name")
    return name or (own if isinstance(own, str) and own.strip() else "Flow from an agent")


def _inside(root: Path, path: Any, what: str, *, folder: Path | None = None) -> Path:
    """Where ``path`` (relative to ``folder``, default ``root``, or absolute) is, resolved with its
    links, when that is inside ``folder`` (and ``root``) and no part of it is hidden (starts with a
    dot: ``.ipython``, ``..``, an export's marker), before or after the links are resolved; else
    one line.  ``folder`` itself must be a real folder of the root (not a link out of it)."""
    folder = folder or root
    _text(path, what, MAX_PATH)
    if "\x00" in path:
        raise ToolFailure(f"{what} contains a NUL character.")
    given = Path(path).expanduser()
    where = f"a path in {folder}" if folder == root else f"a file in {folder}"
    if _hidden(given.parts):
        raise ToolFailure(f"{what} {path!r} names a hidden path (a part starting with a dot); give {where}.")
    real_folder = folder.resolve()
    if not real_folder.is_relative_to(root) or _hidden(real_folder.relative_to(root).parts):
        raise ToolFailure(f"{folder} leaves the server's root {root} (a link?); nothing there is read or written.")
    target = (given if given.is_absolute() else folder / given).resolve()
    if target == real_folder:
        raise ToolFailure(f"{what} {path!r} names {folder} itself; give {where}.")
    if not target.is_relative_to(real_folder):
        raise ToolFailure(f"{what} {path!r} is outside {folder}; give {where}.")
    if _hidden(target.relative_to(root).parts):
        raise ToolFailure(f"{what} {path!r} leads to a hidden path (through a link); give {where}.")
    return target


def flow_file(root: str | Path, name: str) -> Path:
    """Where a flow file named ``name`` lives under ``root``: ``<root>/flows/<name>.json``, by the
    rules ``save_flow`` applies (no hidden part, nothing out of the folder); ``ToolFailure``, one
    line, else.  The persona's ``/save`` writes there too."""
    return _flow_path(Path(root).expanduser().resolve(), name)


def _flow_path(root: Path, path: Any, what: str = "path") -> Path:
    """A flow file's place: in ``<root>/flows/`` (``qa``, ``flows/qa.json`` and the absolute path
    all name ``<root>/flows/qa.json``), with ``.json`` added, by ``_inside``'s rules."""
    from lfassist_jupyter.flows.save import flow_file_path

    _text(path, what, MAX_PATH)
    if "\x00" in path:
        raise ToolFailure(f"{what} contains a NUL character.")
    given = Path(path).expanduser()
    if not given.is_absolute():
        parts = given.parts[1:] if given.parts[:1] == (FLOWS,) else given.parts
        given = Path(*parts) if parts else Path()
    if not given.name or given.name in (".", ".."):
        raise ToolFailure(f"{what} {path!r} names a folder; give a file name in {root / FLOWS}.")
    return _inside(root, str(flow_file_path(given)), what, folder=root / FLOWS)


# -- the server ---------------------------------------------------------------------------------


def _clean(obj: Any) -> Any:
    """A tool's answer as JSON with every secret value of this environment redacted, and no
    password field's value (a key typed into a flow's node: ``_without_keys``)."""
    from lfassist_jupyter.redaction import redact_tree

    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    return redact_tree(_without_keys(json.loads(json.dumps(obj, default=str))))


def _without_keys(tree: Any) -> Any:
    """``tree`` with the ``value`` of every password field emptied, wherever a flow sits in an
    answer (a run's flow read from a file, a built flow): a key typed into a node never comes
    back. A field that loads from a global variable keeps its value, the variable's *name*
    (what Register sends, so Langflow fills the key in), as the session keeps it."""
    if isinstance(tree, list):
        return [_without_keys(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    out = {k: _without_keys(v) for k, v in tree.items()}
    if out.get("password") is True and not out.get("load_from_db") and out.get("value") not in (None, ""):
        out["value"] = ""
    return out


Reporter = Callable[[float, "float | None", str], Awaitable[None]]
"""Sends one progress notification of the request being answered (its MCP server's own call)."""

_reporter: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar("lfassist_mcp_reporter", default=None)
"""The progress channel of the tool call in flight, set by the server that serves it (``serve_tool``):
the tools are written once and served by two MCP servers, each with its own context object."""


async def _progress(done: float, total: float | None, message: str) -> None:
    """One MCP progress notification (sent only when the client asked, with a progress token)."""
    report = _reporter.get()
    if report is None:
        return
    with contextlib.suppress(Exception):  # a client that went away: the tool still answers
        await report(done, total, message)


def _outgoing(the_flow: dict[str, Any], what: str) -> None:
    """Only custom code the security scan passes in reject mode leaves for Langflow (a saved file,
    a registration): built-in code is known from the sandbox's catalogue (issue 30)."""
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.flows.code_checks import outgoing_flow_problem

    try:
        problem = outgoing_flow_problem(the_flow, _catalog())
    except ConfigError as exc:
        problem = f"its code cannot be checked without the component catalogue ({exc})"
    if problem is not None:
        raise ToolFailure(f"{problem}; {what}.")


Tool = Callable[..., Awaitable[Any]]
Register = Callable[[Tool], Any]
"""Collects a tool function (what ``tools`` hands each group)."""


def tools(root: str | Path | None = None, *, max_retries: int | None = None) -> list[Tool]:
    """The tools, defined once for every MCP server that serves them: this module's stdio server
    (``build_server``) and Jupyter's own (``jupyter_ai/tools.py``, through jupyter-server-mcp's
    entry point). Each is an async function whose name, arguments and docstring are the tool's; it
    answers a typed result or raises ``ToolFailure``/``LfAssistError``, and reports progress
    through ``_progress``. A server serves each through ``serve_tool`` (redacted JSON, one-line
    errors). Files are written and read under ``root`` only; the register tools are there only
    when ``LANGFLOW_URL`` is set (the gate)."""
    base = Path(root or os.getcwd()).expanduser().resolve()
    found: list[Tool] = []

    def tool(fn: Tool) -> Tool:
        found.append(fn)
        return fn

    _component_tools(tool, max_retries, base)
    _flow_tools(tool)
    _file_tools(tool, base)
    if os.environ.get("LANGFLOW_URL"):
        _langflow_tools(tool)
    return found


def build_server(root: str | Path | None = None, *, max_retries: int | None = None) -> FastMCP:
    """The MCP server with its tools (``tools``: register tools only when ``LANGFLOW_URL`` is set),
    in the order ``list_tools`` answers."""
    server = FastMCP(
        NAME,
        instructions=(
            "Langflow components and flows, validated in a sandbox. Write a component with "
            "generate_component (or your own code, then validate_component until is_valid); build "
            "flows from lfx's compact spec with build_flow, check them with validate_flow and "
            "probe_run_flow; save_flow writes a Langflow 1.13 flow file; export_extension makes "
            "a pip-installable Langflow extension of validated components."
        ),
    )
    for fn in tools(root, max_retries=max_retries):
        # The docstring without its indentation, as Jupyter's MCP server (FastMCP 3) gives it: the
        # SDK's FastMCP would send the source's indentation to the agent.
        description = inspect.cleandoc(fn.__doc__ or "")
        server.tool(description=description)(serve_tool(fn, ToolError, lambda: server.get_context().report_progress))
    return server


def serve_tool(
    fn: Tool,
    error: type[Exception],
    reporter: Callable[[], Reporter | None],
    *,
    engine: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> Tool:
    """``fn`` as an MCP server serves it: its answer redacted JSON, every failure one redacted line
    raised as that server's ``error`` (its ``ToolError``), progress sent through ``reporter()``
    (the call's own channel, read when the call starts).  Name, arguments and description are the
    function's own (``functools.wraps``: a server reads them through ``__wrapped__``).

    ``engine``: the loop the tool runs on, when not the server's own (a server that shares its loop
    with more than MCP, as Jupyter's does: the assistant's work never holds that loop); progress
    then goes back to the server's loop, where its channel lives."""

    @functools.wraps(fn)
    async def wrapped(*args: Any, **kwargs: Any) -> dict[str, Any]:
        from lfassist_jupyter.artifacts.flow import one_line
        from lfassist_jupyter.errors import LfAssistError
        from lfassist_jupyter.redaction import redact_text

        try:
            report = reporter()
        except Exception:  # no request context (a direct call): no progress, the tool still answers
            report = None
        if engine is not None and report is not None:
            report = _from_another_loop(report, asyncio.get_running_loop())
        token = _reporter.set(report)
        try:
            if engine is None:
                return _clean(await fn(*args, **kwargs))
            # The context (the reporter) travels with the coroutine: run_coroutine_threadsafe copies it.
            return _clean(await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), engine())))
        except (ToolFailure, LfAssistError) as exc:
            raise error(one_line(redact_text(str(exc)), 2000)) from None
        except Exception as exc:  # a bug of ours: one line for the agent, the traceback logged
            import traceback

            log.error("%s failed:\n%s", fn.__name__, redact_text(traceback.format_exc()))
            said = one_line(f"{type(exc).__name__}: {exc}", 500)
            raise error(redact_text(f"{said} (a bug of the lfassist server; its log has the details)")) from None
        finally:
            _reporter.reset(token)

    return wrapped


def _from_another_loop(report: Reporter, home: asyncio.AbstractEventLoop) -> Reporter:
    """``report`` (bound to the loop ``home``) callable from a tool running on another loop."""

    async def hop(done: float, total: float | None, message: str) -> None:
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(report(done, total, message), home))

    return hop


def _sandbox() -> SandboxValidator:
    """The process's one validation sandbox, the shared one (started on first use, or by
    ``_warm_up``): the server is an edge, and every tool hands this one down."""
    from lfassist_jupyter.sandbox import shared

    return shared()


def _catalog() -> Catalog:
    """A fresh flow catalogue of the server's sandbox (``ConfigError`` when lfx is missing there)."""
    from lfassist_jupyter.flows.catalog import default_catalog

    return default_catalog(_sandbox())


def _agent_flows(base: Path) -> Any:
    """The flow files a request may run ("run qa.json on hello"): those of ``<root>/flows/``
    (where ``save_flow`` writes), a name or path resolved there by ``_flow_path``'s rules; a path
    elsewhere (``/any/path.json``) names no flow, and the run answers that in one line."""
    from lfassist_jupyter.flows.library import FolderLibrary

    class AgentFlows(FolderLibrary):
        def path(self, flow_id: str) -> Path:
            try:
                return _flow_path(base, flow_id, "flow")
            except ToolFailure as exc:
                raise ValueError(str(exc)) from None

    return AgentFlows(base / FLOWS)


def _assistant(base: Path, retries: int) -> Any:
    """The assistant of ``generate_component``: no session files, and a request to run a flow
    file reads it from the agent's flows only (``_agent_flows``)."""
    from lfassist_jupyter.core.assistant import Assistant
    from lfassist_jupyter.core.flow.run_request import RunFlowPipeline

    class AgentAssistant(Assistant):
        def run_pipeline(self, intent: Any, options: Any = None) -> Any:
            pipeline = super().run_pipeline(intent, options)
            if isinstance(pipeline, RunFlowPipeline):
                pipeline.files = _agent_flows(base)
            return pipeline

    sandbox = _sandbox()
    return AgentAssistant(max_retries=retries, session_store=False, validator=sandbox, sandbox=sandbox)


def _component_tools(tool: Register, max_retries: int | None, base: Path) -> None:
    """``generate_component`` (the assistant, one conversation per server) and ``validate_component``."""
    conversation: dict[str, Any] = {}  # this server process's one conversation: its Assistant
    one_at_a_time = asyncio.Lock()  # a conversation takes one request at a time

    @tool
    async def generate_component(
        request: str, max_attempts: int | None = None, new_conversation: bool = False
    ) -> dict[str, Any]:
        """Write a Langflow custom component from a plain-language request with the configured model
        provider, validate it in the sandbox (lfx builds it, every output is called with sample
        inputs) and repair it until it validates. Returns the outcome: kind "component" with code,
        class_name, validated, attempts, error and the last ValidationReport (a request for a flow
        or a question answers with kind "flow" or "answer").

        The server keeps one conversation for as long as it runs (in memory, never on disk): a
        follow-up such as "now make it also lowercase the text" changes the component this tool
        answered last. new_conversation=true forgets it and starts afresh."""
        from lfassist_jupyter.core.component.pipeline import check_max_retries
        from lfassist_jupyter.core.events import step_label
        from lfassist_jupyter.core.options import RequestOptions
        from lfassist_jupyter.settings import read

        _text(request, "request", MAX_REQUEST)
        retries = max_attempts if max_attempts is not None else max_retries
        if retries is None:
            retries = read("max_retries")
        retries = check_max_retries(retries)
        async with one_at_a_time:
            assistant = None if new_conversation else conversation.get("assistant")
            if assistant is None:
                assistant = conversation["assistant"] = _assistant(base, retries)
            # The agent asked for a component: write one (no built-in offered instead).
            options = RequestOptions(reuse=False, max_retries=retries)
            outcome, done = None, 0
            async for event in assistant.stream(request, options):
                if event.event == "progress":
                    done += 1
                    label = f"{step_label(event.step, event.reduced_isolation)} ({event.attempt}/{event.max_attempts})"
                    await _progress(done, None, label)
                elif event.event == "complete":
                    outcome = event.outcome
                elif event.event in ("error", "cancelled"):
                    raise ToolFailure(event.message)
        if outcome is None:
            raise ToolFailure("the assistant ended without an answer.")
        return {"status": "complete", **outcome.model_dump(mode="json")}

    @tool
    async def validate_component(code: str, smoke: bool = True, security: str = "reject") -> dict[str, Any]:
        """Validate Langflow component code: static and security checks, then lfx builds it as
        Langflow's POST /api/v1/custom_component does and (smoke) every output is called with typed
        sample inputs, in a fresh sandboxed process. Returns the ValidationReport: is_valid, phase,
        error (short, for a retry), findings, inputs, outputs, smoke. security: "reject" (unsafe
        calls fail it, as for generated code), "report" (listed as policy findings) or "off"."""
        from lfassist_jupyter.sandbox.client import avalidate_component

        _text(code, "code", MAX_CODE)
        if security not in ("reject", "report", "off"):
            raise ToolFailure(f"security must be reject, report or off, not {security[:40]!r}.")
        await _progress(0, 1, "Validating in the sandbox")
        report = await avalidate_component(code, smoke=bool(smoke), security=security, validator=_sandbox())
        from lfassist_jupyter.core.events import step_label

        said = step_label("validated", report.reduced_isolation) if report.is_valid else "Validation failed"
        await _progress(1, 1, said)
        return report


def _flow_tools(tool: Register) -> None:
    """``build_flow``, ``validate_flow`` and ``probe_run_flow``: flows in the sandbox, nothing written."""

    @tool
    async def build_flow(spec: str) -> dict[str, Any]:
        """Build Langflow flow JSON from lfx's compact spec (name:, nodes: ID: ComponentType, edges:
        A.output -> B.input, config: B.field: value) with lfx's own builder in the sandbox, repair
        wiring mistakes deterministically, and validate it. Returns {flow, spec, ok, errors,
        warnings, changes, report (FlowReport: is_valid, errors, needs)}."""
        from lfassist_jupyter.flows import build_flow as build
        from lfassist_jupyter.flows import validate_flow

        _text(spec, "spec", MAX_SPEC)
        await _progress(0, 2, "Building the flow")
        catalog = await asyncio.to_thread(_catalog)
        built = await asyncio.to_thread(lambda: build(spec, catalog=catalog))
        await _progress(1, 2, "Validating the flow")
        flow = built.flow
        report = await asyncio.to_thread(lambda: validate_flow(flow, catalog=catalog)) if flow is not None else None
        await _progress(2, 2, "Flow built" if built.ok else "Flow has problems")
        return {**built.model_dump(mode="json"), "report": report.model_dump(mode="json") if report else None}

    @tool
    async def validate_flow(flow: dict[str, Any] | str, provision: bool = False, probe: bool = False) -> dict[str, Any]:
        """Validate Langflow flow JSON (an object, or its text) as Langflow would run it: nodes,
        handles and types, required inputs, loops and branches, node code that lfx loads. Returns the
        FlowReport: verdict (sound | broken | not_judged: the sandbox lacks a package or a model
        provider's bundle the flow needs, named in missing_packages; never valid then), is_valid,
        errors (each naming the node and the fix), warnings, needs (a model, a key, a connection: what to provide
        before a real run), provision (what judging it elsewhere would install, and its size),
        judged_in. provision=true judges a not-judged flow in a separate environment with lfx and
        those packages (built with uv and cached; the server's own environment is not touched).
        probe=true also probe-runs a sound flow (models stubbed, no network): a node that fails there
        for the flow's own fault makes it broken, naming the node and lfx's error."""
        from lfassist_jupyter.flows import validate_flow as check

        the_flow = _flow(flow)
        return await asyncio.to_thread(
            lambda: check(the_flow, catalog=_catalog(), provision=True if provision else None, probe=probe)
        )

    @tool
    async def probe_run_flow(flow: dict[str, Any] | str, input_text: str = "hello") -> dict[str, Any]:
        """Probe-run a flow in the sandbox on input_text with lfx's own runner: model and keyed-API
        nodes are replaced by deterministic stubs (no keys, no network). Returns the FlowRun: ok,
        text (the chat output), outputs, stubbed, error."""
        the_flow = _flow(flow)
        _text(input_text, "input_text", MAX_TEXT, empty=True)
        await _progress(0, 1, "Probe run")
        run = await asyncio.to_thread(_sandbox().probe_run, the_flow, input_text)
        await _progress(1, 1, "Probe run done" if run.ok else "Probe run failed")
        return run


def _file_tools(tool: Register, base: Path) -> None:
    """``save_flow`` and ``export_extension``: files written under the server's root ``base`` only."""

    @tool
    async def save_flow(flow: dict[str, Any] | str, path: str, name: str | None = None) -> dict[str, Any]:
        """Write a flow as a Langflow 1.13 flow file (stable id, lfx export's normalisation: key
        fields cleared, a flow's known fields only): Langflow's Upload imports it, `lfx validate`
        checks it, `lfx push` upserts it. Flow files live in the server's flows folder, <root>/flows/:
        path is a file name there ("qa" and "flows/qa.json" both write <root>/flows/qa.json;
        ".json" is added; no hidden names). The id is the flow's own, else the overwritten file's,
        else new. Returns {path, id, id_source}."""
        from lfassist_jupyter.flows.save import write_flow_file

        the_flow = _flow(flow)
        target = _flow_path(base, path)
        if name is not None:
            _text(name, "name", 200)
        await asyncio.to_thread(_outgoing, the_flow, "nothing was written")
        saved = await asyncio.to_thread(write_flow_file, the_flow, target, name=_flow_name(the_flow, name))
        return {"path": str(saved.path), "id": saved.id, "id_source": saved.id_source}

    @tool
    async def export_extension(components: list[str], directory: str, name: str | None = None) -> dict[str, Any]:
        """Export component code as a Langflow 1.13 extension bundle (the layout `lfx extension init`
        makes: extension.json, components/, tests/ with a test per component from its smoke run,
        pyproject.toml) in directory (relative to the server's root). Each component is validated
        first (security scan in reject mode); those that fail are listed in skipped. Install it
        with `pip install DIR` into Langflow's environment. A file already there is overwritten only
        when its bytes are what an earlier export wrote (listed in not_overwritten otherwise); the
        directory is not hidden and not in the flows folder. Returns {path, extension_id, bundle,
        components, kept, skipped, files, not_overwritten}."""
        from lfassist_jupyter.langflow.extension import aexport_extension

        if not isinstance(components, list) or not components or len(components) > MAX_COMPONENTS:
            raise ToolFailure(f"components must be a list of 1 to {MAX_COMPONENTS} code strings.")
        for i, code in enumerate(components):
            _text(code, f"components[{i}]", MAX_CODE)
        target = _inside(base, directory, "directory")
        if target.is_relative_to((base / FLOWS).resolve()):
            raise ToolFailure(f"directory {directory!r} is in the flows folder {base / FLOWS}; choose another.")
        if name is not None:
            _text(name, "name", 200)
        await _progress(0, 1, f"Validating {len(components)} component(s) and writing the bundle")
        exported = await aexport_extension(target, components, name=name, validator=_sandbox())
        await _progress(1, 1, "Exported")
        return {**vars(exported), "path": str(exported.path), "files": [str(f) for f in exported.files]}


def _langflow_tools(tool: Register) -> None:
    """``register_component`` and ``register_flow``: the Langflow of ``LANGFLOW_URL``."""
    client_box: list[Any] = []

    async def client() -> Any:
        from lfassist_jupyter.langflow import LangflowClient

        if not client_box:
            client_box.append(await LangflowClient().aconnect())
        return client_box[0]

    @tool
    async def register_component(code: str) -> dict[str, Any]:
        """Save component code in the Langflow of LANGFLOW_URL (updated in place when one of the same
        name was registered from here). Only code the security scan passes in reject mode is sent.
        Returns {id, name, class_name, created, url}."""
        from lfassist_jupyter.validation.static import validate_static

        _text(code, "code", MAX_CODE)
        refused = [f.message for f in validate_static(code, security="reject").findings if f.phase == "security"]
        if refused:
            raise ToolFailure(f"the security scan refuses this code ({refused[0]}); it was not sent.")
        registered = await (await client()).aregister(code)
        return vars(registered)

    @tool
    async def register_flow(flow: dict[str, Any] | str, name: str | None = None) -> dict[str, Any]:
        """Create or update a flow in the Langflow of LANGFLOW_URL under its stable id (the flow's
        own, else ours of the same name, else the id Langflow gives; save_flow after this keeps
        it). Returns {id, name, created, url, link}."""
        from lfassist_jupyter.langflow.flows import aregister_flow

        the_flow = _flow(flow)
        if name is not None:
            _text(name, "name", 200)
        await asyncio.to_thread(_outgoing, the_flow, "nothing was sent")
        registered = await aregister_flow(await client(), the_flow, _flow_name(the_flow, name))
        return {**vars(registered), "link": registered.link}


# -- the process --------------------------------------------------------------------------------


async def _serve(server: FastMCP) -> None:
    """Serve on stdio, with the protocol on a private copy of stdout and fd 1 sent to stderr."""
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray writes (a print, a child's output) go to stderr, not into the protocol
    sys.stdout = sys.stderr
    async with _stdio(protocol) as (read_stream, write_stream):
        low = server._mcp_server  # FastMCP's documented run_stdio_async does exactly this
        await low.run(read_stream, write_stream, low.create_initialization_options())


@contextlib.asynccontextmanager
async def _stdio(protocol: Any) -> Any:
    """The SDK's stdio transport (``mcp.server.stdio.stdio_server``, line for line), except for a
    line it cannot parse: the SDK hands the parse error to the server, which only logs it, so the
    agent waits for an answer that never comes (a message nested past pydantic's JSON recursion
    limit, 200 levels, is one). Here such a line is answered with a JSON-RPC error (``_refusal``)."""
    from io import TextIOWrapper

    import anyio
    from mcp.shared.message import SessionMessage

    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(protocol, encoding="utf-8", write_through=True))
    read_send, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_receive = anyio.create_memory_object_stream[Any](0)
    refusals = write_stream.clone()

    async def reader() -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            async with read_send, refusals:
                async for line in stdin:
                    message = _parse(line)
                    if isinstance(message, str):
                        await refusals.send(message)
                    elif message is not None:
                        await read_send.send(SessionMessage(message))

    async def writer() -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            async with write_receive:
                async for item in write_receive:
                    text = (
                        item
                        if isinstance(item, str)
                        else item.message.model_dump_json(by_alias=True, exclude_none=True)
                    )
                    await stdout.write(text + "\n")
                    await stdout.flush()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        yield read_stream, write_stream


def _parse(line: str) -> Any:
    """One line of the protocol: the JSON-RPC message, None for a blank line, or the JSON text of
    the error that answers it (``-32700`` not JSON, ``-32600`` not a JSON-RPC message or nested
    too deeply), under the message's id when it has one (else null, as JSON-RPC says)."""
    import mcp.types as types

    try:
        return types.JSONRPCMessage.model_validate_json(line)
    except Exception as exc:  # pydantic's ValidationError, whatever the line held
        problem = str(exc)
    if not line.strip():
        return None
    try:
        parsed: Any = json.loads(line)
    except RecursionError:
        parsed = None
        request_id = _top_level_id(line)
    except ValueError:
        return _refusal(None, types.PARSE_ERROR, "Parse error: the message is not JSON.")
    else:
        request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    if parsed is None or "recursion limit" in problem:
        why = (
            "Invalid request: the message is nested too deeply for the MCP SDK to read (about 200 levels); "
            "send a deep flow as JSON text (a string) instead."
        )
    else:
        why = "Invalid request: the message is JSON but not a JSON-RPC 2.0 request, notification or response."
    return _refusal(request_id, types.INVALID_REQUEST, why)


def _refusal(request_id: int | str | None, code: int, message: str) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}, separators=(",", ":")
    )


def _top_level_id(text: str) -> int | str | None:
    """The ``id`` member of the outermost object of JSON text too deep for ``json.loads``: a scan of
    its strings and brackets (regular expressions, linear), or None."""
    import re

    depth = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        kind = token.group()
        if kind in ("{", "["):
            depth += 1
        elif kind in ("}", "]"):
            depth -= 1
        elif depth == 1 and kind == '"id"':
            value = re.compile(r'\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")').match(text, token.end())
            if value:
                return json.loads(value.group(1))
    return None


TOOL_MODULES = (
    "lfassist_jupyter.artifacts.flow",
    "lfassist_jupyter.core.assistant",
    "lfassist_jupyter.core.component.pipeline",
    "lfassist_jupyter.core.events",
    "lfassist_jupyter.core.flow.run_request",
    "lfassist_jupyter.core.options",
    "lfassist_jupyter.errors",
    "lfassist_jupyter.flows",
    "lfassist_jupyter.flows.build",  # flows' lazy build_flow
    "lfassist_jupyter.flows.catalog",
    "lfassist_jupyter.flows.code_checks",
    "lfassist_jupyter.flows.library",
    "lfassist_jupyter.sandbox.probe",  # imported by the sandbox client on a probe run
    "lfassist_jupyter.flows.save",
    "lfassist_jupyter.flows.validate",  # flows' lazy validate_flow
    "lfassist_jupyter.langflow",
    "lfassist_jupyter.langflow.extension",
    "lfassist_jupyter.langflow.flows",
    "lfassist_jupyter.providers",  # the settings check before serving, and the provider table
    "lfassist_jupyter.providers.table",
    "lfassist_jupyter.redaction",
    "lfassist_jupyter.sandbox",  # shared(): the server's one sandbox
    "lfassist_jupyter.sandbox.client",
    "lfassist_jupyter.settings",
    "lfassist_jupyter.validation.security",  # imported by validate_static on its first call
    "lfassist_jupyter.validation.static",
)
"""What the tools import when called (every ``lfassist_jupyter`` module this file imports inside
a function, a test checks it), and the few those import on first use."""


def import_tool_modules() -> None:
    """Import what the tools need before the server answers anything: the first tool call, left
    to import lazily on the event loop, raced the warm-up thread importing the sandbox client.
    Two threads entering ``lfassist_jupyter.validation`` and its ``static`` module from opposite
    ends deadlock on the import locks; Python breaks the tie by handing one a partly imported
    module, the package's import fails and is removed from ``sys.modules``, and the tool answered
    ``KeyError: 'lfassist_jupyter.validation'`` (about 1 call in 6 with eight servers starting)."""
    import importlib

    for name in TOOL_MODULES:
        importlib.import_module(name)


def warm_up_sandbox() -> None:
    """Start the sandbox while the client connects: the first validation does not wait for lfx."""
    import threading

    def start() -> None:
        try:
            from lfassist_jupyter.sandbox import warm_up

            warm_up()
        except Exception as exc:  # the first validation starts it again, and says what is wrong
            from lfassist_jupyter.redaction import redact_text

            log.warning("the sandbox did not start ahead of the first call: %s", redact_text(str(exc)))

    threading.Thread(target=start, name="lfassist-mcp-warmup", daemon=True).start()


class _Redacted(logging.Filter):
    """Every log line of the server's process as it is shown: its secrets (``redact_text``) and any
    URL's credentials (httpx logs each request's URL, ``LANGFLOW_URL``'s user part included) cut."""

    def filter(self, record: logging.LogRecord) -> bool:
        from lfassist_jupyter.redaction import redact_text

        text = record.getMessage()
        if record.exc_info:  # a traceback is text like the rest: formatted here, then redacted
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        record.msg, record.args, record.exc_info, record.exc_text = redact_text(text), None, None, None
        return True


def _redact_logs() -> None:
    """The filter on every handler of the root logger (FastMCP puts its stderr handler there)."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(_Redacted())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lfassist_jupyter.mcp", add_help=False)
    parser.add_argument("--root")
    parser.add_argument("--max-retries", type=int)
    parser.add_argument("-h", "--help", action="store_true")
    args, unknown = parser.parse_known_args(argv)
    if args.help:
        sys.stdout.write(USAGE)
        return 0
    if unknown:
        sys.stderr.write(f"unknown arguments: {' '.join(unknown)}\n\n{USAGE}")
        return 2
    root = Path(args.root or os.getcwd()).expanduser()
    if not root.is_dir():
        sys.stderr.write(f"--root {root} is not a directory.\n")
        return 2
    if args.max_retries is not None and not 0 <= args.max_retries <= 10:
        sys.stderr.write("--max-retries must be between 0 and 10.\n")
        return 2
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.providers import check_environment

    try:  # a bad LFASSIST_* variable: its one line before serving, as every entry point says it
        check_environment()
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    server = build_server(root, max_retries=args.max_retries)
    _redact_logs()
    import_tool_modules()
    warm_up_sandbox()
    import anyio

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(_serve, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
