"""The Fading Flash report (report/fading_flash.py): relative errors from the records'
test sets, the table, and each claim's verdict decided by its stated criterion."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ssmbench.report.fading_flash import (
    fading_flash_claims,
    fading_flash_figure,
    fading_flash_results,
    fading_flash_table,
)

DTS = (0.1, 0.5, 1.0, 1.5, 2.0)


def _records(rel: dict[str, dict[float, float]], var: float = 0.04) -> pd.DataFrame:
    """Records whose test set at Δ has relative error rel[model][Δ] (%): MSE = var·(r/100)²."""
    rows = []
    for model, by_dt in rel.items():
        for fold in (0, 1):
            sets = {f"dt={dt:g}": {"n": 10, "loss": var * (r / 100) ** 2, "error": 0.0,
                                   "target_var": var} for dt, r in by_dt.items()}  # fmt: skip
            rows.append({"benchmark": "synthetic", "dataset": "FadingFlash", "model": model,
                         "fold": fold, "test_sets": json.dumps(sets)})  # fmt: skip
    return pd.DataFrame(rows)


def test_relative_error_is_the_root_of_mse_over_the_target_variance():
    results = fading_flash_results(_records({"FF-S5": {1.0: 20.0}}))
    assert len(results) == 2 and results["rel_error"].tolist() == pytest.approx([20.0, 20.0])
    assert results["dt"].tolist() == [1.0, 1.0]


def test_the_claims_follow_their_criteria():
    rel = {
        "FF-S5": dict.fromkeys(DTS, 30.0),  # high everywhere, in range too
        "FF-TIDES": dict.fromkeys(DTS, 2.0),  # accurate everywhere
        "FF-MambaS": {0.1: 40.0, 0.5: 5.0, 1.0: 4.0, 1.5: 5.0, 2.0: 15.0},
    }
    claims = fading_flash_claims(fading_flash_results(_records(rel))).set_index("verdict")
    assert list(claims.index) == ["holds", "holds", "holds"]
    # MambaS at Δ = 2.0 only 2.5× its Δ = 1.0 error: (b) does not hold; TIDES 12% at 0.1: (c)
    rel["FF-MambaS"][2.0] = 10.0
    rel["FF-TIDES"][0.1] = 12.0
    claims = fading_flash_claims(fading_flash_results(_records(rel)))
    assert claims["verdict"].tolist() == ["holds", "does not hold", "does not hold"]
    assert "largest: 12.00% at Δ = 0.1" in claims.loc[2, "numbers"]


def test_a_claim_without_its_model_is_not_tested(caplog):
    claims = fading_flash_claims(fading_flash_results(_records({"FF-TIDES": {1.0: 1.0}})))
    assert claims["verdict"].tolist()[:2] == ["not tested", "not tested"]
    assert "not tested" in caplog.text


def test_table_and_figure_render_and_say_the_training_range(tmp_path):
    rel = {"FF-S5": dict.fromkeys(DTS, 30.0), "FF-TIDES": dict.fromkeys(DTS, 2.0)}
    results = fading_flash_results(_records(rel))
    table = fading_flash_table(results).set_index("Δ")
    assert list(table.index) == ["0.1", "0.5 (train)", "1 (train)", "1.5 (train)", "2"]
    assert table.loc["1 (train)", "FF-TIDES rel. error %"] == "2.0 ± 0.0"
    paths = fading_flash_figure(results, tmp_path / "fading_flash")
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    empty = fading_flash_figure(fading_flash_results(_records({})), tmp_path / "empty")
    assert empty["pdf"].stat().st_size > 0
    assert fading_flash_results(_records({})).empty
