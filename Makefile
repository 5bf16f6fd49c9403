# Every target sets itself up from nothing: a .venv in the repo root with the project installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Agent CLIs that ship on npm only (OpenCode, Copilot, Gemini CLI), pinned exactly in
# wrappers/npm-agents.txt, the list `a2a-wrapper agents install` uses too; see docs/backends.md.
TOOLS := .tools
TOOLS_STAMP := $(TOOLS)/.installed
NPM_PINS := wrappers/npm-agents.txt
NPM_TOOLS := $(shell awk '!/^\#/ && NF { print $$2 }' $(NPM_PINS))
# `make run`: the echo agent (no model, no credentials); CONFIG=config/claude.json for another.
CONFIG ?= config/echo.json
PYTEST_ARGS ?=
# Test processes (pytest-xdist): one per core; each test module stays on one worker, so the
# contract suite's module-scoped daemons start once.
TEST_WORKERS ?= auto

.PHONY: run test lint bench clean crew crew-up crew-down crew-demo dist image image-smoke tck

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# The distribution was called a2a-wrapper before it had a name of its own.
	$(BIN)/pip uninstall --quiet --yes a2a-wrapper 2>/dev/null || true
	$(BIN)/pip install --quiet -e ".[test,lint,claude,codex,copilot,antigravity,acp]"
	touch $(STAMP)

$(TOOLS_STAMP): Makefile $(NPM_PINS)
	mkdir -p $(TOOLS)
	npm install --prefix $(TOOLS) --no-save --no-audit --no-fund --loglevel=error $(NPM_TOOLS)
	touch $(TOOLS_STAMP)

run: $(STAMP) $(TOOLS_STAMP)
	$(BIN)/a2a-wrapper serve $(CONFIG)

test: $(STAMP) $(TOOLS_STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Benchmarks (docs/performance.md). `make bench BENCH_ARGS=--quick` is the smoke run.
# The SDK baseline runs on uvicorn with httptools, as aiohttp runs on its C parser; wrk (a
# Debian package) is the load generator when present, else the Python one in bench/load.py.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=

$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet httptools==0.9.0 py-spy==0.4.3
	touch $(BENCH_STAMP)

bench: $(STAMP) $(BENCH_STAMP)
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq wrk >/dev/null; } \
		|| echo "wrk not installed: using bench/load.py as the load generator"
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache dist build

# The wheel and the sdist, in dist/ (what `pip install` and `uv tool install` take).
dist: $(STAMP)
	rm -rf dist build
	$(BIN)/python -m build --outdir dist .

# The container image (deploy/Containerfile, docs/operations.md#container): built with buildah
# from a Debian base made with mmdebstrap (no container registry is needed). As root.
# AGENTS: the npm agent CLIs to install in it (opencode copilot gemini, or none); EXTRAS: the
# SDK extras. `make image-smoke` runs the image's daemon with the echo agent and sends it a message.
IMAGE ?= localhost/a2a-wrapper:latest
AGENTS ?= opencode
EXTRAS ?= claude,codex
image:
	IMAGE=$(IMAGE) AGENTS="$(AGENTS)" EXTRAS="$(EXTRAS)" deploy/build-image.sh

image-smoke:
	IMAGE=$(IMAGE) deploy/smoke-image.sh

# The official A2A conformance kit against two daemons of tests/conformance/tck.json (v1.0
# and v0.3), from a clone of github.com/a2aproject/a2a-tck: `make tck TCK=path/to/a2a-tck`.
TCK ?=
tck: $(STAMP)
	@test -n "$(TCK)" || { echo "make tck TCK=path/to/a2a-tck (a clone of github.com/a2aproject/a2a-tck)"; exit 2; }
	TCK=$(TCK) scripts/tck.sh

# examples/crew: `make crew PLAN=examples/crew/crew.json INPUT="..." [JOB=id]` runs (or resumes) a
# job against running agents; `make crew-up` / `make crew-down` start and stop the daemons a
# plan's agents name (`daemon`). `make crew-demo` runs three phases, each with the mock models:
# `up` the daemons (real CLIs), the job, `down`: write -> review -> revise (four backends),
# fix-until-green (Codex and OpenCode in worktrees, `apply`) and the cross-vendor review
# (review.json: Codex writes, Claude reviews); nothing is left running (CREW_DEMO_ARGS replaces
# --all, e.g. --scripted, --review, --keep).
PLAN ?= examples/crew/crew.json
INPUT ?=
JOB ?=
CREW_DEMO_ARGS ?=

crew: $(STAMP)
	$(BIN)/python -m examples.crew run $(PLAN) $(if $(INPUT),--input "$(INPUT)") $(if $(JOB),--job $(JOB))

crew-up crew-down: $(STAMP)
	$(BIN)/python -m examples.crew $(subst crew-,,$@) $(PLAN)

crew-demo: $(STAMP) $(TOOLS_STAMP)
	$(BIN)/python -m examples.crew.demo $(if $(CREW_DEMO_ARGS),$(CREW_DEMO_ARGS),--all)
