"""The training protocol: splits, determinism, best-checkpoint testing, atomic records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO

from ssmbench import io as atomic_io
from ssmbench.config import Job, job_spec
from ssmbench.data.store import PreparedDataset
from ssmbench.data.uea import fetch_uea, prepare_uea
from ssmbench.train.protocol import run_job, split_indices


@pytest.fixture(scope="module")
def basic_motions(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    fetch_uea("BasicMotions", root / "raw", archive_dir=None, download=False)
    return prepare_uea("BasicMotions", root / "raw", root / "prepared")


def spec_for(prepared: Path, model="MS4", fold=0, max_epochs=3) -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    spec = job_spec(params, Job("uea", "BasicMotions", model, fold), "default")
    spec["settings"]["max_epochs"] = max_epochs
    spec["prepared_dir"] = str(prepared)
    return spec


@pytest.mark.parametrize("fold", [0, 1, 2])
def test_validation_comes_from_training_part_only(basic_motions, fold):
    dataset = PreparedDataset(basic_motions)
    train, val, test = split_indices(dataset, fold, 0.1, seed=fold)
    assert not set(val) & set(test) and not set(train) & set(test) and not set(train) & set(val)
    assert sorted(np.concatenate([train, val])) == sorted(dataset.train_indices(fold))
    # stratified: every class of the training part appears in the validation split
    assert set(dataset.y[val]) == set(dataset.y[train])
    assert len(val) == pytest.approx(0.1 * (len(train) + len(val)), abs=len(set(dataset.y[val])))


def test_same_seed_same_record_and_best_checkpoint_is_tested(basic_motions, tmp_path):
    first = run_job(spec_for(basic_motions), tmp_path / "a" / "fold0.json", log=lambda _: None)
    second = run_job(spec_for(basic_motions), tmp_path / "b" / "fold0.json", log=lambda _: None)
    for key in ("test_error", "test_loss", "best_epoch", "best_val_loss", "params", "mmac"):
        assert first[key] == second[key], key
    curve = np.genfromtxt(tmp_path / "a" / "fold0.curve.csv", delimiter=",", names=True)
    assert len(curve) == first["epochs_run"] == 3
    best = int(np.argmin(curve["val_loss"])) + 1
    assert first["best_epoch"] == best and first["best_val_loss"] == pytest.approx(
        curve["val_loss"].min()
    )
    assert first["test_error"] == pytest.approx(1 - first["test_accuracy"])
    on_disk = json.loads((tmp_path / "a" / "fold0.json").read_text())
    assert on_disk["git_commit"] is None or len(on_disk["git_commit"]) == 40
    assert on_disk["versions"]["torch"].startswith("2.13")


def test_different_fold_is_a_different_seed(basic_motions, tmp_path):
    a = run_job(
        spec_for(basic_motions, fold=0, max_epochs=1), tmp_path / "0.json", log=lambda _: None
    )
    b = run_job(
        spec_for(basic_motions, fold=1, max_epochs=1), tmp_path / "1.json", log=lambda _: None
    )
    assert (a["seed"], b["seed"]) == (0, 1)
    assert a["best_val_loss"] != b["best_val_loss"]


def test_failed_run_leaves_no_record(basic_motions, tmp_path, monkeypatch):
    import ssmbench.train.protocol as protocol

    def boom(*args, **kwargs):
        raise RuntimeError("simulated crash during testing")

    monkeypatch.setattr(protocol, "evaluate", boom)
    with pytest.raises(RuntimeError):
        run_job(spec_for(basic_motions, max_epochs=1), tmp_path / "fold0.json", log=lambda _: None)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_keeps_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "fold0.json"
    atomic_io.atomic_write_json(target, {"test_error": 0.1})

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        atomic_io.atomic_write_json(target, {"test_error": 0.9})
    assert json.loads(target.read_text()) == {"test_error": 0.1}
    assert [p.name for p in tmp_path.iterdir()] == ["fold0.json"]


# ---------------------------------------------------------------- regression (TIDES tasks)
def _regression_folder(tmp_path: Path, with_mask: bool, with_val: bool) -> Path:
    """A small prepared regression dataset with per-channel, per-step targets (the
    Physiome-ODE layout): y (N, C, L), optionally a target mask and given validation rows."""
    rng = np.random.default_rng(0)
    N, C, L = 60, 2, 16
    folder = tmp_path / "prepared" / "reg" / "Toy"
    folder.mkdir(parents=True)
    X = rng.normal(size=(N, C, L)).astype(np.float32)
    y = np.cumsum(X, axis=-1).astype(np.float32) / 4  # learnable from X
    np.save(folder / "X.npy", X)
    if with_mask:
        mask = rng.random((N, C, L)) < 0.3
        y[~mask] = np.nan  # unobserved targets are never read
        np.save(folder / "target_mask.npy", mask)
    np.save(folder / "y.npy", y)
    (folder / "test_indices_fold_0.txt").write_text("".join(f"{i}\n" for i in range(50, 60)))
    if with_val:
        (folder / "val_indices_fold_0.txt").write_text("".join(f"{i}\n" for i in range(40, 50)))
    meta = {"name": "Toy", "N": N, "C": C, "L": L, "task": "regression",
            "fold_scheme": "given_folds", "n_folds": 1, "n_classes": None}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def _regression_spec(folder: Path, model: str = "MS4N") -> dict:
    spec = spec_for(folder, model=model, max_epochs=4)
    spec.update(benchmark="reg", dataset="Toy")
    spec["settings"]["batch_size"] = 16
    return spec


@pytest.mark.parametrize("model", ["MS4N", "S4D"])
def test_regression_with_target_mask_and_given_validation(tmp_path, model):
    folder = _regression_folder(tmp_path, with_mask=True, with_val=True)
    spec = _regression_spec(folder, model)
    record = run_job(spec, tmp_path / "runs" / "fold0.json", log=lambda _: None)
    assert record["task"] == "regression" and record["error_metric"] == "mse"
    # the dataset's own validation rows are used; the rest of the non-test rows train
    assert (record["n_train"], record["n_val"], record["n_test"]) == (40, 10, 10)
    assert np.isfinite(record["test_error"]) and record["test_error"] == record["test_loss"]
    assert record["test_accuracy"] is None and record["best_val_accuracy"] is None
    curve = np.genfromtxt(tmp_path / "runs" / "fold0.curve.csv", delimiter=",", names=True)
    assert np.all(np.isfinite(curve["train_loss"])) and np.all(np.isnan(curve["val_accuracy"]))
    # training lowers the masked MSE (the targets are a function of the inputs)
    assert curve["train_loss"][-1] < curve["train_loss"][0]
    again = run_job(spec, tmp_path / "again" / "fold0.json", log=lambda _: None)
    assert again["test_error"] == record["test_error"]


def test_regression_without_given_validation_draws_from_training_rows(tmp_path):
    folder = _regression_folder(tmp_path, with_mask=False, with_val=False)
    train, val, test = split_indices(PreparedDataset(folder), 0, 0.1, seed=3)
    assert len(val) == 5 and len(train) == 45 and list(test) == list(range(50, 60))
    assert not set(val) & set(test) and not set(train) & set(val)
    assert list(split_indices(PreparedDataset(folder), 0, 0.1, seed=3)[1]) == list(val)


def test_given_validation_overlapping_the_test_fold_is_refused(tmp_path):
    from ssmbench.data.errors import DataError

    folder = _regression_folder(tmp_path, with_mask=False, with_val=True)
    (folder / "val_indices_fold_0.txt").write_text("48\n55\n")
    with pytest.raises(DataError, match="val_indices_fold_0.txt: validation rows overlap"):
        split_indices(PreparedDataset(folder), 0, 0.1, seed=0)


def test_regression_rejects_accuracy_monitor(tmp_path):
    spec = _regression_spec(_regression_folder(tmp_path, with_mask=False, with_val=False))
    spec["settings"]["monitor"] = "val_accuracy"
    with pytest.raises(ValueError, match="regression task: monitor 'val_accuracy'"):
        run_job(spec, tmp_path / "r" / "fold0.json", log=lambda _: None)
