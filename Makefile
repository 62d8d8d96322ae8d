# Aliases only. Both targets run `setup` first: .venv (again only when pyproject.toml
# changes) and the system libraries (checked once per .venv).
# The packages go in with uv when it can be had, else pip (scripts/install_packages.py;
# SSMBENCH_INSTALLER=pip|uv to choose): the one used is printed and kept in .venv/.installer.
#   make run    the default suite end to end (dvc repro -> snakemake), then where to look
#   make test   `make lint`, then the test suite on TEST_WORKERS pytest-xdist workers
#   make lint   ruff on the Python, snakefmt --check on the Snakefile and workflow/rules
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SYSTEM_STAMP := $(VENV)/.system-libraries
TEST_WORKERS ?= auto
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: setup run test lint clean-venv

setup: $(STAMP) $(SYSTEM_STAMP)

# System packages, Debian: the set-up installs them when it runs as root with apt-get, and
# otherwise stops at once with the command to run, before any test starts.
#   python3-venv     for `python3 -m venv` (Debian's Python has no ensurepip without it)
#   libsundials-dev  the SUNDIALS headers and a C compiler, and
#   python3-dev      the headers of Debian's Python: myokit compiles the Physiome-ODE
#                    simulations (their tests; a suite with a Physiome dataset) with them.
#                    The check is such a compile (conda's sundials passes it too).
VENV_PACKAGES     := python3-venv
SUNDIALS_PACKAGES := libsundials-dev python3-dev
HAS_ENSUREPIP     := $(PYTHON) -c 'import ensurepip' 2>/dev/null
HAS_SUNDIALS      := $(BIN)/python -c 'import sys, myokit; sys.exit(myokit.Sundials.version() is None)'
# a shell step: install the packages $(1) as root, else print the command and stop
apt_install = if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "setup: installing $(1)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1); \
	else \
	  echo "setup: run  sudo apt-get update && sudo apt-get install -y $(1)" >&2; \
	  echo "  (conda: conda env create -f environment.yml), then make again" >&2; \
	  exit 1; \
	fi

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(HAS_ENSUREPIP) || { \
	  echo "setup: $(PYTHON) cannot make a venv (no ensurepip)" >&2; \
	  $(call apt_install,$(VENV_PACKAGES)); }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python scripts/install_packages.py $(BIN)/python '.[test]'
	@touch $(STAMP)

$(SYSTEM_STAMP): $(STAMP)
	@$(HAS_SUNDIALS) || { \
	  echo "setup: myokit cannot compile against SUNDIALS (C compiler and headers)" >&2; \
	  $(call apt_install,$(SUNDIALS_PACKAGES)); \
	  $(HAS_SUNDIALS) || { echo "setup: myokit still cannot compile against SUNDIALS" >&2; exit 1; }; }
	@touch $(SYSTEM_STAMP)

run: setup
	$(BIN)/ssmbench check
	$(BIN)/dvc repro
	@echo
	@$(BIN)/ssmbench report --list-outputs
	@echo "(dvc metrics show: a row per model; dvc plots show: the figures)"
	@echo
	@$(BIN)/ssmbench report --show-tables

# --dist loadgroup: tests marked xdist_group share one worker (the SLURM test cluster; a
# module's expensive fixtures, see tests/conftest.py); all others spread over the workers.
test: setup lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# snakefmt's settings: pyproject.toml [tool.snakefmt]
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/snakefmt --check Snakefile workflow

clean-venv:
	rm -rf $(VENV)
