"""The sandboxed validator: generated code runs in a fresh, isolated process, never the kernel.

``SandboxValidator`` is the kernel's door to the sandbox: validation, the probe run of a flow
(``probe_run``), a component's run, node templates, the flow catalogue and lfx's flow
builder, each as one request to the zygote that ``zygote.ZygoteProcess`` keeps alive (a process
that imports lfx once and forks a fresh child per request, under bubblewrap where possible).

Nothing that comes back is trusted: every answer is schema-checked against ``answers`` and
redacted (secret-looking environment values, also hex and base64 encoded) before anyone sees it.
Whatever the generated code does, the worst outcome is a failed report or run for *that*
request; the kernel is untouched and the next request is clean.

``validate_component`` (static and security phases here, then the runtime and smoke phases in
the sandbox given) lives here too; the process-wide sandbox is ``lfassist_jupyter.sandbox.shared()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import time
from typing import Any

from pydantic import ValidationError

from lfassist_jupyter.artifacts import policy
from lfassist_jupyter.errors import ConfigError
from lfassist_jupyter.redaction import redact_text, redact_tree
from lfassist_jupyter.sandbox import _isolation
from lfassist_jupyter.sandbox.answers import (
    CATALOG_CAP,
    FLOW_CAP,
    ComponentRun,
    ComponentTemplate,
    FlowBuild,
    FlowRun,
    MissingPackage,
    NodeCode,
    PackageNeeds,
    Reference,
    Retired,
    Stubbed,
    check_catalog,
    check_names,
)
from lfassist_jupyter.sandbox.zygote import (
    STARTUP_TIMEOUT,
    WorkerDiedError,
    WorkerTimeoutError,
    ZygoteProcess,
    refused_text,
)
from lfassist_jupyter.validation.report import Finding, ValidationReport
from lfassist_jupyter.validation.static import SecurityMode, security_mode, validate_static

__all__ = ["SandboxValidator", "avalidate_component", "settle", "validate_component"]

MAX_TIMEOUT = 3600.0  # validate_component's bound on ``timeout``: an hour is already a hang


class SandboxValidator(ZygoteProcess):
    """Runtime + smoke validation, probe runs and flow builds in an isolated zygote that forks a
    child per request.

    Args:
        python: the interpreter to run the worker with (default: this one).  Point it at
            your Langflow server's environment to validate against *its* lfx.
        timeout: seconds one validation may take before its child is killed.
        memory_mb: address-space limit of the worker (and so of each child).
        smoke: whether to call every output with sample inputs.
        scratch_mb: the size of the sandbox's private /tmp, the only place a request can
            write (default: an eighth of ``memory_mb``); a request that fills it fails with
            a report that names the limit.  Full isolation only: the reduced sandbox has
            no file system of its own (files there are capped at 64 MB each).
    """

    def __init__(
        self,
        python: str | None = None,
        *,
        timeout: float = 10.0,
        memory_mb: int = 4096,
        smoke: bool = True,
        scratch_mb: int | None = None,
    ) -> None:
        super().__init__(python, memory_mb=memory_mb, scratch_mb=scratch_mb)
        self.timeout = timeout
        self.smoke = smoke
        self._flow_catalog: dict[str, dict[str, Any]] | None = None  # cached: it depends on the interpreter only
        self._flow_names: dict[str, list[str]] = {}
        self._names_for: Reference | None = None  # the reference the name map was merged into
        # What built-in types, node codes and providers need that the interpreter lacks; what needs
        # something is asked again once packages were installed (`_packages_stamp` changed).
        self._needs: dict[str, dict[str, list[str]]] = {"types": {}, "codes": {}, "providers": {}}
        self._needs_stamp: tuple[int, ...] = ()
        # lfx's verdicts on flow node codes, by the hash of (code, naming, methods): facts of this
        # sandbox's lfx, so they are kept here (another sandbox's lfx may judge otherwise).
        self._verdicts: dict[bytes, ComponentTemplate] = {}

    @property
    def flow_sandbox(self) -> SandboxValidator:
        """The sandbox that builds and probe-runs flows with this validator's lfx: itself
        (``ports.HasFlowSandbox``)."""
        return self

    # -- validation ---------------------------------------------------------------------

    def validate(self, code: str, *, smoke: bool | None = None, timeout: float | None = None) -> ValidationReport:
        """Runtime (+ smoke) phases in a fresh child.  Never raises for bad code: returns a report."""
        timeout = self.timeout if timeout is None else timeout
        smoke = self.smoke if smoke is None else smoke
        t0 = time.perf_counter()
        answer, failure = self._call({"op": "validate", "code": code, "smoke": smoke, "timeout": timeout}, timeout)
        total = round((time.perf_counter() - t0) * 1000, 3)
        if failure == "fatal":
            return self._unavailable_report()
        report: ValidationReport | None = None
        refused: list[dict[str, Any]] = []
        if answer is not None:
            answer.pop("id", None)
            refused = answer.pop("sandbox_refused", [])
            try:
                report = ValidationReport.model_validate(redact_tree(answer))
            except ValidationError:
                failure = "The validation sandbox returned something that is not a validation report; it was discarded."
        if report is None:
            report = ValidationReport(is_valid=False, phase="runtime", error=failure)
        hold_refusals(report, refused)
        report.timings_ms["total"] = total
        report.reduced_isolation = self.reduced_isolation  # the kernel's fact, whatever the child said
        warning = self._isolation_warning()
        if warning:
            report.warnings.append(warning)
        return report

    @property
    def reduced_isolation(self) -> str | None:
        """Why this sandbox runs with reduced isolation (no OS-level layer), or None under full
        isolation (or before it started): what every "validated" it backs must be qualified with."""
        return (self.isolation_reason or "no OS-level isolation") if self.isolation == "reduced" else None

    async def avalidate(self, code: str) -> ValidationReport:
        """The engine's ``Validator`` interface (runtime + smoke; static ran before)."""
        return await asyncio.to_thread(self.validate, code)

    def run_component(self, code: str, input_text: str, timeout: float | None = None) -> ComponentRun:
        """Run the component's first output with ``input_text`` in a fresh child; its text comes back.

        Returns a ``ComponentRun`` (schema-checked, redacted); never raises.
        """
        timeout = self.timeout if timeout is None else timeout
        answer, failure = self._call(
            {"op": "run_component", "code": code, "input_text": input_text, "timeout": timeout}, timeout
        )
        if failure == "fatal":
            return ComponentRun.failed(str(self._unavailable_report().error))
        if answer is not None:
            try:
                return ComponentRun.model_validate(redact_tree(answer))
            except ValidationError:
                failure = "The sandbox's answer was not a component run; it was discarded."
        return ComponentRun.failed(str(failure))

    def probe_run(self, flow: dict[str, Any], input_text: str, timeout: float | None = None) -> FlowRun:
        """Probe-run ``flow`` (Langflow flow JSON) on ``input_text`` in a fresh sandboxed child.

        Model and keyed-API nodes are replaced by deterministic stubs first (here: it is data
        work, no code of the flow runs in this process), so the child needs no key and no
        network; lfx's own runner runs the rest.  Returns a ``FlowRun`` (its text, the outputs,
        what was stubbed), schema-checked and redacted; never raises: a flow that fails is
        ``ok=False`` with the reason.  (A *real* run, models called with the keys the user
        allowed, is ``lfassist_jupyter.run_flow_for_real``.)
        """
        from lfassist_jupyter.sandbox.probe import stub_flow

        timeout = self.timeout if timeout is None else timeout
        if not isinstance(flow, dict):
            return FlowRun.failed("A probe run needs a Langflow flow JSON object (a dict).")
        try:
            probe, stubs = stub_flow(flow)
        except Exception as exc:  # a malformed flow: its shape, not ours
            return FlowRun.failed(f"The flow could not be prepared for a run: {exc}")
        stubbed = [Stubbed(node=s["node_id"], name=s["name"], reason=s["reason"]) for s in stubs]
        answer, failure = self._call(
            {"op": "probe_run", "flow": probe, "input_text": str(input_text), "timeout": timeout}, timeout
        )
        if failure == "fatal":
            return FlowRun.failed(str(self._unavailable_report().error), stubbed=stubbed)
        if answer is not None:
            answer.pop("id", None)
            refused = answer.pop("sandbox_refused", None)  # the zygote's record (``_call``), not the child's
            try:
                return FlowRun.model_validate(
                    {
                        **redact_tree(answer),
                        "stubbed": stubbed,
                        "reduced_isolation": self.reduced_isolation,
                        "sandbox_refusals": len(refused) if isinstance(refused, list) else 0,
                    }
                )
            except ValidationError:
                failure = "The sandbox's answer was not a flow run; it was discarded."
        return FlowRun.failed(str(failure), stubbed=stubbed)

    def component_template(
        self, code: str, timeout: float | None = None, *, methods: list[str] | None = None
    ) -> ComponentTemplate:
        """The node template lfx builds for ``code`` (built in a sandboxed child, never here).

        Returns a ``ComponentTemplate``: ``ok`` with ``template`` (the frontend node a flow's
        custom node carries; its ``code`` value is the code we sent, not what came back) and
        ``missing_methods`` (those of ``methods`` the component lacks), or ``ok`` False with
        ``error``, and ``missing_package`` or ``stale_import`` when the environment, not the code,
        is why; redacted, shape-checked, never raises.
        """
        timeout = self.timeout if timeout is None else timeout
        request: dict[str, Any] = {"op": "component_template", "code": code, "timeout": timeout}
        if methods:
            request["methods"] = [str(m)[:200] for m in methods[:50]]
        answer, failure = self._call(request, timeout)
        if failure == "fatal":
            return ComponentTemplate.failed(str(self._unavailable_report().error))
        if answer is not None and answer.get("sandbox_refused"):
            return ComponentTemplate.failed(
                f"building it, the code did {refused_text(answer['sandbox_refused'][0])}, "
                "which the validation sandbox refuses."
            )
        if answer is not None:
            template = answer.get("template")
            if answer.get("ok") and isinstance(template, dict) and isinstance(template.get("template"), dict):
                template = redact_tree(template)
                if isinstance(template["template"].get("code"), dict):
                    template["template"]["code"]["value"] = code
                asked = set(request.get("methods") or [])
                missing = [m for m in answer.get("missing_methods") or [] if isinstance(m, str) and m in asked]
                return ComponentTemplate(ok=True, template=template, missing_methods=missing)
            failure = redact_text(str(answer.get("error") or "lfx built no template for the component.")[:2000])
            return ComponentTemplate.failed(failure, **_environment_cause(answer))
        return ComponentTemplate.failed(str(failure))

    def component_verdicts(
        self, builds: list[NodeCode], timeout: float | None = None
    ) -> list[ComponentTemplate | None]:
        """lfx's verdict on each ``NodeCode(code, methods, naming)`` of ``builds`` (a flow's node
        codes, each with the output methods it will be asked for and the node's ``data`` naming its
        class), each loaded as lfx loads a flow's node, in a sandboxed child of its own: a
        ``ComponentTemplate`` without a template per code (``ok`` and ``missing_methods``, or the
        error and its environmental cause), or None for a code the time left no room for.

        One child per code, not one per flow: code that runs in a process can write whatever that
        process answers, so a node sharing a child with the others could write their verdicts too
        (and the sandbox keeps each verdict by its code's hash).  What the sandbox refused while
        a code loaded fails that code's verdict.  Each code has this validator's ``timeout`` (all of
        them ``timeout``, at most 300 s).  Never raises.

        lfx's verdicts are remembered by this sandbox (not the failures to give one): validating
        a flow a second time sends no request."""
        keys = [
            _digest(code, json.dumps(node, sort_keys=True, default=str), *sorted(methods))
            for code, methods, node in builds
        ]
        new = {key: build for key, build in zip(keys, builds, strict=True) if key not in self._verdicts}
        found = dict(zip(new, self._judge(list(new.values()), timeout), strict=True)) if new else {}
        for key, verdict in found.items():
            if verdict is not None and verdict.judged:
                if len(self._verdicts) >= 512:
                    self._verdicts.pop(next(iter(self._verdicts)))
                self._verdicts[key] = verdict
        return [found[key] if key in found else self._verdicts.get(key) for key in keys]

    def _judge(self, builds: list[NodeCode], timeout: float | None = None) -> list[ComponentTemplate | None]:
        """``component_verdicts`` without the memory: a child per code, in turn, until the time
        for all of them runs out (None for each code after that)."""
        if not builds:
            return []
        each = self.timeout
        total = min(each * len(builds), 300.0) if timeout is None else timeout
        deadline = time.monotonic() + total
        out: list[ComponentTemplate | None] = []
        for code, methods, node in builds[:200]:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            item = {"code": code, "methods": [str(m)[:200] for m in methods[:50]], "node": node}
            wait = min(each, left)
            answer, failure = self._call({"op": "component_verdicts", "builds": [item], "each": wait,
                                          "timeout": wait}, wait)  # fmt: skip
            out.append(self._one_verdict(item, answer, failure))
        return out + [None] * (len(builds) - len(out))

    def _one_verdict(
        self, item: dict[str, Any], answer: dict[str, Any] | None, failure: str | None
    ) -> ComponentTemplate | None:
        """The verdict of a child that loaded one code (``component_verdicts``).  What is not lfx's
        word on the code (the sandbox unavailable or out of time, an answer that is no verdict)
        begins with one of ``answers.NO_VERDICT``: not ``judged``, so never remembered."""
        if failure == "fatal":
            return ComponentTemplate.failed(str(self._unavailable_report().error))
        if answer is None:
            return ComponentTemplate.failed(str(failure or "The validation sandbox's answer was not a verdict."))
        if answer.get("sandbox_refused"):
            return ComponentTemplate.failed(
                f"loading it, the code did {refused_text(answer['sandbox_refused'][0])}, "
                "which the validation sandbox refuses."
            )
        found = answer.get("verdicts") if answer.get("ok") else None
        verdict = found[0] if isinstance(found, list) and found else None
        if not isinstance(found, list):
            return ComponentTemplate.failed("The validation sandbox's answer was not a verdict.")
        if not isinstance(verdict, dict):
            return None  # no time was left for it
        asked = set(item["methods"])
        missing = [m for m in verdict.get("missing_methods") or [] if isinstance(m, str) and m in asked]
        if verdict.get("ok"):
            return ComponentTemplate(ok=True, missing_methods=missing)
        error = redact_text(str(verdict.get("error") or "lfx did not load the component.")[:2000])
        return ComponentTemplate.failed(error, missing_methods=missing, **_environment_cause(verdict))

    def flow_catalog(self) -> dict[str, dict[str, Any]]:
        """lfx's bundled components (``{type: node template}``), for flows; never computed here.

        The zygote read them when it started, before any request's code ran, and sends them
        itself (a *fact*, see ``_flow_ops.py``); the answer is inflated with a size cap,
        shape-checked and cached on this validator. Raises ``ConfigError`` with the reason when
        the sandbox cannot give it (lfx missing, the worker dead).
        """
        from lfassist_jupyter.sandbox.worker.wire import unpack

        with self._lock:
            if self._flow_catalog is not None:
                return self._flow_catalog
            answer, failure = self._call({"op": "flow_catalog", "timeout": STARTUP_TIMEOUT}, STARTUP_TIMEOUT)
            if failure == "fatal":
                why = str(self._unavailable_report().error)
                raise ConfigError(why.replace("Runtime validation", "The flow catalogue"))
            if answer is None:
                raise ConfigError(f"The flow catalogue is unavailable: {failure}")
            try:
                registry = check_catalog(unpack(answer.get("z"), CATALOG_CAP))
                names = check_names(unpack(answer["names"], CATALOG_CAP), registry) if answer.get("names") else {}
            except ValueError as exc:
                raise ConfigError(f"The sandbox sent no usable flow catalogue ({exc}).") from None
            self._flow_catalog, self._flow_names = registry, names
            return registry

    def flow_names(self) -> dict[str, list[str]]:
        """Every other name lfx knows a catalogue entry by (its identity index: class names,
        display names, names of earlier Langflow versions such as ``Prompt``; its migration table
        for components that moved to a bundle) -> the entries it may mean.  Sent with the
        catalogue (``flow_catalog``), cached with it."""
        self.flow_catalog()
        return self._flow_names

    def flow_packages(
        self, types: list[str], codes: list[str], providers: list[str], timeout: float | None = None
    ) -> PackageNeeds | None:
        """What each built-in component type, node code and model provider needs that the
        worker's interpreter lacks (PyPI names), found by lfx's own requirements logic in a
        sandboxed child (``_packages.py``): a ``PackageNeeds`` for the ones asked.  Cached per
        validator (what was missing is asked again after an install), so a child runs only for
        what is new.  None when the sandbox
        could not tell (never raises)."""
        stamp = _packages_stamp()
        with self._lock:
            if stamp != self._needs_stamp:  # a `%pip install` since: what was missing may be there now
                self._needs = {kind: {k: v for k, v in cached.items() if not v} for kind, cached in self._needs.items()}
                self._needs_stamp = stamp
            known = {kind: dict(cached) for kind, cached in self._needs.items()}
        asked = {"types": list(dict.fromkeys(types)), "codes": list(dict.fromkeys(codes)),
                 "providers": list(dict.fromkeys(providers))}  # fmt: skip
        new = {kind: [x for x in items if x not in known[kind]] for kind, items in asked.items()}
        if any(new.values()):
            timeout = max(self.timeout, 30.0) if timeout is None else timeout
            answer, _failure = self._call({"op": "flow_packages", **new, "timeout": timeout}, timeout)
            if answer is None or not answer.get("ok"):
                return None
            found = {
                "types": answer.get("types") if isinstance(answer.get("types"), dict) else {},
                "providers": answer.get("providers") if isinstance(answer.get("providers"), dict) else {},
                "codes": dict(zip(new["codes"], answer.get("codes") or [], strict=False)),
            }
            for kind, items in found.items():
                for key, needs in items.items():
                    if key in new[kind] and isinstance(needs, list) and all(isinstance(n, str) for n in needs):
                        known[kind][key] = [redact_text(n)[:200] for n in needs[:50]]
            with self._lock:
                for kind in self._needs:
                    self._needs[kind].update({k: known[kind][k] for k in new[kind] if k in known[kind]})
        return PackageNeeds.model_validate(
            {kind: {k: known[kind][k] for k in items if k in known[kind]} for kind, items in asked.items()}
        )

    def build_flow(
        self,
        spec: str,
        *,
        extra: dict[str, dict[str, Any]] | None = None,
        repair: bool = True,
        timeout: float | None = None,
        refresh: list[str] | None = None,
        templates: dict[str, dict[str, Any]] | None = None,
    ) -> FlowBuild:
        """Build Langflow flow JSON from spec text with lfx's builder, in a fresh sandboxed child.

        Building runs a node's code when a real-time-refresh field is set (Langflow's form
        update), so it never happens in this process. ``extra`` holds the catalogue entries
        beyond lfx's bundled ones (generated components, a Langflow server's); their code runs
        only for the spec ids in ``refresh`` (a build whose answer is read for those nodes
        alone), and ``templates`` gives such nodes' refreshed templates to a build that runs
        none of it (see ``flows.build.build_flow``). Returns a ``FlowBuild`` (schema-checked;
        texts redacted; ``refused``: what the sandbox refused meanwhile); never raises: a
        failure of the sandbox itself is ``ok=False`` with ``error``.
        """
        from lfassist_jupyter.sandbox.worker.wire import unpack

        timeout = max(self.timeout, 30.0) if timeout is None else timeout
        payload = {"op": "flow_build", "spec": str(spec), "extra": extra or {}, "repair": bool(repair)}
        if refresh:
            payload["refresh"] = list(refresh)
        if templates:
            payload["templates"] = templates
        answer, failure = self._call({**payload, "timeout": timeout}, timeout)
        if failure == "fatal":
            return FlowBuild.failed(self._unavailable_report().error, spec=spec)
        refused = answer.pop("sandbox_refused", []) if answer is not None else []
        if answer is not None and not answer.get("ok"):
            failure = redact_text(str(answer.get("error") or "The flow could not be built.")[:2000])
        elif answer is not None:
            try:
                built = unpack(answer.get("z"), FLOW_CAP)
                if not isinstance(built, dict):
                    raise ValueError("not an object")
                for key in ("errors", "warnings", "changes"):
                    built[key] = redact_tree(built.get(key) or [])
                return FlowBuild.model_validate({**built, "refused": refused})
            except (ValueError, ValidationError):
                failure = "The sandbox's answer was not a built flow; it was discarded."
        return FlowBuild.failed(failure, spec=spec)

    def reference(self) -> Reference | None:
        """What the worker's lfx offers, for the prompt and the repair pass: input classes and
        their keywords, ``Component``'s names, output types, the stdlib's modules, and where
        lfx keeps every public name (a ``Reference``; ``.model_dump()`` is its JSON).

        Computed by the zygote (no generated code ever runs there): the first part before its
        first fork, the name map (``lfx_names``, read from lfx's source) on the first call here,
        then kept.  Schema-checked and redacted here; without the name map, the facade homes
        (lfx.io, the schema types) sent with "ready" stand.
        """
        with self._lock:
            try:
                self._wait_ready()
            except (WorkerDiedError, WorkerTimeoutError):
                return None
            ready = self._reference
            if ready is not None and self._names_for is not ready:
                names = self._lfx_names()
                self._reference = self._names_for = ready.model_copy(update={"imports": names}) if names else ready
            return self._reference

    def _lfx_names(self) -> dict[str, str] | None:
        """The zygote's fact ``lfx_names`` (where lfx keeps each name), checked; None when absent."""
        answer, failure = self._call({"op": "lfx_names", "timeout": STARTUP_TIMEOUT}, STARTUP_TIMEOUT)
        if answer is None or failure:
            return None
        try:
            return redact_tree(Reference.model_validate({"imports": answer.get("imports") or {}}).imports)
        except ValidationError:
            return None

    async def areference(self) -> Reference | None:
        return await asyncio.to_thread(self.reference)

    def info(self) -> dict[str, Any]:
        """State for ``%assist status``: interpreter, lfx version, pid, restarts, isolation."""
        ready = self._ready or {}
        if self.isolation is None:
            self.isolation, self.isolation_reason = _isolation.probe(self.python, self.sandbox_mode)
        return {
            "state": self.state,
            "python": self.python,
            "lfx_version": ready.get("lfx_version"),
            "pid": self.pid,
            "restarts": self.restarts,
            "timeout": self.timeout,
            "memory_mb": self.memory_mb,
            "error": self._fatal,
            "isolation": self.isolation,
            "isolation_reason": self.isolation_reason,
            "confinement": _confinement_text(ready.get("confinement")),
            "scratch_mb": self.scratch_mb if self.isolation == "full" else None,
        }


