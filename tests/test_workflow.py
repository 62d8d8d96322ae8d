"""The real command lines: `snakemake` over a tiny suite on real UEA data, and `dvc repro`
in a temporary git repository."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, make_project, tool_env, write_params

from ssmbench.params_file import read_params
from ssmbench.train.provenance import is_provenance_file, record_provenance

pytestmark = pytest.mark.integration


def run(cmd, cwd, env, timeout=600, should_fail=False):
    """Run a command line; return its output. Fails the test if its exit status is not the
    expected one (zero, or non-zero with should_fail)."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    if (proc.returncode != 0) != should_fail:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{output[-8000:]}")
    return output


def tiny(params):
    params["suite"] = "tiny"


def without_venv_on_path(env: dict) -> dict:
    """`env` with the venv's bin directory off PATH: the venv is not activated, as when a
    user types `.venv/bin/snakemake` after `make run`."""
    bin_dir = Path(sys.executable).parent
    path = [p for p in env["PATH"].split(os.pathsep) if p and Path(p) != bin_dir]
    return {**env, "PATH": os.pathsep.join(path)}


def test_snakemake_tiny_suite_end_to_end(tmp_path):
    """The whole workflow by `.venv/bin/snakemake` with the venv not on PATH: the rules
    run the `ssmbench` of the Python that runs Snakemake."""
    project = make_project(tmp_path / "proj", tiny)
    env = without_venv_on_path(tool_env(project))
    assert shutil.which("ssmbench", path=env["PATH"]) is None
    snakemake = str(Path(sys.executable).parent / "snakemake")

    dry = run([snakemake, "-n", "--cores", "2"], project, env)
    assert "train" in dry and "report" in dry
    # each train job carries its priority: the larger dataset's runs start first
    jobs = re.findall(r"rule train:.*?dataset=(\w+).*?priority: (\d+)", dry, re.S)
    assert sorted(set(jobs)) == [("BasicMotions", "47"), ("JapaneseVowels", "53")], dry

    run([snakemake, "--cores", "2"], project, env)

    runs = project / "results" / "runs"
    records = sorted(p for p in runs.rglob("fold*.json") if not is_provenance_file(p))
    # tiny: 2 datasets x 2 models x 1 fold
    assert len(records) == 4
    for path in records:
        record = json.loads(path.read_text())
        assert record["epochs_run"] == 2 and 1 <= record["best_epoch"] <= 2
        assert 0.0 <= record["test_error"] <= 1.0
        assert record["params"] > 0 and record["mmac"] > 0
        # the attempt reaches the run's provenance
        assert record_provenance(path, record)["attempt"] == 1
        assert (path.parent / record["curve_file"]).is_file()
    metrics = pd.read_csv(project / "results" / "metrics.csv")
    assert len(metrics) == 4
    summary = json.loads((project / "results" / "summary.json").read_text())
    assert set(summary["uea"]) == {"MS4N", "MS4"}
    table = (project / "results" / "tables" / "table5.md").read_text()
    assert "BasicMotions" in table and "JapaneseVowels" in table
    for stem in ("figure7", "training_curves"):
        for ext in ("png", "pdf"):
            assert (project / "figures" / ext / f"{stem}.{ext}").stat().st_size > 1000
    assert (project / "logs" / "train" / "uea" / "BasicMotions" / "MS4N" / "fold0.log").is_file()

    # Everything present: a rerun schedules nothing.
    again = run([snakemake, "-n", "--cores", "2"], project, env)
    assert "Nothing to be done" in again

    # As in a fresh clone whose records came from `dvc pull`: no Snakemake metadata and
    # no settings markers (paths.settings: not versioned).
    shutil.rmtree(project / ".snakemake")
    shutil.rmtree(project / ".ssmbench" / "settings")
    assert "Nothing to be done" in run([snakemake, "-n", "--cores", "2"], project, env)
    # ...and a changed setting still reruns exactly the runs it changes.
    params = read_params(project / "params.yaml")
    params["models"]["MS4"]["dropout"] = 0.1
    write_params(project, params)
    changed = run([snakemake, "-n", "--cores", "2", "runs"], project, env)
    stats = changed[changed.index("Job stats") :]
    assert re.search(r"^train\s+2$", stats, re.M), stats
    retrained = re.findall(r"output: (results/runs/\S+\.json)", changed)
    assert len(retrained) == 2 and all("/MS4/" in path for path in retrained), retrained
    # Once rerun, the runs are current: no run is scheduled again.
    run([snakemake, "--cores", "2", "runs"], project, env)
    assert "Nothing to be done" in run([snakemake, "-n", "--cores", "2", "runs"], project, env)
    # Asked to run again (a retried group job, a workflow-code change), a job keeps its
    # current record and says so in the run's log.
    record = project / "results" / "runs" / "uea" / "BasicMotions" / "MS4N" / "fold0.json"
    made = record.read_text()
    run([snakemake, "--cores", "1", "--forcerun", "train", "--", str(record.relative_to(project))],
        project, env)  # fmt: skip
    assert record.read_text() == made
    log = (project / "logs" / "train" / "uea" / "BasicMotions" / "MS4N" / "fold0.log").read_text()
    assert "is current: kept, not trained again" in log


