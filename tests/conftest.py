"""Shared fixtures: the fake LLM server, a real sandbox, and a clean environment."""

from __future__ import annotations

import atexit
import gc
import signal
import sys

import pytest
from _support.components import SHELL_KEY
from _support.fakellm import FakeLLM

_PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OLLAMA_BASE_URL",
    "LFASSIST_SCRIPT",
    "LFASSIST_PROVIDER",
    "LFASSIST_MODEL",
    "LFASSIST_INTENT_MODEL",
    "LANGFLOW_URL",
    "LANGFLOW_API_KEY",
)


@pytest.fixture(scope="session", autouse=True)
def shells_closed_at_the_end():
    """Close the run's IPython shells once, at the end, without IPython's exit clean-up.

    Every ``InteractiveShell`` registers ``atexit_operations``, which resets its namespace and
    runs a full ``gc.collect()``: with lfx and pydantic loaded, about a second per shell, and a
    run creates a shell per magic test -- minutes of exit after the last test. Their history is
    closed here instead (the saving thread stopped, the database closed); nothing else of that
    clean-up matters to a test process about to exit."""
    yield
    interactiveshell = sys.modules.get("IPython.core.interactiveshell")
    if interactiveshell is None:
        return
    for shell in [o for o in gc.get_objects() if isinstance(o, interactiveshell.InteractiveShell)]:
        atexit.unregister(shell.atexit_operations)
        if shell.history_manager is not None:
            shell.history_manager.end_session()
            shell.history_manager.close()
            shell.history_manager = None


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No real keys leak into tests; sessions go to a temporary directory."""
    for var in _PROVIDER_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LFASSIST_DATA_DIR", str(tmp_path / "data"))
    yield


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="session")
def sandbox():
    """One real, warm validation worker for the whole run (as in a kernel)."""
    from lfassist_jupyter.sandbox import use_shared
    from lfassist_jupyter.sandbox.client import SandboxValidator

    validator = SandboxValidator(timeout=10)
    validator.start()
    # What the edges do without a sandbox handed in (lfassist_jupyter.build_flow, validate_flow,
    # an Assistant's default) uses the shared one: the same warm worker, not a second one.
    previous = use_shared(validator)
    yield validator
    use_shared(previous)
    validator.close()


@pytest.fixture
def no_shared_sandbox():
    """No shared sandbox for the test (the next ``shared()`` makes a fresh one, from the settings
    of the moment); the one made meanwhile is closed, the one before put back."""
    from lfassist_jupyter.sandbox import use_shared

    previous = use_shared(None)
    yield
    made = use_shared(previous)
    if made is not None and made is not previous:
        made.close()


@pytest.fixture(scope="session")
def langflow_provider():
    """The fake model provider the session's Langflow server calls (flows run there with models).

    On 127.0.0.2, not 127.0.0.1: in a container, lfx rewrites "127.0.0.1" and "localhost" in a
    provider's URL to the container's host (transform_localhost_url), which is not this machine."""
    with FakeLLM(host="127.0.0.2") as server:
        yield server


@pytest.fixture(scope="session")
def langflow_server(tmp_path_factory, langflow_provider):
    """One real Langflow server for the whole run (tests marked ``langflow``).

    Started by the first test that asks for it (a run without such tests starts none) and
    stopped at the end of the session: its start-up is the slowest thing in the suite. Tests
    that share it register components and flows under names of their own; a test that needs
    the server to vanish puts a ``_support.forwarder.Forwarder`` in front of it and stops that.
    """
    from _support.langflow_env import SERVER_KEY, Server

    # The server's environment points at the fake provider (``langflow_provider``) and holds a key,
    # which Langflow makes the global variable OPENAI_API_KEY; its admin lets flows reach that
    # address (Langflow refuses loopback addresses to flows otherwise).
    env = {
        "OPENAI_API_KEY": SERVER_KEY,
        "OPENAI_BASE_URL": langflow_provider.openai_base_url,
        "LANGFLOW_SSRF_ALLOWED_HOSTS": langflow_provider.host,
    }
    server = Server(tmp_path_factory.mktemp("langflow"), env=env)
    try:
        server.wait()
        yield server
    finally:
        server.stop()


@pytest.fixture
def make_assistant(llm, sandbox, tmp_path):
    """An Assistant on the real SDK of ``kind`` talking to the fake server."""
    from lfassist_jupyter import Assistant
    from lfassist_jupyter.core.session import SessionStore
    from lfassist_jupyter.providers import create_provider

    def make(kind: str = "openai", **kwargs):
        base = llm.openai_base_url if kind == "openai" else llm.url
        provider = create_provider(
            kind, api_key="test-key-123456", base_url=base, http_retries=kwargs.pop("sdk_retries", 0)
        )
        kwargs.setdefault("validator", sandbox)
        kwargs.setdefault("session_store", SessionStore(tmp_path / "sessions"))
        return Assistant(provider=provider, **kwargs)

    return make


@pytest.fixture
def kernel_sigint():
    """SIGINT raises KeyboardInterrupt, as in a Jupyter kernel running a cell.

    The stop-button tests use ``_thread.interrupt_main()``, which does nothing when SIGINT
    is ignored -- and a CI job launched in the background starts with SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lfassist_jupyter")
    shell.rl_next_input = None
    return shell


