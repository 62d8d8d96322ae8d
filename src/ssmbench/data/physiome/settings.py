"""The settings of a Physiome-ODE dataset: the published protocol's defaults, the params.yaml
keys that override them (``benchmarks.physiome`` with ``generator:`` and ``zenodo:``), their
validation (a bad value raises DataError naming its params.yaml key), and the seed words
every random draw of a dataset starts from.

A dataset is one of our generated models (``models.PHYSIOME_MODELS``) or, in mode
``"zenodo"`` only, one of the official archive's 50 datasets by its leaderboard code
(``official.OFFICIAL_DATASETS``: ``DUP01``, ``HOD01``, ...)."""

from __future__ import annotations

import math
import zlib
from numbers import Integral, Real

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.models import PHYSIOME_MODELS
from ssmbench.data.physiome.official import OFFICIAL_DATASETS

#: the official archive: Zenodo record 11492058, one file (the ``zenodo:`` defaults)
ZENODO_RECORD = "11492058"
ZENODO_URL = "https://zenodo.org"
ZENODO_FILE = "final.zip"

#: generator and download settings with the published protocol's defaults. ``None`` for
#: horizon / d_states / d_constants means "the model's own" (PHYSIOME_MODELS defaults); a
#: model's defaults may also set n_time_points and random_start (they win over these).
DEFAULTS: dict = {
    "mode": "generate",  # "generate" (myokit) or "zenodo" (the official archive)
    # --- generator (params.yaml benchmarks.<b>.generator) ---
    "n_instances": 2000,  # generate_benchmark.py: total_samples 2000
    "n_time_points": 100,  # N_t: points per instance window
    "horizon": None,  # T of Top50_final.csv, model time units; window = horizon / 2
    "d_states": None,  # sigma_states: x0 ~ U[x (1 - d), x (1 + d)]
    "d_constants": None,  # sigma_const
    # rand_start: window starts at a random grid point 0..N_t-1; generate_benchmark.py l.29
    # sets True for every final dataset (Top50_final.csv's rand_start False is the tuning
    # runs' setting: generate_raw_data.py l.38, evaluate.py l.75, with total_samples 100)
    "random_start": True,
    "observed_fraction": 0.5,  # generate_imts.py observation_time
    "forecast_fraction": 0.5,  # generate_imts.py forecasting_horizon
    "mask_rate": 0.8,  # c_drop: each value hidden with probability 0.8
    "noise": 0.05,  # Gaussian noise std on z-scored values
    "max_abs": 10.0,  # drop instances with any |z| > 10
    "n_folds": 5,
    "split": [0.7, 0.2, 0.1],  # train / validation / test
    "seed": 0,
    "abs_tol": 1e-6,  # generate.py: lsoda atol = rtol = 1e-6
    "rel_tol": 1e-6,
    "max_tries": 10,  # generate.py: TRIES = 10
    "compact": True,  # drop unselected time steps (T_MASK / TY_MASK; see row_selection)
    # generate_imts.py l.183-195: fold k (0..4) is an independent re-split of all instances
    # (random.seed(k) shuffle, torch.manual_seed(k) noise, masks and random_split), each
    # with its own arrays (reference_folds.py). "disjoint": one noise/mask realisation and
    # five disjoint 10 % test sets over one X.npy (dataset.build_dataset, our deviation).
    "folds": "reference",
    # generate_imts.py l.91-96 parse `(rand > t_drop).bool() & count > 0` as
    # `(bool & count) > 0`: a time step is kept only if an ODD number of its channels is
    # observed ("odd_count", what the archive holds). "any_observed": the stated intent.
    "row_selection": "odd_count",
    "models": {},  # per-dataset overrides: {Name: {horizon: ..., ...}}
    # --- zenodo (params.yaml benchmarks.<b>.zenodo) ---
    "zenodo_url": ZENODO_URL,
    "zenodo_record": ZENODO_RECORD,
    "zenodo_file": ZENODO_FILE,
    "zenodo_dataset": None,  # the archive's dataset folder; default: the model's "official"
    "cache_dir": None,  # keep the verified archive here (else deleted after extraction)
    "timeout": 60.0,
    "retries": 3,  # extra attempts after an interrupted transfer (resumed with Range)
    "force": False,  # fetch again even if the raw folder is intact
    "offline": False,
}

GENERATOR_KEYS = (
    "n_instances",
    "n_time_points",
    "horizon",
    "d_states",
    "d_constants",
    "random_start",
    "observed_fraction",
    "forecast_fraction",
    "mask_rate",
    "noise",
    "max_abs",
    "n_folds",
    "split",
    "seed",
    "abs_tol",
    "rel_tol",
    "max_tries",
    "compact",
    "folds",
    "row_selection",
    "models",
)
PER_MODEL_KEYS = tuple(k for k in GENERATOR_KEYS if k != "models")
#: params.yaml ``zenodo:`` key -> DEFAULTS key
ZENODO_KEYS = {
    "url": "zenodo_url",
    "record": "zenodo_record",
    "file": "zenodo_file",
    "dataset": "zenodo_dataset",
    "cache_dir": "cache_dir",
    "timeout": "timeout",
    "retries": "retries",
    "force": "force",
}
MODES = ("generate", "zenodo")
FOLD_PROTOCOLS = ("reference", "disjoint")
ROW_SELECTIONS = ("odd_count", "any_observed")


