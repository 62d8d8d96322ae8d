"""UEA-6 under the Log-NCDE protocol: a prepared UEA dataset's TRAIN and TEST rows pooled,
exact duplicates removed, and one random 70/15/15 train/validation/test split per seed,
written in the prepared format of ``docs/contracts.md`` (``given_folds``: fold k is seed
k's split, with ``val_indices_fold_k.txt``).

:func:`pooled_unique_rows` and :func:`seed_splits` are the two steps;
:func:`prepare_uea6_variant` writes the dataset. The protocol is the Log-NCDE benchmark's
(Walker et al. 2024; github Benjamin-Walker/log-neural-cdes at 5612f00:
``data_dir/process_uea.py``, ``data_dir/datasets.py``), the one the TIDES paper's UEA-6
table quotes its baselines under. ``docs/uea6_protocol.md`` lists every choice where it
and the TIDES code's own UEA protocol (``uea/utils.py``, the Rough Transformer's) differ.

- **Pooled**: TRAIN then TEST (both codes).
- **Duplicates**: rows whose values are identical (X only, not y) after pooling are
  removed, the first occurrence kept, the pooled order kept (``np.unique(axis=0,
  return_index=True)`` then sorted: both codes at their current commits). On float32 values,
  as the Log-NCDE code compares them (EigenWorms: 259 rows -> 236; the other five lose none).
- **Values**: as in the archive, not normalised (neither code normalises its inputs): the
  UEA preparation's per-channel z-score is undone with its stored mean and std (float64,
  then float32): the archive's values up to the float32 rounding of the z-scored ones, an
  absolute error of a few 2⁻²⁴ · std (BasicMotions: at most 1.9e-6). Identical rows stay
  identical, so the duplicates found are the archive's. Only equal-length series without
  missing values are taken, as both codes need.
- **Splits**: per seed (the Log-NCDE seeds 2345, 3456, 4567, 5678, 6789), a random
  permutation of the N rows cut at int(0.7 N) and int(0.85 N): train, validation, test
  (the test split gets the remainder, as in Log-NCDE's ``datasets.py``), not stratified.
  The permutation is numpy's ``default_rng(seed)``; Log-NCDE draws it with JAX's PRNG, whose
  rows we cannot reproduce, so the split sizes are theirs but not the rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.prepared_files import write_prepared_folder
from ssmbench.data.store import PreparedDataset
from ssmbench.io import index_text, prepared_stamp

#: The six UEA sets of the TIDES paper's (and the Log-NCDE paper's) UEA table.
UEA6 = (
    "EigenWorms",
    "EthanolConcentration",
    "Heartbeat",
    "MotorImagery",
    "SelfRegulationSCP1",
    "SelfRegulationSCP2",
)
#: The Log-NCDE benchmark's seeds (experiment_configs/repeats/*/<dataset>.json).
SEEDS = (2345, 3456, 4567, 5678, 6789)
#: Train and validation fractions; the test split is the rest.
FRACTIONS = (0.7, 0.15)
PROTOCOL_URL = "https://github.com/Benjamin-Walker/log-neural-cdes (data_dir/, 5612f00)"


def pooled_unique_rows(X: np.ndarray) -> np.ndarray:
    """The rows of X (N, C, L) to keep: the first of each set of identical rows, in order."""
    flat = np.ascontiguousarray(X, dtype=np.float32).reshape(len(X), -1)
    _, first = np.unique(flat, axis=0, return_index=True)
    return np.sort(first)


def seed_splits(
    n: int, seed: int, fractions: Sequence[float] = FRACTIONS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, validation, test) row indices of one seed: a permutation of ``n`` rows cut
    at int(f_train n) and int((f_train + f_val) n)."""
    f_train, f_val = (float(f) for f in fractions)
    order = np.random.default_rng(seed).permutation(n)
    a, b = int(f_train * n), int((f_train + f_val) * n)
    if a == 0 or b == a or b == n:
        raise DataError(f"{n} rows are too few for a {f_train:g}/{f_val:g}/rest split")
    return np.sort(order[:a]), np.sort(order[a:b]), np.sort(order[b:])


