"""The per-fold prepared layout of Physiome-ODE: folds in the official dict form (the archive's
``final/<dataset>/<k>/`` read by ``official_files.read_fold``, or a generator's folds in the
same form) -> ``<out_dir>/<Name>/fold{k}/`` prepared folders under one top ``meta.json``
(fold_scheme ``per_fold``, ``ssmbench.data.store``).

**Why per fold.** The archive's five folds are independent re-splits of the same
simulations, each with its own instance order, noise and masks (github
kloetergensc/Physiome-ODE @4829169 ``data_creation/generate_imts.py`` l.145-165, l.183-195;
docs/physiome_official_format.md §3): one ``X.npy`` with given folds cannot hold them, so
each fold gets its own arrays, and fold k's test rows are only those of fold k.

**The arrays of one fold** (:func:`fold_arrays`), as TIDES collates a sample (github
TaylanSoydan/TIDES @4b51adc ``tides/tides_collate.py`` l.46-95; docs §6) and in the layout of
``dataset.py``'s docstring. Per row (one instance of the fold's dataset, row i = index i of
the files' dataset, so the index files are the archive's own indices):

* the observed steps (``T``, ``X``), then the forecast steps (``TY``, ``Y``), on one time
  line: the collate's ``cat([t, t_target])`` sorted by time, since every observed time is
  at most 0.5 and every target time above it (a row whose merged times decrease is refused,
  naming it);
* the dataset's own padding is dropped: ``pad_sequence`` right-pads every row of ``T`` /
  ``X`` and ``TY`` / ``Y`` with time 0 and all-NaN values (generate_imts.py l.98-105), so a
  row's trailing steps with time 0 and no finite value are padding. Other steps without a
  finite value are kept (the archive has none, its row selection keeps only observed steps;
  a generator's ``compact: false`` does); counted in ``meta["n_padding_steps"]`` and
  ``meta["n_empty_steps"]``;
* ``X`` (N, C, L): the observed values where finite, else 0 (the collate's
  ``nan_to_num``); ``M`` = ``isfinite(X)`` at observed steps; ``y`` (N, C, L): the target
  values at forecast steps, 0 elsewhere; ``target_mask`` = ``isfinite(Y)`` there (NaN in the
  non-forecast channels and unobserved entries: the reference's target mask); ``T`` (N, L)
  the times, increasing, padding repeating the last time (so Δ = 0 there);
  ``forecast_start`` (N,) the number of observed steps. No instance is dropped.
* validation rows = ``valid``, test rows = ``test``, training = ``train``
  (``val_indices_fold_0.txt``, ``test_indices_fold_0.txt``; fold scheme ``official_split``).

The loss and metric over ``target_mask`` are then the reference's pooled test MSE
(Physiome-ODE ``experiments/training/train_grafiti.py`` l.93-95, l.225-243; docs §4).

Deviations from the reference: ``OFFICIAL_DEVIATIONS`` (written into every meta.json).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError
from ssmbench.data.names import name_problem
from ssmbench.data.physiome.dataset import TARGET_LAYOUT
from ssmbench.data.physiome.models import CODE_URL, DOMAIN, PAPER_URL, PHYSIOME_MODELS
from ssmbench.data.physiome.official import CODE_OF_FOLDER, official_row
from ssmbench.data.prepared_files import seal_prepared
from ssmbench.data.provenance import PROVENANCE, recorded_files, refetch_command
from ssmbench.io import atomic_folder, index_text, prepared_stamp

#: how the prepared arrays differ from what the reference feeds its models
OFFICIAL_DEVIATIONS = [
    "padding: each row's own padding steps (time 0, every value NaN, from pad_sequence) are "
    "dropped and the row is right-padded to the fold's longest row with its last time "
    "repeated (step 0) and X, y 0, M, target_mask False; TIDES' collate keeps them and "
    "sorts them to the front of the row (step 0 there as well), so a model that reads "
    "positions rather than step sizes sees them at the end instead of the start",
    "one fixed length L per fold (its longest row); the reference pads each batch to its "
    "own longest row",
    "the observation mask M (isfinite(X) at observed steps) is stored for models that take "
    "it; TIDES' collate computes it but passes only the values and step sizes",
]
#: what the archive did to the values; we keep them as they are
NORMALISATION = {
    "kind": "per_channel_zscore",
    "by": "the archive (generate_imts.py l.67-71)",
    "rows": "z-scored by the archive over all instances, both halves (observed and forecast "
    "parts together), before the split and the |z| > 10 drop: the test rows included",
    "ddof": 1,
    "mean": None,  # the archive does not store them
    "std": None,
    "ours": "we do not re-normalise: the values are the archive's",
}
ROW_SELECTION = (
    "the archive keeps a time step only when an odd number of its channels is observed "
    "(generate_imts.py l.91-96: `(rand > t_drop).type(bool) & torch.sum(M, -1) > 0` parses "
    "as `(bool & count) > 0`); steps with 2, 4, ... observed values were dropped with their "
    "values, targets likewise over the forecast channels. Kept as the archive holds them."
)
TIMESTAMPS = (
    "T = the archive's times (t / T_max of the model's window: observed part in [0, 0.5], "
    "forecast part in (0.5, 1)); increasing along a row; padding repeats the row's last time "
    "(step 0)"
)
REFERENCE_CODE = [
    f"{CODE_URL} (data_creation/generate_imts.py)",
    "https://github.com/TaylanSoydan/TIDES (tides/tides_collate.py)",
]
#: the keys of one fold dict (official_files.read_fold's output)
FOLD_TENSORS = ("T", "X", "TY", "Y")
FOLD_SPLITS = ("train", "valid", "test")


# --------------------------------------------------------------------------- one fold
def _lengths(times: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each row's length without its trailing padding: 1 + the last step with a finite
    value or a non-zero time (pad_sequence pads with time 0 and, once masked, NaN)."""
    real = np.isfinite(values).any(axis=2) | (times != 0)
    last = real.shape[1] - np.argmax(real[:, ::-1], axis=1)
    return np.where(real.any(axis=1), last, 0)