def hold_refusals(report: ValidationReport, refused: list[dict[str, Any]]) -> None:
    """What the sandbox's runtime layer refused is part of the verdict, whatever the child's own
    answer says: a report that does not account for a refusal gets it as an ``error`` finding
    (rule ``sandbox-refused``; for a user's own code ``_merge`` makes it a labelled policy
    finding, as for every runtime refusal)."""
    if not refused:
        return
    rules = ("sandbox-refused", "build-sandbox")
    if any(f.severity == "error" and f.rule in rules for f in report.findings):
        return  # the child's report already says so (its own words, with the line in the user's code)
    first = refused[0]
    event = first["event"]
    if event == "import" or event.startswith("import "):
        reason = "loads code the sandbox refuses"
    else:
        reason = policy.event_reason(event)
    more = f" and {len(refused) - 1} more refused call(s)" if len(refused) > 1 else ""
    message = (
        f"the component does {refused_text(first)}{more} ({reason}); the validation sandbox refused it, and "
        "Langflow would run it with the server's secrets. Remove the call (it is refused however it is reached)."
    )
    phase = "smoke" if report.builds else "runtime"
    report.findings.append(
        Finding(
            severity="error",
            phase=phase,
            message=message[:1].upper() + message[1:],
            evidence="; ".join(refused_text(r) for r in refused[:5]),
            rule="sandbox-refused",
        )
    )
    report.is_valid = False
    if report.phase is None or report.builds:
        report.phase = phase
    if report.builds:
        report.error = f"Langflow accepts this, but {message}"
    elif not report.error:
        report.error = message[:1].upper() + message[1:]


