"""The one door: every process this project starts to run lfx or component code.

- ``client``: ``SandboxValidator`` (the zygote's owner in the kernel), ``validate_component``,
  redaction, the answer schemas and the scrubbed environment.
- ``_isolation``: bubblewrap command lines and the probe that says full or reduced isolation.
- ``local_run``: the real local run of a flow (a process of its own behind ``_egress``, the
  kernel-side network fence), started by ``flows.local`` once the plan is allowed.
- ``worker/``: what runs *inside* the sandbox (stdlib + lfx only, bound read-only as one
  directory and loaded there as a package of its own): the zygote's script ``_worker.py``, its
  fork server, audit hook, confinement and ops (the list in ``worker/__init__.py``).
  ``flow_kit`` and ``policy`` there are read by the kernel too (pure data and rules, no lfx).

Importing this package imports nothing heavy; the kernel never imports lfx.
"""
