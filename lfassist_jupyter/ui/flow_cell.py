"""What ``%%assist_flow`` does, apart from option parsing: spec or file -> flow -> report, picture,
probe run, file, registration.  The panel's flow card buttons use the same functions.

Kept out of ``ui/magics.py`` so the magic stays a thin view and the panel can share it.
Everything here returns a ``FlowView`` (displays itself: HTML card, plain text) or raises
``ConfigError`` with one line for input the user must fix (no usable spec, no such file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lfassist_jupyter.errors import ConfigError, LfAssistError
from lfassist_jupyter.sandbox.answers import FlowRun

if TYPE_CHECKING:
    from lfassist_jupyter.flows import FlowReport
    from lfassist_jupyter.langflow.flows import FlowRunResult, RegisteredFlow
    from lfassist_jupyter.ui.workspace import Workspace

PROBE_INPUT = "hello"
"""The input of the run that proves a registered flow works, when ``--run`` gave none."""

Note = tuple[str, "bool | None"]


@dataclass
class FlowView:
    """A flow as ``%%assist_flow`` shows it; ``--out VAR`` binds this object."""

    flow: dict[str, Any] | None
    spec: str | None = None
    report: FlowReport | None = None
    run: FlowRun | None = None
    """The probe run (``--run``, models stubbed) or the real run (``--run-local``, a ``RealRun``)."""
    run_input: str | None = None
    registered: RegisteredFlow | None = None
    server_run: FlowRunResult | None = None
    saved: Path | None = None
    notes: list[Note] = field(default_factory=list)
    base: str | None = None
    """The flow file the spec was applied to (``--edit FILE``), or None: the spec alone built it."""

    @property
    def ok(self) -> bool:
        return self.flow is not None and self.report is not None and self.report.is_valid

    @property
    def name(self) -> str:
        from lfassist_jupyter.ui.render.flow import flow_name

        return flow_name(self.flow)

    def _repr_html_(self) -> str:
        from lfassist_jupyter.ui.render.flow import flow_html

        return flow_html(
            self.flow, report=self.report, run=self.run, run_input=self.run_input, notes=self.notes, spec=None
        )

    def __repr__(self) -> str:
        from lfassist_jupyter.ui.render.flow import flow_text

        return flow_text(self.flow, report=self.report, run=self.run, run_input=self.run_input, notes=self.notes)


def _looks_like_path(body: str) -> bool:
    text = body.strip()
    return bool(text) and "\n" not in text and (text.lower().endswith(".json") or Path(text).expanduser().is_file())


def change_text(change: Any) -> str:
    """A deterministic repair as one line naming the node: ``Repaired B: input 'query' -> 'question'``."""
    if change.kind == "port" and change.before is not None:
        return f"Repaired {change.node}: {change.field or 'port'} {change.before!r} -> {change.after!r}"
    return f"Repaired {change.node}: {change.message}"


def build_view(workspace: Workspace, body: str, edit: str | None = None, *, provision: bool | None = None) -> FlowView:
    """The cell body (spec text or a path to a flow JSON file) built and validated over the
    workspace's catalogue, in its sandbox; with ``edit`` (``--edit FILE``), the spec applied to
    that file's flow (``flows.apply_spec``): every node the spec keeps is the file's, byte for byte.
    ``provision``: a flow the sandbox cannot judge is judged in a separate environment (see
    ``validate_flow``)."""
    from lfassist_jupyter.flows import FlowReport, apply_spec, flow_to_spec, validate_flow

    if not body.strip():
        raise ConfigError("The cell is empty: write a flow spec (nodes:, edges:, config:) or a path to a flow JSON.")
    notes: list[Note] = []
    if edit is not None and _looks_like_path(body):
        raise ConfigError("--edit FILE applies the spec in the cell to FILE: the cell holds a spec, not a file name.")
    if _looks_like_path(body):
        from lfassist_jupyter.flows.load import read_flow_file

        flow = read_flow_file(body.strip())  # FlowFileError (a ConfigError): one line naming what is wrong
        catalog = workspace.catalog()
        try:
            spec = flow_to_spec(flow, catalog=catalog)
        except Exception:  # a flow our spec cannot express still validates and draws
            spec = None
        return FlowView(
            flow=flow, spec=spec, report=validate_flow(flow, catalog=catalog, provision=provision), notes=notes
        )
    catalog = workspace.catalog()
    # FlowSpecError (a ConfigError) when there is no spec at all; FlowFileError for an unreadable --edit file
    built = apply_spec(body, catalog=catalog, base=edit)
    notes += [(change_text(c), None) for c in built.changes]
    notes += [(w, None) for w in built.warnings]
    base = str(Path(edit).expanduser().resolve()) if edit is not None else None
    if built.flow is None:
        report = FlowReport(is_valid=False, errors=list(built.errors))
        return FlowView(flow=None, spec=built.spec or body, report=report, notes=notes, base=base)
    report = validate_flow(built.flow, catalog=catalog, provision=provision)
    if built.errors:  # what the builder could not do (an edge it dropped) is an error of the flow too
        seen = {str(e) for e in report.errors}
        extra = [e for e in built.errors if str(e) not in seen]
        report = report.model_copy(update={"is_valid": False, "errors": [*extra, *report.errors]})
    return FlowView(flow=built.flow, spec=built.spec or body, report=report, notes=notes, base=base)


def probe_run(workspace: Workspace, view: FlowView, text: str) -> None:
    """Run the flow in the sandbox on ``text`` (models stubbed); the result goes on the view, and a
    node that failed for the flow's own fault makes its verdict broken (``flows.probed``)."""
    from lfassist_jupyter.flows.probed import with_probe

    view.run_input = text
    if view.flow is None:
        view.run = FlowRun.failed("there is no flow to run.")
        return
    view.run = workspace.probe_run(view.flow, text)
    if view.report is not None:
        view.report = with_probe(view.report, view.flow, view.run)


