"""The official archive's fold protocol on our simulated windows (``folds: reference``).

The Physiome-ODE archive (``final/<model>/<k>/{train,valid,test}.pt``, Zenodo record
11492058) was written by kloetergensc/Physiome-ODE ``data_creation/generate_imts.py``
(HEAD 4829169; the dataset class is unchanged since the first commit 37391d0). Its
``for fold in range(5)`` (l.183-195) builds each fold from all 2000 instance files again:
the folds are **independent re-splits**, each with its own instance order, noise, masks
and 70/20/10 split, so test sets of different folds overlap. :func:`build_reference_folds`
runs the same steps, in the same order, on the clean windows that ``simulate.py`` returns,
and gives every fold in the dict shape of ``official_files.read_fold`` (``T``, ``X``,
``TY``, ``Y``, ``train``, ``valid``, ``test``), so one converter serves the archive and
this generator. ``docs/physiome_official_format.md`` section 3 lists the facts.

**Equivalence is of protocol, not of bytes.** The reference draws with Python's ``random``
(the shuffle) and torch's default generator (noise, masks, ``random_split``); we draw
with numpy (``default_rng([*seed_words(cfg), 3, k])`` for fold ``k``, stream tag 3 next
to simulate's 0 and dataset's 1 and 2), and our windows come from myokit's CVODES, not
scipy's LSODA, so no array equals the archive's. Equal settings give byte-identical folds.

Where we differ from the reference (besides the random streams and the solver):

* statistics are computed once, in float64 from the float32 values (the reference: per
  fold, in float32, over the same set of instances in a shuffled order; the same numbers
  up to rounding);
* a constant channel (std 0) keeps std 1 and is listed in ``constant_channels`` (the
  reference would divide by zero and store NaN: the channel would look unobserved);
* forecast channels: the reference restricts the targets of a model with more than 10
  states to the 10 of highest ``channel_scores`` in ``resources/Top50_final.csv``
  (l.86-90, l.123-130); we hold no channel scores, so every channel is a target
  (``forecast_channels`` in the result; only DiFrancescoNoble1985, 16 states, is concerned);
* ``row_selection: any_observed`` and ``compact: false`` are ours (the stated intent, and
  every grid step kept); the defaults (``odd_count``, compact) are the archive's.
"""

from __future__ import annotations

import math

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.dataset import _time_parts, kept_steps
from ssmbench.data.physiome.settings import seed_words

#: generate_imts.py l.177: ``t_drop = 0.0``, the chance to drop a whole time step
T_DROP = 0.0
#: the stream tag of the fold draws: ``default_rng([*seed_words(cfg), STREAM, fold])``
STREAM = 3
SPLITS = ("train", "valid", "test")


