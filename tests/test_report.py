"""ssmbench.report on synthetic run records (no training, no data)."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pandas as pd
import pytest

from ssmbench.report import (
    RecordError,
    build_report,
    collect_records,
    figure8,
    load_curves,
    load_published_errors,
    load_published_summary,
    summarise,
    write_table,
)
from ssmbench.report.aggregate import NOT_IN_METRICS
from ssmbench.report.outputs import report_outputs
from ssmbench.report.paper_tables import per_dataset_table
from ssmbench.report.results import ours_per_dataset, paper_per_dataset
from ssmbench.staleness import sealed


@pytest.fixture(autouse=True)
def _report_notes(caplog):
    """What the report leaves out for want of data is logged at INFO."""
    caplog.set_level(logging.INFO, logger="ssmbench.report")


# Hand-checked example: test_error per fold.
#   BasicMotions   MS4N [0.1, 0.3] -> 0.2 ± 0.1     MS4 [0.2, 0.2] -> 0.2 ± 0.0   ranks 1.5 / 1.5
#   JapaneseVowels MS4N [0.0, 0.0] -> 0.0 ± 0.0     MS4 [0.4, 0.6] -> 0.5 ± 0.1   ranks 1   / 2
#   Libras         MS4N [0.5, 0.5] -> 0.5 ± 0.0     (no MS4: not ranked)
#   MS4N: error (0.2 + 0 + 0.5) / 3, rank 1.25, std 0.1 / 3;  MS4: error 0.35, rank 1.75, std 0.05
ERRORS = {
    ("BasicMotions", "MS4N"): [0.1, 0.3],
    ("BasicMotions", "MS4"): [0.2, 0.2],
    ("JapaneseVowels", "MS4N"): [0.0, 0.0],
    ("JapaneseVowels", "MS4"): [0.4, 0.6],
    ("Libras", "MS4N"): [0.5, 0.5],
}
PARAMS = {"MS4N": (29920, 11.24), "MS4": (24548, 9.5)}
# Curve speeds: val_loss = 2 exp(-k e) crosses 0.5 at the first epoch e > ln 4 / k.
RATE = {"MS4N": 0.2, "MS4": 0.05}  # MS4N: epoch 7, MS4: epoch 28


def _record(dataset, model, fold, err):
    params, mmac = PARAMS[model]
    return {
        "benchmark": "uea",
        "dataset": dataset,
        "model": model,
        "family": "ms4",
        "fold": fold,
        "seed": fold,
        "task": "classification",
        "test_accuracy": 1 - err,
        "test_error": err,
        "test_loss": 0.1,
        "best_epoch": 10,
        "best_val_loss": 0.2,
        "best_val_accuracy": 0.9,
        "epochs_run": 30,
        "max_epochs": 300,
        "stopped_early": True,
        "batch_size": 8,
        "n_train": 36,
        "n_val": 4,
        "n_test": 40,
        "train_seconds": 1.0,
        "test_seconds": 0.1,
        "params": params,
        "mmac": mmac,
        "device": "cpu",
        "threads": 1,
        "versions": {"python": "3.12", "torch": "2.13.0"},
        "git_commit": "abc",
        "git_dirty": False,
        "hostname": "h",
        "created": "2025-01-01T00:00:00Z",
        "model_params": {"family": "ms4", "d_model": 64},
        "protocol": {"lr": 0.001},
    }


def _curve(model, n_epochs):
    k = RATE[model]
    rows = []
    for e in range(1, n_epochs + 1):
        val_loss = 2 * math.exp(-k * e)
        val_acc = 1 - math.exp(-k * e) if model == "MS4N" else 0.5 + 0.3 * (1 - math.exp(-k * e))
        rows.append(
            {
                "epoch": e,
                "train_loss": val_loss * 0.8,
                "train_accuracy": val_acc,
                "val_loss": val_loss,
                "val_accuracy": val_acc,
                "seconds": 0.01,
            }
        )
    return pd.DataFrame(rows)


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    runs = tmp_path / "results" / "runs"
    for (dataset, model), errs in ERRORS.items():
        d = runs / "uea" / dataset / model
        d.mkdir(parents=True)
        for fold, err in enumerate(errs):
            n_epochs = 25 if (model == "MS4" and fold == 1) else 30  # one stopped earlier
            _curve(model, n_epochs).to_csv(d / f"fold{fold}.curve.csv", index=False)
            (d / f"fold{fold}.json").write_text(
                json.dumps(sealed(_record(dataset, model, fold, err)))
            )
    # Noise the readers must ignore: a temp record, an unfinished run's curve.
    d = runs / "uea" / "BasicMotions" / "MS4N"
    (d / ".fold2.json.x1y2.tmp").write_text("{half")
    (d / "fold2.json.tmp").write_text("{half")
    _curve("MS4N", 3).to_csv(d / "fold2.curve.csv", index=False)
    return runs


def test_collect_records_one_row_per_record(runs_dir):
    df = collect_records(runs_dir)
    assert len(df) == 10
    assert list(df.columns[:5]) == ["benchmark", "dataset", "model", "family", "fold"]
    assert df["record_path"].iloc[0] == "uea/BasicMotions/MS4/fold0.json"
    assert json.loads(df["versions"].iloc[0])["torch"] == "2.13.0"


def test_summary_hand_checked(runs_dir, tmp_path):
    summary = summarise(collect_records(runs_dir))
    ms4n, ms4 = summary["uea"]["MS4N"], summary["uea"]["MS4"]
    assert ms4n["mean_error"] == pytest.approx(0.7 / 3, abs=1e-6)
    assert ms4["mean_error"] == pytest.approx(0.35, abs=1e-6)
    assert ms4n["mean_rank"] == pytest.approx(1.25)
    assert ms4["mean_rank"] == pytest.approx(1.75)
    assert ms4n["mean_std"] == pytest.approx(0.1 / 3, abs=1e-6)
    assert ms4["mean_std"] == pytest.approx(0.05, abs=1e-6)
    assert (ms4n["n_datasets"], ms4n["n_runs"], ms4n["n_ranked_datasets"]) == (3, 6, 2)
    assert (ms4["n_datasets"], ms4["n_runs"]) == (2, 4)
    assert ms4n["params"] == pytest.approx(29920) and ms4["mmac"] == pytest.approx(9.5)
    # Ranking over the suite's models: S4D has no result anywhere -> nothing ranked.
    ranked = summarise(collect_records(runs_dir), {"uea": ["MS4N", "MS4", "S4D"]})
    assert ranked["uea"]["MS4N"]["mean_rank"] is None
    assert ranked["uea"]["MS4N"]["mean_error"] == pytest.approx(0.7 / 3, abs=1e-6)


def test_malformed_record_names_the_file(runs_dir):
    bad = runs_dir / "uea" / "Libras" / "MS4N" / "fold1.json"
    bad.write_text("{not json")
    with pytest.raises(RecordError, match=r"Libras/MS4N/fold1\.json"):
        collect_records(runs_dir)
    bad.write_text(json.dumps({"benchmark": "uea", "dataset": "Libras", "model": "MS4N"}))
    with pytest.raises(RecordError, match=r"fold1\.json.*missing key\(s\) fold, test_error"):
        collect_records(runs_dir)


def test_published_reference_ships():
    pub = load_published_errors()
    row = pub[
        (pub.benchmark == "uea") & (pub.dataset == "JapaneseVowels") & (pub.model == "MS4N")
    ].iloc[0]
    assert (row.error_mean, row.error_std) == (0.023, 0.006)
    assert {"table1", "table2"} <= set(load_published_summary()["source"])


def test_table5_ours_beside_paper(runs_dir, tmp_path):
    df = collect_records(runs_dir)
    s4d = df[df.model == "MS4"].assign(model="S4D", family="s4d")
    ours = ours_per_dataset(pd.concat([df, s4d], ignore_index=True))
    table = per_dataset_table(ours, paper_per_dataset(), "uea")
    assert list(table.columns) == [
        "Dataset",
        "MS4N (ours)",
        "MS4N (paper)",
        "MS4 (ours)",
        "MS4 (paper)",
        "S4D (ours)",
    ]  # the paper has no S4D figure: no (paper) column of dashes
    t = table.set_index("Dataset")
    assert t.loc["BasicMotions", "MS4N (ours)"] == "0.200 ± 0.100"
    assert t.loc["BasicMotions", "MS4N (paper)"] == "0.000 ± 0.000"
    assert t.loc["JapaneseVowels", "MS4N (ours)"] == "0.000 ± 0.000"
    assert t.loc["JapaneseVowels", "MS4N (paper)"] == "0.023 ± 0.006"
    assert t.loc["Libras", "MS4 (ours)"] == "–"
    assert t.loc["Average", "MS4N (ours)"] == "0.233 ± 0.033"
    assert t.loc["Average", "MS4 (ours)"] == "0.350 ± 0.050 (n=2)"
    # The paper's MS4 average covers the same 2 datasets as ours, not Libras.
    assert t.loc["Average", "MS4 (paper)"] == "0.014 ± 0.008 (n=2)"
    # ranks among our three models on the datasets all have (BasicMotions, JapaneseVowels)
    assert t.loc["Average rank", "MS4N (ours)"] == "1.50 (n=2)"
    # the paper's rank: among the two of our models it has, on the same two datasets
    assert t.loc["Average rank", "MS4N (paper)"] == "1.00 (of 2) (n=2)"

    paths = write_table(table, tmp_path / "tables" / "table5")
    assert all(p.stat().st_size > 0 for p in paths.values())
    assert pd.read_csv(paths["csv"]).shape == table.shape
    md = paths["md"].read_text(encoding="utf-8")
    assert "| MS4N (paper)" in md and "0.023 ± 0.006" in md
    tex = paths["tex"].read_text(encoding="utf-8")
    assert r"\toprule" in tex and r"0.023 $\pm$ 0.006" in tex and "--" in tex
    escaped = write_table(pd.DataFrame({"Dataset": ["PEMS_SF"], "x": ["1"]}), tmp_path / "u")
    assert r"PEMS\_SF" in escaped["tex"].read_text(encoding="utf-8")
    assert not list((tmp_path / "tables").glob(".*tmp"))


def test_curves_and_figure8_thresholds(runs_dir, tmp_path):
    curves = load_curves(runs_dir)
    # 10 finished runs (MS4 fold 1 stopped at 25); the unfinished fold2 curve is skipped.
    assert len(curves) == 8 * 30 + 2 * 25
    assert list(curves.columns[:5]) == ["benchmark", "dataset", "model", "fold", "epoch"]
    paths, crossings = figure8(
        curves, tmp_path / "fig" / "figure8", {"val_loss": 0.5, "val_accuracy": 0.9}
    )
    assert crossings["MS4N"]["BasicMotions"] == {"val_loss": 7, "val_accuracy": 12}
    assert crossings["MS4"]["BasicMotions"] == {"val_loss": 28, "val_accuracy": None}
    for p in paths.values():
        assert p.stat().st_size > 1000
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths["pdf"].read_bytes()[:5] == b"%PDF-"


def test_build_report_writes_everything(runs_dir, tmp_path):
    results, figures = tmp_path / "results", tmp_path / "figures"
    written = build_report(
        runs_dir,
        results,
        figures,
        {"convergence_thresholds": {"val_loss": 0.5, "val_accuracy": 0.9}},
        {"uea": ["MS4N", "MS4"]},
    )
    expected = [
        results / "metrics.csv",
        results / "summary.json",
        results / "curves.csv",
        results / "scorecard.md",
        *(results / "tables" / f"table5.{e}" for e in ("csv", "md", "tex")),
        *(figures / e / f"{key}.{e}" for e in ("png", "pdf")
          for key in ("figure1", "figure7", "figure10_uea", "cd_uea", "cd_uea_paper",
                      "training_curves")),
    ]  # fmt: skip
    for path in expected:
        assert path in written.values() and path.stat().st_size > 0, path
    # exactly the files named in ssmbench.report.outputs, under their names
    assert written == {o.name: o.path for o in report_outputs(results, figures, ["uea"])}
    assert len(pd.read_csv(results / "metrics.csv")) == 10
    summary = json.loads((results / "summary.json").read_text())
    assert summary["uea"]["MS4"]["mean_rank"] == 1.75
    # the scorecard's counts, a DVC metric: MS4N's 3 cells and MS4's 2 have a paper figure
    card = summary["scorecard"]["uea"]
    assert card["MS4N"]["compared"] == 3 and card["MS4"]["compared"] == 2
    assert card["all"]["compared"] == 5
    # BasicMotions MS4N: ours 0.2, paper 0.0 ± 0.0 -> |diff| 0.2 > 0.03: disagrees
    assert card["MS4N"]["agree"] <= 2
    curves = pd.read_csv(results / "curves.csv")
    assert {"model", "dataset", "fold", "epoch"} <= set(curves.columns)


def test_summary_names_the_suite_and_grid_and_is_written_last(runs_dir, tmp_path):
    """summary.json says which suite's report it is and for which grid (what `ssmbench
    report --show-tables` checks), and is written after every other file of the report."""
    from ssmbench.report.outputs import grid_entry, report_made_for

    grid = [("uea", d, m, f) for (d, m), errs in ERRORS.items() for f in range(len(errs))]
    results = tmp_path / "results"
    written = build_report(runs_dir, results, tmp_path / "figures", {}, grid=grid, suite="mine")
    summary = json.loads(written["summary_json"].read_text())
    assert summary["suite"] == "mine"
    assert summary["grid"] == grid_entry(grid) and summary["grid"]["runs"] == 10
    assert set(summary["uea"]) == {"MS4N", "MS4"}  # the benchmarks as before
    assert list(written)[-1] == "summary_json"
    newest = max(p.stat().st_mtime_ns for p in written.values())
    assert written["summary_json"].stat().st_mtime_ns == newest
    assert report_made_for(results) == {"suite": "mine", "grid": grid_entry(grid)}


def test_build_report_without_records(tmp_path):
    (tmp_path / "runs" / "uea").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no finished run records"):
        build_report(tmp_path / "runs", tmp_path / "results", tmp_path / "figures", {})


def _rerun(runs_dir: Path, hours: int) -> None:
    """The same results as ``runs_dir`` holds, as a rerun elsewhere and later writes them:
    other times, host, hardware, job, git state, versions, code digest and data checksums."""
    for path in runs_dir.rglob("fold*.json"):
        record = json.loads(path.read_text())
        record.update(
            train_seconds=record["train_seconds"] * 3.7 + hours,
            test_seconds=0.25 * hours,
            created=f"2026-02-0{hours}T0{hours}:00:00Z",
            hostname=f"node{hours}",
            git_commit=f"{hours:040d}",
            git_dirty=True,
            versions={"python": "3.13", "torch": f"2.{hours}.0"},
            device="cuda",
            device_name="NVIDIA H200",
            threads=8,
            scan="fused (mamba_ssm selective_scan_fn)",
            micro_batches={"rows": 2, "applied": False, "reason": "not applied on cuda"},
            cpu="another CPU",
            cpu_count=64,
            platform="Linux-x",
            gpu="NVIDIA H200",
            gpu_count=1,
            cuda_visible_devices="0",
            slurm_job_id=str(hours),
            slurm_restart_count=1,
            slurm={"job_id": str(hours)},
            attempt=2,
            argv=["ssmbench", "train", "--threads", "8"],
            code_digest=f"digest{hours}",
            dataset_sha256={"x.ts": f"{hours}"},
        )
        path.write_text(json.dumps(sealed(record)))
    for path in runs_dir.rglob("fold*.curve.csv"):
        curve = pd.read_csv(path, float_precision="round_trip")
        curve["seconds"] = curve["seconds"] * hours + 0.123
        curve.to_csv(path, index=False)


def test_a_rerun_with_the_same_results_leaves_the_git_tracked_files_byte_identical(
    runs_dir, tmp_path
):
    params = {"convergence_thresholds": {"val_loss": 0.5, "val_accuracy": 0.9}}
    first = build_report(runs_dir, tmp_path / "a", tmp_path / "fa", params)
    _rerun(runs_dir, hours=5)
    second = build_report(runs_dir, tmp_path / "b", tmp_path / "fb", params)
    assert collect_records(runs_dir)["hostname"].eq("node5").all()  # the rerun is read
    for name in ("metrics_csv", "summary_json", "curves_csv", "table5_md", "table5_csv",
                 "scorecard_csv", "scorecard_md"):  # fmt: skip
        assert first[name].read_bytes() == second[name].read_bytes(), name
    # and the figures are deterministic: no date or software stamp in them
    for name in ("figure7_png", "figure7_pdf", "cd_uea_pdf", "training_curves_pdf"):
        assert first[name].read_bytes() == second[name].read_bytes(), name
    metrics = pd.read_csv(first["metrics_csv"])
    assert not set(NOT_IN_METRICS) & set(metrics.columns)
    assert {"test_error", "test_loss", "best_epoch", "params", "mmac", "model_params"} <= set(
        metrics.columns
    )
    assert "seconds" not in pd.read_csv(first["curves_csv"]).columns


def test_a_partial_grid_renders_every_artefact_and_logs_its_gaps(tmp_path, caplog):
    """One model, one MONSTER dataset in a one-dataset domain (FordChallenge: Other has 2,
    this suite runs 1), records without family, params or best_epoch, a benchmark of the
    suite with no record (UEA) and one the paper lacks (synthetic): every declared file is
    written, the gaps are marked and logged, nothing crashes."""
    runs = tmp_path / "runs"
    for bench, dataset in (("monster", "FordChallenge"), ("synthetic", "FadingFlash")):
        folder = runs / bench / dataset / "MS4N"
        folder.mkdir(parents=True)
        for fold, err in enumerate((0.1, 0.2)):
            record = {"benchmark": bench, "dataset": dataset, "model": "MS4N", "fold": fold,
                      "test_error": err}  # fmt: skip
            (folder / f"fold{fold}.json").write_text(json.dumps(sealed(record)))
    results, figures = tmp_path / "results", tmp_path / "figures"
    benchmarks = ["monster", "synthetic", "uea"]
    with caplog.at_level("INFO"):
        written = build_report(runs, results, figures, {}, benchmarks=benchmarks)
    assert written == {o.name: o.path for o in report_outputs(results, figures, benchmarks)}
    for path in written.values():
        assert path.stat().st_size > 0, path
    table3 = pd.read_csv(results / "tables" / "table3.csv").set_index("Dataset")
    assert table3.loc["FordChallenge", "MS4N (ours)"] == "0.150 ± 0.050"
    assert table3.loc["FordChallenge", "MS4N (paper)"] == "0.100 ± 0.011"
    table5 = pd.read_csv(results / "tables" / "table5.csv")  # the paper's, no run of ours
    assert not [c for c in table5.columns if "(ours)" in c]
    table4 = pd.read_csv(results / "tables" / "table4.csv").set_index(["Domain", "Figure"])
    # Other has 2 datasets, we ran 1: the paper's error is recomputed on ours, with n
    assert table4.loc[("Other", "Error"), "Datasets"] == 1
    assert table4.loc[("Other", "Error"), "MS4N (paper)"] == "0.1000"
    assert table4.loc[("Audio", "Error"), "MS4N (ours)"] == "–"
    logged = caplog.text
    assert "uea: no record of this benchmark yet" in logged
    assert "no record has best_epoch" in logged
    assert "figure8" in logged and "Pedestrian" in logged
    card = json.loads((results / "summary.json").read_text())["scorecard"]
    assert {k: card["monster"]["MS4N"][k] for k in ("agree", "compared")} == {
        "agree": 0,
        "compared": 1,
    }


def test_the_reports_training_curves_show_every_model_with_curves(monkeypatch, tmp_path):
    """training_curves draws every model the records have curves of (S4D beside MS4 and
    MS4N), on the datasets all of them have; Figure 8 keeps the paper's two."""
    from types import SimpleNamespace

    from ssmbench.report import figures

    rows = [
        {"model": m, "dataset": d, "fold": 0, "epoch": e, "train_loss": 1.0 / e,
         "val_loss": 1.0 / e, "train_accuracy": 0.5, "val_accuracy": 0.5}
        for m in ("MS4", "MS4N", "S4D") for d in ("A", "B") for e in (1, 2)
        if not (m == "S4D" and d == "B")
    ]  # fmt: skip
    drawn = {}

    def figure8(curves, stem, thresholds, models=None, datasets=None, **kwargs):
        drawn.update(models=models, datasets=datasets)
        return {}, {}

    monkeypatch.setattr(figures, "figure8", figure8)
    ctx = SimpleNamespace(curves=pd.DataFrame(rows), curve_datasets=None, stem=tmp_path / "t",
                          thresholds={}, once=lambda f: {})  # fmt: skip
    figures.draw_training_curves(ctx)
    assert drawn == {"models": ["MS4", "MS4N", "S4D"], "datasets": ["A"]}
