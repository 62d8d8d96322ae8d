"""The UEA archive's raw ``.ts`` files (``ssmbench.data.uea.fetch``) made into the prepared
format of ``docs/contracts.md``: ``prepare_uea`` writes ``X.npy``, ``y.npy``,
``test_indices_fold_0.txt`` and ``meta.json``.

Policies (also written into each ``meta.json``):

* **Labels.** Class ids are ``0..K-1`` in sorted (Python string) order of the original
  label strings as they appear in the data rows. The header's ``@classLabel`` list is only
  used to check the data rows, and that match ignores case (``str.casefold``): some
  archive releases spell a label differently in the header and in the rows (RacketSports),
  and aeon's own reader lower-cases both. We keep the data's spelling; were one label
  spelt two ways in the rows, the two are one class, named by its most frequent spelling.
  A row label that is not in the header (case aside) is an error: it is how a truncated
  last line usually shows.
* **Lengths.** Series of unequal length (JapaneseVowels 7–29) are z-scored on their real
  values and then right-padded with zeros to the maximum length over TRAIN and TEST.
* **NaNs.** Trailing NaNs at the end of a series are padding of an unequal-length
  series and are treated like it (zeros after normalisation). Any other NaN (or an
  infinite value) makes preparation fail, naming the file and the count: we do not impute.
* **Normalisation.** Per-channel z-score with the mean and (population) standard
  deviation of all real values of the official TRAIN split only; a standard deviation of
  0 is replaced by 1.
* **Rows.** ``X`` holds the TRAIN rows then the TEST rows in file order; the TEST rows are
  ``test_indices_fold_0.txt`` and ``meta["fold_scheme"] == "official_split"``.
* **Catalog.** The rows of each file, C, L (the longest series) and the number of classes
  are compared with the catalog's entry before X is built: a difference the entry does
  not expect (``expected_differences``) is an error naming the file(s) and both numbers,
  since a file cut short at a line end reads as fewer rows and raises nothing else. A
  deliberate subset declares itself in its files' header (``@subset <what>``): its
  differences are then recorded (``meta["catalog_check"]``) with a warning
  (``meta["warnings"]``, printed by ``ssmbench prepare``).
* **Size.** X.npy may be at most ``MAX_PREPARED_RATIO`` (16) times the bytes of the two
  ``.ts`` files once it is above ``PREPARED_FREE_BYTES`` (256 MiB): every row is padded to
  the longest, so one very long line would make X hundreds of times its source. Raise or
  lift the cap with ``benchmarks.uea.max_prepared_ratio`` (null: no cap);
  ``meta["prepared_size"]`` records the sizes.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np

from ssmbench.data.catalog_entry import compare_with_row, domain_in
from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError
from ssmbench.data.prepared_files import seal_prepared
from ssmbench.data.provenance import check_raw_files, fetch_record
from ssmbench.data.uea.catalog import CHECKED_FIELDS, UEA_DATASETS
from ssmbench.data.uea.fetch import SPLITS, file_names
from ssmbench.data.uea.ts_reader import TsFile, read_ts
from ssmbench.io import atomic_folder

NORMALISATION = "per_channel_train_zscore"
LENGTH_POLICY_EQUAL = "equal_length: every series has the same length, no padding"
LENGTH_POLICY_PAD = "right_zero_pad_after_zscore: shorter series padded with zeros at the end"
NAN_POLICY = (
    "reject: a NaN inside a series is an error; trailing NaNs are padding of an "
    "unequal-length series (zeros after normalisation)"
)
LABEL_POLICY = (
    "class ids in sorted order of the data rows' label strings; case ignored only to "
    "match the @classLabel header"
)
#: the cap on X.npy's size: at most this many times the bytes of the two .ts files
#: (params.yaml ``benchmarks.uea.max_prepared_ratio``; null: no cap) ...
MAX_PREPARED_RATIO = 16.0
#: ... once X.npy is larger than this; a smaller X is never refused
PREPARED_FREE_BYTES = 256 << 20
#: the .ts header tag by which a deliberate subset of a catalogued dataset declares itself
SUBSET_TAG = "subset"
#: the file whose rows a catalog field counts (other fields: both files)
_FIELD_SPLITS = {"n_train": ("TRAIN",), "n_test": ("TEST",)}


def _class_table(labels: list[str]) -> list[str]:
    """Class names, sorted: one per case-folded label, spelt as most often in the data."""
    spellings: dict[str, Counter] = {}
    for label in labels:
        spellings.setdefault(label.casefold(), Counter())[label] += 1
    names = [min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c in spellings.values()]
    return sorted(names)


def _classes_missing(paths: dict, classes: list[str], y: np.ndarray, n_train: int) -> list[str]:
    """A warning for each of the two files that has no row of some class (of the classes
    either file has): a class absent from TRAIN is never learnt, one absent from TEST is
    never scored, so the test accuracy is over the others. The data are kept as they
    are."""
    out = []
    for split, rows, effect in (
        ("TRAIN", y[:n_train], "no model learns it"),
        ("TEST", y[n_train:], "the test accuracy is over the other classes"),
    ):
        absent = [c for i, c in enumerate(classes) if not (rows == i).any()]
        if absent:
            out.append(
                f"{paths[split]}: no row of class(es) {', '.join(map(repr, absent))} "
                f"(of {len(classes)}): {effect}. Kept as the file has it."
            )
    return out


def _check_prepared_size(
    paths: dict[str, Path], parsed: dict[str, TsFile], shape: tuple, max_ratio: float | None
) -> dict:
    """X.npy's size against the two .ts files': refused past ``max_ratio`` times their bytes
    once above ``PREPARED_FREE_BYTES`` (every row is padded to the longest, so one long
    line can make X hundreds of times its source). Returns the sizes for meta.json."""
    raw = sum(p.stat().st_size for p in paths.values())
    prepared = int(np.prod(shape, dtype=np.int64)) * np.dtype(np.float32).itemsize
    sizes = {"raw_bytes": raw, "x_bytes": prepared, "ratio": round(prepared / max(raw, 1), 3),
             "max_ratio": max_ratio, "free_bytes": PREPARED_FREE_BYTES}  # fmt: skip
    if max_ratio is None or prepared <= PREPARED_FREE_BYTES or prepared <= max_ratio * raw:
        return sizes
    split, case = max(
        ((sp, i) for sp in SPLITS for i in range(len(parsed[sp].series))),
        key=lambda k: parsed[k[0]].series[k[1]].shape[1],
    )
    raise DataError(
        f"{paths[split]}: case {case + 1} has {shape[2]:,} steps, so X.npy would be (N, C, L) "
        f"= {tuple(shape)} float32, {prepared / 1e6:,.1f} MB, {prepared / raw:,.0f} times the "
        f"{raw / 1e6:,.1f} MB of the two .ts files; the cap is {max_ratio:g} times once above "
        f"{PREPARED_FREE_BYTES / 2**20:,.0f} MiB (every row is padded to the longest). A line "
        f"that long is usually a damaged file: fetch it again. If the file is right, raise "
        f"the cap, benchmarks.uea.max_prepared_ratio in params.yaml (null: no cap)."
    )


def _check_catalog(
    name: str, paths: dict[str, Path], parsed: dict[str, TsFile], read: dict
) -> tuple[dict, list[str]]:
    """What was read against the catalog's entry (``catalog_entry.compare_with_row``):
    (``meta["catalog_check"]``, warnings). A difference the entry does not expect is a
    DataError naming the file(s) and both numbers, unless the files that hold the field
    declare themselves a subset (``@subset <what>`` in the header): then it is recorded,
    with a warning that results on it are not those of the catalog's dataset."""
    check = compare_with_row(f"uea/{name}", UEA_DATASETS.get(name), read, CHECKED_FIELDS)
    subset = {}
    for split in SPLITS:
        if SUBSET_TAG in parsed[split].header:
            text = parsed[split].header[SUBSET_TAG].strip()
            if not text:
                raise DataError(
                    f"{paths[split]}: '@{SUBSET_TAG}' without saying what subset the file "
                    f"holds. Write e.g. '@{SUBSET_TAG} the first 20 rows, 500 steps'."
                )
            subset[split] = text
    refused, excused = [], []
    for diff in check["differences"]:
        if diff["reason"] is not None:
            continue
        splits = _FIELD_SPLITS.get(diff["field"], SPLITS)
        declared = [subset[sp] for sp in splits if sp in subset]
        if declared:
            diff["reason"] = f"declared subset: {'; '.join(dict.fromkeys(declared))}"
            excused.append(diff)
        else:
            refused.append((diff, splits))
    if refused:
        files = [paths[sp] for sp in dict.fromkeys(sp for _, splits in refused for sp in splits)]
        listed = "; ".join(
            f"{d['field']}: catalog {d['catalog']}, read {d['data']} (from "
            f"{' and '.join(paths[sp].name for sp in splits)})"
            for d, splits in refused
        )
        raise DataError(
            f"{' and '.join(map(str, files))}: {name} as read differs from its catalog entry "
            f"{check['entry']} (ssmbench.data.uea.catalog): {listed}. A .ts file cut short at a "
            f"line end reads as fewer rows and raises nothing else: fetch the dataset again. "
            f"If the archive's files really differ, record the value and the reason in the "
            f"entry's expected_differences (src/ssmbench/data/uea/catalog.py); a deliberate "
            f"subset of the rows or steps declares itself with an '@{SUBSET_TAG} <what>' line "
            f"in the header of its .ts files."
        )
    if check["entry"] is None:
        result = "not in the catalog"
    elif excused:
        result = "declared subset"
    else:
        result = "differs as expected" if check["differences"] else "agrees"
    warnings = []
    if excused:
        where = ", ".join(f"{paths[sp].name}: {text!r}" for sp, text in subset.items())
        counts = ", ".join(f"{d['field']} {d['data']} of the catalog's {d['catalog']}"
                           for d in excused)  # fmt: skip
        warnings.append(
            f"{name} is a declared subset of the catalog's dataset {check['entry']} "
            f"(@{SUBSET_TAG} in {where}): {counts}. Results on it are not comparable with "
            f"the full dataset's."
        )
    return {**check, "result": result, "subset": subset or None}, warnings


