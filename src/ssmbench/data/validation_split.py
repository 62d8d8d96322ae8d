"""The validation rows a fold's training rows give up for early stopping, drawn in memory
that does not grow past a few bytes per row.

The MS4N authors draw them with scikit-learn's ``StratifiedShuffleSplit(n_splits=1,
test_size=0.1, random_state=1234)`` (scikit-learn 1.9, ``model_selection/_split.py``).
That class builds Python lists of the chosen positions (~40 bytes a row) and int64 arrays
of the whole label vector several times over: 72 bytes a row at its peak, 4.1 GB for a
fold of MONSTER's S2Agri (59 M rows; ``benchmarks/bench_row_indices.py``). `split_rows`
draws the same rows from the same random stream in a byte a row (a class code per row)
plus one class's positions at a time (5 bytes a row at its peak, measured), and returns
the two sorted sets as int32 (int64 beyond 2**31 rows):

1. ``n_val = ceil(fraction * n)`` rows to validation, the rest to training;
2. the per-class counts of each part by `approximate_mode` (scikit-learn's
   ``utils.extmath._approximate_mode``: floors, then the largest remainders, ties broken
   by ``RandomState.choice``), training first;
3. for each class in ascending label order, its rows in ascending order shuffled by
   ``RandomState.shuffle`` -- the same draws as ``permutation(count)``, which is
   ``shuffle(arange(count))`` -- the first ``n_train_i`` to training, the next
   ``n_val_i`` to validation.

scikit-learn's last step (each part shuffled once more) only orders rows within a part;
the protocol sorts them, so it is left out. ``tests/test_validation_split.py`` checks the
sets equal scikit-learn's. Where no stratified split of that size exists, the fallbacks
of params.yaml's ``protocol.val_split_fallback`` (`VALIDATION_FALLBACKS`).

What a fold's split is drawn with: its seed (`validation_seed`) and the settings a split
drawn once by the split rule records and is checked against (`split_settings`;
``ssmbench.train.fold_split``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from ssmbench.data.errors import DataError

#: What `split_rows` does when a stratified split of the asked size cannot exist
#: (params.yaml's ``protocol.val_split_fallback``).
VALIDATION_FALLBACKS = ("shuffle", "per_class", "error")
#: a row's code outside the pool (a test row), and once drawn for validation
OUTSIDE, VALIDATION = -1, -2
#: rows of codes scanned at a time (bounded temporaries: flatnonzero's int64 positions)
SCAN_ROWS = 1 << 22

LabelChunks = Callable[[], Iterable[tuple[int, np.ndarray]]]


def index_dtype(n_rows: int) -> type:
    """The smallest integer type that holds every row index of ``n_rows`` rows."""
    return np.int32 if n_rows <= np.iinfo(np.int32).max else np.int64


def array_chunks(y: np.ndarray, rows: int = SCAN_ROWS) -> LabelChunks:
    """`split_rows`'s label reader for an array already in memory."""
    return lambda: ((start, y[start : start + rows]) for start in range(0, len(y), rows))


def stratified_split_fits(n_rows: int, n_classes: int, fraction: float) -> bool:
    """Whether both parts of a ``fraction`` split of `n_rows` (sklearn's rounding) can hold
    one row of each of `n_classes` classes; what the catalog's counts can tell."""
    n_val = math.ceil(float(fraction) * n_rows)
    return n_val >= n_classes and n_rows - n_val >= n_classes


def _stratified_exists(counts: np.ndarray, fraction: float) -> bool:
    return bool(
        counts.min() >= 2 and stratified_split_fits(int(counts.sum()), counts.size, fraction)
    )


def stratified_split_exists(y_train_labels, fraction: float) -> bool:
    """Whether ``StratifiedShuffleSplit(test_size=fraction)`` can split these labels: every
    class has 2 samples or more and both parts can hold one of each class."""
    _, counts = np.unique(np.asarray(y_train_labels), return_counts=True)
    return _stratified_exists(counts, fraction)


def approximate_mode(class_counts: np.ndarray, n_draws: int, rng: np.random.RandomState):
    """scikit-learn's ``_approximate_mode``: per-class counts summing to ``n_draws``, in
    proportion to ``class_counts``; floors first, then one more to the classes of largest
    remainder, ties among them drawn with ``rng`` (the draws scikit-learn makes)."""
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need = int(n_draws - floored.sum())
    if need > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (tied,) = np.where(remainder == value)
            add_now = min(len(tied), need)
            floored[rng.choice(tied, size=add_now, replace=False)] += 1
            need -= add_now
            if need == 0:
                break
    return floored.astype(int)