def test_targets_of_one_model_build_their_dag_on_a_fresh_clone(tmp_path):
    """Two folds of one model as targets, no settings marker yet: each marker is written
    while the DAG is built, in a folder Snakemake has not listed (one listed before the
    second marker was written took it for missing: "Missing input files")."""
    project = make_project(tmp_path / "proj", tiny)
    targets = [f"results/runs/uea/BasicMotions/MS4N/fold{k}.json" for k in (1, 0)]
    output = run(["snakemake", "-n", "--cores", "1", "--", *targets], project,
                 tool_env(project))  # fmt: skip
    assert "Missing input" not in output
    assert re.search(r"^train\s+2$", output, re.MULTILINE), output[-3000:]


def test_unknown_model_fails_before_any_job(tmp_path):
    def bad(params):
        params["suite"] = "tiny"
        params["suites"]["tiny"]["models"] = ["MS4N", "NoSuchModel"]

    project = make_project(tmp_path / "proj", bad)
    output = run(["snakemake", "-n", "--cores", "1"], project, tool_env(project), should_fail=True)
    assert "NoSuchModel" in output
    assert not (project / "results").exists()


def test_dvc_repro_reruns_only_report_after_plot_code_change(tmp_path):
    def one_run(params):
        params["suite"] = "tiny"
        params["suites"]["tiny"]["benchmarks"] = {"uea": ["BasicMotions"]}
        params["suites"]["tiny"]["models"] = ["MS4N"]
        params["suites"]["tiny"]["overrides"]["max_epochs"] = 1

    project = make_project(tmp_path / "proj", one_run)
    env = tool_env(project)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    run(["git", "init", "-q"], project, env)
    run(["dvc", "init", "-q"], project, env)
    run(["dvc", "config", "core.analytics", "false"], project, env)
    shutil.copytree(REPO / ".dvc" / "plots", project / ".dvc" / "plots")  # as in a clone
    first = run(["dvc", "repro"], project, env)
    assert "Running stage 'train'" in first and "Running stage 'report'" in first
    record = project / "results" / "runs" / "uea" / "BasicMotions" / "MS4N" / "fold0.json"
    created = record_provenance(record, json.loads(record.read_text()))["created"]
    run(git + ["add", "-A"], project, env)
    run(git + ["commit", "-qm", "first"], project, env)

    figures = project / "src" / "ssmbench" / "report" / "figures.py"
    figures.write_text(figures.read_text() + "\n# a plotting-only change\n")
    second = run(["dvc", "repro"], project, env)
    assert "Running stage 'report'" in second
    assert "Running stage 'train'" not in second and "Running stage 'data'" not in second
    # The finished record survived and was not recomputed.
    assert record_provenance(record, json.loads(record.read_text()))["created"] == created
    assert (project / "figures" / "png" / "figure7.png").is_file()
    # dvc plots: the figures (a folder of PNGs) and the curves per run load, in one
    # revision and across two
    run(git + ["commit", "-qam", "second"], project, env)
    for command in (["dvc", "plots", "show"], ["dvc", "plots", "diff", "HEAD~1"]):
        shown = run(command, project, env)
        assert "failed to load" not in shown, shown
        page = (project / "dvc_plots" / "index.html").read_text()
        assert "figures_png_figure7.png" in page and '"dataset": "BasicMotions"' in page
        assert '"val_loss"' in page and "datum.benchmark" in page  # a line per run
    assert "HEAD~1_figures_png_figure7.png" in page  # both revisions

    # Training code: a comment changes nothing, a change of what it computes reruns.
    ms4 = project / "src" / "ssmbench" / "models" / "ms4.py"
    ms4.write_text(ms4.read_text() + "\n# a comment only\n")
    assert "Nothing to be done" in run(["snakemake", "-n", "runs"], project, env)
    ms4.write_text(ms4.read_text() + "\nSTATEMENT_THAT_RUNS = 1\n")  # code, not a comment
    assert re.search(r"^train\s+1$", run(["snakemake", "-n", "runs"], project, env), re.M)

    shown = run(["dvc", "metrics", "show"], project, env)
    assert "results/metrics/uea/MS4N.json" in shown and "test_error" in shown


