"""The training protocol of the MS4N paper (section 4), one run at a time.

* Adam, lr 1e-3 (params.yaml `protocol`).
* A stratified validation split of `val_fraction` of the TRAINING part of the fold; the
  test fold is never seen before the final evaluation.
* Early stopping on the validation loss (`early_stopping_patience` epochs without a
  strictly better one), at most `max_epochs`.
* The checkpoint with the best validation score is the one tested.
* Seeded (seed = seed_base + fold) and deterministic on CPU.

The run writes its per-epoch curve, then its record, each atomically: a record exists
only if the run finished.

On a cluster a run may be stopped before it finishes: on SIGTERM or SIGUSR1 it completes
the batch in progress, writes a checkpoint and exits with status 75
(``ssmbench.train.checkpoint.RESUME_EXIT_CODE``); it also writes one every
``checkpoint_every`` epochs. The next attempt resumes from it, batch for batch, and
writes the record an uninterrupted run would have written (ssmbench.train.checkpoint).
"""

from __future__ import annotations

import copy
import csv
import io
import math
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ssmbench.io import atomic_write_json, atomic_write_text
from ssmbench.train import checkpoint as ckpt
from ssmbench.train.checkpoint import StopRequest, TrainingInterrupted
from ssmbench.train.records import provenance

CURVE_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds")


def batch_size_for(settings: dict, n_train: int) -> int:
    """The paper's "batch 4–64 by dataset size": the power of two at or below
    batch_fraction * n_train, clipped to [batch_min, batch_max]. A fixed `batch_size`
    (e.g. MONSTER's 256) wins when given."""
    if settings.get("batch_size"):
        return int(settings["batch_size"])
    target = max(1.0, settings["batch_fraction"] * n_train)
    size = 2 ** int(math.floor(math.log2(target)))
    return int(min(settings["batch_max"], max(settings["batch_min"], size)))


def seed_everything(seed: int, deterministic: bool = True) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if deterministic:
        if torch.cuda.is_available():
            # cuBLAS needs this to be deterministic; set before the first CUDA call.
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        # warn_only on GPU: a few CUDA kernels have no deterministic version; on CPU every
        # op we use has one, so any nondeterminism there is an error.
        torch.use_deterministic_algorithms(True, warn_only=torch.cuda.is_available())


class Objective:
    """What a run minimises and reports, by the dataset's task.

    * classification: cross-entropy on logits (B, K); accuracy; error = 1 - accuracy.
    * regression: mean squared error over the *observed* targets (``target_mask.npy`` when
      the dataset has one, else all); error = that MSE. The model's output is mapped to
      the target's shape: y (N,) <- (B, 1); y (N, L) <- per step (B, L, 1); y (N, C', L)
      <- per step (B, L, C'), transposed; y (N, K') <- (B, K').
    """

    def __init__(self, meta: dict, y_shape: tuple[int, ...]):
        self.task = meta.get("task", "classification")
        L = int(meta["L"])
        self.per_step = False
        if self.task == "classification":
            self.n_outputs = int(meta["n_classes"])
        elif self.task == "regression":
            tail = tuple(y_shape[1:])
            if len(tail) == 0:
                self.n_outputs = 1
            elif len(tail) == 1 and tail[0] == L:
                self.n_outputs, self.per_step = 1, True
            elif len(tail) == 2 and tail[1] == L:
                self.n_outputs, self.per_step = tail[0], True
            elif len(tail) == 1:
                self.n_outputs = tail[0]
            else:
                raise ValueError(
                    f"regression targets of shape {y_shape} are not (N,), (N, K), (N, L) "
                    f"or (N, C, L) with L = {L}"
                )
        else:
            raise ValueError(f"task {self.task!r} is neither classification nor regression")
        self.target_dtype = np.int64 if self.task == "classification" else np.float32
        self.y_ndim = len(y_shape)

    def prediction(self, out: torch.Tensor) -> torch.Tensor:
        """The model output in the target's shape."""
        if self.task == "classification":
            return out  # logits (B, K)
        if self.per_step:
            return out[..., 0] if self.y_ndim == 2 else out.transpose(1, 2)
        return out[:, 0] if self.y_ndim == 1 else out

    def batch_sums(self, out, yb, mb) -> tuple[torch.Tensor, float, int]:
        """(loss of the batch to optimise, its summed loss, summed correct or count)."""
        pred = self.prediction(out)
        if self.task == "classification":
            loss = F.cross_entropy(pred, yb)
            return loss, loss.item() * len(yb), (pred.argmax(dim=1) == yb).sum().item()
        if mb is not None:
            # Unobserved targets may hold NaN: zero them *before* the difference, since a
            # NaN there would reach the gradient even through a masked-out square.
            zero = torch.zeros((), dtype=pred.dtype, device=pred.device)
            sq = torch.where(mb, pred - torch.where(mb, yb, zero), zero).square()
            n_obs = int(mb.sum().item())
        else:
            sq = (pred - yb).square()
            n_obs = sq.numel()
        loss = sq.sum() / max(1, n_obs)
        return loss, sq.sum().item(), n_obs

    def summarise(self, loss_sum: float, second: float, n_rows: int) -> tuple[float, float]:
        """(mean loss, accuracy) for classification; (MSE, nan) for regression, where
        ``second`` counts the observed target values."""
        if self.task == "classification":
            return loss_sum / n_rows, second / n_rows
        return loss_sum / max(1.0, second), float("nan")

    def error(self, loss: float, accuracy: float) -> float:
        return 1.0 - accuracy if self.task == "classification" else loss


