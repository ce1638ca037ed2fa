"""A tool the tests add to the Jupyter server's MCP server (``--MCPExtensionApp.mcp_tools``): what
the server process has imported, read from its own ``sys.modules`` -- what says the server never
imports lfx, however a module was imported (``-X importtime`` misses ``importlib.import_module``)."""

from __future__ import annotations

import sys


def server_modules() -> list[str]:
    """Every module the Jupyter server process has imported (a test harness, not a product tool)."""
    return sorted(sys.modules)
