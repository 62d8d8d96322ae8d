"""scripts/zoo_per_model.py: the per-model table of docs/reproduced.md from a report's files:
the scorecard's counts, runs per cell, our mean error, the optimism columns, and the
models not run or without a paper figure said as such."""

from __future__ import annotations

import importlib.util

import pandas as pd
from conftest import REPO

SCRIPT = REPO / "scripts" / "zoo_per_model.py"
spec = importlib.util.spec_from_file_location("zoo_per_model", SCRIPT)
zoo_per_model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zoo_per_model)


def _metrics(rows):
    return pd.DataFrame(rows, columns=["benchmark", "dataset", "model", "fold", "test_error"])


METRICS = _metrics(
    [
        ("uea", "A", "M1", 0, 0.10), ("uea", "A", "M1", 1, 0.20),
        ("uea", "B", "M1", 0, 0.50),
        ("uea", "A", "Q", 0, 0.30), ("uea", "A", "Q", 1, 0.30),
        ("other", "A", "M1", 0, 0.90),
    ]
)  # fmt: skip
SCORECARD = pd.DataFrame(
    {
        "benchmark": ["uea", "uea"],
        "dataset": ["A", "B"],
        "model": ["M1", "M1"],
        "diff": [-0.05, 0.20],
        "agree": [True, False],
    }
)
OPTIMISM = pd.DataFrame(
    {
        "benchmark": ["uea", "uea", "uea"],
        "dataset": ["A", "B", "mean"],
        "model": ["M1", "M1", "M1"],
        "ours if test-selected": ["0.100 ± 0.000", "0.400 ± 0.000", "0.250"],
        "optimism": ["0.050", "0.100", "0.075"],
    }
)


def test_rows_per_model_in_the_given_order():
    rows = zoo_per_model.per_model_rows(METRICS, SCORECARD, OPTIMISM, ["Q", "M1", "M2"], "uea")
    assert rows == [
        "| Q | 1 | 2 | no paper figure | – | – | 0.300 | – (fitted once) | – |",
        # A: mean 0.15 from 2 runs, B: 0.50 from 1; 1 of 2 agree, mean diff +0.075
        "| M1 | 2 | 1–2 | 1/2 | +0.075 | 1 / 1 | 0.325 | 0.250 | 0.075 |",
        "| M2 | 0 | – | not run yet | | | | | |",
        "| all compared | | | 1/2 | +0.075 | 1 / 1 | | | |",
    ]


def test_the_command_names_a_missing_report_file(tmp_path, capsys):
    (tmp_path / "metrics.csv").write_text("benchmark\n")
    code = zoo_per_model.main([str(tmp_path), "--params", str(REPO / "params.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert str(tmp_path / "scorecard.csv") in err
    assert "run `ssmbench --suite uea10-zoo report` first" in err


def test_the_report_read_by_default_is_the_suites_own(tmp_path, capsys, monkeypatch):
    """Without RESULTS: the report folder of --suite (results/suites/uea10-zoo, params.yaml
    naming another suite), where `ssmbench --suite uea10-zoo report` writes."""
    monkeypatch.chdir(tmp_path)
    assert zoo_per_model.main(["--params", str(REPO / "params.yaml")]) == 2
    assert "results/suites/uea10-zoo/metrics.csv" in capsys.readouterr().err