def _confinement_text(found: object) -> str | None:
    """The kernel layers each child runs under, as the zygote found them ("seccomp, Landlock ABI 7,
    noexec scratch")."""
    if not isinstance(found, dict):
        return None
    layers = ["seccomp"] if found.get("seccomp") is True else []
    if isinstance(found.get("landlock"), int) and found["landlock"] > 0:
        layers.append(f"Landlock ABI {found['landlock']}")
    if found.get("noexec") is True:
        layers.append("noexec scratch")
    return ", ".join(layers) or "none"


def _environment_cause(answer: dict[str, Any]) -> dict[str, Any]:
    """The child's word on a failed build's cause, kept only in its expected shape: the packages
    the environment lacks (a provider's bundle and SDK), a stale import or name, a retirement."""
    cause: dict[str, Any] = {}
    packages = answer.get("missing_packages")
    listed = packages if isinstance(packages, list) else [answer.get("missing_package")]
    found = [p for p in (_package(item) for item in listed[:20]) if p is not None]
    if found:
        cause.update(missing_package=found[0], missing_packages=found)
        provider = answer.get("provider")
        if isinstance(provider, str) and 0 < len(provider) <= 200:
            cause["provider"] = redact_text(provider)
    for key in ("stale_import", "stale_name"):
        stale = answer.get(key)
        if isinstance(stale, str) and 0 < len(stale) <= 200 and all(c.isalnum() or c in "._" for c in stale):
            cause[key] = stale
    if "stale_import" not in cause:
        cause.pop("stale_name", None)
    inactive = answer.get("inactive_provider")
    if isinstance(inactive, str) and 0 < len(inactive) <= 200:
        cause["inactive_provider"] = redact_text(inactive)
    retired = answer.get("retired")
    if isinstance(retired, dict):
        with contextlib.suppress(ValidationError):
            component = redact_text(str(retired.get("component"))[:200])
            cause["retired"] = Retired(component=component, message=redact_text(str(retired.get("message"))[:2000]))
    return cause


