"""The official Physiome-ODE fold files, read without running their pickled code.

``final/<dataset>/<fold>/{train,valid,test}.pt`` (Zenodo record 11492058) are
``torch.save`` of a ``torch.utils.data.Subset`` of the benchmark's own dataset class,
pickled as ``__main__.IMTS_dataset`` (github kloetergensc/Physiome-ODE,
``data_creation/generate_imts.py`` l.149-165, run as a script; docs/physiome_official_format.md).
Each file holds the whole fold's dataset (tensors ``T`` (n, Lx), ``X`` (n, Lx, D), ``TY``
(n, Ly), ``Y`` (n, Ly, D), float32, NaN = not observed) and its split's ``indices``.

:func:`read_fold_file` lists a file's globals first
(``torch.serialization.get_unsafe_globals_in_checkpoint``, which unpickles nothing) and
refuses any global but those two; then ``torch.load(..., weights_only=True)`` runs with the
two names mapped to inert stand-ins of ours (``torch.serialization.safe_globals``): no class
of the file's and no torch ``Subset`` is constructed, no ``__init__`` or ``__setstate__``
of theirs runs. :func:`read_fold` checks that the three files share one dataset and that
their indices are disjoint and cover it (a fold whose test rows are in its training rows
is an error). :func:`write_fold_file` writes a file in the same layout (the tests'
fixture archive).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import numpy as np
import torch

from ssmbench.data.errors import DataError

#: The globals an official file may name, beyond torch's tensor rebuilding (which
#: ``weights_only`` allows by default).
DATASET_GLOBAL = "__main__.IMTS_dataset"
SUBSET_GLOBAL = "torch.utils.data.dataset.Subset"
ALLOWED_GLOBALS = (DATASET_GLOBAL, SUBSET_GLOBAL)
#: The dataset's tensors: observation times, values; target times, values.
TENSORS = ("T", "X", "TY", "Y")
SPLITS = ("train", "valid", "test")


class _DatasetStandIn:
    """What ``__main__.IMTS_dataset`` is built as: an empty object whose ``__dict__`` the
    file fills (the weights-only unpickler's NEWOBJ + BUILD); it has no behaviour."""


class _SubsetStandIn:
    """What ``torch.utils.data.dataset.Subset`` is built as (``dataset``, ``indices``)."""


def read_fold_file(path: str | os.PathLike) -> dict:
    """``{"T", "X", "TY", "Y": float32 arrays, "indices": int64 array}`` of one official
    ``.pt`` file. Raises DataError naming the file for any other global, a malformed
    content, or a file torch cannot read."""
    path = Path(path)
    try:
        found = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except Exception as exc:  # not a torch zip file, truncated, ...
        raise DataError(f"{path}: not a readable torch file ({exc}); fetch it again") from exc
    unknown = sorted(set(found) - set(ALLOWED_GLOBALS))
    if unknown:
        raise DataError(
            f"{path}: names {unknown}, which an official Physiome-ODE file does not "
            f"(allowed: {', '.join(ALLOWED_GLOBALS)}); refused without unpickling it"
        )
    stand_ins = [(_DatasetStandIn, DATASET_GLOBAL), (_SubsetStandIn, SUBSET_GLOBAL)]
    try:
        with torch.serialization.safe_globals(stand_ins):
            obj = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:
        raise DataError(f"{path}: cannot be read as an official fold file: {exc}") from exc
    dataset = getattr(obj, "dataset", None)
    if not isinstance(obj, _SubsetStandIn) or not isinstance(dataset, _DatasetStandIn):
        raise DataError(f"{path}: expected a Subset of IMTS_dataset, found {type(obj).__name__}")
    out = {}
    for name in TENSORS:
        value = getattr(dataset, name, None)
        if not isinstance(value, torch.Tensor):
            raise DataError(f"{path}: the dataset has no tensor {name!r}")
        if value.is_complex() or not value.is_floating_point():
            raise DataError(
                f"{path}: tensor {name!r} is {value.dtype}; an official file holds real "
                "floating-point values (NaN where not observed), not coerced here"
            )
        value = value.detach()
        as_float32 = value.to(torch.float32)
        if bool((torch.isinf(as_float32) & ~torch.isinf(value)).any()):
            raise DataError(
                f"{path}: tensor {name!r} ({value.dtype}) has finite values beyond float32's "
                "range, which would become inf; an official file's values fit float32"
            )
        out[name] = as_float32.numpy()
    n = len(out["T"])
    shapes_ok = (
        out["X"].ndim == 3
        and out["Y"].ndim == 3
        and out["X"].shape[:2] == out["T"].shape
        and out["Y"].shape[:2] == out["TY"].shape
        and len(out["TY"]) == n
        and out["X"].shape[2] == out["Y"].shape[2]
    )
    if not shapes_ok:
        shapes = {k: v.shape for k, v in out.items()}
        raise DataError(f"{path}: tensor shapes {shapes} do not fit (n, L, D) / (n, L)")
    indices = np.asarray(getattr(obj, "indices", []))
    if indices.size and indices.dtype.kind not in "iu":
        raise DataError(
            f"{path}: the split's indices are {indices.dtype}, not integers; refused rather "
            "than truncated"
        )
    indices = indices.astype(np.int64)
    if indices.ndim != 1 or (len(indices) and (indices.min() < 0 or indices.max() >= n)):
        raise DataError(f"{path}: indices outside the dataset's {n} rows")
    out["indices"] = indices
    return out


def read_fold(folder: str | os.PathLike) -> dict:
    """One fold folder (``train.pt``, ``valid.pt``, ``test.pt``): ``{"T", "X", "TY", "Y"}``
    of its dataset and ``{"train", "valid", "test"}`` index arrays. The three files must
    hold the same dataset; their indices must be disjoint and cover it."""
    folder = Path(folder)
    parts = {split: read_fold_file(folder / f"{split}.pt") for split in SPLITS}
    first = parts["train"]
    for split in SPLITS[1:]:
        for name in TENSORS:
            if not np.array_equal(parts[split][name], first[name], equal_nan=True):
                raise DataError(
                    f"{folder / f'{split}.pt'}: its {name} differs from train.pt's; the three "
                    "files of a fold hold one dataset"
                )
    seen: dict[int, str] = {}
    for split in SPLITS:
        for i in parts[split]["indices"].tolist():
            if seen.get(i) == split:
                raise DataError(
                    f"{folder / f'{split}.pt'}: row {i} is listed twice in it; a split names "
                    "each of its rows once. Fetch the fold files again"
                )
            if i in seen:
                raise DataError(
                    f"{folder}: row {i} is in both {seen[i]}.pt and {split}.pt; a fold's test "
                    "rows must stay out of its training and validation rows"
                )
            seen[i] = split
    n = len(first["T"])
    if len(seen) != n:
        raise DataError(f"{folder}: the three splits cover {len(seen)} of the {n} rows")
    return {**{k: first[k] for k in TENSORS}, **{s: parts[s]["indices"] for s in SPLITS}}


def write_fold_file(path: str | os.PathLike, arrays: dict, indices) -> Path:
    """Write ``arrays`` (T, X, TY, Y) and ``indices`` as the benchmark does: a ``Subset``
    of an object pickled as ``__main__.IMTS_dataset`` (for test fixtures)."""
    from torch.utils.data import Subset

    with main_dataset_class() as cls:
        dataset = cls.__new__(cls)
        for name in TENSORS:
            setattr(dataset, name, torch.as_tensor(np.asarray(arrays[name], dtype=np.float32)))
        subset = Subset.__new__(Subset)
        subset.dataset, subset.indices = dataset, [int(i) for i in indices]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(subset, path)
    return path


@contextlib.contextmanager
def main_dataset_class():
    """A class ``__main__.IMTS_dataset`` for as long as the block runs (pickle finds a
    class by that name when it writes, and a full load when it reads, the benchmark's
    files), whatever ``__main__`` held under that name restored after."""
    cls = type("IMTS_dataset", (), {"__module__": "__main__", "__qualname__": "IMTS_dataset"})
    main = sys.modules["__main__"]
    had, old = hasattr(main, "IMTS_dataset"), getattr(main, "IMTS_dataset", None)
    main.IMTS_dataset = cls
    try:
        yield cls
    finally:
        if had:
            main.IMTS_dataset = old
        else:
            del main.IMTS_dataset
