"""Building a Physiome-ODE dataset from simulated windows (steps 2 to 5 of the protocol,
``ssmbench.data.physiome``), in pure numpy: the folds, the split in time, the z-score and
the drop, noise and masks, and the merged irregular time line of the prepared arrays.

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

With ``compact`` (the default) a row keeps the steps that ``row_selection`` selects
(``kept_steps``: an odd number of observed channels, the archive's rule, or at least one).
``compact: false`` keeps every grid step instead (``L`` = 99, hidden steps stay with
``M`` False), ``forecast_from_step`` 50 for every row.

Seeds: with ``w = [seed, crc32(<Name>)]`` (so two models never share masks or splits),
instance ``i``'s draw, try ``k``: ``default_rng([*w, 0, i, k])``; the split ``[*w, 1]``;
noise and masks ``[*w, 2]``. Same settings -> byte-identical arrays.
"""

from __future__ import annotations

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.settings import seed_words

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


def kept_steps(observed: np.ndarray, rule: str, axis: int = -1) -> np.ndarray:
    """Which time steps a row keeps, from the per-value observation mask ``observed``
    (channels along ``axis``): ``"odd_count"`` where an odd number of channels is observed,
    as the archive holds it (generate_imts.py l.91-96: ``(rand > t_drop).bool() &
    torch.sum(M, -1) > 0`` binds as ``(bool & count) > 0``, i.e. ``count & 1``, since
    ``t_drop`` = 0 makes the left side True); ``"any_observed"`` where at least one is."""
    count = np.asarray(observed).sum(axis=axis)
    if rule == "odd_count":
        return (count & 1) == 1
    if rule == "any_observed":
        return count > 0
    raise DataError(
        f"benchmarks.physiome.generator.row_selection is {rule!r}; it must be 'odd_count' or "
        f"'any_observed'."
    )


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
        keep_obs = kept_steps(in_mask, cfg["row_selection"], axis=1)  # (N, n_obs)
        keep_fore = kept_steps(tg_mask, cfg["row_selection"], axis=1)  # (N, n_fore)
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