def _close_shell(shell) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell.run_line_magic("unload_ext", "lfassist_jupyter")
    InteractiveShell.clear_instance()


@pytest.fixture
def ip(llm, monkeypatch):
    """A real IPython shell with the extension loaded, talking to the fake model server."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SHELL_KEY)
    shell = _shell()
    yield shell
    _close_shell(shell)


@pytest.fixture
def flow_ip(sandbox, tmp_path, monkeypatch):
    """A real IPython shell whose workspace validates with the session's warm sandbox, working
    in a temporary directory (files saved by flow magics land there)."""
    from lfassist_jupyter.ui.workspace import Workspace

    monkeypatch.chdir(tmp_path)
    shell = _shell()
    magics = shell.magics_manager.registry["AssistMagics"]
    magics.workspace = Workspace(data_dir=tmp_path / "data", local_validator=sandbox)
    yield shell
    _close_shell(shell)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`make test` spreads the suite over two pytest-xdist workers (``--dist loadgroup``): a
    file's tests stay in one worker (its module fixtures are made once), and every test of the
    real Langflow server, or of the JupyterLab the browser drives, runs in one worker, so each
    server starts once.  Without xdist the marks do nothing.

    ``tryfirst``: xdist's own hook turns the marks into the ``@group`` suffix of the test ids its
    scheduler reads, so the marks must be there before it runs (a conftest's hook otherwise runs
    after it, and the groups were silently ignored).  Tests marked ``langflow`` that only read
    Langflow's files (its starter projects) stay with their file: only the server is shared."""
    grouped = bool(config.getvalue("loadgroup")) if hasattr(config, "workerinput") else False
    groups: dict[pytest.Item, str] = {}
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "langflow_server" in names:
            group = "langflow"
        elif item.get_closest_marker("browser") or "lab" in names:  # tests/e2e's one JupyterLab
            group = "browser"
        else:
            group = item.nodeid.split("::")[0]
        groups[item] = group
        item.add_marker(pytest.mark.xdist_group(group))
        if grouped:
            _suffix_with_group(item, group)
    if grouped:
        # The scheduler deals the groups out in this order (with --no-loadscope-reorder): the
        # longest first, so the last one to finish is a short one and neither worker idles long.
        first = {group: rank for rank, group in enumerate(_LONGEST_GROUPS)}
        items.sort(key=lambda item: first.get(groups[item], len(first)))


_LONGEST_GROUPS = (
    "langflow",
    "tests/sandbox/test_interpreter_reads.py",
    "tests/test_mcp.py",
    "tests/core/test_flow_pipeline.py",
    "tests/flows/test_real_flows.py",
    "tests/sandbox/test_reach.py",
    "tests/sandbox/test_one_door.py",
)
"""The groups that take longest in `make test` (summed durations, measured with --durations=0),
longest first.  Only the order in which the workers get them: a stale list costs balance, never
a test."""


def _suffix_with_group(item: pytest.Item, group: str) -> None:
    """Give ``item`` the id xdist's loadgroup scheduler reads its group from (``<id>@<group>``).

    xdist (3.8) does it by assigning ``item._nodeid``, which pytest 9.2 no longer reads (its ids
    are structured ``NodeId``s: pytest-xdist issue 1386), so every group was ignored and the tests
    were dealt out one by one -- two Langflow servers, module fixtures made again and again.  On
    a pytest that still reads ``_nodeid`` xdist's own hook does it; this does it on the newer."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9.2: xdist's hook suffixes the id
        return
    if hasattr(item, "_id"):
        item._id = NodeId.parse(f"{item.nodeid}@{group}")
