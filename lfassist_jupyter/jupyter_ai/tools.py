"""The assistant's MCP tools in Jupyter's own MCP server (jupyter-server-mcp, installed with Jupyter AI).

jupyter-server-mcp runs one MCP server inside the Jupyter server (``MCPExtensionApp``; its port
is ``c.MCPExtensionApp.mcp_port``, 3001 by default); Jupyter AI's personas use it, and so can any
agent attached to JupyterLab.  Packages add tools to it through the ``jupyter_server_mcp.tools``
entry point group, as ``"module:function"`` strings.  This module is that module: ``entry()``
(the entry point, ``pyproject.toml``) names the tools, and each name is an attribute of this
module (``__getattr__``) that serves the function ``lfassist_jupyter.mcp.tools`` defines -- the
one definition ``python -m lfassist_jupyter.mcp`` serves too: the same names, arguments, limits,
one-line redacted errors and gate (``register_component``/``register_flow`` only with
``LANGFLOW_URL`` set).  Their root is the Jupyter server's (``ServerApp.root_dir``): ``save_flow``
writes flow files in ``<root>/flows/``, the folder the persona's ``/save`` writes too.

The tools run on the package's own loop thread (``runtime.get_loop``), not on the Jupyter
server's loop that serves every kernel's messages: a generation that takes a minute holds
nothing of the server.  What they build or run goes through the sandbox, a process of its own
(the server never imports lfx); it starts on the first call, not when JupyterLab starts, which
imports only this module and ``lfassist_jupyter.mcp`` (the tools' modules load on the first call).
"""

from __future__ import annotations

import inspect
import os
from typing import Any

_served: dict[str, Any] = {}


def _root() -> str:
    """The Jupyter server's root, where the tools may write (the directory it serves)."""
    try:
        from jupyter_server.serverapp import ServerApp

        if ServerApp.initialized():
            return str(ServerApp.instance().root_dir)
    except Exception:  # not inside a Jupyter server (a test, a script): its working directory
        pass
    return os.getcwd()


def _serve() -> dict[str, Any]:
    """The tools as jupyter-server-mcp registers them (FastMCP 3: its ``ToolError``, its context's
    progress), built once per process."""
    if _served:
        return _served
    from fastmcp.exceptions import ToolError
    from fastmcp.server.dependencies import get_context

    from lfassist_jupyter import mcp
    from lfassist_jupyter.runtime import get_loop

    for fn in mcp.tools(_root()):
        served = mcp.serve_tool(_imported_first(fn), ToolError, lambda: get_context().report_progress, engine=get_loop)
        # The signature with its annotations evaluated: jupyter-server-mcp wraps the function again
        # and FastMCP reads the types from that wrapper, where this module's names are not in scope.
        served.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
        # The description as the stdio server gives it: jupyter-server-mcp takes ``__doc__`` as it
        # is, its indentation included, where the SDK's FastMCP cleans it.
        served.__doc__ = inspect.cleandoc(fn.__doc__ or "")
        _served[fn.__name__] = served
    return _served


def _imported_first(fn: Any) -> Any:
    """``fn``, after what the tools import is imported (on the engine's thread, once; then a
    dictionary look-up per module): at server start only this module and ``mcp`` load, and no
    call races a warm-up thread for a half-imported package (the stdio server's import race)."""
    import functools

    from lfassist_jupyter import mcp

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        mcp.import_tool_modules()
        return await fn(*args, **kwargs)

    return call


def warm_up() -> None:
    """Import what the tools use, then start the sandbox in the background: for a first call (or a
    persona's first request) that does not wait for lfx. Called on first use, not at server start:
    a JupyterLab that never uses the assistant never starts its sandbox."""
    from lfassist_jupyter import mcp

    mcp.import_tool_modules()
    mcp.warm_up_sandbox()


def entry() -> list[str]:
    """The ``jupyter_server_mcp.tools`` entry point: ``"lfassist_jupyter.jupyter_ai.tools:<tool>"``
    for each tool, in the order the stdio server lists them."""
    return [f"{__name__}:{name}" for name in _serve()]


def __getattr__(name: str) -> Any:
    if not name.startswith("_"):
        served = _serve()
        if name in served:
            return served[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
