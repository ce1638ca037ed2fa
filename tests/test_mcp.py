"""The MCP server (``python -m lfassist_jupyter.mcp``) driven by the official SDK's own stdio client.

Each test starts the server as an agent would (a subprocess on stdio, its environment given
explicitly) and talks to it with ``mcp.client.stdio.stdio_client`` + ``ClientSession``: the tools
it lists, validating a good and a bad component, generating one through the fake model server,
building and probe-running a flow, saving and exporting, hostile arguments answered as one tool
error each (with controls showing the same tool works on good input), and a secret of the
server's environment that never appears in any tool output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _support.components import DATA_LIST_BUG, GOOD, LLM_SPEC, LOWER_AND_UPPER, QA_SPEC, fenced, intent, named
from _support.lfxcli import lfx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SECRET = "tok-mcp-private-value-8c1f2e9d7b"
KEY = "sk-mcp-test-key-0123456789abcdef"
ECHO_QA = named(QA_SPEC, "Echo QA")
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


async def run_agent(server: StdioServerParameters, script) -> Agent:
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        agent = Agent(session)
        await script(agent)
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


async def test_generate_component_through_the_configured_provider(llm, tmp_path):
    """The fake model server answers with the real OpenAI SDK's wire format; the component it
    writes carries the server's secret, which the answer must not."""
    leaky = GOOD.replace('display_name="Text")', f'display_name="Text", value="{SECRET}")')
    llm.queue(intent("generate_component"), fenced(leaky))

    async def script(agent: Agent) -> None:
        error, outcome = await agent.call("generate_component", request="a component that uppercases a text")
        assert not error, outcome
        assert outcome["kind"] == "component" and outcome["validated"] and outcome["class_name"] == "UppercaseComponent"
        assert outcome["report"]["is_valid"] and 'value="***"' in outcome["code"]  # where the secret was
        steps = [message for _, _, message in agent.progress]
        assert any(m.startswith("Generating") for m in steps) and any(m.startswith("Validat") for m in steps)

    agent = await run_agent(params(tmp_path, llm), script)
    assert not any(SECRET in text or KEY in text for text in agent.seen)


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
        error, text = await agent.call("probe_run_flow", flow={"data": "nope"})
        assert error and "data.nodes" in text
        # Controls: the same tools on good arguments, and the server still answers.
        error, report = await agent.call("validate_component", code=GOOD)
        assert not error and report["is_valid"]
        error, saved = await agent.call("save_flow", flow={"data": {"nodes": [], "edges": []}}, path="inside.json")
        assert not error and Path(saved["path"]).parent == tmp_path

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
    registered is stored in Langflow under the file's id (a fake Langflow speaking 1.13's API)."""
    from _support.fakelangflow import FakeLangflow

    with FakeLangflow() as langflow:

        async def script(agent: Agent) -> None:
            names = {t.name for t in (await agent.session.list_tools()).tools}
            assert {"register_component", "register_flow"} <= names
            error, built = await agent.call("build_flow", spec=ECHO_QA)
            assert not error
            error, saved = await agent.call("save_flow", flow=built["flow"], path="qa.json")
            flow = json.loads(Path(saved["path"]).read_text())
            error, registered = await agent.call("register_flow", flow=flow)
            assert not error and registered["created"] and registered["id"] == saved["id"]
            assert registered["link"].endswith(f"/flow/{saved['id']}")
            error, text = await agent.call("register_component", code=GOOD.replace("return", "eval('1'); return"))
            assert error and "security scan refuses" in text
            # Issue 30: a flow whose built-in node carries extra code is neither saved nor sent.
            poisoned = json.loads(json.dumps(built["flow"]))
            for node in poisoned["data"]["nodes"]:
                if node["data"]["type"] == "ChatOutput":
                    code = node["data"]["node"]["template"]["code"]
                    code["value"] = "import os; os.system('id')\n" + code["value"]
            error, text = await agent.call("save_flow", flow=poisoned, path="poisoned.json")
            assert error and "security scan refuses" in text and not (tmp_path / "poisoned.json").exists()
            error, text = await agent.call("register_flow", flow=poisoned)
            assert error and "security scan refuses" in text and "nothing was sent" in text

        extra = {"LANGFLOW_URL": langflow.url, "LANGFLOW_API_KEY": "lf-mcp-test-key-0123456789"}
        agent = await run_agent(params(tmp_path, **extra), script)
    assert not any("lf-mcp-test-key-0123456789" in text for text in agent.seen)


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


async def test_save_flow_never_writes_beside_the_root(tmp_path):
    """``.json`` is added to a path without it: a path that names the root itself (``.``,
    ``sub/..``) must not become ``<root>.json`` in the root's parent.  The control: a path inside
    the root is written with the suffix added."""
    root = tmp_path / "root"
    root.mkdir()
    beside = tmp_path / "root.json"
    empty = {"data": {"nodes": [], "edges": []}}

    async def script(agent: Agent) -> None:
        for path in (".", "sub/..", str(root)):
            error, text = await agent.call("save_flow", flow=empty, path=path)
            assert error and "outside the server's root" in text and "\n" not in text.strip(), (path, text)
        error, saved = await agent.call("save_flow", flow=empty, path="kept")
        assert not error and saved["path"] == str(root / "kept.json")

    await run_agent(params(root), script)
    assert not beside.exists()
    assert (root / "kept.json").exists()
