"""The Im Λ ablation report (report/im_ablation.py): pairs found from the records'
model_params, the table's differences and standard errors, and claim (e)'s verdict
decided by its stated criterion."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from ssmbench.report.im_ablation import (
    im_ablation_claims,
    im_ablation_results,
    im_ablation_table,
)

#: Re Λ and B/C input-dependent by the family's defaults (left out), Im Λ LTI by default.
BASE = {"family": "tides", "d_model": 16, "rank": 16}
INPUT = {**BASE, "lambda_im_mode": "input_dependent"}


def _runs(model, params, values, *, as_json=False, benchmark="uea_drop",
          dataset="BasicMotionsDrop", family="tides"):  # fmt: skip
    """One record per fold; values: {test set: [accuracy per fold]} (classification) or
    [test MSE per fold] (regression, no separate test sets)."""
    rows = []
    regression = isinstance(values, list)
    folds = len(values) if regression else len(next(iter(values.values())))
    for fold in range(folds):
        row = {"benchmark": benchmark, "dataset": dataset, "model": model, "fold": fold,
               "family": family,
               "model_params": json.dumps(params) if as_json else dict(params)}  # fmt: skip
        if regression:
            row.update(task="regression", test_error=values[fold], test_sets="{}")
        else:
            sets = {k: {"n": 10, "loss": 0.3, "error": 1 - v[fold], "accuracy": v[fold]}
                    for k, v in values.items()}  # fmt: skip
            row.update(task="classification", test_error=0.0,
                       test_sets=json.dumps(sets) if as_json else sets)  # fmt: skip
        rows.append(row)
    return rows


def _records(input_acc=(0.91, 0.93, 0.95), input_mse=(0.9, 1.1, 1.3)) -> pd.DataFrame:
    rows = [
        *_runs("TIDES-drop", BASE, {"rate=0.5": [0.90, 0.92, 0.94], "rate=0.9": [0.8] * 3}),
        *_runs("TIDES-drop-im", INPUT, {"rate=0.5": list(input_acc), "rate=0.9": [0.8] * 3},
               as_json=True),  # fmt: skip
        # other params differ (d_model): not a pair of TIDES-drop
        *_runs("TIDES-wide-im", {**INPUT, "d_model": 32}, {"rate=0.5": [0.99] * 3}),
        # Re Λ LTI on both sides: not the ablation (Re Λ, B/C must be input-dependent)
        *_runs("TIDES-re-lti", {**BASE, "lambda_re_mode": "lti"}, {"rate=0.5": [0.5] * 3}),
        *_runs("TIDES-re-lti-im", {**INPUT, "lambda_re_mode": "lti"}, {"rate=0.5": [0.99] * 3}),
        # same params, another family: not TIDES
        *_runs("MambaS-drop", INPUT, {"rate=0.5": [0.99] * 3}, family="mambas"),
        # regression without test sets: the record's test_error (MSE) under "test"
        *_runs("TIDES-HH", {**BASE, "lambda_im_mode": "lti"}, [1.0, 1.2, 1.4],
               benchmark="physiome", dataset="HodgkinHuxley1952", as_json=True),
        *_runs("TIDES-HH-im", INPUT, list(input_mse), benchmark="physiome",
               dataset="HodgkinHuxley1952"),
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_pairs_come_from_the_params_not_the_names():
    results = im_ablation_results(_records())
    pairs = set(zip(results["lti_model"], results["input_model"], strict=True))
    assert pairs == {("TIDES-drop", "TIDES-drop-im"), ("TIDES-HH", "TIDES-HH-im")}
    drop = results[results["benchmark"] == "uea_drop"]
    assert set(drop["test_set"]) == {"rate=0.5", "rate=0.9"}
    assert set(drop["metric"]) == {"accuracy"} and len(drop) == 2 * 2 * 3
    hh = results[results["benchmark"] == "physiome"]
    assert set(hh["test_set"]) == {"test"} and set(hh["metric"]) == {"mse"}
    lti = hh[hh["mode"] == "lti"]["value"].tolist()
    assert lti == pytest.approx([1.0, 1.2, 1.4])
    assert im_ablation_results(pd.DataFrame()).empty


def test_table_gives_means_differences_and_standard_errors():
    table = im_ablation_table(im_ablation_results(_records()))
    row = table.set_index(["dataset", "test_set"]).loc[("BasicMotionsDrop", "rate=0.5")]
    assert row["metric"] == "accuracy"
    assert row["Im Λ lti"] == "0.920 ± 0.016 (n=3)"
    assert row["Im Λ input-dependent"] == "0.930 ± 0.016 (n=3)"
    assert row["difference"] == pytest.approx(0.01)
    assert row["better"] == "input_dependent"
    assert row["se"] == pytest.approx(math.sqrt(2 * 0.02**2 / 3), rel=1e-3)
    tie = table.set_index(["dataset", "test_set"]).loc[("BasicMotionsDrop", "rate=0.9")]
    assert tie["better"] == "tie" and tie["se"] == 0.0
    hh = table.set_index("dataset").loc["HodgkinHuxley1952"]
    assert hh["metric"] == "mse" and hh["better"] == "input_dependent"  # lower MSE
    assert hh["difference"] == pytest.approx(-0.1)
    assert len(table) == 3
    empty = im_ablation_table(im_ablation_results(pd.DataFrame()))
    assert len(empty) == 1 and "note" in empty.columns


def test_se_is_nan_with_a_single_run_a_side():
    rows = [*_runs("A", BASE, {"test": [0.9]}), *_runs("B", INPUT, {"test": [0.95]})]
    table = im_ablation_table(im_ablation_results(pd.DataFrame(rows)))
    assert math.isnan(table.loc[0, "se"]) and table.loc[0, "better"] == "input_dependent"


def test_the_claim_follows_its_criterion():
    claims = im_ablation_claims(im_ablation_results(_records()))
    assert claims["verdict"].tolist() == ["holds"]
    assert claims.loc[0, "numbers"].startswith("0 of 3 compared")
    # accuracy +0.05 against 2 se ≈ 0.033: the input-dependent Im Λ improves
    claims = im_ablation_claims(im_ablation_results(_records(input_acc=(0.95, 0.97, 0.99))))
    assert claims["verdict"].tolist() == ["does not hold"]
    assert "1 of 3" in claims.loc[0, "numbers"] and "rate=0.5" in claims.loc[0, "numbers"]
    # MSE 0.8 lower against 2 se ≈ 0.33: improves too (lower is better)
    claims = im_ablation_claims(im_ablation_results(_records(input_mse=(0.2, 0.4, 0.6))))
    assert claims["verdict"].tolist() == ["does not hold"]
    assert "HodgkinHuxley1952 / test" in claims.loc[0, "numbers"]
    # a much higher MSE is no improvement
    claims = im_ablation_claims(im_ablation_results(_records(input_mse=(3.0, 3.2, 3.4))))
    assert claims["verdict"].tolist() == ["holds"]


def test_without_a_pair_or_a_standard_error_it_is_not_tested(caplog):
    only_lti = pd.DataFrame(_runs("TIDES-drop", BASE, {"rate=0.5": [0.9, 0.92]}))
    claims = im_ablation_claims(im_ablation_results(only_lti))
    assert claims["verdict"].tolist() == ["not tested"]
    assert "not tested" in caplog.text
    single = pd.DataFrame([*_runs("A", BASE, {"test": [0.9]}),
                           *_runs("B", INPUT, {"test": [0.95]})])  # fmt: skip
    assert im_ablation_claims(im_ablation_results(single))["verdict"].tolist() == ["not tested"]


def test_means_equal_up_to_rounding_are_a_tie():
    # 0.95 three times against 0.925, 0.95, 0.975: the means differ by ~1e-16 only
    rows = [*_runs("TIDES-drop", BASE, {"rate=0.7": [0.95] * 3}),
            *_runs("TIDES-drop-im", INPUT, {"rate=0.7": [0.925, 0.95, 0.975]})]  # fmt: skip
    row = im_ablation_table(im_ablation_results(pd.DataFrame(rows))).iloc[0]
    assert row["better"] == "tie" and row["difference"] == 0.0
