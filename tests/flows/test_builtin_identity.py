"""Issue 42: a built-in's code as an older Langflow shipped it is judged as Langflow's own -- by exact
identity, never by likeness -- and hostile code claiming a built-in's type is scanned as before.

Langflow 1.7's File component carries ``import subprocess`` (it runs Docling in a child process);
the gate (issue 38: every code lfx would execute is judged before it leaves for the user's
Langflow) scanned it as custom code and refused a flow Langflow itself wrote.  Its text is in
``flows/builtin_codes.json`` (the SHA-256 of each component module of every released ``lfx`` and
``langflow-base`` wheel, ``benchmarks/builtin_codes.py``), so the node is Langflow's own.  The
attack: the same node type with that code plus one line that runs a shell command; the control
is lfx building it as Langflow does, in a plain process, and the marker appearing.  Doors:
``validate_flow``, ``Workspace.save_flow``, ``Workspace.register_flow`` (a fake Langflow).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import urllib.request

import pytest
from _support.corpus import corpus_flow, single_node_flow
from _support.fakelangflow import FakeLangflow

from lfassist_jupyter import default_catalog, validate_flow
from lfassist_jupyter.errors import ConfigError, LangflowError
from lfassist_jupyter.flows.catalog import released_code_types
from lfassist_jupyter.flows.code_checks import code_refusal

# A dev-half flow saved by Langflow 1.7.1, whose File node carries lfx 0.2's file.py byte for byte.
FILE_FLOW, FILE_NODE = "KartikKarakoti__Crop_Pest_and_Disease_Management_agent_3", "File-uB5k0"
HEAD = "class FileComponent(BaseFileComponent):\n"
KEY = "lf-identity-test-key-0123456789"

LFX_BUILDS = """
import json, sys
from lfx.graph.graph.base import Graph
from lfx.interface.initialize.loading import instantiate_class
flow = json.load(open(sys.argv[1]))
for vertex in Graph.from_payload(flow["data"], flow_id="f").vertices:
    instantiate_class(vertex)  # what Langflow does to every node of a flow it runs
"""


def code_of(flow: dict) -> str:
    return flow["data"]["nodes"][0]["data"]["node"]["template"]["code"]["value"]


@pytest.fixture(scope="module")
def flows(tmp_path_factory) -> dict:
    """{"released": the File node as Langflow 1.7 saved it, "hostile": the same with a payload}."""
    folder = tmp_path_factory.mktemp("identity")
    released = single_node_flow(corpus_flow(FILE_FLOW), FILE_NODE)
    for field in released["data"]["nodes"][0]["data"]["node"]["template"].values():
        if isinstance(field, dict) and field.get("type") == "file":  # the author's upload: not on this machine
            field["file_path"] = field["value"] = ""
    hostile = copy.deepcopy(released)
    field = hostile["data"]["nodes"][0]["data"]["node"]["template"]["code"]
    assert HEAD in field["value"]
    field["value"] = field["value"].replace(HEAD, f"{HEAD}    _x = __import__('os').system('touch {folder}/marker')\n")
    return {"released": released, "hostile": hostile, "folder": folder}


def test_an_older_releases_file_code_is_langflows_own(flows, sandbox, tmp_path):
    released = flows["released"]
    code = code_of(released)
    # Control: the scan refuses this text as custom code, and the sandbox's lfx does not carry it.
    assert code_refusal(code) is not None and "subprocess" in code_refusal(code)
    assert code not in default_catalog().builtin_codes and "File" in released_code_types(code)
    report = validate_flow(released)
    assert not [e for e in report.errors if e.code == "unsafe_code"], report.errors
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    assert workspace.save_flow(copy.deepcopy(released), tmp_path / "file.json").exists()


def test_lfx_runs_the_hostile_payload(flows):
    """The control of the attack: lfx builds the hostile node as Langflow does, and the marker appears."""
    path = flows["folder"] / "hostile.json"
    path.write_text(json.dumps(flows["hostile"]), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", LFX_BUILDS, str(path)], capture_output=True, text=True, timeout=300)
    assert (flows["folder"] / "marker").exists(), done.stderr[-2000:]


@pytest.mark.parametrize("claim", ["File", "payload", "another type", "a byte more"])
def test_code_claiming_a_builtins_identity_is_scanned(flows, sandbox, tmp_path, claim):
    """The built-in's type with a payload in its code; or its exact code under another type; or one
    byte added: none is the released code of that type, so each is scanned, and refused."""
    flow = copy.deepcopy(flows["hostile"] if claim in ("File", "payload") else flows["released"])
    node = flow["data"]["nodes"][0]["data"]
    if claim == "payload":
        node["type"] = node["node"]["display_name"] = "ChatOutput"
    elif claim == "another type":
        node["type"] = "ChatOutput"
    elif claim == "a byte more":
        node["node"]["template"]["code"]["value"] += "\n"
    report = validate_flow(flow)
    unsafe = [e for e in report.errors if e.code == "unsafe_code"]
    assert not report.is_valid and unsafe and unsafe[0].field == "code", report.errors
    from lfassist_jupyter.langflow import LangflowClient
    from lfassist_jupyter.ui.workspace import Workspace

    workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    with pytest.raises(ConfigError, match="nothing was written"):
        workspace.save_flow(copy.deepcopy(flow), tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()
    if claim != "File":
        return
    with FakeLangflow() as server:
        workspace.connect(LangflowClient(url=server.url, api_key=KEY), server_validation=False)
        with pytest.raises(LangflowError, match="nothing was sent"):
            workspace.register_flow(copy.deepcopy(flow))
        with urllib.request.urlopen(f"{server.url}/api/v1/flows/", timeout=10) as answer:
            assert json.loads(answer.read()) == []


def test_the_recorded_codes_hold_the_current_lfx(sandbox):
    """Drift: the recorded releases reach the one before the sandbox's lfx, and the file's facts are
    the shape the catalogue reads (a SHA-256 -> the types)."""
    from lfassist_jupyter.flows.catalog import _released

    codes = _released()
    assert len(codes) > 1000 and all(len(h) == 64 and isinstance(t, list) and t for h, t in list(codes.items())[:50])
    known = {t for types in codes.values() for t in types}
    current = {n for n, e in default_catalog().registry.items() if not e.get("custom")}
    assert len(current & known) > 0.5 * len(current)  # most of today's built-ins existed in a recorded release