def iterate_batches(
    X: np.ndarray,
    y: np.ndarray,
    indices: np.ndarray,
    batch_size: int,
    generator: torch.Generator | None = None,
    *,
    target_dtype=np.int64,
    target_mask: np.ndarray | None = None,
) -> Iterator[tuple[torch.Tensor, ...]]:
    """Batches ``(x, y)`` (or ``(x, y, target_mask)``) read by index from X (a memory map is
    fine: only the batch is loaded).

    Shuffled with `generator` when given. Indices within a batch are sorted so a memory
    map is read front to back; the order inside a batch does not change the gradient.
    """
    order = indices
    if generator is not None:
        order = indices[torch.randperm(len(indices), generator=generator).numpy()]
    for start in range(0, len(order), batch_size):
        batch = np.sort(order[start : start + batch_size])
        xb = torch.from_numpy(np.ascontiguousarray(X[batch], dtype=np.float32))
        yb = torch.from_numpy(np.asarray(y[batch], dtype=target_dtype))
        if target_mask is None:
            yield xb, yb
        else:
            yield xb, yb, torch.from_numpy(np.asarray(target_mask[batch], dtype=bool))


def _batches(objective, X, y, mask, indices, batch_size, generator=None):
    """iterate_batches as (x, y, mask-or-None) triples, with the task's target dtype."""
    for batch in iterate_batches(
        X, y, indices, batch_size, generator,
        target_dtype=objective.target_dtype, target_mask=mask,
    ):  # fmt: skip
        yield batch if len(batch) == 3 else (*batch, None)


@torch.no_grad()
def evaluate(model, objective, X, y, mask, indices, batch_size, device) -> tuple[float, float]:
    """(mean loss, accuracy) or (MSE, nan) over `indices`, in eval mode."""
    model.eval()
    loss_sum, second, n_rows = 0.0, 0.0, 0
    for xb, yb, mb in _batches(objective, X, y, mask, indices, batch_size):
        xb, yb = xb.to(device), yb.to(device)
        mb = mb.to(device) if mb is not None else None
        _, batch_loss, batch_second = objective.batch_sums(model(xb), yb, mb)
        loss_sum += batch_loss
        second += batch_second
        n_rows += len(yb)
    return objective.summarise(loss_sum, second, n_rows)


def _is_better(
    monitor: str, val_loss: float, val_acc: float, best: tuple[float, float] | None
) -> bool:
    if best is None:
        return True
    best_loss, best_acc = best
    if monitor == "val_accuracy":
        # Ties on accuracy (common on small validation sets) are broken by the loss.
        return val_acc > best_acc or (val_acc == best_acc and val_loss < best_loss)
    return val_loss < best_loss


