"""The drop-rate report (report/drop_rate.py): accuracies from the records' test sets, the
table, and claim (d)'s verdict per dataset decided by its stated criterion."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ssmbench.report.drop_rate import (
    drop_rate_claims,
    drop_rate_figure,
    drop_rate_results,
    drop_rate_table,
)

RATES = (0.1, 0.3, 0.5, 0.7, 0.9)


def _records(acc: dict[str, dict[str, dict[float, float]]], spread: float = 0.01):
    """Records of two folds whose test set at r_test has accuracy acc[model][dataset][r]
    ∓ spread (mean acc, std spread), test sets as JSON strings in the second fold."""
    rows = []
    for model, by_dataset in acc.items():
        for dataset, by_rate in by_dataset.items():
            for fold, sign in ((0, -1), (1, 1)):
                sets = {f"rate={r:g}": {"n": 10, "loss": 0.5, "error": 0.0,
                                        "accuracy": a + sign * spread}
                        for r, a in by_rate.items()}  # fmt: skip
                rows.append({"benchmark": "uea_drop", "dataset": dataset, "model": model,
                             "fold": fold, "task": "classification",
                             "test_sets": json.dumps(sets) if fold else sets})  # fmt: skip
    # a record of another benchmark with the same keys is not a drop-rate run
    rows.append({"benchmark": "uea", "dataset": "BasicMotions", "model": "TIDES-drop",
                 "fold": 0, "task": "classification",
                 "test_sets": {"rate=0.5": {"n": 1, "loss": 0, "error": 0,
                                            "accuracy": 1}}})  # fmt: skip
    return pd.DataFrame(rows)


def _holding():
    return {
        "TIDES-drop": {"BasicMotionsDrop": {0.1: 0.99, 0.5: 0.975, 0.9: 0.95}},
        "MambaS-drop": {"BasicMotionsDrop": {0.1: 0.9, 0.5: 0.858, 0.9: 0.7}},
    }


def test_results_hold_one_row_per_record_and_rate():
    results = drop_rate_results(_records(_holding()))
    assert list(results.columns) == ["benchmark", "dataset", "model", "fold", "rate",
                                     "accuracy"]  # fmt: skip
    assert len(results) == 2 * 2 * 3 and set(results["benchmark"]) == {"uea_drop"}
    tides = results[(results["model"] == "TIDES-drop") & (results["rate"] == 0.9)]
    assert tides["accuracy"].tolist() == pytest.approx([0.94, 0.96])
    assert drop_rate_results(_records({})).empty


def test_the_claim_follows_its_criterion_per_dataset():
    acc = _holding()
    claims = drop_rate_claims(drop_rate_results(_records(acc)))
    assert claims["verdict"].tolist() == ["holds"]
    assert claims.loc[0, "claim"].startswith("(d) at r_test = 0.9 TIDES keeps its accuracy")
    assert "BasicMotionsDrop" in claims.loc[0, "claim"]
    assert claims.loc[0, "numbers"] == (
        "TIDES 0.975 → 0.950 (−0.025); MambaS 0.858 → 0.700 (−0.158)"
    )
    # TIDES loses 0.06 > KEEP: does not hold
    acc["TIDES-drop"]["BasicMotionsDrop"][0.9] = 0.915
    assert drop_rate_claims(drop_rate_results(_records(acc)))["verdict"].tolist() == [
        "does not hold"
    ]
    # TIDES keeps it again, but MambaS only loses 0.09 < FALL: does not hold
    acc["TIDES-drop"]["BasicMotionsDrop"][0.9] = 0.95
    acc["MambaS-drop"]["BasicMotionsDrop"][0.9] = 0.768
    assert drop_rate_claims(drop_rate_results(_records(acc)))["verdict"].tolist() == [
        "does not hold"
    ]


def test_a_dataset_without_a_model_or_rate_is_not_tested(caplog):
    acc = _holding()
    acc["TIDES-drop"]["EigenWormsDrop"] = {0.5: 0.9, 0.9: 0.9}  # no MambaS here
    del acc["MambaS-drop"]["BasicMotionsDrop"][0.9]  # no r_test = 0.9 for MambaS
    claims = drop_rate_claims(drop_rate_results(_records(acc)))
    assert claims["verdict"].tolist() == ["not tested", "not tested"]
    assert "EigenWormsDrop" in claims.loc[1, "claim"]
    assert "not tested" in caplog.text
    empty = drop_rate_claims(drop_rate_results(_records({})))
    assert empty["verdict"].tolist() == ["not tested"]


def test_table_marks_the_training_rate_and_formats_mean_and_std():
    acc = _holding()
    acc["S5-drop"] = {"BasicMotionsDrop": {0.5: 0.8}}
    table = drop_rate_table(drop_rate_results(_records(acc)))
    assert table["r_test"].tolist() == ["0.1", "0.5 (train)", "0.9"]
    assert set(table["dataset"]) == {"BasicMotionsDrop"}
    row = table.set_index("r_test").loc["0.9"]
    assert row["TIDES-drop (n=2)"] == "0.950 ± 0.010"
    assert row["S5-drop (n=2)"] == "–"
    empty = drop_rate_table(drop_rate_results(_records({})))
    assert len(empty) == 1 and empty.loc[0, "note"] == "no drop-rate records"


def test_figure_writes_png_and_pdf_filled_and_empty(tmp_path):
    acc = _holding()
    acc["TIDES-drop"]["EigenWormsDrop"] = {r: 0.8 for r in RATES}
    paths = drop_rate_figure(drop_rate_results(_records(acc)), tmp_path / "x")
    assert paths["png"] == tmp_path / "png" / "x.png"
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    assert paths["pdf"].read_bytes()[:4] == b"%PDF"
    empty = drop_rate_figure(drop_rate_results(_records({})), tmp_path / "empty")
    assert empty["png"].stat().st_size > 0 and empty["pdf"].stat().st_size > 0