def _check_fold(fold: dict, where: str) -> tuple[np.ndarray, ...]:
    """The fold's tensors as float32 and its split indices as int64, checked: shapes that
    fit, finite non-negative times, values finite or NaN, and splits that are disjoint,
    non-empty and cover the rows (a test row in the training rows is an error)."""
    missing = [k for k in (*FOLD_TENSORS, *FOLD_SPLITS) if k not in fold]
    if missing:
        raise DataError(
            f"{where}: the fold has no {missing} (expected {FOLD_TENSORS + FOLD_SPLITS})"
        )
    T, X, TY, Y = (np.asarray(fold[k], dtype=np.float32) for k in FOLD_TENSORS)
    if not (
        X.ndim == 3
        and Y.ndim == 3
        and T.shape == X.shape[:2]
        and TY.shape == Y.shape[:2]
        and len(X) == len(Y)
        and X.shape[2] == Y.shape[2]
    ):
        shapes = {k: np.shape(fold[k]) for k in FOLD_TENSORS}
        raise DataError(
            f"{where}: tensor shapes {shapes} do not fit T (n, Lx), X (n, Lx, C), TY (n, Ly), "
            f"Y (n, Ly, C)"
        )
    for name, t in (("T", T), ("TY", TY)):
        bad = ~np.isfinite(t) | (t < 0)
        if bad.any():
            row, step = (int(v) for v in np.argwhere(bad)[0])
            raise DataError(
                f"{where}: {name}[{row}, {step}] = {float(t[row, step])!r}; times must be "
                "finite and >= 0"
            )
    for name, v in (("X", X), ("Y", Y)):
        bad = np.isinf(v)  # NaN is "not observed"; an infinity is no value the format has
        if bad.any():
            row, step, channel = (int(i) for i in np.argwhere(bad)[0])
            raise DataError(
                f"{where}: {name}[{row}, {step}, {channel}] = "
                f"{float(v[row, step, channel])!r}; values are finite, or NaN where not observed"
            )
    n = len(X)
    splits = []
    seen = np.full(n, -1)
    for s, split in enumerate(FOLD_SPLITS):
        rows = np.asarray(fold[split])
        if rows.ndim != 1 or rows.size == 0 or rows.dtype.kind not in "iu":
            raise DataError(f"{where}: {split} must be a non-empty 1-D array of row indices")
        rows = rows.astype(np.int64)
        if rows.min() < 0 or rows.max() >= n:
            raise DataError(f"{where}: {split} indices outside the fold's {n} rows")
        for i in rows.tolist():
            if seen[i] == s:
                raise DataError(
                    f"{where}: row {i} is listed twice in {split}; a split names each of its "
                    "rows once"
                )
            if seen[i] >= 0:
                raise DataError(
                    f"{where}: row {i} is in both {FOLD_SPLITS[seen[i]]} and {split}; a fold's "
                    "test rows must stay out of its training and validation rows"
                )
            seen[i] = s
        splits.append(np.sort(rows))
    if (seen < 0).any():
        raise DataError(f"{where}: the three splits cover {int((seen >= 0).sum())} of the {n} rows")
    return T, X, TY, Y, *splits