def split_indices(dataset, fold: int, val_fraction: float, seed: int):
    """(train, val, test) row indices of a fold. Validation comes from the training part:
    the dataset's own validation rows when it has them (Physiome-ODE's 70/20/10), else a
    stratified draw (classification) or a seeded random draw (regression) of
    ``val_fraction`` of the training rows."""
    from ssmbench.data.store import stratified_validation_split

    test_idx = np.asarray(dataset.test_indices(fold), dtype=np.int64)
    pool = np.asarray(dataset.train_indices(fold), dtype=np.int64)
    given = dataset.given_validation_indices(fold)
    if given is not None:
        val_idx = np.asarray(given, dtype=np.int64)
        train_idx = np.setdiff1d(pool, val_idx)
    elif dataset.meta.get("task", "classification") == "classification":
        y_pool = np.asarray(dataset.y[pool])
        tr_local, val_local = stratified_validation_split(y_pool, val_fraction, seed)
        train_idx, val_idx = pool[np.asarray(tr_local)], pool[np.asarray(val_local)]
    else:
        n_val = max(1, math.ceil(float(val_fraction) * len(pool)))
        if n_val >= len(pool):
            raise ValueError(f"fold {fold}: {len(pool)} training rows leave none to train on")
        chosen = np.random.default_rng(seed).permutation(len(pool))[:n_val]
        val_idx = np.sort(pool[chosen])
        train_idx = np.setdiff1d(pool, val_idx)
    # The protocol's one hard rule: nothing of the test fold is used before testing.
    if np.intersect1d(val_idx, test_idx).size or np.intersect1d(train_idx, test_idx).size:
        raise AssertionError(f"fold {fold}: train/validation indices overlap the test fold")
    return train_idx, val_idx, test_idx


def run_job(
    spec: dict,
    record_path: str | Path,
    threads: int = 1,
    log: Callable[[str], None] = print,
    checkpoint_path: str | Path | None = None,
) -> dict:
    """Train one model on one fold of one dataset; write its curve and record.

    With `checkpoint_path` (``ssmbench train`` passes ``paths.checkpoints/...``), the run
    resumes from the checkpoint there if it was made with these settings and code, writes
    one every ``checkpoint_every`` epochs and deletes it once the record is written.
    SIGTERM and SIGUSR1 stop the run after the batch in progress, with a checkpoint when
    it has a location: `TrainingInterrupted` (exit status 75) is raised."""
    with StopRequest(log) as stop:
        return _run_job(
            spec, Path(record_path), threads, log,
            Path(checkpoint_path) if checkpoint_path is not None else None, stop,
        )  # fmt: skip


