"""What makes a run sound, checked before and while it trains.

Before the first epoch (`check_inputs`, `check_split`): the prepared dataset against its
own ``meta.json`` (integer labels in ``[0, n_classes)``, finite inputs and observed
targets, test rows disjoint from the training rows it declares) and a fold that leaves
rows to train and validate on. While training (`check_loss`): every batch's loss is
finite and, for a training batch, below `LossLimit`: ``max_loss_ratio`` times the loss of
a model that knows nothing (ln K for K classes, the uniform guess; the variance of the
training targets for regression, the mean's MSE). A loss of 1,000 ln K, for instance, means
that the model gives the true class a probability of K^-1000: a run that reaches it has
exploded, even if it is still finite, and would otherwise train on and write a record of
chance accuracy. A failed input check is a `DataError` (bad input, like any other); a
non-finite or exploded loss is a `DivergedError`. Either way no record is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ssmbench.data.errors import DataError
from ssmbench.data.store import SINGLE_SPLIT_SCHEMES


class DivergedError(Exception):
    """A training, validation or test loss was NaN or inf, or a training loss exploded past
    its `LossLimit`: the run stops, without a record."""


@dataclass(frozen=True)
class LossLimit:
    """The largest training loss (a batch's mean) a run may reach: ``ratio`` times
    ``baseline``, the loss of a model that knows nothing (``what`` says which)."""

    ratio: float
    baseline: float
    what: str

    @property
    def value(self) -> float:
        return self.ratio * self.baseline

    @classmethod
    def for_task(
        cls, ratio: float | None, task: str, n_classes: int | None, target_var: float | None
    ) -> LossLimit | None:
        """The limit of a run: ``ratio`` × ln K (classification; K at least 2) or ``ratio`` ×
        the variance of the training targets (regression; a variance of 0 counts as 1).
        None when ``ratio`` is None (protocol.max_loss_ratio: null, no limit)."""
        if ratio is None:
            return None
        if task == "classification":
            k = max(2, int(n_classes or 2))
            return cls(float(ratio), math.log(k), f"ln K for K = {k} classes")
        var = float(target_var) if target_var is not None and target_var > 0 else 1.0
        return cls(float(ratio), var, "the variance of the training targets")


def check_inputs(dataset, fold: int, rows=None) -> None:
    """The dataset's labels or targets, its inputs and its declared split, before any
    row is drawn from it. Raises `DataError` naming the file and the first bad value.

    ``rows`` (sorted row indices) limits the value checks to those rows, which are then
    the only ones read: a tuning trial checks its training and validation rows and never
    reads the fold's test rows."""
    meta = dataset.meta
    if meta.get("task", "classification") == "classification":
        _check_labels(dataset, rows)
    else:
        observed = "target_mask.npy" if dataset.target_mask is not None else None
        _check_finite(dataset, "y.npy", observed, rows)
    # Every model reads every value of X, unobserved ones (M.npy) too: NaN/inf anywhere in
    # it reaches the loss, so no mask excuses one.
    _check_finite(dataset, "X.npy", rows=rows)
    _check_declared_split(dataset, fold)


def _check_labels(dataset, rows=None) -> None:
    path, meta = dataset.path, dataset.meta
    n_classes = meta.get("n_classes")
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1:
        raise DataError(
            f"{path / 'meta.json'}: n_classes is {n_classes!r}; a classification dataset "
            f"needs a positive integer. Run the prepare step again."
        )
    y = dataset.y
    if y.dtype.kind not in "iu":
        raise DataError(
            f"{path / 'y.npy'}: dtype {y.dtype}; a classification dataset's labels are "
            f"integer class ids 0..{n_classes - 1}. Run the prepare step again."
        )
    # all rows: read a chunk at a time (the memory map's pages would stay in the RSS)
    chunks = dataset.label_chunks() if rows is None else [(0, np.asarray(y[rows]))]
    count, row, bad_label = 0, None, None
    for start, labels in chunks:
        bad = np.flatnonzero((labels < 0) | (labels >= n_classes))
        if bad.size and row is None:
            row = start + int(bad[0]) if rows is None else int(rows[bad[0]])
            bad_label = int(labels[bad[0]])
        count += bad.size
    if count:
        raise DataError(
            f"{path / 'y.npy'}: {count} label(s) outside [0, {n_classes}) (meta.json's "
            f"n_classes), the first {bad_label} at row {row}. Run the prepare step "
            f"again."
        )


#: rows read at a time when only some rows are checked
CHECK_ROWS_AT_ONCE = 4096


def _check_finite(dataset, fname: str, observed: str | None = None, rows=None) -> None:
    found = (
        dataset.first_non_finite(fname, observed)
        if rows is None
        else _first_non_finite_in_rows(dataset, fname, observed, rows)
    )
    if found is None:
        return
    count, first = found
    if fname == "X.npy":  # (N, C, L)
        where = f"row {first[0]}, channel {first[1]}, step {first[2]}"
    else:
        where = f"row {first[0]}" + (f", position {first[1:]} in it" if first[1:] else "")
    value = np.load(dataset.path / fname, mmap_mode="r", allow_pickle=False)[first]
    scope = f" at observed targets ({observed})" if observed else ""
    raise DataError(
        f"{dataset.path / fname}: {count} NaN/inf value(s){scope}, the first ({value}) at "
        f"{where}. The prepare step fills missing values; run it again."
    )


def _first_non_finite_in_rows(dataset, fname: str, observed: str | None, rows):
    """``dataset.first_non_finite`` over ``rows`` only, read through the memory map (so the
    other rows' bytes are not read)."""
    values = np.load(dataset.path / fname, mmap_mode="r", allow_pickle=False)
    mask = np.load(dataset.path / observed, mmap_mode="r", allow_pickle=False) if observed else None
    rows = np.asarray(rows, dtype=np.int64)
    count, first = 0, None
    for start in range(0, len(rows), CHECK_ROWS_AT_ONCE):
        chunk = rows[start : start + CHECK_ROWS_AT_ONCE]
        bad = ~np.isfinite(np.asarray(values[chunk]))
        if mask is not None:
            bad &= np.asarray(mask[chunk], dtype=bool)
        n_bad = int(np.count_nonzero(bad))
        if n_bad and first is None:
            at = np.unravel_index(int(np.argmax(bad)), bad.shape)
            first = (int(chunk[at[0]]), *(int(i) for i in at[1:]))
        count += n_bad
    return None if first is None else (count, first)


def _check_declared_split(dataset, fold: int) -> None:
    """The test fold against meta.json's ``n_train``/``n_test`` (single-split schemes:
    rows ``0..n_train-1`` are the training rows, as every preparer writes them) and its
    ``fold_sizes`` (given folds), where meta.json declares them."""
    meta, meta_path = dataset.meta, dataset.path / "meta.json"
    test = dataset.test_indices(fold)
    index_file = dataset.path / "test_indices_fold_0.txt"
    n_train, n_test = meta.get("n_train"), meta.get("n_test")
    if meta["fold_scheme"] in SINGLE_SPLIT_SCHEMES and isinstance(n_train, int):
        N = int(meta["N"])
        if isinstance(n_test, int) and n_train + n_test != N:
            raise DataError(
                f"{meta_path}: n_train {n_train} + n_test {n_test} != N {N}. Run the "
                f"prepare step again."
            )
        overlap = test[test < n_train]
        if overlap.size:
            raise DataError(
                f"{index_file}: {overlap.size} test row(s) among the {n_train} training "
                f"rows meta.json declares (rows 0..{n_train - 1}), the first row "
                f"{int(overlap[0])}. Run the prepare step again."
            )
        if len(test) != N - n_train:
            raise DataError(
                f"{index_file}: {len(test)} test rows but meta.json declares "
                f"N - n_train = {N - n_train}. Run the prepare step again."
            )
    sizes = meta.get("fold_sizes")
    if meta["fold_scheme"] == "given_folds" and isinstance(sizes, list) and fold < len(sizes):
        declared = sizes[fold].get("test") if isinstance(sizes[fold], dict) else None
        if isinstance(declared, int) and declared != len(test):
            raise DataError(
                f"{dataset.path / f'test_indices_fold_{fold}.txt'}: {len(test)} test rows "
                f"but meta.json's fold_sizes[{fold}] declares {declared}. Run the prepare "
                f"step again."
            )


def check_split(dataset, fold: int, train_idx, val_idx, val_fraction: float) -> None:
    """A fold that can be learnt and validated: rows to train on, at least as many as
    there are classes, and a non-empty validation set. Raises `DataError`."""
    where = f"{dataset.path}: fold {fold} with val_fraction {val_fraction}"
    if len(train_idx) == 0:
        raise DataError(f"{where} leaves no training rows. Lower protocol.val_fraction.")
    if len(val_idx) == 0:
        raise DataError(
            f"{where} leaves an empty validation set, so early stopping has nothing to "
            f"monitor. Raise protocol.val_fraction or use a dataset with more training rows."
        )
    n_classes = dataset.meta.get("n_classes")
    task = dataset.meta.get("task", "classification")
    if task == "classification" and isinstance(n_classes, int) and len(train_idx) < n_classes:
        raise DataError(
            f"{where} leaves {len(train_idx)} training rows for {n_classes} classes "
            f"(meta.json's n_classes): the model cannot see every class. Lower "
            f"protocol.val_fraction, or prepare the dataset again if its split is wrong."
        )


def classes_without_test_rows(dataset, fold: int, test_idx) -> list[str]:
    """A warning (one, or none) naming the classes of meta.json's ``n_classes`` that fold
    ``fold``'s test rows do not have: its test accuracy is then over the other classes.
    Kept as the data have it, and said in the log and the record (data_warnings)."""
    n_classes = dataset.meta.get("n_classes")
    if not isinstance(n_classes, int) or n_classes < 1 or len(test_idx) == 0:
        return []
    rows = np.sort(np.asarray(test_idx, dtype=np.int64))
    present = set(np.unique(np.asarray(dataset.y[rows])).tolist())
    names = dataset.meta.get("classes") or list(range(n_classes))
    absent = [names[i] for i in range(n_classes) if i not in present]
    if not absent:
        return []
    return [
        f"{dataset.path}: fold {fold}'s {len(rows)} test rows have no row of class(es) "
        f"{', '.join(map(repr, absent))} (of {n_classes}): its test accuracy is over the "
        "other classes. Kept as the data has it."
    ]


def check_loss(
    value: float,
    stage: str,
    batch: int,
    n_batches: int,
    inputs: torch.Tensor,
    model,
    limit: LossLimit | None = None,
) -> None:
    """Raise `DivergedError` when `value` (a batch's mean loss) is NaN or inf, saying where
    (`stage`, e.g. "training, epoch 3", and the batch) and whether its input batch or the
    model's weights held NaN/inf; or when it exceeds `limit` (training batches), saying
    the limit and what it is a multiple of."""
    if math.isfinite(value) and (limit is None or value <= limit.value):
        return
    where = f"{stage}, batch {batch + 1}/{n_batches}"
    advice = "lower protocol.lr or set protocol.grad_clip_norm"
    if math.isfinite(value):
        raise DivergedError(
            f"{where}: loss is {value:.4g}, above protocol.max_loss_ratio {limit.ratio:g} × "
            f"{limit.what} ({limit.baseline:.4g}) = {limit.value:.4g}: the model exploded; "
            f"{advice}. Stopped without a record."
        )
    bad_input = not bool(torch.isfinite(inputs).all())
    bad_weights = any(not bool(torch.isfinite(p).all()) for p in model.parameters())
    cause = (
        "the input batch holds NaN/inf"
        if bad_input
        else "the input batch is finite"
        + (", the model's weights hold NaN/inf" if bad_weights else "")
        + f": the model diverged; {advice}"
    )
    raise DivergedError(f"{where}: loss is {value} ({cause}). Stopped without a record.")