def split_lengths(n: int, fractions) -> list[int]:
    """The part sizes ``torch.utils.data.random_split(dataset, fractions)`` gives a dataset of
    ``n`` items (torch 2.13 ``torch/utils/data/dataset.py`` l.479-490): ``floor(n f)`` for
    each fraction, then the remainder one at a time, round-robin from the first part."""
    lengths = [math.floor(n * f) for f in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    return lengths


def _compact(t: np.ndarray, values: np.ndarray, mask: np.ndarray, keep: np.ndarray):
    """Each row's kept steps in time order, right-padded to the longest row, as
    generate_imts.py l.98-105 (``pad_sequence``, 0 / False, then ``X[~M] = nan``): padded
    steps have time 0 and all-NaN values. ``t`` (S,), ``values`` / ``mask`` (m, S, C),
    ``keep`` (m, S). Returns float32 ``(m, L)`` times and ``(m, L, C)`` values."""
    m, _, C = values.shape
    L = int(keep.sum(axis=1).max()) if m else 0
    order = np.argsort(~keep, axis=1, kind="stable")[:, :L]  # kept steps first, in order
    real = np.take_along_axis(keep, order, axis=1)
    times = np.where(real, t[order], 0.0).astype(np.float32)
    idx = np.broadcast_to(order[:, :, None], (m, L, C))
    vals = np.take_along_axis(values, idx, axis=1)
    seen = np.take_along_axis(mask, idx, axis=1) & real[:, :, None]
    return times, np.where(seen, vals, np.nan).astype(np.float32)


def build_reference_folds(traj, times, cfg: dict) -> dict:
    """The folds of the official protocol from clean simulated windows.

    ``traj`` float (n, C, P) and ``times`` (P,) from 0, as ``simulate_physiome`` returns them
    (and ``dataset.build_dataset`` receives them); ``cfg`` the resolved settings
    (``resolve_settings``). Returns::

        {"folds": [{"T": float32 (n_k, Lx), "X": float32 (n_k, Lx, C), NaN = unobserved,
                    "TY": float32 (n_k, Ly), "Y": float32 (n_k, Ly, C),
                    "train", "valid", "test": int64 row indices, in drawn order}, ...],
         "rows": [int64 (n_k,): the position in ``traj`` of each row of fold k],
         "dropped": [int64: positions in ``traj`` dropped by |z| > max_abs, per fold],
         "mean", "std": float64 (C,), "constant_channels", "fold_sizes",
         "forecast_channels", "n_observed_steps", "n_forecast_steps", "t_max", "seeds"}

    The steps, in generate_imts.py's order (line numbers of HEAD 4829169):

    1. l.145-148: ``random.seed(fold); random.shuffle(files)``: a permutation of the
       instances per fold (l.28-29 reseed torch and ``random`` with the fold inside the
       dataset class).
    2. l.34-58: ``T_max`` = the window's last time; observed ``t <= ot T_max``, forecast
       ``ot T_max < t < (ot + fh) T_max`` (strict: the last grid point is in neither).
    3. l.60-66: values as float32; times divided by ``T_max``.
    4. l.67-71: z-score per channel with the mean and unbiased std (``torch.std``) over all
       instances and both parts together, before the drop.
    5. l.73-78: drop every instance with a normalised ``|value| > 10`` in either part
       (``max_abs``); the statistics are not recomputed.
    6. l.81-82: Gaussian noise (``noise``, 0.05) on X, then on Y.
    7. l.84-90: masks ``rand > c_drop`` (``mask_rate``, 0.8), X's then Y's; Y's restricted to
       the forecast channels (here all, see the module docstring).
    8. l.91-96: a step is kept if ``rand > t_drop`` (``t_drop`` 0) and, by the precedence
       quirk, an odd number of its channels is observed (``row_selection: odd_count``;
       ``kept_steps``); for Y counted over the forecast channels.
    9. l.98-105: kept steps padded to the longest row; unobserved values and padded steps
       NaN, padded times 0.
    10. l.159-162: ``random_split(dataset, [0.7, 0.2, 0.1])``: sizes by torch's rounding
        (:func:`split_lengths`), then one random permutation cut train | valid | test
        (torch ``dataset.py`` l.506-509).
    """
    traj = np.asarray(traj, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    if traj.ndim != 3 or times.shape != traj.shape[2:]:
        raise DataError(
            f"build_reference_folds needs traj (n, C, P) and times (P,); got {traj.shape} and "
            f"{times.shape}"
        )
    n, C, _ = traj.shape
    # 2. the time split (l.34-58)
    t_max, obs, fore = _time_parts(times, cfg["observed_fraction"], cfg["forecast_fraction"])
    # 3. float32 values in the (instance, time, channel) layout of the files (l.60-66)
    X0 = traj[:, :, obs].transpose(0, 2, 1).astype(np.float32)
    Y0 = traj[:, :, fore].transpose(0, 2, 1).astype(np.float32)
    t_obs, t_fore = times[obs] / t_max, times[fore] / t_max

    # 4. statistics over every instance and both parts (l.67-69); the order of the
    # instances does not change them, so they are computed once for all folds
    flat = np.concatenate([X0, Y0], axis=1).reshape(-1, C).astype(np.float64)
    mean = flat.mean(axis=0)
    std = flat.std(axis=0, ddof=1) if len(flat) > 1 else np.zeros(C)
    constant = np.flatnonzero(~np.isfinite(std) | (std <= 0.0))
    std = np.where(np.isfinite(std) & (std > 0.0), std, 1.0)
    zX = (X0 - mean) / std  # l.70-71
    zY = (Y0 - mean) / std
    # 5. the drop (l.73-74): which instances go does not depend on the fold either
    bad = (np.abs(zX) > cfg["max_abs"]).any(axis=(1, 2)) | (np.abs(zY) > cfg["max_abs"]).any(
        axis=(1, 2)
    )
    if bad.all():
        raise DataError(
            f"every one of the {n} instances has a value beyond |z| > {cfg['max_abs']}; "
            f"nothing is left. Check benchmarks.physiome.generator.max_abs."
        )
    forecast_channels = np.arange(C)  # l.86-90 (all channels: see the module docstring)
    rule = cfg["row_selection"]

    folds, rows_of, dropped_of, sizes, seeds = [], [], [], [], []
    for k in range(cfg["n_folds"]):
        words = [*seed_words(cfg), STREAM, k]
        rng = np.random.default_rng(words)
        # 1. this fold's instance order (l.145-148)
        order = rng.permutation(n)
        rows = order[~bad[order]]  # 5. dropped after the shuffle (l.75-78)
        m = rows.size
        # 6. noise on the normalised values, X then Y (l.81-82)
        X = zX[rows] + cfg["noise"] * rng.standard_normal((m, obs.size, C))
        Y = zY[rows] + cfg["noise"] * rng.standard_normal((m, fore.size, C))
        # 7. masks, X then Y; targets only in the forecast channels (l.84-90)
        M = rng.random(X.shape) > cfg["mask_rate"]
        MY = rng.random(Y.shape) > cfg["mask_rate"]
        only = np.zeros(C, dtype=bool)
        only[forecast_channels] = True
        MY &= only
        # 8. the row selection (l.91-96): the t_drop draws are made whatever the rule
        keep_t = rng.random((m, obs.size)) > T_DROP
        keep_ty = rng.random((m, fore.size)) > T_DROP
        if cfg["compact"]:
            keep_t &= kept_steps(M, rule, axis=2)
            keep_ty &= kept_steps(MY, rule, axis=2)
        # 9. compact and pad (l.98-105)
        T, Xc = _compact(t_obs, X, M, keep_t)
        TY, Yc = _compact(t_fore, Y, MY, keep_ty)
        # 10. random_split (l.159-162): torch's sizes, one permutation cut in order
        n_train, n_valid, n_test = split_lengths(m, cfg["split"])
        if min(n_train, n_valid, n_test) < 1:
            raise DataError(
                f"fold {k}: {m} instances left after the |z| > {cfg['max_abs']} drop give "
                f"parts of {n_train}/{n_valid}/{n_test} for split {cfg['split']}; every part "
                f"needs a row. Raise benchmarks.physiome.generator.n_instances."
            )
        perm = rng.permutation(m).astype(np.int64)
        cut = np.cumsum([n_train, n_valid])
        train, valid, test = np.split(perm, cut)
        folds.append(
            {"T": T, "X": Xc, "TY": TY, "Y": Yc, "train": train, "valid": valid, "test": test}
        )
        rows_of.append(rows.astype(np.int64))
        dropped_of.append(np.flatnonzero(bad).astype(np.int64))
        sizes.append({"train": n_train, "valid": n_valid, "test": n_test})
        seeds.append(words)
    return {
        "folds": folds,
        "rows": rows_of,
        "dropped": dropped_of,
        "mean": mean,
        "std": std,
        "constant_channels": constant.tolist(),
        "fold_sizes": sizes,
        "forecast_channels": forecast_channels.tolist(),
        "n_observed_steps": int(obs.size),
        "n_forecast_steps": int(fore.size),
        "t_max": t_max,
        "seeds": seeds,
    }
