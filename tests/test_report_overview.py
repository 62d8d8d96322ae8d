"""The MS4N paper's Figures 3/7 (``report.overview``) and Figure 1 (``report.figure1``):
the points they draw (ranks per source, the NonDL proxy, the primary source), the files
they write, and that every subset renders and states what it could not draw."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Annotation, Text

from ssmbench.report import style
from ssmbench.report.figure1 import figure1, figure1_data
from ssmbench.report.overview import COMPLEXITY_PROXY, overview_data, overview_figure
from ssmbench.report.results import (
    PER_DATASET_COLUMNS,
    model_summary,
    paper_per_dataset,
    restrict,
)


@pytest.fixture(autouse=True)
def _report_notes(caplog):
    """What the report leaves out for want of data is logged at INFO."""
    caplog.set_level(logging.INFO, logger="ssmbench.report")


DATASETS = {
    "monster": ["AudioMNIST", "CrowdSourced"],
    "uea": ["ArticularyWordRecognition", "AtrialFibrillation"],
}
MODELS = ["MS4N", "S4D", "Quant"]


@pytest.fixture(scope="module")
def paper():
    return paper_per_dataset()


def _ours(benchmark: str, models=MODELS, datasets=None) -> pd.DataFrame:
    """A small synthetic per-dataset frame: MS4N and S4D with counts, Quant without."""
    spec = {
        "MS4N": ("ms4", 0.20, 25_000.0, 22.0),
        "S4D": ("s4d", 0.24, 30_000.0, 15.0),
        "Quant": ("quant", 0.21, np.nan, np.nan),
    }
    rows = []
    for i, dataset in enumerate(datasets or DATASETS[benchmark]):
        for model in models:
            family, error, params, mmac = spec[model]
            rows.append(
                {
                    "benchmark": benchmark,
                    "dataset": dataset,
                    "model": model,
                    "family": family,
                    "domain": "x",
                    "error": error + 0.01 * i,
                    "std": 0.01 + 0.005 * i,
                    "n_runs": 5,
                    "params": params,
                    "mmac": mmac,
                }
            )
    return pd.DataFrame(rows, columns=list(PER_DATASET_COLUMNS))


def _paper_for(paper, ours: pd.DataFrame) -> pd.DataFrame:
    parts = [
        restrict(paper, b, set(g["model"]), set(g["dataset"])) for b, g in ours.groupby("benchmark")
    ]
    return pd.concat(parts, ignore_index=True)


@pytest.fixture
def drawn(monkeypatch):
    """The figures handed to ``style.save``, in order."""
    figures = []
    original = style.save

    def keep(fig, path_stem):
        figures.append(fig)
        return original(fig, path_stem)

    monkeypatch.setattr(style, "save", keep)
    return figures


def _text(fig) -> str:
    """Every text of a figure (titles, notes, labels), whitespace collapsed."""
    parts = [fig.get_suptitle()]
    for ax in fig.axes:
        parts += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        parts += [t.get_text() for t in ax.texts]
    for legend in fig.legends:
        parts += [t.get_text() for t in legend.get_texts()]
    return " ".join(" ".join(parts).split())


def _assert_files(paths):
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    assert paths["pdf"].read_bytes()[:4] == b"%PDF"


def _warnings(caplog) -> list[str]:
    """What the report said it left out (INFO: for want of data) and found wrong (WARNING)."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]


# ---------------------------------------------------------------- overview_data


