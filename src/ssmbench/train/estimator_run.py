"""A non-deep model's run (QUANT, Hydra, ExtraTrees: ``ssmbench.models.estimators``):
fitted once and scored, no epochs."""

from __future__ import annotations

import time

import numpy as np

from ssmbench.models import model_inputs
from ssmbench.train.checkpoint import TrainingInterrupted
from ssmbench.train.evaluation import score_test_sets
from ssmbench.train.record import write_run


def run_estimator(
    spec,
    record_path,
    model,
    dataset,
    objective,
    splits,
    test_sets,
    seed,
    threads,
    log,
    stop,
    val_split,
) -> dict:
    """Fit a non-deep model (models/estimators.py) once and score it: no epochs, no early
    stopping. It fits on all non-test rows (``fit_on_validation``, the default) or on the
    deep models' training rows, then scores the validation rows too.

    It has no state worth a checkpoint: SIGTERM/SIGUSR1 stop it at once (as soon as the
    library returns to Python) with `TrainingInterrupted`, until its record is written."""
    from sklearn.metrics import log_loss

    stop.immediate = True
    if stop.requested:
        raise TrainingInterrupted(stop.signum)

    if objective.task != "classification":
        raise ValueError(
            f"model {spec['model']!r} is a classifier; {spec['dataset']} is a {objective.task} task"
        )
    train_idx, val_idx, test_idx = splits
    X, y = dataset.X, dataset.y
    classes = np.arange(objective.n_outputs)
    model.configure(random_state=seed, n_jobs=threads)
    fit_rows = np.union1d(train_idx, val_idx) if model.fit_on_validation else train_idx
    log(
        f"[{spec['benchmark']}/{spec['dataset']}/{spec['model']}/fold{spec['fold']}] "
        f"seed={seed} fit on {len(fit_rows)} rows "
        f"({'training + validation' if model.fit_on_validation else 'training'}), "
        f"test={len(test_idx)}"
    )

    def score(rows):
        proba = model.predict_proba(np.asarray(X[rows], dtype=np.float32))
        labels = np.asarray(y[rows], dtype=np.int64)
        loss = log_loss(labels, np.clip(proba, 1e-15, 1.0), labels=classes)
        return float(loss), float(np.mean(proba.argmax(axis=1) == labels))

    started = time.perf_counter()
    model.fit(np.asarray(X[fit_rows], dtype=np.float32), np.asarray(y[fit_rows]))
    train_seconds = time.perf_counter() - started
    val_loss, val_acc = (None, None) if model.fit_on_validation else score(val_idx)
    test_start = time.perf_counter()
    tested = score_test_sets(objective, score, test_idx, test_sets, log)
    test_seconds = time.perf_counter() - test_start
    log(f"test: loss={tested['test_loss']:.4f} error={tested['test_error']:.4f}")
    curve = [
        {"epoch": 1, "train_loss": None, "train_accuracy": None, "val_loss": val_loss,
         "val_accuracy": val_acc, "seconds": train_seconds}
    ]  # fmt: skip
    stop.disarm()  # the record is being written: a signal now must not make the job fail
    return write_run(
        spec, record_path, curve, objective,
        {
            **tested,
            "best_epoch": 1,
            "best_val_loss": val_loss,
            "best_val_accuracy": val_acc,
            "epochs_run": 1,
            "max_epochs": 1,
            "stopped_early": False,
            "batch_size": None,
            "n_train": len(fit_rows),
            "n_val": 0 if model.fit_on_validation else len(val_idx),
            "n_test": len(test_idx),
            "val_split": "none" if model.fit_on_validation else val_split,
            "inputs": list(model_inputs(model)),
            "steps_source": None,
            "mask_source": None,
            "probes": None,
            "train_seconds": train_seconds,
            "test_seconds": test_seconds,
            "params": None,  # not applicable: see ssmbench.report.style.COMPLEXITY_PROXY
            "mmac": None,
            "mmac_full": None,
            "device": "cpu",
            "device_name": None,
            "threads": int(threads),
            "scan": None,
            "micro_batches": None,
        },
    )  # fmt: skip
