"""The split rule: a block-read dataset's fold split drawn once, in a job of its own
(`ssmbench split`, workflow/rules/split.smk), for the fold's training jobs; and which
datasets get one (`ssmbench.config.split_dir_of`)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, make_project, tool_env, write_params

from ssmbench import resources
from ssmbench.cli import main
from ssmbench.config import (
    ConfigError,
    Job,
    job_spec,
    load_params,
    split_dir_of,
    split_path,
    split_recipe,
    suite_grid,
    untuned_spec,
)
from ssmbench.data.errors import DataError
from ssmbench.params_file import read_params

PARAMS = load_params(REPO / "params.yaml")
#: a budget every catalogued dataset is above: all of them are read in blocks
TINY_BUDGET = {"reading": {"in_memory_max_gb": 1e-9}}


def in_blocks(params: dict, suite: str = "tiny", benchmark: str = "uea") -> dict:
    """``params`` (a copy) with one benchmark of a suite read in blocks."""
    params = copy.deepcopy(params)
    params["suite"] = suite
    params["suites"][suite]["benchmark_overrides"] = {benchmark: TINY_BUDGET}
    return params


# --- which runs read a split file --------------------------------------------------------


@pytest.mark.parametrize("suite", ["tiny", "default", "preview", "tides-data"])
def test_datasets_that_fit_have_no_split_and_their_specs_are_unchanged(suite):
    for job in suite_grid(PARAMS, suite):
        assert split_dir_of(PARAMS, job, suite) is None, job
        assert split_dir_of(PARAMS, (job.benchmark, job.dataset, job.fold), suite) is None
        assert "split_dir" not in untuned_spec(PARAMS, job, suite)


def test_a_dataset_above_the_budget_names_its_split_folder():
    params = in_blocks(PARAMS)
    want = Path(PARAMS["paths"]["splits"]) / "uea" / "BasicMotions" / "fold3"
    assert split_dir_of(params, ("uea", "BasicMotions", 3)) == want
    assert split_dir_of(params, Job("uea", "BasicMotions", "MS4N", 3)) == want
    assert split_path(PARAMS, "uea", "BasicMotions", 3) == want
    for job in suite_grid(params):
        assert job_spec(params, job)["split_dir"] == str(split_path(params, "uea", job.dataset, 0))
    # only the benchmark whose budget it is: the other benchmarks' runs are unchanged
    assert split_dir_of(params, ("uea_drop", "BasicMotionsDrop", 0)) is None
    # a derived dataset's and a Physiome-ODE code's size come from the catalog too
    for bench, dataset in (("uea_drop", "BasicMotionsDrop"), ("uea6", "BasicMotions"),
                           ("physiome_ode", "DUP01"), ("physiome", "HOD01")):  # fmt: skip
        assert split_dir_of(in_blocks(PARAMS, benchmark=bench), (bench, dataset, 0)) is not None


def test_the_paper_grid_splits_exactly_the_datasets_above_4_gb():
    """At the shipped budget (4 GB), the MONSTER sets of more than 10^9 values."""
    split = {
        dataset
        for dataset in PARAMS["benchmarks"]["monster"]["datasets"]
        if split_dir_of(PARAMS, ("monster", dataset, 0), "monster-paper") is not None
    }
    assert split == {"AudioMNIST", "MosquitoSound", "S2Agri-17", "S2Agri-34", "S2Agri-10pc-17",
                     "S2Agri-10pc-34", "TimeSen2Crop", "LenDB"}  # fmt: skip


def test_a_dataset_of_unknown_size_draws_its_own_split(monkeypatch):
    monkeypatch.setattr(resources, "catalog_values", lambda: {})
    assert split_dir_of(in_blocks(PARAMS), ("uea", "BasicMotions", 0)) is None


def test_a_per_model_split_setting_of_a_block_read_dataset_is_refused():
    """Its split is drawn once with the benchmark's settings: a model that would draw
    another is refused when the workflow starts, naming the setting."""
    params = in_blocks(PARAMS)
    params["suites"]["tiny"]["model_overrides"] = {"MS4": {"val_fraction": 0.2}}
    untuned_spec(params, Job("uea", "BasicMotions", "MS4N", 0))  # not overridden: fine
    with pytest.raises(ConfigError, match=r"uea/BasicMotions/MS4/fold0: .*val_fraction"):
        untuned_spec(params, Job("uea", "BasicMotions", "MS4", 0))
    # a setting the split does not depend on is anyone's
    params["suites"]["tiny"]["model_overrides"] = {"MS4": {"lr": 0.01}}
    assert "split_dir" in untuned_spec(params, Job("uea", "BasicMotions", "MS4", 0))


# --- the workflow ------------------------------------------------------------------------


def _dry_run(project: Path) -> str:
    snakemake = str(Path(sys.executable).parent / "snakemake")
    proc = subprocess.run([snakemake, "-n", "--cores", "1"], cwd=project, env=tool_env(project),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _jobs(dry: str, rule: str) -> list[dict]:
    """The jobs of a rule in `snakemake -n`'s output: {field: value} each."""
    found = []
    for block in re.split(r"\n\s*\n", dry):
        if re.search(rf"^\s*rule {rule}:$", block, re.M):
            found.append(dict(re.findall(r"^\s+(\w+): (.*)$", block, re.M)))
    return found


