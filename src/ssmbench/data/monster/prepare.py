"""MONSTER's raw files (``ssmbench.data.monster.fetch``) made into the prepared format of
``docs/contracts.md``: ``prepare_monster`` writes ``X.npy``, ``y.npy``, the five
``test_indices_fold_{k}.txt`` and ``meta.json``, without ever loading ``X`` into memory.

Policies (also written into each ``meta.json``):

* **Values.** MONSTER data are used as given: no normalisation (``{"kind": "none"}``), no
  padding (every series has length L). ``X`` becomes float32: a float32 C-order file is
  copied as the prepared ``X.npy`` (a file of its own, copy-on-write where the filesystem
  offers it; its sha256 is that of the copy) and anything else (float64, integers, Fortran
  order) is converted chunk of rows by chunk of rows.
* **NaNs.** Any NaN or infinite value in ``X`` (or a float64 value beyond the float32 range)
  makes preparation fail, naming the file and the count: we do not impute.
* **Labels.** Class ids are ``0..K-1`` in sorted order of the original label values;
  ``meta["classes"]`` holds those values as strings (as for UEA), ``meta["label_values"]``
  as JSON numbers (or strings).
* **Catalog.** N, C, L and the number of classes are compared with the catalog's entry
  (``meta["catalog_check"]``); a difference it does not expect is a recorded warning
  (``meta["warnings"]``, printed by ``ssmbench prepare``), not an error: the files are
  the fetched release, checked against the Hub's checksums.
* **Folds.** The five ``test_indices_fold_{k}.txt`` are copied verbatim after checking that
  every index is an integer in ``[0, N)``, that no fold repeats an index and that none
  covers every row (it would leave nothing to train on);
  ``meta["folds_partition"]`` says whether the folds are disjoint and cover every row.

Memory: ``X`` is read sequentially in chunks of about ``npy_chunks.CHUNK_BYTES`` (hashing,
scanning and converting in one pass; ``ssmbench.data.npy_chunks``), ``y`` and the index
files likewise, so a many-GB dataset prepares with a small resident set.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from ssmbench.data.catalog_entry import compare_with_row, domain_in
from ssmbench.data.checksums import sha256_file
from ssmbench.data.download import copy_file
from ssmbench.data.errors import DataError
from ssmbench.data.monster.catalog import CHECKED_FIELDS, MONSTER_DATASETS
from ssmbench.data.monster.fetch import N_FOLDS, check_name, folder_files, repo_id_of
from ssmbench.data.npy_chunks import read_npy_header, row_chunks, scan_and_convert, write_npy
from ssmbench.data.prepared_files import seal_prepared
from ssmbench.data.provenance import check_raw_files, fetch_record
from ssmbench.io import atomic_folder

NORMALISATION = {"kind": "none", "note": "MONSTER data are used as given (not normalised)"}
NAN_POLICY = "reject: any NaN or infinite value in X is an error (we do not impute)"
LENGTH_POLICY = "equal_length: MONSTER series all have length L, no padding"
LABEL_POLICY = "class ids in sorted order of the original label values of <Name>_y.npy"


def _labels(path: Path, N: int, out: Path, chunk_rows: int | None) -> tuple[list, int]:
    """Map ``y`` to int64 ids 0..K-1 (sorted label order) into ``out``; return the labels."""
    shape, _, dtype, _ = read_npy_header(path)
    if shape != (N,):
        raise DataError(
            f"{path}: shape {shape} but X has N = {N} rows; expected ({N},). The files are "
            f"from different datasets or versions; fetch again."
        )
    if dtype.kind not in "biufUS":
        raise DataError(f"{path}: dtype {dtype} cannot hold class labels.")
    y = np.load(path, mmap_mode="r", allow_pickle=False)
    spans = list(row_chunks(N, dtype.itemsize, chunk_rows))
    classes = None
    for s, e in spans:
        part = np.asarray(y[s:e])
        if dtype.kind == "f" and not np.isfinite(part).all():
            raise DataError(f"{path}: NaN or infinite labels (rows {s}..{e - 1}); fetch again.")
        u = np.unique(part)
        classes = u if classes is None else np.union1d(classes, u)
    if classes is None or classes.size == 0:
        raise DataError(f"{path}: no labels.")
    write_npy(
        out,
        (N,),
        np.int64,
        (np.searchsorted(classes, np.asarray(y[s:e])).astype(np.int64) for s, e in spans),
    )
    del y
    return [v.item() for v in classes], int(classes.size)


def _check_fold(path: Path, N: int, seen: np.ndarray) -> int:
    """Check one index file (integers in [0, N), no repeats); add it to ``seen`` (counts per
    row over the folds); return its size."""
    mask = np.zeros(N, dtype=bool)
    size = 0
    with open(path, encoding="utf-8") as f:
        lines: list[str] = []
        lineno = 0
        for line in f:
            lineno += 1
            if line.strip():
                lines.append(line)
            if len(lines) >= 1_000_000:
                size += _mark(path, lines, lineno, N, mask)
                lines = []
        size += _mark(path, lines, lineno, N, mask)
    if size == 0:
        raise DataError(f"{path}: empty test set. Fetch the dataset again.")
    if size == N:
        raise DataError(
            f"{path}: the test rows cover all {N} rows of X, so the fold leaves no row to "
            f"train on (or to draw validation rows from). A fold's file lists only its test "
            f"rows: this one belongs to another dataset or was written wrong; fetch the "
            f"dataset again."
        )
    seen += mask
    return size


def _mark(path: Path, lines: list[str], lineno: int, N: int, mask: np.ndarray) -> int:
    if not lines:
        return 0
    try:
        idx = np.fromiter((int(s) for s in lines), dtype=np.int64, count=len(lines))
    except ValueError as e:
        raise DataError(
            f"{path}: expected one integer row index per line ({e}; before line {lineno}). "
            f"Fetch the dataset again."
        ) from e
    if idx.min() < 0 or idx.max() >= N:
        raise DataError(
            f"{path}: index out of range [0, {N}) ({idx.min()}..{idx.max()}). The index "
            f"file does not belong to this X; fetch the dataset again."
        )
    if np.unique(idx).size != idx.size or mask[idx].any():
        raise DataError(f"{path}: repeats a row index. Fetch the dataset again.")
    mask[idx] = True
    return int(idx.size)


# --------------------------------------------------------------------------- prepare
def prepare_monster(
    name: str,
    raw_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    chunk_rows: int | None = None,
) -> Path:
    """Prepare ``<raw_dir>/<name>/`` into ``<out_dir>/<name>/``; return that folder.

    ``out_dir`` is the benchmark's prepared folder (e.g. ``data/prepared/monster``). The
    dataset folder is written under a temporary name beside it and renamed into place.
    ``chunk_rows`` (default: about ``npy_chunks.CHUNK_BYTES`` of X per chunk) is the number
    of rows read at a time.
    """
    check_name(name)
    if chunk_rows is not None and (not isinstance(chunk_rows, int) or chunk_rows < 1):
        raise DataError(
            f"prepare_monster: chunk_rows must be a positive integer, not {chunk_rows!r}."
        )
    src = Path(raw_dir) / name
    out_dir = Path(out_dir)
    files = folder_files(name, src)
    for fname in files:
        if not (src / fname).is_file():
            raise DataError(
                f"{src / fname}: missing. Run the fetch step (fetch_monster) for {name} first."
            )
    x_path, y_path = src / files[0], src / files[1]
    fold_paths = [src / f for f in files[2:]]

    # read before X is read through (tens of GB for some sets): an unreadable record fails
    # at once; files placed by hand have none
    prov = fetch_record(raw_dir, name) or {}
    hdr = read_npy_header(x_path)
    shape, fortran, dtype, _ = hdr
    if len(shape) != 3 or min(shape) < 1:
        raise DataError(f"{x_path}: shape {shape}; expected a non-empty (N, C, L) array.")
    if dtype.kind not in "biuf":
        raise DataError(f"{x_path}: dtype {dtype}; expected floating-point (or integer) values.")
    N, C, L = shape
    info = MONSTER_DATASETS.get(name) or {}
    if C != L and (C, L) == (info.get("L"), info.get("C")):
        raise DataError(
            f"{x_path}: shape {tuple(shape)} is (N, L, C) for {name}, whose catalog has "
            f"C = {info['C']} channels of L = {info['L']} steps; MONSTER's files are "
            "(N, C, L): transpose the array (np.swapaxes(X, 1, 2)) and fetch it again."
        )
    as_is = dtype == np.dtype(np.float32) and not fortran

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / name
    with atomic_folder(target) as tmp:
        if as_is:
            # a file of its own, never a link to the raw copy (or to the user's file): the
            # sha256 recorded below is that of the prepared bytes themselves
            try:
                copy_file(x_path, tmp / "X.npy")
            except OSError as e:
                raise DataError(
                    f"{x_path}: could not copy it into the prepared folder {target} "
                    f"({e.strerror or e}); nothing was prepared (the previous folder, if "
                    "any, was kept)."
                ) from e
            x_sha, bad = scan_and_convert(tmp / "X.npy", hdr, None, chunk_rows)
        else:
            x_sha, bad = scan_and_convert(x_path, hdr, tmp / "X.npy", chunk_rows)
        raw_files = {f"{name}/{files[0]}": x_sha}
        raw_files.update({f"{name}/{f}": sha256_file(src / f) for f in files[1:]})
        check_raw_files(raw_dir, name, prov, raw_files, unrecorded_ok=True)
        if bad["nan"] or bad["inf"]:
            raise DataError(
                f"{x_path}: {bad['nan']} NaN and {bad['inf']} infinite value(s). MONSTER data "
                f"are used as given and we do not impute; fetch the file again or report it."
            )
        if bad["overflow"]:
            raise DataError(
                f"{x_path}: {bad['overflow']} value(s) beyond the float32 range; they cannot "
                f"be stored as float32."
            )
        x_storage = f"converted from {dtype}{' (Fortran order)' if fortran else ''}"
        if as_is:
            x_storage = "copy"

        classes, K = _labels(y_path, N, tmp / "y.npy", chunk_rows)
        read = {"N": N, "C": C, "L": L, "classes": K}
        catalog_check, warnings = _catalog_check(name, x_path, read)

        seen = np.zeros(N, dtype=np.uint8)
        fold_sizes = []
        for p in fold_paths:
            fold_sizes.append(_check_fold(p, N, seen))
            shutil.copyfile(p, tmp / p.name)
        partition = bool((seen == 1).all())

        from ssmbench import __version__

        meta = {
            "name": name,
            "benchmark": "monster",
            "domain": domain_in(MONSTER_DATASETS, name),
            "task": "classification",
            "N": N,
            "C": C,
            "L": L,
            "n_classes": K,
            "classes": [str(c) for c in classes],
            "label_values": classes,
            "label_policy": LABEL_POLICY,
            "header_class_values": None,
            "n_train": None,
            "n_test": None,
            "fold_sizes": fold_sizes,
            "folds_partition": partition,
            "fold_scheme": "given_folds",
            "n_folds": N_FOLDS,
            "source": prov.get("source", "raw_dir"),
            "source_url": prov.get("source_url", str(src.resolve())),
            "repo_id": prov.get("repo_id", repo_id_of(name)),
            "revision": prov.get("revision"),
            "raw_files": raw_files,
            "raw_x_dtype": str(dtype),
            "x_storage": x_storage,
            "length_policy": LENGTH_POLICY,
            "min_length": L,
            "max_length": L,
            "nan_policy": NAN_POLICY,
            "n_padding_nan": 0,
            "normalisation": dict(NORMALISATION),
            "catalog_differences": _catalog_differences(name, N, C, L, K),
            "catalog_check": catalog_check,
            "warnings": warnings,
            "prepared_with": __version__,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        seal_prepared(tmp)
    return target


def _catalog_check(name: str, x_path: Path, read: dict) -> tuple[dict, list[str]]:
    """What was read against the catalog's entry (``catalog_entry.compare_with_row``):
    (``meta["catalog_check"]``, warnings). A difference the entry does not expect is a
    recorded warning, not an error: X's header gives N, C and L, so it is the file as
    fetched, not a damaged copy (a truncated X fails its read; a Hub download is also
    checked against the Hub's checksum, a local_dir copy against a SHA256SUMS where one is
    given)."""
    check = compare_with_row(f"monster/{name}", MONSTER_DATASETS.get(name), read, CHECKED_FIELDS)
    unexpected = [d for d in check["differences"] if d["reason"] is None]
    if check["entry"] is None:
        result = "not in the catalog"
    elif unexpected:
        result = "differs (recorded)"
    else:
        result = "differs as expected" if check["differences"] else "agrees"
    warnings = []
    if unexpected:
        listed = "; ".join(f"{d['field']}: catalog {d['catalog']}, read {d['data']}"
                           for d in unexpected)  # fmt: skip
        warnings.append(
            f"{x_path}: {name} as read differs from its catalog entry {check['entry']} "
            f"(ssmbench.data.monster.catalog): {listed}. Prepared as read (X's own header gives "
            f"N, C and L: a truncated file would not have read); results on it may not be "
            f"comparable with the MONSTER paper's. Once the difference is understood, "
            f"record it with its reason in the entry's expected_differences "
            f"(src/ssmbench/data/monster/catalog.py)."
        )
    return {**check, "result": result}, warnings


def _catalog_differences(name: str, N: int, C: int, L: int, K: int) -> list[str]:
    """Where the data disagree with the catalog's N, C, L, classes (informative only)."""
    info = MONSTER_DATASETS.get(name)
    if info is None:
        return []
    got = {"N": N, "C": C, "L": L, "classes": K}
    return [
        f"{k}: catalog {info[k]}, data {v}"
        for k, v in got.items()
        if info.get(k) is not None and info[k] != v
    ]