def _where(key: str) -> str:
    if key in GENERATOR_KEYS:
        return f"benchmarks.physiome.generator.{key}"
    for short, long in ZENODO_KEYS.items():
        if long == key:
            return f"benchmarks.physiome.zenodo.{short}"
    return f"benchmarks.physiome.{key}"


def bad_setting(key: str, value, want: str) -> DataError:
    return DataError(f"{_where(key)} in params.yaml is {value!r}; it must be {want}.")


def _int(cfg: dict, key: str, lo: int) -> None:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, Integral) or v < lo:
        raise bad_setting(key, v, f"an integer >= {lo}")
    cfg[key] = int(v)


def _num(cfg: dict, key: str, lo: float, hi: float | None = None, *, open_lo=False) -> None:
    v = cfg[key]
    ok = not isinstance(v, bool) and isinstance(v, Real) and math.isfinite(v)
    ok = ok and (v > lo if open_lo else v >= lo) and (hi is None or v < hi)
    if not ok:
        rng = f"{'>' if open_lo else '>='} {lo}" + ("" if hi is None else f" and < {hi}")
        raise bad_setting(key, v, f"a finite number {rng}")
    cfg[key] = float(v)


def _bool(cfg: dict, key: str) -> None:
    if not isinstance(cfg[key], bool):
        raise bad_setting(key, cfg[key], "true or false")


def _check_name(name: str) -> dict:
    """The model table's entry of ``name``, or an official dataset's (its Top50 horizon and
    perturbations as the defaults: facts only, since we never generate it)."""
    if name in PHYSIOME_MODELS:
        return PHYSIOME_MODELS[name]
    if name in OFFICIAL_DATASETS:
        row = OFFICIAL_DATASETS[name]
        return {
            "defaults": {k: row[k] for k in ("d_states", "d_constants")} | {"horizon": row["T"]}
        }
    raise DataError(
        f"Physiome dataset {name!r} is unknown; known: {', '.join(PHYSIOME_MODELS)} "
        f"(generated), or in mode zenodo one of the official archive's 50 codes "
        f"({', '.join(OFFICIAL_DATASETS)}). Fix benchmarks.<benchmark>.datasets in params.yaml."
    )


