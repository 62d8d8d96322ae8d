"""The reproduced-vs-published scorecard (ssmbench.report.scorecard)."""

from __future__ import annotations

import dataclasses
import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from ssmbench.report.physiome_table import physiome_results
from ssmbench.report.reference import load_published_uea6
from ssmbench.report.results import PER_DATASET_COLUMNS, paper_per_dataset
from ssmbench.report.scorecard import (
    LEADERBOARD_COLUMNS,
    NO_COMMON_CELL,
    SCORECARD_COLUMNS,
    AgreementRule,
    leaderboard_comparison,
    leaderboard_counts,
    published_counterparts,
    scorecard,
    scorecard_counts,
    write_scorecard,
)


@pytest.fixture(autouse=True)
def _report_notes(caplog):
    """What the report leaves out for want of data is logged at INFO."""
    caplog.set_level(logging.INFO, logger="ssmbench.report")


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
    with caplog.at_level(logging.INFO, logger="ssmbench.report.scorecard"):
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


def test_counts_per_model_agreement_signed_difference_above_below():
    counts = scorecard_counts(scorecard(OURS, PAPER))
    same = {"above": 0, "agree": 1, "below": 0, "compared": 1, "mean_diff": 0.0}
    assert counts == {
        "monster": {"MS4N": same, "all": same},
        "uea": {
            "FCN": {"above": 1, "agree": 0, "below": 0, "compared": 1, "mean_diff": 0.1},
            # diffs 0.05, 0.02, -0.08
            "MS4N": {"above": 2, "agree": 2, "below": 1, "compared": 3, "mean_diff": -0.003333},
            "all": {"above": 3, "agree": 2, "below": 1, "compared": 4, "mean_diff": 0.0225},
        },
    }
    assert json.dumps(counts) == json.dumps(counts, sort_keys=True)  # stable order
    for models in counts.values():
        for c in models.values():
            assert all(type(c[k]) is int for k in ("above", "agree", "below", "compared"))
            assert type(c["mean_diff"]) is float


def test_write_scorecard(tmp_path):
    card = scorecard(OURS, PAPER)
    paths = write_scorecard(card, tmp_path / "scorecard")
    assert set(paths) == {"csv", "md"}
    md = paths["md"].read_text(encoding="utf-8")
    first = md.splitlines()[0]
    assert first.startswith("A cell agrees when |ours − paper| ≤ max(2 · σ_paper, 0.03)")
    summary = md[md.index("## Agreement per model") : md.index("## Cells")]
    fcn = next(line for line in summary.splitlines() if "| FCN" in line)
    assert [c.strip() for c in fcn.strip("|").split("|")] == [
        "uea",
        "FCN",
        "0",
        "1",
        "0%",
        "+0.100",
        "1",
        "0",
    ]  # agree, compared, share, mean ours − paper, above, below
    total = next(line for line in summary.splitlines() if "| all" in line and "uea" in line)
    assert [c.strip() for c in total.strip("|").split("|")][2:] == [
        "2",
        "4",
        "50%",
        "+0.022",
        "3",
        "1",
    ]
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
    assert counts["monster"]["all"]["agree"] == counts["monster"]["all"]["compared"] == 406
    assert counts["uea"]["MS4N"] == {
        "above": 0,
        "agree": 30,
        "below": 0,
        "compared": 30,
        "mean_diff": 0.0,
    }
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


def test_uea6_s5_logncde_is_scored_against_the_log_ncde_benchmarks_s5(tmp_path):
    published = published_counterparts()
    s5 = load_published_uea6().set_index(["dataset", "model"]).loc[("EigenWorms", "S5")]
    row = published.set_index(["benchmark", "dataset", "model"]).loc[
        ("uea6", "EigenWorms", "S5-logncde")
    ]
    assert row["error"] == pytest.approx(1 - s5["accuracy_mean"])  # error = 1 − accuracy
    assert (row["std"], row["n_runs"]) == (pytest.approx(s5["accuracy_std"]), 5)
    ours = frame([("uea6", "EigenWorms", "S5-logncde", 1 - s5["accuracy_mean"] + 0.01, 0.02, 5),
                  ("uea6", "Heartbeat", "S5-logncde", 0.9, 0.01, 5)])  # fmt: skip
    card = scorecard(ours, published).set_index("dataset")
    assert card.loc["EigenWorms", "agree"] and not card.loc["Heartbeat", "agree"]
    assert "S5-logncde (uea6, paper): 4 cell(s), not in our records" in card.attrs["not_compared"]
    md = write_scorecard(scorecard(ours, published), tmp_path / "sc")["md"].read_text()
    assert "uea6: the Log-NCDE benchmark" in md and "S5-logncde against its S5" in md


def test_a_physiome_model_of_ours_that_reimplements_a_leaderboard_one_is_scored():
    published = published_counterparts(
        uea6_as={}, physiome_as={"LinODEnet-ours": "LinODENet"}, ms4n_as={}
    )
    assert set(published["benchmark"]) == {"physiome_ode"} and len(published) == 50
    hod = published.set_index("dataset").loc["HOD01"]
    assert (hod["model"], hod["error"], hod["std"], hod["n_runs"]) == (
        "LinODEnet-ours", 0.441, 0.043, 5)  # fmt: skip
    assert published_counterparts(uea6_as={}, physiome_as={}, ms4n_as={}).empty