def prepare_uea(
    name: str,
    raw_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    max_prepared_ratio: float | None = MAX_PREPARED_RATIO,
) -> Path:
    """Prepare ``<raw_dir>/<name>/`` into ``<out_dir>/<name>/``; return that folder.

    ``out_dir`` is the benchmark's prepared folder (e.g. ``data/prepared/uea``). The
    dataset folder is written under a temporary name beside it and renamed into place.
    Before X is built, what was read is checked against the catalog (``_check_catalog``)
    and X's size against the raw files' (``_check_prepared_size``, ``max_prepared_ratio``
    times; None: no cap).
    """
    src = Path(raw_dir) / name
    out_dir = Path(out_dir)
    names = file_names(name)
    paths = {split: src / fname for split, fname in names.items()}
    for p in paths.values():
        if not p.is_file():
            raise DataError(f"{p}: missing. Run the fetch step (fetch_uea) for {name} first.")

    raw_files = {f"{name}/{p.name}": sha256_file(p) for p in paths.values()}
    prov = fetch_record(raw_dir, name)
    if prov is not None:
        check_raw_files(raw_dir, name, prov, raw_files)
        source, source_url = prov.get("source"), prov.get("source_url")
    else:  # files placed by hand: treat the raw folder itself as the archive
        source, source_url = "archive_dir", str(src.resolve())

    parsed = {split: read_ts(p) for split, p in paths.items()}
    tr, te = parsed["TRAIN"], parsed["TEST"]
    if tr.n_channels != te.n_channels:
        raise DataError(
            f"{paths['TEST']}: {te.n_channels} channels but {paths['TRAIN']} has "
            f"{tr.n_channels}. The two files are from different datasets or versions."
        )
    series = tr.series + te.series
    labels = tr.labels + te.labels
    n_train, n_test = len(tr.series), len(te.series)
    N, C = n_train + n_test, tr.n_channels
    lengths = np.array([s.shape[1] for s in series])
    L, min_len = int(lengths.max()), int(lengths.min())

    classes = _class_table(labels)
    index = {c.casefold(): i for i, c in enumerate(classes)}
    y = np.array([index[label.casefold()] for label in labels], dtype=np.int64)
    read = {"n_train": n_train, "n_test": n_test, "C": C, "L": L, "classes": len(classes)}
    catalog_check, warnings = _check_catalog(name, paths, parsed, read)
    warnings += _classes_missing(paths, classes, y, n_train)
    prepared_size = _check_prepared_size(paths, parsed, (N, C, L), max_prepared_ratio)

    # Per-channel statistics of the real (non-padding) TRAIN values, in float64.
    total = np.zeros(C)
    count = np.zeros(C)
    for s in tr.series:
        total += np.nansum(s, axis=1)
        count += np.sum(~np.isnan(s), axis=1)
    mean = np.divide(total, count, out=np.zeros(C), where=count > 0)
    sq = np.zeros(C)
    for s in tr.series:
        sq += np.nansum((s - mean[:, None]) ** 2, axis=1)
    std = np.sqrt(np.divide(sq, count, out=np.zeros(C), where=count > 0))
    std = np.where((std > 0) & np.isfinite(std), std, 1.0)

    X = np.zeros((N, C, L), dtype=np.float32)
    for i, s in enumerate(series):
        z = (s - mean[:, None]) / std[:, None]
        X[i, :, : s.shape[1]] = np.nan_to_num(z, nan=0.0)

    from ssmbench import __version__

    meta = {
        "name": name,
        "benchmark": "uea",
        "domain": domain_in(UEA_DATASETS, name),
        "task": "classification",
        "N": N,
        "C": C,
        "L": L,
        "n_classes": len(classes),
        "classes": classes,
        "n_train": n_train,
        "n_test": n_test,
        "fold_scheme": "official_split",
        "n_folds": 1,
        "source": source,
        "source_url": source_url,
        "raw_files": raw_files,
        "length_policy": LENGTH_POLICY_EQUAL if min_len == L else LENGTH_POLICY_PAD,
        "min_length": min_len,
        "max_length": L,
        "nan_policy": NAN_POLICY,
        "n_padding_nan": tr.n_padding_nan + te.n_padding_nan,
        "label_policy": LABEL_POLICY,
        "header_class_values": tr.class_values,
        "normalisation": {
            "kind": NORMALISATION,
            "mean": [float(v) for v in mean],
            "std": [float(v) for v in std],
        },
        "catalog_check": catalog_check,
        "prepared_size": prepared_size,
        "warnings": warnings,
        "prepared_with": __version__,
    }

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / name
    with atomic_folder(target) as tmp:
        np.save(tmp / "X.npy", X, allow_pickle=False)
        np.save(tmp / "y.npy", y, allow_pickle=False)
        (tmp / "test_indices_fold_0.txt").write_text(
            "".join(f"{i}\n" for i in range(n_train, N)), encoding="utf-8"
        )
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        seal_prepared(tmp)
    return target