def resolve_settings(name: str, settings: dict | None) -> dict:
    """The effective settings of dataset ``name``: DEFAULTS, then the model's own defaults
    (``PHYSIOME_MODELS[name]["defaults"]``: horizon, perturbations, and for the reference's
    own models the window settings), then ``settings``; a key still ``None`` afterwards
    takes the model's value. ``settings`` is the benchmark's params.yaml entry:
    top-level ``mode`` / ``offline`` (and any DEFAULTS key), ``generator: {...}`` (generator
    keys, with ``models: {Name: {...}}`` per-dataset overrides) and ``zenodo: {url, record,
    file, dataset, cache_dir, timeout, retries, force}``. Other top-level keys (source,
    max_epochs, ...) are ignored; an unknown key inside ``generator`` or ``zenodo`` raises
    DataError naming it."""
    entry = _check_name(name)
    settings = dict(settings or {})
    cfg = {k: (list(v) if isinstance(v, list) else v) for k, v in DEFAULTS.items()}
    cfg["models"] = {}
    # the model's defaults sit between the generic ones and params.yaml, which overrides both
    cfg.update(entry["defaults"])
    for key, value in settings.items():
        if key in DEFAULTS:
            cfg[key] = value
    gen = settings.get("generator") or {}
    if not isinstance(gen, dict):
        raise bad_setting("generator", gen, "a mapping of generator settings")
    unknown = sorted(set(gen) - set(GENERATOR_KEYS))
    if unknown:
        raise DataError(
            f"benchmarks.physiome.generator in params.yaml has unknown key(s) {unknown}; "
            f"allowed: {sorted(GENERATOR_KEYS)}."
        )
    cfg.update(gen)
    zen = settings.get("zenodo") or {}
    if not isinstance(zen, dict):
        raise bad_setting("zenodo", zen, "a mapping of download settings")
    unknown = sorted(set(zen) - set(ZENODO_KEYS))
    if unknown:
        raise DataError(
            f"benchmarks.physiome.zenodo in params.yaml has unknown key(s) {unknown}; "
            f"allowed: {sorted(ZENODO_KEYS)}."
        )
    for key, value in zen.items():
        cfg[ZENODO_KEYS[key]] = value
    models = cfg.pop("models") or {}
    if not isinstance(models, dict):
        raise bad_setting("models", models, "a mapping {DatasetName: {setting: value}}")
    over = models.get(name) or {}
    if not isinstance(over, dict) or set(over) - set(PER_MODEL_KEYS):
        raise DataError(
            f"benchmarks.physiome.generator.models.{name} in params.yaml must be a mapping "
            f"of {sorted(PER_MODEL_KEYS)}; got {over!r}."
        )
    cfg.update(over)
    for key, value in entry["defaults"].items():
        if cfg[key] is None:
            cfg[key] = value
    cfg["dataset"] = name

    if cfg["mode"] not in MODES:
        raise bad_setting("mode", cfg["mode"], f"one of {list(MODES)}")
    if name not in PHYSIOME_MODELS and cfg["mode"] != "zenodo":
        ours = [
            n
            for n, e in PHYSIOME_MODELS.items()
            if e["official"] == OFFICIAL_DATASETS[name]["dataset"]
        ]
        raise DataError(
            f"Physiome dataset {name} is one of the official archive's 50 datasets, which we "
            f"fetch but do not generate: set the benchmark's mode: zenodo in params.yaml (e.g. "
            f"benchmarks.physiome_ode)"
            + (f", or generate our own model {ours[0]} instead." if ours else ".")
        )
    _int(cfg, "n_instances", 1)
    _int(cfg, "n_time_points", 4)
    _num(cfg, "horizon", 0.0, open_lo=True)
    _num(cfg, "d_states", 0.0, 1.0)
    _num(cfg, "d_constants", 0.0, 1.0)
    _num(cfg, "observed_fraction", 0.0, 1.0, open_lo=True)
    _num(cfg, "forecast_fraction", 0.0, open_lo=True)
    if cfg["observed_fraction"] + cfg["forecast_fraction"] > 1.0 + 1e-12:
        raise bad_setting(
            "forecast_fraction",
            cfg["forecast_fraction"],
            f"at most 1 - observed_fraction = {1 - cfg['observed_fraction']:g}",
        )
    _num(cfg, "mask_rate", 0.0, 1.0)
    _num(cfg, "noise", 0.0)
    _num(cfg, "max_abs", 0.0, open_lo=True)
    _int(cfg, "n_folds", 1)
    _int(cfg, "seed", 0)
    _num(cfg, "abs_tol", 0.0, open_lo=True)
    _num(cfg, "rel_tol", 0.0, open_lo=True)
    _int(cfg, "max_tries", 1)
    _int(cfg, "retries", 0)
    _num(cfg, "timeout", 0.0, open_lo=True)
    for key in ("random_start", "compact", "force", "offline"):
        _bool(cfg, key)
    split = cfg["split"]
    if (
        not isinstance(split, list | tuple)
        or len(split) != 3
        or not all(isinstance(s, Real) and not isinstance(s, bool) and s > 0 for s in split)
        or abs(sum(split) - 1.0) > 1e-9
    ):
        raise bad_setting("split", split, "[train, validation, test] fractions > 0 summing to 1")
    cfg["split"] = [float(s) for s in split]
    if cfg["folds"] not in FOLD_PROTOCOLS:
        raise bad_setting(
            "folds",
            cfg["folds"],
            f"one of {list(FOLD_PROTOCOLS)}: 'reference' for the official archive's "
            f"independent re-splits with their own noise and masks (generate_imts.py "
            f"l.183-195), 'disjoint' for one realisation with disjoint test sets",
        )
    if cfg["row_selection"] not in ROW_SELECTIONS:
        raise bad_setting(
            "row_selection",
            cfg["row_selection"],
            f"one of {list(ROW_SELECTIONS)}: 'odd_count' keeps a time step only if an odd "
            f"number of its channels is observed (the archive, generate_imts.py l.91-96), "
            f"'any_observed' if at least one is",
        )
    # only disjoint folds need rows that are in no test set (their statistics come from them)
    if cfg["folds"] == "disjoint" and cfg["n_folds"] * cfg["split"][2] >= 1.0:
        raise bad_setting(
            "n_folds",
            cfg["n_folds"],
            f"such that n_folds x test fraction < 1 with folds: disjoint (the normalisation "
            f"statistics come from the rows in no fold's test set; test fraction "
            f"{cfg['split'][2]:g}), or set benchmarks.physiome.generator.folds: reference",
        )
    for key in ("zenodo_url", "zenodo_record", "zenodo_file"):
        if not isinstance(cfg[key], str) or not cfg[key]:
            raise bad_setting(key, cfg[key], "a non-empty string")
    if "/" in cfg["zenodo_file"] or cfg["zenodo_file"] in (".", ".."):
        raise bad_setting("zenodo_file", cfg["zenodo_file"], "a plain file name")
    return cfg


def seed_words(cfg: dict) -> list[int]:
    """``[seed, crc32(dataset name)]``: the root of every random draw of a dataset."""
    return [int(cfg["seed"]), zlib.crc32(str(cfg.get("dataset", "")).encode("utf-8"))]