def local_run(
    workspace: Workspace,
    view: FlowView,
    text: str,
    *,
    env_names: list[str] | None = None,
    allow_hosts: list[str] | None = None,
) -> None:
    """Run the flow for real on this machine (models called) with the variables named in
    ``env_names`` (from the kernel's environment) and the network of ``allow_hosts`` plus its
    providers'.  What it wants and reaches is printed first; a wanted variable the user did not
    name stops it, with the ``--env`` to add."""
    from lfassist_jupyter.flows.real_run import run_flow_for_real, run_plan

    view.run_input = text
    if view.flow is not None and view.report is not None and view.report.missing_packages:
        lacking = ", ".join(p.distribution for p in view.report.missing_packages)
        view.notes.append((f"Not run: the flow needs packages not installed here: {lacking} (see above).", False))
        return
    if view.flow is None or not view.ok:
        view.notes.append(("Not run: fix the flow's errors first.", False))
        return
    plan = view.report.provision if view.report is not None else None
    if plan is not None and plan.ready and plan.adds:  # judged elsewhere: a real run here would lack them
        view.notes.append(
            (
                f"Not run: the flow was judged in a separate environment; a real run here needs "
                f"{', '.join(plan.adds)} in the sandbox's own: %pip install {' '.join(plan.adds)}",
                False,
            )
        )
        return
    names = [n.strip() for entry in env_names or [] for n in entry.split(",") if n.strip()]
    try:
        plan = run_plan(view.flow, env=names, allow_hosts=allow_hosts or [])
    except ConfigError as exc:
        view.notes.append((str(exc), False))
        return
    view.notes += [(f"Note: {n}", None) for n in plan.notes]
    if plan.missing:
        wanted = sorted({m.split(" ")[0] for m in plan.missing})
        view.notes.append(
            (
                f"Not run: the flow wants {', '.join(plan.missing)}. Re-run with "
                f"{' '.join(f'--env {n}' for n in wanted)} to allow it ({plan.summary()}).",
                False,
            )
        )
        return
    print(f"Running the flow for real (its models are called; {plan.summary()})...", flush=True)
    try:
        catalog = workspace.catalog()
        view.run = run_flow_for_real(view.flow, text, catalog=catalog, env=names, allow_hosts=allow_hosts or [])
    except ConfigError as exc:
        view.notes.append((str(exc), False))


