"""Fading Flash: the TIDES study's synthetic irregular-time regression task, written in the
prepared format of ``docs/contracts.md`` with the irregular additions ``T.npy``
(timestamps, ``(N, L)``) and ``M.npy`` (mask, ``(N, C, L)``).

:func:`generate_fading_flash` draws sequences, :func:`prepare_fading_flash` writes the
dataset. The task is the TIDES paper's controlled diagnostic (arXiv 2605.09742). Its
reference implementation is ``fading_flash/task.py`` of
https://github.com/TaylanSoydan/TIDES. We follow that code
(its distribution; we use our own seeded ``numpy.random.Generator``, so the numbers are
not the same):

- ``L = 40`` steps, split into 2 or 3 contiguous zones (equally likely). The zone
  boundaries are distinct positions drawn uniformly from ``4..35``
  (``range(4, L - 4)``), so the first zone has at least 4 steps and the last at least 5.
- Each zone has a decay rate ``λ ∈ {1, 1.5, 2}``: the first zone's is uniform, every
  later zone's is uniform over the two rates that differ from the previous zone's
  (adjacent zones never share a rate; zones 1 and 3 may).
- 2, 3 or 4 (equally likely) unit flashes at distinct uniformly drawn steps
  (``x_k = 1``, else 0).
- Inputs, channels first: ``X[:, 0]`` the flash, ``X[:, 1 + j]`` the one-hot of the
  current zone's rate index ``j`` (λ = 1, 1.5, 2).
- Target ``h_k = α_k h_{k-1} + β_k x_k`` with ``α_k = exp(-λ_k Δ_k)``,
  ``β_k = (1 - α_k)/λ_k`` and ``h_{-1} = 0``: the exact zero-order-hold solution of
  ``dh/dt = -λ h + x``. Computed in float64, stored as float32 ``y (N, 40)``.
- **Step sizes.** As in the reference code, one Δ per *sequence* (shared by its 40
  steps), drawn ``U[0.5, 1.5]`` for training; the test sets use a constant Δ each.
  ``dt_per_step=True`` draws Δ independently per step instead (irregular sampling
  within a sequence); it is an option, not the paper's task.
- **Test grid.** The reference code's ``DT_GRID``: Δ ∈ {0.1, 0.2, 0.3, 0.5, 0.8, 1.0,
  1.2, 1.5, 1.8, 2.0} (``TEST_DT_GRID``), one test set per Δ; pass ``test_dts`` for
  another grid (e.g. 0.1, 0.2, ..., 2.0).
- **Timestamps.** ``T[:, k] = Δ_0 + ... + Δ_k`` (cumulative, the *first* timestamp is
  ``Δ_0``, not 0), so the per-step steps are recovered exactly as
  ``[T_0, diff(T)]`` -- the convention of TIDES' own collate (``tides_collate.py``:
  "Prepend first timestamp so every position has a step value"). Every step, including
  the first, then has the Δ its α, β were computed with.
- ``M`` is all True (nothing is missing).
- **Noise** (``input_noise``, ``target_noise``; the noisy variant ``FadingFlashNoisy``
  takes the reference's 0.2 and 0.05): Gaussian noise of that standard deviation added to
  every input value and every target of the training rows (which the validation split is
  drawn from), seeded ``[seed, 2]``; the test sets stay clean, so the error is measured
  against the noiseless glow, as the reference's ``eval_at_dt`` does. The reference adds
  fresh noise to each of its 3,000 batches; one epoch over the static rows (our protocol)
  sees each noisy row once, the same distribution.
- **Probes.** ``meta.json`` asks a trained model for its ``effective_decay`` per zone
  (``ssmbench.train.probes``): the input of each zone (the one-hot of its rate, no flash)
  and the test grid of Δ.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from ssmbench.data.fixed_test_sets import (
    FIXED_TEST_SETS,
    TIDES_CODE_URL,
    TIDES_PAPER_URL,
    check_count,
    fmt,
    test_set_keys,
)
from ssmbench.data.prepared_files import write_prepared_folder
from ssmbench.io import index_text, prepared_stamp

NAME = "FadingFlash"
#: The noisy variant (the reference's ``noisy_sigma_in`` / ``noisy_sigma_out``): the same
#: task, its training rows drawn with noise on the inputs and the targets, its test sets clean.
NOISY_NAME = "FadingFlashNoisy"
NAMES = (NAME, NOISY_NAME)
LENGTH = 40
RATES = (1.0, 1.5, 2.0)
CHANNELS = ("flash", "rate=1", "rate=1.5", "rate=2")
N_FLASHES = (2, 4)  # inclusive
N_ZONES = (2, 3)  # inclusive
BOUNDARIES = (4, LENGTH - 4)  # boundaries drawn from range(4, 36): 4..35
TRAIN_DT_RANGE = (0.5, 1.5)
TEST_DT_GRID = (0.1, 0.2, 0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 1.8, 2.0)

TIMESTAMP_POLICY = (
    "cumulative: T[k] = dt_0 + ... + dt_k (first timestamp = dt_0, not 0); the step of "
    "position k is [T_0, diff(T)][k]"
)


def _check_positive(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}.")
    if value <= 0:
        raise ValueError(f"{what} must be > 0, got {value!r}.")
    return float(value)


def _seed_repr(seed):
    """``seed`` as JSON: an int, a list of ints, or the SeedSequence's entropy."""
    if isinstance(seed, np.random.SeedSequence):
        return {"entropy": seed.entropy, "spawn_key": list(seed.spawn_key)}
    if isinstance(seed, Integral):
        return int(seed)
    return [int(s) for s in seed]


