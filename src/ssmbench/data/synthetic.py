"""The TIDES study's synthetic and derived irregular-time datasets.

Two datasets, both written in the prepared format of ``docs/contracts.md`` with the
irregular additions ``T.npy`` (timestamps, ``(N, L)``) and ``M.npy`` (mask, ``(N, C, L)``):

* **Fading Flash** (:func:`generate_fading_flash`, :func:`prepare_fading_flash`), the
  TIDES paper's controlled diagnostic (arXiv 2605.09742). Its reference implementation is
  ``fading_flash/task.py`` of https://github.com/TaylanSoydan/TIDES. We follow that code
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

* **Drop-rate variant** (:func:`drop_time_steps`, :func:`prepare_drop_rate_variant`):
  the paper's EigenWorms ablation (reference: ``uea/droprate.py``): train with a fraction
  ``r_train = 0.5`` of the time steps dropped, test with fresh masks at
  ``r_test ∈ {0.1, 0.3, 0.5, 0.7, 0.9}``.

  - **Number kept.** ``n_keep = max(2, round((1 - r) * L))`` (Python's ``round``, half
    to even), capped at ``L``; so ``L - n_keep`` steps are dropped. Rate 0 keeps all.
  - **First step.** The first time step is always kept (reference: "t=0 always kept").
  - **Shared mask (default, as in the reference).** One mask for every series it is
    applied to: ``random.Random(seed).sample(range(L), n_keep)``, sorted, and if 0 was
    not drawn the smallest kept index is replaced by 0 -- exactly the reference's
    ``drop_mask``, so the same seed keeps the same steps as the official code. In
    :func:`prepare_drop_rate_variant` the training rows share the mask of ``seed`` (the
    reference uses one mask per training seed) and each test rate its own fixed mask,
    seed ``200 + i`` for the i-th test rate (the reference's ``EVAL_SEEDS``).
  - **Per-series masks** (``per_series=True``, an option): each series draws its own
    kept steps with ``numpy.random.default_rng(seed)``: its first present step plus
    ``n_keep - 1`` of the others, uniformly without replacement.
  - **Timestamps.** Kept steps keep their original timestamps (``T`` defaults to
    ``arange(L)``, the index on the original grid). The reference feeds the SSM the
    steps ``[1, diff(kept indices)]`` (``step_scale_from_indices``), i.e. the
    ``[T_0 + 1, diff(T)]`` of our ``T`` (the first kept index is 0).
  - **Fixed shape.** The output has the length of the longest kept series; shorter ones
    are right-padded: ``X`` with zeros, ``M`` False, and ``T`` with the series' last kept
    timestamp (so a padded step has Δ = 0, under which a ZOH-discretised SSM's state does
    not move). With equal-length input every series keeps the same number of steps and
    nothing is padded; padding happens when an input mask marks absent steps.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.io import write_prepared_folder

# --------------------------------------------------------------------------- constants
PAPER_URL = "https://arxiv.org/abs/2605.09742"
REFERENCE_CODE_URL = "https://github.com/TaylanSoydan/TIDES"

FF_NAME = "FadingFlash"
FF_LENGTH = 40
FF_RATES = (1.0, 1.5, 2.0)
FF_CHANNELS = ("flash", "rate=1", "rate=1.5", "rate=2")
FF_N_FLASHES = (2, 4)  # inclusive
FF_N_ZONES = (2, 3)  # inclusive
FF_BOUNDARIES = (4, FF_LENGTH - 4)  # boundaries drawn from range(4, 36): 4..35
TRAIN_DT_RANGE = (0.5, 1.5)
TEST_DT_GRID = (0.1, 0.2, 0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 1.8, 2.0)

DROP_TRAIN_RATE = 0.5
DROP_TEST_RATES = (0.1, 0.3, 0.5, 0.7, 0.9)
DROP_TEST_SEED_BASE = 200  # the reference's EVAL_SEEDS = {r: 200 + i}
DROP_MIN_KEEP = 2

FIXED_TEST_SETS = "fixed_test_sets"

FF_TIMESTAMP_POLICY = (
    "cumulative: T[k] = dt_0 + ... + dt_k (first timestamp = dt_0, not 0); the step of "
    "position k is [T_0, diff(T)][k]"
)
DROP_TIMESTAMP_POLICY = (
    "original timestamps of the kept steps (source T.npy, else the index arange(L)); the "
    "reference feeds the steps [T_0 + 1, diff(T)]"
)
DROP_PAD_POLICY = (
    "right_pad: series shorter than the longest kept series are padded at the end with "
    "X = 0, M = False and T = the series' last kept timestamp (dt = 0 on padding)"
)
DROP_COUNT_POLICY = (
    "n_keep = min(L, max(2, round((1 - rate) * L))) with Python's round (half to even); "
    "the first (present) step is always kept"
)


# --------------------------------------------------------------------------- helpers
def _check_count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0, got {value!r}.")
    return int(value)


def _check_positive(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}.")
    if value <= 0:
        raise ValueError(f"{what} must be > 0, got {value!r}.")
    return float(value)


def _check_rate(rate, what: str = "rate") -> float:
    if isinstance(rate, bool) or not isinstance(rate, Real) or not 0.0 <= float(rate) < 1.0:
        raise ValueError(
            f"{what} must be a number in [0, 1) (the fraction of time steps dropped), got {rate!r}."
        )
    return float(rate)


def _seed_repr(seed):
    """``seed`` as JSON: an int, a list of ints, or the SeedSequence's entropy."""
    if isinstance(seed, np.random.SeedSequence):
        return {"entropy": seed.entropy, "spawn_key": list(seed.spawn_key)}
    if isinstance(seed, Integral):
        return int(seed)
    return [int(s) for s in seed]