def fold_arrays(fold: dict, where: str = "fold") -> dict:
    """The prepared arrays of one fold (the module docstring says how): ``{"arrays":
    {X.npy, y.npy, T.npy, M.npy, target_mask.npy, forecast_start.npy}, "texts":
    {test_indices_fold_0.txt, val_indices_fold_0.txt}, "sizes": {train, val, test},
    "stats": {...}}``. ``fold``: ``read_fold``'s dict (T, X, TY, Y; train, valid, test).
    DataError naming ``where`` for a fold that does not fit."""
    T, X, TY, Y, train, valid, test = _check_fold(fold, where)
    n, Lx, C = X.shape
    len_x, len_y = _lengths(T, X), _lengths(TY, Y)
    step_x, step_y = np.arange(Lx)[None, :], np.arange(TY.shape[1])[None, :]
    keep = np.concatenate([step_x < len_x[:, None], step_y < len_y[:, None]], axis=1)
    lengths = len_x + len_y
    L = max(1, int(lengths.max()))
    # each row's kept steps first, in order (observed, then forecast), then the rest
    order = np.argsort(~keep, axis=1, kind="stable")[:, :L]
    valid_step = np.take_along_axis(keep, order, axis=1)  # (n, L)
    is_fore = order >= Lx
    times = np.take_along_axis(np.concatenate([T, TY], axis=1), order, axis=1)
    values = np.take_along_axis(np.concatenate([X, Y], axis=1), order[:, :, None], axis=1)
    finite = np.isfinite(values) & valid_step[:, :, None]  # (n, L, C)
    M = finite & ~is_fore[:, :, None]
    tm = finite & is_fore[:, :, None]
    last = np.take_along_axis(times, np.maximum(lengths - 1, 0)[:, None], axis=1)
    last = np.where(lengths[:, None] > 0, last, 0.0)
    times = np.where(valid_step, times, last).astype(np.float32)
    back = np.diff(times, axis=1) < 0
    if back.any():
        row, step = (int(v) for v in np.argwhere(back)[0])
        raise DataError(
            f"{where}: row {row}: time {times[row, step + 1]!r} at step {step + 1} comes "
            f"before {times[row, step]!r}; the observed times must increase and precede the "
            f"forecast times"
        )
    arrays = {
        "X.npy": np.ascontiguousarray(np.where(M, values, 0.0).transpose(0, 2, 1), np.float32),
        "y.npy": np.ascontiguousarray(np.where(tm, values, 0.0).transpose(0, 2, 1), np.float32),
        "T.npy": np.ascontiguousarray(times),
        "M.npy": np.ascontiguousarray(M.transpose(0, 2, 1)),
        "target_mask.npy": np.ascontiguousarray(tm.transpose(0, 2, 1)),
        "forecast_start.npy": len_x.astype(np.int64),
    }
    empty_x = ~np.isfinite(X).any(axis=2) & (step_x < len_x[:, None])
    empty_y = ~np.isfinite(Y).any(axis=2) & (step_y < len_y[:, None])
    stats = {
        "n_padding_steps": int((n * (Lx + TY.shape[1])) - lengths.sum()),
        "n_empty_steps": int(empty_x.sum() + empty_y.sum()),
        "n_rows_without_inputs": int((~M.any(axis=(1, 2))).sum()),
        "n_rows_without_targets": int((~tm.any(axis=(1, 2))).sum()),
        "min_length": int(lengths.min()),
        "max_length": L,
        "source_steps": {"observed": int(Lx), "forecast": int(TY.shape[1])},
    }
    return {
        "arrays": arrays,
        "texts": {
            "test_indices_fold_0.txt": index_text(test),
            "val_indices_fold_0.txt": index_text(valid),
        },
        "sizes": {"train": int(train.size), "val": int(valid.size), "test": int(test.size)},
        "stats": stats,
    }


