"""Scripts that run inside the sandbox (stdlib + lfx only), loaded by path, never as a package.

The kernel imports only ``flow_kit`` and ``policy`` from here (pure rules and data, no lfx).
This directory is bound read-only into bubblewrap as a whole (``_isolation.worker_files``).
"""
