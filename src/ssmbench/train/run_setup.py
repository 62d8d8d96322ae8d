"""A run before its first step: seeded, its data read and split, its model built.

`set_up` does these in that order (the model's initial weights come from the seeded
generator); `FoldData` is the run's data (the prepared dataset, its task, the fold's rows,
the model's extra inputs) and how X is read (``ssmbench.train.batch_order``): into memory
once, or block-shuffled epochs from disk. ``ssmbench.train.protocol`` trains from here.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ssmbench.data.row_file import RowFile
from ssmbench.data.validation_split import validation_seed
from ssmbench.models import model_inputs
from ssmbench.reading_plan import BLOCKS, MEMORY, plan_reading
from ssmbench.train.batch_order import BlockReader, BlockShuffledOrder, RowValues, batch_size_for
from ssmbench.train.checks import check_inputs, check_split, classes_without_test_rows
from ssmbench.train.evaluation import evaluate
from ssmbench.train.fold_split import split_fold
from ssmbench.train.objective import Objective

#: rows whose labels are read at a time by `FoldData.classes_in`
CLASS_SCAN_ROWS = 1 << 18


def seed_everything(seed: int, deterministic: bool = True) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if deterministic:
        if torch.cuda.is_available():
            # cuBLAS needs this to be deterministic; set before the first CUDA call.
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            # warn_only on GPU: a few CUDA kernels have no deterministic version
            torch.use_deterministic_algorithms(True, warn_only=True)
        else:
            # On CPU every op we use has a deterministic version, so nondeterminism is an
            # error. torch.use_deterministic_algorithms would also import torch._inductor
            # to set the compiler's flag (1.5 s of every job); CPU runs compile nothing,
            # so only the flag that eager ops read is set.
            torch._C._set_deterministic_algorithms(True, warn_only=False)


@dataclass
class FoldData:
    """A run's data: the prepared dataset, its task, and the fold's rows."""

    dataset: Any  # ssmbench.data.store.PreparedDataset
    objective: Objective
    mask: np.ndarray | None  # which targets are observed (regression), else None
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    test_sets: dict  # separate test sets (fixed_test_sets): key -> rows
    val_split: str  # how the validation rows were drawn (splits.validation_method)
    # the extra inputs the model takes (its INPUTS beyond the values: the step sizes Δ
    # (N, L) as "steps", the observation mask (N, C, L) as "mask"), and their sources
    inputs: dict = field(default_factory=dict)
    steps_source: str | None = None
    mask_source: str | None = None
    # how X is read (ssmbench.train.batch_order): MEMORY, X copied here once (X_memory);
    # BLOCKS, block-shuffled epochs read through BlockReaders
    reading: Any = None  # a reading_plan.ReadingPlan, or None (the memory map as it is)
    # MEMORY: read X into memory at the first batch (an estimator, which reads its rows
    # itself, never does); False for a tuning trial, whose test rows are never read (the
    # memory map then: the same rows in the same order)
    into_memory: bool = True
    X_memory: np.ndarray | None = None
    _train_reader: Any = None
    _eval_readers: dict = field(default_factory=dict)  # row set's digest -> its BlockReader
    _labels: Any = None  # block mode: a RowValues reader of y.npy

    def _in_memory(self) -> np.ndarray | None:
        """X in memory (read on the first call), or None when it is not read so."""
        if self.X_memory is None and self.into_memory and self.reading is not None \
                and self.reading.mode == MEMORY:  # fmt: skip
            # plain sequential reads (not the random-access memory map); its shape and
            # dtype were checked when the dataset was opened
            self.X_memory = np.load(self.dataset.path / "X.npy", allow_pickle=False)
        return self.X_memory

    def train_X(self, order=None):
        """X as the training batches read it; in block mode, a reader that reads ahead
        along ``order`` (the epoch's `BlockShuffledOrder`) when it is given."""
        if self._in_memory() is not None:
            return self.X_memory
        if self.reading is not None and self.reading.mode == BLOCKS:
            if self._train_reader is None:  # two windows' blocks: a batch spans at most two
                self._train_reader = BlockReader(
                    self.dataset.path / "X.npy", self.train_idx, self.reading.block_rows,
                    2 * self.reading.buffer_blocks, labels=self._labels_file(),
                )  # fmt: skip
            if isinstance(order, BlockShuffledOrder):
                self._train_reader.follow(order)
            return self._train_reader
        return self.dataset.X

    def rows_X(self, rows):
        """X as an evaluation over ``rows`` (read in sorted order) reads it; in block mode
        one reader per row set (validation every epoch reuses its reader and threads)."""
        if self._in_memory() is not None:
            return self.X_memory
        if self.reading is not None and self.reading.mode == BLOCKS:
            if isinstance(rows, RowFile):
                key = str(rows.path).encode()
            else:
                rows = np.ascontiguousarray(rows)
                key = hashlib.blake2b(rows, digest_size=16, person=rows.dtype.str.encode())
                key = key.digest()
            if key not in self._eval_readers:
                self._eval_readers[key] = BlockReader(
                    self.dataset.path / "X.npy", rows, self.reading.block_rows, 2,
                    labels=self._labels_file(),
                )  # fmt: skip
            return self._eval_readers[key]
        return self.dataset.X

    def _labels_file(self):
        """y.npy where a block reader reads the labels with X's blocks: a classification
        read in blocks (a regression's targets, mask and inputs stay memory maps)."""
        return self.dataset.path / "y.npy" if self.objective.task == "classification" else None

    def train_y(self):
        """y as the training batches read it: in block mode (classification) the labels the
        training reader reads with each block (``BlockLabels``), else `y`."""
        X = self.train_X()
        return X.labels if isinstance(X, BlockReader) and X.labels_path else self.y

    def rows_y(self, rows):
        """y as an evaluation over ``rows`` reads it (with `rows_X`'s reader)."""
        X = self.rows_X(rows)
        return X.labels if isinstance(X, BlockReader) and X.labels_path else self.y

    @property
    def y(self):
        """y by row: the memory map, or in block mode a classification's labels read by row
        with ``os.pread`` (`RowValues`), where the map's int64 pages would build up in the
        resident set over an epoch (8 bytes a row) and a copy in memory would hold a byte
        a row. Batches read theirs with X's blocks instead (`train_y`, `rows_y`)."""
        if self._labels is None and self.reading is not None and self.reading.mode == BLOCKS \
                and self.objective.task == "classification":  # fmt: skip
            self._labels = RowValues(self.dataset.path / "y.npy")
        return self.dataset.y if self._labels is None else self._labels

    def classes_in(self, rows) -> set:
        """The labels of ``rows`` (an array or a `RowFile`), read a chunk at a time."""
        found: set = set()
        for start in range(0, len(rows), CLASS_SCAN_ROWS):
            chunk = np.asarray(rows[start : start + CLASS_SCAN_ROWS])
            found.update(np.unique(np.asarray(self.y[chunk])).tolist())
        return found

    def target_var(self, rows) -> float | None:
        """The variance (ddof 0) of the observed regression targets of ``rows``; None for
        classification."""
        if self.objective.task != "regression":
            return None
        y = np.asarray(self.dataset.y[np.sort(rows)], dtype=np.float64)
        if self.mask is not None:
            y = y[np.asarray(self.mask[np.sort(rows)], dtype=bool)]
        return float(np.var(y[np.isfinite(y)]))

    def score(
        self, model, rows, batch_size, device, stage: str, with_mae: bool = False
    ) -> tuple[float, ...]:
        return evaluate(
            model, self.objective, self.rows_X(rows), self.rows_y(rows), self.mask, rows,
            batch_size, device, stage, inputs=self.inputs, with_mae=with_mae,
        )  # fmt: skip


@dataclass
class RunSetup:
    """A run before its first step: seeded, its data split, its model built."""

    spec: dict  # the job's spec, with the dataset's raw-file checksums
    seed: int
    device: torch.device
    data: FoldData
    batch_size: int
    model: Any  # a torch module, or an estimator (ssmbench.models.is_estimator)


def set_up(spec: dict, threads: int, validation_only: bool = False) -> RunSetup:
    """Seed, read the prepared dataset, split the fold and build the model, in that order
    (the model's initial weights come from the seeded generator). ``validation_only`` (a
    tuning trial): the fold's test rows are neither checked nor kept, so nothing reads them."""
    from ssmbench.data.prepared_files import check_prepared, prepared_sha256
    from ssmbench.data.store import open_fold
    from ssmbench.models import build_model, is_estimator
    from ssmbench.train.fold_split import read_split

    settings = spec["settings"]
    fold = int(spec["fold"])
    seed = int(settings["seed_base"]) + fold
    # Intra-op threads of the CPU's kernels (the job's `threads`, its SLURM cpus_per_task).
    # Set on a GPU run too, where they run the work left on the host (gathering batches;
    # the signatures Log-NCDE and RFormer compute with pysiglib on the CPU); no GPU kernel
    # reads them, so the setting costs a GPU run nothing.
    torch.set_num_threads(max(1, int(threads)))
    seed_everything(seed, settings["deterministic"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    dataset = open_fold(spec["prepared_dir"], fold)  # per_fold: its fold{k}/ folder
    check_prepared(dataset.path)  # the files are the ones meta.json records
    meta = dataset.meta
    # what the data were made from, the prepared files trained on, and what their
    # preparation warned of (a declared subset of the catalog's rows, a difference from
    # the catalog): all go into the record
    spec = {
        **spec,
        "dataset_sha256": meta.get("raw_files"),
        "prepared_sha256": prepared_sha256(meta),
        "data_warnings": list(meta.get("warnings") or []),
    }
    objective = Objective(meta, dataset.y.shape)
    mask = dataset.target_mask if objective.task == "regression" else None
    monitor = settings["monitor"]
    if objective.task == "regression" and monitor != "val_loss":
        raise ValueError(
            f"{spec['dataset']} is a regression task: monitor {monitor!r} has no meaning "
            f"there; set monitor: val_loss for benchmark {spec['benchmark']!r} in params.yaml"
        )
    if spec.get("split_dir"):
        # drawn and checked by the split rule (ssmbench.train.fold_split): rows on disk,
        # read a block at a time, so none of them is in this job's memory
        train_idx, val_idx, test_idx, method = read_split(spec["split_dir"], dataset, fold,
                                                          settings)  # fmt: skip
    else:
        train_idx, val_idx, test_idx, method = split_fold(
            dataset, fold, settings["val_fraction"], validation_seed(settings, seed),
            settings["val_split_fallback"],
        )  # fmt: skip
        # Bad data or a degenerate fold fails here, before any epoch (ssmbench.train.checks);
        # the split rule made these checks of a split read from disk.
        if validation_only:
            check_inputs(dataset, fold, rows=np.union1d(train_idx, val_idx))
        else:
            check_inputs(dataset, fold)
    if validation_only:
        test_idx, test_sets = test_idx[:0], {}
    else:
        test_sets = dataset.test_sets(fold)
    check_split(dataset, fold, train_idx, val_idx, settings["val_fraction"])
    if objective.task == "classification" and len(test_idx):
        spec["data_warnings"] += classes_without_test_rows(dataset, fold, test_idx)
    data = FoldData(dataset, objective, mask, train_idx, val_idx, test_idx, test_sets, method)
    # protocol.reading: X into memory once when it fits the budget, else block-shuffled
    # epochs read from disk (ssmbench.train.batch_order)
    data.reading = plan_reading(settings, (int(meta["N"]), int(meta["C"]), int(meta["L"])))
    data.into_memory = not validation_only
    batch_size = batch_size_for(settings, len(train_idx))
    model = build_model(
        spec["model"], int(meta["C"]), objective.n_outputs, int(meta["L"]),
        spec["model_params"], per_step=objective.per_step,
    )  # fmt: skip
    if data.reading.mode != BLOCKS or is_estimator(model):
        # read whole where they are used whole: a full shuffle in memory, an estimator's fit
        data.train_idx, data.val_idx, data.test_idx = (
            np.asarray(rows) for rows in (data.train_idx, data.val_idx, data.test_idx)
        )
    if "steps" in model_inputs(model):  # a time-aware model: Δ from the timestamps
        data.inputs["steps"], data.steps_source = dataset.steps()
        if dataset.step_warning:  # steps far out of the rest: kept, and said
            spec["data_warnings"].append(dataset.step_warning)
    if "mask" in model_inputs(model):  # which values were observed
        data.inputs["mask"], data.mask_source = dataset.observed()
    if dataset.padding_warning():  # rows with no observed value (any model): kept, and said
        spec["data_warnings"].append(dataset.padding_warning())
    return RunSetup(spec, seed, device, data, batch_size, model)
