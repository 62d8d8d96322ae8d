"""The training protocol: splits, determinism, best-checkpoint testing, atomic records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from ssmbench import io as atomic_io
from ssmbench.config import Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.data.store import PreparedDataset
from ssmbench.params_file import read_params
from ssmbench.setting_defaults import setting_defaults
from ssmbench.train.fold_split import split_indices
from ssmbench.train.protocol import run_job
from ssmbench.train.provenance import PROVENANCE_KEYS, RUN_FACT_KEYS, record_provenance


@pytest.fixture(scope="module")
def basic_motions(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    fetch_uea("BasicMotions", root / "raw", archive_dir=None, download=False)
    return prepare_uea("BasicMotions", root / "raw", root / "prepared")


def spec_for(prepared: Path, model="MS4", fold=0, max_epochs=3) -> dict:
    params = read_params(REPO / "params.yaml")
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
    # A rerun writes the same record and curve, byte for byte (DVC hashes them): where,
    # when and how long each ran is in its provenance file beside them.
    for name in ("fold0.json", "fold0.curve.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    on_disk = json.loads((tmp_path / "a" / "fold0.json").read_text())
    assert not {*PROVENANCE_KEYS, *RUN_FACT_KEYS} & set(on_disk)
    facts = json.loads((tmp_path / "a" / "fold0.provenance.json").read_text())
    assert facts["record_sha256"] == on_disk["content_sha256"]
    assert facts["git_commit"] is None or len(facts["git_commit"]) == 40
    assert facts["versions"]["torch"].startswith("2.13")
    assert facts["train_seconds"] > 0 and len(facts["epoch_seconds"]) == 3
    known = record_provenance(tmp_path / "a" / "fold0.json", on_disk)
    assert known["train_seconds"] == facts["train_seconds"] and "record_sha256" not in known


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
    import ssmbench.train.run_setup as run_setup

    def boom(*args, **kwargs):
        raise RuntimeError("simulated crash during testing")

    monkeypatch.setattr(run_setup, "evaluate", boom)
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


# ----------------------------------------------------------------------- the optimizer
def test_adamw_decays_ordinary_weights_and_not_the_hinted_ssm_parameters():
    """protocol.optimizer adamw: the S4D kernel's Λ, B, C, Δ carry ``_optim =
    {"weight_decay": 0.0}`` and go into a group without decay; the other weights are
    decayed by protocol.weight_decay (decoupled: with a zero gradient only decay moves
    them)."""
    import torch

    from ssmbench.models import build_model
    from ssmbench.train.optim import build_optimizer

    params = read_params(REPO / "params.yaml")
    model = build_model("S4D", 3, 4, 32, params["models"]["S4D"])
    settings = {**setting_defaults(), "optimizer": "adamw", "lr": 0.1, "weight_decay": 0.5}
    optimizer = build_optimizer(model, settings)
    assert isinstance(optimizer, torch.optim.AdamW)
    hinted = {id(p) for p in model.parameters() if hasattr(p, "_optim")}
    assert hinted  # the kernel's parameters
    by_decay = {g["weight_decay"]: {id(p) for p in g["params"]} for g in optimizer.param_groups}
    assert by_decay[0.0] == hinted
    assert by_decay[0.5] == {id(p) for p in model.parameters()} - hinted
    assert all(g["lr"] == 0.1 for g in optimizer.param_groups)

    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    for name, p in model.named_parameters():
        if id(p) in hinted:
            assert torch.equal(p.detach(), before[name]), name
        else:  # AdamW: p <- p (1 - lr * weight_decay) when the gradient is zero
            assert torch.allclose(p.detach(), before[name] * (1 - 0.1 * 0.5)), name


def test_adam_is_one_update_whatever_the_groups():
    """The default (adam, weight_decay 0): the hint groups change nothing, the update is
    bit for bit the single-group one."""
    import torch

    from ssmbench.models import build_model
    from ssmbench.train.optim import build_optimizer

    params = read_params(REPO / "params.yaml")
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        # without dropout: its masks would differ between the two models' draws
        models.append(build_model("MS4N", 3, 4, 32, {**params["models"]["MS4N"], "dropout": 0.0}))
    grouped = build_optimizer(models[0], {**setting_defaults(), "lr": 1e-2})
    single = torch.optim.Adam(models[1].parameters(), lr=1e-2, weight_decay=0.0)
    assert len(grouped.param_groups) == 2
    x = torch.randn(5, 3, 32)
    for _ in range(3):
        for model, optimizer in ((models[0], grouped), (models[1], single)):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        assert torch.equal(a, b)


def test_adamw_run_writes_a_record(basic_motions, tmp_path):
    spec = spec_for(basic_motions, max_epochs=1)
    spec["settings"].update(optimizer="adamw", weight_decay=0.01)
    record = run_job(spec, tmp_path / "fold0.json", log=lambda _: None)
    assert record["protocol"]["optimizer"] == "adamw" and np.isfinite(record["test_loss"])


def test_unknown_optimizer_is_refused_naming_the_key():
    import torch

    from ssmbench.params_file import ConfigError, validate_schema
    from ssmbench.train.optim import build_optimizer

    params = read_params(REPO / "params.yaml")
    params["protocol"]["optimizer"] = "sgd"
    with pytest.raises(ConfigError, match=r"protocol\.optimizer: 'sgd' is not one of"):
        validate_schema(params)
    with pytest.raises(ValueError, match="protocol.optimizer: unknown optimizer 'sgd'"):
        build_optimizer(torch.nn.Linear(2, 2), {**setting_defaults(), "optimizer": "sgd"})


def test_an_optim_hint_the_optimizer_does_not_take_is_refused():
    import torch

    from ssmbench.train.optim import build_optimizer

    layer = torch.nn.Linear(2, 2)
    layer.weight._optim = {"weight_dacay": 0.0}
    with pytest.raises(ValueError, match="weight_dacay"):
        build_optimizer(layer, setting_defaults())


def test_seeding_makes_cpu_ops_deterministic_without_importing_the_compiler():
    """Every run is deterministic on CPU (nondeterminism an error), and seeding does not
    import torch._inductor (1.5 s of every job) to get there."""
    code = (
        "import sys, torch; from ssmbench.train.run_setup import seed_everything; "
        "seed_everything(3); "
        "print(torch.are_deterministic_algorithms_enabled(), "
        "torch.is_deterministic_algorithms_warn_only_enabled(), "
        "'torch._inductor' in sys.modules, torch.initial_seed())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.split()
    assert out == ["True", "False", "False", "3"]