def test_corrupt_ts_fails_its_dataset_only_and_leaves_no_record(tmp_path, shared_uea):
    """A truncated .ts in the archive folder: its prepare job fails naming the file, no
    training job of that dataset runs, the other dataset's runs still finish."""
    archive = tmp_path / "archive"
    for name in ("BasicMotions", "JapaneseVowels"):
        (archive / name).mkdir(parents=True)
        for split in ("TRAIN", "TEST"):
            src = shared_uea / name / f"{name}_{split}.ts"
            (archive / name / src.name).write_bytes(src.read_bytes())
    broken = archive / "BasicMotions" / "BasicMotions_TRAIN.ts"
    text = broken.read_text()
    broken.write_text(text[: len(text) // 2])

    def with_archive(params):
        params["suite"] = "tiny"
        params["suites"]["tiny"]["models"] = ["MS4"]
        params["suites"]["tiny"]["overrides"]["max_epochs"] = 1
        params["suites"]["tiny"]["overrides"]["archive_dir"] = str(archive)

    project = make_project(tmp_path / "proj", with_archive)
    run(["snakemake", "--cores", "2"], project, tool_env(project), should_fail=True)
    log = (project / "logs" / "prepare" / "uea" / "BasicMotions.log").read_text()
    assert "BasicMotions_TRAIN.ts" in log
    runs = project / "results" / "runs" / "uea"
    assert not (runs / "BasicMotions").exists()
    assert not (project / "data" / "prepared" / "uea" / "BasicMotions").exists()
    assert (runs / "JapaneseVowels" / "MS4" / "fold0.json").is_file()
    assert not list(runs.rglob("*.tmp"))


def test_monster_format_dataset_through_the_workflow(tmp_path):
    """Two MONSTER-format folders (local_dir, no network): fetch -> prepare -> train on their
    own folds -> a report with every MONSTER-side artefact of the paper (Tables 1-4,
    Figures 1A, 3-6, 8-10, the CD diagrams), ours beside the paper's."""
    import numpy as np

    from ssmbench.report.outputs import report_outputs

    rng = np.random.default_rng(0)
    n = 60
    names = ("Pedestrian", "Traffic")  # catalogued MONSTER names; the content is synthetic
    for name in names:
        copy = tmp_path / "monster" / name
        copy.mkdir(parents=True)
        y = np.repeat([3, 7, 9], n // 3)
        X = rng.normal(size=(n, 2, 24)).astype(np.float32) + y[:, None, None] / 9
        np.save(copy / f"{name}_X.npy", X)
        np.save(copy / f"{name}_y.npy", y)
        for k, rows in enumerate(np.array_split(rng.permutation(n), 5)):
            text = "\n".join(map(str, sorted(rows))) + "\n"
            (copy / f"test_indices_fold_{k}.txt").write_text(text)

    def monster_suite(params):
        params["suite"] = "tiny"
        params["suites"]["tiny"] = {
            "benchmarks": {"monster": list(names)},
            "models": ["MS4N", "MS4", "Quant"],
            "folds": [0, 3],
            "overrides": {"max_epochs": 2, "local_dir": str(tmp_path / "monster"), "offline": True},
        }
        params["models"]["Quant"]["n_estimators"] = 20

    project = make_project(tmp_path / "proj", monster_suite)
    run(["snakemake", "--cores", "2"], project, tool_env(project))
    copy = tmp_path / "monster" / "Pedestrian"
    meta = json.loads((project / "data/prepared/monster/Pedestrian/meta.json").read_text())
    assert meta["fold_scheme"] == "given_folds" and meta["n_folds"] == 5
    for fold in (0, 3):
        record = project / "results/runs/monster/Pedestrian/MS4N" / f"fold{fold}.json"
        rec = json.loads(record.read_text())
        test_rows = (copy / f"test_indices_fold_{fold}.txt").read_text().split()
        assert rec["n_test"] == len(test_rows) and rec["n_train"] + rec["n_val"] == n - len(
            test_rows
        )
        assert rec["batch_size"] == 256 and rec["max_epochs"] == 2
    outputs = report_outputs(project / "results", project / "figures", ["monster"])
    keys = {o.path.stem for o in outputs}
    assert {"table1", "table2", "table3", "table4", "figure1", "figure3", "figure4", "figure5",
            "figure6", "figure8", "figure9", "figure10_monster", "cd_monster"} <= keys  # fmt: skip
    for output in outputs:
        assert output.path.stat().st_size > 0, output.path
    table3 = (project / "results" / "tables" / "table3.md").read_text()
    # ours beside the paper's Table 3 cell: Pedestrian MS4N 0.214 ± 0.002 in the paper
    assert "Pedestrian" in table3 and "MS4N (paper)" in table3 and "0.214 ± 0.002" in table3
    table4 = pd.read_csv(project / "results" / "tables" / "table4.csv").set_index(
        ["Domain", "Figure"]
    )
    # the Counts domain is whole (2 of 2 datasets): the paper's Table 4 figure itself
    assert table4.loc[("Counts", "Error"), "MS4N (paper)"] == "0.2803"
    assert table4.loc[("Audio", "Error"), "MS4N (ours)"] == "–"  # no Audio run
    # parameters: the model built for every dataset of the domain, as Table 4 counts them
    assert table4.loc[("Counts", "Params"), "MS4N (ours)"] == "25,996"
    assert table4.loc[("Audio", "Params"), "MS4N (ours)"] == "23,559"
    assert table4.loc[("Audio", "Params"), "Quant (ours)"] == "–"  # not applicable
    summary = json.loads((project / "results" / "summary.json").read_text())
    assert summary["scorecard"]["monster"]["all"]["compared"] == 6  # 2 datasets x 3 models
    log = (project / "logs" / "report.log").read_text()
    assert "figure10_monster" in log and "Mamba2" in log  # what it skipped, and why


def test_tides_datasets_through_the_workflow(tmp_path):
    """The generated (Fading Flash) and derived (BasicMotions drop-rate) datasets go
    fetch -> prepare -> train -> report through the real Snakemake, with one result per
    test set (Δ, drop rate); changing the generator's settings re-prepares the data and
    retrains what depends on it, nothing else."""

    def tides(params):
        params["suite"] = "tides-data"
        suite = params["suites"]["tides-data"]
        suite["overrides"] = {"max_epochs": 2}
        suite["benchmark_overrides"] = {
            "synthetic": {
                "generator": {"n_train": 300, "n_test_per_dt": 40, "test_dts": [0.1, 1.0, 2.0]}
            },
            "uea_drop": {"drop": {"test_rates": [0.1, 0.9]}},
            "physiome": {"generator": {"n_instances": 60, "n_time_points": 20}},
        }
        # MS4N reads the values; TIDES (small) also the step sizes from each dataset's T.npy
        params["suites"]["tides-data"]["models"] = ["MS4N", "TIDES"]
        params["models"]["TIDES"].update(d_model=8, ssm_size=8, ssm_blocks=2, rank=2)

    project = make_project(tmp_path / "proj", tides)
    env = tool_env(project)
    run(["snakemake", "--cores", "2"], project, env)

    flash = json.loads((project / "results/runs/synthetic/FadingFlash/MS4N/fold0.json").read_text())
    assert flash["task"] == "regression" and flash["error_metric"] == "mse"
    assert flash["test_accuracy"] is None and flash["test_error"] == flash["test_loss"] > 0
    assert set(flash["test_sets"]) == {"dt=0.1", "dt=1", "dt=2"}
    assert all(v["n"] == 40 and v["error"] > 0 for v in flash["test_sets"].values())
    assert flash["n_train"] + flash["n_val"] == 300 and flash["n_test"] == 120

    drop = json.loads(
        (project / "results/runs/uea_drop/BasicMotionsDrop/MS4N/fold0.json").read_text()
    )
    assert drop["task"] == "classification" and set(drop["test_sets"]) == {"rate=0.1", "rate=0.9"}
    assert all(0.0 <= v["error"] <= 1.0 for v in drop["test_sets"].values())
    # the base dataset was prepared on the way (the drop variant is derived from it)
    assert (project / "data/prepared/uea/BasicMotions/X.npy").is_file()
    # UEA-6 protocol: 80 pooled rows, seed 2345's 56/12/12 split, its own validation rows
    uea6 = json.loads((project / "results/runs/uea6/BasicMotions/MS4N/fold0.json").read_text())
    assert (uea6["n_train"], uea6["n_val"], uea6["n_test"]) == (56, 12, 12)
    assert uea6["val_split"] == "given" and uea6["protocol"]["monitor"] == "val_accuracy"

    heart = json.loads(
        (project / "results/runs/physiome/HodgkinHuxley1952/MS4N/fold0.json").read_text()
    )
    assert heart["task"] == "regression" and heart["test_sets"] == {}
    assert heart["n_test"] == 6 and heart["n_val"] == 12 and 0 < heart["test_error"] < 10

    table = (project / "results/tables/synthetic_table.md").read_text()
    assert "MS4N MSE (ours)" in table and "(paper)" not in table
    for bench, dataset in (("synthetic", "FadingFlash"), ("uea_drop", "BasicMotionsDrop"),
                           ("physiome", "HodgkinHuxley1952")):  # fmt: skip
        runs = project / "results/runs" / bench / dataset
        tides = json.loads((runs / "TIDES/fold0.json").read_text())
        ms4n = json.loads((runs / "MS4N/fold0.json").read_text())
        assert tides["inputs"] == ["values", "steps"] and tides["steps_source"] == "T.npy"
        assert ms4n["inputs"] == ["values"] and ms4n["steps_source"] is None
        assert math.isfinite(tides["test_error"])
    claims = (project / "results/tables/fading_flash_claims.md").read_text()
    assert "not tested" in claims  # the FF models did not run in this suite

    params = read_params(project / "params.yaml")
    params["suites"]["tides-data"]["benchmark_overrides"]["synthetic"]["generator"]["seed"] = 1
    write_params(project, params)
    changed = run(["snakemake", "-n", "--cores", "2", "runs"], project, env)
    stats = changed[changed.index("Job stats") :]
    for rule, count in (("fetch", 1), ("prepare", 1), ("train", 2)):
        assert re.search(rf"^{rule}\s+{count}$", stats, re.M), stats
    retrained = sorted(re.findall(r"output: (results/runs/\S+\.json)", changed))
    assert retrained == [f"results/runs/synthetic/FadingFlash/{m}/fold0.json"
                         for m in ("MS4N", "TIDES")], retrained  # fmt: skip


def test_mixed_model_suite_through_the_workflow(tmp_path):
    """Several families (SSM, attention, convolution + attention, non-deep) on two real
    UEA sets, through the real Snakemake: every run writes a record of the same shape."""

    def mixed(params):
        params["suite"] = "zoo-mixed"
        params["suites"]["zoo-mixed"]["overrides"] = {"max_epochs": 2}
        # one or two per family: selective SSM, S4D, attention, conv + attention,
        # recurrent, convolutional, and the three non-deep models
        params["suites"]["zoo-mixed"]["models"] = [
            "MS4N", "Mamba2", "ConvTran", "Informer", "GRU", "FCN", "Quant", "Hydra", "ET",
        ]  # fmt: skip
        params["models"]["Informer"]["d_ff"] = 64  # the contract does not need its width
        params["models"]["Quant"]["n_estimators"] = 20
        params["models"]["ET"]["n_estimators"] = 20

    project = make_project(tmp_path / "proj", mixed)
    env = tool_env(project)
    run(["snakemake", "--cores", "2"], project, env)
    models = read_params(project / "params.yaml")["suites"]["zoo-mixed"]["models"]
    for dataset in ("BasicMotions", "JapaneseVowels"):
        for model in models:
            path = project / f"results/runs/uea/{dataset}/{model}/fold0.json"
            record = json.loads(path.read_text())
            assert 0.0 <= record["test_error"] <= 1.0, (dataset, model)
            assert (path.parent / record["curve_file"]).is_file()
            if model in ("Quant", "Hydra", "ET"):
                assert record["params"] is None and record["epochs_run"] == 1
                assert record["n_train"] + record["n_test"] == (
                    80 if dataset == "BasicMotions" else 640
                )
            else:
                assert record["params"] > 0 and record["epochs_run"] == 2
    summary = json.loads((project / "results/summary.json").read_text())
    assert set(summary["uea"]) == set(models)


def test_irregular_time_baselines_through_the_workflow(tmp_path):
    """Log-NCDE and RFormer on BasicMotions under the UEA-6 protocol, RFormer-drop on the
    drop-rate set and LinODEnet on generated Hodgkin-Huxley, with the leaderboard's
    training: one run each through the real Snakemake, and the tables set each beside the
    published model it reimplements."""

    def baselines(params):
        params["suite"] = "tides-bench-preview"
        suite = params["suites"]["tides-bench-preview"]
        suite.pop("tuning")
        suite["benchmarks"] = {"uea6": ["BasicMotions"], "uea_drop": ["BasicMotionsDrop"],
                               "physiome": ["HodgkinHuxley1952"]}  # fmt: skip
        suite["models"] = ["LogNCDE"]
        suite["benchmark_models"] = {
            "uea6": ["LogNCDE", "RFormer"],
            "uea_drop": ["RFormer-drop"],
            "physiome": ["LinODEnet"],
        }
        suite["folds"] = [0]
        suite["overrides"] = {"max_epochs": 2}
        suite["model_overrides"].pop("TIDES-physio")
        suite["benchmark_overrides"] = {
            "uea_drop": {"drop": {"test_rates": [0.5]}},
            "physiome": {"generator": {"n_instances": 60, "n_time_points": 20}},
        }

    project = make_project(tmp_path / "proj", baselines)
    run(["snakemake", "--cores", "2"], project, tool_env(project))
    runs = project / "results/runs"

    def record(bench, dataset, model):
        return json.loads((runs / bench / dataset / model / "fold0.json").read_text())

    logncde = record("uea6", "BasicMotions", "LogNCDE")
    assert logncde["inputs"] == ["values", "steps"] and logncde["epochs_run"] == 2
    assert logncde["model_params"]["stepsize"] == 12 and logncde["params"] == 36_292
    assert 0.0 <= logncde["test_error"] <= 1.0
    rformer = record("uea6", "BasicMotions", "RFormer")
    assert rformer["inputs"] == ["values", "steps"] and 0.0 <= rformer["test_error"] <= 1.0
    drop = record("uea_drop", "BasicMotionsDrop", "RFormer-drop")
    assert set(drop["test_sets"]) == {"rate=0.5"}
    linode = record("physiome", "HodgkinHuxley1952", "LinODEnet")
    assert linode["task"] == "regression" and math.isfinite(linode["test_error"])
    assert linode["inputs"] == ["values", "steps", "mask"] and linode["params"] == 510_607
    protocol = linode["protocol"]
    assert (protocol["optimizer"], protocol["weight_decay"], protocol["batch_size"]) == (
        "adamw", 1.0e-3, 32)  # fmt: skip
    for bench, dataset, model in (("uea6", "BasicMotions", "LogNCDE"),
                                  ("uea6", "BasicMotions", "RFormer"),
                                  ("uea_drop", "BasicMotionsDrop", "RFormer-drop"),
                                  ("physiome", "HodgkinHuxley1952", "LinODEnet")):  # fmt: skip
        curve = pd.read_csv(runs / bench / dataset / model / "fold0.curve.csv")
        assert curve["train_loss"].iloc[1] < curve["train_loss"].iloc[0], model  # it learns
    uea6 = (project / "results/tables/uea6_results.md").read_text()
    assert re.search(r"LogNCDE \(ours\) *\| log_ncde \(published\)", uea6)
    physiome = (project / "results/tables/physiome_results.md").read_text()
    assert re.search(r"LinODEnet \(ours\) *\| LinODENet \(published\)", physiome)
