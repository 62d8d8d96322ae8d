"""No record from an unsound run: bad inputs and degenerate folds are refused before the
first epoch, a non-finite loss stops the run naming where it appeared, and a record is
strict JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO

import ssmbench.complexity as complexity
import ssmbench.models as models
from ssmbench.config import Job, job_spec
from ssmbench.data.errors import DataError
from ssmbench.data.prepared_files import write_prepared_folder
from ssmbench.io import atomic_write_json, index_text
from ssmbench.params_file import read_params
from ssmbench.train.checks import DivergedError, LossLimit, check_loss, check_split
from ssmbench.train.protocol import run_job

N_TRAIN, N_TEST, C, L, K = 32, 8, 2, 16, 2
MODEL = "S4D"


def _folder(tmp_path: Path, X=None, y=None, test_rows=None, **meta) -> Path:
    """A tiny official-split classification dataset (rows 0..31 train, 32..39 test),
    with `X`, `y`, the test rows or meta.json keys replaced as given."""
    rng = np.random.default_rng(0)
    N = N_TRAIN + N_TEST
    if y is None:
        y = np.arange(N, dtype=np.int64) % K
    if X is None:
        X = (rng.normal(size=(N, C, L)) + y[:, None, None]).astype(np.float32)
    meta = {"name": "Toy", "benchmark": "uea", "task": "classification", "N": N, "C": C,
            "L": L, "n_classes": K, "n_train": N_TRAIN, "n_test": N_TEST,
            "fold_scheme": "official_split", "n_folds": 1, **meta}  # fmt: skip
    rows = range(N_TRAIN, N) if test_rows is None else test_rows
    return write_prepared_folder(
        tmp_path / "prepared", "Toy", {"X.npy": X, "y.npy": y},
        {"test_indices_fold_0.txt": index_text(rows)}, meta,
    )  # fmt: skip


def _spec(folder: Path, max_epochs: int = 3) -> dict:
    params = read_params(REPO / "params.yaml")
    spec = job_spec(params, Job("uea", "BasicMotions", MODEL, 0), "default")
    spec.update(dataset="Toy", prepared_dir=str(folder))
    spec["settings"].update(max_epochs=max_epochs, batch_size=8)
    return spec


def _refused(tmp_path: Path, folder: Path, error, match: str) -> None:
    record = tmp_path / "runs" / "fold0.json"
    with pytest.raises(error, match=match):
        run_job(_spec(folder), record, log=lambda _: None)
    assert not record.parent.exists() or not any(record.parent.iterdir())


# ------------------------------------------------------------- inputs before epoch 1
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_refused_before_training(tmp_path, value):
    X = np.ones((N_TRAIN + N_TEST, C, L), dtype=np.float32)
    X[5, 1, 7] = value
    X[20, 0, 0] = value
    _refused(tmp_path, _folder(tmp_path, X=X), DataError,
             rf"X.npy: 2 NaN/inf value\(s\), the first \({value}\) at row 5, channel 1, "
             r"step 7")  # fmt: skip


def test_the_finiteness_scan_reads_in_chunks_across_their_borders(tmp_path):
    from ssmbench.data.store import PreparedDataset

    X = np.zeros((N_TRAIN + N_TEST, C, L), dtype=np.float32)
    X[[3, 17, 39], 1, [2, 0, 15]] = np.nan
    dataset = PreparedDataset(_folder(tmp_path, X=X))
    row_bytes = C * L * 4
    for chunk_rows in (1, 3, 7, 40, 100):
        found = dataset.first_non_finite("X.npy", chunk_bytes=chunk_rows * row_bytes)
        assert found == (3, (3, 1, 2)), chunk_rows
    assert PreparedDataset(_folder(tmp_path / "ok")).first_non_finite("X.npy") is None


def test_label_out_of_range_is_refused(tmp_path):
    y = np.arange(N_TRAIN + N_TEST, dtype=np.int64) % K
    y[11] = K
    _refused(tmp_path, _folder(tmp_path, y=y), DataError,
             r"y.npy: 1 label\(s\) outside \[0, 2\) \(meta.json's n_classes\), the first 2 "
             r"at row 11")  # fmt: skip


def test_negative_label_is_refused(tmp_path):
    y = np.arange(N_TRAIN + N_TEST, dtype=np.int64) % K
    y[0] = -1
    _refused(tmp_path, _folder(tmp_path, y=y), DataError, r"the first -1 at row 0")


def test_float_labels_for_classification_are_refused(tmp_path):
    y = (np.arange(N_TRAIN + N_TEST) % K).astype(np.float64) + 0.5
    _refused(tmp_path, _folder(tmp_path, y=y), DataError,
             r"y.npy: dtype float64; a classification dataset's labels are integer class "
             r"ids 0..1")  # fmt: skip


def test_test_rows_among_the_declared_training_rows_are_refused(tmp_path):
    rows = [5, *range(N_TRAIN + 1, N_TRAIN + N_TEST)]  # still n_test rows, one of them 5
    _refused(tmp_path, _folder(tmp_path, test_rows=rows), DataError,
             r"test_indices_fold_0.txt: 1 test row\(s\) among the 32 training rows meta.json "
             r"declares \(rows 0..31\), the first row 5")  # fmt: skip


def test_n_train_inconsistent_with_the_official_split_is_refused(tmp_path):
    folder = _folder(tmp_path, test_rows=range(N_TRAIN + 2, N_TRAIN + N_TEST))
    _refused(
        tmp_path,
        folder,
        DataError,
        r"test_indices_fold_0.txt: 6 test rows but meta.json declares N - n_train = 8",
    )
    other = _folder(tmp_path / "b", n_test=N_TEST + 1)
    _refused(tmp_path / "b", other, DataError, r"meta.json: n_train 32 \+ n_test 9 != N 40")


def _regression_folder(tmp_path: Path, observed_nan: bool) -> Path:
    rng = np.random.default_rng(0)
    N = 40
    X = rng.normal(size=(N, C, L)).astype(np.float32)
    y = X.cumsum(axis=-1).astype(np.float32)
    mask = rng.random((N, C, L)) < 0.5
    y[~mask] = np.nan  # unobserved targets may hold NaN (docs/contracts.md)
    if observed_nan:
        row, ch, step = (int(i[0]) for i in np.nonzero(mask[7:]))
        y[7 + row, ch, step] = np.inf
    meta = {"name": "Toy", "N": N, "C": C, "L": L, "task": "regression",
            "fold_scheme": "given_folds", "n_folds": 1, "n_classes": None}  # fmt: skip
    return write_prepared_folder(
        tmp_path / "prepared", "Toy", {"X.npy": X, "y.npy": y, "target_mask.npy": mask},
        {"test_indices_fold_0.txt": index_text(range(32, 40))}, meta,
    )  # fmt: skip


def test_regression_targets_may_be_nan_only_where_unobserved(tmp_path):
    spec = _spec(_regression_folder(tmp_path, observed_nan=False), max_epochs=1)
    record = run_job(spec, tmp_path / "ok" / "fold0.json", log=lambda _: None)
    assert np.isfinite(record["test_loss"])
    _refused(tmp_path, _regression_folder(tmp_path / "bad", observed_nan=True), DataError,
             r"y.npy: 1 NaN/inf value\(s\) at observed targets \(target_mask.npy\), the "
             r"first \(inf\) at row 7")  # fmt: skip


# ------------------------------------------------------------------ degenerate folds
def test_fewer_training_rows_than_classes_is_refused(tmp_path):
    # meta declares 4 classes; the training rows hold only two of them, 3 rows after the
    # split (10% of 4 rows cannot hold both classes: the unstratified fallback takes 1)
    y = np.array([0, 0, 1, 1] + [2, 3] * 2, dtype=np.int64)
    X = np.ones((8, C, L), dtype=np.float32)
    folder = _folder(tmp_path, X=X, y=y, test_rows=range(4, 8), N=8, n_classes=4,
                     n_train=4, n_test=4)  # fmt: skip
    _refused(
        tmp_path,
        folder,
        DataError,
        r"fold 0 with val_fraction 0.1 leaves 3 training rows for 4 classes",
    )


def test_a_fold_without_training_or_validation_rows_is_refused(tmp_path):
    from ssmbench.data.store import PreparedDataset

    dataset = PreparedDataset(_folder(tmp_path))
    with pytest.raises(DataError, match="fold 0 with val_fraction 0.1 leaves an empty validation"):
        check_split(dataset, 0, np.arange(30), np.array([], dtype=np.int64), 0.1)
    with pytest.raises(DataError, match="fold 0 with val_fraction 0.1 leaves no training rows"):
        check_split(dataset, 0, np.array([], dtype=np.int64), np.arange(30), 0.1)


def test_regression_validation_fraction_leaving_no_training_rows_is_refused(tmp_path):
    folder = _regression_folder(tmp_path, observed_nan=False)
    spec = _spec(folder)
    spec["settings"]["val_fraction"] = 0.99
    with pytest.raises(DataError, match="val_fraction 0.99 leaves none of its 32 training rows"):
        run_job(spec, tmp_path / "runs" / "fold0.json", log=lambda _: None)


# ------------------------------------------------------------------------ divergence
def _poisoned_forward(monkeypatch, poison_call: int, training: bool, factor=np.inf):
    """Make the model's `poison_call`-th forward pass in training (or eval) mode return
    its logits times `factor` (inf: NaN/inf logits), deterministically. The record's MAC
    count runs on the meta device here (not counted), so that only the run's own passes
    count."""
    monkeypatch.setattr(complexity, "AUTO_CPU_MAX_LENGTH", 0)
    model_class = type(models.build_model(MODEL, C, K, L, _spec(Path("."))["model_params"]))
    real_forward = model_class.forward
    calls = {"n": 0}

    def forward(self, x):
        out = real_forward(self, x)
        if x.device.type != "meta" and self.training == training:
            calls["n"] += 1
            if calls["n"] == poison_call:
                return out * factor
        return out

    monkeypatch.setattr(model_class, "forward", forward)


def test_divergence_in_training_stops_the_run_naming_epoch_and_batch(tmp_path, monkeypatch):
    n_batches = 4  # 29 training rows after the split, batches of 8
    _poisoned_forward(monkeypatch, n_batches + 3, training=True)  # epoch 2, batch 3
    _refused(tmp_path, _folder(tmp_path), DivergedError,
             r"^\[uea/Toy/S4D/fold0\] training, epoch 2, batch 3/4: loss is nan \(the input "
             r"batch is finite: the model diverged; lower protocol.lr or set "
             r"protocol.grad_clip_norm\). Stopped without a record.$")  # fmt: skip


def test_a_finite_exploding_training_loss_stops_the_run(tmp_path, monkeypatch):
    """Logits 1e6 times too large: a finite loss far above 1000 ln K stops the run, named
    like a NaN, and no record is written."""
    _poisoned_forward(monkeypatch, 4 + 2, training=True, factor=1e6)  # epoch 2, batch 2
    _refused(tmp_path, _folder(tmp_path), DivergedError,
             r"^\[uea/Toy/S4D/fold0\] training, epoch 2, batch 2/4: loss is [0-9.e+]+, above "
             r"protocol.max_loss_ratio 1000 × ln K for K = 2 classes \(0.6931\) = 693.1: the "
             r"model exploded; lower protocol.lr or set protocol.grad_clip_norm. Stopped "
             r"without a record.$")  # fmt: skip


def test_the_loss_limit_is_a_stated_multiple_of_a_know_nothing_model():
    model = torch.nn.Linear(2, 2)
    x = torch.zeros(2)
    limit = LossLimit.for_task(1000, "classification", 2, None)
    assert limit.value == pytest.approx(1000 * np.log(2))
    check_loss(limit.value, "training, epoch 1", 0, 5, x, model, limit)  # at the limit: fine
    with pytest.raises(DivergedError, match=r"batch 1/5: loss is 694, above .* = 693.1"):
        check_loss(694.0, "training, epoch 1", 0, 5, x, model, limit)
    # one class counts as two (ln 1 = 0 would stop every run); regression: the variance
    assert LossLimit.for_task(10, "classification", 1, None).value == pytest.approx(10 * np.log(2))
    reg = LossLimit.for_task(10, "regression", None, 0.5)
    assert reg.value == 5.0 and reg.what == "the variance of the training targets"
    assert LossLimit.for_task(10, "regression", None, 0.0).value == 10.0
    assert LossLimit.for_task(None, "classification", 2, None) is None
    check_loss(1e30, "training, epoch 1", 0, 5, x, model, None)  # no limit: finite is fine


def test_max_loss_ratio_null_lets_a_finite_loss_train_on(tmp_path, monkeypatch):
    _poisoned_forward(monkeypatch, 6, training=True, factor=1e6)
    spec = _spec(_folder(tmp_path))
    spec["settings"]["max_loss_ratio"] = None
    record = tmp_path / "runs" / "fold0.json"
    run_job(spec, record, log=lambda _: None)
    assert record.is_file()


def test_divergence_in_validation_stops_the_run(tmp_path, monkeypatch):
    _poisoned_forward(monkeypatch, 2, training=False)  # epoch 2's validation (1 batch)
    _refused(
        tmp_path,
        _folder(tmp_path),
        DivergedError,
        r"\[uea/Toy/S4D/fold0\] validation, epoch 2, batch 1/1: loss is nan",
    )


def test_non_finite_test_loss_writes_no_record(tmp_path, monkeypatch):
    _poisoned_forward(monkeypatch, 4, training=False)  # 3 validations, then the test fold
    _refused(
        tmp_path,
        _folder(tmp_path),
        DivergedError,
        r"\[uea/Toy/S4D/fold0\] test \(best epoch \d\), batch 1/1: loss is nan",
    )


def test_a_non_finite_input_batch_is_named_as_the_cause():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(DivergedError, match=r"batch 2/5: loss is nan \(the input batch holds"):
        check_loss(float("nan"), "training, epoch 1", 1, 5, torch.tensor([0.0, np.inf]), model)
    check_loss(0.5, "training, epoch 1", 1, 5, torch.tensor([np.nan]), model)  # finite: fine


# ------------------------------------------------------------------------ strict JSON
def _strict(text: str):
    def refuse(constant):
        raise AssertionError(f"bare {constant} in a record")

    return json.loads(text, parse_constant=refuse)


def test_a_record_is_strict_json(tmp_path):
    record_path = tmp_path / "runs" / "fold0.json"
    run_job(_spec(_regression_folder(tmp_path, observed_nan=False), 2), record_path,
            log=lambda _: None)  # fmt: skip
    record = _strict(record_path.read_text())
    assert record["task"] == "regression" and record["best_val_accuracy"] is None


def test_a_non_finite_value_is_never_written_as_bare_nan(tmp_path):
    target = tmp_path / "r.json"
    with pytest.raises(ValueError, match=r"r.json: not written: JSON has no NaN or inf, found "
                       r"test_loss = nan, test_sets.d1.error = inf"):  # fmt: skip
        atomic_write_json(
            target,
            {"test_loss": float("nan"), "test_sets": {"d1": {"error": np.float32("inf"), "n": 3}}},
        )
    assert not target.exists() and not list(tmp_path.iterdir())
    atomic_write_json(target, {"test_loss": 0.25, "test_accuracy": None})
    assert _strict(target.read_text()) == {"test_accuracy": None, "test_loss": 0.25}


def test_the_cli_reports_a_diverged_run_in_one_line_with_exit_1(monkeypatch, capsys):
    """Divergence is neither bad input (exit 2) nor a bug (a traceback): one line, exit 1."""
    from ssmbench import cli
    from ssmbench.cli import check

    def diverge(args):
        raise DivergedError("[uea/Toy/S4D/fold0] training, epoch 2, batch 3/4: loss is nan")

    monkeypatch.setattr(check, "cmd_check", diverge)
    assert cli.main(["check"]) == 1
    err = capsys.readouterr().err
    assert (
        err
        == "ssmbench check: error: [uea/Toy/S4D/fold0] training, epoch 2, batch 3/4: loss is nan\n"
    )


def test_the_cli_keeps_the_traceback_of_any_other_error(monkeypatch):
    from ssmbench import cli
    from ssmbench.cli import check

    def bug(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(check, "cmd_check", bug)
    with pytest.raises(ZeroDivisionError):
        cli.main(["check"])
