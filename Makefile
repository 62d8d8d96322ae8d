# Aliases only. Both targets run `setup` first: .venv (again only when pyproject.toml
# changes) and the system libraries (checked once per .venv).
#   make run    the default suite end to end (dvc repro -> snakemake), then where to look
#   make test   the test suite, on TEST_WORKERS pytest-xdist workers
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SYSTEM_STAMP := $(VENV)/.system-libraries
TEST_WORKERS ?= auto
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: setup run test lint clean-venv

setup: $(STAMP) $(SYSTEM_STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# System libraries: myokit compiles the Physiome-ODE simulations (its tests, and a suite
# with a Physiome dataset) against the SUNDIALS headers with a C compiler. The check is
# myokit's own compile; Debian's libsundials-dev brings both headers and compiler (and
# python3-dev the headers of Debian's Python). As root with apt-get they are installed;
# otherwise make stops here with the command to run, before any test starts.
DEB_PACKAGES  := libsundials-dev python3-dev
SUNDIALS_SEEN := $(BIN)/python -c 'import sys, myokit; sys.exit(myokit.Sundials.version() is None)'
$(SYSTEM_STAMP): $(STAMP)
	@$(SUNDIALS_SEEN) || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "setup: installing $(DEB_PACKAGES) (myokit cannot compile against SUNDIALS)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PACKAGES); \
	  fi; \
	  $(SUNDIALS_SEEN) || { \
	    echo "setup: myokit cannot compile against SUNDIALS (C compiler + headers). Run:" >&2; \
	    echo "  sudo apt-get update && sudo apt-get install -y $(DEB_PACKAGES)" >&2; \
	    echo "(conda: conda install -c conda-forge sundials=6.4 c-compiler), then make again." >&2; \
	    exit 1; }; }
	@touch $(SYSTEM_STAMP)

run: setup
	$(BIN)/ssmbench check
	$(BIN)/dvc repro
	@echo
	@$(BIN)/ssmbench report --list-outputs
	@echo "(dvc metrics show: the summary; dvc plots show: the figures)"
	@echo
	@$(BIN)/ssmbench report --show-tables

# --dist loadgroup: tests marked xdist_group share one worker (the SLURM test cluster; a
# module's expensive fixtures, see tests/conftest.py); all others spread over the workers.
test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

clean-venv:
	rm -rf $(VENV)
