# Yul'lu — two commands: `make run` and `make test`.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)
# The test, lint and export tools on top (`make test`, `make lint`); `make run` needs none of them.
DEV_STAMP := $(VENV)/.dev-installed-$(shell cat requirements*.txt pyproject.toml | sha256sum | cut -c1-16)
# The commit the package was last installed at: its version (`yullu --version`, /api/status) comes from git when
# it is installed, so after a `git pull` that changed neither file above it still named the old commit (walk 13).
COMMIT_STAMP := $(VENV)/.commit-$(shell git rev-parse --short=12 HEAD 2>/dev/null || echo none)

.PHONY: run test lint format install install-dev clean-test browser clis

$(BIN)/python:
	@command -v $(PY) >/dev/null || { echo "Python 3.11 is required ($(PY) not found)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The package's own install is -qq: setuptools' editable build warns in a 12-line "!!" box about folders
# named like the package (there are none) on every first run; a real failure is an ERROR and still shows.
$(STAMP): $(BIN)/python requirements.txt pyproject.toml
	@echo "installing dependencies (first run takes a few minutes)…"
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -qq --disable-pip-version-check --no-deps -e .
	@rm -f $(VENV)/.installed-* $(VENV)/.commit-*
	@touch $(STAMP) $(COMMIT_STAMP)

# After a pull: the package again (no dependencies, ~10 s), so its version names this commit.
$(COMMIT_STAMP): $(STAMP)
	@echo "reinstalling the package for this commit…"
	$(BIN)/pip install -qq --disable-pip-version-check --no-deps -e .
	@rm -f $(VENV)/.commit-*
	@touch $(COMMIT_STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt requirements-export.txt
	@echo "installing test and lint tools…"
	$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt
	@rm -f $(VENV)/.dev-installed-*
	@touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

run: install $(COMMIT_STAMP)
	$(BIN)/yullu serve

# mypy's Django plugin imports the settings: give it the test home, not yours (no server starts).
lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@mkdir -p $(TEST_HOME)
	YULLU_HOME=$(TEST_HOME) YULLU_CONFIG=$(TEST_HOME)/config.toml $(BIN)/mypy
	$(BIN)/lint-imports --no-cache

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The admin's browser tests drive the system Chromium (Playwright cannot download browsers here).
# As root (CI), install the Debian package when it is missing; otherwise say how.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing chromium for the browser tests…"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
		else \
			echo "note: $(CHROMIUM) is missing; browser tests need it (sudo apt-get install chromium)"; \
		fi; \
	fi

# The plugin tests (tests/test_plugins.py) drive the real assistant CLIs from npm, pinned here;
# they validate and install plugins without a login. Node and npm come with the machine image.
CLAUDE_CODE_VERSION := 2.1.197
CODEX_VERSION := 0.169.0
CLIS_STAMP := $(VENV)/clis/.installed-$(CLAUDE_CODE_VERSION)-$(CODEX_VERSION)
$(CLIS_STAMP):
	@command -v npm >/dev/null || { echo "npm is required for the plugin tests (apt-get install npm)"; exit 1; }
	@echo "installing the Claude Code and Codex CLIs for the plugin tests…"
	npm install --prefix $(VENV)/clis --no-audit --no-fund --loglevel=error \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION)
	@rm -f $(VENV)/clis/.installed-*
	@touch $(CLIS_STAMP)

clis: $(CLIS_STAMP)

# Tests use their own YULLU_HOME and config so they never touch your data.
TEST_HOME ?= $(CURDIR)/.test-home
# pytest-xdist workers, each with its own home and embedded PostgreSQL under $(TEST_HOME)/xdist/
# (tests/conftest.py); a test file runs whole on one worker, in order (its module fixtures start
# servers once). Two on a 2-core CI: the suite waits on servers and subprocesses much of the time.
TEST_WORKERS ?= 2
# The embedded test server is stopped afterwards, whatever pytest's outcome. As root, the (private)
# test home's cluster would live in /var/lib/yullu and outlive the checkout: keep it beside the test
# home instead when the PostgreSQL user can reach that folder.
TEST_PG_BASE := $(shell $(PY) -c "import sys; from pathlib import Path; p = Path('$(CURDIR)'); sys.exit(not all(q.stat().st_mode & 1 for q in [p, *p.parents]))" 2>/dev/null && echo $(TEST_HOME)-pg)
test: install-dev lint browser clis
	@mkdir -p $(TEST_HOME)
	@export YULLU_HOME=$(TEST_HOME) YULLU_CONFIG=$(TEST_HOME)/config.toml HF_HUB_OFFLINE=1; \
		[ -n "$$YULLU_ROOT_PG_BASE" ] || [ -z "$(TEST_PG_BASE)" ] || export YULLU_ROOT_PG_BASE=$(TEST_PG_BASE); \
		$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS); status=$$?; \
		[ -n "$$DATABASE_URL" ] || $(BIN)/python -c \
			"from yullu_core import paths, postgres as pg; h = paths.yullu_home(); [pg.stop(x) for x in [h, *h.glob('xdist/gw*')]]" \
			|| true; \
		exit $$status

clean-test:
	rm -rf $(TEST_HOME) $(TEST_HOME)-pg