def _labels_as_codes(read: LabelChunks, n_rows: int) -> np.ndarray | None:
    """The labels themselves as codes, read once, when every one is an integer in
    [0, 2**15 - 1) (class ids: the common case); None otherwise. int8 (a byte a row) while
    every label is below 128, widened once to int16 at the first that is not."""
    codes = np.empty(n_rows, dtype=np.int8)
    for start, chunk in read():
        if chunk.dtype.kind not in "iu" or (
            chunk.size and (chunk.min() < 0 or chunk.max() >= np.iinfo(np.int16).max)
        ):
            return None
        if chunk.size and chunk.max() > np.iinfo(codes.dtype).max:
            codes = codes.astype(np.int16)
        codes[start : start + len(chunk)] = chunk
    return codes


def _codes(read: LabelChunks, n_rows: int, outside) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, classes, counts): each row's class as an index into the pool's ascending
    labels (`OUTSIDE` for the rows in ``outside``), and the pool's rows per class."""
    codes = _labels_as_codes(read, n_rows)
    if codes is not None:  # every label 0..max a candidate class; absent ones dropped below
        classes = np.arange(int(codes.max(initial=-1)) + 1)
    else:  # any other labels: their distinct values first (one chunk sorted at a time)
        found: set = set()
        for _, chunk in read():
            found.update(np.unique(chunk).tolist())
        classes = np.array(sorted(found))
        codes = np.empty(n_rows, dtype=np.min_scalar_type(min(-2, -classes.size)))
        for start, chunk in read():
            codes[start : start + len(chunk)] = np.searchsorted(classes, chunk)
    if outside is not None:
        codes[outside] = OUTSIDE
    counts = np.zeros(classes.size + 1, dtype=np.int64)
    for start in range(0, n_rows, SCAN_ROWS):
        part = codes[start : start + SCAN_ROWS].astype(np.intp)  # + 1 overflows int8's 127
        counts += np.bincount(part + 1, minlength=classes.size + 1)
    counts = counts[1:]
    present = counts > 0
    if not present.all():  # labels of no pool row (test rows only, or none): not classes
        remap = np.cumsum(present) - 1
        for start in range(0, n_rows, SCAN_ROWS):
            part = codes[start : start + SCAN_ROWS]
            inside = part >= 0
            part[inside] = remap[part[inside]]
        classes, counts = classes[present], counts[present]
    return codes, classes, counts


def rows_where(codes: np.ndarray, test: Callable[[np.ndarray], np.ndarray], count: int):
    """Ascending positions of ``codes`` where ``test`` holds (``count`` of them), built a
    chunk at a time in `index_dtype` (no N-long int64 temporary)."""
    out = np.empty(count, dtype=index_dtype(len(codes)))
    at = 0
    for start in range(0, len(codes), SCAN_ROWS):
        found = np.flatnonzero(test(codes[start : start + SCAN_ROWS]))
        out[at : at + found.size] = found + start
        at += found.size
    if at != count:
        raise AssertionError(f"expected {count} rows, found {at}")
    return out


def _validation_rows_stratified(codes, counts, n_val: int, seed: int) -> int:
    rng = np.random.RandomState(seed)
    n = int(counts.sum())
    n_train_i = approximate_mode(counts, n - n_val, rng)
    n_val_i = approximate_mode(counts - n_train_i, n_val, rng)
    for i, count in enumerate(counts):
        members = rows_where(codes, lambda c, i=i: c == i, int(count))
        rng.shuffle(members)  # the draws of rng.permutation(count), applied to the rows
        codes[members[n_train_i[i] : n_train_i[i] + n_val_i[i]]] = VALIDATION
    return int(n_val_i.sum())


def _validation_rows_per_class(codes, counts, fraction: float, seed: int) -> int:
    rng = np.random.default_rng(seed)
    drawn = 0
    for i, count in enumerate(counts):
        if count < 2:
            continue
        members = rows_where(codes, lambda c, i=i: c == i, int(count))
        k = min(int(count) - 1, max(1, round(float(fraction) * int(count))))
        codes[rng.choice(members, size=k, replace=False)] = VALIDATION
        drawn += k
    if not drawn:
        raise DataError(
            f"validation split: every class has a single training sample ({int(counts.sum())} "
            f"samples), so no stratified validation set exists. Use a dataset with more "
            f"training data."
        )
    return drawn


def _validation_rows_shuffled(codes, counts, n_val: int, seed: int) -> int:
    pool = rows_where(codes, lambda c: c >= 0, int(counts.sum()))
    np.random.RandomState(seed).shuffle(pool)  # ShuffleSplit's rng.permutation(n)
    codes[pool[:n_val]] = VALIDATION
    return n_val


