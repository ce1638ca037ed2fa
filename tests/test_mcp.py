"""The MCP server (``python -m lfassist_jupyter.mcp``) driven by the official SDK's own stdio client.

Each test starts the server as an agent would (a subprocess on stdio, its environment given
explicitly) and talks to it with ``mcp.client.stdio.stdio_client`` + ``ClientSession``: the tools
it lists, validating a good and a bad component, generating one through the fake model server,
building and probe-running a flow, saving and exporting, hostile arguments answered as one tool
error each (with controls showing the same tool works on good input), and a secret of the
server's environment that never appears in any tool output. One test speaks raw stdio bytes
(messages the SDK cannot parse). No answer of any test mentions a notebook: an agent has none.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support.components import DATA_LIST_BUG, GOOD, LLM_SPEC, LOWER_AND_UPPER, QA_SPEC, fenced, intent, named
from _support.lfxcli import lfx
from mcp import ClientSession, McpError, StdioServerParameters
from mcp.client.stdio import stdio_client

SECRET = "tok-mcp-private-value-8c1f2e9d7b"
KEY = "sk-mcp-test-key-0123456789abcdef"
URL_TOKEN = "lfurltoken0123456789abcdef"  # a token in LANGFLOW_URL's user part: never in an answer or a log
TYPED_KEY = "typed-into-a-node-0123456789"  # a key typed into a flow's password field
ECHO_QA = named(QA_SPEC, "Echo QA")
ANSWER_WITHIN = datetime.timedelta(seconds=120)  # an answer, however slow the machine; not for ever
GROQ_SPEC = LLM_SPEC + '  M.model: {"name": "llama-3.1-8b-instant", "provider": "Groq"}\n  M.api_key: GROQ_API_KEY\n'


def params(root: Path, llm: Any = None, **extra: str) -> StdioServerParameters:
    """The server as an agent starts it: this interpreter, stdio, an explicit environment."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root),
        "LFASSIST_DATA_DIR": str(root / "data"),
        "MY_SERVICE_TOKEN": SECRET,  # a secret of the server's environment: never in an answer
        **extra,
    }
    if llm is not None:
        env |= {"OPENAI_BASE_URL": llm.openai_base_url, "OPENAI_API_KEY": KEY}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "lfassist_jupyter.mcp", "--root", str(root)], env=env, cwd=str(root)
    )


