"""How a run's rows are chosen and read: the fold's train/validation/test split, the
batch size, and batches read by index from a (memory-mapped) prepared dataset."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import numpy as np
import torch


def batch_size_for(settings: dict, n_train: int) -> int:
    """The paper's "batch 4–64 by dataset size": the power of two at or below
    batch_fraction * n_train, clipped to [batch_min, batch_max]. A fixed `batch_size`
    (e.g. MONSTER's 256) wins when given."""
    if settings.get("batch_size"):
        return int(settings["batch_size"])
    target = max(1.0, settings["batch_fraction"] * n_train)
    size = 2 ** int(math.floor(math.log2(target)))
    return int(min(settings["batch_max"], max(settings["batch_min"], size)))


class FoldSplit(NamedTuple):
    """A fold's rows (sorted, ``index_dtype(N)`` for a drawn split) and how its validation
    rows were drawn: ``given`` (the dataset's own), ``random`` (regression),
    ``stratified``, or the fallback's name (``shuffle``, ``per_class``) where no
    stratified split of that size exists."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    method: str


def split_fold(dataset, fold: int, val_fraction: float, seed: int, fallback: str = "per_class"):
    """The `FoldSplit` of a fold. Validation comes from the training part: the dataset's
    own validation rows when it has them (Physiome-ODE's 70/20/10), else a stratified draw
    (classification; `fallback` where no stratified split of that size exists:
    ``ssmbench.data.validation_split.split_rows``, the rows of the authors'
    ``StratifiedShuffleSplit`` in a few bytes a row) or a seeded random draw (regression)
    of ``val_fraction`` of the training rows, with `seed`."""
    from ssmbench.data.errors import DataError
    from ssmbench.data.validation_split import split_rows

    test_idx = dataset.test_indices(fold)
    given = dataset.given_validation_indices(fold)
    if given is not None:
        val_idx, method = given, "given"
        train_idx = np.setdiff1d(dataset.train_indices(fold), val_idx)
    elif dataset.meta.get("task", "classification") == "classification":
        train_idx, val_idx, method = split_rows(
            dataset.label_chunks, int(dataset.meta["N"]), val_fraction, seed, fallback,
            outside=test_idx,
        )  # fmt: skip
    else:
        pool = dataset.train_indices(fold)
        n_val = max(1, math.ceil(float(val_fraction) * len(pool)))
        if n_val >= len(pool):
            raise DataError(
                f"{dataset.path}: fold {fold} with val_fraction {val_fraction} leaves none "
                f"of its {len(pool)} training rows to train on. Lower protocol.val_fraction."
            )
        chosen = np.random.default_rng(seed).permutation(len(pool))[:n_val]
        val_idx, method = np.sort(pool[chosen]), "random"
        train_idx = np.setdiff1d(pool, val_idx)
    # The protocol's one hard rule: nothing of the test fold is used before testing.
    in_test = np.zeros(int(dataset.meta["N"]), dtype=bool)
    in_test[test_idx] = True
    if in_test[val_idx].any() or in_test[train_idx].any():
        raise AssertionError(f"fold {fold}: train/validation indices overlap the test fold")
    return FoldSplit(train_idx, val_idx, test_idx, method)


def split_indices(dataset, fold: int, val_fraction: float, seed: int, fallback: str = "per_class"):
    """(train, val, test) row indices of a fold: `split_fold` without its method."""
    return tuple(split_fold(dataset, fold, val_fraction, seed, fallback)[:3])


def iterate_batches(
    X: np.ndarray,
    y: np.ndarray,
    indices: np.ndarray,
    batch_size: int,
    generator: torch.Generator | None = None,
    *,
    target_dtype=np.int64,
    target_mask: np.ndarray | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
) -> Iterator[tuple]:
    """Batches ``(x, y)`` (or ``(x, y, target_mask)``), then, when ``inputs`` is given, a
    dict of its arrays' rows (a time-aware model's ``steps`` (N, L) float32, ``mask``
    (N, C, L) bool), read by index from X (a memory map is fine: only the batch is loaded).

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
        out = (xb, yb)
        if target_mask is not None:
            out += (torch.from_numpy(np.asarray(target_mask[batch], dtype=bool)),)
        if inputs is not None:
            out += ({name: _rows(values, batch) for name, values in inputs.items()},)
        yield out


def _rows(values: np.ndarray, batch: np.ndarray) -> torch.Tensor:
    """The batch's rows of an extra input: bool stays bool (a mask), the rest float32."""
    dtype = bool if values.dtype == np.bool_ else np.float32
    return torch.from_numpy(np.ascontiguousarray(values[batch], dtype=dtype))