def errors_line(errors: list[Any], limit: int = 3) -> str:
    """A flow's errors as one clause: ``2 errors: B has no input 'x'; ...``."""
    shown = "; ".join(str(e).splitlines()[0][:200] for e in errors[:limit])
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return f"{len(errors)} error{'s' * (len(errors) != 1)}: {shown}{more}"


def save(
    workspace: Workspace, view: FlowView, path: str | Path, name: str | None = None, *, force: bool = False
) -> None:
    """Write the view's flow (the flow the card shows) as a flow file; a flow with errors only with
    ``force``, and the note says which errors either way."""
    if view.flow is None:
        view.notes.append(("Not saved: there is no flow.", False))
        return
    errors = list(view.report.errors) if view.report is not None else []
    if errors and not force:
        why = f"Not saved: the flow has {errors_line(errors)}. Fix them, or add --force to save it anyway."
        view.notes.append((why, False))
        return
    if errors:
        view.notes.append((f"Saved with --force although the flow has {errors_line(errors)}.", None))
    try:
        view.saved = workspace.save_flow(view.flow, path, name)
    except ConfigError as exc:
        view.notes.append((f"Not saved: {exc}", False))
        return
    view.notes.append(
        (f"Saved to {view.saved} (id {view.flow['id']}): import it in Langflow (Upload a flow) or `lfx push` it.", True)
    )


def _blocking_needs(report: FlowReport | None, variables: set[tuple[str, str]]) -> list[str]:
    """What stops a run without the user's choices: a model to choose, a key field that is empty
    (one that names a variable, in ``variables`` as (node id, field), is the server's to give)."""
    if report is None:
        return []
    return [
        f"{n.node}.{n.field} ({n.kind})"
        for n in report.needs
        if n.kind == "model" or (n.kind == "secret" and (n.node_id, n.field) not in variables)
    ]


def _server_lacks(workspace: Workspace, wanted: list[str]) -> list[str] | str:
    """The variables of ``wanted`` the connected Langflow has no value for, or why it cannot tell."""
    if not wanted:
        return []
    try:
        have = set(workspace.langflow_variables())
    except LfAssistError as exc:
        return f"its global variables could not be listed ({exc})"
    return [v for v in wanted if v not in have]


def _server_url_notes(workspace: Workspace, flow: dict[str, Any]) -> list[tuple[str, bool | None]]:
    """What Langflow lacks to call the user's own server: a model node with no base-URL field of
    its own (lfx 1.13's OpenAI node) reads the provider's base-URL variable, and a Langflow
    without it calls the vendor instead.  The configured servers come from the run's plan (the
    provider table says which variable lfx reads); the server's variables are read by name."""
    from lfassist_jupyter.flows.real_run import run_plan
    from lfassist_jupyter.providers.table import PROVIDERS
    from lfassist_jupyter.redaction import without_credentials

    readers = {p.flow.base_url_variable for p in PROVIDERS if p.flow and p.flow.base_url_variable}
    fielded = {p.flow.base_url_variable for p in PROVIDERS if p.flow and p.flow.base_url_field}
    try:
        config = run_plan(flow).config
    except ConfigError:
        return []
    servers = {v: url for v, url in config.items() if v in readers - fielded}
    lacking = _server_lacks(workspace, sorted(servers))
    if isinstance(lacking, str):
        return []
    return [
        (
            f"Langflow has no global variable {variable}: unless its own environment sets it, this flow's model "
            f"node calls the provider's default API, not your server. Set {variable} to {without_credentials(url)} "
            "there (Settings, Model Providers).",
            None,
        )
        for variable, url in servers.items()
        if variable in lacking
    ]