@pytest.mark.integration
def test_snakemake_plans_a_split_job_per_fold_before_its_training_jobs(tmp_path):
    def edit(params):
        params.update(in_blocks(params))

    dry = _dry_run(make_project(tmp_path / "proj", edit))
    splits = {job["output"]: job for job in _jobs(dry, "split")}
    assert set(splits) == {"data/splits/uea/BasicMotions/fold0",
                           "data/splits/uea/JapaneseVowels/fold0"}, dry  # fmt: skip
    for output, job in splits.items():
        dataset = output.split("/")[3]
        assert job["input"] == f"data/prepared/uea/{dataset}"
        assert job["log"] == f"logs/split/uea/{dataset}/fold0.log"
    assert re.search(r"--fold 0 --out data/splits/uea/BasicMotions/fold0 > ", dry), dry
    trains = _jobs(dry, "train")
    assert len(trains) == 4, dry
    for job in trains:
        dataset = re.search(r"dataset=(\w+)", job["wildcards"]).group(1)
        assert f"data/splits/uea/{dataset}/fold0" in job["input"].split(", "), job


@pytest.mark.integration
def test_snakemake_plans_no_split_job_for_datasets_that_fit(tmp_path):
    dry = _dry_run(make_project(tmp_path / "proj", lambda p: p.update(suite="tiny")))
    assert not _jobs(dry, "split") and "data/splits" not in dry
    trains = _jobs(dry, "train")
    assert len(trains) == 4, dry


