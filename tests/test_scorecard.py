"""The reproduced-vs-published scorecard (ssmbench.report.scorecard)."""

from __future__ import annotations

import dataclasses
import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from ssmbench.report.results import PER_DATASET_COLUMNS, paper_per_dataset
from ssmbench.report.scorecard import (
    NO_COMMON_CELL,
    SCORECARD_COLUMNS,
    AgreementRule,
    scorecard,
    scorecard_counts,
    write_scorecard,
)


def frame(rows) -> pd.DataFrame:
    """A per-dataset frame from (benchmark, dataset, model, error, std, n_runs) rows."""
    out = pd.DataFrame(rows, columns=["benchmark", "dataset", "model", "error", "std", "n_runs"])
    out["family"], out["domain"], out["params"], out["mmac"] = np.nan, np.nan, np.nan, np.nan
    return out[list(PER_DATASET_COLUMNS)]


EMPTY = frame([])

OURS = frame(
    [
        ("uea", "A", "MS4N", 0.10, 0.02, 4),  # diff 0.05 > max(2*0.01, 0.03): disagrees
        ("uea", "B", "MS4N", 0.20, 0.00, 3),  # diff 0.02 <= floor 0.03: agrees, z NaN
        ("uea", "C", "MS4N", 0.30, 0.03, 5),  # diff -0.08 <= 2*0.05 = 0.10: agrees
        ("uea", "A", "FCN", 0.50, 0.01, 5),  # diff 0.10 > 0.03: disagrees (worst)
        ("uea", "A", "S4D", 0.40, 0.01, 5),  # no paper figure
        ("monster", "X", "MS4N", 0.25, 0.01, 5),  # diff 0 agrees
    ]
)
PAPER = frame(
    [
        ("uea", "A", "MS4N", 0.05, 0.01, 40),
        ("uea", "B", "MS4N", 0.18, 0.00, 40),
        ("uea", "C", "MS4N", 0.38, 0.05, 40),
        ("uea", "A", "FCN", 0.40, 0.01, 40),
        ("uea", "A", "GRU", 0.30, 0.01, 40),  # not in ours
        ("monster", "X", "MS4N", 0.25, 0.02, 5),
    ]
)


def test_cells_numbers_and_order(caplog):
    with caplog.at_level(logging.WARNING, logger="ssmbench.report.scorecard"):
        card = scorecard(OURS, PAPER)
    assert list(card.columns) == SCORECARD_COLUMNS
    cells = list(zip(card["benchmark"], card["dataset"], card["model"], strict=True))
    # worst first: |diff| - tolerance = 0.07, 0.02, -0.02 (B), -0.02 (C), -0.03 (X)
    assert cells[:2] == [("uea", "A", "FCN"), ("uea", "A", "MS4N")]
    assert set(cells[2:]) == {("uea", "B", "MS4N"), ("uea", "C", "MS4N"), ("monster", "X", "MS4N")}
    assert cells[-1] == ("monster", "X", "MS4N")
    row = card.set_index(["dataset", "model"]).loc[("A", "MS4N")]
    assert row["diff"] == pytest.approx(0.05)
    assert row["z"] == pytest.approx(0.05 / math.sqrt(0.02**2 / 4 + 0.01**2 / 40))
    assert row["tolerance"] == pytest.approx(0.03)
    assert not row["agree"]
    c = card.set_index(["dataset", "model"]).loc[("C", "MS4N")]
    assert c["tolerance"] == pytest.approx(0.10) and c["agree"]
    b = card.set_index(["dataset", "model"]).loc[("B", "MS4N")]
    assert math.isnan(b["z"]) and b["agree"]  # both stds 0: no z
    assert card["agree"].dtype == bool
    assert card["ours_n"].tolist()[0] == 5
    # cells only one side has: not compared, logged by model
    assert ("uea", "A", "S4D") not in cells and ("uea", "A", "GRU") not in cells
    assert "scorecard: skipped S4D (uea, ours): 1 cell(s), no paper figure" in caplog.text
    assert "scorecard: skipped GRU (uea, paper): 1 cell(s), not in our records" in caplog.text


def test_rule_fields_change_the_verdict():
    strict = AgreementRule(k_sigma=1.0, floor=0.0)
    card = scorecard(OURS, PAPER, strict).set_index(["dataset", "model"])
    assert not card.loc[("C", "MS4N"), "agree"]  # |-0.08| > 0.05
    assert not card.loc[("B", "MS4N"), "agree"]  # floor gone
    assert card.loc[("X", "MS4N"), "agree"]  # exact match
    with pytest.raises(dataclasses.FrozenInstanceError):
        AgreementRule().floor = 0.1  # type: ignore[misc]
    assert AgreementRule() == AgreementRule(k_sigma=2.0, floor=0.03)