def _fmt(value: float) -> str:
    """A rate or step as it appears in keys and file names: 0.1, 1, 1.5."""
    return f"{float(value):g}"


def _index_text(rows) -> str:
    return "".join(f"{int(i)}\n" for i in rows)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _version() -> str:
    from ssmbench import __version__

    return __version__


# --------------------------------------------------------------------------- Fading Flash
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
    n = _check_count(n, "n")
    if dt is None:
        lo, hi = (float(v) for v in dt_range)
        _check_positive(lo, "dt_range[0]")
        _check_positive(hi, "dt_range[1]")
        if lo > hi:
            raise ValueError(f"dt_range must be (low, high) with low <= high, got {dt_range!r}.")
    else:
        dt = _check_positive(dt, "dt")
    L, n_rates = FF_LENGTH, len(FF_RATES)
    rng = np.random.default_rng(seed)

    # Flashes: n_flash distinct positions, uniformly (the n_flash smallest random keys).
    n_flash = rng.integers(FF_N_FLASHES[0], FF_N_FLASHES[1] + 1, size=n)
    ranks = np.argsort(np.argsort(rng.random((n, L)), axis=1), axis=1)
    flash = ranks < n_flash[:, None]

    # Zones: n_zones - 1 distinct boundaries from 4..35; zone[k] = #boundaries <= k.
    n_zones = rng.integers(FF_N_ZONES[0], FF_N_ZONES[1] + 1, size=n)
    lo_b, hi_b = FF_BOUNDARIES
    b_ranks = np.argsort(np.argsort(rng.random((n, hi_b - lo_b)), axis=1), axis=1)
    starts = np.zeros((n, L), dtype=np.int8)
    starts[:, lo_b:hi_b] = b_ranks < (n_zones - 1)[:, None]
    zone = np.cumsum(starts, axis=1, dtype=np.int8)

    # Rates: the first uniform, each next uniform over the two others.
    zone_rate = np.empty((n, FF_N_ZONES[1]), dtype=np.int64)
    zone_rate[:, 0] = rng.integers(0, n_rates, size=n)
    shifts = rng.integers(1, n_rates, size=(n, FF_N_ZONES[1] - 1))
    for z in range(1, FF_N_ZONES[1]):
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
    lam = np.asarray(FF_RATES, dtype=np.float64)[rate_index]
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
        "rates": list(FF_RATES),
        "channels": list(FF_CHANNELS),
        "n_flashes": list(FF_N_FLASHES),
        "n_zones": list(FF_N_ZONES),
        "zone_boundaries_from": [lo_b, hi_b - 1],
        "dt": dt,
        "dt_range": None if dt is not None else [lo, hi],
        "dt_per_step": bool(dt_per_step) if dt is None else False,
        "seed": _seed_repr(seed),
        "rng": "numpy.random.default_rng",
        "timestamps": FF_TIMESTAMP_POLICY,
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


