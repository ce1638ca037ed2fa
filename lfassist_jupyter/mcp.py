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
  20 MB of JSON, at most 50 components an export. Files are written only under the server's root
  (``--root``, default: the directory it started in); a path outside it is refused.
- **One conversation.** ``generate_component`` keeps one conversation per server process (in
  memory only): a follow-up ("now make it also lowercase the text") changes the last component,
  as in a notebook's session; ``new_conversation=true`` starts afresh.
- **Langflow.** With ``LANGFLOW_URL`` (and ``LANGFLOW_API_KEY``, or a server with auto-login), the
  ``register_component`` and ``register_flow`` tools are offered too.

Nothing is written to stdout but the protocol: the process's own fd 1 is pointed at stderr
once the transport holds the real one, so a stray print, or a child process that inherited
it, cannot corrupt the stream.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP  # the official MCP SDK (not this module)
from mcp.server.fastmcp.exceptions import ToolError

NAME = "lfassist"
MAX_REQUEST = 8_000  # the notebook's prompt limit (core/hygiene.py)
MAX_CODE = 200_000
MAX_SPEC = 100_000
MAX_FLOW = 20_000_000  # flows/files' cap on a flow file
MAX_TEXT = 8_000  # a probe run's input
MAX_PATH = 1_000
MAX_COMPONENTS = 50

USAGE = f"""\
usage: python -m lfassist_jupyter.mcp [--root DIR] [--max-retries N]

The Langflow Assistant as an MCP server on stdio: generate Langflow components through your
configured model provider, validate component code in a sandbox, build, validate and probe-run
flows, save Langflow 1.13 flow files, export components as a Langflow extension bundle, and
register them with a Langflow server. No Jupyter needed.

options:
  --root DIR        where save_flow and export_extension may write (default: the current directory)
  --max-retries N   validation attempts of generate_component, 0..10 (default: LFASSIST_MAX_RETRIES or 3)
  -h, --help        show this help and exit

environment: OPENAI_API_KEY / ANTHROPIC_API_KEY / OPENAI_BASE_URL / OLLAMA_HOST (the model provider,
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


def _inside(root: Path, path: Any, what: str) -> Path:
    """``path`` (relative to ``root``, or absolute) when it stays under ``root``; else refused."""
    _text(path, what, MAX_PATH)
    if "\x00" in path:
        raise ToolFailure(f"{what} contains a NUL character.")
    target = Path(path).expanduser()
    target = (target if target.is_absolute() else root / target).resolve()
    if not target.is_relative_to(root):
        raise ToolFailure(f"{what} {path!r} is outside the server's root {root}; paths are relative to it.")
    return target


# -- the server ---------------------------------------------------------------------------------


def _clean(obj: Any) -> Any:
    """A tool's answer as JSON with every secret value of this environment redacted."""
    from lfassist_jupyter.redaction import redact_tree

    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    return redact_tree(json.loads(json.dumps(obj, default=str)))


async def _progress(ctx: Context, done: float, total: float | None, message: str) -> None:
    """One MCP progress notification (sent only when the client asked, with a progress token)."""
    with contextlib.suppress(Exception):  # a client that went away: the tool still answers
        await ctx.report_progress(done, total, message)


def _outgoing(the_flow: dict[str, Any], what: str) -> None:
    """Only custom code the security scan passes in reject mode leaves for Langflow (a saved file,
    a registration): built-in code is known from the sandbox's catalogue (issue 30)."""
    from lfassist_jupyter.errors import ConfigError
    from lfassist_jupyter.flows.catalog import default_catalog
    from lfassist_jupyter.flows.code_checks import outgoing_flow_problem
    from lfassist_jupyter.sandbox.client import default_validator

    try:
        problem = outgoing_flow_problem(the_flow, default_catalog(default_validator()))
    except ConfigError as exc:
        problem = f"its code cannot be checked without the component catalogue ({exc})"
    if problem is not None:
        raise ToolFailure(f"{problem}; {what}.")


