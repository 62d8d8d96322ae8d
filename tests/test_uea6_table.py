"""The UEA-6 table (report/uea6_table.py): ours from the uea6 records beside the Log-NCDE
benchmark's published accuracies, the average and the average rank, and the note on how
configurations were selected."""

from __future__ import annotations

import pandas as pd
import pytest

from ssmbench.report.reference import load_published_uea6
from ssmbench.report.uea6_table import (
    MOTOR_IMAGERY_NOTE,
    SELECTION_NOTE,
    cd_note,
    nemenyi_critical_difference,
    ranks_of,
    uea6_results,
    uea6_table,
    write_uea6_table,
)

DATASETS = ("EigenWorms", "EthanolConcentration", "Heartbeat", "MotorImagery",
            "SelfRegulationSCP1", "SelfRegulationSCP2")  # fmt: skip


def _records(acc: dict[str, float], model="S5-logncde") -> pd.DataFrame:
    rows = [{"benchmark": "uea6", "dataset": d, "model": model, "fold": f,
             "test_error": 1 - a + (0.01 if f else -0.01)}
            for d, a in acc.items() for f in (0, 1)]  # fmt: skip
    rows.append({"benchmark": "uea", "dataset": "EigenWorms", "model": model, "fold": 0,
                 "test_error": 0.0})  # another benchmark: not in the table  # fmt: skip
    return pd.DataFrame(rows)


def test_the_published_file_is_the_log_ncde_papers():
    published = load_published_uea6().set_index(["dataset", "model"])
    assert published.loc[("EigenWorms", "log_ncde"), "accuracy_mean"] == pytest.approx(
        0.856, abs=1e-3
    )
    assert set(published.index.get_level_values("dataset")) == set(DATASETS)
    assert (published["n_seeds"] == 5).all()


def test_ours_sits_beside_its_published_twin_and_ranks_are_over_all_columns():
    ours = dict.fromkeys(DATASETS, 0.99)  # better than every published model everywhere
    table = uea6_table(uea6_results(_records(ours)))
    headers = list(table.columns)
    assert headers[1:3] == ["S5-logncde (ours)", "S5 (published)"]
    assert "log_ncde (published)" in headers and "mamba (published)" in headers
    ew = table.set_index("Dataset").loc["EigenWorms"]
    assert ew["S5-logncde (ours)"] == "99.0 ± 1.0 (n=2)"  # folds 0.98 and 1.00: 2 of 5
    assert ew["S5 (published)"] == "81.1 ± 3.7"
    ranks = ranks_of(table)
    assert ranks["S5-logncde (ours)"] == 1.0
    assert table["Dataset"].iloc[-2] == "Average (on 6)"


def test_a_cell_over_the_published_number_of_seeds_carries_no_count():
    rows = [{"benchmark": "uea6", "dataset": "Heartbeat", "model": "Mamba1-logncde",
             "fold": f, "test_error": 0.3} for f in range(5)]  # fmt: skip
    table = uea6_table(uea6_results(pd.DataFrame(rows))).set_index("Dataset")
    assert table.loc["Heartbeat", "Mamba1-logncde (ours)"] == "70.0 ± 0.0"
    headers = list(table.columns)
    assert headers[headers.index("Mamba1-logncde (ours)") + 1] == "mamba (published)"


def test_the_markdown_says_how_configurations_were_selected(tmp_path):
    paths = write_uea6_table(uea6_results(_records({"Heartbeat": 0.7})), tmp_path / "uea6")
    md = paths["md"].read_text(encoding="utf-8")
    assert md.rstrip().endswith(SELECTION_NOTE) and "| Heartbeat" in md
    assert MOTOR_IMAGERY_NOTE in md
    assert SELECTION_NOTE not in paths["csv"].read_text(encoding="utf-8")


def test_missing_datasets_leave_the_averages_to_the_common_ones():
    table = uea6_table(uea6_results(_records({"EigenWorms": 0.5, "Heartbeat": 0.5})))
    ew = table.set_index("Dataset")
    assert ew.loc["MotorImagery", "S5-logncde (ours)"] == "–"
    assert table["Dataset"].iloc[-2] == "Average (on 2)"
    assert ranks_of(table)["S5-logncde (ours)"] > 1.0  # 50% is below the published there
    empty = uea6_table(uea6_results(pd.DataFrame()))
    assert "S5-logncde (ours)" not in empty.columns and "S5 (published)" in empty.columns


@pytest.mark.parametrize("k, q", [(2, 1.960), (3, 2.343), (7, 2.949), (8, 3.031)])
def test_the_nemenyi_critical_difference_is_demsars(k, q):
    # Demšar 2006, Table 5a (q_0.05 of the two-tailed Nemenyi test); CD = q sqrt(k(k+1)/6N)
    assert nemenyi_critical_difference(k, 6) == pytest.approx(q * (k * (k + 1) / 36) ** 0.5,
                                                              abs=2e-3)  # fmt: skip


def test_the_markdown_says_six_datasets_cannot_separate_many_models(tmp_path):
    paths = write_uea6_table(uea6_results(_records({"Heartbeat": 0.7})), tmp_path / "uea6")
    md = paths["md"].read_text(encoding="utf-8")
    # S5-logncde (ours) and the 7 published columns over the 6 datasets
    assert cd_note(8, 6) in md and "is 4.29 average ranks" in cd_note(8, 6)
    assert "at most 7 apart" in cd_note(8, 6)
    assert "3.68" in cd_note(7, 6)