def split_rows(
    read: LabelChunks,
    n_rows: int,
    fraction: float,
    seed: int,
    fallback: str = "per_class",
    outside: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """(training rows, validation rows, method) of the labels ``read`` yields, as
    ``(first row, labels)`` chunks of ``n_rows`` labels in all; the rows in ``outside``
    (the fold's test rows) are never drawn. Both sets sorted, in `index_dtype`.

    ``method`` is ``stratified`` where a stratified split exists (every class has 2 rows
    or more and both parts can hold one row of each class): the rows of scikit-learn's
    ``StratifiedShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)`` on the
    pool's labels. Otherwise ``fallback``:

    * ``shuffle``: the rows of ``ShuffleSplit`` with the same size and seed, not
      stratified: the authors' 10% kept, stratification dropped.
    * ``per_class``: a per-class draw (``default_rng(seed).choice``): a class with one row
      goes wholly to training; a class with ``n >= 2`` rows gives
      ``min(n - 1, max(1, round(fraction * n)))`` to validation, so every such class is
      validated (more than ``fraction`` of the rows: 17% of Handwriting's).
    * ``error``: a `DataError` naming the counts, as the authors' code would stop.
    """
    if not 0.0 < float(fraction) < 1.0:
        raise DataError(
            f"validation split: fraction {fraction} must be in (0, 1). Fix "
            f"protocol.val_fraction in params.yaml."
        )
    if fallback not in VALIDATION_FALLBACKS:
        raise DataError(
            f"validation split: fallback {fallback!r} is not one of "
            f"{', '.join(VALIDATION_FALLBACKS)}. Fix protocol.val_split_fallback in params.yaml."
        )
    codes, classes, counts = _codes(read, int(n_rows), outside)
    n = int(counts.sum())
    if n == 0:
        raise DataError(
            f"validation split: none of the {int(n_rows)} rows is a training row (every row "
            f"is a test row of the fold, or there are none), so there is no row to train on "
            f"or to draw validation rows from. Check the fold's test_indices_fold_<k>.txt in "
            f"the prepared folder: it should list only the fold's test rows; run the prepare "
            f"step again."
        )
    n_val = math.ceil(float(fraction) * n)  # sklearn's rounding for a float test_size
    if _stratified_exists(counts, fraction):
        method = "stratified"
        n_validation = _validation_rows_stratified(codes, counts, n_val, int(seed))
    elif fallback == "error":
        why = (
            f"its smallest class has {int(counts.min())} sample(s)"
            if counts.min() < 2
            else f"{fraction:g} of {n} rows is {n_val} rows, fewer than the {classes.size} classes"
            if n_val < classes.size
            else f"{n - n_val} rows would be left to train on for {classes.size} classes"
        )
        raise DataError(
            f"validation split: no stratified split of {fraction:g} exists: {why}. Set "
            f"protocol.val_split_fallback to shuffle or per_class in params.yaml."
        )
    elif fallback == "shuffle":
        if n_val >= n:
            raise DataError(
                f"validation split: {fraction:g} of {n} rows leaves none to train on. Lower "
                f"protocol.val_fraction."
            )
        method = "shuffle"
        n_validation = _validation_rows_shuffled(codes, counts, n_val, int(seed))
    else:
        method = "per_class"
        n_validation = _validation_rows_per_class(codes, counts, fraction, int(seed))
    val = rows_where(codes, lambda c: c == VALIDATION, n_validation)
    train = rows_where(codes, lambda c: c >= 0, n - n_validation)
    return train, val, method


def stratified_validation_split(
    y_train_labels, fraction: float, seed: int, fallback: str = "per_class"
) -> tuple[np.ndarray, np.ndarray]:
    """`split_rows` on labels in memory: sorted int64 positions *into* ``y_train_labels``
    (map them through the fold's ``train_indices`` to get dataset rows), (train,
    validation). The test rows never enter."""
    y = np.asarray(y_train_labels)
    if y.ndim != 1 or y.size == 0:
        raise DataError(f"validation split: expected a non-empty 1-D label array, got {y.shape}.")
    train, val, _ = split_rows(array_chunks(y), y.size, fraction, seed, fallback)
    return train.astype(np.int64), val.astype(np.int64)


# --- what a fold's split is drawn with ----------------------------------------------


def validation_seed(settings: dict, run_seed: int) -> int:
    """The seed of a run's validation split: ``val_split_seed`` from params.yaml (the MS4N
    authors' 1234: one split for every run of a fold) or, with ``run``, the run's own seed
    (a split re-drawn per seeded run)."""
    chosen = settings["val_split_seed"]
    return int(run_seed) if chosen == "run" else int(chosen)


def split_settings(settings: dict, fold: int) -> dict:
    """What a fold's split is drawn with: the fold, the validation fraction, the split's
    seed (``protocol.val_split_seed``, or the run's seed) and the fallback."""
    run_seed = int(settings["seed_base"]) + int(fold)
    return {
        "fold": int(fold),
        "val_fraction": float(settings["val_fraction"]),
        "seed": validation_seed(settings, run_seed),
        "fallback": settings["val_split_fallback"],
    }
