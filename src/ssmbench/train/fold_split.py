"""A fold's train/validation/test rows: drawn by the run (`split_fold`), or drawn once by
the split rule, kept on disk and read by its training jobs (`write_split`, `read_split`).

Drawing the authors' validation split (``ssmbench.data.validation_split``) needs memory in
proportion to N at least once: scikit-learn's draw permutes every class's rows. For a
dataset read in blocks (larger than ``protocol.reading.in_memory_max_gb``), the workflow's
``split`` rule draws it once per (benchmark, dataset, fold) with `write_split` -- the
input checks, the split and its checks, as ``run_setup.set_up`` would -- and writes the
sorted training, validation and test rows as ``.npy`` files with a ``split.json`` saying
what they were drawn from and with. Every training job of that fold then reads them as
`ssmbench.data.row_file.RowFile`s (`read_split`): no row index in its memory, so its
resident set does not grow with N; and the 16 models of a fold share one draw.

A split file is checked against the run before it is used: the same settings
(`split_settings`), the same prepared dataset (its N and raw-file checksums), rows
strictly increasing inside ``[0, N)``; a mismatch is a `DataError` naming the file and
the field, never a silent redraw.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.row_file import RowFile, save_rows
from ssmbench.data.validation_split import split_settings
from ssmbench.train.checks import check_inputs, check_split

#: the files of a split folder, by part
PART_FILES = {"train": "train.npy", "val": "val.npy", "test": "test.npy"}
SPLIT_JSON = "split.json"
FORMAT = 1


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


# --- a fold's split drawn once by the split rule, on disk ---------------------------


def _dataset_identity(dataset) -> dict:
    """What ties a split to its prepared dataset: N, the raw files' checksums, and the
    sha256 of its meta.json (whatever its preparation recorded: a derived set's seed, a
    generator's settings)."""
    meta_sha = hashlib.sha256((dataset.path / "meta.json").read_bytes()).hexdigest()
    return {"N": int(dataset.meta["N"]), "raw_files": dataset.meta.get("raw_files"),
            "meta_sha256": meta_sha}  # fmt: skip


def write_split(prepared_dir: str | os.PathLike, fold: int, settings: dict,
                out_dir: str | os.PathLike) -> dict:  # fmt: skip
    """Check the prepared dataset, draw fold ``fold``'s split with ``settings`` and write
    it to ``out_dir`` (a temporary folder beside it, then a rename: a split folder is
    whole or absent). Returns what ``split.json`` holds."""
    from ssmbench.data.store import open_fold

    out_dir = Path(out_dir)
    dataset = open_fold(prepared_dir, fold)
    drawn_with = split_settings(settings, fold)
    check_inputs(dataset, int(fold))
    split = split_fold(dataset, int(fold), drawn_with["val_fraction"], drawn_with["seed"],
                       drawn_with["fallback"])  # fmt: skip
    check_split(dataset, int(fold), split.train, split.val, drawn_with["val_fraction"])
    summary = {
        "format": FORMAT,
        "settings": drawn_with,
        "dataset": _dataset_identity(dataset),
        "prepared_dir": str(prepared_dir),
        "method": split.method,
        "rows": {part: len(getattr(split, part)) for part in PART_FILES},
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.parent.glob(f".{out_dir.name}.*-*"):  # left by a killed job
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
    tmp.mkdir()
    for part, name in PART_FILES.items():
        save_rows(tmp / name, getattr(split, part))
    (tmp / SPLIT_JSON).write_text(json.dumps(summary, indent=1) + "\n")
    if out_dir.exists():  # drawn again (its settings or data changed): replaced whole
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out_dir)
    return summary


def read_split(split_dir: str | os.PathLike, dataset, fold: int, settings: dict) -> FoldSplit:
    """Fold ``fold``'s `FoldSplit` from ``split_dir`` as `RowFile`s, after checking it was
    drawn from ``dataset`` with this run's ``settings`` (`DataError` otherwise)."""
    split_dir = Path(split_dir)
    path = split_dir / SPLIT_JSON
    again = "Run the split step again (snakemake's split rule, or `ssmbench split`)."
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise DataError(f"{path}: missing: the fold's split was not drawn. {again}") from e
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: unreadable ({e}). {again}") from e
    if not isinstance(summary, dict) or summary.get("format") != FORMAT:
        raise DataError(f"{path}: not a split of format {FORMAT}. {again}")
    expected = {"settings": split_settings(settings, fold), "dataset": _dataset_identity(dataset)}
    for key, want in expected.items():
        found = summary.get(key)
        if found != want:
            fields = sorted(
                k for k in want if not isinstance(found, dict) or found.get(k) != want[k]
            )
            raise DataError(
                f"{path}: drawn with {key} {found!r}, but this run has {want!r} (differs in "
                f"{', '.join(fields)}). {again}"
            )
    counts = summary.get("rows")
    if not isinstance(counts, dict):
        raise DataError(f"{path}: no 'rows' mapping of part -> row count. {again}")
    rows = {}
    for part, name in PART_FILES.items():
        rows[part] = RowFile(split_dir / name)
        rows[part].check_sorted(int(dataset.meta["N"]))
        if len(rows[part]) != counts.get(part):
            raise DataError(
                f"{split_dir / name}: {len(rows[part])} rows, but {SPLIT_JSON} says "
                f"{counts.get(part)}. {again}"
            )
    return FoldSplit(rows["train"], rows["val"], rows["test"], str(summary["method"]))