def _run_job(spec, record_path: Path, threads, log, checkpoint_path: Path | None, stop) -> dict:
    from ssmbench.complexity import count_params, mmac
    from ssmbench.data.store import PreparedDataset
    from ssmbench.models import build_model

    settings = spec["settings"]
    fold = int(spec["fold"])
    seed = int(settings.get("seed_base", 0)) + fold
    torch.set_num_threads(max(1, int(threads)))
    seed_everything(seed, settings.get("deterministic", True))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    dataset = PreparedDataset(spec["prepared_dir"])
    meta = dataset.meta
    spec = {**spec, "dataset_sha256": meta.get("raw_files")}
    X, y = dataset.X, dataset.y
    objective = Objective(meta, y.shape)
    mask = dataset.target_mask if objective.task == "regression" else None
    monitor = settings.get("monitor", "val_loss")
    if objective.task == "regression" and monitor != "val_loss":
        raise ValueError(
            f"{spec['dataset']} is a regression task: monitor {monitor!r} has no meaning "
            f"there; set monitor: val_loss for benchmark {spec['benchmark']!r} in params.yaml"
        )
    train_idx, val_idx, test_idx = split_indices(dataset, fold, settings["val_fraction"], seed)
    test_sets = dataset.test_sets(fold)
    batch_size = batch_size_for(settings, len(train_idx))
    n_channels, length = int(meta["C"]), int(meta["L"])

    model = build_model(
        spec["model"], n_channels, objective.n_outputs, length, spec["model_params"],
        per_step=objective.per_step,
    )  # fmt: skip
    if getattr(model, "KIND", None) == "estimator":  # QUANT, Hydra, ExtraTrees
        return _run_estimator(
            spec, record_path, model, dataset, objective,
            (train_idx, val_idx, test_idx), test_sets, seed, threads, log, stop,
        )  # fmt: skip
    n_params = count_params(model)
    # "paper": counted as the MS4N paper's tables count (comparable with them); "full":
    # with the S4D convolution (ssmbench.complexity explains both).
    model_mmac = mmac(model, n_channels, length, device="meta", convention="paper")
    model_mmac_full = mmac(model, n_channels, length, device="meta", convention="full")
    model.to(device)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=settings["lr"], weight_decay=settings.get("weight_decay", 0.0)
    )
    shuffle = torch.Generator().manual_seed(seed)
    max_epochs = int(settings["max_epochs"])
    patience = int(settings["early_stopping_patience"])
    clip = settings.get("grad_clip_norm")
    # A checkpoint at the end of every `every`-th epoch, but not within `min_seconds` of
    # the last one (runs whose epochs take milliseconds would spend their time writing).
    every = int(settings.get("checkpoint_every", 1) or 0)
    min_seconds = float(settings.get("checkpoint_min_seconds", 0.0) or 0.0)
    n_batches = math.ceil(len(train_idx) / batch_size)
    name = ckpt.run_name(spec)

    log(
        f"[{name}] seed={seed} "
        f"device={device} train={len(train_idx)} val={len(val_idx)} test={len(test_idx)} "
        f"batch={batch_size} params={n_params} MMac={model_mmac:.3f} max_epochs={max_epochs}"
    )
    curve: list[dict] = []
    best: tuple[float, float] | None = None
    best_state, best_epoch, since_best, stopped_early = None, 0, 0, False
    # Where this attempt starts: epoch, batches of it already done, their running sums.
    start_epoch, start_step, partial, elapsed = 1, 0, None, 0.0
    digest = ckpt.settings_digest(spec) if checkpoint_path is not None else None
    resumed = (
        ckpt.load(checkpoint_path, digest, model, optimizer, log)
        if checkpoint_path is not None
        else None
    )
    if resumed is not None:
        model.load_state_dict(resumed["model"])
        optimizer.load_state_dict(resumed["optimizer"])
        state = resumed["early_stopping"]
        best = tuple(state["best"]) if state["best"] is not None else None
        best_state, best_epoch = state["best_state"], int(state["best_epoch"])
        since_best, stopped_early = int(state["since_best"]), bool(state["stopped_early"])
        curve = list(resumed["curve"])
        start_epoch, start_step = int(resumed["epoch"]), int(resumed["step"])
        partial, elapsed = resumed["partial"], float(resumed["train_seconds"])
        ckpt.set_rng_state(resumed["rng"], shuffle, log)
        log(
            f"resumed from {checkpoint_path}: epoch {start_epoch}, batch {start_step}/"
            f"{n_batches} ({len(curve)} epochs done, best epoch {best_epoch})"
        )

    def snapshot(epoch, step, sums, epoch_shuffle_state) -> dict:
        """The run's state before batch `step` of `epoch` (0-based; 0: the epoch's start),
        with the shuffling generator as it was at the start of `epoch`."""
        rng = ckpt.rng_state(shuffle)
        rng["shuffle"] = epoch_shuffle_state
        return {
            "format": ckpt.FORMAT,
            "digest": digest,
            "run": name,
            "epoch": epoch,
            "step": step,
            "partial": sums,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "rng": rng,
            "early_stopping": {
                "best": list(best) if best is not None else None,
                "best_state": best_state,
                "best_epoch": best_epoch,
                "since_best": since_best,
                "stopped_early": stopped_early,
            },
            "curve": curve,
            "train_seconds": time.perf_counter() - started,
        }

    def interrupted(epoch, step, saved=True, where=None) -> TrainingInterrupted:
        where = where or f"epoch {epoch}, batch {step}/{n_batches}"
        if checkpoint_path is None:
            what = "no checkpoint location, the next attempt starts over"
        elif saved:
            what = f"checkpoint written to {checkpoint_path}, the next attempt resumes from it"
        elif checkpoint_path.is_file():
            what = f"stopped before training; the checkpoint {checkpoint_path} is kept"
        else:
            what = "stopped before training; the next attempt starts over"
        log(f"{stop.signal_name} at {where}: {what}; exiting with status {ckpt.RESUME_EXIT_CODE}")
        kept = checkpoint_path is not None and checkpoint_path.is_file()
        return TrainingInterrupted(stop.signum, checkpoint_path if kept else None)

    started = time.perf_counter() - elapsed
    last_save = time.perf_counter()  # when the last checkpoint was written (or training began)
    last_saved = (start_epoch, start_step) if resumed is not None else None  # what it holds
    zero = {"loss_sum": 0.0, "second": 0.0, "n_rows": 0, "seconds": 0.0}
    if stop.requested:  # before any work: an existing checkpoint stays as it is
        raise interrupted(start_epoch, start_step, saved=False)
    epoch = start_epoch
    while epoch <= max_epochs and not stopped_early:
        epoch_start = time.perf_counter()
        epoch_shuffle_state = shuffle.get_state()
        order = train_idx[torch.randperm(len(train_idx), generator=shuffle).numpy()]
        step = start_step if epoch == start_epoch else 0
        if step and partial is not None:
            loss_sum, second, n_rows = partial["loss_sum"], partial["second"], partial["n_rows"]
            epoch_start -= partial["seconds"]
        else:
            loss_sum, second, n_rows = 0.0, 0.0, 0
        model.train()
        for xb, yb, mb in _batches(
            objective, X, y, mask, order[step * batch_size :], batch_size
        ):  # fmt: skip
            xb, yb = xb.to(device), yb.to(device)
            mb = mb.to(device) if mb is not None else None
            optimizer.zero_grad(set_to_none=True)
            loss, batch_loss, batch_second = objective.batch_sums(model(xb), yb, mb)
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            loss_sum += batch_loss
            second += batch_second
            n_rows += len(yb)
            step += 1
            if stop.requested:  # the batch is done: save where the epoch stands, stop
                if checkpoint_path is not None:
                    sums = {"loss_sum": loss_sum, "second": second, "n_rows": n_rows,
                            "seconds": time.perf_counter() - epoch_start}  # fmt: skip
                    ckpt.save(checkpoint_path, snapshot(epoch, step, sums, epoch_shuffle_state))
                raise interrupted(epoch, step)
        train_loss, train_acc = objective.summarise(loss_sum, second, n_rows)
        val_loss, val_acc = evaluate(
            model, objective, X, y, mask, val_idx, batch_size, device
        )  # fmt: skip
        row = {
            "epoch": epoch,
            "train_loss": train_loss,
            "train_accuracy": train_acc,
            "val_loss": val_loss,
            "val_accuracy": val_acc,
            "seconds": time.perf_counter() - epoch_start,
        }
        curve.append(row)
        if _is_better(monitor, val_loss, val_acc, best):
            best, best_epoch, since_best = (val_loss, val_acc), epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            since_best += 1
        log(
            f"epoch {epoch:>4}/{max_epochs} train_loss={row['train_loss']:.4f} "
            f"train_acc={row['train_accuracy']:.3f} val_loss={val_loss:.4f} val_acc={val_acc:.3f} "
            f"best_epoch={best_epoch} ({row['seconds']:.2f}s)"
        )
        if since_best >= patience:
            stopped_early = True
            log(f"early stop: no better {monitor} for {patience} epochs (best epoch {best_epoch})")
        periodic = every and epoch % every == 0 and time.perf_counter() - last_save >= min_seconds
        if checkpoint_path is not None and (stop.requested or periodic):
            ckpt.save(checkpoint_path, snapshot(epoch + 1, 0, zero, shuffle.get_state()))
            last_save, last_saved = time.perf_counter(), (epoch + 1, 0)
        if stop.requested:
            raise interrupted(epoch + 1, 0)
        epoch += 1
    train_seconds = time.perf_counter() - started
    # Training is done: checkpoint that too, so a job stopped while testing (or reported
    # failed after writing its record, its outputs then removed by Snakemake) only tests
    # again on its next attempt.
    if checkpoint_path is not None and last_saved != (epoch, 0):
        ckpt.save(checkpoint_path, snapshot(epoch, 0, zero, shuffle.get_state()))

    model.load_state_dict(best_state)
    test_start = time.perf_counter()

    def score(rows):
        if stop.requested:  # stop before each test set; the record is not written
            raise interrupted(epoch, 0, where=f"testing (training done: {len(curve)} epochs)")
        return evaluate(model, objective, X, y, mask, rows, batch_size, device)

    tested = _test(objective, score, test_idx, test_sets, log)
    test_seconds = time.perf_counter() - test_start
    log(f"test (best epoch {best_epoch}): loss={tested['test_loss']:.4f} "
        f"error={tested['test_error']:.4f}")  # fmt: skip
    record = _write_run(
        spec, record_path, curve, objective,
        {
            **tested,
            "best_epoch": best_epoch,
            "best_val_loss": best[0],
            "best_val_accuracy": best[1] if objective.task == "classification" else None,
            "epochs_run": len(curve),
            "max_epochs": max_epochs,
            "stopped_early": stopped_early,
            "batch_size": batch_size,
            "n_train": len(train_idx),
            "n_val": len(val_idx),
            "n_test": len(test_idx),
            "train_seconds": train_seconds,
            "test_seconds": test_seconds,
            "params": n_params,
            "mmac": model_mmac,
            "mmac_full": model_mmac_full,
            "device": str(device),
            "device_name": torch.cuda.get_device_name() if device.type == "cuda" else None,
            "threads": torch.get_num_threads(),
        },
    )  # fmt: skip
    if stop.requested and checkpoint_path is not None:
        # Stopped while the record was being written: the job may still be reported as
        # failed (the signal reaches its shell too) and its outputs removed; the retry then
        # resumes from the finished training instead of starting over.
        log(f"{stop.signal_name} while the record was written: checkpoint {checkpoint_path} "
            "kept, so a retry of this job only tests again")  # fmt: skip
    else:
        ckpt.discard(checkpoint_path)
    return record


