"""The one door: every process this project starts to run lfx or component code.

- ``client``: ``SandboxValidator`` (validation, the probe run, builds, templates, the catalogue:
  what each request means), ``validate_component``, ``default_validator``.
- ``zygote``: ``ZygoteProcess``, the process under ``SandboxValidator``: spawn, restart, the line
  protocol with its deadlines and caps, the scrubbed environment.
- ``answers``: the typed answers (``FlowRun``, ``RealRun``, ``ComponentRun``, ``FlowBuild``, the
  reference) -- pydantic only, so core and the views import them without any process code.
- ``_isolation``: bubblewrap command lines and the probe that says full or reduced isolation.
- ``local_run``: the real run of a flow: ``RealRunner``, a warm process of its own (its script is
  ``worker/_runner.py``: a child per run, in namespaces of its own, under Landlock) behind ``egress``,
  the kernel-side network fence; used by ``flows.real_run`` once the plan is allowed.
- ``worker/``: what runs *inside* the sandbox (stdlib + lfx only, bound read-only as one
  directory and loaded there as a package of its own): the zygote's script ``_worker.py``, its
  fork server, audit hook, confinement and ops (the list in ``worker/__init__.py``). It reads
  ``artifacts/flow.py`` and ``artifacts/policy.py`` (stdlib only), bound in next to it.

Importing this package imports nothing heavy; the kernel never imports lfx.
"""
