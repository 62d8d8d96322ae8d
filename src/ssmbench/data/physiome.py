"""Physiome-ODE (TIDES' irregular-time regression task): generated from myokit models, or
the official archive from Zenodo.

Sources read (facts and figures taken from them; the code here is our own):

* Paper: Klötergens et al., "Physiome-ODE: A Benchmark for Irregularly Sampled
  Multivariate Time Series Forecasting Based on Biological ODEs", ICLR 2025,
  https://arxiv.org/abs/2502.07489.
* Code: https://github.com/kloetergensc/Physiome-ODE -- ``data_creation/README.md``,
  ``data_creation/generate_raw_data.py`` (the σ grids), ``data_creation/generate_imts.py``
  (observation/forecast split, z-score, drop, noise, masks, folds) and
  ``resources/Top50_final.csv`` (the chosen horizon and perturbations of each of the 50
  models). That repository ships ``data_creation/generate.py`` (the simulator) only as a
  ``.pyc``; its source and ``generate_benchmark.py`` were read in the fork
  https://github.com/lannguyen0910/Physiome-ODE (``data_creation/``).
* Data: Zenodo record 11492058 (https://zenodo.org/records/11492058), one file
  ``final.zip`` (about 0.7 GB) holding ``final/<dataset>/<fold>/{train,valid,test}.pt``
  (layout as documented by the TIDES code, https://github.com/TaylanSoydan/TIDES
  ``data/README.md``; TIDES feeds them through ``tides/tides_collate.py``).

**The published protocol** (and our implementation of it, mode ``"generate"``):

1. *Simulate.* 2000 instances per model (``n_instances``). Instance ``i`` draws every
   initial state ``x0`` and every constant ``c`` uniformly in ``x (1 ± d)`` (``d_states``,
   ``d_constants``), solves the ODE on ``linspace(0, horizon, 2 n_time_points)``
   (``n_time_points = 100``; the reference's ``generate_benchmark.py`` passes ``T/2`` and
   simulates to ``2 (T/2)``) and keeps ``n_time_points`` consecutive points from a uniform
   random start in ``0..n_time_points-1`` (``rand_start``), relabelled to start at time 0.
   A failed or non-finite (or ``|x| > 1e15``) simulation is redrawn, up to 10 tries.
   Tolerances ``atol = rtol = 1e-6`` as the reference's LSODA.
2. *Split in time.* With ``t_max`` the window's last time, the observed part is
   ``t <= 0.5 t_max`` and the forecast part ``0.5 t_max < t < t_max`` (strictly: the last
   grid point is used by neither, as in the reference): 50 + 49 of the 100 points.
   Timestamps are divided by ``t_max`` (so ``T`` lies in ``[0, 1)``).
3. *Normalise.* Per-channel z-score, then drop every instance with any ``|z| > 10``
   (``max_abs``) in either part.
4. *Corrupt.* Add Gaussian noise of standard deviation 0.05 (``noise``) to every value
   (observed and forecast: the targets are noisy too), then hide each value independently
   with probability 0.8 (``mask_rate``; observed if ``u > 0.8``), separately for inputs
   and targets. Time steps where nothing is observed are removed (the reference's
   ``T_MASK``/``TY_MASK``, ``t_drop = 0``): the remaining steps are irregularly spaced.
5. *Folds.* 5 folds of 70/20/10 (train/validation/test). Metric: MSE over the observed
   forecast values.

The state variables of the model are the channels (``C`` = number of states).

**Models** (``PHYSIOME_MODELS``): real published models that myokit ships in its
package (copied into the raw folder, sha256 recorded and checked against the copy of
myokit 1.39.2):

* ``HodgkinHuxley1952``: BioModels BIOMD0000000020 (SBML, myokit's
  ``tests/data/formats/sbml/HodgkinHuxley.xml``), read with myokit's SBML importer. It
  keeps the 1952 paper's conventions (V is the depolarisation from rest, sign reversed)
  and has no stimulus: excitation comes from the perturbed constants and states, as in
  the reference, whose ``hodgkin_huxley_1952_variant01`` (a CellML variant we cannot
  read offline) is one of its 50 datasets. Its settings are that row's of
  ``Top50_final.csv``: horizon 30 ms, ``d_states`` 0.5, ``d_constants`` 0.3.
  (Hodgkin-Huxley *is* shipped as a model file, so no model of ours was written.)
* ``DiFrancescoNoble1985``: ``tests/data/dn-1985-normalised.mmt`` (CellML-derived, time
  in ms). The reference's ``difrancesco_noble_1985`` row: T = 10 s -> horizon 10000 ms,
  ``d_states`` 0.1, ``d_constants`` 0.1 (its ``Time Unit`` column says seconds).
  Self-oscillating Purkinje fibre; the file's protocol has level 0 (no stimulus).
* ``Noble1962`` (``tests/data/noble-1962.mmt``, pacemaker, protocol level 0),
  ``BeelerReuter1977`` (``tests/data/beeler-1977-model.mmt`` paced by
  ``tests/data/beeler-1977-protocol.mmt``: 2 ms pulses every 1000 ms from 100 ms) and
  ``LuoRudy1991`` (``tests/data/lr-1991.mmt`` with its own protocol: 0.5 ms pulses every
  1000 ms from 1 ms) are *not* among the reference's 50 datasets (``Top50_final.csv``),
  so their settings are our choice: horizon 2000 ms (the window of
  ~1000 ms then holds one paced beat or about two Noble-1962 pacemaker beats, period
  ~565 ms) and ``d_states = d_constants = 0.1`` (the setting the reference chose for its
  other cardiac model of this family, DiFrancesco-Noble 1985).

Pacing: the cardiac models are paced with the protocol shipped with them (myokit's
event-based pacing, compiled with the model); the protocol is not perturbed (in the
reference, a CellML model's stimulus parameters are constants and are perturbed with the
rest). Perturbed constants are all literal constants of the model (``is_literal()``, not
bound to an external value), sorted by name; zero values stay zero, as in the reference.

Simulation is compiled: one ``myokit.Simulation`` (C + CVODES) per model, reused for every
instance (``reset``, ``set_constant``, ``set_state``): 1 to 13 ms per instance on
one core (``benchmarks/bench_physiome.py``; about 1 minute for all five models).

**Deviations from the reference, and why** (also in ``meta["deviations"]``):

* *Normalisation statistics.* The reference z-scores with the mean and standard deviation
  (``torch.std``, ddof 1) of *all* instances, test included. We use the instances that are
  in no fold's test set (half of them: see the folds below), over both parts of the
  window, from the clean values, before the drop. No test row of any fold enters them.
* *Folds.* The reference draws five independent random 70/20/10 splits (seed = fold), each
  with its own noise and masks, so the test sets of different folds overlap. Ours: one
  noise and mask realisation (one ``X.npy`` for all folds) and one random permutation:
  fold k's test set is block k of ``round(0.1 N)`` rows (the five test sets are disjoint),
  its validation set the next ``round(0.2 N)`` rows (cyclically), the rest training. The
  split is drawn over the simulated instances before the drop, so after a drop the parts
  are 70/20/10 up to the dropped rows (sizes in ``meta["fold_sizes"]``).
* *Forecast channels.* For models with more than 10 states the reference scores only the
  10 channels of highest JGD (its Top50 ``channel_scores``); we compute no JGD and every
  channel is a target (``forecast_channels: "all"``). Only DiFrancescoNoble1985 (16 states)
  is concerned.
* *Failures.* The reference aborts the dataset when an instance fails 10 times; we skip
  that instance and count it (``meta["n_failed"]``).
* *Models.* The five models above instead of the reference's 50 (two overlap by name:
  Hodgkin-Huxley 1952 and DiFrancesco-Noble 1985, from other files than the reference's
  CellML exports); solver CVODES (BDF, myokit) instead of LSODA; no ``max_step`` limit.

**Prepared layout** (``<out_dir>/<Name>/``; ``docs/contracts.md`` plus the irregular
additions). One row = one instance; the observed steps then the forecast steps, merged on
one time line (the TIDES collate's layout), right-padded to the longest row ``L``:

* ``X.npy`` float32 (N, C, L): noisy z-scored values at observed *input* entries, 0 at
  hidden entries, at every forecast step and on padding.
* ``M.npy`` bool (N, C, L): True where ``X`` holds an observed input value (never in the
  forecast part).
* ``T.npy`` float32 (N, L): time / t_max of each step, increasing; padding repeats the
  row's last time (step 0 there).
* ``y.npy`` float32 (N, C, L) and ``target_mask.npy`` bool (N, C, L): the noisy z-scored
  target values at observed forecast entries (0 elsewhere) and where they are. The loss
  and the metric are the MSE over ``target_mask``.
* ``forecast_start.npy`` int64 (N,): index of each row's first forecast step (= its number
  of observed steps). Steps ``>= forecast_start`` with no target are padding.
* ``test_indices_fold_{k}.txt``, ``val_indices_fold_{k}.txt`` (k < 5): the 10 % test and
  20 % validation rows of fold k; training = the rest.
* ``meta.json``: the contract's keys plus ``channels``, ``target_layout``,
  ``forecast_from_time`` (0.5), ``forecast_from_step`` (50 when ``compact`` is false, else
  ``null``: per row in ``forecast_start.npy``), ``normalisation`` (mean, std per channel),
  ``generation`` (every setting), seeds, ``timings``, ``raw_files`` (sha256),
  ``myokit_version``, ``n_dropped`` / ``dropped_instances``, ``n_failed``, ``deviations``.

``compact: false`` keeps every grid step instead (``L`` = 99, hidden steps stay with
``M`` False), ``forecast_from_step`` 50 for every row.

Seeds: with ``w = [seed, crc32(<Name>)]`` (so two models never share masks or splits),
instance ``i``'s draw, try ``k``: ``default_rng([*w, 0, i, k])``; the split ``[*w, 1]``;
noise and masks ``[*w, 2]``. Same settings -> byte-identical arrays.

**Mode ``"zenodo"``**: ``fetch_physiome`` downloads ``final.zip`` of record 11492058 (the
record's JSON at ``<url>/api/records/<record>`` gives its ``md5:`` checksum and size; the
file comes from ``<url>/api/records/<record>/files/<file>/content``) to a ``.part`` file,
resumes an interrupted transfer with an HTTP Range request, checks size and md5, records
its sha256, and extracts ``final/<dataset>/`` of the dataset (``hodgkin_huxley_1952_variant01``
for HodgkinHuxley1952, ``difrancesco_noble_1985`` for DiFrancescoNoble1985; the other three
are not among its 50 datasets) into ``<raw_dir>/<Name>/final/``. Extraction refuses the whole
archive when any member is absolute, has a ``..`` component, is a symlink or would land
outside the target. A failure at any point leaves the previous good copy and its
provenance as they were. URLs must be https (plain http only for 127.0.0.1 / localhost /
::1, for tests); redirects are held to the same rule. ``prepare_physiome`` does not convert
that archive: its files are pickled PyTorch objects (``torch.save`` of ``Subset`` objects
of the reference's own dataset class), which we will not unpickle, and its five folds are
independent re-splits with their own noise and masks, which one ``X.npy`` with given folds
cannot hold without leaking test instances into training. Preparing a zenodo-mode dataset
raises DataError saying so; use mode ``"generate"``.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import os
import shutil
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
import zipfile
import zlib
from datetime import UTC, datetime
from numbers import Integral, Real
from pathlib import Path, PurePosixPath

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.provenance import PROVENANCE, sha256_file, verified_provenance
from ssmbench.io import atomic_write_json, swap_into_place, write_prepared_folder

# --------------------------------------------------------------------------- sources
PAPER_URL = "https://arxiv.org/abs/2502.07489"
CODE_URL = "https://github.com/kloetergensc/Physiome-ODE"
GENERATE_CODE_URL = "https://github.com/lannguyen0910/Physiome-ODE (data_creation/generate.py)"
ZENODO_RECORD = "11492058"
ZENODO_URL = "https://zenodo.org"
ZENODO_FILE = "final.zip"
MYOKIT_PINNED = "1.39.2"
BENCHMARK = "physiome"
DOMAIN = "Physiome"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DOWNLOAD_DIR = ".zenodo-download"
CHUNK = 1 << 20


def _m(files, fmt, horizon, d_states, d_constants, official, settings_from, reference, notes):
    return {
        "files": files,  # role -> path inside the installed myokit package
        "format": fmt,
        "defaults": {"horizon": horizon, "d_states": d_states, "d_constants": d_constants},
        "time_unit": "ms",
        "official": official,  # the reference's dataset of the same model, if any
        "settings_from": settings_from,
        "reference": reference,
        "notes": notes,
    }


#: our dataset name -> where its model file(s) come from (paths inside the myokit
#: package), the per-model settings and their origin. ``sha256`` of each file as shipped
#: by myokit 1.39.2 (checked on fetch).
PHYSIOME_MODELS: dict[str, dict] = {
    "HodgkinHuxley1952": _m(
        {"model": "tests/data/formats/sbml/HodgkinHuxley.xml"},
        "sbml",
        30.0,
        0.5,
        0.3,
        "hodgkin_huxley_1952_variant01",
        "Top50_final.csv row hodgkin_huxley_1952_variant01 (T=30, ds=0.5, dc=0.3)",
        "Hodgkin & Huxley 1952, J Physiol 117:500-544; BioModels BIOMD0000000020",
        "1952 conventions (V = depolarisation from rest, sign reversed); no stimulus",
    ),
    "Noble1962": _m(
        {"model": "tests/data/noble-1962.mmt"},
        "mmt",
        2000.0,
        0.1,
        0.1,
        None,
        "ours (not among the reference's 50): horizon 2000 ms, ds=dc=0.1",
        "Noble 1962, J Physiol 160:317-352 (CellML, C. Lloyd)",
        "Purkinje pacemaker (period ~565 ms); protocol level 0 (no stimulus)",
    ),
    "BeelerReuter1977": _m(
        {
            "model": "tests/data/beeler-1977-model.mmt",
            "protocol": "tests/data/beeler-1977-protocol.mmt",
        },
        "mmt",
        2000.0,
        0.1,
        0.1,
        None,
        "ours (not among the reference's 50): horizon 2000 ms, ds=dc=0.1",
        "Beeler & Reuter 1977, J Physiol 268:177-210",
        "paced: 2 ms pulses every 1000 ms from t = 100 ms (beeler-1977-protocol.mmt)",
    ),
    "DiFrancescoNoble1985": _m(
        {"model": "tests/data/dn-1985-normalised.mmt"},
        "mmt",
        10000.0,
        0.1,
        0.1,
        "difrancesco_noble_1985",
        "Top50_final.csv row difrancesco_noble_1985 (T=10 s, ds=0.1, dc=0.1)",
        "DiFrancesco & Noble 1985, Phil Trans R Soc B 307:353-398 (CellML, C. Lloyd)",
        "Purkinje pacemaker (period ~1.85 s); protocol level 0 (no stimulus); time in ms",
    ),
    "LuoRudy1991": _m(
        {"model": "tests/data/lr-1991.mmt"},
        "mmt",
        2000.0,
        0.1,
        0.1,
        None,
        "ours (not among the reference's 50): horizon 2000 ms, ds=dc=0.1",
        "Luo & Rudy 1991, Circ Res 68:1501-1526",
        "paced: 0.5 ms pulses every 1000 ms from t = 1 ms (the file's own protocol)",
    ),
}

#: sha256 of each model file as shipped in myokit 1.39.2
PINNED_SHA256 = {
    "tests/data/formats/sbml/HodgkinHuxley.xml": (
        "d2a8ef81d27111f138e0778c70f820a4ee17508758ad86a8b9e1b569c3e949f4"
    ),
    "tests/data/noble-1962.mmt": "afc7dde4afa7d9c0737d6443c1496579cc6b5378c70b2863e9cf7b5439a146ad",
    "tests/data/beeler-1977-model.mmt": (
        "d04bd2733c9a2cd1bf4d6d073215b6951f7b305dca5d5e0e81b8cf69ced31eec"
    ),
    "tests/data/beeler-1977-protocol.mmt": (
        "07877bf50c6c15a22aabb23a7bca3f6a544d580a31bc364c2240dd556cf48468"
    ),
    "tests/data/dn-1985-normalised.mmt": (
        "29f34aa1e9b3cb6e6f53002811d055b9ce30d6ece5bfbe7c281c7ed6a3c4a4b0"
    ),
    "tests/data/lr-1991.mmt": "51096a0b6fc0118aabdfe94e186aefe56d2ffecf53949e3f628caa349b40d728",
}

#: generator and download settings with the published protocol's defaults. ``None`` for
#: horizon / d_states / d_constants means "the model's own" (PHYSIOME_MODELS defaults).
DEFAULTS: dict = {
    "mode": "generate",  # "generate" (myokit) or "zenodo" (the official archive)
    # --- generator (params.yaml benchmarks.<b>.generator) ---
    "n_instances": 2000,  # generate_benchmark.py: total_samples 2000
    "n_time_points": 100,  # N_t: points per instance window
    "horizon": None,  # T of Top50_final.csv, model time units; window = horizon / 2
    "d_states": None,  # sigma_states: x0 ~ U[x (1 - d), x (1 + d)]
    "d_constants": None,  # sigma_const
    "random_start": True,  # rand_start: window starts at a random grid point 0..N_t-1
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
    "compact": True,  # drop steps where nothing is observed (T_MASK / TY_MASK)
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

TIMESTAMP_POLICY = (
    "T = t / t_max, t the time in the instance's window (starting at 0), t_max its last grid "
    "time; increasing along a row; padding repeats the row's last time (step 0)"
)
TARGET_LAYOUT = (
    "one merged time line per row: its observed steps (t <= 0.5 t_max; inputs in X where M) "
    "then its forecast steps (0.5 t_max < t < t_max; targets in y where target_mask), then "
    "padding. X is 0 and M False on forecast steps; y is 0 and target_mask False on observed "
    "steps. forecast_start.npy[i] = index of row i's first forecast step. Loss and metric: "
    "MSE over target_mask."
)
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


# --------------------------------------------------------------------------- settings
def _where(key: str) -> str:
    if key in GENERATOR_KEYS:
        return f"benchmarks.physiome.generator.{key}"
    for short, long in ZENODO_KEYS.items():
        if long == key:
            return f"benchmarks.physiome.zenodo.{short}"
    return f"benchmarks.physiome.{key}"


def _bad(key: str, value, want: str) -> DataError:
    return DataError(f"{_where(key)} in params.yaml is {value!r}; it must be {want}.")


def _int(cfg: dict, key: str, lo: int) -> None:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, Integral) or v < lo:
        raise _bad(key, v, f"an integer >= {lo}")
    cfg[key] = int(v)


def _num(cfg: dict, key: str, lo: float, hi: float | None = None, *, open_lo=False) -> None:
    v = cfg[key]
    ok = not isinstance(v, bool) and isinstance(v, Real) and math.isfinite(v)
    ok = ok and (v > lo if open_lo else v >= lo) and (hi is None or v < hi)
    if not ok:
        rng = f"{'>' if open_lo else '>='} {lo}" + ("" if hi is None else f" and < {hi}")
        raise _bad(key, v, f"a finite number {rng}")
    cfg[key] = float(v)


def _bool(cfg: dict, key: str) -> None:
    if not isinstance(cfg[key], bool):
        raise _bad(key, cfg[key], "true or false")


def _check_name(name: str) -> dict:
    if name not in PHYSIOME_MODELS:
        raise DataError(
            f"Physiome dataset {name!r} is unknown; known: {', '.join(PHYSIOME_MODELS)}. Fix "
            f"benchmarks.physiome.datasets in params.yaml."
        )
    return PHYSIOME_MODELS[name]


def resolve_settings(name: str, settings: dict | None) -> dict:
    """The effective settings of dataset ``name``: DEFAULTS, then the model's own horizon
    and perturbations, then ``settings``. ``settings`` is the benchmark's params.yaml entry:
    top-level ``mode`` / ``offline`` (and any DEFAULTS key), ``generator: {...}`` (generator
    keys, with ``models: {Name: {...}}`` per-dataset overrides) and ``zenodo: {url, record,
    file, dataset, cache_dir, timeout, retries, force}``. Other top-level keys (source,
    max_epochs, ...) are ignored; an unknown key inside ``generator`` or ``zenodo`` raises
    DataError naming it."""
    entry = _check_name(name)
    settings = dict(settings or {})
    cfg = {k: (list(v) if isinstance(v, list) else v) for k, v in DEFAULTS.items()}
    cfg["models"] = {}
    for key, value in settings.items():
        if key in DEFAULTS:
            cfg[key] = value
    gen = settings.get("generator") or {}
    if not isinstance(gen, dict):
        raise _bad("generator", gen, "a mapping of generator settings")
    unknown = sorted(set(gen) - set(GENERATOR_KEYS))
    if unknown:
        raise DataError(
            f"benchmarks.physiome.generator in params.yaml has unknown key(s) {unknown}; "
            f"allowed: {sorted(GENERATOR_KEYS)}."
        )
    cfg.update(gen)
    zen = settings.get("zenodo") or {}
    if not isinstance(zen, dict):
        raise _bad("zenodo", zen, "a mapping of download settings")
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
        raise _bad("models", models, "a mapping {DatasetName: {setting: value}}")
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
        raise _bad("mode", cfg["mode"], f"one of {list(MODES)}")
    _int(cfg, "n_instances", 1)
    _int(cfg, "n_time_points", 4)
    _num(cfg, "horizon", 0.0, open_lo=True)
    _num(cfg, "d_states", 0.0, 1.0)
    _num(cfg, "d_constants", 0.0, 1.0)
    _num(cfg, "observed_fraction", 0.0, 1.0, open_lo=True)
    _num(cfg, "forecast_fraction", 0.0, open_lo=True)
    if cfg["observed_fraction"] + cfg["forecast_fraction"] > 1.0 + 1e-12:
        raise _bad(
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
        raise _bad("split", split, "[train, validation, test] fractions > 0 summing to 1")
    cfg["split"] = [float(s) for s in split]
    if cfg["n_folds"] * cfg["split"][2] >= 1.0:
        raise _bad(
            "n_folds",
            cfg["n_folds"],
            f"such that n_folds x test fraction < 1 (the normalisation statistics come from "
            f"the rows in no fold's test set); test fraction is {cfg['split'][2]:g}",
        )
    for key in ("zenodo_url", "zenodo_record", "zenodo_file"):
        if not isinstance(cfg[key], str) or not cfg[key]:
            raise _bad(key, cfg[key], "a non-empty string")
    if "/" in cfg["zenodo_file"] or cfg["zenodo_file"] in (".", ".."):
        raise _bad("zenodo_file", cfg["zenodo_file"], "a plain file name")
    return cfg


def seed_words(cfg: dict) -> list[int]:
    """``[seed, crc32(dataset name)]``: the root of every random draw of a dataset."""
    return [int(cfg["seed"]), zlib.crc32(str(cfg.get("dataset", "")).encode("utf-8"))]


# --------------------------------------------------------------------------- model files
def _myokit():
    try:
        import myokit
    except ImportError as e:  # pragma: no cover - myokit is a pinned dependency
        raise DataError(
            f"Physiome-ODE generation needs myokit ({e}). Install the pinned dependencies "
            f"(pip install -e .; myokit=={MYOKIT_PINNED} needs the SUNDIALS headers), or set "
            f"benchmarks.physiome.mode: zenodo."
        ) from e
    return myokit


def _package_file(rel: str) -> Path:
    return Path(_myokit().__file__).parent / rel


def _raw_names(entry: dict) -> dict[str, str]:
    """role -> file name in the raw folder."""
    return {role: PurePosixPath(rel).name for role, rel in entry["files"].items()}


def load_model_files(entry: dict, folder: Path):
    """``(model, protocol)`` from the raw copies of ``entry``'s files in ``folder``. A file
    that myokit cannot read raises DataError naming it."""
    myokit = _myokit()
    names = _raw_names(entry)
    path = folder / names["model"]
    try:
        if not path.is_file():
            raise FileNotFoundError("no such file")
        if entry["format"] == "sbml":
            import myokit.formats

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Unknown SBML namespace ... level2/version3"
                model = myokit.formats.importer("sbml").model(str(path))
            protocol = None
        else:
            model, protocol, _ = myokit.load(str(path))
        model.validate()
        if "protocol" in names:
            path = folder / names["protocol"]
            protocol = myokit.load_protocol(str(path))
    except DataError:
        raise
    except Exception as e:  # myokit.ParseError, SBMLParsingError, IntegrityError, OSError...
        raise DataError(
            f"{path}: cannot be read as a myokit model file ({type(e).__name__}: {e}). The "
            f"file is corrupt or truncated: delete {folder} and run the fetch step again."
        ) from e
    if model.count_states() == 0:
        raise DataError(f"{path}: the model has no state variables; fetch it again.")
    return model, protocol


def _perturbable(model) -> list:
    """Literal constants not bound to an external value, sorted by qualified name."""
    out = [
        v for v in model.variables(const=True, deep=True) if v.is_literal() and v.binding() is None
    ]
    return sorted(out, key=lambda v: v.qname())


def _myokit_versions() -> dict:
    myokit = _myokit()
    info = {"myokit": myokit.__version__}
    try:
        info["sundials"] = str(myokit.Sundials.version())
    except Exception:  # noqa: BLE001 - informational only
        info["sundials"] = None
    return info


# --------------------------------------------------------------------------- simulation
def simulate_physiome(name: str, model_dir: str | os.PathLike, settings: dict | None) -> dict:
    """Simulate the instances of ``name`` from the model files in ``model_dir`` (the raw
    folder ``<raw_dir>/<name>``), compiled once with myokit (C + CVODES).

    Returns ``{"traj": float64 (n_ok, C, n_time_points) clean values of each kept window,
    "times": float64 (n_time_points,) window times from 0, "channels": state names,
    "instance": int64 (n_ok,) simulation index of each, "failed": [indices], "tries":
    total draws, "constants": perturbed constant names, "timings": {...}}``.
    """
    cfg = resolve_settings(name, settings)
    myokit = _myokit()
    entry = PHYSIOME_MODELS[name]
    model, protocol = load_model_files(entry, Path(model_dir))
    states = [s.qname() for s in model.states()]
    consts = _perturbable(model)
    cnames = [v.qname() for v in consts]
    x0 = np.asarray(model.initial_values(as_floats=True), dtype=np.float64)
    c0 = np.asarray([float(v.eval()) for v in consts], dtype=np.float64)

    P, n = cfg["n_time_points"], cfg["n_instances"]
    grid = np.linspace(0.0, cfg["horizon"], 2 * P)
    duration = float(grid[-1] + 0.5 * (grid[1] - grid[0]))
    t0 = time.perf_counter()
    try:
        sim = myokit.Simulation(model, protocol)
        sim.set_tolerance(abs_tol=cfg["abs_tol"], rel_tol=cfg["rel_tol"])
    except Exception as e:  # noqa: BLE001 - compiler / SUNDIALS missing
        raise DataError(
            f"Physiome dataset {name}: myokit could not compile the model ({type(e).__name__}: "
            f"{e}). It needs a C compiler and the SUNDIALS headers (Debian: libsundials-dev)."
        ) from e
    compile_s = time.perf_counter() - t0

    C = len(states)
    traj = np.empty((n, C, P), dtype=np.float64)
    ok = np.zeros(n, dtype=bool)
    failed, tries = [], 0
    t1 = time.perf_counter()
    for i in range(n):
        for k in range(cfg["max_tries"]):
            tries += 1
            rng = np.random.default_rng([*seed_words(cfg), 0, i, k])
            x = x0 * (1.0 + cfg["d_states"] * rng.uniform(-1.0, 1.0, C))
            c = c0 * (1.0 + cfg["d_constants"] * rng.uniform(-1.0, 1.0, c0.size))
            start = int(rng.integers(0, P)) if cfg["random_start"] else 0
            sim.reset()
            for qname, value in zip(cnames, c, strict=True):
                sim.set_constant(qname, float(value))
            try:
                sim.set_state([float(v) for v in x])
                d = sim.run(duration, log=states, log_times=grid)
                values = np.array([np.asarray(d[q], dtype=np.float64) for q in states])
            except (myokit.SimulationError, ArithmeticError, ValueError):
                continue
            if values.shape != (C, 2 * P):
                continue
            window = values[:, start : start + P]
            if not np.isfinite(window).all() or np.abs(window).max() > 1e15:
                continue
            traj[i], ok[i] = window, True
            break
        else:
            failed.append(i)
    simulate_s = time.perf_counter() - t1
    if not ok.any():
        raise DataError(
            f"Physiome dataset {name}: every one of {n} instances failed to simulate "
            f"{cfg['max_tries']} times. Lower benchmarks.physiome.generator.d_states / "
            f"d_constants or the horizon."
        )
    timings = {
        "compile_s": round(compile_s, 3),
        "simulate_s": round(simulate_s, 3),
        "per_instance_ms": round(1000.0 * simulate_s / n, 3),
    }
    return {
        "traj": traj[ok],
        "times": grid[:P].copy(),
        "channels": states,
        "instance": np.flatnonzero(ok).astype(np.int64),
        "failed": failed,
        "tries": tries,
        "constants": cnames,
        "timings": timings,
    }


# --------------------------------------------------------------------------- the dataset
def fold_assignment(n: int, n_folds: int, split, seed: int) -> list[dict[str, np.ndarray]]:
    """Rows of each fold: ``[{"train", "val", "test"}]`` (sorted int64 positions < n).

    One permutation of ``default_rng([*seed, 1])`` (``seed`` an int or a list of ints,
    e.g. ``seed_words(settings)``); fold k's test set is the k-th block of
    ``round(test n)`` positions, its validation set the next ``round(val n)`` positions
    (cyclically), its training set the rest. Test sets are disjoint across folds."""
    _, f_val, f_test = split
    n_test, n_val = round(f_test * n), round(f_val * n)
    if n_test < 1 or n_val < 1 or n - n_test - n_val < 1 or n_folds * n_test >= n:
        raise DataError(
            f"{n} instances are too few for {n_folds} folds of {list(split)} (each part needs "
            f"a row, and some rows must be in no test set). Raise "
            f"benchmarks.physiome.generator.n_instances."
        )
    perm = np.random.default_rng([*np.atleast_1d(seed).tolist(), 1]).permutation(n)
    folds = []
    for k in range(n_folds):
        test = perm[k * n_test : (k + 1) * n_test]
        val = perm[np.arange((k + 1) * n_test, (k + 1) * n_test + n_val) % n]
        mask = np.ones(n, dtype=bool)
        mask[test] = False
        mask[val] = False
        folds.append(
            {
                "train": np.flatnonzero(mask).astype(np.int64),
                "val": np.sort(val).astype(np.int64),
                "test": np.sort(test).astype(np.int64),
            }
        )
    return folds


def _time_parts(times: np.ndarray, observed: float, forecast: float):
    t_max = float(times[-1])
    obs = np.flatnonzero(times <= observed * t_max)
    fore = np.flatnonzero((times > observed * t_max) & (times < (observed + forecast) * t_max))
    if obs.size == 0 or fore.size == 0:
        raise DataError(
            f"the observed part ({obs.size} steps) or the forecast part ({fore.size} steps) "
            f"is empty; raise benchmarks.physiome.generator.n_time_points."
        )
    return t_max, obs, fore


def build_dataset(traj, times, settings: dict) -> dict:
    """Turn clean simulated windows into the prepared arrays (pure numpy; see the module
    docstring). ``traj`` float (n, C, P), ``times`` (P,) from 0; ``settings`` the resolved
    generator settings (``resolve_settings``).

    Returns ``{"arrays": {file: array}, "folds": [{"train", "val", "test"}] (rows of the
    output), "kept": positions of ``traj`` kept, "dropped": positions dropped, "mean",
    "std", "stats_rows", "constant_channels", "forecast_from_step", "fold_sizes"}``."""
    cfg = settings
    traj = np.asarray(traj, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    n, C, P = traj.shape
    t_max, obs, fore = _time_parts(times, cfg["observed_fraction"], cfg["forecast_fraction"])
    used = np.concatenate([obs, fore])
    n_obs, n_fore = obs.size, fore.size

    # Folds over the simulated instances; statistics from rows in no fold's test set.
    folds0 = fold_assignment(n, cfg["n_folds"], cfg["split"], seed_words(cfg))
    in_test = np.zeros(n, dtype=bool)
    for f in folds0:
        in_test[f["test"]] = True
    stats_rows = np.flatnonzero(~in_test)
    vals = traj[stats_rows][:, :, used]  # (r, C, S)
    flat = vals.transpose(1, 0, 2).reshape(C, -1)
    mean = flat.mean(axis=1)
    std = flat.std(axis=1, ddof=1) if flat.shape[1] > 1 else np.zeros(C)
    constant = np.flatnonzero(~np.isfinite(std) | (std <= 0.0))
    std = np.where(np.isfinite(std) & (std > 0.0), std, 1.0)

    z = (traj[:, :, used] - mean[None, :, None]) / std[None, :, None]
    bad = (np.abs(z) > cfg["max_abs"]).any(axis=(1, 2))
    kept = np.flatnonzero(~bad)
    dropped = np.flatnonzero(bad)
    if kept.size == 0:
        raise DataError(
            f"every instance has a value beyond |z| > {cfg['max_abs']}; nothing is left. "
            f"Check benchmarks.physiome.generator.max_abs."
        )
    new_row = np.full(n, -1, dtype=np.int64)
    new_row[kept] = np.arange(kept.size)
    folds = [{part: new_row[rows][new_row[rows] >= 0] for part, rows in f.items()} for f in folds0]
    z = z[kept]
    N = kept.size

    # Noise on every value, then independent masks for inputs and targets.
    rng = np.random.default_rng([*seed_words(cfg), 2])
    noisy = z + cfg["noise"] * rng.standard_normal(z.shape)
    observed = rng.random(z.shape) > cfg["mask_rate"]
    in_mask = observed[:, :, :n_obs]
    tg_mask = observed[:, :, n_obs:]
    t_norm = times[used] / t_max

    if cfg["compact"]:
        keep_obs = in_mask.any(axis=1)  # (N, n_obs)
        keep_fore = tg_mask.any(axis=1)  # (N, n_fore)
        keep = np.concatenate([keep_obs, keep_fore], axis=1)
        lengths = keep.sum(axis=1)
        L = max(1, int(lengths.max()))
        forecast_start = keep_obs.sum(axis=1).astype(np.int64)
        order = np.argsort(~keep, axis=1, kind="stable")[:, :L]  # kept steps first, in order
        valid = np.take_along_axis(keep, order, axis=1)
    else:
        L = n_obs + n_fore
        lengths = np.full(N, L)
        forecast_start = np.full(N, n_obs, dtype=np.int64)
        order = np.broadcast_to(np.arange(L), (N, L))
        valid = np.ones((N, L), dtype=bool)

    is_fore = order >= n_obs  # (N, L) forecast step (before padding is accounted for)
    idx3 = np.broadcast_to(order[:, None, :], (N, C, L))
    vals_l = np.take_along_axis(noisy, idx3, axis=2)
    obs_all = np.take_along_axis(observed, idx3, axis=2) & valid[:, None, :]
    M = obs_all & ~is_fore[:, None, :]
    target_mask = obs_all & is_fore[:, None, :]
    X = np.where(M, vals_l, 0.0).astype(np.float32)
    y = np.where(target_mask, vals_l, 0.0).astype(np.float32)
    T = t_norm[order]
    last = np.take_along_axis(T, np.maximum(lengths - 1, 0)[:, None], axis=1)
    T = np.where(valid, T, last).astype(np.float32)

    fold_sizes = [{part: int(rows.size) for part, rows in f.items()} for f in folds]
    return {
        "arrays": {
            "X.npy": X,
            "y.npy": y,
            "T.npy": T,
            "M.npy": np.ascontiguousarray(M),
            "target_mask.npy": np.ascontiguousarray(target_mask),
            "forecast_start.npy": forecast_start,
        },
        "folds": folds,
        "kept": kept,
        "dropped": dropped,
        "mean": mean,
        "std": std,
        "stats_rows": stats_rows,
        "constant_channels": constant.tolist(),
        "forecast_from_step": None if cfg["compact"] else int(n_obs),
        "n_observed_steps": int(n_obs),
        "n_forecast_steps": int(n_fore),
        "t_max": t_max,
        "lengths": lengths,
        "fold_sizes": fold_sizes,
    }


# --------------------------------------------------------------------------- fetch
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _recorded_files(dest: Path, name: str) -> list[str] | None:
    try:
        prov = json.loads((dest / PROVENANCE).read_text(encoding="utf-8"))
        keys = list(prov["raw_files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    files = [k.split("/", 1)[1] for k in keys if k.startswith(f"{name}/")]
    return files or None


def _intact(dest: Path, name: str, mode: str, extra: dict | None = None) -> dict | None:
    files = _recorded_files(dest, name)
    if files is None:
        return None
    prov = verified_provenance(dest, name, files)
    if prov is None or prov.get("mode") != mode:
        return None
    for key, value in (extra or {}).items():
        if prov.get(key) != value:
            return None
    return prov


def fetch_physiome(name: str, raw_dir: str | os.PathLike, settings: dict | None) -> dict:
    """Put the raw files of ``name`` in ``<raw_dir>/<name>/`` with ``provenance.json``;
    return the provenance. Mode ``"generate"``: copy the model file(s) from the installed
    myokit package (no network). Mode ``"zenodo"``: download, verify and extract the
    official archive (see the module docstring). A folder already fetched in the same mode
    and intact (every recorded sha256) is returned as it is, without network."""
    cfg = resolve_settings(name, settings)
    dest = Path(raw_dir) / name
    if cfg["mode"] == "generate":
        return _fetch_models(name, dest, cfg)
    return _fetch_zenodo(name, dest, cfg)


def _fetch_models(name: str, dest: Path, cfg: dict) -> dict:
    entry = PHYSIOME_MODELS[name]
    names = _raw_names(entry)
    existing = verified_provenance(dest, name, list(names.values()))
    if existing is not None and existing.get("mode") == "generate" and not cfg["force"]:
        return existing
    versions = _myokit_versions()
    dest.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    raw_files, sizes, origin = {}, {}, {}
    try:
        for role, rel in entry["files"].items():
            src = _package_file(rel)
            if not src.is_file():
                raise DataError(
                    f"Physiome dataset {name}: myokit {versions['myokit']} has no {src}. "
                    f"Install myokit=={MYOKIT_PINNED} (pip install -e .), or set "
                    f"benchmarks.physiome.mode: zenodo."
                )
            digest = sha256_file(src)
            if digest != PINNED_SHA256[rel]:
                raise DataError(
                    f"Physiome dataset {name}: {src} has sha256 {digest}, not the "
                    f"{PINNED_SHA256[rel]} of myokit {MYOKIT_PINNED}'s copy: the model "
                    f"changed. Install myokit=={MYOKIT_PINNED} (pip install -e .)."
                )
            fname = names[role]
            tmp = dest / f".{fname}.tmp-{uuid.uuid4().hex}"
            shutil.copyfile(src, tmp)
            staged[fname] = tmp
            raw_files[f"{name}/{fname}"] = digest
            sizes[f"{name}/{fname}"] = tmp.stat().st_size
            origin[fname] = f"myokit/{rel}"
        (dest / PROVENANCE).unlink(missing_ok=True)
        for fname, tmp in staged.items():
            os.replace(tmp, dest / fname)
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
    prov = {
        "dataset": name,
        "source": "myokit",
        "mode": "generate",
        "source_url": f"https://pypi.org/project/myokit/{versions['myokit']}/",
        "model_files": origin,
        "format": entry["format"],
        "reference": entry["reference"],
        "raw_files": raw_files,
        "sizes": sizes,
        "versions": versions,
        "fetched": _now(),
    }
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov


# --------------------------------------------------------------------------- zenodo
def check_url(url: str, what: str = "benchmarks.physiome.zenodo.url") -> str:
    """``url`` without a trailing slash if it is https, or http to a loopback host (for
    tests against a local server); otherwise DataError."""
    parts = urllib.parse.urlsplit(str(url))
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return str(url).rstrip("/")
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return str(url).rstrip("/")
    raise DataError(
        f"{what} is {url!r}: downloads must use https (plain http only to 127.0.0.1, "
        f"localhost or ::1). Fix it in params.yaml."
    )


class _SafeRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        check_url(newurl, f"a redirect from {req.full_url}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _opener(url: str):
    """An opener that holds redirects to the https rule; no proxy for a loopback host."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    handlers = [_SafeRedirect()]
    if host in LOOPBACK_HOSTS:
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def _get_json(url: str, timeout: float) -> dict:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with _opener(url).open(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise DataError(
            f"{url}: HTTP {e.code} {e.reason}. Check benchmarks.physiome.zenodo.record / url."
        ) from e
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        raise DataError(
            f"{url}: could not read the Zenodo record ({type(e).__name__}: {e}). Check the "
            f"network, or set benchmarks.physiome.mode: generate."
        ) from e


def _record_file(record: dict, fname: str, url: str) -> tuple[str, int | None]:
    """(md5 hex, size) of ``fname`` in a Zenodo record's JSON."""
    files = record.get("files")
    if isinstance(files, dict):  # some serialisations nest the list under "entries"
        files = files.get("entries")
        files = list(files.values()) if isinstance(files, dict) else files
    for f in files or []:
        if isinstance(f, dict) and (f.get("key") or f.get("filename")) == fname:
            checksum = str(f.get("checksum") or "")
            algo, _, digest = checksum.partition(":")
            if algo.lower() != "md5" or len(digest) != 32:
                raise DataError(
                    f"{url}: file {fname} has checksum {checksum!r}, not 'md5:<32 hex>'; "
                    f"cannot verify the download."
                )
            size = f.get("size", f.get("filesize"))
            return digest.lower(), (int(size) if isinstance(size, Integral) else None)
    listed = [f.get("key") for f in files or [] if isinstance(f, dict)]
    raise DataError(
        f"{url}: the record has no file {fname!r} (files: {listed}). Fix "
        f"benchmarks.physiome.zenodo.file."
    )


def _md5_sha256(path: Path) -> tuple[str, str]:
    md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            md5.update(chunk)
            sha.update(chunk)
    return md5.hexdigest(), sha.hexdigest()


def download_verified(
    url: str, target: Path, md5: str, size: int | None, *, retries: int, timeout: float
) -> str:
    """Download ``url`` to ``target`` through ``<target>.part``: resume a partial transfer
    with a Range request, retry an interrupted one up to ``retries`` times, check the size
    and the md5, and only then rename it to ``target``. Returns its sha256. An interrupted
    transfer leaves the ``.part`` (a later call resumes it); a wrong checksum deletes it."""
    url = check_url(url)
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    last: Exception | None = None
    for _attempt in range(retries + 1):
        have = part.stat().st_size if part.is_file() else 0
        if size is not None and have > size:
            part.unlink()
            have = 0
        if size is None or have < size:
            try:
                _transfer(url, part, have, timeout)
            except _Interrupted as e:
                last = e
                continue
        got = part.stat().st_size
        if size is not None and got != size:
            last = _Interrupted(f"{got} of {size} bytes")
            if got > size:
                part.unlink()
            continue
        digest, sha = _md5_sha256(part)
        if digest != md5:
            part.unlink()
            raise DataError(
                f"{target.name} downloaded from {url} is corrupt: md5 {digest}, but the Zenodo "
                f"record says {md5}. It was deleted; run the fetch again. The previous copy, "
                f"if any, was kept."
            )
        os.replace(part, target)
        return sha
    raise DataError(
        f"{target.name} from {url}: the transfer was interrupted {retries + 1} time(s) "
        f"({last}). The partial file {part} is kept and a later fetch resumes it; run the "
        f"fetch again (or raise benchmarks.physiome.zenodo.retries). The previous copy, if "
        f"any, was kept."
    )


class _Interrupted(Exception):
    pass


def _transfer(url: str, part: Path, have: int, timeout: float) -> None:
    headers = {"Range": f"bytes={have}-"} if have else {}
    req = urllib.request.Request(url, headers=headers)
    try:
        with _opener(url).open(req, timeout=timeout) as resp:
            status = resp.status
            if have and status == 206:
                content_range = resp.headers.get("Content-Range", "")
                if not content_range.startswith(f"bytes {have}-"):
                    raise _Interrupted(f"unexpected Content-Range {content_range!r}")
                mode = "ab"
            elif status == 200:
                mode = "wb"  # the server ignored the Range: start again
            else:
                raise _Interrupted(f"HTTP {status}")
            expected = resp.headers.get("Content-Length")
            written = 0
            with open(part, mode) as f:
                while True:
                    chunk = resp.read(CHUNK)
                    if not chunk:
                        break
                    f.write(chunk)
                    written += len(chunk)
                f.flush()
                os.fsync(f.fileno())
            if expected is not None and written != int(expected):
                raise _Interrupted(f"got {written} of {expected} bytes")
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # range beyond the end: restart from scratch
            part.unlink(missing_ok=True)
            raise _Interrupted("HTTP 416 on resume; restarting") from e
        raise DataError(f"{url}: HTTP {e.code} {e.reason}.") from e
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise _Interrupted(f"{type(e).__name__}: {e}") from e


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member may not be extracted (None if it may)."""
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute or Windows path"
    parts = PurePosixPath(name).parts
    if any(p == ".." for p in parts):
        return "has a '..' component (zip-slip)"
    if "\x00" in name:
        return "has a NUL byte in its name"
    return None


def safe_extract(archive: Path, target: Path, prefix: str = "") -> list[str]:
    """Extract the members of zip ``archive`` under ``prefix`` into ``target``; return
    their relative paths. Refuses the whole archive (DataError naming the member) if any
    member is absolute, has a ``..`` component, is a symlink or resolves outside
    ``target``; a corrupt archive or member raises DataError naming it."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"{archive}: not a readable zip archive ({e}); fetch it again.") from e
    out = []
    with zf:
        members = zf.infolist()
        for info in members:
            why = _unsafe_member(info)
            if why is None:
                dest = (target / info.filename).resolve()
                if dest != root and root not in dest.parents:
                    why = "resolves outside the target folder"
            if why is not None:
                raise DataError(
                    f"{archive}: member {info.filename!r} {why}; the archive is refused and "
                    f"nothing was extracted from it."
                )
        for info in members:
            if prefix and not info.filename.startswith(prefix):
                continue
            dest = target / info.filename
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, CHUNK)
            except (zipfile.BadZipFile, OSError, EOFError) as e:
                raise DataError(
                    f"{archive}: member {info.filename!r} is corrupt ({e}); fetch again."
                ) from e
            out.append(info.filename)
    return out


