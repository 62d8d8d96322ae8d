"""Preparing a Physiome-ODE dataset: simulate the fetched model, build the arrays, and write
``<out_dir>/<Name>/`` with its ``meta.json`` (every setting, seed, timing, the raw files'
sha256 and the deviations from the reference) in one atomic step. A zenodo-mode dataset
(the official archive's folds, fetched by ``zenodo.py``) is verified against its fetch's
provenance, read by a restricted unpickler (no code of the files runs) and written one
prepared folder per fold (``official_prepare.prepare_official``; fold_scheme ``per_fold``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError
from ssmbench.data.physiome.dataset import TARGET_LAYOUT, TIMESTAMP_POLICY, build_dataset
from ssmbench.data.physiome.models import (
    BENCHMARK,
    CODE_URL,
    DOMAIN,
    GENERATE_CODE_URL,
    PAPER_URL,
    PHYSIOME_MODELS,
)
from ssmbench.data.physiome.myokit_models import myokit_versions, raw_names
from ssmbench.data.physiome.settings import (
    GENERATOR_KEYS,
    ZENODO_RECORD,
    resolve_settings,
    seed_words,
)
from ssmbench.data.physiome.simulate import simulate_physiome
from ssmbench.data.prepared_files import write_prepared_folder
from ssmbench.data.provenance import PROVENANCE, refetch_command, verified_provenance
from ssmbench.io import index_text, prepared_stamp

#: how our protocol differs from the reference's, written into ``meta["deviations"]``
#: (``ssmbench.data.physiome`` says why)
DEVIATIONS = [
    "normalisation: mean/std from the rows in no fold's test set (reference: all rows)",
    "folds: one noise/mask realisation and one permutation; the five 10 % test sets are "
    "disjoint (reference: five independent 70/20/10 re-splits, each with its own noise and "
    "masks); split drawn before the |z| > 10 drop",
    "forecast channels: all states (reference: the 10 of highest JGD when a model has more)",
    "an instance failing max_tries times is skipped and counted (reference: aborts)",
    "models: five myokit-shipped files (HH 1952 from BioModels SBML, the others myokit .mmt "
    "conversions of CellML) instead of the reference's 50 CellML exports; solver CVODES "
    "(myokit) instead of LSODA; no max_step; pacing protocols not perturbed",
]


#: the deviations of ``folds: reference`` (the archive's protocol, generated here)
REFERENCE_FOLD_DEVIATIONS = [
    "folds: the reference's five independent re-splits (generate_imts.py l.145-165), each "
    "with its own shuffle, noise, masks and 70/20/10 split; numpy default_rng([seed, "
    "crc32(name), 3, k]) instead of Python random / torch: the protocol is equal, not the "
    "bytes",
    "normalisation: all instances, both halves, before the drop, as the reference, computed "
    "once in float64 (reference: per fold, float32); a constant channel keeps std 1 "
    "(reference: NaN)",
    "forecast channels: all states (reference: the 10 of highest JGD when a model has more)",
    "an instance failing max_tries times is skipped and counted (reference: aborts)",
]


def model_deviation(entry: dict) -> str:
    """How the dataset's model file differs from the reference's (the last deviation)."""
    if entry.get("package") == "ssmbench":
        return (
            f"model: our myokit transcription of the reference's model.py "
            f"({entry.get('source_url')}); solver CVODES (myokit) instead of LSODA; no "
            "max_step"
        )
    return DEVIATIONS[-1]


def _generator_meta(name: str, cfg: dict, entry: dict, prov: dict, sim: dict) -> dict:
    """What every meta.json of a generated dataset says about its generation."""
    versions = myokit_versions()
    return {
        "channels": sim["channels"],
        "source": "generated",
        "source_url": f"{PAPER_URL} ({CODE_URL}; Zenodo record {ZENODO_RECORD})",
        "raw_files": prov["raw_files"],
        "model": {
            "files": prov.get("model_files"),
            "format": entry["format"],
            "reference": entry["reference"],
            "notes": entry["notes"],
            "settings_from": entry["settings_from"],
            "official_counterpart": entry["official"],
            "time_unit": entry["time_unit"],
            "perturbed_constants": sim["constants"],
        },
        "myokit_version": versions["myokit"],
        "sundials_version": versions["sundials"],
        "generation": {k: cfg[k] for k in GENERATOR_KEYS if k != "models"},
        "n_simulated": cfg["n_instances"],
        "n_failed": len(sim["failed"]),
        "failed_instances": sim["failed"],
        "n_draws": sim["tries"],
        "reference_code": [CODE_URL, GENERATE_CODE_URL],
    }


def _prepare_reference_folds(name, out_dir, cfg, entry, prov, sim, t_start) -> Path:
    """``folds: reference``: the simulated windows through the archive's protocol
    (``reference_folds.build_reference_folds``), each fold converted as an archive fold is
    (``official_prepare.prepare_from_folds``): fold_scheme ``per_fold``."""
    from ssmbench.data.physiome.official_prepare import prepare_from_folds
    from ssmbench.data.physiome.reference_folds import build_reference_folds

    built = build_reference_folds(sim["traj"], sim["times"], cfg)
    inst = np.asarray(sim["instance"])
    folds = []
    for fold, rows, dropped in zip(built["folds"], built["rows"], built["dropped"], strict=True):
        fold_meta = {
            "row_instance": inst[rows].tolist(),
            "n_dropped": int(len(dropped)),
            "dropped_instances": inst[dropped].tolist(),
        }
        folds.append({**fold, "meta": fold_meta})
    meta_extra = {
        **_generator_meta(name, cfg, entry, prov, sim),
        "benchmark": BENCHMARK,
        "folds_policy": "reference: five independent re-splits of the simulated instances, "
        "each with its own shuffle, drop, noise, masks and split (generate_imts.py)",
        "row_selection": cfg["row_selection"],
        "normalisation": {
            "kind": "per_channel_zscore",
            "rows": "every instance, both parts of the window, clean values, before the drop "
            "(the reference's)",
            "ddof": 1,
            "mean": np.asarray(built["mean"]).tolist(),
            "std": np.asarray(built["std"]).tolist(),
            "constant_channels": built["constant_channels"],
        },
        "forecast_from_time": cfg["observed_fraction"],
        "forecast_until_time": cfg["observed_fraction"] + cfg["forecast_fraction"],
        "n_observed_steps": built["n_observed_steps"],
        "n_forecast_steps": built["n_forecast_steps"],
        "forecast_channels": "all",
        "seeds": {
            "words": seed_words(cfg),
            "instance": "default_rng([*words, 0, i, try]), words = [seed, crc32(name)]",
            "folds": "default_rng([*words, 3, k]) for fold k",
            "seed": cfg["seed"],
        },
        "window": {
            "t_max": built["t_max"],
            "grid": "linspace(0, horizon, 2 n_time_points), window of n_time_points points",
        },
        "deviations": [*REFERENCE_FOLD_DEVIATIONS, model_deviation(entry)],
        "timings": {**sim["timings"], "generate_s": round(time.perf_counter() - t_start, 3)},
    }
    return prepare_from_folds(name, folds, out_dir, meta_extra)


def prepare_physiome(
    name: str, raw_dir: str | os.PathLike, out_dir: str | os.PathLike, settings: dict | None
) -> Path:
    """Write ``<out_dir>/<name>/`` (atomically) from the model files fetched into
    ``<raw_dir>/<name>/``; return the folder. The layout: ``physiome/dataset.py``."""
    t_start = time.perf_counter()
    cfg = resolve_settings(name, settings)
    if cfg["mode"] == "zenodo":  # the archive's folds, one prepared folder each
        from ssmbench.data.physiome.official_prepare import prepare_official

        return prepare_official(name, raw_dir, out_dir, cfg)
    entry = PHYSIOME_MODELS[name]
    raw = Path(raw_dir) / name
    names = raw_names(entry)
    prov = verified_provenance(raw, name, list(names.values()))
    if prov is None:
        try:
            recorded = json.loads((raw / PROVENANCE).read_text(encoding="utf-8"))["raw_files"]
        except (OSError, ValueError, KeyError, TypeError):
            recorded = {}
        bad = [
            str(raw / f)
            for f in names.values()
            if not (raw / f).is_file() or recorded.get(f"{name}/{f}") != sha256_file(raw / f)
        ]
        raise DataError(
            f"Physiome dataset {name}: {', '.join(bad) or raw} missing or not matching "
            f"{raw / PROVENANCE} (changed, truncated or never fetched). Fetch it again: "
            f"`{refetch_command(raw_dir, name)}`."
        )

    sim = simulate_physiome(name, raw, cfg)
    if cfg["folds"] == "reference":  # the archive's independent re-splits, one folder each
        return _prepare_reference_folds(name, out_dir, cfg, entry, prov, sim, t_start)
    built = build_dataset(sim["traj"], sim["times"], cfg)
    arrays = built["arrays"]
    N, C, L = arrays["X.npy"].shape
    texts = {}
    for k, f in enumerate(built["folds"]):
        texts[f"test_indices_fold_{k}.txt"] = index_text(f["test"])
        texts[f"val_indices_fold_{k}.txt"] = index_text(f["val"])
    inst = sim["instance"]
    fold0 = built["fold_sizes"][0]
    lengths = built["lengths"]
    meta = {
        "name": name,
        "benchmark": BENCHMARK,
        "domain": DOMAIN,
        "task": "regression",
        "target": "forecast: the noisy z-scored values of the second half of the window",
        "target_layout": TARGET_LAYOUT,
        "N": int(N),
        "C": int(C),
        "L": int(L),
        "n_classes": None,
        "classes": [],
        "n_targets": int(C),
        "target_shape": [int(C), int(L)],
        "target_mask": "target_mask.npy",
        "n_train": fold0["train"],
        "n_val": fold0["val"],
        "n_test": fold0["test"],
        "fold_scheme": "given_folds",
        "n_folds": cfg["n_folds"],
        "validation": "val_indices_fold_{k}.txt (the 20 % validation part of fold k)",
        "fold_sizes": built["fold_sizes"],
        "split": cfg["split"],
        "irregular": True,
        "timestamps": TIMESTAMP_POLICY,
        "mask_policy": (
            "M: observed input values (observed part only); target_mask: observed forecast "
            "values; each value observed with probability 1 - mask_rate, independently"
        ),
        "forecast_from_time": cfg["observed_fraction"],
        "forecast_until_time": cfg["observed_fraction"] + cfg["forecast_fraction"],
        "forecast_from_step": built["forecast_from_step"],
        "forecast_start": "forecast_start.npy",
        "n_observed_steps": built["n_observed_steps"],
        "n_forecast_steps": built["n_forecast_steps"],
        "forecast_channels": "all",
        **_generator_meta(name, cfg, entry, prov, sim),
        "seeds": {
            "words": seed_words(cfg),
            "instance": "default_rng([*words, 0, i, try]), words = [seed, crc32(name)]",
            "split": "default_rng([*words, 1])",
            "noise_and_masks": "default_rng([*words, 2])",
            "seed": cfg["seed"],
        },
        "window": {
            "t_max": built["t_max"],
            "grid": "linspace(0, horizon, 2 n_time_points), window of n_time_points points",
        },
        "n_dropped": int(built["dropped"].size),
        "dropped_instances": inst[built["dropped"]].tolist(),
        "row_instance": inst[built["kept"]].tolist(),
        "length_policy": (
            "right_pad: rows hold their observed then forecast steps that row_selection "
            "keeps (odd_count: an odd number of channels observed, the archive's rule; "
            "any_observed: at least one); X, y 0, M, target_mask False, T repeated"
            if cfg["compact"]
            else "equal_length: every grid step kept"
        ),
        "min_length": int(lengths.min()),
        "max_length": int(L),
        "nan_policy": "none: failed simulations are redrawn; values are finite",
        "n_padding_nan": 0,
        "normalisation": {
            "kind": "per_channel_zscore",
            "rows": "the instances in no fold's test set, both parts of the window, clean "
            "values, before the drop",
            "ddof": 1,
            "mean": built["mean"].tolist(),
            "std": built["std"].tolist(),
            "constant_channels": built["constant_channels"],
        },
        "deviations": [*DEVIATIONS[:-1], model_deviation(entry)],
        **prepared_stamp(),
    }
    meta["timings"] = {
        **sim["timings"],
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    return write_prepared_folder(out_dir, name, arrays, texts, meta)
