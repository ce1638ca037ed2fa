"""A workspace given its own sandbox uses that one for everything, and never the shared one.

The sandbox is handed in (issue 39): ``Workspace(local_validator=...)`` is the sandbox of every
view of that workspace, and the code below the views (``flows/``, the pipelines) takes the one it
is given instead of looking one up.  Before, ``%%assist_flow`` built and checked a flow in the
process-wide sandbox whatever the workspace had: a workspace on another interpreter's lfx (or a
test's sandbox) was bypassed for the catalogue, the node-code verdicts and the packages.

Both sandboxes here are recording proxies of the session's one warm worker, so no second worker
starts: every request the code sends goes through a proxy, which writes the method down.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _support.components import GOOD

pytestmark = pytest.mark.usefixtures("sandbox")

UPPER_FLOW_SPEC = """\
name: Shout
nodes:
  A: ChatInput
  U: UppercaseComponent
  C: ChatOutput
edges:
  A.message -> U.input_text
  U.output -> C.input_value
"""


class Recording:
    """A sandbox as the code sees it: every method called on it is written down, then run by the
    real sandbox behind it (attributes read through it are the real one's)."""

    def __init__(self, real: Any, name: str) -> None:
        self._real, self.name, self.calls = real, name, []

    @property
    def flow_sandbox(self) -> Recording:  # ports.HasFlowSandbox: this proxy, not the sandbox behind it
        return self

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._real, attribute)
        if not callable(value) or attribute.startswith("_"):
            return value

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(attribute)
            return value(*args, **kwargs)

        return recorded


@pytest.fixture
def two_sandboxes(sandbox):
    """The workspace's sandbox and the shared one, both recorded; the shared one is put back after."""
    from lfassist_jupyter.sandbox import use_shared

    mine, shared = Recording(sandbox, "the workspace's"), Recording(sandbox, "the shared one")
    previous = use_shared(shared)  # type: ignore[arg-type]  # a recording proxy of a SandboxValidator
    yield mine, shared
    use_shared(previous)


@pytest.fixture
def custom_flow_file(sandbox, tmp_path):
    """A flow file whose middle node is a custom component (its code in the node), built before
    the test's sandboxes record anything."""
    from lfassist_jupyter import build_flow, default_catalog

    catalog = default_catalog(sandbox)
    catalog.add("UppercaseComponent", sandbox.component_template(GOOD).template)
    built = build_flow(UPPER_FLOW_SPEC, catalog=catalog)
    assert built.ok, built.errors
    nodes = built.flow["data"]["nodes"]
    assert any(n["data"]["node"]["template"]["code"]["value"] == GOOD for n in nodes)  # carries its code
    path = tmp_path / "shout.json"
    path.write_text(json.dumps(built.flow), encoding="utf-8")
    return path


def test_a_workspace_given_its_own_sandbox_sends_every_request_there(two_sandboxes, custom_flow_file, tmp_path):
    """``%%assist_flow FILE --run`` (validate a flow with a custom node, probe-run it) and
    ``%%assist_validate``, in a shell whose workspace has a sandbox of its own: the catalogue, lfx's
    verdict on the custom node's code, the packages the flow needs, the probe run and the
    component's validation all reach that sandbox; the shared one gets no request at all."""
    from IPython.core.interactiveshell import InteractiveShell

    from lfassist_jupyter.ui.workspace import Workspace

    mine, shared = two_sandboxes
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    try:
        magics = shell.magics_manager.registry["AssistMagics"]
        magics.workspace = Workspace(data_dir=tmp_path / "data", local_validator=mine)  # type: ignore[arg-type]
        shared.calls.clear()  # %load_ext warms the shared sandbox up: that is not a request
        view = shell.run_cell_magic("assist_flow", "--run hello", str(custom_flow_file))
        report = shell.run_cell_magic("assist_validate", "", GOOD)
    finally:
        shell.run_line_magic("unload_ext", "lfassist_jupyter")
        InteractiveShell.clear_instance()

    assert view.report.is_valid, view.report.errors
    assert view.run is not None and view.run.ok and view.run.text == "HELLO", view.run
    assert report.is_valid
    assert {"flow_catalog", "component_verdicts", "flow_packages", "probe_run", "validate"} <= set(mine.calls)
    assert shared.calls == [], f"the shared sandbox was asked: {shared.calls}"
