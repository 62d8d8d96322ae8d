# Aliases only. Both targets set up .venv once (again only when pyproject.toml changes).
#   make run    the default suite end to end (dvc repro -> snakemake), then where to look
#   make test   the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: run test lint clean-venv

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/ssmbench check
	$(BIN)/dvc repro
	@echo
	@echo "Tables:  results/tables/uea_table.{md,csv,tex}"
	@echo "Figures: figures/figure7_uea.{png,pdf} figures/figure8_curves.{png,pdf}"
	@echo "Metrics: results/summary.json, results/metrics.csv (dvc metrics show)"
	@echo
	@cat results/tables/uea_table.md

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

clean-venv:
	rm -rf $(VENV)
