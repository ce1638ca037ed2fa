"""The e2e tests' one JupyterLab (``_support/jupyterlab.py``), shared by the browser tests and the
Jupyter AI tests: one server start for the run, not one per module."""

from __future__ import annotations

import pytest
from _support.fakellm import FakeLLM
from _support.jupyterlab import lab_server


@pytest.fixture(scope="session")
def llm_server():
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="session")
def lab(llm_server, tmp_path_factory):
    """JupyterLab serving a fresh root, the engine (kernels and the persona alike) on ``llm_server``."""
    root = tmp_path_factory.mktemp("lab")
    with lab_server(root, llm_server.openai_base_url) as url:
        yield url, root


@pytest.fixture(autouse=True)
def _own_replies(request):
    """Each test starts with an empty reply queue: the server is shared by the session, and a
    failed test's unread replies would otherwise answer the next test's requests."""
    if "llm_server" in request.fixturenames:
        request.getfixturevalue("llm_server").clear()
    yield
