"""Where users already chat: the Langflow Assistant in Jupyter AI (optional: ``pip install
"lfassist-jupyter[jupyter-ai]"``).

- ``persona.py``: the **Langflow Assistant** persona, registered through Jupyter AI's
  ``jupyter_ai.personas`` entry point: the same assistant, settings and sandbox as the panel, in
  Jupyter AI's chat (``chat.py`` writes its messages).
- ``tools.py``: the assistant's MCP tools in Jupyter's own MCP server (jupyter-server-mcp's
  ``jupyter_server_mcp.tools`` entry point), defined once in ``lfassist_jupyter.mcp``.

A view beside ``ui/`` and ``mcp``: it may use the workspace and the cards of ``ui/`` and the tools
of ``mcp``, and nothing below the views imports it or Jupyter AI (``.importlinter``).  Both run in
the Jupyter server's process, never in a kernel; what they build or run goes through the sandbox.
Importing this package imports nothing.
"""