def test_missing_paper_std_and_error():
    ours = frame([("uea", "A", "M", 0.12, 0.01, 3), ("uea", "B", "M", np.nan, np.nan, 0)])
    paper = frame([("uea", "A", "M", 0.10, np.nan, 40), ("uea", "B", "M", 0.1, 0.01, 40)])
    card = scorecard(ours, paper)
    assert card["dataset"].tolist() == ["A"]  # B has no error of ours: not compared
    assert card["tolerance"].iloc[0] == pytest.approx(0.03)  # no σ_paper: the floor
    assert card["agree"].iloc[0] and math.isnan(card["z"].iloc[0])


def test_counts_are_sorted_ints():
    counts = scorecard_counts(scorecard(OURS, PAPER))
    assert counts == {
        "monster": {"MS4N": {"agree": 1, "compared": 1}, "all": {"agree": 1, "compared": 1}},
        "uea": {
            "FCN": {"agree": 0, "compared": 1},
            "MS4N": {"agree": 2, "compared": 3},
            "all": {"agree": 2, "compared": 4},
        },
    }
    assert json.dumps(counts) == json.dumps(counts, sort_keys=True)  # stable order
    for models in counts.values():
        for c in models.values():
            assert all(type(v) is int for v in c.values())


def test_write_scorecard(tmp_path):
    card = scorecard(OURS, PAPER)
    paths = write_scorecard(card, tmp_path / "scorecard")
    assert set(paths) == {"csv", "md"}
    md = paths["md"].read_text(encoding="utf-8")
    first = md.splitlines()[0]
    assert first.startswith("A cell agrees when |ours − paper| ≤ max(2 · σ_paper, 0.03)")
    assert "| uea         | FCN     | 0       | 1          |" in md  # per-model summary
    assert "| uea         | all     | 2       | 4          |" in md
    assert "- S4D (uea, ours): 1 cell(s), no paper figure" in md
    cells = md[md.index("## Cells") :]
    assert cells.index("| FCN") < cells.index("| MS4N")  # worst first
    assert "0.100" in cells and " yes " in cells and " no " in cells
    assert "0.1000" not in cells  # 3 decimals
    back = pd.read_csv(paths["csv"])
    assert list(back.columns) == SCORECARD_COLUMNS
    assert back["diff"].iloc[0] == pytest.approx(0.10)
    assert paths["csv"].read_bytes().count(b"\r") == 0
    again = write_scorecard(card, tmp_path / "again")
    assert again["csv"].read_bytes() == paths["csv"].read_bytes()  # deterministic


@pytest.mark.parametrize("ours", [EMPTY, frame([("uea", "Z", "S4D", 0.1, 0.0, 1)])])
def test_no_common_cell(tmp_path, ours):
    card = scorecard(ours, PAPER)
    assert card.empty and list(card.columns) == SCORECARD_COLUMNS
    assert scorecard_counts(card) == {}
    paths = write_scorecard(card, tmp_path / "sc")
    md = paths["md"].read_text(encoding="utf-8")
    assert NO_COMMON_CELL in md
    assert "| benchmark | dataset | model | ours_mean" in md  # the header only
    assert paths["csv"].read_text().splitlines() == [",".join(SCORECARD_COLUMNS)]
    assert scorecard(EMPTY, EMPTY).empty


def test_the_paper_against_itself_agrees_everywhere():
    paper = paper_per_dataset()
    card = scorecard(paper, paper)
    assert len(card) == 29 * 14 + 30 * 12
    assert card["agree"].all() and (card["diff"] == 0).all()
    assert (card["z"].fillna(0) == 0).all()
    counts = scorecard_counts(card)
    assert counts["monster"]["all"] == {"agree": 406, "compared": 406}
    assert counts["uea"]["MS4N"] == {"agree": 30, "compared": 30}
    assert len(counts["uea"]) == 12 + 1


def test_a_shifted_paper_frame_disagrees_where_it_should():
    paper = paper_per_dataset(["uea"])
    ours = paper.copy()
    shift = ours["model"] == "MS4N"
    # MS4N 0.2 worse everywhere: beyond 2σ on every UEA dataset whose σ < 0.1
    ours.loc[shift, "error"] += 0.2
    card = scorecard(ours, paper)
    ms4n = card[card["model"] == "MS4N"]
    expected = int((paper.loc[paper["model"] == "MS4N", "std"] * 2 >= 0.2).sum())
    assert int(ms4n["agree"].sum()) == expected
    assert set(card["model"].iloc[: 30 - expected]) == {"MS4N"}  # the worst come first
