# Two commands do all the set-up: `make test` and `make bench` each build their own
# virtual environment (.venv) with everything they need.  Only Python 3.10+ and pip are
# required on the machine; uv is installed into the user's Python to make installs fast.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check uv
	$(PYTHON) -m uv venv --quiet --allow-existing --python $(PYTHON) $(VENV)
	# --compile-bytecode: the validation worker imports lfx in a fresh process; without
	# .pyc files every worker start recompiles it (15 s instead of 2.5 s).
	$(PYTHON) -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[test]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check lfassist_jupyter tests benchmarks
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check lfassist_jupyter tests benchmarks
	$(BIN)/ruff format --check lfassist_jupyter tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache benchmarks/results