def test_fcn_monster_is_scored_against_the_papers_fcn():
    """The MONSTER code's FCN (FCN-MONSTER) beside the paper's FCN column, on both of its
    tables; our Wang et al. FCN keeps its own comparison."""
    published = published_counterparts(uea6_as={}, physiome_as={})
    assert set(published["model"]) == {"FCN-MONSTER"}
    assert set(published["benchmark"]) == {"uea", "monster"}
    libras = published.set_index(["benchmark", "dataset"]).loc[("uea", "Libras")]
    assert (libras["error"], libras["std"], libras["n_runs"]) == (0.252, 0.033, 40)
    ours = frame([("uea", "Libras", "FCN-MONSTER", 0.25, 0.01, 2),
                  ("uea", "Libras", "FCN", 0.033, 0.006, 2)])  # fmt: skip
    paper = pd.concat([paper_per_dataset(["uea"]), published], ignore_index=True)
    card = scorecard(ours, paper[paper["dataset"] == "Libras"]).set_index("model")
    assert card.loc["FCN-MONSTER", "agree"] and not card.loc["FCN", "agree"]


def _physiome(cells) -> pd.DataFrame:
    rows = [{"benchmark": b, "dataset": d, "model": m, "fold": f, "test_error": e}
            for (b, d, m), errors in cells.items() for f, e in enumerate(errors)]  # fmt: skip
    return physiome_results(pd.DataFrame(rows))


def test_physiome_runs_are_set_beside_the_leaderboards_best(tmp_path):
    results = _physiome({
        ("physiome_ode", "HOD01", "M"): [0.2, 0.2],  # below CRU's 0.409: ahead, place 1
        ("physiome_ode", "DUP01", "M"): [0.9504, 0.9524],  # prints 0.951 = GraFITi-C: level
        ("physiome_ode", "MIT01", "M"): [0.004] * 5,  # four models at 0.003: place 5
        ("physiome_ode", "DIF01", "M"): [1.1] * 5,  # above all six: place 7
        ("physiome", "HodgkinHuxley1952", "M"): [0.001] * 5,  # generated: left out
    })  # fmt: skip
    comparison = leaderboard_comparison(results)
    assert list(comparison.columns) == LEADERBOARD_COLUMNS
    assert comparison["dataset"].tolist() == ["DUP01", "DIF01", "HOD01", "MIT01"]  # README order
    rows = comparison.set_index("dataset")
    assert rows.loc["HOD01", "best_model"] == "CRU" and rows.loc["HOD01", "verdict"] == "ahead"
    assert rows.loc["HOD01", "place"] == 1
    assert rows.loc["HOD01", "diff"] == pytest.approx(0.2 - 0.409)
    assert rows.loc["HOD01", "ratio"] == pytest.approx(0.2 / 0.409)
    assert rows.loc["HOD01", "z"] == pytest.approx((0.2 - 0.409) / math.sqrt(0.049**2 / 5))
    assert (rows.loc["DUP01", "verdict"], rows.loc["DUP01", "place"]) == ("level", 1)
    assert rows.loc["MIT01", "best_model"] == "LinODENet, CRU, GraFITi, GraFITi-C"
    assert (rows.loc["MIT01", "verdict"], rows.loc["MIT01", "place"]) == ("behind", 5)
    assert (rows.loc["DIF01", "verdict"], rows.loc["DIF01", "place"]) == ("behind", 7)
    counts = leaderboard_counts(comparison)
    assert counts == {"M": {"ahead": 1, "behind": 2, "compared": 4, "level": 1}}
    assert json.dumps(counts) == json.dumps(counts, sort_keys=True)
    card = scorecard(EMPTY, EMPTY)
    md = write_scorecard(card, tmp_path / "sc", leaderboard=comparison)["md"].read_text()
    section = md[md.index("## Physiome-ODE: ours against the leaderboard's best") :]
    assert "| MIT01     | M       | 0.004" in section and "| behind " in section
    assert "## Physiome-ODE" not in write_scorecard(card, tmp_path / "b")["md"].read_text()
    assert leaderboard_comparison(_physiome({})).empty and leaderboard_counts(
        leaderboard_comparison(_physiome({}))) == {}  # fmt: skip


def test_physiome_cells_of_ours_say_why_they_have_no_published_figure():
    ours = frame([("physiome", "HodgkinHuxley1952", "TIDES-physio", 0.1, 0.01, 5),
                  ("physiome_ode", "HOD01", "TIDES-physio", 0.1, 0.01, 5)])  # fmt: skip
    not_compared = scorecard(ours, PAPER).attrs["not_compared"]
    assert any(line.startswith("TIDES-physio (physiome, ours): 1 cell(s), generated with myokit")
               for line in not_compared)  # fmt: skip
    assert any("(physiome_ode, ours): 1 cell(s), not one of the leaderboard's models" in line
               for line in not_compared)  # fmt: skip