def generate_fading_flash(
    n: int,
    seed,
    dt: float | None = None,
    dt_range: tuple[float, float] = TRAIN_DT_RANGE,
    *,
    dt_per_step: bool = False,
) -> dict:
    """``n`` Fading Flash sequences (see the module docstring for the task).

    ``dt=None`` draws the step size from ``U[dt_range]`` (one per sequence, or one per step
    with ``dt_per_step``); a number makes every step that size (a test set). ``seed`` is
    anything ``numpy.random.default_rng`` takes; the same seed gives identical arrays.

    Returns ``{"X": float32 (n, 4, 40), "y": float32 (n, 40), "T": float32 (n, 40),
    "M": bool (n, 4, 40) all True, "dt": float64 (n, 40) the step of each position,
    "rate_index": int8 (n, 40), "zone": int8 (n, 40), "meta": {generation parameters}}``.
    """
    n = check_count(n, "n")
    if dt is None:
        lo, hi = _check_dt_range(dt_range)
    else:
        dt = _check_positive(dt, "dt")
    L, n_rates = LENGTH, len(RATES)
    rng = np.random.default_rng(seed)

    # Flashes: n_flash distinct positions, uniformly (the n_flash smallest random keys).
    n_flash = rng.integers(N_FLASHES[0], N_FLASHES[1] + 1, size=n)
    ranks = np.argsort(np.argsort(rng.random((n, L)), axis=1), axis=1)
    flash = ranks < n_flash[:, None]

    # Zones: n_zones - 1 distinct boundaries from 4..35; zone[k] = #boundaries <= k.
    n_zones = rng.integers(N_ZONES[0], N_ZONES[1] + 1, size=n)
    lo_b, hi_b = BOUNDARIES
    b_ranks = np.argsort(np.argsort(rng.random((n, hi_b - lo_b)), axis=1), axis=1)
    starts = np.zeros((n, L), dtype=np.int8)
    starts[:, lo_b:hi_b] = b_ranks < (n_zones - 1)[:, None]
    zone = np.cumsum(starts, axis=1, dtype=np.int8)

    # Rates: the first uniform, each next uniform over the two others.
    zone_rate = np.empty((n, N_ZONES[1]), dtype=np.int64)
    zone_rate[:, 0] = rng.integers(0, n_rates, size=n)
    shifts = rng.integers(1, n_rates, size=(n, N_ZONES[1] - 1))
    for z in range(1, N_ZONES[1]):
        zone_rate[:, z] = (zone_rate[:, z - 1] + shifts[:, z - 1]) % n_rates
    rate_index = np.take_along_axis(zone_rate, zone.astype(np.int64), axis=1)

    # Steps.
    if dt is not None:
        steps = np.full((n, L), dt, dtype=np.float64)
    elif dt_per_step:
        steps = rng.uniform(lo, hi, size=(n, L))
    else:
        steps = np.repeat(rng.uniform(lo, hi, size=(n, 1)), L, axis=1)

    # Target: exact ZOH recurrence, float64.
    lam = np.asarray(RATES, dtype=np.float64)[rate_index]
    alpha = np.exp(-lam * steps)
    beta = (1.0 - alpha) / lam
    x = flash.astype(np.float64)
    y = np.empty((n, L), dtype=np.float64)
    h = np.zeros(n, dtype=np.float64)
    for k in range(L):
        h = alpha[:, k] * h + beta[:, k] * x[:, k]
        y[:, k] = h

    X = np.zeros((n, 1 + n_rates, L), dtype=np.float32)
    X[:, 0, :] = flash
    for j in range(n_rates):
        X[:, 1 + j, :] = rate_index == j
    meta = {
        "L": L,
        "rates": list(RATES),
        "channels": list(CHANNELS),
        "n_flashes": list(N_FLASHES),
        "n_zones": list(N_ZONES),
        "zone_boundaries_from": [lo_b, hi_b - 1],
        "dt": dt,
        "dt_range": None if dt is not None else [lo, hi],
        "dt_per_step": bool(dt_per_step) if dt is None else False,
        "seed": _seed_repr(seed),
        "rng": "numpy.random.default_rng",
        "timestamps": TIMESTAMP_POLICY,
    }
    return {
        "X": X,
        "y": y.astype(np.float32),
        "T": np.cumsum(steps, axis=1).astype(np.float32),
        "M": np.ones(X.shape, dtype=bool),
        "dt": steps,
        "rate_index": rate_index.astype(np.int8),
        "zone": zone,
        "meta": meta,
    }