def _test_set_keys(values, check, field: str, prefix: str) -> tuple[list[float], list[str]]:
    """Checked values of a list of test-set parameters and their `test_sets` keys
    ("dt=0.1", "rate=0.5"); empty or duplicate lists raise ValueError naming `field`."""
    checked = [check(v, f"{field} entry") for v in values]
    if not checked:
        raise ValueError(f"{field} must name at least one value.")
    keys = [f"{prefix}={_fmt(v)}" for v in checked]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{field} has duplicates: {list(values)!r}.")
    return checked, keys


def prepare_fading_flash(
    out_dir: str | os.PathLike,
    n_train: int = 100_000,
    n_test_per_dt: int = 2_000,
    seed: int = 0,
    *,
    test_dts: Sequence[float] = TEST_DT_GRID,
    dt_range: tuple[float, float] = TRAIN_DT_RANGE,
    dt_per_step: bool = False,
) -> Path:
    """Write the Fading Flash dataset to ``<out_dir>/FadingFlash/``; return that folder.

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
    n_train = _check_count(n_train, "n_train")
    n_test_per_dt = _check_count(n_test_per_dt, "n_test_per_dt")
    if n_test_per_dt == 0:
        raise ValueError("n_test_per_dt must be > 0: every test set needs rows.")
    dts, keys = _test_set_keys(test_dts, _check_positive, "test_dts", "dt")
    seed = _check_count(seed, "seed")

    parts = [generate_fading_flash(n_train, [seed, 0], dt_range=dt_range, dt_per_step=dt_per_step)]
    test_seeds = {}
    for key, d in zip(keys, dts, strict=True):
        words = [seed, 1, round(d * 1_000_000)]
        parts.append(generate_fading_flash(n_test_per_dt, words, dt=d))
        test_seeds[key] = words
    arrays = {f"{k}.npy": np.concatenate([p[k] for p in parts]) for k in ("X", "y", "T", "M")}
    N = int(arrays["X.npy"].shape[0])

    texts, test_sets, test_layout = {}, {}, {}
    start = n_train
    for key, d in zip(keys, dts, strict=True):
        fname = f"test_indices_dt_{_fmt(d)}.txt"
        texts[fname] = _index_text(range(start, start + n_test_per_dt))
        test_sets[key] = fname
        test_layout[key] = {
            "dt": d,
            "file": fname,
            "rows": [start, start + n_test_per_dt],
            "seed": test_seeds[key],
        }
        start += n_test_per_dt
    texts["test_indices_fold_0.txt"] = _index_text(range(n_train, N))

    gen = dict(parts[0]["meta"])
    for k in ("dt", "dt_range", "dt_per_step", "seed"):
        gen.pop(k)
    meta = {
        "name": FF_NAME,
        "benchmark": "synthetic",
        "domain": "Synthetic",
        "task": "regression",
        "target": "per_step: y[i, k] = h_k, the glow at step k",
        "N": N,
        "C": len(FF_CHANNELS),
        "L": FF_LENGTH,
        "n_classes": None,
        "classes": [],
        "n_targets": 1,
        "target_shape": [FF_LENGTH],
        "channels": list(FF_CHANNELS),
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
            "recurrence": "h_k = a_k h_{k-1} + b_k x_k, a_k = exp(-lam_k dt_k), "
            "b_k = (1 - a_k) / lam_k, h_{-1} = 0",
        },
        "irregular": True,
        "timestamps": FF_TIMESTAMP_POLICY,
        "mask_policy": "all True: every channel is observed at every step",
        "source": "generated",
        "source_url": f"{PAPER_URL} ({REFERENCE_CODE_URL}, fading_flash/task.py)",
        "raw_files": {},
        "length_policy": "equal_length: every series has the same length, no padding",
        "min_length": FF_LENGTH,
        "max_length": FF_LENGTH,
        "nan_policy": "none: generated data has no NaNs",
        "n_padding_nan": 0,
        "normalisation": {
            "kind": "none",
            "mean": [0.0] * len(FF_CHANNELS),
            "std": [1.0] * len(FF_CHANNELS),
        },
        "prepared_with": _version(),
        "created": _now(),
    }
    return write_prepared_folder(Path(out_dir), FF_NAME, arrays, texts, meta)


# --------------------------------------------------------------------------- drop rate
def n_kept(length: int, rate: float) -> int:
    """Steps kept of ``length`` at drop ``rate``: ``min(L, max(2, round((1 - rate) L)))``."""
    rate = _check_rate(rate)
    length = _check_count(length, "length")
    return min(length, max(DROP_MIN_KEEP, int(round((1.0 - rate) * length))))


def drop_mask(length: int, rate: float, seed: int) -> np.ndarray:
    """Sorted kept indices of a ``length``-step grid: the reference's ``drop_mask``.

    ``random.Random(seed).sample(range(length), n_keep)``, sorted; if index 0 was not drawn,
    the smallest kept index is replaced by 0. Same seed, same mask as the TIDES code.
    """
    k = n_kept(length, rate)
    keep = sorted(random.Random(seed).sample(range(length), k))
    if keep and keep[0] != 0:
        keep[0] = 0
    return np.asarray(keep, dtype=np.int64)


def drop_time_steps(
    X,
    T=None,
    *,
    rate: float,
    seed: int,
    per_series: bool = False,
    M=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop a fraction ``rate`` of the time steps of every series of ``X`` (N, C, L).

    Returns ``(X_dropped float32 (N, C, L'), T_kept float32 (N, L'), M bool (N, C, L'))``
    with ``L'`` the longest kept length. ``T`` is ``(L,)`` or ``(N, L)`` timestamps
    (default ``arange(L)``); kept steps keep theirs. ``M`` (optional, ``(N, C, L)`` or
    ``(N, L)``) marks observed values of already irregular input; a step with no observed
    channel is absent: it is never kept and does not count towards the series' length.

    By default one mask (:func:`drop_mask` of ``seed``) serves every series, as in the TIDES
    reference; ``per_series=True`` draws one per series from ``numpy.random.default_rng
    (seed)``. Per-series masks keep ``n_kept(n_present, rate)`` steps of each series, its
    first present step among them; the shared mask keeps ``n_kept(L, rate)`` grid positions
    (index 0 among them), and a series with absent steps keeps its present steps there.
    Padding policy: see the module docstring. Rate 0 returns the input (as float32, with
    ``T`` and ``M``). Raises ValueError for a rate outside ``[0, 1)``.
    """
    rate = _check_rate(rate)
    X = np.asarray(X)
    if X.ndim != 3:
        raise ValueError(f"X must be (N, C, L), got shape {X.shape}.")
    N, C, L = X.shape
    if T is None:
        T = np.broadcast_to(np.arange(L, dtype=np.float64), (N, L))
    else:
        T = np.asarray(T, dtype=np.float64)
        if T.shape == (L,):
            T = np.broadcast_to(T, (N, L))
        elif T.shape != (N, L):
            raise ValueError(f"T must be (L,) or (N, L) = {(N, L)}, got shape {T.shape}.")
    if M is None:
        M_in = None
        present = np.ones((N, L), dtype=bool)
    else:
        M_in = np.asarray(M, dtype=bool)
        if M_in.shape == (N, L):
            M_in = np.broadcast_to(M_in[:, None, :], (N, C, L))
        elif M_in.shape != (N, C, L):
            raise ValueError(f"M must be (N, C, L) or (N, L), got shape {M_in.shape}.")
        present = M_in.any(axis=1)

    n_present = present.sum(axis=1)
    n_keep = np.array([n_kept(int(p), rate) for p in n_present], dtype=np.int64)
    if per_series:
        rng = np.random.default_rng(seed)
        keys = rng.random((N, L))
        keys[~present] = np.inf
        first = np.argmax(present, axis=1)
        keys[np.arange(N), first] = -1.0  # the first present step is always kept
        ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
        keep = ranks < n_keep[:, None]
    else:
        if M_in is not None and not present.all():
            # One mask over the grid; a series keeps its present steps under it.
            keep = np.zeros((N, L), dtype=bool)
            keep[:, drop_mask(L, rate, seed)] = True
            keep &= present
        else:
            idx = drop_mask(L, rate, seed)
            Xd = np.ascontiguousarray(X[:, :, idx], dtype=np.float32)
            Td = np.ascontiguousarray(T[:, idx], dtype=np.float32)
            Md = (
                np.ones(Xd.shape, dtype=bool)
                if M_in is None
                else np.ascontiguousarray(M_in[:, :, idx])
            )
            return Xd, Td, Md

    # Compact every series' kept steps to the front (stable: time order is preserved).
    counts = keep.sum(axis=1)
    width = int(counts.max()) if N else 0
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    valid = np.take_along_axis(keep, order, axis=1)
    Xd = np.take_along_axis(X, order[:, None, :], axis=2).astype(np.float32)
    Xd[~np.broadcast_to(valid[:, None, :], Xd.shape)] = 0.0
    Td = np.take_along_axis(T, order, axis=1)
    last = np.take_along_axis(Td, np.maximum(counts - 1, 0)[:, None], axis=1)
    Td = np.where(valid, Td, last).astype(np.float32)
    if M_in is None:
        Md = np.broadcast_to(valid[:, None, :], Xd.shape).copy()
    else:
        Md = np.take_along_axis(M_in, order[:, None, :], axis=2) & valid[:, None, :]
    return Xd, Td, Md