# --------------------------------------------------------------------------- the folder
def _json(meta: dict) -> str:
    """Strict JSON (no NaN); numpy scalars, as a generator's meta may hold, as numbers."""

    def plain(value):
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"meta.json: {type(value).__name__} is not JSON: {value!r}")

    return json.dumps(meta, indent=2, allow_nan=False, default=plain) + "\n"


def write_per_fold_folder(
    out_dir: str | os.PathLike, name: str, folds_arrays: list[dict], meta: dict
) -> Path:
    """Write ``<out_dir>/<name>/`` in one atomic step: ``fold{k}/`` for each entry of
    ``folds_arrays`` (``{"arrays": {file: array}, "texts": {file: text}, "meta": dict}``,
    a complete prepared folder of scheme ``official_split``, ``n_folds`` 1, ``fold`` k, set
    here) and the top ``meta.json`` (``meta``, with ``fold_scheme`` ``per_fold`` and
    ``n_folds`` set here). Built in a hidden sibling folder and renamed over the old one
    (``ssmbench.io.atomic_folder``): a failure leaves the previous folder as it was and no
    half-written one. Arrays are saved without pickles."""
    if (problem := name_problem("dataset", name)) is not None:
        raise DataError(f"write_per_fold_folder: {problem}")
    if not folds_arrays:
        raise DataError(f"{Path(out_dir) / name}: no folds to write")
    target = Path(out_dir) / name
    with atomic_folder(target) as tmp:
        for k, fold in enumerate(folds_arrays):
            sub = tmp / f"fold{k}"
            sub.mkdir()
            for fname, arr in fold["arrays"].items():
                np.save(sub / fname, arr, allow_pickle=False)
            for fname, text in fold["texts"].items():
                (sub / fname).write_text(text, encoding="utf-8")
            fold_meta = {**fold["meta"], "fold_scheme": "official_split", "n_folds": 1, "fold": k}
            (sub / "meta.json").write_text(_json(fold_meta), encoding="utf-8")
        top = {**meta, "fold_scheme": "per_fold", "n_folds": len(folds_arrays)}
        (tmp / "meta.json").write_text(_json(top), encoding="utf-8")
        seal_prepared(tmp)
    return target


