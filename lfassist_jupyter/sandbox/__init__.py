"""The one door: every process this project starts to run lfx or component code.

- ``client``: ``SandboxValidator`` (validation, the probe run, builds, templates, the catalogue:
  what each request means) and ``validate_component``.
- ``zygote``: ``ZygoteProcess``, the process under ``SandboxValidator``: spawn, restart, the line
  protocol with its deadlines and caps, the scrubbed environment.
- ``answers``: the typed answers (``FlowRun``, ``RealRun``, ``ComponentRun``, ``FlowBuild``, the
  reference) -- pydantic only, so core and the views import them without any process code.
- ``probe``: a flow made ready for a probe run (models stubbed): data work before the door.
- ``_isolation``: bubblewrap command lines and the probe that says full or reduced isolation.
- ``local_run``: the real run of a flow: ``RealRunner``, a warm process of its own (its script is
  ``worker/_runner.py``: a child per run, in namespaces of its own, under Landlock) behind ``egress``,
  the kernel-side network fence; used by ``flows.real_run`` once the plan is allowed.
- ``worker/``: what runs *inside* the sandbox (stdlib + lfx only, bound read-only as one
  directory and loaded there as a package of its own): the zygote's script ``_worker.py``, its
  fork server, audit hook, confinement and ops (the list in ``worker/__init__.py``). It reads
  ``artifacts/flow.py`` and ``artifacts/policy.py`` (stdlib only), bound in next to it.

The shared sandbox is here, in the package itself: ``shared()`` is the process-wide
``SandboxValidator`` and ``use_shared(v)`` replaces it.  Only the edges call them (the package
root, ``ui/``, ``mcp``, ``eval``, the ``Assistant``'s constructor; ``.importlinter`` says so):
everything below takes the sandbox it uses, through its catalogue or a parameter, so a second
sandbox (another interpreter's lfx, a test's) is used for all of a request or not at all.

Importing this package imports nothing heavy; the kernel never imports lfx.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lfassist_jupyter.sandbox.client import SandboxValidator

__all__ = ["shared", "use_shared", "warm_up"]

_shared: SandboxValidator | None = None
_lock = threading.Lock()


def shared() -> SandboxValidator:
    """The process-wide sandbox, made on first use (not started: it starts on its first request).

    Configured by the ``LFASSIST_VALIDATOR_*`` and ``LFASSIST_SANDBOX*`` settings; a bad value is
    one ``ConfigError`` line naming it."""
    global _shared
    with _lock:
        if _shared is None:
            from lfassist_jupyter import settings
            from lfassist_jupyter.sandbox.client import SandboxValidator

            _shared = SandboxValidator(
                timeout=settings.read("validator_timeout"), memory_mb=settings.read("validator_memory_mb")
            )
        return _shared


def use_shared(validator: SandboxValidator | None) -> SandboxValidator | None:
    """Make ``validator`` the shared sandbox (None: the next ``shared()`` makes a fresh one) and
    return the one it replaces, so a caller can put it back.  Neither is started nor closed here."""
    global _shared
    with _lock:
        previous, _shared = _shared, validator
        return previous


def warm_up() -> SandboxValidator:
    """Start the shared sandbox now, so the first validation does not pay the lfx import."""
    validator = shared()
    validator.start()
    return validator