def _package(item: object) -> MissingPackage | None:
    if not isinstance(item, dict):
        return None
    dist = item.get("distribution")
    try:
        return MissingPackage(module=item.get("module"), distribution=dist, fix=f"%pip install {dist}")
    except ValidationError:
        return None


def _digest(*parts: str) -> bytes:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.digest()


def _packages_stamp() -> tuple[int, ...]:
    """When the installed packages last changed: the modification times of this interpreter's
    site-packages (installing or removing a distribution changes its directory).  A worker on another
    interpreter (``LFASSIST_VALIDATOR_PYTHON``) is installed into there: the stamp then changes
    only with this one's, and a cached "missing" lasts until the kernel restarts."""
    import site

    stamps = []
    for path in [*site.getsitepackages(), site.getusersitepackages()]:
        with contextlib.suppress(OSError):
            stamps.append(os.stat(path).st_mtime_ns)
    return tuple(stamps)


_PHASE_ORDER = {"static": 0, "security": 1, "runtime": 2, "smoke": 3}


def _merge(
    static: ValidationReport, runtime: ValidationReport, security: SecurityMode | bool = "reject"
) -> ValidationReport:
    """One report: Langflow's verdict (``builds``, from the worker) and every finding, static
    ones first; a fact both phases found (same ``rule``) is kept once, with its line.

    The worker judges as for generated code (a call its sandbox refused is an ``error``, like
    the static finding for the same call; no outputs is an ``error``).  For code a user brings
    (``security`` ``"report"`` or ``"off"``) those become what the static scan says for it: a
    labelled ``policy`` finding, and a warning."""
    if security_mode(security) != "reject":
        _as_users_code(runtime)
    runtime.phases_run = [*static.phases_run, *runtime.phases_run]
    runtime.timings_ms = {**static.timings_ms, **runtime.timings_ms}
    if not runtime.class_name:
        runtime.class_name = static.class_name
    if runtime.builds is None and static.builds is False:
        runtime.builds = False
    if not runtime.findings and not runtime.is_valid and runtime.error:
        # The sandbox itself answered (timeout, crash, lfx missing): keep that as a finding.
        runtime.findings.append(Finding(severity="error", phase=runtime.phase or "runtime", message=runtime.error))
    static_rules = {f.rule for f in static.findings if f.rule and f.rule != "security"}
    kept = [f for f in runtime.findings if not (f.rule and f.rule in static_rules)]
    runtime.findings = sorted([*static.findings, *kept], key=lambda f: _PHASE_ORDER.get(f.phase, 9))
    runtime.warnings = list(dict.fromkeys([*static.warnings, *runtime.warnings]))
    return settle(runtime)