def prepare_from_folds(
    name: str, folds: list[dict], out_dir: str | os.PathLike, meta_extra: dict
) -> Path:
    """Convert each fold (``read_fold``'s dict, from the archive or a generator; an optional
    ``"meta"`` entry of a fold goes into that fold's meta.json only, e.g. its raw files)
    and write ``<out_dir>/<name>/`` (:func:`write_per_fold_folder`); return the folder.
    ``meta_extra`` goes into every meta.json (its ``benchmark`` defaults to
    ``Path(out_dir).name``). The top meta.json's ``N`` and ``L`` are the largest fold's;
    each fold's meta.json has its own."""
    t0 = time.perf_counter()
    if not folds:
        raise DataError(f"Physiome dataset {name}: no folds to prepare")
    converted = [
        fold_arrays(f, where=f"Physiome dataset {name}, fold {k}") for k, f in enumerate(folds)
    ]
    channels = {int(c["arrays"]["X.npy"].shape[1]) for c in converted}
    if len(channels) != 1:
        raise DataError(
            f"Physiome dataset {name}: its folds have {sorted(channels)} channels; one C expected"
        )
    C = channels.pop()
    common = {
        "name": name,
        "benchmark": Path(out_dir).name,
        "domain": DOMAIN,
        "task": "regression",
        "target": "forecast: the noisy z-scored values of the second half of the window",
        "target_layout": TARGET_LAYOUT,
        "C": C,
        "n_classes": None,
        "classes": [],
        "n_targets": C,
        "target_mask": "target_mask.npy",
        "irregular": True,
        "timestamps": TIMESTAMPS,
        "forecast_start": "forecast_start.npy",
        "mask_policy": (
            "M = isfinite(X) at observed steps; target_mask = isfinite(Y) at forecast steps "
            "(NaN: not observed, or not a forecast channel)"
        ),
        "length_policy": (
            "right_pad: each row's observed then forecast steps, its own padding dropped; X, "
            "y 0, M, target_mask False and T repeated on the fold's padding"
        ),
        "nan_policy": "NaN = not observed; X and y hold 0 there (M / target_mask False)",
        "validation": "val_indices_fold_0.txt: the fold's own validation rows (valid.pt)",
        "row_order": "row i = index i of the fold's dataset; no instance is dropped",
        "deviations": OFFICIAL_DEVIATIONS,
        "reference_code": REFERENCE_CODE,
        **meta_extra,
    }
    folds_arrays, summary = [], []
    for k, (fold, conv) in enumerate(zip(folds, converted, strict=True)):
        N, _, L = conv["arrays"]["X.npy"].shape
        fold_meta = {
            **common,
            **conv["stats"],
            "N": int(N),
            "L": int(L),
            "target_shape": [C, int(L)],
            "split_sizes": conv["sizes"],
            **(fold.get("meta") or {}),
        }
        folds_arrays.append({"arrays": conv["arrays"], "texts": conv["texts"], "meta": fold_meta})
        summary.append({"fold": k, "folder": f"fold{k}", "N": int(N), "L": int(L), **conv["sizes"]})
    timings = {**(meta_extra.get("timings") or {}), "convert_s": round(time.perf_counter() - t0, 3)}
    top = {
        **common,
        "N": max(f["N"] for f in summary),
        "L": max(f["L"] for f in summary),
        "N_L_policy": "N and L: the largest fold's; each fold{k}/meta.json has its own",
        "target_shape": [C, max(f["L"] for f in summary)],
        "folds": summary,
        "fold_sizes": [{p: f[p] for p in ("train", "val", "test")} for f in summary],
        "timings": timings,
        **prepared_stamp(),
    }
    for fm in folds_arrays:
        fm["meta"]["timings"] = timings
        fm["meta"].update(prepared_stamp())
    return write_per_fold_folder(out_dir, name, folds_arrays, top)