def _test(objective, score, test_idx, test_sets, log) -> dict:
    """The test fold's loss and error, and each separate test set's (fixed_test_sets:
    one per Δ or drop rate). ``score(rows) -> (loss, accuracy)``."""
    test_loss, test_acc = score(test_idx)
    per_test_set = {}
    for key, rows in test_sets.items():
        set_loss, set_acc = score(rows)
        per_test_set[key] = {
            "n": int(len(rows)),
            "loss": set_loss,
            "error": objective.error(set_loss, set_acc),
            **({"accuracy": set_acc} if objective.task == "classification" else {}),
        }
        log(f"test set {key}: loss={set_loss:.4f} error={per_test_set[key]['error']:.4f}")
    return {
        # classification: error = 1 - accuracy; regression: error = the test MSE
        "error_metric": "error" if objective.task == "classification" else "mse",
        "test_accuracy": test_acc if objective.task == "classification" else None,
        "test_error": objective.error(test_loss, test_acc),
        "test_loss": test_loss,
        "test_sets": per_test_set,
    }


def _write_run(spec, record_path: Path, curve: list[dict], objective, results: dict) -> dict:
    """Write the run's curve, then its record (both atomically): docs/contracts.md."""
    curve_path = record_path.with_name(record_path.stem + ".curve.csv")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CURVE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(curve)
    atomic_write_text(curve_path, buffer.getvalue())

    fold, settings = int(spec["fold"]), spec["settings"]
    record = {
        "benchmark": spec["benchmark"],
        "dataset": spec["dataset"],
        "model": spec["model"],
        "family": spec["model_params"]["family"],
        "fold": fold,
        "seed": int(settings.get("seed_base", 0)) + fold,
        "task": objective.task,
        **results,
        "model_params": spec["model_params"],
        "protocol": settings,
        "dataset_sha256": spec.get("dataset_sha256"),
        "code_digest": spec.get("code"),
        "curve_file": curve_path.name,
    }
    record.update(provenance())
    atomic_write_json(record_path, record)
    return record


def _run_estimator(
    spec, record_path, model, dataset, objective, splits, test_sets, seed, threads, log, stop
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
    tested = _test(objective, score, test_idx, test_sets, log)
    test_seconds = time.perf_counter() - test_start
    log(f"test: loss={tested['test_loss']:.4f} error={tested['test_error']:.4f}")
    curve = [
        {"epoch": 1, "train_loss": None, "train_accuracy": None, "val_loss": val_loss,
         "val_accuracy": val_acc, "seconds": train_seconds}
    ]  # fmt: skip
    stop.disarm()  # the record is being written: a signal now must not make the job fail
    return _write_run(
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
            "train_seconds": train_seconds,
            "test_seconds": test_seconds,
            "params": None,  # not applicable: see models.estimators.COMPLEXITY_PROXY
            "mmac": None,
            "mmac_full": None,
            "device": "cpu",
            "device_name": None,
            "threads": int(threads),
        },
    )  # fmt: skip
