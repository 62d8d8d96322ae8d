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


def iterate_batches(
    X: np.ndarray,
    y: np.ndarray,
    indices: np.ndarray,
    batch_size: int,
    generator: torch.Generator | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Batches read by index from X (a memory map is fine: only the batch is loaded).

    Shuffled with `generator` when given. Indices within a batch are sorted so a memory
    map is read front to back; the order inside a batch does not change the gradient.
    """
    order = indices
    if generator is not None:
        order = indices[torch.randperm(len(indices), generator=generator).numpy()]
    for start in range(0, len(order), batch_size):
        batch = np.sort(order[start : start + batch_size])
        xb = torch.from_numpy(np.ascontiguousarray(X[batch], dtype=np.float32))
        yb = torch.from_numpy(np.asarray(y[batch], dtype=np.int64))
        yield xb, yb


@torch.no_grad()
def evaluate(model, X, y, indices, batch_size, device) -> tuple[float, float]:
    """Mean cross-entropy and accuracy over `indices` (eval mode)."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    for xb, yb in iterate_batches(X, y, indices, batch_size):
        xb, yb = xb.to(device), yb.to(device)
        logits = model(xb)
        total_loss += F.cross_entropy(logits, yb, reduction="sum").item()
        correct += (logits.argmax(dim=1) == yb).sum().item()
        count += len(yb)
    return total_loss / count, correct / count


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
    """(train, val, test) row indices of a fold. Validation comes from the training part."""
    from ssmbench.data.store import stratified_validation_split

    test_idx = np.asarray(dataset.test_indices(fold), dtype=np.int64)
    pool = np.asarray(dataset.train_indices(fold), dtype=np.int64)
    y_pool = np.asarray(dataset.y[pool])
    tr_local, val_local = stratified_validation_split(y_pool, val_fraction, seed)
    train_idx, val_idx = pool[np.asarray(tr_local)], pool[np.asarray(val_local)]
    # The protocol's one hard rule: nothing of the test fold is used before testing.
    if np.intersect1d(val_idx, test_idx).size or np.intersect1d(train_idx, test_idx).size:
        raise AssertionError(f"fold {fold}: train/validation indices overlap the test fold")
    return train_idx, val_idx, test_idx


def run_job(
    spec: dict,
    record_path: str | Path,
    threads: int = 1,
    log: Callable[[str], None] = print,
) -> dict:
    """Train one model on one fold of one dataset; write its curve and record."""
    from ssmbench.complexity import count_params, mmac
    from ssmbench.data.store import PreparedDataset
    from ssmbench.models import build_model

    record_path = Path(record_path)
    settings = spec["settings"]
    fold = int(spec["fold"])
    seed = int(settings.get("seed_base", 0)) + fold
    torch.set_num_threads(max(1, int(threads)))
    seed_everything(seed, settings.get("deterministic", True))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    dataset = PreparedDataset(spec["prepared_dir"])
    meta = dataset.meta
    if meta.get("task", "classification") != "classification":
        raise NotImplementedError(
            f"{spec['dataset']}: task {meta.get('task')!r} has no training protocol yet "
            "(regression arrives with the TIDES tasks)"
        )
    X, y = dataset.X, dataset.y
    train_idx, val_idx, test_idx = split_indices(dataset, fold, settings["val_fraction"], seed)
    batch_size = batch_size_for(settings, len(train_idx))
    n_channels, length, n_classes = int(meta["C"]), int(meta["L"]), int(meta["n_classes"])

    model = build_model(spec["model"], n_channels, n_classes, length, spec["model_params"])
    n_params = count_params(model)
    model_mmac = mmac(copy.deepcopy(model), n_channels, length)
    model.to(device)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=settings["lr"], weight_decay=settings.get("weight_decay", 0.0)
    )
    shuffle = torch.Generator().manual_seed(seed)
    max_epochs = int(settings["max_epochs"])
    patience = int(settings["early_stopping_patience"])
    monitor = settings.get("monitor", "val_loss")
    clip = settings.get("grad_clip_norm")

    log(
        f"[{spec['benchmark']}/{spec['dataset']}/{spec['model']}/fold{fold}] seed={seed} "
        f"device={device} train={len(train_idx)} val={len(val_idx)} test={len(test_idx)} "
        f"batch={batch_size} params={n_params} MMac={model_mmac:.3f} max_epochs={max_epochs}"
    )
    curve: list[dict] = []
    best: tuple[float, float] | None = None
    best_state, best_epoch, since_best, stopped_early = None, 0, 0, False
    started = time.perf_counter()
    for epoch in range(1, max_epochs + 1):
        epoch_start = time.perf_counter()
        model.train()
        total_loss, correct, count = 0.0, 0, 0
        for xb, yb in iterate_batches(X, y, train_idx, batch_size, generator=shuffle):
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad(set_to_none=True)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            total_loss += loss.item() * len(yb)
            correct += (logits.argmax(dim=1) == yb).sum().item()
            count += len(yb)
        val_loss, val_acc = evaluate(model, X, y, val_idx, batch_size, device)
        row = {
            "epoch": epoch,
            "train_loss": total_loss / count,
            "train_accuracy": correct / count,
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
            break
    train_seconds = time.perf_counter() - started

    model.load_state_dict(best_state)
    test_start = time.perf_counter()
    test_loss, test_acc = evaluate(model, X, y, test_idx, batch_size, device)
    test_seconds = time.perf_counter() - test_start
    log(f"test (best epoch {best_epoch}): loss={test_loss:.4f} accuracy={test_acc:.4f}")

    curve_path = record_path.with_name(record_path.stem + ".curve.csv")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CURVE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(curve)
    atomic_write_text(curve_path, buffer.getvalue())

    record = {
        "benchmark": spec["benchmark"],
        "dataset": spec["dataset"],
        "model": spec["model"],
        "family": spec["model_params"]["family"],
        "fold": fold,
        "seed": seed,
        "task": "classification",
        "test_accuracy": test_acc,
        "test_error": 1.0 - test_acc,
        "test_loss": test_loss,
        "best_epoch": best_epoch,
        "best_val_loss": best[0],
        "best_val_accuracy": best[1],
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
        "device": str(device),
        "device_name": torch.cuda.get_device_name() if device.type == "cuda" else None,
        "threads": torch.get_num_threads(),
        "model_params": spec["model_params"],
        "protocol": settings,
        "dataset_sha256": meta.get("raw_files"),
        "code_digest": spec.get("code"),
        "curve_file": curve_path.name,
    }
    record.update(provenance())
    atomic_write_json(record_path, record)
    return record