# --------------------------------------------------------------------------- the archive
def _verified_raw(name: str, raw_dir: Path, official: str) -> tuple[dict, dict[int, list[str]]]:
    """The provenance of ``<raw_dir>/<name>/`` if every recorded file matches it (size and
    sha256) and it was fetched from the archive's ``official`` folder, and the fold files
    it holds (``{k: [rel paths]}``, k = 0..K-1, each with train/valid/test.pt). DataError
    naming each bad file otherwise."""
    from ssmbench.data.provenance import verified_provenance

    raw = raw_dir / name
    files = recorded_files(raw, name) or []
    prov = verified_provenance(raw, name, files) if files else None
    fetch_again = f"Fetch it again: `{refetch_command(raw_dir, name)}`."
    if prov is None:
        try:
            prov_file = json.loads((raw / PROVENANCE).read_text(encoding="utf-8"))
            recorded, sizes = prov_file["raw_files"], prov_file.get("sizes") or {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            recorded, sizes = {}, {}
        bad = []
        for rel in files:
            path, key = raw / rel, f"{name}/{rel}"
            if (
                not path.is_file()
                or (key in sizes and path.stat().st_size != sizes[key])
                or sha256_file(path) != recorded.get(key)
            ):
                bad.append(str(path))
        raise DataError(
            f"Physiome dataset {name}: {', '.join(bad) or raw} missing or not matching "
            f"{raw / PROVENANCE} (changed, truncated or never fetched). {fetch_again}"
        )
    if prov.get("mode") != "zenodo" or prov.get("zenodo_dataset") != official:
        raise DataError(
            f"{raw / PROVENANCE}: fetched in mode {prov.get('mode')!r} from archive folder "
            f"{prov.get('zenodo_dataset')!r}, not from the official archive's {official}/. "
            f"{fetch_again}"
        )
    prefix = f"final/{official}/"
    by_fold: dict[int, list[str]] = {}
    for rel in files:
        parts = rel[len(prefix) :].split("/") if rel.startswith(prefix) else []
        if len(parts) == 2 and parts[0].isdigit() and parts[1] in {f"{s}.pt" for s in FOLD_SPLITS}:
            by_fold.setdefault(int(parts[0]), []).append(rel)
    expected = list(range(len(by_fold)))
    incomplete = [k for k, fs in by_fold.items() if len(fs) != len(FOLD_SPLITS)]
    if not by_fold or sorted(by_fold) != expected or incomplete:
        raise DataError(
            f"{raw / 'final' / official}: expected fold folders 0..K-1 each with "
            f"{', '.join(f'{s}.pt' for s in FOLD_SPLITS)}; found folds {sorted(by_fold)}"
            + (f", incomplete {incomplete}" if incomplete else "")
            + f". {fetch_again}"
        )
    return prov, {k: sorted(by_fold[k]) for k in expected}


def prepare_official(
    name: str, raw_dir: str | os.PathLike, out_dir: str | os.PathLike, cfg: dict
) -> Path:
    """Prepare dataset ``name`` (mode zenodo, ``cfg`` = ``resolve_settings``'s) from the
    archive folder fetched into ``<raw_dir>/<name>/final/<official>/``: verify every file
    against the fetch's provenance, read each fold with ``read_fold`` (no pickled code
    runs), convert and write ``<out_dir>/<name>/`` per fold. Any failure leaves the previous
    prepared folder as it was."""
    from ssmbench.data.physiome.official_files import read_fold
    from ssmbench.data.physiome.zenodo import zenodo_dataset

    t0 = time.perf_counter()
    raw_dir = Path(raw_dir)
    official = zenodo_dataset(name, cfg)
    prov, fold_files = _verified_raw(name, raw_dir, official)
    folds = []
    for k, rels in fold_files.items():
        folder = raw_dir / name / "final" / official / str(k)
        try:
            fold = read_fold(folder)
        except DataError as exc:
            generate = (
                f"; or set benchmarks.physiome.mode: generate to simulate {name} instead"
                if name in PHYSIOME_MODELS
                else ""
            )
            raise DataError(
                f"Physiome dataset {name} (archive folder {official}, fold {k}): {exc}. Nothing "
                f"was prepared. The file matches the sha256 recorded when it was fetched, so it "
                f"is the archive's own content (`{refetch_command(raw_dir, name)}` gets it from "
                f"Zenodo again){generate}."
            ) from exc
        fold["meta"] = {
            "archive_fold": k,
            "raw_files": {f"{name}/{rel}": prov["raw_files"][f"{name}/{rel}"] for rel in rels},
        }
        folds.append(fold)
    meta_extra = {
        "source": "zenodo",
        "source_url": f"{prov.get('source_url')} ({PAPER_URL}; {CODE_URL})",
        "zenodo_record": prov.get("zenodo_record"),
        "official_dataset": official,
        "code": CODE_OF_FOLDER.get(official),
        "top50": official_row(official),
        "archive": prov.get("archive"),
        "raw_files": prov["raw_files"],
        "folds_policy": (
            "fold k = the archive's final/<dataset>/<k>/: an independent 70/20/10 re-split of "
            "the same simulations with its own instance order, noise and masks "
            "(generate_imts.py l.145-165, l.183-195); test sets of different folds overlap"
        ),
        "normalisation": NORMALISATION,
        "noise": "Gaussian, std 0.05, on the z-scored inputs and targets (by the archive)",
        "row_selection": ROW_SELECTION,
        "timings": {"read_s": round(time.perf_counter() - t0, 3)},
    }
    return prepare_from_folds(name, folds, out_dir, meta_extra)
