"""Drop-rate variants: a prepared classification dataset with a fraction of its time steps
dropped at random (the TIDES study's irregular-sampling ablation), written in the prepared
format of ``docs/contracts.md`` with the irregular additions ``T.npy`` (timestamps,
``(N, L)``) and ``M.npy`` (mask, ``(N, C, L)``).

:func:`drop_time_steps` drops steps of an array; :func:`prepare_drop_rate_variant`
writes the variant of a prepared dataset. The task is the TIDES paper's EigenWorms
ablation (reference: ``uea/droprate.py``): train with a fraction ``r_train = 0.5`` of the
time steps dropped, test with fresh masks at ``r_test ∈ {0.1, 0.3, 0.5, 0.7, 0.9}``.

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
from numbers import Real
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.fixed_test_sets import (
    FIXED_TEST_SETS,
    TIDES_CODE_URL,
    check_count,
    fmt,
    test_set_keys,
)
from ssmbench.data.prepared_files import write_prepared_folder
from ssmbench.data.store import PreparedDataset
from ssmbench.io import index_text, prepared_stamp

TRAIN_RATE = 0.5
TEST_RATES = (0.1, 0.3, 0.5, 0.7, 0.9)
TEST_SEED_BASE = 200  # the reference's EVAL_SEEDS = {r: 200 + i}
MIN_KEEP = 2

TIMESTAMP_POLICY = (
    "original timestamps of the kept steps (source T.npy, else the index arange(L)); the "
    "reference feeds the steps [T_0 + 1, diff(T)]"
)
PAD_POLICY = (
    "right_pad: series shorter than the longest kept series are padded at the end with "
    "X = 0, M = False and T = the series' last kept timestamp (dt = 0 on padding)"
)
COUNT_POLICY = (
    "n_keep = min(L, max(2, round((1 - rate) * L))) with Python's round (half to even); "
    "the first (present) step is always kept"
)


def _check_rate(rate, what: str = "rate") -> float:
    if isinstance(rate, bool) or not isinstance(rate, Real) or not 0.0 <= float(rate) < 1.0:
        raise ValueError(
            f"{what} must be a number in [0, 1) (the fraction of time steps dropped), got {rate!r}."
        )
    return float(rate)


def n_kept(length: int, rate: float) -> int:
    """Steps kept of ``length`` at drop ``rate``: ``min(L, max(2, round((1 - rate) L)))``."""
    rate = _check_rate(rate)
    length = check_count(length, "length")
    return min(length, max(MIN_KEEP, int(round((1.0 - rate) * length))))


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
    train_rate: float = TRAIN_RATE,
    test_rates: Sequence[float] = TEST_RATES,
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
    rates, keys = test_set_keys(test_rates, _check_rate, "test_rates", "rate")
    seed = check_count(seed, "seed")
    if test_seeds is None:
        t_seeds = [TEST_SEED_BASE + i for i in range(len(rates))]
    else:
        t_seeds = [check_count(s, "test_seeds entry") for s in test_seeds]
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
        fname = f"test_indices_rate_{fmt(r)}.txt"
        texts[fname] = index_text(range(start, start + n))
        test_sets[key] = fname
        layout[key] = {"rate": r, "file": fname, "rows": [start, start + n], "seed": s}
        start += n
    texts["test_indices_fold_0.txt"] = index_text(range(n_rows[0], N))

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
            "n_keep": COUNT_POLICY,
            "reference": f"{TIDES_CODE_URL} uea/droprate.py",
        },
        "irregular": True,
        "timestamps": TIMESTAMP_POLICY,
        "mask_policy": "True where a kept value is observed; False on padding",
        "length_policy": PAD_POLICY,
        "min_length": int(lengths.min()) if N else 0,
        "max_length": width,
        **prepared_stamp(),
    }
    return write_prepared_folder(
        Path(out_dir),
        name,
        {"X.npy": X, "y.npy": y, "T.npy": T, "M.npy": M},
        texts,
        meta,
    )