def _as_users_code(report: ValidationReport) -> None:
    """Runtime verdicts that are refusals for generated code and notes for a user's own code."""
    for finding in report.findings:
        if finding.severity != "error":
            continue
        if finding.rule == "sandbox-refused":
            what = finding.message.split("; the validation sandbox refused it")[0]
            finding.severity = "policy"
            finding.message = (
                f"Refused at runtime: {what}. Langflow allows it; the validation sandbox refused it, "
                "so the smoke run stopped there."
            )
        elif finding.rule == "no-outputs":
            finding.severity = "warning"
            text = finding.message[:1].upper() + finding.message[1:]
            if text not in report.warnings:
                report.warnings.append(text)
    if report.builds is True and not report.by_severity("error"):
        report.error = None  # settle() recomputes the verdict from what is left


def settle(report: ValidationReport) -> ValidationReport:
    """``is_valid``, ``phase`` and ``error`` from ``builds`` and the findings.

    ``error`` says whose verdict it is: "Langflow rejects this: ..." (lfx's own message) or
    "Langflow accepts this, but ..." (our finding, with its evidence in the finding)."""
    errors = [f for f in report.findings if f.severity == "error"]
    report.is_valid = report.builds is True and not errors
    if report.is_valid:
        report.phase, report.error = None, None
        return report
    first = errors[0] if errors else None
    if report.builds is False:
        first = next((f for f in errors if f.rule == "build"), first)
    if first is None:
        return report
    report.phase = first.phase
    message = first.message
    if report.builds is True and not message.startswith("Langflow"):
        message = f"Langflow accepts this, but {message[:1].lower()}{message[1:]}"
    report.error = message
    return report