def _raw_values(src: PreparedDataset) -> np.ndarray:
    """The archive's values of a prepared UEA dataset, float32 (N, C, L): its per-channel
    z-score undone."""
    meta = src.meta
    norm = meta.get("normalisation") or {}
    if meta.get("min_length") != meta.get("max_length") or meta.get("n_padding_nan"):
        raise DataError(
            f"{src.path / 'meta.json'}: {meta.get('name')} has unequal lengths or missing "
            "values; the UEA-6 protocol takes equal-length series without missing values, "
            "as the Log-NCDE and TIDES codes do."
        )
    X = np.asarray(src.X, dtype=np.float64)
    if norm.get("kind") == "per_channel_train_zscore":
        mean = np.asarray(norm["mean"], dtype=np.float64)[None, :, None]
        std = np.asarray(norm["std"], dtype=np.float64)[None, :, None]
        X = X * std + mean
    elif norm.get("kind") not in (None, "none"):
        raise DataError(
            f"{src.path / 'meta.json'}: normalisation {norm.get('kind')!r} cannot be undone "
            "here; prepare the dataset with per_channel_train_zscore or none."
        )
    return X.astype(np.float32)


def check_split(seeds: Sequence[int] = SEEDS, fractions: Sequence[float] = FRACTIONS) -> None:
    """params.yaml ``split:`` checked as ``prepare_uea6_variant`` takes it, before any job
    runs: distinct integer seeds >= 0, two fractions > 0 that leave a test split. Raises
    ValueError naming the key (TypeError for an unknown one, from the call)."""
    if isinstance(seeds, str | bytes) or not seeds:
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds!r}")
    if isinstance(fractions, str | bytes) or len(fractions) != 2:
        raise ValueError(f"fractions must be [train, validation], got {fractions!r}")
    f_train, f_val = (float(f) for f in fractions)
    if not (0 < f_train and 0 < f_val and f_train + f_val < 1):
        raise ValueError(
            f"fractions must be > 0 and leave a test split (train + validation < 1), "
            f"got {fractions!r}"
        )


def prepare_uea6_variant(
    source_prepared_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    seeds: Sequence[int] = SEEDS,
    fractions: Sequence[float] = FRACTIONS,
    *,
    name: str | None = None,
    benchmark: str = "uea6",
) -> Path:
    """Write the UEA-6 protocol's variant of a prepared UEA dataset; return its folder
    (``<out_dir>/<name>/``, the source's name by default).

    Files: ``X.npy`` float32 (N', C, L) the pooled rows without duplicates, ``y.npy``,
    ``test_indices_fold_k.txt`` and ``val_indices_fold_k.txt`` per seed k, ``meta.json``
    (``fold_scheme`` ``given_folds``, ``n_folds`` = the number of seeds, ``split``: seeds,
    fractions, sizes; ``duplicates_removed``; ``derived_from``)."""
    check_split(seeds, fractions)
    seeds = [int(s) for s in seeds]
    src = PreparedDataset(source_prepared_dir)
    smeta = src.meta
    if smeta.get("task") != "classification":
        raise DataError(
            f"{src.path / 'meta.json'}: task is {smeta.get('task')!r}; the UEA-6 protocol "
            "takes a prepared classification dataset."
        )
    values = _raw_values(src)
    keep = pooled_unique_rows(values)
    X, y = values[keep], np.asarray(src.y)[keep]
    N = len(keep)
    texts, sizes = {}, []
    for k, seed in enumerate(seeds):
        train, val, test = seed_splits(N, seed, fractions)
        texts[f"val_indices_fold_{k}.txt"] = index_text(val)
        texts[f"test_indices_fold_{k}.txt"] = index_text(test)
        sizes.append([len(train), len(val), len(test)])

    keep_keys = ("domain", "C", "L", "n_classes", "classes", "header_class_values",
                 "label_policy", "source", "source_url", "raw_files", "length_policy",
                 "min_length", "max_length", "nan_policy", "n_padding_nan")  # fmt: skip
    meta = {
        "name": name or smeta["name"],
        "benchmark": benchmark,
        "task": "classification",
        **{k: smeta[k] for k in keep_keys if k in smeta},
        "N": N,
        "n_pooled": int(smeta["N"]),
        "duplicates_removed": int(smeta["N"]) - N,
        "fold_scheme": "given_folds",
        "n_folds": len(seeds),
        "split": {
            "seeds": seeds,
            "fractions": [float(f) for f in fractions],
            "sizes": sizes,
            "method": "numpy default_rng(seed).permutation, cut at int(0.7 N) and "
            "int(0.85 N): train / validation / test; not stratified",
            "protocol": PROTOCOL_URL,
        },
        "normalisation": {
            "kind": "none",
            "note": "the archive's values (the uea preparation's z-score undone)",
        },
        "derived_from": {
            "name": smeta.get("name"),
            "benchmark": smeta.get("benchmark"),
            "path": str(src.path.resolve()),
            "prepared_with": smeta.get("prepared_with"),
        },
        **prepared_stamp(),
    }
    return write_prepared_folder(
        Path(out_dir), meta["name"], {"X.npy": X, "y.npy": y.astype(np.int64)}, texts, meta
    )