def register(workspace: Workspace, view: FlowView, *, name: str | None = None, run_text: str | None = None) -> None:
    """Create or update the flow in the connected Langflow, then prove it there with a run.

    A model node carries its selection and its key field names a global variable
    (the provider's key variable), so the flow runs on the server as it runs here.  The proof run is made
    when the server has every variable the flow's key fields name (its global variables, by
    name only); otherwise the note says which one to create there.  A flow with no model chosen,
    or an empty key field, is not run (it could not answer)."""
    if workspace.langflow is None:
        view.notes.append(("Not registered: no Langflow connection. Use `%assist connect URL` first.", False))
        return
    if view.flow is None or not view.ok:
        view.notes.append(("Not registered: fix the flow's errors first.", False))
        return
    try:
        view.registered = workspace.register_flow(view.flow, name)
    except LfAssistError as exc:
        view.notes.append((f"Not registered: {exc}", False))
        return
    view.notes.append((str(view.registered), True))
    view.notes += _server_url_notes(workspace, view.flow)
    from lfassist_jupyter.flows.real_run import flow_variables, prepare_flow

    named = flow_variables(prepare_flow(view.flow)[0])
    needs = _blocking_needs(view.report, {(nid, field) for _, _, nid, field in named})
    if needs:
        view.notes.append((f"Not run in Langflow: it needs {', '.join(needs)}; set them there, then run it.", None))
        return
    lacking = _server_lacks(workspace, sorted({name for name, *_ in named}))
    if lacking:
        why = lacking if isinstance(lacking, str) else (
            f"it needs the global variable{'s' * (len(lacking) > 1)} {', '.join(lacking)}, which the server "
            "does not have; create it there (Settings, Global Variables), then run it"
        )  # fmt: skip
        view.notes.append((f"Not run in Langflow: {why}.", None))
        return
    text = run_text or PROBE_INPUT
    try:
        view.server_run = workspace.run_registered_flow(view.registered.id, text)
    except LfAssistError as exc:
        view.notes.append((f"Registered, but the run in Langflow failed: {exc}", False))
        return
    answered = view.server_run.text
    view.notes.append(
        (f"Ran in Langflow on {text!r}: {answered!r}", True)
        if answered is not None
        else (f"Ran in Langflow on {text!r}: no chat output.", None)
    )


def assist_flow(
    workspace: Workspace,
    body: str,
    *,
    run: str | None = None,
    save_to: str | None = None,
    register_flow: bool = False,
    name: str | None = None,
    run_local: str | None = None,
    env_names: list[str] | None = None,
    allow_hosts: list[str] | None = None,
    provision: bool | None = None,
    edit: str | None = None,
    force: bool = False,
) -> FlowView:
    """The whole of ``%%assist_flow``: build + validate (the spec applied to ``edit``'s flow when
    given), then the requested actions: a run, the registration, the file (which then holds the
    id Langflow keeps the flow under; a flow with errors only with ``force``)."""
    from lfassist_jupyter.flows.save import file_flow_id, flow_file_path, is_flow_id

    view = build_view(workspace, body, edit, provision=provision)
    if run is not None and run_local is not None:
        raise ConfigError("Use --run (a probe run, models stubbed) or --run-local (a real run), not both.")
    if run is not None:
        probe_run(workspace, view, run)
    if run_local is not None:
        local_run(workspace, view, run_local, env_names=env_names, allow_hosts=allow_hosts)
    # The file being overwritten is this flow's previous version: its id is the flow's identity,
    # for the registration below too (so `lfx push FILE` updates the same flow).
    earlier = file_flow_id(flow_file_path(save_to)) if save_to else None
    if earlier is not None and view.flow is not None and not is_flow_id(view.flow.get("id")):
        view.flow["id"] = earlier
    if register_flow:  # before the save: the id Langflow keeps the flow under goes into the file
        register(workspace, view, name=name, run_text=run)
    if save_to:
        save(workspace, view, save_to, name, force=force)
    return view