def prepare_drop_rate_variant(
    source_prepared_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    train_rate: float = DROP_TRAIN_RATE,
    test_rates: Sequence[float] = DROP_TEST_RATES,
    seed: int = 0,
    *,
    test_seeds: Sequence[int] | None = None,
    per_series: bool = False,
    name: str | None = None,
    benchmark: str = "synthetic",
) -> Path:
    """Write the drop-rate variant of a prepared classification dataset; return its folder.

    Reads ``source_prepared_dir`` (a prepared folder, memory-mapped) and writes
    ``<out_dir>/<name>/`` (default name ``<source name>DropRate``): its fold-0 training rows
    with ``train_rate`` of their steps dropped (mask seed ``seed``), then, per test rate, a
    copy of its fold-0 test rows with that rate dropped (mask seed ``test_seeds[i]``,
    default ``200 + i`` as in the reference). ``T.npy``/``M.npy`` of the source are used
    when present. Files: ``X.npy``, ``y.npy``, ``T.npy``, ``M.npy``,
    ``test_indices_rate_<r>.txt`` per test rate, ``test_indices_fold_0.txt`` (all test
    rows), ``meta.json`` (``fold_scheme`` ``"fixed_test_sets"``, ``test_sets``
    {"rate=<r>": file}, ``derived_from``, ``drop``). The early-stopping validation split
    comes from the (dropped) training rows, as in the reference, where validation shares
    the training mask.
    """
    train_rate = _check_rate(train_rate, "train_rate")
    rates, keys = _test_set_keys(test_rates, _check_rate, "test_rates", "rate")
    seed = _check_count(seed, "seed")
    if test_seeds is None:
        t_seeds = [DROP_TEST_SEED_BASE + i for i in range(len(rates))]
    else:
        t_seeds = [_check_count(s, "test_seeds entry") for s in test_seeds]
        if len(t_seeds) != len(rates):
            raise ValueError(
                f"test_seeds has {len(t_seeds)} entries but test_rates has {len(rates)}."
            )

    src = PreparedDataset(source_prepared_dir)
    smeta = src.meta
    if smeta.get("task") != "classification":
        raise DataError(
            f"{src.path / 'meta.json'}: task is {smeta.get('task')!r}; the drop-rate variant "
            f"is built from a prepared classification dataset."
        )
    name = name or f"{smeta['name']}DropRate"
    train_idx, test_idx = src.train_indices(0), src.test_indices(0)
    X_src, y_src = src.X, src.y
    T_src = src._load("T.npy") if (src.path / "T.npy").is_file() else None
    M_src = src._load("M.npy") if (src.path / "M.npy").is_file() else None

    def part(rows, rate, s):
        return drop_time_steps(
            X_src[rows],
            None if T_src is None else T_src[rows],
            rate=rate,
            seed=s,
            per_series=per_series,
            M=None if M_src is None else M_src[rows],
        )

    parts = [part(train_idx, train_rate, seed)]
    for r, s in zip(rates, t_seeds, strict=True):
        parts.append(part(test_idx, r, s))
    width = max(p[0].shape[2] for p in parts)
    n_rows = [p[0].shape[0] for p in parts]
    N, C = sum(n_rows), int(smeta["C"])

    def stack(i, fill):
        first = parts[0][i]
        out = np.empty((N, *first.shape[1:-1], width), dtype=first.dtype)
        start = 0
        for p in parts:
            a = p[i]
            out[start : start + a.shape[0], ..., : a.shape[-1]] = a
            tail = out[start : start + a.shape[0], ..., a.shape[-1] :]
            tail[...] = a[..., -1:] if fill == "last" and a.shape[-1] else fill
            start += a.shape[0]
        return out

    X = stack(0, 0.0)
    T = stack(1, "last")
    M = stack(2, False)
    parts = None  # free the per-part copies before writing
    y = np.concatenate([y_src[train_idx]] + [y_src[test_idx]] * len(rates))
    lengths = M.any(axis=1).sum(axis=1)

    texts, test_sets, layout = {}, {}, {}
    start = n_rows[0]
    for key, r, s, n in zip(keys, rates, t_seeds, n_rows[1:], strict=True):
        fname = f"test_indices_rate_{_fmt(r)}.txt"
        texts[fname] = _index_text(range(start, start + n))
        test_sets[key] = fname
        layout[key] = {"rate": r, "file": fname, "rows": [start, start + n], "seed": s}
        start += n
    texts["test_indices_fold_0.txt"] = _index_text(range(n_rows[0], N))

    keep_keys = (
        "domain",
        "n_classes",
        "classes",
        "header_class_values",
        "label_policy",
        "source",
        "source_url",
        "raw_files",
        "nan_policy",
        "n_padding_nan",
        "normalisation",
    )
    meta = {
        "name": name,
        "benchmark": benchmark,
        "task": "classification",
        **{k: smeta[k] for k in keep_keys if k in smeta},
        "N": N,
        "C": C,
        "L": width,
        "n_train": n_rows[0],
        "n_test": N - n_rows[0],
        "fold_scheme": FIXED_TEST_SETS,
        "n_folds": 1,
        "test_sets": test_sets,
        "test_set_layout": layout,
        "derived_from": {
            "name": smeta.get("name"),
            "benchmark": smeta.get("benchmark"),
            "path": str(src.path.resolve()),
            "fold": 0,
            "fold_scheme": smeta.get("fold_scheme"),
            "N": int(smeta["N"]),
            "L": int(smeta["L"]),
            "n_train": len(train_idx),
            "n_test": len(test_idx),
            "created": smeta.get("created"),
            "prepared_with": smeta.get("prepared_with"),
        },
        "drop": {
            "train_rate": train_rate,
            "test_rates": rates,
            "seed": seed,
            "train_seed": seed,
            "test_seeds": dict(zip(keys, t_seeds, strict=True)),
            "per_series": bool(per_series),
            "mask": (
                "per_series: numpy.random.default_rng(seed)"
                if per_series
                else "shared: random.Random(seed).sample(range(L), n_keep), index 0 forced "
                "(the TIDES reference's drop_mask)"
            ),
            "n_keep": DROP_COUNT_POLICY,
            "reference": f"{REFERENCE_CODE_URL} uea/droprate.py",
        },
        "irregular": True,
        "timestamps": DROP_TIMESTAMP_POLICY,
        "mask_policy": "True where a kept value is observed; False on padding",
        "length_policy": DROP_PAD_POLICY,
        "min_length": int(lengths.min()) if N else 0,
        "max_length": width,
        "prepared_with": _version(),
        "created": _now(),
    }
    return write_prepared_folder(
        Path(out_dir),
        name,
        {"X.npy": X, "y.npy": y, "T.npy": T, "M.npy": M},
        texts,
        meta,
    )