def _zenodo_dataset(name: str, cfg: dict) -> str:
    official = cfg["zenodo_dataset"] or PHYSIOME_MODELS[name]["official"]
    if not official:
        have = [n for n, e in PHYSIOME_MODELS.items() if e["official"]]
        raise DataError(
            f"Physiome dataset {name} is not one of the official archive's 50 datasets (only "
            f"{', '.join(have)} of ours are). Set benchmarks.physiome.mode: generate, or name "
            f"the archive's folder in benchmarks.physiome.zenodo.dataset."
        )
    if "/" in official or official in (".", ".."):
        raise _bad("zenodo_dataset", official, "a plain folder name")
    return official


def _fetch_zenodo(name: str, dest: Path, cfg: dict) -> dict:
    official = _zenodo_dataset(name, cfg)
    base = check_url(cfg["zenodo_url"])
    existing = _intact(dest, name, "zenodo", {"zenodo_dataset": official})
    if existing is not None and not cfg["force"]:
        return existing
    if cfg["offline"]:
        raise DataError(
            f"Physiome dataset {name} (mode zenodo) is not fetched (or {dest} is damaged) and "
            f"benchmarks.physiome.offline is true. Go online, or set "
            f"benchmarks.physiome.mode: generate."
        )
    record_url = f"{base}/api/records/{cfg['zenodo_record']}"
    fname = cfg["zenodo_file"]
    md5, size = _record_file(_get_json(record_url, cfg["timeout"]), fname, record_url)
    file_url = f"{record_url}/files/{urllib.parse.quote(fname)}/content"
    cache = Path(cfg["cache_dir"]) if cfg["cache_dir"] else dest / DOWNLOAD_DIR
    archive = cache / fname
    sha = None
    if archive.is_file():  # a verified archive from an earlier fetch (cache_dir)
        got_md5, got_sha = _md5_sha256(archive)
        if got_md5 == md5 and (size is None or archive.stat().st_size == size):
            sha = got_sha
        else:
            archive.unlink()
    if sha is None:
        sha = download_verified(
            file_url, archive, md5, size, retries=cfg["retries"], timeout=cfg["timeout"]
        )
    prefix = f"final/{official}/"
    staging = dest / f".extract-{uuid.uuid4().hex}"
    try:
        files = safe_extract(archive, staging, prefix)
        files = [f for f in files if not f.endswith("/")]
        if not files:
            with zipfile.ZipFile(archive) as zf:
                names = sorted(
                    {
                        p.split("/")[1]
                        for p in zf.namelist()
                        if p.startswith("final/") and p.count("/") >= 2
                    }
                )
            raise DataError(
                f"{archive}: no {prefix} in the archive (it has {len(names)} datasets, e.g. "
                f"{names[:5]}). Fix benchmarks.physiome.zenodo.dataset."
            )
        raw_files, sizes = {}, {}
        for rel in files:
            path = staging / rel
            raw_files[f"{name}/{rel}"] = sha256_file(path)
            sizes[f"{name}/{rel}"] = path.stat().st_size
        (dest / PROVENANCE).unlink(missing_ok=True)
        swap_into_place(staging / "final", dest / "final")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not cfg["cache_dir"]:
        archive.unlink(missing_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
    prov = {
        "dataset": name,
        "source": "zenodo",
        "mode": "zenodo",
        "source_url": f"{base}/records/{cfg['zenodo_record']}",
        "zenodo_record": cfg["zenodo_record"],
        "zenodo_dataset": official,
        "archive": {"file": fname, "url": file_url, "md5": md5, "sha256": sha, "size": size},
        "raw_files": raw_files,
        "sizes": sizes,
        "fetched": _now(),
    }
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov


# --------------------------------------------------------------------------- pre-flight
def locate_physiome(name: str, settings: dict | None) -> None:
    """Raise DataError (naming the setting to fix) when ``name`` cannot be had: unknown,
    bad settings, generate mode without myokit's model files, zenodo mode for a model
    that is not in the archive, a non-https URL, or zenodo mode while offline. Decided
    without network."""
    cfg = resolve_settings(name, settings)
    if cfg["mode"] == "generate":
        entry = PHYSIOME_MODELS[name]
        for rel in entry["files"].values():
            if not _package_file(rel).is_file():
                raise DataError(
                    f"Physiome dataset {name}: the installed myokit has no {rel}. Install "
                    f"myokit=={MYOKIT_PINNED} (pip install -e .), or set "
                    f"benchmarks.physiome.mode: zenodo."
                )
        return
    _zenodo_dataset(name, cfg)
    check_url(cfg["zenodo_url"])
    if cfg["offline"]:
        raise DataError(
            f"Physiome dataset {name}: mode zenodo needs network but "
            f"benchmarks.physiome.offline is true. Set benchmarks.physiome.mode: generate "
            f"(offline, from myokit's models) or offline: false."
        )


# --------------------------------------------------------------------------- prepare
def _index_text(rows) -> str:
    return "".join(f"{int(i)}\n" for i in rows)


def prepare_physiome(
    name: str, raw_dir: str | os.PathLike, out_dir: str | os.PathLike, settings: dict | None
) -> Path:
    """Write ``<out_dir>/<name>/`` (atomically) from the model files fetched into
    ``<raw_dir>/<name>/``; return the folder. See the module docstring for the layout."""
    t_start = time.perf_counter()
    cfg = resolve_settings(name, settings)
    entry = PHYSIOME_MODELS[name]
    raw = Path(raw_dir) / name
    if cfg["mode"] == "zenodo":
        raise DataError(
            f"Physiome dataset {name}: mode zenodo fetches the official archive but cannot "
            f"prepare it: its files are pickled PyTorch objects (we do not unpickle) and its "
            f"five folds are independent re-splits with their own noise and masks, which "
            f"given folds over one X.npy cannot hold without leaking test instances. Set "
            f"benchmarks.physiome.mode: generate."
        )
    names = _raw_names(entry)
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
            f"{raw / PROVENANCE} (changed, truncated or never fetched). Delete {raw} and run "
            f"the fetch step again."
        )

    sim = simulate_physiome(name, raw, cfg)
    built = build_dataset(sim["traj"], sim["times"], cfg)
    arrays = built["arrays"]
    N, C, L = arrays["X.npy"].shape
    texts = {}
    for k, f in enumerate(built["folds"]):
        texts[f"test_indices_fold_{k}.txt"] = _index_text(f["test"])
        texts[f"val_indices_fold_{k}.txt"] = _index_text(f["val"])
    inst = sim["instance"]
    fold0 = built["fold_sizes"][0]
    lengths = built["lengths"]
    gen = {k: cfg[k] for k in GENERATOR_KEYS if k != "models"}
    versions = _myokit_versions()
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
        "channels": sim["channels"],
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
        "generation": gen,
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
        "n_simulated": cfg["n_instances"],
        "n_failed": len(sim["failed"]),
        "failed_instances": sim["failed"],
        "n_draws": sim["tries"],
        "n_dropped": int(built["dropped"].size),
        "dropped_instances": inst[built["dropped"]].tolist(),
        "row_instance": inst[built["kept"]].tolist(),
        "length_policy": (
            "right_pad: rows hold their observed then forecast steps with something observed "
            "(all steps when compact is false); X, y 0, M, target_mask False, T repeated"
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
        "deviations": DEVIATIONS,
        "reference_code": [CODE_URL, GENERATE_CODE_URL],
        "prepared_with": _version(),
        "created": _now(),
    }
    meta["timings"] = {
        **sim["timings"],
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    return write_prepared_folder(out_dir, name, arrays, texts, meta)


def _version() -> str:
    from ssmbench import __version__

    return __version__
