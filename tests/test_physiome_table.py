"""The Physiome-ODE table (report/physiome_table.py): ours on the official archive and our
generated stand-ins beside the leaderboard, its Wins and Average rank rows, the notes, and
the critical-difference diagram drawn or not; and the report building them."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from ssmbench.report.build import build_report
from ssmbench.report.physiome_table import (
    CD_MIN_DATASETS,
    METRIC_NOTE,
    PUBLISHED_MODELS,
    SELECTION_NOTE,
    cd_min_datasets,
    physiome_cd_diagram,
    physiome_results,
    physiome_table,
    summary_row,
    write_physiome_table,
)
from ssmbench.report.reference import load_published_physiome
from ssmbench.report.tables import MISSING
from ssmbench.staleness import sealed

#: The leaderboard's summary rows as its README prints them (kloetergensc/Physiome-ODE
#: @4829169). Its Wins row gives Neural Flows 2, but its table bolds Neural Flows nowhere:
#: the counts of the table (0) are the ones reproduced.
README_WINS = {"GRU-ODE-Bayes": 0, "LinODENet": 25, "CRU": 8, "Neural Flows": 0, "GraFITi": 10,
               "GraFITi-C": 15}  # fmt: skip
README_AVERAGE_RANK = {"GRU-ODE-Bayes": 5.90, "LinODENet": 2.10, "CRU": 2.82,
                       "Neural Flows": 4.82, "GraFITi": 2.20, "GraFITi-C": 2.86}  # fmt: skip


def _records(cells: dict[tuple[str, str, str], list[float]]) -> pd.DataFrame:
    """Run records from {(benchmark, dataset, model): [test MSE per fold]}."""
    rows = [{"benchmark": b, "dataset": d, "model": m, "fold": f, "task": "regression",
             "test_error": e}
            for (b, d, m), errors in cells.items() for f, e in enumerate(errors)]  # fmt: skip
    return pd.DataFrame(rows)


def _ours_everywhere(codes, mse=0.5) -> dict:
    return {("physiome_ode", c, "M"): [mse] * 5 for c in codes}


def test_the_published_file_is_the_leaderboards():
    published = load_published_physiome()
    assert published["code"].nunique() == 50 and published["model"].nunique() == 6
    assert set(published["model"]) == set(PUBLISHED_MODELS)
    hod = published.set_index(["code", "model"]).loc[("HOD01", "CRU")]
    assert (hod["dataset"], hod["mse_mean"], hod["mse_std"]) == (
        "hodgkin_huxley_1952_variant01", 0.409, 0.049)  # fmt: skip
    assert published["code"].iloc[0] == "DUP01"  # the README's order (JGD descending)


def test_the_leaderboard_alone_reproduces_its_readme_summary_rows():
    table = physiome_table(physiome_results(pd.DataFrame()))
    assert list(table.columns) == ["Dataset", *(f"{m} (published)" for m in PUBLISHED_MODELS)]
    assert table["Dataset"].iloc[-2:].tolist() == ["Wins (on 50)", "Average rank (on 50)"]
    wins, ranks = summary_row(table, "Wins"), summary_row(table, "Average rank")
    assert wins == {f"{m} (published)": w for m, w in README_WINS.items()}
    assert ranks == {f"{m} (published)": r for m, r in README_AVERAGE_RANK.items()}


def test_ours_mean_and_population_std_over_the_folds():
    records = _records({("physiome_ode", "HOD01", "M"): [0.4, 0.6],
                        ("physiome_ode", "DUP01", "M"): [0.1, 0.2, 0.3, 0.4, 0.5]})  # fmt: skip
    results = physiome_results(records)
    hod = results[(results["model"] == "M") & (results["dataset"] == "HOD01")].iloc[0]
    assert (hod["mse"], hod["std"], hod["n"]) == (pytest.approx(0.5), pytest.approx(0.1), 2)
    assert hod["test_set"] == "official" and hod["source"] == "ours"
    rows = physiome_table(results).set_index("Dataset")
    assert rows.loc["HOD01", "M (ours)"] == "0.500 ± 0.100 (n=2)"  # not the leaderboard's 5
    assert rows.loc["DUP01", "M (ours)"] == "0.300 ± 0.141"  # population std (ddof 0)
    assert rows.loc["JEL01", "M (ours)"] == MISSING
    assert rows.loc["HOD01", "CRU (published)"] == "0.409 ± 0.049"


def test_wins_count_every_tie_at_the_printed_precision_and_ranks_share_the_lowest():
    # DUP01: ours 0.9514 prints 0.951, level with GraFITi-C's 0.951 (a win for each);
    # HOD01: ours 0.2 below CRU's 0.409. Ranks (min) DUP01: M 1, GraFITi-C 1, GraFITi 3,
    # CRU 4, LinODENet 5, Neural Flows 6, GRU-ODE-Bayes 7; HOD01: M 1, CRU 2, LinODENet 3,
    # GraFITi 4, GraFITi-C 5, Neural Flows 6, GRU-ODE-Bayes 7.
    records = _records({("physiome_ode", "DUP01", "M"): [0.9504, 0.9524],
                        ("physiome_ode", "HOD01", "M"): [0.2, 0.2]})  # fmt: skip
    table = physiome_table(physiome_results(records))
    assert table["Dataset"].iloc[-2:].tolist() == ["Wins (on 2)", "Average rank (on 2)"]
    wins, ranks = summary_row(table, "Wins"), summary_row(table, "Average rank")
    assert wins == {"M (ours)": 2, "GRU-ODE-Bayes (published)": 0, "LinODENet (published)": 0,
                    "CRU (published)": 0, "Neural Flows (published)": 0,
                    "GraFITi (published)": 0, "GraFITi-C (published)": 1}  # fmt: skip
    assert ranks == {"M (ours)": 1.0, "GRU-ODE-Bayes (published)": 7.0,
                     "LinODENet (published)": 4.0, "CRU (published)": 3.0,
                     "Neural Flows (published)": 6.0, "GraFITi (published)": 3.5,
                     "GraFITi-C (published)": 3.0}  # fmt: skip


def test_generated_stand_ins_are_labelled_shown_and_never_ranked():
    records = _records({
        ("physiome_ode", "HOD01", "M"): [0.5] * 5,
        ("physiome", "HodgkinHuxley1952", "M"): [0.001] * 5,  # far better: must not count
        ("physiome", "Noble1962", "M"): [0.3] * 5,  # no leaderboard counterpart
        ("physiome", "DiFrancescoNoble1985", "G"): [0.2] * 5,  # G ran on generated data only
    })  # fmt: skip
    results = physiome_results(records)
    generated = results[results["test_set"] == "generated"].set_index(["dataset", "model"])
    label = "HOD01, HodgkinHuxley1952 (generated)"  # HOD01 is also a generated set's name
    assert generated.loc[("HodgkinHuxley1952", "M"), "label"] == label
    assert generated.loc[("DiFrancescoNoble1985", "G"), "code"] == "DIF01"
    assert generated.loc[("Noble1962", "M"), "label"] == "Noble1962 (generated)"
    assert pd.isna(generated.loc[("Noble1962", "M"), "code"])
    table = physiome_table(results)
    labels = table["Dataset"].tolist()
    assert labels[50:53] == ["DIF01 (generated)", label, "Noble1962 (generated)"]
    rows = table.set_index("Dataset")
    assert rows.loc[label, "M (ours)"] == "0.001 ± 0.000"
    assert rows.loc[label, "CRU (published)"] == MISSING  # not its test set
    # ranked on HOD01 alone (M's only official dataset): 0.5 is behind CRU, LinODENet and
    # GraFITi there, the generated 0.001 ignored; G (generated only) is not ranked
    assert rows.loc["Wins (on 1)", "M (ours)"] == "0"
    assert rows.loc["Average rank (on 1)", "M (ours)"] == "4.00"
    assert rows.loc["Wins (on 1)", "G (ours)"] == MISSING
    only_generated = physiome_table(physiome_results(_records(
        {("physiome", "HodgkinHuxley1952", "G"): [0.2] * 5})))  # fmt: skip
    assert only_generated["Dataset"].iloc[-1] == "Average rank (on 50)"  # the leaderboard's


def test_official_datasets_named_by_their_archive_name_take_the_code():
    results = physiome_results(_records({("physiome_ode", "dupont_1991a", "M"): [0.9] * 5}))
    ours = results[results["source"] == "ours"].iloc[0]
    assert (ours["label"], ours["code"], ours["dataset"]) == ("DUP01", "DUP01", "dupont_1991a")


def test_the_markdown_carries_the_notes_and_the_csv_does_not(tmp_path):
    records = _records({("physiome_ode", "HOD01", "M"): [0.3] * 5})
    paths = write_physiome_table(physiome_results(records), tmp_path / "physiome_results")
    md = paths["md"].read_text(encoding="utf-8")
    assert "| HOD01 " in md and METRIC_NOTE in md and md.rstrip().endswith(SELECTION_NOTE)
    assert "Optuna" in SELECTION_NOTE and "validation MSE only" in SELECTION_NOTE
    assert METRIC_NOTE not in paths["csv"].read_text(encoding="utf-8")
    assert r"0.300 $\pm$ 0.000" in paths["tex"].read_text(encoding="utf-8")


def test_the_diagram_asks_for_ten_datasets_or_what_the_columns_need():
    assert CD_MIN_DATASETS == 10
    assert cd_min_datasets(8) == 10  # 2 of ours + 6 published: 8 would be the floor
    assert cd_min_datasets(200) == 12  # one-sided 2^-n <= 0.05/199 from n = 12


def _logged_skip(caplog) -> bool:
    return "skipped the critical-difference test" in caplog.text


def test_the_diagram_is_drawn_over_enough_datasets_with_every_column(tmp_path, caplog):
    codes = load_published_physiome()["code"].unique()
    results = physiome_results(_records(_ours_everywhere(codes[:CD_MIN_DATASETS])))
    with caplog.at_level(logging.INFO):
        paths = physiome_cd_diagram(results, tmp_path / "physiome_cd")
    assert not _logged_skip(caplog)
    assert "10 of 50 official datasets have every column" in caplog.text
    assert all(p.stat().st_size > 0 for p in paths.values())


def test_the_diagram_is_not_drawn_over_too_few_and_says_why(tmp_path, caplog):
    codes = load_published_physiome()["code"].unique()
    results = physiome_results(_records(_ours_everywhere(codes[: CD_MIN_DATASETS - 1])))
    with caplog.at_level(logging.INFO):
        paths = physiome_cd_diagram(results, tmp_path / "physiome_cd")
    assert _logged_skip(caplog)
    assert "9 datasets: too few for a critical-difference test (this diagram asks ≥ 10" in (
        caplog.text
    )
    assert set(paths) == {"png", "pdf"}


def test_without_runs_on_the_archive_the_diagram_is_the_leaderboards(tmp_path, caplog):
    results = physiome_results(_records({("physiome", "HodgkinHuxley1952", "G"): [0.2] * 5}))
    with caplog.at_level(logging.INFO):
        physiome_cd_diagram(results, tmp_path / "physiome_cd")
    assert not _logged_skip(caplog) and "have every column" not in caplog.text


def test_the_report_writes_the_table_the_diagram_and_the_leaderboard_counts(tmp_path):
    runs = tmp_path / "runs"
    cells = {("physiome_ode", "HOD01", "M"): [0.2] * 5,
             ("physiome_ode", "DUP01", "M"): [0.99] * 5,
             ("physiome", "HodgkinHuxley1952", "M"): [0.1] * 5}  # fmt: skip
    for record in _records(cells).to_dict("records"):
        folder = runs / record["benchmark"] / record["dataset"] / record["model"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"fold{record['fold']}.json").write_text(json.dumps(sealed(record)))
    results, figures = tmp_path / "results", tmp_path / "figures"
    written = build_report(runs, results, figures, {})
    assert {"physiome_results_md", "physiome_cd_png", "physiome_cd_pdf"} <= set(written)
    table = pd.read_csv(written["physiome_results_csv"]).set_index("Dataset")
    assert table.loc["HOD01, HodgkinHuxley1952 (generated)", "M (ours)"] == "0.100 ± 0.000"
    summary = json.loads(written["summary_json"].read_text())
    assert summary["physiome_leaderboard"] == {
        "M": {"ahead": 1, "behind": 1, "compared": 2, "level": 0}
    }
    md = written["scorecard_md"].read_text(encoding="utf-8")
    assert "## Physiome-ODE: ours against the leaderboard's best" in md
    assert "generated with myokit" in md
