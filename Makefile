# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# dg run from the project's venv without activating it: it is told which venv is in use, so it
# does not warn that the active one differs from the project's.
DG := VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/dg
export DAGSTER_HOME := $(CURDIR)/.dagster_home
# The instance settings live here, not at the root (Dagster warns about a dagster.yaml in the
# directory it starts in); each target copies them into its own DAGSTER_HOME.
INSTANCE_DIR := deploy/instance

# Where `make ui` (and ui-postgres) serve the UI: `make ui PORT=3001`. The alert links (the
# alert_sink's run URLs) follow it through GYM_ASSETS_UI_URL, unless that is set already.
PORT ?= 3000
export GYM_ASSETS_UI_URL ?= http://127.0.0.1:$(PORT)

# Where products go (as the CLI's --data-root) and which harnesses `make harnesses` and
# `make conformance` take (empty: every one of the registry).
DATA_ROOT ?= $(or $(GYM_ASSETS_DATA_ROOT),.gym_assets)
HARNESSES ?=

.PHONY: setup sandbox-tool scale-tools browser demo ui-postgres test test-fast ui ui-check lint format bench clean \
	harnesses conformance conformance-all model model-server demo-real

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) sandbox-tool

# Model-written code is verified inside bubblewrap (docs/security.md); root installs it here.
sandbox-tool:
	@{ command -v bwrap && command -v keyctl; } >/dev/null || { [ "$$(id -u)" = 0 ] \
		&& command -v apt-get >/dev/null && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap keyutils; } \
		|| { echo "install bubblewrap and keyutils, see docs/security.md" >&2; exit 1; }

# Postgres (instance storage) and Redis (the Celery broker) for scaling out on this machine
# (docs/scale-out.md); root installs Debian's servers here, anyone else is told what to install.
scale-tools:
	@{ command -v redis-server && ls /usr/lib/postgresql/*/bin/pg_ctl; } >/dev/null 2>&1 \
		|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server >/dev/null; } \
		|| echo "install postgresql and redis-server to scale out (docs/scale-out.md); the tests that need them skip" >&2

# ui-check's screenshots need Debian's chromium; root installs it here, anyone else goes without.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] \
		&& command -v apt-get >/dev/null && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "chromium is not installed: ui-check will skip its screenshots" >&2

$(DAGSTER_HOME)/dagster.yaml: $(INSTANCE_DIR)/dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp $(INSTANCE_DIR)/dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: setup $(DAGSTER_HOME)/dagster.yaml  ## materialize every asset of the bundled configs
	$(BIN)/python -m gym_assets.definitions

test: setup scale-tools  ## run the whole test suite
	$(BIN)/python -m pytest

test-fast: setup  ## the suite without the slow tests (gym_assets_tests/conftest.py says which)
	$(BIN)/python -m pytest -m "not slow"

ui: setup $(DAGSTER_HOME)/dagster.yaml  ## serve the Dagster UI on 127.0.0.1:$(PORT) (dg dev, [tool.dg] in pyproject.toml)
	$(DG) dev -h 127.0.0.1 -p $(PORT)

# The UI on an instance whose storage is the project's own Postgres cluster (started if it is not
# running; `scripts/postgres.sh stop` stops it): dagster.postgres.yaml in its own DAGSTER_HOME.
PG_DAGSTER_HOME := $(CURDIR)/.dagster_home_postgres
ui-postgres: setup scale-tools  ## serve the Dagster UI on 127.0.0.1:$(PORT) with its instance on Postgres
	mkdir -p $(PG_DAGSTER_HOME)
	cp $(INSTANCE_DIR)/dagster.postgres.yaml $(PG_DAGSTER_HOME)/dagster.yaml
	eval "export $$(scripts/postgres.sh start)" && DAGSTER_HOME=$(PG_DAGSTER_HOME) \
		$(DG) dev -h 127.0.0.1 -p $(PORT)

ui-check: setup browser  ## the UI on a throwaway instance: launch a partition, check it through GraphQL, screenshot it
	$(BIN)/python scripts/ui_check.py

harnesses: setup  ## install cli harnesses at their pinned versions (docs/harnesses.md)
	$(BIN)/gym-assets harness install $(or $(HARNESSES),--all)

# The suite's exit code 1 (a harness does not meet the P0 gate, or is unavailable) is a result,
# written to the report; only 2 (an episode could not run or be judged) fails the target.
conformance: harnesses  ## the conformance suite for $(HARNESSES) (default all), under the data root
	$(BIN)/gym-assets conformance run $(foreach name,$(HARNESSES),--harness $(name)) \
		--output $(DATA_ROOT)/conformance/runs/$$(date -u +%Y%m%dT%H%M%SZ) || [ $$? -eq 1 ]

conformance-all:  ## install every harness of the registry and run the conformance suite for each
	$(MAKE) conformance HARNESSES=

# A real model here (llama.cpp's server, SmolLM2-135M; gym_assets/local_services/model_install.py):
# the first install on a machine compiles llama.cpp (8-30 minutes), later ones reuse the wheel.
model: setup  ## build (once) and install the local model server into .model/venv
	$(BIN)/gym-assets model install

model-server: model  ## start the local model server on 127.0.0.1 and print its --base-url (Ctrl-C stops it)
	$(BIN)/gym-assets model serve

demo-real: model  ## HumanEval and arith (first 10 tasks each) through simple_agent against the local model
	$(BIN)/python scripts/demo_real.py

lint: setup $(DAGSTER_HOME)/dagster.yaml  ## ruff, pyright, and dg check defs (every definition loads)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pyright
	$(DG) check defs

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup  ## quick benchmark runs; see bench/README.md for the full-size ones
	$(BIN)/python bench/collate.py --rows 200000
	$(BIN)/python bench/plan.py --tasks 200000
	$(BIN)/python bench/checks.py --records 2000
	$(BIN)/python bench/verification.py
	$(BIN)/python bench/dagster_runs.py
	$(BIN)/python bench/fanout.py --benchmarks 3
	$(BIN)/python bench/rollouts_vs_inspect.py --rounds 1
	$(BIN)/python bench/rollouts.py --waves 4
	$(BIN)/python bench/shards.py --rollouts 20000 --shards 4
	$(BIN)/python bench/conformance.py
	$(BIN)/python bench/harnesses.py

clean:  ## remove the products and instances (the project's own Postgres and Redis stopped first)
	-test -x $(BIN)/python && scripts/postgres.sh stop && scripts/redis.sh stop
	rm -rf .gym_assets .dagster_home .dagster_home_postgres .ui-check
