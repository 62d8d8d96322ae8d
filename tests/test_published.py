"""`ssmbench report --published`: every paper artefact from the published numbers alone,
and the paper's headline figures recomputed from its own per-dataset rows."""

from __future__ import annotations

import pandas as pd
import pytest

from ssmbench.cli import main
from ssmbench.params_file import read_params
from ssmbench.report.build import build_published
from ssmbench.report.outputs import published_outputs
from ssmbench.report.paper_tables import paper_consistency, per_dataset_table, table1, table4
from ssmbench.report.results import model_summary, paper_per_dataset

PAPER = paper_per_dataset()
NONE = PAPER.iloc[0:0]


@pytest.fixture(scope="module")
def consistency() -> pd.DataFrame:
    return paper_consistency(PAPER).set_index(["source", "benchmark", "model", "metric"])


def test_uea_headline_of_section_5_2(consistency):
    summary = model_summary(PAPER).set_index(["benchmark", "model"])
    # MS4N's UEA average error: 0.2826 printed, 0.28273 from Table 5's 30 rows (3 decimals)
    assert summary.at[("uea", "MS4N"), "mean_error"] == pytest.approx(0.282733, abs=1e-6)
    row = consistency.loc[("text5.2", "uea", "MS4N", "error")]
    assert row.agrees and row.printed == 0.2826
    # The text's ranks are not Table 5's: among its 12 models MS4N ranks 3.93 (printed 4.2)
    # and ConvTran 3.40 (printed 3.83); the text also ranks Quant (4.8), Table 5 has none.
    assert summary.at[("uea", "MS4N"), "mean_rank"] == pytest.approx(3.9333, abs=1e-4)
    assert summary.at[("uea", "ConvTran"), "mean_rank"] == pytest.approx(3.40, abs=1e-9)
    for model in ("MS4N", "ConvTran"):
        row = consistency.loc[("text5.2", "uea", model, "rank")]
        assert not row.agrees and "Quant" in row.note


def test_monster_headline_of_section_5_1_and_table_1(consistency):
    # MS4N's MONSTER rank 4.24 and error 0.185 follow from Table 3's 14 models
    assert consistency.loc[("text5.1", "monster", "MS4N", "rank")].agrees
    assert consistency.loc[("text5.1", "monster", "MS4N", "error")].agrees
    assert consistency.loc[("text5.1", "monster", "MS4N", "rank")].recomputed == pytest.approx(
        4.241379, abs=1e-6
    )
    # ConvTran's printed 4.27 does not (4.16 from the rows)
    assert not consistency.loc[("text5.1", "monster", "ConvTran", "rank")].agrees
    # Table 1's four average stds, from Table 3's stds within their rounding
    recomputed = {m: consistency.loc[("table1", "monster", m, "average_std")].recomputed
                  for m in ("MS4N", "MS4", "Mamba2", "Mamba1")}  # fmt: skip
    assert recomputed == pytest.approx(
        {"MS4N": 0.021034, "MS4": 0.024517, "Mamba2": 0.027138, "Mamba1": 0.037414}, abs=1e-6
    )
    assert all(consistency.loc[("table1", "monster", m, "average_std")].agrees for m in recomputed)


def test_table4_errors_follow_from_table3_its_ranks_do_not_all(consistency):
    t4 = consistency.xs("table4", level="source")
    errors = t4[t4.index.get_level_values("metric").str.endswith("error")]
    ranks = t4[t4.index.get_level_values("metric").str.endswith("rank")]
    assert len(errors) == 6 * 14 and errors["agrees"].all()  # every domain x Table 3 model
    # Table 4 ranks 15 models (with iTransformer): 26 of its 84 ranks come out of the 14
    assert len(ranks) == 84 and int(ranks["agrees"].sum()) == 26
    assert (ranks["note"].str.contains("iTransformer")).all()
    largest = ranks["diff"].abs().idxmax()
    assert largest[1:] == ("Hydra", "Counts rank") and ranks.loc[largest, "diff"] == -1.0


def test_published_tables_hold_the_papers_figures():
    t5 = per_dataset_table(NONE, PAPER, "uea").set_index("Dataset")
    assert [c for c in t5.columns if "(ours)" in c] == []
    assert t5.loc["Average", "MS4N (paper)"] == "0.283 ± 0.026"
    assert t5.loc["Average rank", "ConvTran (paper)"] == "3.40"
    t1 = table1(NONE, PAPER).set_index("Model")
    assert t1.loc["MS4N", "Average std (paper)"] == "0.0212"  # Table 1 as printed
    t4 = table4(NONE, PAPER).set_index(["Domain", "Figure"])
    assert t4.loc[("Audio", "Error"), "MS4N (paper)"] == "0.1009"
    assert t4.loc[("Counts", "Params"), "MS4N (paper)"] == "25,996"


def test_report_published_writes_every_artefact(tmp_path, monkeypatch):
    written = build_published(tmp_path / "results")
    expected = {o.name: o.path for o in published_outputs(tmp_path / "results")}
    assert written == expected
    for path in expected.values():
        assert path.stat().st_size > 0, path
    for name, path in expected.items():
        if name.endswith("_png"):
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    md = expected["paper_consistency_md"].read_text(encoding="utf-8")
    assert "errors and stds: 105 of 105 agree" in md


def test_cli_report_published(tmp_path, capsys):
    import yaml
    from conftest import REPO

    params = read_params(REPO / "params.yaml")
    params["paths"]["results"] = str(tmp_path / "results")
    config = tmp_path / "params.yaml"
    config.write_text(yaml.safe_dump(params, sort_keys=False))
    assert main(["--params", str(config), "report", "--published"]) == 0
    printed = capsys.readouterr().out
    assert f"table2_md: {tmp_path / 'results' / 'published' / 'tables' / 'table2.md'}" in printed