def _check_arguments(code: object, timeout: object, smoke: object) -> float:
    """Usage mistakes get a ConfigError that says what is expected, never a traceback from deep inside."""
    if not isinstance(code, str):
        raise ConfigError(
            f"validate_component expects the component's source code as a str, not {type(code).__name__}"
            + (" (decode the bytes first, e.g. code.decode('utf-8'))." if isinstance(code, bytes | bytearray) else ".")
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ConfigError(f"timeout must be a number of seconds, not {type(timeout).__name__}.")
    if not math.isfinite(timeout) or timeout <= 0 or timeout > MAX_TIMEOUT:
        raise ConfigError(f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, not {timeout!r}.")
    if not isinstance(smoke, bool):
        raise ConfigError(f"smoke must be True or False, not {smoke!r}.")
    return float(timeout)


def validate_component(
    code: str,
    *,
    smoke: bool = True,
    timeout: float = 10.0,
    security: SecurityMode | bool = "report",
    validator: SandboxValidator,
) -> ValidationReport:
    """Validate Langflow component code: static and security phases here, then the runtime
    (lfx builds it, as Langflow's ``POST /api/v1/custom_component`` does) and smoke phases in
    ``validator``'s sandboxed worker.  Never runs the code in this process.  (The package root's
    ``validate_component`` is this over the shared sandbox.)

    ``report.builds`` is Langflow's verdict; ``report.findings`` are ours (``error``: it will
    break when used; ``warning``; ``policy``).  ``security="report"`` (the default here, for
    code a user brings) lists unsafe calls as policy findings; ``"reject"`` refuses them, as
    the engine does for generated code; ``"off"`` skips the scan.

    Raises ``ConfigError`` for a usage mistake (code that is not a str, a timeout that is not
    a positive finite number); bad *code* always gets a report.
    """
    timeout = _check_arguments(code, timeout, smoke)
    static = validate_static(code, security=security)
    if static.builds is False or (static.builds is None and not static.class_name and not static.is_valid):
        return static  # certain without lfx (syntax error, no component class, too large)
    runtime = validator.validate(code, smoke=smoke, timeout=timeout)
    return _merge(static, runtime, security)


async def avalidate_component(
    code: str,
    *,
    smoke: bool = True,
    timeout: float = 10.0,
    security: SecurityMode | bool = "report",
    validator: SandboxValidator,
) -> ValidationReport:
    """Async twin of ``validate_component``."""
    _check_arguments(code, timeout, smoke)
    return await asyncio.to_thread(
        validate_component, code, smoke=smoke, timeout=timeout, security=security, validator=validator
    )
