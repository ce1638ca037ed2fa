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
