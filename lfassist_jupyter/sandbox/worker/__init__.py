"""What runs inside the sandbox (stdlib + lfx only), bound read-only into bubblewrap as one
directory plus two files of ``artifacts/`` (``_isolation.worker_files``).

``_worker.py`` is started as a script (``python -I``); it makes this directory a package of its
own (``_lfassist_worker``, never ``lfassist_jupyter``: the sandbox's interpreter may not have it)
and imports its siblings once, in the zygote, before the first fork:

- ``_shared``: configuration, one request's observations, the op registries, the timeout;
- ``_confine``: rlimits, prctl, a child's seccomp + Landlock layers;
- ``_hook``: the audit hook, its tables from ``policy``;
- ``_lfx``: lfx, imported once, and the warm-up;
- ``_serve``: the fork server (a forker, a spare child per request, capped answers, the kernel's
  refusals, kill and wipe);
- ``_validate`` with ``_checks``, ``_smoke`` and ``_packages``: the ``validate`` op;
- ``_reference``: facts about lfx for the prompts, sent with "ready";
- op modules ``_run_component``, ``_probe_run``, ``_flow_ops`` (named by the kernel's config);
- ``wire``: large answers packed in chunks (the kernel's client unpacks them).

The package imports nothing else of the project but two stdlib-only modules the kernel reads
too: ``artifacts/policy.py`` (the deny list) and ``artifacts/flow.py`` (flow facts and repairs).
They are not in this directory: the parent binds their files read-only into the sandbox and
names them in the config (``_isolation.bound_modules``), and ``_worker._bound`` loads each as a
module of this package (``_lfassist_worker.policy``, ``_lfassist_worker.flow``), so siblings
write ``from . import policy`` -- in reduced isolation too, from the same paths.  Nothing
outside ``sandbox/`` imports this package; inside, only the client reads ``wire``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types

_BOUND = ("flow", "policy")


def __getattr__(name: str) -> types.ModuleType:
    """``from . import policy`` (or ``flow``) when this package is imported as part of
    lfassist_jupyter -- a documentation tool importing every module -- rather than made by a
    zygote: the same stdlib-only file of ``artifacts/`` the zygote binds, loaded by path as this
    package's module, as the zygote loads it (so the worker still imports nothing of the project)."""
    if name not in _BOUND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "artifacts", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"{__name__}.{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[module.__name__] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    globals()[name] = module
    return module
