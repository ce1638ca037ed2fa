# Two commands do all the set-up: `make demo` runs the main job and `make test` passes the
# tests; each builds what it needs (.venv, the JS bundle, Chromium for the browser tests), and
# `make demo` installs only what the demo runs (the `demo` extra), not the test toolchain.
# `make test-fast` is the quick loop while working: lint and the tests not marked slow,
# browser or langflow (no real kernel, no whole-corpus scan, no Langflow server, no notebooks),
# spread over the cores by pytest-xdist (each worker starts its own warm sandbox).  `make test`,
# what CI runs, runs the tests not marked slow in two workers (a file stays in one worker, the
# Langflow server's tests in one: tests/conftest.py), then the browser tests and the demo
# notebooks in one process (a page's and a notebook's steps in order, which xdist does not keep).
# `make test-all` adds the slow ones (real kernels at every door, whole corpora, the notebook loop
# in fresh kernels, Jupyter AI): about twice as long.
# Only Python 3.10+, pip, node/npm (and apt, for Chromium) are required on the machine.

PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
STAMP    := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed
DOCS_STAMP := $(VENV)/.docs-installed
BUNDLE   := lfassist_jupyter/static/widget.js
CHROMIUM ?= /usr/bin/chromium

.PHONY: test test-all test-fast demo docs lint bench screenshots clean

$(BUNDLE): js/widget.js js/widget.css package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	npm run build --silent

$(STAMP): pyproject.toml $(BUNDLE)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv venv --quiet --allow-existing --python $(PYTHON) $(VENV)
	# --compile-bytecode: the validation worker imports lfx in a fresh process; without
	# .pyc files every worker start recompiles it (15 s instead of 2.5 s).
	$(PYTHON) -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[test]"
	touch $(STAMP) $(DEMO_STAMP) $(DOCS_STAMP)

# What the demo runs: lfx and a kernel (the test extra is a superset of it).
$(DEMO_STAMP): pyproject.toml $(BUNDLE)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv venv --quiet --allow-existing --python $(PYTHON) $(VENV)
	$(PYTHON) -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[demo]"
	touch $(DEMO_STAMP)

# MkDocs alone: the site needs nothing of the package.
$(DOCS_STAMP): pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv venv --quiet --allow-existing --python $(PYTHON) $(VENV)
	$(PYTHON) -m uv pip install --quiet --python $(BIN)/python "mkdocs>=1.6,<2"
	touch $(DOCS_STAMP)

# Debian's chromium for the browser tests (never `playwright install`).
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "Chromium is not installed and cannot be installed here: the browser tests will be skipped."; \
	fi

test: $(STAMP) $(CHROMIUM)
	$(BIN)/ruff check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/ruff format --check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder -m "not slow and not browser" tests
	$(BIN)/python -m pytest -q -m "not slow" tests/e2e/test_browser.py notebooks

test-all: $(STAMP) $(CHROMIUM)
	$(BIN)/ruff check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/ruff format --check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder -m "not browser" tests
	$(BIN)/python -m pytest -q tests/e2e/test_browser.py tests/e2e/test_jupyter_ai.py notebooks

# The markers are declared in pyproject.toml; `tests` alone leaves out the nbval notebooks (kernels).
test-fast: $(STAMP)
	$(BIN)/ruff check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/ruff format --check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 -m "not slow and not browser and not langflow" tests

# The main job, offline unless a provider is configured: executes notebooks/quickstart.ipynb
# and writes notebooks/_build/quickstart.ipynb and .html.  `make demo ARGS=--all` runs them all.
demo: $(DEMO_STAMP)
	$(BIN)/python notebooks/run_demo.py $(ARGS)

# The documentation site (docs/, mkdocs.yml) into site/; warnings (a broken link or anchor) are errors
# (never --quiet: it hides the warnings from --strict, which then passes a broken link).
docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict

# ruff, the layering (.importlinter: which package may import which), then the types (mypy over
# the scope [tool.mypy] names in pyproject.toml; tests/test_types.py holds its budget of ignores).
lint: $(STAMP)
	$(BIN)/ruff check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/ruff format --check lfassist_jupyter tests benchmarks notebooks
	$(BIN)/lint-imports
	$(BIN)/mypy

# Refresh the README's screenshots from the browser suite.
screenshots: $(STAMP) $(CHROMIUM)
	LFASSIST_UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/e2e/test_browser.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) site node_modules lfassist_jupyter/static .pytest_cache .ruff_cache .import_linter_cache .mypy_cache benchmarks/results notebooks/_build tests/_artifacts