class Agent:
    """One client session; every answer it got is kept, to look for secrets in all of them."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.seen: list[str] = []
        self.progress: list[tuple[float, float | None, str | None]] = []

    async def call(self, name: str, **arguments: Any) -> tuple[bool, Any]:
        """(is_error, the structured answer or the error text)."""

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            self.progress.append((done, total, message))

        result = await self.session.call_tool(name, arguments, progress_callback=on_progress)
        texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
        self.seen += texts
        self.seen.append(json.dumps(result.structuredContent))
        if result.isError:
            return True, " ".join(texts)
        return False, result.structuredContent


async def run_agent(server: StdioServerParameters, script, errlog: Any = None) -> Agent:
    """Run ``script`` as one agent; its answers never mention a notebook (an agent has none)."""
    async with (
        stdio_client(server, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        agent = Agent(session)
        await script(agent)
    assert not [text for text in agent.seen if "notebook" in text.lower()]
    return agent


async def test_tools_validate_build_probe_save_export(tmp_path):
    async def script(agent: Agent) -> None:
        listed = await agent.session.list_tools()
        names = {t.name for t in listed.tools}
        assert names == {
            "generate_component",
            "validate_component",
            "build_flow",
            "validate_flow",
            "probe_run_flow",
            "save_flow",
            "export_extension",
        }  # no register tools: no LANGFLOW_URL
        assert all(t.description and t.outputSchema for t in listed.tools)

        error, good = await agent.call("validate_component", code=GOOD)
        assert not error and good["is_valid"] and good["class_name"] == "UppercaseComponent"
        assert good["smoke"] == "passed" and good["smoke_outputs"]["output"]["returned"] == "Message"
        assert any(message == "Validated" for _, _, message in agent.progress)
        error, bad = await agent.call("validate_component", code=DATA_LIST_BUG)
        assert not error and not bad["is_valid"] and bad["phase"] == "smoke" and "crashes" in bad["error"]

        error, built = await agent.call("build_flow", spec=ECHO_QA)
        assert not error and built["ok"] and built["report"]["is_valid"] and "id" not in built["flow"]
        error, run = await agent.call("probe_run_flow", flow=built["flow"], input_text="what is MCP?")
        assert not error and run["ok"] and run["text"] == "Answer this: what is MCP?"
        error, checked = await agent.call("validate_flow", flow=json.dumps(built["flow"]))
        assert not error and checked["is_valid"] and checked["verdict"] == "sound"
        # A flow needing a package the server's sandbox lacks: not judged, never valid, named.
        error, lacking = await agent.call("build_flow", spec=GROQ_SPEC)
        assert not error and lacking["report"]["verdict"] == "not_judged" and not lacking["report"]["is_valid"]
        assert [p["distribution"] for p in lacking["report"]["missing_packages"]] == ["langchain-groq"]

        error, saved = await agent.call("save_flow", flow=built["flow"], path="flows/qa")
        assert not error and saved["path"] == str(tmp_path / "flows" / "qa.json") and saved["id_source"] == "new"
        error, again = await agent.call("save_flow", flow=built["flow"], path="flows/qa.json")
        assert not error and again["id"] == saved["id"] and again["id_source"] == "file"

        error, exported = await agent.call("export_extension", components=[GOOD, DATA_LIST_BUG], directory="ext")
        assert not error and exported["components"] == ["UppercaseComponent"] and len(exported["skipped"]) == 1

    agent = await run_agent(params(tmp_path, LFASSIST_PROVISION="no"), script)
    assert lfx("validate", str(tmp_path / "flows" / "qa.json"), "--level", "3").returncode == 0
    assert lfx("extension", "validate", str(tmp_path / "ext")).returncode == 0
    assert not any(SECRET in text for text in agent.seen)


def keyed_flow(name: str) -> dict[str, Any]:
    """A flow file's content with a key typed into a node's password field."""
    field = {"type": "str", "password": True, "load_from_db": False, "value": TYPED_KEY}
    node = {"id": "A", "data": {"id": "A", "type": "ChatOutput", "node": {"template": {"api_key": field}}}}
    return {"name": name, "data": {"nodes": [node], "edges": []}}


def run_intent(flow: str) -> str:
    return json.dumps({"translation": f"run {flow} on hi", "intent": "run_flow", "flow": flow, "input": "hi"})


async def test_generate_component_through_the_configured_provider(llm, tmp_path):
    """The fake model server answers with the real OpenAI SDK's wire format; the component it
    writes carries the server's secret, which the answer must not.  A request to run a flow file
    reads it from the agent's flows folder only: a path outside the root ("run /any/path.json")
    reads nothing; the control, the same file in <root>/flows/, is read and answered (so files are
    read and answered), without the key typed into it."""
    leaky = GOOD.replace('display_name="Text")', f'display_name="Text", value="{SECRET}")')
    llm.queue(intent("generate_component"), fenced(leaky))
    root = tmp_path / "root"
    (root / "flows").mkdir(parents=True)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(keyed_flow("Outside")))
    (root / "flows" / "inside.json").write_text(json.dumps(keyed_flow("Inside")))
    llm.queue(run_intent(str(outside)), run_intent("inside.json"))

    async def script(agent: Agent) -> None:
        error, outcome = await agent.call("generate_component", request="a component that uppercases a text")
        assert not error, outcome
        assert outcome["kind"] == "component" and outcome["validated"] and outcome["class_name"] == "UppercaseComponent"
        assert outcome["report"]["is_valid"] and 'value="***"' in outcome["code"]  # where the secret was
        steps = [message for _, _, message in agent.progress]
        assert any(m.startswith("Generating") for m in steps) and any(m.startswith("Validat") for m in steps)

        error, ran = await agent.call("generate_component", request=f"run {outside} on hi")
        assert not error and ran["flow"] is None and ran["result"].startswith("No flow named")
        error, ran = await agent.call("generate_component", request="run inside.json on hi")
        assert not error and ran["flow"]["name"] == "Inside" and "the file inside.json" in ran["result"]
        assert ran["flow"]["data"]["nodes"][0]["data"]["node"]["template"]["api_key"]["value"] == ""

    agent = await run_agent(params(root, llm), script)
    assert not any(SECRET in text or KEY in text or TYPED_KEY in text for text in agent.seen)


async def test_hostile_arguments_are_one_tool_error_each(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"

    async def script(agent: Agent) -> None:
        hostile = {
            ("validate_component", "code"): "x" * 300_000,
            ("validate_flow", "flow"): "[" * 200_000,
            ("save_flow", "path"): str(outside),
            ("generate_component", "request"): "write " * 5_000,
            ("build_flow", "spec"): "nodes:\n" + "  A: ChatInput\n" * 20_000,
        }
        for (tool, field), value in hostile.items():
            arguments = {field: value}
            if tool == "save_flow":
                arguments["flow"] = {"data": {"nodes": [], "edges": []}}
            error, text = await agent.call(tool, **arguments)
            assert error, (tool, text)
            assert "\n" not in text.strip() and len(text) < 400 and "Traceback" not in text, text
        error, text = await agent.call("validate_component", code=12)
        assert error and "Traceback" not in text
        # Nested past the SDK's JSON parser (200 levels): an error answer, not a wait for ever.
        deep: dict[str, Any] = {}
        for _ in range(205):
            deep = {"a": deep}
        with pytest.raises(McpError, match="nested too deeply"):
            await agent.session.call_tool(
                "validate_flow", {"flow": {"data": {"nodes": [deep], "edges": []}}}, read_timeout_seconds=ANSWER_WITHIN
            )
        error, text = await agent.call("probe_run_flow", flow={"data": "nope"})
        assert error and "data.nodes" in text
        # Controls: the same tools on good arguments, and the server still answers.
        error, report = await agent.call("validate_component", code=GOOD)
        assert not error and report["is_valid"]
        error, saved = await agent.call("save_flow", flow={"data": {"nodes": [], "edges": []}}, path="inside.json")
        assert not error and Path(saved["path"]).parent == tmp_path / "flows"

    await run_agent(params(tmp_path), script)
    assert not outside.exists()


async def test_a_secret_in_a_flow_or_code_never_comes_back(tmp_path):
    spec = ECHO_QA.replace("Answer this: {question}", f"Answer with {SECRET}: {{question}}")

    async def script(agent: Agent) -> None:
        error, built = await agent.call("build_flow", spec=spec)
        assert not error and built["ok"]
        error, run = await agent.call("probe_run_flow", flow=built["flow"], input_text="hi")
        assert not error and run["ok"] and run["text"] == "Answer with ***: hi"
        error, report = await agent.call("validate_component", code=GOOD.replace("Uppercases a text.", SECRET))
        assert not error and report["is_valid"]
        error, text = await agent.call("validate_flow", flow=f'{{"data": {{"nodes": "{SECRET}"}}}}')
        assert error and "data.nodes" in text

    agent = await run_agent(params(tmp_path), script)
    assert agent.seen and not any(SECRET in text for text in agent.seen)


async def test_register_tools_with_a_configured_langflow(tmp_path):
    """With LANGFLOW_URL (and a key) the register tools are offered; a flow saved and then
    registered is stored in Langflow under the file's id (a fake Langflow speaking 1.13's API).

    The URL carries a token in its user part: no answer and no line of the server's log repeats
    it (httpx logs each request's URL).  Issue 41: eight register_component calls the moment the
    server answers (while the sandbox warms up) are each answered, none with an import race's
    KeyError (before the fix, about one call in six; ``test_the_import_race_it_had``)."""
    from _support.fakelangflow import FakeLangflow

    errlog = tmp_path / "server.log"
    with FakeLangflow() as langflow, errlog.open("w") as log:

        async def script(agent: Agent) -> None:
            calls = [agent.call("register_component", code=GOOD.replace("Uppercase", f"Up{i}")) for i in range(8)]
            for _, text in await asyncio.gather(*calls):
                assert "KeyError" not in str(text) and "\n" not in str(text).strip(), text
            names = {t.name for t in (await agent.session.list_tools()).tools}
            assert {"register_component", "register_flow"} <= names
            error, built = await agent.call("build_flow", spec=ECHO_QA)
            assert not error
            error, saved = await agent.call("save_flow", flow=built["flow"], path="qa.json")
            flow = json.loads(Path(saved["path"]).read_text())
            error, registered = await agent.call("register_flow", flow=flow)
            assert not error and registered["created"] and registered["id"] == saved["id"]
            assert registered["link"] == f"{langflow.url}/flow/{saved['id']}"  # the URL, less its token
            error, text = await agent.call("register_component", code=GOOD.replace("return", "eval('1'); return"))
            assert error and "security scan refuses" in text
            # Issue 30: a flow whose built-in node carries extra code is neither saved nor sent.
            poisoned = json.loads(json.dumps(built["flow"]))
            for node in poisoned["data"]["nodes"]:
                if node["data"]["type"] == "ChatOutput":
                    code = node["data"]["node"]["template"]["code"]
                    code["value"] = "import os; os.system('id')\n" + code["value"]
            error, text = await agent.call("save_flow", flow=poisoned, path="poisoned.json")
            assert error and "security scan refuses" in text and not (tmp_path / "flows" / "poisoned.json").exists()
            error, text = await agent.call("register_flow", flow=poisoned)
            assert error and "security scan refuses" in text and "nothing was sent" in text

        url = langflow.url.replace("://", f"://{URL_TOKEN}@")
        # COLUMNS: the log's lines whole (Rich wraps at 80 columns, and could split the token)
        extra = {"LANGFLOW_URL": url, "LANGFLOW_API_KEY": "lf-mcp-test-key-0123456789", "COLUMNS": "1000"}
        agent = await run_agent(params(tmp_path, **extra), script, errlog=log)
    logged = errlog.read_text()
    assert langflow.url.removeprefix("http://") in logged  # the control: the log names the server
    assert not any("lf-mcp-test-key-0123456789" in text or URL_TOKEN in text for text in agent.seen)
    assert URL_TOKEN not in logged


def test_help_and_no_jupyter(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "lfassist_jupyter.mcp", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "claude mcp add lfassist -- python -m lfassist_jupyter.mcp" in done.stdout
    assert '"mcp_servers": [{"name": "lfassist", "command": "python"' in done.stdout
    probe = (
        "import sys, asyncio, lfassist_jupyter.mcp as m\n"
        "server = m.build_server('.')\n"
        "asyncio.run(server.list_tools())\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] in "
        "('IPython', 'ipykernel', 'anywidget', 'ipywidgets', 'ipylab', 'traitlets', 'lfx')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "lfassist_jupyter.mcp", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "unknown arguments: --bogus" in bad.stderr


async def test_generate_component_remembers_the_conversation(llm, tmp_path):
    """A follow-up changes the component the server answered last (one conversation per server
    process); new_conversation starts afresh, and the control shows the difference."""
    llm.queue(intent("generate_component"), fenced(GOOD))
    llm.queue(intent("generate_component"), fenced(LOWER_AND_UPPER))
    llm.queue(intent("generate_component"), fenced(GOOD))

    async def script(agent: Agent) -> None:
        error, first = await agent.call("generate_component", request="a component that uppercases a text")
        assert not error and first["class_name"] == "UppercaseComponent"
        error, second = await agent.call("generate_component", request="now make it also lowercase the text")
        assert not error and second["validated"] and second["class_name"] == "CaseComponent"
        error, fresh = await agent.call(
            "generate_component", request="now make it also lowercase the text", new_conversation=True
        )
        assert not error and fresh["class_name"] == "UppercaseComponent"

    await run_agent(params(tmp_path, llm), script)
    assert len(llm.requests) == 6  # each request: the classification, then the generation
    follow_up, afresh = llm.requests[3], llm.requests[5]
    assert "class UppercaseComponent" in json.dumps(follow_up.body["messages"])  # the last component came along
    assert "class UppercaseComponent" not in json.dumps(afresh.body["messages"])  # the control: nothing did


def ipython_runs(config: Path, tmp_path: Path) -> bool:
    """Whether IPython, started with ``config`` as its profile's ``ipython_config.json``, runs
    what the file says: its ``exec_lines`` create the marker file ``IPYTHON_MARKER``."""
    ipython_dir = tmp_path / "ipython-check"
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_config.json").write_bytes(config.read_bytes())
    marker = tmp_path / IPYTHON_MARKER
    marker.unlink(missing_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "IPython", f"--ipython-dir={ipython_dir}", "--no-banner", "-c", "pass"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return marker.exists()


IPYTHON_MARKER = "ran-from-a-flow-file"


async def test_save_flow_writes_only_flow_files_in_its_folder(tmp_path):
    """``save_flow`` writes flow files in <root>/flows/ and nowhere else: not a hidden path (an
    IPython profile's config, an export's marker), not the root itself or beside it, not through
    a link out of the folder or into a hidden one.  A flow file holds a flow's known fields only.

    The control: the hostile flow is a live IPython config (its exec_lines run when the file is
    the profile's ipython_config.json), while the file save_flow writes from it, placed there
    instead, runs nothing; ``export_extension`` refuses hidden folders and the flows folder."""
    root = tmp_path / "root"
    root.mkdir()
    beside = tmp_path / "root.json"
    empty = {"data": {"nodes": [], "edges": []}}
    hostile = {
        "InteractiveShellApp": {"exec_lines": [f"open({IPYTHON_MARKER!r}, 'w').close()"]},
        "name": "Looks like a flow",
        "data": {"nodes": [], "edges": [], "extra": {"keep": "me"}},
    }
    (root / "flows").mkdir()
    (tmp_path / "outside").mkdir()
    (root / "flows" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / ".ipython" / "profile_default").mkdir(parents=True)
    (root / "flows" / "profile").symlink_to(root / ".ipython" / "profile_default", target_is_directory=True)

    async def script(agent: Agent) -> None:
        refused = [
            ".ipython/profile_default/ipython_config.json",
            str(root / ".ipython/profile_default/ipython_config"),
            "profile/ipython_config.json",  # a link in the flows folder to a hidden one
            ".lfassist-export.json",
            "ext/.lfassist-export.json",
            "out/escaped.json",  # a link out of the root
            "../beside.json",
            str(tmp_path / "beside.json"),
            ".",
            "sub/..",
            "flows",
            str(root),
        ]
        for path in refused:
            error, text = await agent.call("save_flow", flow=hostile, path=path)
            assert error and "\n" not in text.strip() and str(root / "flows") in text, (path, text)
        for directory in (".hidden-bundle", "flows/bundle", "flows"):
            error, text = await agent.call("export_extension", components=[GOOD], directory=directory)
            assert error and "\n" not in text.strip(), (directory, text)
        error, saved = await agent.call("save_flow", flow=hostile, path="looks_like_a_flow")
        assert not error and saved["path"] == str(root / "flows" / "looks_like_a_flow.json")
        error, again = await agent.call("save_flow", flow=empty, path="flows/looks_like_a_flow.json")
        assert not error and again["path"] == saved["path"] and again["id"] == saved["id"]

    await run_agent(params(root), script)
    assert not beside.exists() and not list((tmp_path / "outside").iterdir())
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == [
        "flows/looks_like_a_flow.json"
    ]
    written = root / "flows" / "looks_like_a_flow.json"
    content = json.loads(written.read_text())
    assert set(content) <= {
        "id",
        "name",
        "description",
        "tags",
        "is_component",
        "data",
        "endpoint_name",
        "icon",
        "icon_bg_color",
        "locked",
        "mcp_enabled",
        "webhook",
        "action_name",
        "action_description",
    }
    assert set(content["data"]) == {"nodes", "edges", "viewport"}
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(hostile))
    assert ipython_runs(payload, tmp_path)  # the control: as the agent sent it, IPython runs it
    assert not ipython_runs(written, tmp_path)  # as save_flow writes it: nothing


def test_messages_the_sdk_cannot_parse_are_answered(tmp_path):
    """Raw stdio bytes, as any client may send them: a line that is not JSON, JSON that is not
    JSON-RPC, and a request nested past the SDK's JSON parser (200 levels: pydantic's recursion
    limit; 250 and 100,000 levels) each get a JSON-RPC error (the request's id when it has one),
    and the server goes on answering.  The control: the SDK's own parser refuses those lines
    (its transport then only logged the error, and the client waited for ever).

    The same server has a LANGFLOW_URL with a token in its user part and nothing listening
    there: register_component answers one line, without the token and without a notebook."""
    import select

    from mcp.types import JSONRPCMessage
    from pydantic import ValidationError

    def call(request_id: Any, arguments: str) -> str:
        return (
            f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "tools/call", '
            f'"params": {{"name": "validate_flow", "arguments": {arguments}}}}}'
        )

    lines = {  # what is sent: (the line, the id the answer must carry, its error code)
        "not json": ("{not json", None, -32700),
        "not json-rpc": ('{"id": 7, "hello": "there"}', 7, -32600),
        "250 levels": (call(8, '{"flow": {"data": {"nodes": ' + "[" * 250 + "]" * 250 + "}}}"), 8, -32600),
        "100,000 levels": (call("deep", '{"flow": ' + "[" * 100_000 + "]" * 100_000 + "}"), "deep", -32600),
    }
    for text, _, _ in lines.values():
        with pytest.raises(ValidationError):
            JSONRPCMessage.model_validate_json(text)  # the control

    server = params(tmp_path, LANGFLOW_URL=f"http://{URL_TOKEN}@127.0.0.1:9/", COLUMNS="1000")
    stderr = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [server.command, *server.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=server.env,
        cwd=server.cwd,
    )

    def send(message: Any) -> None:
        proc.stdin.write((message if isinstance(message, str) else json.dumps(message)).encode() + b"\n")
        proc.stdin.flush()

    def answer() -> dict[str, Any]:
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 120)
            assert ready, "no answer within 120 s"
            got = json.loads(proc.stdout.readline())
            if "id" in got:  # notifications (log messages) are not answers
                return got

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert answer()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for what, (text, request_id, code) in lines.items():
            send(text)
            got = answer()
            assert got["id"] == request_id and got["error"]["code"] == code, (what, got)
        send(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "register_component", "arguments": {"code": GOOD}},
            }
        )
        got = answer()
        said = got["result"]["content"][0]["text"]
        assert got["id"] == 9 and got["result"]["isError"] and "Could not reach Langflow" in said, got
        assert URL_TOKEN not in said and "notebook" not in said.lower() and "\n" not in said
        send({"jsonrpc": "2.0", "id": 10, "method": "tools/list"})
        assert len(answer()["result"]["tools"]) == 9  # still serving
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        stderr.close()
    assert URL_TOKEN not in (tmp_path / "server.log").read_text()


RACE = """
import importlib._bootstrap, importlib.machinery, sys, threading, time
in_package, in_static, tool_thread = threading.Event(), threading.Event(), []

def tool_waits_for_a_lock():
    '''Until the tool's thread waits for a module lock (the one the warm-up thread holds).'''
    deadline = time.monotonic() + 60
    while tool_thread[0] not in importlib._bootstrap._blocking_on and time.monotonic() < deadline:
        time.sleep(0.001)

class Pause:
    '''Holds the warm-up thread inside the validation package's __init__ until the tool's thread
    is inside validation.static and waits there: the interleaving that happened now and then.'''
    def find_spec(self, name, path=None, target=None):
        if name not in ("lfassist_jupyter.validation", "lfassist_jupyter.validation.static"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            if name == "lfassist_jupyter.validation":
                in_package.set(); in_static.wait(60); tool_waits_for_a_lock()
            else:
                in_static.set()
            run(module)
        spec.loader.exec_module = exec_module
        return spec

if sys.argv[1] == "fixed":
    import lfassist_jupyter.mcp
    lfassist_jupyter.mcp._import_tools()  # what the server does before it answers
sys.meta_path.insert(0, Pause())
errors = []
def warm_up():
    try:
        import lfassist_jupyter.sandbox.client  # what the warm-up thread's warm_up() -> shared() imports
    except BaseException as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
def tool():
    tool_thread.append(threading.get_ident())
    in_package.wait(60 if sys.argv[1] == "lazy" else 1)
    try:
        from lfassist_jupyter.validation.static import validate_static  # register_component's
    except BaseException as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=tool), threading.Thread(target=warm_up)]
for t in threads: t.start()
for t in threads: t.join()
print(errors)
"""


def test_the_import_race_it_had():
    """Issue 41's ``KeyError: 'lfassist_jupyter.validation'``, made reproducible: the warm-up
    thread and a tool's first import entering the validation package from opposite ends deadlock
    on the import locks; Python hands one a partly imported module, the package's import fails
    and leaves ``sys.modules``, and the tool's import ends in the KeyError.  The control runs it
    as the server used to (imports left to the first call); the server imports what its tools
    need before it answers, and then the same two threads find everything imported."""

    def run(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", RACE, mode], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    raced = run("lazy")
    assert "KeyError: 'lfassist_jupyter.validation'" in raced, raced  # the control
    assert run("fixed") == "[]"


def test_tool_modules_are_every_module_a_tool_imports():
    """``TOOL_MODULES`` (imported before the server answers) names every ``lfassist_jupyter``
    module the server's code imports inside a function."""
    import ast

    import lfassist_jupyter.mcp as server

    tree = ast.parse(Path(server.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lfassist_jupyter")
    }
    assert imported and imported <= set(server.TOOL_MODULES), imported - set(server.TOOL_MODULES)


async def test_a_bug_of_ours_is_one_line_and_a_logged_traceback(caplog, monkeypatch):
    """An exception that is not a tool's answer to bad input: the agent gets one line, the log
    the traceback, both without the secrets of the environment."""
    import lfassist_jupyter.mcp as server

    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)

    def buggy(value: Any) -> dict[str, Any]:
        raise KeyError(f"{SECRET}\nsecond line")

    monkeypatch.setattr(server, "_flow", buggy)  # a stand-in for a bug in what validate_flow calls
    mcp_server = server.build_server(".")
    with caplog.at_level("ERROR", logger="lfassist_jupyter.mcp"), pytest.raises(Exception) as raised:
        await mcp_server.call_tool("validate_flow", {"flow": {"data": {"nodes": [], "edges": []}}})
    said = str(raised.value)
    assert "KeyError" in said and "bug of the lfassist server" in said and "\n" not in said and SECRET not in said
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Traceback (most recent call last)" in logged and "validate_flow" in logged and SECRET not in logged
