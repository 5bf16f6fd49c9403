# Every target sets itself up from nothing: a .venv in the repo root with the project installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= tests/conformance/tck.json
PYTEST_ARGS ?=

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,lint]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/a2a-wrapper serve $(CONFIG)

test: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench.throughput

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