def _check_dt_range(dt_range) -> tuple[float, float]:
    if isinstance(dt_range, str | bytes) or len(dt_range) != 2:
        raise ValueError(f"dt_range must be (low, high), got {dt_range!r}.")
    lo, hi = (_check_positive(v, f"dt_range[{i}]") for i, v in enumerate(dt_range))
    if lo > hi:
        raise ValueError(f"dt_range must be (low, high) with low <= high, got {dt_range!r}.")
    return lo, hi


def _checked(
    n_train, n_test_per_dt, seed, test_dts, dt_range, dt_per_step, input_noise, target_noise
):
    """``prepare_fading_flash``'s settings, checked: ``(n_train, n_test_per_dt, seed,
    test Δs, test-set keys)``. Raises ValueError naming the key."""
    for key, value in (("input_noise", input_noise), ("target_noise", target_noise)):
        if not isinstance(value, Real) or isinstance(value, bool) or not 0 <= value < np.inf:
            raise ValueError(f"{key} must be a finite number >= 0, got {value!r}.")
    n_train = check_count(n_train, "n_train")
    n_test_per_dt = check_count(n_test_per_dt, "n_test_per_dt")
    if n_test_per_dt == 0:
        raise ValueError("n_test_per_dt must be > 0: every test set needs rows.")
    dts, keys = test_set_keys(test_dts, _check_positive, "test_dts", "dt")
    seed = check_count(seed, "seed")
    _check_dt_range(dt_range)
    if not isinstance(dt_per_step, bool):
        raise ValueError(f"dt_per_step must be true or false, got {dt_per_step!r}.")
    return n_train, n_test_per_dt, seed, dts, keys


def check_generator(generator: dict) -> None:
    """A params.yaml ``generator:`` mapping checked as ``prepare_fading_flash`` would take
    it (its own defaults for what is left out), without generating anything, so a bad
    value stops the workflow before any job runs. Raises TypeError for an unknown key,
    ValueError naming a bad value."""
    bound = inspect.signature(prepare_fading_flash).bind(None, **generator)
    bound.apply_defaults()
    settings = {k: v for k, v in bound.arguments.items() if k not in ("out_dir", "name")}
    _checked(**settings)


