"""The prepared-dataset format (``docs/contracts.md``): open it, get its folds and splits.

``PreparedDataset(path)`` opens ``data/prepared/{benchmark}/{dataset}/``; ``X`` is
memory-mapped (``np.load(mmap_mode="r", allow_pickle=False)``) so a large dataset never has
to fit in memory. Fold handling hides the two schemes:

* ``official_split`` (UEA): one official train/test split in ``test_indices_fold_0.txt``;
  fold ``k`` (any ``k >= 0``) is that split, trained with seed ``k``.
* ``given_folds`` (MONSTER): ``test_indices_fold_{k}.txt`` for ``k < n_folds``.
* ``fixed_test_sets`` (TIDES tasks): like ``official_split`` (fold 0 holds every test row);
  ``meta["test_sets"]`` names the index file of each separate test set (one per Δ or
  drop rate).
* ``per_fold`` (the official Physiome-ODE archive, whose folds are independent re-splits
  with their own noise and masks): the folder holds only a top ``meta.json`` (``n_folds``,
  ``C``, ``task``, ``N`` and ``L`` the largest fold's, ``folds``: each fold's own sizes) and
  one subfolder ``fold{k}/`` per fold, each a complete prepared folder of scheme
  ``official_split`` (``n_folds`` 1, ``fold`` k) with its own arrays. :func:`open_fold`
  opens fold k's subfolder (any other folder as it is); ``PreparedDataset`` refuses the
  top folder. Inside ``fold{k}/``, ``test_indices(k)`` is that fold's own test split.

``ssmbench.data.validation_split`` draws the early-stopping validation set from the
*training* rows of a fold only.
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.npy_chunks import read_npy_header
from ssmbench.data.validation_split import index_dtype, rows_where

REQUIRED_FILES = ("X.npy", "y.npy", "meta.json")
REQUIRED_META = ("N", "C", "L", "task", "fold_scheme", "n_folds")
#: one prepared folder per fold (``fold{k}/``) under a top meta.json: see open_fold
PER_FOLD = "per_fold"
FOLD_SCHEMES = ("official_split", "given_folds", "fixed_test_sets", PER_FOLD)
#: schemes with a single test split that every fold k reuses (fold k = seed k)
SINGLE_SPLIT_SCHEMES = ("official_split", "fixed_test_sets")
#: bytes of rows read at a time when a whole array is checked (first_non_finite)
SCAN_CHUNK_BYTES = 64 << 20
#: bytes of an index file's text parsed at a time (_read_indices)
INDEX_TEXT_BYTES = 16 << 20


class PreparedDataset:
    """A prepared dataset folder, checked on opening.

    Raises :class:`DataError` when a file is missing (naming which), ``meta.json`` lacks a
    key, or the shapes of ``X.npy`` / ``y.npy`` disagree with ``meta.json``.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_dir():
            raise DataError(
                f"{self.path}: no prepared dataset folder. Run the prepare step for it."
            )
        if _scheme_of(self.path) == PER_FOLD:  # its arrays are in the fold subfolders
            raise DataError(
                f"{self.path}: a per-fold prepared dataset (fold_scheme per_fold): each fold "
                f"has its own arrays in {self.path}/fold<k>/. Open one fold with "
                f"ssmbench.data.store.open_fold(path, fold)."
            )
        missing = [f for f in REQUIRED_FILES if not (self.path / f).is_file()]
        if missing:
            raise DataError(
                f"{self.path}: incomplete prepared dataset, missing {', '.join(missing)}. "
                f"Delete the folder and run the prepare step again."
            )
        try:
            self.meta: dict = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
        except ValueError as e:
            raise DataError(
                f"{self.path / 'meta.json'}: not valid JSON ({e}). Run the prepare step again."
            ) from e
        lacking = [k for k in REQUIRED_META if k not in self.meta]
        if lacking:
            raise DataError(
                f"{self.path / 'meta.json'}: missing key(s) {lacking}. It was written by "
                f"another version; run the prepare step again."
            )
        if self.meta["fold_scheme"] not in FOLD_SCHEMES:
            raise DataError(
                f"{self.path / 'meta.json'}: fold_scheme {self.meta['fold_scheme']!r} is not "
                f"one of {FOLD_SCHEMES}. Run the prepare step again."
            )
        n_index_files = 1 if self.meta["fold_scheme"] in SINGLE_SPLIT_SCHEMES else self.n_folds
        missing = [
            f"test_indices_fold_{k}.txt"
            for k in range(n_index_files)
            if not (self.path / f"test_indices_fold_{k}.txt").is_file()
        ]
        if missing:
            raise DataError(
                f"{self.path}: incomplete prepared dataset, missing {', '.join(missing)}. "
                f"Delete the folder and run the prepare step again."
            )

        X, y = self.X, self.y
        N, C, L = (int(self.meta[k]) for k in ("N", "C", "L"))
        if X.shape != (N, C, L):
            raise DataError(
                f"{self.path / 'X.npy'}: shape {X.shape} but meta.json says (N, C, L) = "
                f"{(N, C, L)}. The folder is inconsistent; run the prepare step again."
            )
        if X.dtype != np.float32:
            raise DataError(
                f"{self.path / 'X.npy'}: dtype {X.dtype}, expected float32. Run the "
                f"prepare step again."
            )
        # Classification: one label per row; regression may have a target per step (N, L).
        if (
            y.ndim == 0
            or y.shape[0] != N
            or (self.meta["task"] == "classification" and y.ndim != 1)
        ):
            raise DataError(
                f"{self.path / 'y.npy'}: shape {y.shape} but meta.json says N = {N} "
                f"({self.meta['task']}). The folder is inconsistent; run the prepare step again."
            )
        if self.meta["task"] == "classification":
            self._check_classes()
        self._test_cache: dict[int, np.ndarray] = {}
        self.padding_rows: np.ndarray | None = None  # rows with no observed value (M.npy)
        self.step_warning: str | None = None  # of `steps`: time steps far out of the rest

    def _check_classes(self) -> None:
        """meta.json's ``n_classes`` against its ``classes`` and the labels of y.npy: every
        class id ``0..n_classes-1`` must occur. A model's output has ``n_classes`` units,
        so a class no row holds would change the model and its chance level unnoticed;
        no preparation writes one (each counts the classes of the labels it reads).
        Labels that are not integers in ``[0, n_classes)`` are left to the run's input
        check (``ssmbench.train.checks``), which names the first."""
        where = self.path / "meta.json"
        K, classes = self.meta.get("n_classes"), self.meta.get("classes")
        if isinstance(K, bool) or not isinstance(K, int) or K < 1:
            raise DataError(
                f"{where}: n_classes is {K!r}; a classification dataset needs a positive "
                f"integer. Run the prepare step again."
            )
        if isinstance(classes, list) and len(classes) != K:
            raise DataError(
                f"{where}: n_classes is {K} but 'classes' lists {len(classes)} class names "
                f"({classes}); the two must agree. Run the prepare step again."
            )
        if self.y.dtype.kind not in "iu":
            return
        counts = np.zeros(K, dtype=np.int64)
        for _, labels in self.label_chunks():
            if labels.size and (labels.min() < 0 or labels.max() >= K):
                return
            counts += np.bincount(labels.astype(np.intp), minlength=K)
        absent = np.flatnonzero(counts == 0).tolist()
        if absent:
            names = f" ({[classes[i] for i in absent]})" if isinstance(classes, list) else ""
            raise DataError(
                f"{where}: n_classes is {K} but {self.path / 'y.npy'} holds no row of class "
                f"id(s) {absent}{names}: only {K - len(absent)} of the {K} classes occur, and "
                f"a model would get a {K}-way output. n_classes counts the classes of the "
                f"labels (ids 0..{K - 1}, each present); run the prepare step again, which "
                f"sets it from the labels it reads."
            )

    def __repr__(self) -> str:
        m = self.meta
        return (
            f"PreparedDataset({str(self.path)!r}, N={m['N']}, C={m['C']}, L={m['L']}, "
            f"{m['fold_scheme']})"
        )

    # ------------------------------------------------------------------ arrays
    def _load(self, fname: str) -> np.ndarray:
        try:
            return np.load(self.path / fname, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as e:
            raise DataError(
                f"{self.path / fname}: cannot be read as a .npy array ({e}). Run the "
                f"prepare step again."
            ) from e

    @property
    def X(self) -> np.ndarray:
        """float32 ``(N, C, L)``, memory-mapped read-only, with random-access advice.

        Training reads rows in shuffled batches. With the kernel's default read-ahead
        (8 MB on the virtual disk of docs/benchmarks.md) every row fetched pulls in ~40x its
        size, which then sits in the process's RSS (benchmarks/bench_scale.py: 990 MiB of
        file pages after 50 batches of a 6 GB X). MADV_RANDOM reads what is asked (1.3x).
        """
        X = self._load("X.npy")
        mapping = getattr(X, "_mmap", None)  # numpy's memmap keeps its mmap.mmap here
        if mapping is not None and hasattr(mmap, "MADV_RANDOM"):
            mapping.madvise(mmap.MADV_RANDOM)
        return X

    @property
    def y(self) -> np.ndarray:
        """int64 class ids (classification) or float targets, memory-mapped read-only."""
        return self._load("y.npy")

    @property
    def n_folds(self) -> int:
        return int(self.meta["n_folds"])

    # ------------------------------------------------------------------ folds
    def test_indices(self, fold: int) -> np.ndarray:
        """Sorted row indices of fold ``fold``'s test set, in ``index_dtype(N)`` (int32
        below 2**31 rows)."""
        if isinstance(fold, bool) or not isinstance(fold, int | np.integer) or fold < 0:
            raise DataError(f"{self.path}: fold must be an integer >= 0, got {fold!r}.")
        fold = int(fold)
        if self.meta["fold_scheme"] in SINGLE_SPLIT_SCHEMES:
            k = 0  # one test split; fold k = that split trained with seed k
        else:
            if fold >= self.n_folds:
                raise DataError(
                    f"{self.path}: fold {fold} requested but the dataset has folds "
                    f"0..{self.n_folds - 1}. Fix the suite's folds in params.yaml."
                )
            k = fold
        if k not in self._test_cache:
            test = self._read_indices(k)
            N = int(self.meta["N"])
            if len(test) == N:
                raise DataError(
                    f"{self.path / f'test_indices_fold_{k}.txt'}: the test rows of fold {fold} "
                    f"cover all {N} rows of the dataset, so no row is left: there is no row to "
                    f"train on or to draw validation rows from. The file lists only the fold's "
                    f"test rows (UEA: the TEST file's rows, after the TRAIN rows); this one "
                    f"belongs to another dataset or was written wrong. Run the prepare step "
                    f"again (fetch the dataset again first if its raw copy holds this file)."
                )
            self._test_cache[k] = test
        return self._test_cache[k]

    def train_indices(self, fold: int) -> np.ndarray:
        """Sorted row indices not in ``test_indices(fold)`` (validation included), in
        ``index_dtype(N)``."""
        test = self.test_indices(fold)
        keep = np.ones(int(self.meta["N"]), dtype=bool)
        keep[test] = False
        return rows_where(keep, lambda part: part, len(keep) - len(test))

    def given_validation_indices(self, fold: int) -> np.ndarray | None:
        """The dataset's own validation rows of ``fold`` (``val_indices_fold_{k}.txt``, e.g.
        Physiome-ODE's 70/20/10 splits), or None when it has none and the protocol draws
        its own from the training rows. Checked to be disjoint from the test fold."""
        k = 0 if self.meta["fold_scheme"] in SINGLE_SPLIT_SCHEMES else int(fold)
        name = f"val_indices_fold_{k}.txt"
        if not (self.path / name).is_file():
            return None
        val = self._read_indices(k, name)
        if np.intersect1d(val, self.test_indices(fold)).size:
            raise DataError(
                f"{self.path / name}: validation rows overlap the test fold. Run the "
                f"prepare step again."
            )
        return val

    def test_sets(self, fold: int) -> dict[str, np.ndarray]:
        """The separate test sets of a ``fixed_test_sets`` dataset (``meta["test_sets"]``:
        one per Δ or drop rate), as sorted row indices; ``{}`` for other schemes."""
        if self.meta["fold_scheme"] != "fixed_test_sets":
            return {}
        fold_rows = set(self.test_indices(fold).tolist())
        sets = {}
        for key, fname in (self.meta.get("test_sets") or {}).items():
            rows = self._read_indices(0, fname)
            if not set(rows.tolist()) <= fold_rows:
                raise DataError(
                    f"{self.path / fname}: test set {key!r} has rows outside "
                    f"test_indices_fold_0.txt. Run the prepare step again."
                )
            sets[key] = rows
        return sets

    @property
    def target_mask(self) -> np.ndarray | None:
        """bool, y's shape: which regression targets are observed (``target_mask.npy``,
        e.g. Physiome-ODE's forecast points); None when every target counts."""
        if not (self.path / "target_mask.npy").is_file():
            return None
        mask = self._load("target_mask.npy")
        if mask.shape != self.y.shape or mask.dtype != np.bool_:
            raise DataError(
                f"{self.path / 'target_mask.npy'}: shape {mask.shape} dtype {mask.dtype}, "
                f"expected bool {self.y.shape} (y.npy's). Run the prepare step again."
            )
        return mask

    #: Where ``observed`` came from: the mask file, or every value (no M.npy).
    OBSERVED_FROM_MASK = "M.npy"
    OBSERVED_ALL = "all (no M.npy: every value observed)"

    def observed(self) -> tuple[np.ndarray, str]:
        """The observation mask M, bool (N, C, L) (``M.npy``, memory-mapped: True where a
        value was observed, False where it is missing or padding), and where it came from;
        without ``M.npy`` every value counts as observed (``OBSERVED_ALL``). Rows with no
        observed value are kept and said (`padding_warning`)."""
        N, C, L = (int(self.meta[k]) for k in ("N", "C", "L"))
        if not (self.path / "M.npy").is_file():
            return np.ones((N, C, L), dtype=bool), self.OBSERVED_ALL
        mask = self._load("M.npy")
        self._check_mask(mask.shape, mask.dtype)
        self._find_padding_rows(self._observed_steps())
        return mask, self.OBSERVED_FROM_MASK

    def _find_padding_rows(self, observed: np.ndarray | None) -> None:
        """Keep the rows of ``observed`` (bool (N, L), `_observed_steps`) with no observed
        step, for `padding_warning`; nothing without ``M.npy``."""
        if observed is not None:
            self.padding_rows = np.flatnonzero(~observed.any(axis=1))

    def padding_warning(self) -> str | None:
        """What to say of the rows with no observed value in ``M.npy`` (None: there are
        none, or no M.npy), whatever inputs a model reads: a model of the values alone is
        given padding for them too. Read once (`observed` and `steps` find them as they
        read the mask). A warning, not an error: such rows are the data as their
        benchmark samples it (Physiome-ODE's observation sampling can leave a row's
        observation window empty; a high drop rate can drop all of a short row), and a
        model given them sees padding only; the run records it (data_warnings)."""
        if self.padding_rows is None:
            self._find_padding_rows(self._observed_steps())
        empty = self.padding_rows
        if empty is None or not empty.size:
            return None
        return (
            f"{self.path / 'M.npy'}: {self.meta.get('name', self.path.name)} has "
            f"{empty.size} of {int(self.meta['N'])} row(s) with no observed value (rows "
            f"{_some(empty)}): a model is given nothing but padding for them, and their "
            f"labels or targets are learnt and scored from that. Kept as the data has them."
        )

    def _observed_steps(self) -> np.ndarray | None:
        """bool (N, L): the steps of each row with an observed value in one channel or more
        (``M.npy``, read a chunk of rows at a time); None without ``M.npy``."""
        if not (self.path / "M.npy").is_file():
            return None
        shape, _, dtype, _ = read_npy_header(self.path / "M.npy")
        self._check_mask(shape, dtype)
        N, L = int(self.meta["N"]), int(self.meta["L"])
        out = np.empty((N, L), dtype=bool)
        for start, part in _row_chunks(self.path / "M.npy", SCAN_CHUNK_BYTES):
            out[start : start + len(part)] = part.any(axis=1)
        return out

    def _check_mask(self, shape: tuple, dtype: np.dtype) -> None:
        """``M.npy``'s shape and dtype (from its header) against meta.json's (N, C, L):
        checked before any of it is read, whichever reader comes first."""
        N, C, L = (int(self.meta[k]) for k in ("N", "C", "L"))
        if tuple(shape) != (N, C, L) or dtype != np.bool_:
            raise DataError(
                f"{self.path / 'M.npy'}: shape {tuple(shape)} dtype {dtype}, expected bool "
                f"(N, C, L) = {(N, C, L)}, X.npy's. Run the prepare step again."
            )

    #: Where ``steps`` came from: the timestamps, or unit steps for regular data.
    STEPS_FROM_TIMESTAMPS = "T.npy"
    STEPS_UNIT = "unit (no T.npy: regular data)"

    def steps(self) -> tuple[np.ndarray, str]:
        """The physical step sizes Δ, float32 (N, L), and where they came from.

        From ``T.npy`` (timestamps (N, L)): Δ_0 = t_0, Δ_k = t_k − t_{k−1}, so a padding
        step that repeats the last time gets Δ = 0 and a time-aware model carries its state
        through it unchanged. Without timestamps (regular data): Δ = 1 everywhere
        (``STEPS_UNIT``). A negative or non-finite step is a :class:`DataError` naming the
        file and the row."""
        N, L = int(self.meta["N"]), int(self.meta["L"])
        if not (self.path / "T.npy").is_file():
            if self.meta.get("irregular"):
                raise DataError(
                    f"{self.path / 'T.npy'}: missing, but meta.json says the data are "
                    "irregular (irregular: true): unit steps would stand in for their "
                    "timestamps. Run the prepare step again."
                )
            return np.ones((N, L), dtype=np.float32), self.STEPS_UNIT
        T = np.asarray(self._load("T.npy"), dtype=np.float64)
        if T.shape != (N, L):
            raise DataError(
                f"{self.path / 'T.npy'}: shape {T.shape}, expected (N, L) = {(N, L)}. "
                "Run the prepare step again."
            )
        steps = np.diff(T, axis=1, prepend=0.0)
        bad = ~np.isfinite(steps) | (steps < 0)
        if bad.any():
            row, step = (int(v) for v in np.argwhere(bad)[0])
            what = "not finite" if not np.isfinite(steps[row, step]) else "negative"
            raise DataError(
                f"{self.path / 'T.npy'}: row {row}, step {step}: the time step "
                f"{steps[row, step]!r} is {what} ({int(bad.sum())} such step(s)); "
                "timestamps must be finite and non-decreasing. Run the prepare step again."
            )
        # a row whose observed steps (M.npy; every step without it) all share one time
        observed = self._observed_steps()
        self._find_padding_rows(observed)
        if observed is None:
            observed = np.ones((N, L), dtype=bool)
        spread = np.where(observed, T, -np.inf).max(axis=1) - np.where(observed, T, np.inf).min(
            axis=1
        )
        stalled = np.flatnonzero((observed.sum(axis=1) >= 2) & (spread == 0))
        if stalled.size:
            raise DataError(
                f"{self.path / 'T.npy'}: the timestamps never advance in {stalled.size} "
                f"row(s) of {N} (rows {_some(stalled)}): each has two or more observed steps, "
                f"all at one time, so a time-aware model would be given Δ = 0 at every step "
                f"after the first and no time at all. T.npy holds each step's time, "
                f"increasing over a row's observed steps; run the prepare step again (or fix "
                f"the generator's time grid)."
            )
        self.step_warning = _outlying_step(self.path / "T.npy", steps)
        return steps.astype(np.float32), self.STEPS_FROM_TIMESTAMPS

    def first_non_finite(
        self, fname: str, observed: str | None = None, chunk_bytes: int = SCAN_CHUNK_BYTES
    ) -> tuple[int, tuple[int, ...]] | None:
        """(how many values of ``fname`` are NaN or inf, the index of the first), or None
        when all are finite. With ``observed`` (a bool mask file of the same shape, e.g.
        ``target_mask.npy``) only the values it marks count.

        Read front to back ``chunk_bytes`` of rows at a time with plain reads, not through
        the memory map: a sequential pass through ``X`` (tens of GB for MONSTER) then
        holds one chunk in memory, and the map's random-access advice does not slow it."""
        chunks = _row_chunks(self.path / fname, chunk_bytes)
        masks = _row_chunks(self.path / observed, chunk_bytes, like=fname) if observed else None
        count, first = 0, None
        for start, values in chunks:
            bad = ~np.isfinite(values)
            if masks is not None:
                bad &= next(masks)[1]
            n_bad = int(np.count_nonzero(bad))
            if n_bad and first is None:
                at = np.unravel_index(int(np.argmax(bad)), bad.shape)
                first = (start + int(at[0]), *(int(i) for i in at[1:]))
            count += n_bad
        return None if first is None else (count, first)

    def _read_indices(self, k: int, name: str | None = None) -> np.ndarray:
        """A fold's index file, sorted and checked, in ``index_dtype(N)`` (int32 below 2**31
        rows): parsed ``INDEX_TEXT_BYTES`` of text at a time, so reading S2Agri's 11.8 M
        test rows holds their 4 bytes each, not a Python string per row."""
        path = self.path / (name or f"test_indices_fold_{k}.txt")
        if not path.is_file():
            raise DataError(f"{path}: missing. Run the prepare step again.")
        N = int(self.meta["N"])
        parts = []
        with open(path, "rb") as f:
            tail = b""
            while True:
                block = f.read(INDEX_TEXT_BYTES)
                text, cut = tail + block, len(tail) + len(block)
                if block:  # parse up to the last line break; the rest joins the next block
                    cut = max(text.rfind(b"\n"), text.rfind(b" ")) + 1
                text, tail = text[:cut], text[cut:]
                try:  # (numpy parses text of whitespace alone as [0]: skipped)
                    idx = np.fromstring(text.decode("ascii"), dtype=np.int64, sep=" ") \
                        if text.strip() else np.empty(0, np.int64)  # fmt: skip
                except (ValueError, UnicodeDecodeError) as e:
                    raise DataError(
                        f"{path}: expected one integer row index per line ({e}). Run the "
                        f"prepare step again."
                    ) from e
                if idx.size and (idx.min() < 0 or idx.max() >= N):
                    raise DataError(
                        f"{path}: index out of range [0, {N}) ({idx.min()}..{idx.max()}). "
                        f"Run the prepare step again."
                    )
                parts.append(idx.astype(index_dtype(N)))
                if not block:
                    break
        idx = np.concatenate(parts)
        del parts
        if idx.size == 0:
            raise DataError(f"{path}: empty index set. Run the prepare step again.")
        idx.sort()
        if (idx[1:] == idx[:-1]).any():
            raise DataError(f"{path}: duplicate row indices. Run the prepare step again.")
        return idx

    def label_chunks(self, chunk_bytes: int = SCAN_CHUNK_BYTES):
        """(first row, labels) of y.npy, ``chunk_bytes`` at a time, read with plain reads
        (not the memory map: its pages would stay in the process's resident set)."""
        return _row_chunks(self.path / "y.npy", chunk_bytes)


#: a time step this many times the median positive step is said (`_outlying_step`)
OUTLYING_STEP_RATIO = 1e6


def _outlying_step(path: Path, steps: np.ndarray) -> str | None:
    """What to say of time steps ``OUTLYING_STEP_RATIO`` or more times the median positive
    step (None: there are none): a time-aware model's state decays through such a step
    as through an eternity (exp(ΛΔ) is 0 in float32 well before it), which is rarely what
    the data mean. A warning, not an error: the data may hold a real gap."""
    positive = steps[steps > 0]
    if not positive.size:
        return None
    median = float(np.median(positive))
    far = np.argwhere(steps >= OUTLYING_STEP_RATIO * median)
    if not far.size:
        return None
    row, step = (int(v) for v in far[0])
    return (
        f"{path}: {len(far)} time step(s) of {OUTLYING_STEP_RATIO:g} or more times the median "
        f"step {median:.4g} (the first: row {row}, step {step}, Δ = {steps[row, step]:.4g}): "
        "a time-aware model's state forgets everything across such a step. Kept as the data "
        "has it; check the timestamps."
    )


def _some(rows: np.ndarray, shown: int = 10) -> str:
    """The first ``shown`` of ``rows``, as a list (``...`` when there are more)."""
    head = [int(r) for r in rows[:shown]]
    return f"{head}"[:-1] + ", ...]" if len(rows) > shown else f"{head}"


def _scheme_of(path: Path) -> str | None:
    """The fold_scheme a folder's meta.json names; None when it has none or cannot be read
    (PreparedDataset then reports what is wrong with it)."""
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("fold_scheme") if isinstance(meta, dict) else None


def fold_folder(path: str | os.PathLike, fold: int) -> Path:
    """The folder that holds fold ``fold`` of the prepared dataset at ``path``: its
    ``fold{fold}/`` subfolder for a ``per_fold`` dataset, else ``path`` itself. DataError
    (naming the folder) for a fold a per-fold dataset does not have."""
    path = Path(path)
    if _scheme_of(path) != PER_FOLD:
        return path
    if isinstance(fold, bool) or not isinstance(fold, int | np.integer) or fold < 0:
        raise DataError(f"{path}: fold must be an integer >= 0, got {fold!r}.")
    fold = int(fold)
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    n_folds = meta.get("n_folds")
    if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 1:
        raise DataError(
            f"{path / 'meta.json'}: a per-fold dataset with n_folds {n_folds!r}; expected a "
            f"positive integer. Run the prepare step again."
        )
    if fold >= n_folds:
        raise DataError(
            f"{path}: fold {fold} requested but the dataset has folds 0..{n_folds - 1} (one "
            f"folder each, fold_scheme per_fold). Fix the suite's folds in params.yaml."
        )
    sub = path / f"fold{fold}"
    if not sub.is_dir():
        raise DataError(
            f"{sub}: missing: the per-fold dataset {path} has {n_folds} folds but no folder "
            f"for fold {fold}. Delete {path} and run the prepare step again."
        )
    return sub


def open_fold(path: str | os.PathLike, fold: int) -> PreparedDataset:
    """The prepared dataset a run on fold ``fold`` of ``path`` reads: for a ``per_fold``
    dataset its ``fold{fold}/`` subfolder (whose meta.json must say ``fold: fold``), for
    any other scheme ``PreparedDataset(path)`` (its folds are index files inside)."""
    folder = fold_folder(path, fold)
    dataset = PreparedDataset(folder)
    if folder != Path(path) and dataset.meta.get("fold") != int(fold):
        raise DataError(
            f"{folder / 'meta.json'}: says fold {dataset.meta.get('fold')!r}, but it is the "
            f"folder of fold {fold}. Delete {path} and run the prepare step again."
        )
    return dataset


def _row_chunks(path: Path, chunk_bytes: int, like: str | None = None):
    """(first row, array of rows) of a C-order .npy file, ``chunk_bytes`` of rows at a
    time, read with one reused buffer. ``like`` names the file whose rows it is read
    beside, so both are cut at the same rows (the chunk size is set by ``like``'s rows)."""
    shape, fortran, dtype, offset = read_npy_header(path)
    if fortran:
        raise DataError(f"{path}: stored in Fortran order; the prepare step writes C order.")
    row_items = int(np.prod(shape[1:], dtype=np.int64))
    if like is not None:
        like_shape, _, like_dtype, _ = read_npy_header(path.with_name(like))
        row_bytes = int(np.prod(like_shape[1:], dtype=np.int64)) * like_dtype.itemsize
    else:
        row_bytes = row_items * dtype.itemsize
    step = max(1, chunk_bytes // max(1, row_bytes))
    buffer = bytearray(min(shape[0], step) * row_items * dtype.itemsize)
    with open(path, "rb") as f:
        f.seek(offset)
        for start in range(0, shape[0], step):
            n_rows = min(step, shape[0] - start)
            view = memoryview(buffer)[: n_rows * row_items * dtype.itemsize]
            if f.readinto(view) != len(view):
                raise DataError(f"{path}: ended early at row {start}. Run the prepare step again.")
            yield start, np.frombuffer(view, dtype=dtype).reshape((n_rows, *shape[1:]))
