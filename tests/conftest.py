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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`make test` spreads the suite over two pytest-xdist workers (``--dist loadgroup``): a
    file's tests stay in one worker (its module fixtures are made once), and every test of the
    real Langflow server, or of the JupyterLab the browser drives, runs in one worker, so each
    server starts once.  Without xdist the marks do nothing."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if item.get_closest_marker("langflow") or "langflow_server" in names:
            group = "langflow"
        elif item.get_closest_marker("browser"):
            group = "browser"
        else:
            group = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
