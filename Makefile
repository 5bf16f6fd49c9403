# Every target sets itself up from nothing: a .venv in the repo root with the project installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Agent CLIs that ship on npm only (OpenCode, Copilot, Gemini CLI), pinned exactly; see
# docs/backends.md.
TOOLS := .tools
TOOLS_STAMP := $(TOOLS)/.installed
NPM_TOOLS := opencode-ai@1.18.33 @github/copilot@1.0.102 @google/gemini-cli@0.61.0
CONFIG ?= tests/conformance/tck.json
PYTEST_ARGS ?=
# Test processes (pytest-xdist): one per core; each test module stays on one worker, so the
# contract suite's module-scoped daemons start once.
TEST_WORKERS ?= auto

.PHONY: run test lint bench clean crew crew-up crew-down crew-demo

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,lint,claude,codex,copilot,antigravity,acp]"
	touch $(STAMP)

$(TOOLS_STAMP): Makefile
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
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache

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