def test_overview_data_published_only_ranks_and_proxy(paper):
    monster = restrict(paper, "monster")
    data = overview_data(monster.iloc[:0], monster)
    assert set(data["source"]) == {"paper"} and data["primary"].all()
    assert len(data) == monster["model"].nunique() == 14
    expected = model_summary(monster).set_index("model")
    got = data.set_index("model")
    for col in ("mean_rank", "mean_error", "mean_std", "params", "mmac"):
        pd.testing.assert_series_equal(got[col], expected.loc[got.index, col], check_names=False)
    nondl = got.loc[["Quant", "Hydra", "ET"]]
    assert nondl["proxy"].all() and nondl["group"].eq("NonDL").all()
    assert (nondl["plotted_mmac"] == COMPLEXITY_PROXY["mmac"]).all()
    assert (nondl["plotted_params"] == COMPLEXITY_PROXY["params"]).all()
    assert not got.drop(["Quant", "Hydra", "ET"])["proxy"].any()
    assert got.loc["MS4N", "group"] == "SSM" and got.loc["ConvTran", "group"] == "Hybrid"


def test_overview_data_each_source_ranked_on_its_own_frame(paper):
    ours = _ours("monster")
    theirs = _paper_for(paper, ours)
    data = overview_data(ours, theirs)
    o = data[data["source"] == "ours"].set_index("model")
    p = data[data["source"] == "paper"].set_index("model")
    assert o["primary"].all() and not p["primary"].any()
    # ours: MS4N 0.20/0.21, Quant 0.21/0.22, S4D 0.24/0.25 -> ranks 1, 2, 3 on each dataset
    assert o["mean_rank"].to_dict() == {"MS4N": 1.0, "Quant": 2.0, "S4D": 3.0}
    assert set(p.index) == {"MS4N", "Quant"}  # the paper has no S4D
    paper_ranks = model_summary(theirs).set_index("model")["mean_rank"]
    assert p["mean_rank"].to_dict() == paper_ranks.to_dict()
    assert o.loc["Quant", "proxy"] and np.isnan(o.loc["Quant", "params"])
    assert o.loc["Quant", "plotted_params"] == 20_000 and o.loc["S4D", "plotted_mmac"] == 15.0


def test_overview_data_both_empty_raises(paper):
    with pytest.raises(ValueError, match="both"):
        overview_data(paper.iloc[:0], paper.iloc[:0])


# ---------------------------------------------------------------- overview_figure


def test_overview_published_only_monster(paper, tmp_path, drawn):
    monster = restrict(paper, "monster")
    paths = overview_figure(monster.iloc[:0], monster, tmp_path / "fig3", "monster", "Figure 3")
    _assert_files(paths)
    text = _text(drawn[-1])
    assert "MONSTER: published values (MS4N paper)" in text
    assert "(cf. MS4N paper, Figure 3)" in text
    assert "14 models, 29 datasets" in text
    assert "20K parameters and 1 FLOP" in text
    assert "MS4N 24.7k" in text and "Quant 20.0k*" in text  # name and parameters
    for group in ("SSM", "Transformer", "Hybrid", "RNN", "CNN", "NonDL"):
        assert group in text


def test_overview_labels_do_not_overlap(paper, tmp_path, drawn):
    monster = restrict(paper, "monster")
    overview_figure(monster.iloc[:0], monster, tmp_path / "fig3", "monster", "Figure 3")
    fig = drawn[-1]
    fig.canvas.draw()  # measured as drawn on screen (dpi 100), not mid-save
    renderer = fig.canvas.get_renderer()
    labels = [
        t for ax in fig.axes for t in ax.texts if isinstance(t, Annotation) and "\n" in t.get_text()
    ]
    assert len(labels) == 14
    boxes = [(t.axes, Text.get_window_extent(t, renderer)) for t in labels]  # not its line
    for i, (ax_i, a) in enumerate(boxes):
        for ax_j, b in boxes[i + 1 :]:
            if ax_i is ax_j:
                assert not a.overlaps(b)


def test_overview_published_only_uea_lists_models_without_mmac(paper, tmp_path, drawn, caplog):
    uea = restrict(paper, "uea")
    with caplog.at_level(logging.INFO):
        paths = overview_figure(uea.iloc[:0], uea, tmp_path / "fig7", "uea", "Figure 7")
    _assert_files(paths)
    text = _text(drawn[-1])
    assert "UEA: published values (MS4N paper)" in text and "Figure 7" in text
    assert "Mamba1 (no MMac)" in text and "iTransformer (no MMac)" in text
    assert "no parameter count for Informer" in text
    assert "overview: skipped Mamba1 (paper) in A: no MMac" in _warnings(caplog)
    assert "NonDL" not in text  # the paper's UEA has no non-deep model