def prepare_fading_flash(
    out_dir: str | os.PathLike,
    n_train: int = 100_000,
    n_test_per_dt: int = 2_000,
    seed: int = 0,
    *,
    test_dts: Sequence[float] = TEST_DT_GRID,
    dt_range: tuple[float, float] = TRAIN_DT_RANGE,
    dt_per_step: bool = False,
    input_noise: float = 0.0,
    target_noise: float = 0.0,
    name: str = NAME,
) -> Path:
    """Write the Fading Flash dataset to ``<out_dir>/<name>/`` (``FadingFlash``, or
    ``FadingFlashNoisy`` with its noise); return that folder.

    ``out_dir`` is the benchmark's prepared folder (e.g. ``data/prepared/synthetic``), as for
    ``prepare_uea``. Rows ``0..n_train-1`` are training sequences (Δ ~ U[dt_range]); then
    ``n_test_per_dt`` rows per Δ of ``test_dts``, in that order. Files: ``X.npy`` float32
    (N, 4, 40), ``y.npy`` float32 (N, 40) per-step targets, ``T.npy`` float32 (N, 40),
    ``M.npy`` bool (N, 4, 40), ``test_indices_dt_<Δ>.txt`` per test set,
    ``test_indices_fold_0.txt`` (all test rows) and ``meta.json`` (``fold_scheme``
    ``"fixed_test_sets"``, ``test_sets`` {"dt=<Δ>": file}).

    Seeds: the training part uses ``[seed, 0]``, the test set of Δ uses
    ``[seed, 1, round(Δ * 1e6)]``, so a test set does not change when the grid does. The
    reference's static dataset has 100,000 training and 2,000 test sequences per Δ (these
    defaults); its experiments draw fresh training batches instead (3000 steps × 32).
    """
    n_train, n_test_per_dt, seed, dts, keys = _checked(
        n_train, n_test_per_dt, seed, test_dts, dt_range, dt_per_step, input_noise, target_noise
    )
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES}, got {name!r}.")

    parts = [generate_fading_flash(n_train, [seed, 0], dt_range=dt_range, dt_per_step=dt_per_step)]
    test_seeds = {}
    for key, d in zip(keys, dts, strict=True):
        words = [seed, 1, round(d * 1_000_000)]
        parts.append(generate_fading_flash(n_test_per_dt, words, dt=d))
        test_seeds[key] = words
    if input_noise or target_noise:  # the training rows only: the test sets stay clean
        rng = np.random.default_rng([seed, 2])
        train = parts[0]
        noise_x = rng.standard_normal(train["X"].shape) * input_noise
        noise_y = rng.standard_normal(train["y"].shape) * target_noise
        train["X"] = (train["X"] + noise_x).astype(np.float32)
        train["y"] = (train["y"] + noise_y).astype(np.float32)
    arrays = {f"{k}.npy": np.concatenate([p[k] for p in parts]) for k in ("X", "y", "T", "M")}
    N = int(arrays["X.npy"].shape[0])

    texts, test_sets, test_layout = {}, {}, {}
    start = n_train
    for key, d in zip(keys, dts, strict=True):
        fname = f"test_indices_dt_{fmt(d)}.txt"
        texts[fname] = index_text(range(start, start + n_test_per_dt))
        test_sets[key] = fname
        test_layout[key] = {
            "dt": d,
            "file": fname,
            "rows": [start, start + n_test_per_dt],
            "seed": test_seeds[key],
        }
        start += n_test_per_dt
    texts["test_indices_fold_0.txt"] = index_text(range(n_train, N))

    gen = dict(parts[0]["meta"])
    for k in ("dt", "dt_range", "dt_per_step", "seed"):
        gen.pop(k)
    meta = {
        "name": name,
        "benchmark": "synthetic",
        "domain": "Synthetic",
        "task": "regression",
        "target": "per_step: y[i, k] = h_k, the glow at step k",
        "N": N,
        "C": len(CHANNELS),
        "L": LENGTH,
        "n_classes": None,
        "classes": [],
        "n_targets": 1,
        "target_shape": [LENGTH],
        "channels": list(CHANNELS),
        "n_train": n_train,
        "n_test": N - n_train,
        "fold_scheme": FIXED_TEST_SETS,
        "n_folds": 1,
        "test_sets": test_sets,
        "test_set_layout": test_layout,
        "seed": seed,
        "train_seed": [seed, 0],
        "generation": {
            **gen,
            "train_dt_range": [float(v) for v in dt_range],
            "train_dt_per_step": bool(dt_per_step),
            "test_dts": dts,
            "n_test_per_dt": n_test_per_dt,
            "train_input_noise": float(input_noise),
            "train_target_noise": float(target_noise),
            "noise_seed": [seed, 2] if input_noise or target_noise else None,
            "recurrence": "h_k = a_k h_{k-1} + b_k x_k, a_k = exp(-lam_k dt_k), "
            "b_k = (1 - a_k) / lam_k, h_{-1} = 0",
        },
        "irregular": True,
        "probes": {
            "effective_decay": {
                "rates": list(RATES),
                "inputs": [
                    [0.0] + [float(i == j) for i in range(len(RATES))] for j in range(len(RATES))
                ],  # fmt: skip
                "dts": dts,
            }
        },
        "timestamps": TIMESTAMP_POLICY,
        "mask_policy": "all True: every channel is observed at every step",
        "source": "generated",
        "source_url": f"{TIDES_PAPER_URL} ({TIDES_CODE_URL}, fading_flash/task.py)",
        "raw_files": {},
        "length_policy": "equal_length: every series has the same length, no padding",
        "min_length": LENGTH,
        "max_length": LENGTH,
        "nan_policy": "none: generated data has no NaNs",
        "n_padding_nan": 0,
        "normalisation": {
            "kind": "none",
            "mean": [0.0] * len(CHANNELS),
            "std": [1.0] * len(CHANNELS),
        },
        **prepared_stamp(),
    }
    return write_prepared_folder(Path(out_dir), name, arrays, texts, meta)
