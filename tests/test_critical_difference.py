"""Critical-difference diagrams (ssmbench.report.critical_difference)."""

from __future__ import annotations

import logging

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from aeon.visualisation import plot_critical_difference
from scipy.stats import wilcoxon

from ssmbench.report import critical_difference as cd
from ssmbench.report.results import PER_DATASET_COLUMNS, paper_per_dataset, restrict


@pytest.fixture(autouse=True)
def _report_notes(caplog):
    """What the report leaves out for want of data is logged at INFO."""
    caplog.set_level(logging.INFO, logger="ssmbench.report")


LOGGER = "ssmbench.report.critical_difference"
TOO_FEW = "too few for a critical-difference test (Wilcoxon needs ≥ 6 to reach α = 0.05)"


def synthetic(n_datasets: int, models: dict[str, float], seed: int = 0) -> pd.DataFrame:
    """One benchmark's per-dataset frame: each model's error is its offset plus noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_datasets):
        base = rng.uniform(0.1, 0.5)
        for model, offset in models.items():
            rows.append(
                {
                    "benchmark": "uea",
                    "dataset": f"D{i:02d}",
                    "model": model,
                    "family": {"MS4N": "ms4", "FCN": "fcn", "GRU": "gru"}.get(model, np.nan),
                    "domain": np.nan,
                    "error": base + offset + rng.normal(0, 0.01),
                    "std": 0.01,
                    "n_runs": 5,
                    "params": np.nan,
                    "mmac": np.nan,
                }
            )
    return pd.DataFrame(rows, columns=list(PER_DATASET_COLUMNS))


def assert_saved(paths):
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths["pdf"].read_bytes()[:5] == b"%PDF-"
    assert plt.get_fignums() == []  # aeon's pyplot figure was closed


def test_min_datasets_is_where_wilcoxon_can_first_reach_alpha():
    assert cd.MIN_DATASETS == 6
    # scipy's exact two-sided test, every difference the same sign: its smallest p
    assert wilcoxon(np.arange(1, 6) * 0.01).pvalue > 0.05
    assert wilcoxon(np.arange(1, 7) * 0.01).pvalue < 0.05
    assert cd.wilcoxon_min_pairs(0.05, two_sided=False) == 5
    assert cd.wilcoxon_min_pairs(0.05 / 13, two_sided=False) == 9


@pytest.mark.parametrize(("benchmark", "shape"), [("uea", (30, 12)), ("monster", (29, 14))])
def test_full_paper_frames_draw_a_diagram(tmp_path, caplog, monkeypatch, benchmark, shape):
    frame = restrict(paper_per_dataset(), benchmark)
    scores, dropped = cd.cd_data(frame)
    assert scores.shape == shape and dropped == [] and not scores.isna().any().any()
    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return plot_critical_difference(*args, **kwargs)

    monkeypatch.setattr(cd, "plot_critical_difference", spy)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        paths = cd.cd_diagram(frame, tmp_path / f"cd_{benchmark}_paper", "published values")
    assert_saved(paths)
    assert caplog.text == ""  # nothing skipped
    (kw,) = calls
    assert kw["lower_better"] and kw["test"] == "wilcoxon" and kw["correction"] == "holm"
    assert kw["alpha"] == 0.05
    again = cd.cd_diagram(frame, tmp_path / "again", "published values")
    assert again["png"].read_bytes() == paths["png"].read_bytes()  # deterministic


def test_p_values_are_aeons(tmp_path):
    frame = restrict(paper_per_dataset(), "uea")
    p = cd.cd_p_values(frame)
    scores, _ = cd.cd_data(frame)
    _, _, theirs = plot_critical_difference(
        scores.to_numpy(), list(scores.columns), lower_better=True, alpha=0.05,
        return_p_values=True,
    )  # fmt: skip
    plt.close("all")
    upper = np.triu(np.ones(theirs.shape, dtype=bool), 1)
    np.testing.assert_allclose(p.to_numpy()[upper], theirs[upper])
    assert np.isnan(p.to_numpy()[~upper]).all()
    assert list(p.index) == list(p.columns) == list(cd.mean_ranks(scores).index)
    assert p.attrs["adjusted_alpha"] == pytest.approx(0.05 / 11)
    assert p.attrs["friedman_p"] < 0.05 and p.attrs["n_datasets"] == 30
    # one pair by hand: the best vs the worst, one-sided
    best, worst = p.index[0], p.index[-1]
    expected = wilcoxon(scores[best], scores[worst], alternative="less").pvalue
    assert p.loc[best, worst] == pytest.approx(expected)


def test_three_datasets_draw_the_ranks_instead(tmp_path, caplog, monkeypatch):
    frame = restrict(paper_per_dataset(), "uea")
    frame = frame[frame["dataset"].isin(sorted(frame["dataset"].unique())[:3])]

    def no_diagram(*args, **kwargs):
        raise AssertionError("no CD diagram of 3 datasets")

    monkeypatch.setattr(cd, "plot_critical_difference", no_diagram)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        paths = cd.cd_diagram(frame, tmp_path / "few", "UEA, 3 datasets")
    assert_saved(paths)
    assert f"few: skipped the critical-difference test: 3 datasets: {TOO_FEW}" in caplog.text
    scores, dropped = cd.cd_data(frame)
    assert scores.shape == (3, 12) and dropped == []
    ranks = cd.mean_ranks(scores)
    assert ranks.is_monotonic_increasing and ranks.mean() == pytest.approx(6.5)


def test_a_model_missing_a_few_datasets_costs_those_datasets(tmp_path, caplog):
    frame = synthetic(10, {"MS4N": 0.0, "FCN": 0.05, "GRU": 0.1, "S4D": 0.02})
    frame = frame[~((frame["model"] == "S4D") & frame["dataset"].isin(["D01", "D07"]))]
    scores, dropped = cd.cd_data(frame)
    assert list(scores.columns) == ["FCN", "GRU", "MS4N", "S4D"]
    assert list(scores.index) == [f"D{i:02d}" for i in range(10) if i not in (1, 7)]
    assert dropped == [
        cd.Dropped("dataset", "D01", "no result for S4D"),
        cd.Dropped("dataset", "D07", "no result for S4D"),
    ]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        paths = cd.cd_diagram(frame, tmp_path / "cd_ours", "ours")
    assert_saved(paths)
    assert "cd_ours: skipped dataset D01: no result for S4D" in caplog.text


def test_a_model_on_too_few_datasets_is_left_out(tmp_path, caplog):
    frame = synthetic(10, {"MS4N": 0.0, "FCN": 0.05, "GRU": 0.1, "S4D": 0.02})
    frame = frame[(frame["model"] != "S4D") | frame["dataset"].isin(["D00", "D01", "D02"])]
    scores, dropped = cd.cd_data(frame)
    assert list(scores.columns) == ["FCN", "GRU", "MS4N"] and len(scores) == 10
    assert [(d.kind, d.name) for d in dropped] == [("model", "S4D")]
    assert "results on 3 of 10 datasets" in dropped[0].reason
    assert "only 3 datasets have every model (fewer than 6)" in dropped[0].reason
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert_saved(cd.cd_diagram(frame, tmp_path / "cd", "ours"))
    assert "cd: skipped model S4D: results on 3 of 10 datasets" in caplog.text


def test_with_too_few_datasets_anyway_models_stay(tmp_path):
    # 4 datasets in all: leaving a model out cannot reach 6, so only its datasets go
    frame = synthetic(4, {"MS4N": 0.0, "FCN": 0.05, "GRU": 0.1})
    frame = frame[~((frame["model"] == "GRU") & (frame["dataset"] == "D03"))]
    scores, dropped = cd.cd_data(frame)
    assert scores.shape == (3, 3)
    assert dropped == [cd.Dropped("dataset", "D03", "no result for GRU")]
    assert_saved(cd.cd_diagram(frame, tmp_path / "few", "ours"))


def test_one_model(tmp_path, caplog):
    frame = restrict(paper_per_dataset(), "monster", models=["MS4N"])
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert_saved(cd.cd_diagram(frame, tmp_path / "one", "MS4N alone"))
    assert "one: skipped the critical-difference test: 1 model" in caplog.text
    assert cd.cd_p_values(frame).empty
    assert cd.mean_ranks(cd.cd_data(frame)[0]).to_dict() == {"MS4N": 1.0}


def test_two_models_state_the_wilcoxon_p(tmp_path, caplog):
    frame = synthetic(8, {"MS4N": 0.0, "FCN": 0.05})
    p = cd.cd_p_values(frame)
    scores, _ = cd.cd_data(frame)
    assert list(p.index) == ["MS4N", "FCN"]
    expected = wilcoxon(scores["MS4N"], scores["FCN"], alternative="less").pvalue
    assert p.loc["MS4N", "FCN"] == pytest.approx(expected)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert_saved(cd.cd_diagram(frame, tmp_path / "two", "two models"))
    assert f"p = {expected:.3g}, significant at α = 0.05" in caplog.text


def test_a_model_without_errors_and_bad_input(tmp_path):
    frame = synthetic(7, {"MS4N": 0.0, "FCN": 0.05, "GRU": 0.1, "LSTM": 0.1})
    frame.loc[frame["model"] == "LSTM", "error"] = np.nan
    scores, dropped = cd.cd_data(frame)
    assert "LSTM" not in scores.columns
    assert dropped == [cd.Dropped("model", "LSTM", "no error on any dataset")]
    assert_saved(cd.cd_diagram(frame, tmp_path / "nan", "ours"))
    with pytest.raises(ValueError, match="empty"):
        cd.cd_diagram(frame.iloc[:0], tmp_path / "empty", "nothing")
    both = pd.concat([frame, frame.assign(benchmark="monster")])
    with pytest.raises(ValueError, match="one benchmark"):
        cd.cd_data(both)
    allnan = frame.assign(error=np.nan)
    assert_saved(cd.cd_diagram(allnan, tmp_path / "allnan", "no errors"))