def test_overview_small_ours_and_paper(paper, tmp_path, drawn, caplog):
    ours = _ours("monster")
    with caplog.at_level(logging.INFO):
        paths = overview_figure(
            ours, _paper_for(paper, ours), tmp_path / "small", "monster", "Figure 3"
        )
    _assert_files(paths)
    text = _text(drawn[-1])
    assert "published values" not in drawn[-1].get_suptitle()
    assert "ours (filled): 3 models, 2 datasets" in text
    assert "MS4N paper (hollow): 2 models, 2 datasets" in text
    assert "no paper figure for S4D" in text
    assert "Quant 20.0k*" in text and "S4D 30.0k" in text
    assert any("S4D" in m and "no paper values" in m for m in _warnings(caplog))
    # one line joins ours to the paper's for each model both have (MS4N, Quant)
    lines = [
        ln
        for ax in drawn[-1].axes
        for ln in ax.lines
        if len(ln.get_xdata()) == 2 and ln.get_linestyle() == "-"
    ]
    assert len(lines) == 2


def test_overview_single_model(paper, tmp_path, drawn):
    ours = _ours("monster", models=["MS4N"])
    paths = overview_figure(ours, _paper_for(paper, ours), tmp_path / "one", "monster", "Figure 3")
    _assert_files(paths)
    assert "1 model, 2 datasets" in _text(drawn[-1])


def test_overview_all_nan_mmac(paper, tmp_path, drawn, caplog):
    ours = _ours("monster").assign(mmac=np.nan)
    with caplog.at_level(logging.INFO):
        _assert_files(overview_figure(ours, None, tmp_path / "nan", "monster", "Figure 3"))
    text = _text(drawn[-1])
    assert "not placed (ours): MS4N (no MMac); S4D (no MMac)" in text
    assert "no paper values" in text
    assert "Quant 20.0k*" in text  # NonDL still placed at the proxy
    assert "overview: skipped S4D (ours) in A: no MMac" in _warnings(caplog)
    deep = ours[ours["model"] != "Quant"]
    _assert_files(overview_figure(deep, None, tmp_path / "nan2", "monster", "Figure 3"))
    assert "no model with both a mean rank and MMac" in _text(drawn[-1])


def test_overview_missing_std_is_stated(paper, tmp_path, drawn, caplog):
    ours = _ours("monster").assign(std=np.nan)
    with caplog.at_level(logging.INFO):
        overview_figure(ours, _paper_for(paper, ours), tmp_path / "nostd", "monster", "Figure 3")
    assert "C: no std over runs (ours) for MS4N, Quant, S4D" in _text(drawn[-1])
    assert any("std over runs bar of S4D (ours)" in m for m in _warnings(caplog))


def test_overview_other_benchmark_only_raises(paper, tmp_path):
    uea = restrict(paper, "uea")
    with pytest.raises(ValueError, match="MONSTER"):
        overview_figure(uea.iloc[:0], uea, tmp_path / "x", "monster", "Figure 3")
    with pytest.raises(ValueError, match="both"):
        overview_figure(paper.iloc[:0], paper.iloc[:0], tmp_path / "x", "uea", "Figure 7")


def test_overview_is_deterministic(paper, tmp_path):
    ours = _ours("monster")
    a = overview_figure(ours, _paper_for(paper, ours), tmp_path / "a", "monster", "Figure 3")
    b = overview_figure(ours, _paper_for(paper, ours), tmp_path / "b", "monster", "Figure 3")
    assert a["png"].read_bytes() == b["png"].read_bytes()
    assert a["pdf"].read_bytes() == b["pdf"].read_bytes()


# ---------------------------------------------------------------- Figure 1