Register = Callable[[Callable[..., Awaitable[Any]]], Any]
"""Registers a tool function on the server (what ``_registrar`` returns)."""


def build_server(root: str | Path | None = None, *, max_retries: int | None = None) -> FastMCP:
    """The MCP server with its tools (register tools only when ``LANGFLOW_URL`` is set).

    The tools come in groups, each registered by a function of its own (``_component_tools``,
    ``_flow_tools``, ``_file_tools``, ``_langflow_tools``) through one decorator (``_registrar``):
    the order here is the order ``list_tools`` answers."""
    base = Path(root or os.getcwd()).expanduser().resolve()
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
    tool = _registrar(server)
    _component_tools(tool, max_retries)
    _flow_tools(tool)
    _file_tools(tool, base)
    if os.environ.get("LANGFLOW_URL"):
        _langflow_tools(tool)
    return server


def _registrar(server: FastMCP) -> Register:
    """The decorator that registers a tool on ``server``: its answer redacted JSON, every failure
    one redacted line.  Name, arguments and description are the function's own."""
    import functools

    def tool(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(fn)
        async def wrapped(*args: Any, **kwargs: Any) -> dict[str, Any]:
            from lfassist_jupyter.errors import LfAssistError
            from lfassist_jupyter.redaction import redact_text

            try:
                return _clean(await fn(*args, **kwargs))
            except (ToolFailure, LfAssistError) as exc:
                raise ToolError(redact_text(str(exc))[:2000]) from None
            except Exception as exc:  # a bug of ours: still one line for the agent
                raise ToolError(redact_text(f"{type(exc).__name__}: {exc}")[:2000]) from None

        return server.tool()(wrapped)

    return tool


def _sandbox() -> Any:
    """The process's one validation sandbox (started on first use, or by ``_warm_up``)."""
    from lfassist_jupyter.sandbox.client import default_validator

    return default_validator()


def _component_tools(tool: Register, max_retries: int | None) -> None:
    """``generate_component`` (the assistant, one conversation per server) and ``validate_component``."""
    conversation: dict[str, Any] = {}  # this server process's one conversation: its Assistant
    one_at_a_time = asyncio.Lock()  # a conversation takes one request at a time

    @tool
    async def generate_component(
        ctx: Context, request: str, max_attempts: int | None = None, new_conversation: bool = False
    ) -> dict[str, Any]:
        """Write a Langflow custom component from a plain-language request with the configured model
        provider, validate it in the sandbox (lfx builds it, every output is called with sample
        inputs) and repair it until it validates. Returns the outcome: kind "component" with code,
        class_name, validated, attempts, error and the last ValidationReport (a request for a flow
        or a question answers with kind "flow" or "answer").

        The server keeps one conversation for as long as it runs (in memory, never on disk): a
        follow-up such as "now make it also lowercase the text" changes the component this tool
        answered last. new_conversation=true forgets it and starts afresh."""
        from lfassist_jupyter.core.assistant import Assistant
        from lfassist_jupyter.core.component.pipeline import check_max_retries
        from lfassist_jupyter.core.events import step_label
        from lfassist_jupyter.settings import read

        _text(request, "request", MAX_REQUEST)
        retries = max_attempts if max_attempts is not None else max_retries
        if retries is None:
            retries = read("max_retries")
        retries = check_max_retries(retries)
        async with one_at_a_time:
            assistant = None if new_conversation else conversation.get("assistant")
            if assistant is None:
                assistant = conversation["assistant"] = Assistant(max_retries=retries, session_store=False)
                assistant.reuse = False  # the agent asked for a component: write one
            assistant.max_retries = retries
            outcome, done = None, 0
            async for event in assistant.stream(request):
                if event.event == "progress":
                    done += 1
                    label = f"{step_label(event.step, event.reduced_isolation)} ({event.attempt}/{event.max_attempts})"
                    await _progress(ctx, done, None, label)
                elif event.event == "complete":
                    outcome = event.outcome
                elif event.event in ("error", "cancelled"):
                    raise ToolFailure(event.message)
        if outcome is None:
            raise ToolFailure("the assistant ended without an answer.")
        return {"status": "complete", **outcome.model_dump(mode="json")}

    @tool
    async def validate_component(
        ctx: Context, code: str, smoke: bool = True, security: str = "reject"
    ) -> dict[str, Any]:
        """Validate Langflow component code: static and security checks, then lfx builds it as
        Langflow's POST /api/v1/custom_component does and (smoke) every output is called with typed
        sample inputs, in a fresh sandboxed process. Returns the ValidationReport: is_valid, phase,
        error (short, for a retry), findings, inputs, outputs, smoke. security: "reject" (unsafe
        calls fail it, as for generated code), "report" (listed as policy findings) or "off"."""
        from lfassist_jupyter.sandbox.client import avalidate_component

        _text(code, "code", MAX_CODE)
        if security not in ("reject", "report", "off"):
            raise ToolFailure(f"security must be reject, report or off, not {security[:40]!r}.")
        await _progress(ctx, 0, 1, "Validating in the sandbox")
        report = await avalidate_component(code, smoke=bool(smoke), security=security, validator=_sandbox())
        from lfassist_jupyter.core.events import step_label

        said = step_label("validated", report.reduced_isolation) if report.is_valid else "Validation failed"
        await _progress(ctx, 1, 1, said)
        return report


def _flow_tools(tool: Register) -> None:
    """``build_flow``, ``validate_flow`` and ``probe_run_flow``: flows in the sandbox, nothing written."""

    @tool
    async def build_flow(ctx: Context, spec: str) -> dict[str, Any]:
        """Build Langflow flow JSON from lfx's compact spec (name:, nodes: ID: ComponentType, edges:
        A.output -> B.input, config: B.field: value) with lfx's own builder in the sandbox, repair
        wiring mistakes deterministically, and validate it. Returns {flow, spec, ok, errors,
        warnings, changes, report (FlowReport: is_valid, errors, needs)}."""
        from lfassist_jupyter.flows import build_flow as build
        from lfassist_jupyter.flows import validate_flow

        _text(spec, "spec", MAX_SPEC)
        await _progress(ctx, 0, 2, "Building the flow")
        built = await asyncio.to_thread(build, spec)
        await _progress(ctx, 1, 2, "Validating the flow")
        report = await asyncio.to_thread(validate_flow, built.flow) if built.flow is not None else None
        await _progress(ctx, 2, 2, "Flow built" if built.ok else "Flow has problems")
        return {**built.model_dump(mode="json"), "report": report.model_dump(mode="json") if report else None}

    @tool
    async def validate_flow(flow: dict[str, Any] | str, provision: bool = False) -> dict[str, Any]:
        """Validate Langflow flow JSON (an object, or its text) as Langflow would run it: nodes,
        handles and types, required inputs, loops and branches, node code that lfx loads. Returns the
        FlowReport: verdict (sound | broken | not_judged: the sandbox lacks a package or a model
        provider's bundle the flow needs, named in missing_packages; never valid then), is_valid,
        errors (each naming the node and the fix), warnings, needs (a model, a key: what to provide
        before a real run), provision (what judging it elsewhere would install, and its size),
        judged_in. provision=true judges a not-judged flow in a separate environment with lfx and
        those packages (built with uv and cached; the server's own environment is not touched)."""
        from lfassist_jupyter.flows import validate_flow as check

        return await asyncio.to_thread(check, _flow(flow), provision=True if provision else None)

    @tool
    async def probe_run_flow(ctx: Context, flow: dict[str, Any] | str, input_text: str = "hello") -> dict[str, Any]:
        """Probe-run a flow in the sandbox on input_text with lfx's own runner: model and keyed-API
        nodes are replaced by deterministic stubs (no keys, no network). Returns the FlowRun: ok,
        text (the chat output), outputs, stubbed, error."""
        the_flow = _flow(flow)
        _text(input_text, "input_text", MAX_TEXT, empty=True)
        await _progress(ctx, 0, 1, "Probe run")
        run = await asyncio.to_thread(_sandbox().probe_run, the_flow, input_text)
        await _progress(ctx, 1, 1, "Probe run done" if run.ok else "Probe run failed")
        return run


def _file_tools(tool: Register, base: Path) -> None:
    """``save_flow`` and ``export_extension``: files written under the server's root ``base`` only."""

    @tool
    async def save_flow(flow: dict[str, Any] | str, path: str, name: str | None = None) -> dict[str, Any]:
        """Write a flow as a Langflow 1.13 flow file (stable id, lfx export's normalisation: key
        fields cleared): Langflow's Upload imports it, `lfx validate` checks it, `lfx push` upserts
        it. path is relative to the server's root (".json" is added). The id is the flow's own,
        else the overwritten file's, else new. Returns {path, id, id_source}."""
        from lfassist_jupyter.flows.save import flow_file_path, write_flow_file

        the_flow = _flow(flow)
        target = _inside(base, path, "path")
        if target == base or not flow_file_path(target).parent.resolve().is_relative_to(base):
            # ".json" is added to the name: the root itself would become "<root>.json" beside it
            raise ToolFailure(f"path {path!r} is outside the server's root {base}; name a file in it.")
        if name is not None:
            _text(name, "name", 200)
        await asyncio.to_thread(_outgoing, the_flow, "nothing was written")
        saved = await asyncio.to_thread(write_flow_file, the_flow, target, name=name)
        return {"path": str(saved.path), "id": saved.id, "id_source": saved.id_source}

    @tool
    async def export_extension(
        ctx: Context, components: list[str], directory: str, name: str | None = None
    ) -> dict[str, Any]:
        """Export component code as a Langflow 1.13 extension bundle (the layout `lfx extension init`
        makes: extension.json, components/, tests/ with a test per component from its smoke run,
        pyproject.toml) in directory (relative to the server's root). Each component is validated
        first (security scan in reject mode); those that fail are listed in skipped. Install it
        with `pip install DIR` into Langflow's environment. Returns {path, extension_id, bundle,
        components, kept, skipped, files}."""
        from lfassist_jupyter.langflow.extension import aexport_extension

        if not isinstance(components, list) or not components or len(components) > MAX_COMPONENTS:
            raise ToolFailure(f"components must be a list of 1 to {MAX_COMPONENTS} code strings.")
        for i, code in enumerate(components):
            _text(code, f"components[{i}]", MAX_CODE)
        target = _inside(base, directory, "directory")
        if name is not None:
            _text(name, "name", 200)
        await _progress(ctx, 0, 1, f"Validating {len(components)} component(s) and writing the bundle")
        exported = await aexport_extension(target, components, name=name, validator=_sandbox())
        await _progress(ctx, 1, 1, "Exported")
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
        registered = await aregister_flow(await client(), the_flow, name)
        return {**vars(registered), "link": registered.link}


# -- the process --------------------------------------------------------------------------------


async def _serve(server: FastMCP) -> None:
    """Serve on stdio, with the protocol on a private copy of stdout and fd 1 sent to stderr."""
    from io import TextIOWrapper

    import anyio
    from mcp.server.stdio import stdio_server

    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray writes (a print, a child's output) go to stderr, not into the protocol
    sys.stdout = sys.stderr
    out = anyio.wrap_file(TextIOWrapper(protocol, encoding="utf-8", write_through=True))
    async with stdio_server(stdout=out) as (read_stream, write_stream):
        low = server._mcp_server  # FastMCP's documented run_stdio_async does exactly this
        await low.run(read_stream, write_stream, low.create_initialization_options())


def _warm_up() -> None:
    """Start the sandbox while the client connects: the first validation does not wait for lfx."""
    import threading

    def start() -> None:
        try:
            from lfassist_jupyter.sandbox.client import warm_up

            warm_up()
        except Exception:
            pass

    threading.Thread(target=start, name="lfassist-mcp-warmup", daemon=True).start()


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
    server = build_server(root, max_retries=args.max_retries)
    _warm_up()
    import anyio

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(_serve, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