# --- `ssmbench split` on a real prepared dataset ------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A folder with a params.yaml whose uea benchmark is read in blocks (tiny suite) and
    BasicMotions (aeon's copy) prepared under its paths."""
    from ssmbench.data import fetch_uea, prepare_uea

    root = tmp_path_factory.mktemp("split")
    params = in_blocks(read_params(REPO / "params.yaml"))
    write_params(root, params)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def _split(project, monkeypatch, *extra) -> int:
    monkeypatch.chdir(project)
    return main(["split", "--benchmark", "uea", "--dataset", "BasicMotions", "--fold", "1",
                 *extra])  # fmt: skip


def test_cli_split_writes_the_rows_a_run_would_draw(project, monkeypatch, capsys):
    from ssmbench.data.store import open_fold
    from ssmbench.train.fold_split import read_split, split_fold

    assert _split(project, monkeypatch) == 0
    params = load_params(project / "params.yaml")
    out = project / split_dir_of(params, ("uea", "BasicMotions", 1))
    assert sorted(p.name for p in out.iterdir()) == ["split.json", "test.npy", "train.npy",
                                                      "val.npy"]  # fmt: skip
    assert "wrote data/splits/uea/BasicMotions/fold1" in capsys.readouterr().err
    # drawn with what every model's run on it has: its spec's settings
    settings = untuned_spec(params, Job("uea", "BasicMotions", "MS4N", 1))["settings"]
    summary = json.loads((out / "split.json").read_text())
    assert summary["settings"] == split_recipe(params, "uea", "BasicMotions", 1)
    assert summary["settings"]["val_fraction"] == settings["val_fraction"]
    dataset = open_fold(project / "data/prepared/uea/BasicMotions", 1)
    read = read_split(out, dataset, 1, settings)
    drawn = split_fold(dataset, 1, settings["val_fraction"], summary["settings"]["seed"],
                       settings["val_split_fallback"])  # fmt: skip
    for part in ("train", "val", "test"):
        assert np.array_equal(np.asarray(getattr(read, part)), getattr(drawn, part)), part
    assert len(read.val) > 0 and read.method == drawn.method


def test_read_split_refuses_a_split_drawn_with_another_val_fraction(project, monkeypatch):
    from ssmbench.data.store import open_fold
    from ssmbench.train.fold_split import read_split

    assert _split(project, monkeypatch) == 0
    params = load_params(project / "params.yaml")
    out = project / split_dir_of(params, ("uea", "BasicMotions", 1))
    settings = untuned_spec(params, Job("uea", "BasicMotions", "MS4N", 1))["settings"]
    dataset = open_fold(project / "data/prepared/uea/BasicMotions", 1)
    other = {**settings, "val_fraction": settings["val_fraction"] * 2}
    with pytest.raises(DataError, match=r"val_fraction") as err:
        read_split(out, dataset, 1, other)
    assert str(out / "split.json") in str(err.value)


def test_cli_split_writes_only_under_paths_splits(project, monkeypatch, tmp_path, capsys):
    assert _split(project, monkeypatch, "--out", str(tmp_path / "elsewhere")) == 2
    assert "outside paths.splits" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists()
    # --out under paths.splits: there
    assert _split(project, monkeypatch, "--out", "data/splits/check/fold1") == 0
    assert (project / "data/splits/check/fold1/split.json").is_file()


def test_cli_split_of_a_missing_dataset_is_one_error_line(tmp_path, monkeypatch, capsys):
    params = in_blocks(read_params(REPO / "params.yaml"))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert _split(tmp_path, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.startswith("ssmbench split: error: ") and "BasicMotions" in err


def test_read_split_refuses_a_split_of_another_preparation(project, monkeypatch, tmp_path):
    """A split is tied to its prepared dataset's meta.json: one re-prepared since (here a
    copy whose meta.json says something more) is refused, naming the field; a killed
    writer's temporary folder is cleared by the next write."""
    import shutil

    from ssmbench.data.store import open_fold
    from ssmbench.train.fold_split import read_split

    assert _split(project, monkeypatch) == 0
    params = load_params(project / "params.yaml")
    out = project / split_dir_of(params, ("uea", "BasicMotions", 1))
    settings = untuned_spec(params, Job("uea", "BasicMotions", "MS4N", 1))["settings"]
    copy = tmp_path / "BasicMotions"
    shutil.copytree(project / "data/prepared/uea/BasicMotions", copy)
    meta = json.loads((copy / "meta.json").read_text())
    (copy / "meta.json").write_text(json.dumps({**meta, "note": "prepared again"}))
    with pytest.raises(DataError, match="meta_sha256"):
        read_split(out, open_fold(copy, 1), 1, settings)
    stale = out.with_name(f".{out.name}.tmp-999999")
    stale.mkdir()
    assert _split(project, monkeypatch) == 0 and not stale.exists()