def test_figure1_published_only(paper, tmp_path, drawn):
    data = figure1_data(paper.iloc[:0], paper)
    assert data.groupby("benchmark")["model"].nunique().to_dict() == {"monster": 14, "uea": 12}
    assert data["primary"].all()
    _assert_files(figure1(paper.iloc[:0], paper, tmp_path / "fig1"))
    text = _text(drawn[-1])
    assert "published values (MS4N paper)" in drawn[-1].get_suptitle()
    assert "A MONSTER: published values (MS4N paper)" in text
    assert "B UEA: published values (MS4N paper)" in text
    assert "Figure 1" in text and "1 FLOP" in text


def test_figure1_small_ours_and_paper_both_benchmarks(paper, tmp_path, drawn, caplog):
    ours = pd.concat([_ours("monster"), _ours("uea")], ignore_index=True)
    theirs = _paper_for(paper, ours)
    data = figure1_data(ours, theirs)
    mon = data[(data["benchmark"] == "monster") & (data["source"] == "ours")].set_index("model")
    assert mon["mean_error"].round(6).to_dict() == {"MS4N": 0.205, "Quant": 0.215, "S4D": 0.245}
    assert mon.loc["Quant", "plotted_mmac"] == COMPLEXITY_PROXY["mmac"]
    uea_paper = data[(data["benchmark"] == "uea") & (data["source"] == "paper")]
    assert set(uea_paper["model"]) == {"MS4N"}  # the paper's UEA has no S4D and no Quant
    with caplog.at_level(logging.INFO):
        _assert_files(figure1(ours, theirs, tmp_path / "fig1"))
    text = _text(drawn[-1])
    assert "A (MONSTER) covers ours 3 models, 2 datasets, paper 2 models, 2 datasets" in text
    assert "UEA: no paper figure for Quant, S4D" in text
    assert any(
        m.startswith("figure1: skipped the paper's points for Quant, S4D (UEA)")
        for m in _warnings(caplog)
    )


def test_figure1_leaves_out_the_panel_of_a_benchmark_without_results(
    paper, tmp_path, drawn, caplog
):
    ours = _ours("monster")
    with caplog.at_level(logging.INFO):
        _assert_files(figure1(ours, _paper_for(paper, ours), tmp_path / "fig1"))
    fig = drawn[-1]
    assert "No UEA panel: no UEA results in these records." in _text(fig)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert any(t.startswith("A  MONSTER") for t in titles)
    assert not any("UEA" in t for t in titles)  # no empty box
    assert "MONSTER (cf. MS4N paper" in fig.get_suptitle()
    assert any("no UEA panel" in m for m in _warnings(caplog))
    uea = _ours("uea")  # UEA alone: its panel is A
    _assert_files(figure1(uea, None, tmp_path / "fig1u"))
    assert any(ax.get_title(loc="left").startswith("A  UEA") for ax in drawn[-1].axes)


def test_figure1_single_model_and_nan_mmac(paper, tmp_path, drawn, caplog):
    one = _ours("uea", models=["MS4N"], datasets=["AtrialFibrillation"])
    _assert_files(figure1(one, None, tmp_path / "one"))
    assert "ours 1 model, 1 dataset" in _text(drawn[-1])
    nan = _ours("monster").assign(mmac=np.nan)
    with caplog.at_level(logging.INFO):
        _assert_files(figure1(nan, _paper_for(paper, nan).assign(mmac=np.nan), tmp_path / "n"))
    text = _text(drawn[-1])
    assert "A (MONSTER), not placed (ours): MS4N (no MMac); S4D (no MMac)" in text
    assert "figure1: skipped MS4N (paper) in A (MONSTER): no MMac" in _warnings(caplog)


def test_figure1_empty_raises(paper, tmp_path):
    with pytest.raises(ValueError, match="both"):
        figure1(paper.iloc[:0], paper.iloc[:0], tmp_path / "x")
    assert figure1_data(paper.iloc[:0], None).empty
