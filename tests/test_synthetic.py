"""ssmbench.data.synthetic and ssmbench.data.uea_drop: the TIDES Fading Flash task and
the drop-rate variant.

The drop-rate variant is built from BasicMotions, prepared from aeon's bundled copy
(offline); EigenWorms itself is too large to ship.
"""

from __future__ import annotations

import json
import math
import shutil
import time

import numpy as np
import pytest

from ssmbench.data import fetch_uea, prepare_uea, store
from ssmbench.data.errors import DataError
from ssmbench.data.synthetic.prepare import (
    RATES,
    TEST_DT_GRID,
    generate_fading_flash,
    prepare_fading_flash,
)
from ssmbench.data.uea_drop.prepare import (
    TEST_RATES,
    drop_mask,
    drop_time_steps,
    n_kept,
    prepare_drop_rate_variant,
)


# --------------------------------------------------------------------------- helpers
def _runs(values):
    """Contiguous runs of equal values: [(value, start, stop), ...]."""
    runs, start = [], 0
    for k in range(1, len(values) + 1):
        if k == len(values) or values[k] != values[start]:
            runs.append((values[start], start, k))
            start = k
    return runs


def _index_file(path):
    return np.array(path.read_text(encoding="utf-8").split(), dtype=np.int64)


@pytest.fixture(scope="module")
def basicmotions(tmp_path_factory):
    root = tmp_path_factory.mktemp("bm")
    fetch_uea("BasicMotions", root / "raw", download=False)
    return prepare_uea("BasicMotions", root / "raw", root / "prepared")


# --------------------------------------------------------------------------- Fading Flash
def test_fading_flash_target_is_the_recurrence():
    d = generate_fading_flash(64, seed=3)
    X, y, T = d["X"], d["y"], d["T"]
    steps = np.diff(T.astype(np.float64), axis=1, prepend=0.0)  # [T_0, diff(T)]
    for i in (0, 1, 7, 42, 63):
        rate = np.asarray(RATES)[np.argmax(X[i, 1:], axis=0)]
        h, expect = 0.0, []
        for k in range(40):
            a = math.exp(-rate[k] * d["dt"][i, k])
            h = a * h + (1.0 - a) / rate[k] * X[i, 0, k]
            expect.append(h)
        np.testing.assert_allclose(y[i], expect, rtol=1e-6, atol=1e-7)
        # the timestamps carry the steps the target was computed with
        np.testing.assert_allclose(steps[i], d["dt"][i], rtol=1e-5, atol=1e-5)


def test_fading_flash_structure():
    d = generate_fading_flash(2000, seed=11)
    X, M = d["X"], d["M"]
    assert X.shape == (2000, 4, 40) and X.dtype == np.float32
    assert d["y"].shape == (2000, 40) and d["y"].dtype == np.float32
    assert d["T"].shape == (2000, 40) and d["T"].dtype == np.float32
    assert M.shape == X.shape and M.dtype == bool and M.all()
    # flashes: 2-4 unit values, all counts occur
    assert set(np.unique(X[:, 0])) <= {0.0, 1.0}
    n_flash = X[:, 0].sum(axis=1)
    assert set(n_flash.astype(int)) == {2, 3, 4}
    # one-hot rate channels, consistent with the zones
    onehot = X[:, 1:]
    assert np.all(onehot.sum(axis=1) == 1)
    rate_idx = np.argmax(onehot, axis=1)
    np.testing.assert_array_equal(rate_idx, d["rate_index"])
    n_zone_counts = set()
    for i in range(200):
        runs = _runs(list(rate_idx[i]))
        zone_runs = _runs(list(d["zone"][i]))
        assert len(runs) == len(zone_runs)  # adjacent zones never share a rate
        assert 2 <= len(runs) <= 3
        assert [z for z, _, _ in zone_runs] == list(range(len(zone_runs)))
        assert [(a, b) for _, a, b in runs] == [(a, b) for _, a, b in zone_runs]
        assert all(4 <= a <= 35 for _, a, _ in runs[1:])  # boundaries from 4..35
        n_zone_counts.add(len(runs))
    assert n_zone_counts == {2, 3}
    assert set(np.unique(rate_idx)) == {0, 1, 2}


def test_fading_flash_steps():
    d = generate_fading_flash(500, seed=5)
    steps = d["dt"]
    assert steps.min() >= 0.5 and steps.max() <= 1.5
    assert np.all(steps == steps[:, :1])  # one Δ per sequence (reference code)
    assert steps[:, 0].std() > 0.2  # ... drawn independently per sequence
    irregular = generate_fading_flash(500, seed=5, dt_per_step=True)["dt"]
    assert irregular.min() >= 0.5 and irregular.max() <= 1.5
    assert np.all(irregular.std(axis=1) > 0)
    for dt in (0.1, 1.0, 2.0):
        g = generate_fading_flash(50, seed=1, dt=dt)
        np.testing.assert_array_equal(g["dt"], dt)
        T = g["T"].astype(np.float64)
        np.testing.assert_allclose(np.diff(T, axis=1, prepend=0.0), dt, rtol=1e-5, atol=2e-6)
        assert np.all(np.diff(T, axis=1) > 0)
    with pytest.raises(ValueError, match="dt"):
        generate_fading_flash(5, seed=1, dt=0.0)
    with pytest.raises(ValueError, match="dt_range"):
        generate_fading_flash(5, seed=1, dt_range=(1.5, 0.5))


def test_fading_flash_is_seeded_and_fast():
    a = generate_fading_flash(300, seed=7)
    b = generate_fading_flash(300, seed=7)
    c = generate_fading_flash(300, seed=8)
    for k in ("X", "y", "T", "M", "dt"):
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["y"], c["y"])
    t0 = time.perf_counter()
    generate_fading_flash(10_000, seed=0)
    assert time.perf_counter() - t0 < 2.0


def test_prepare_fading_flash(tmp_path):
    out = prepare_fading_flash(tmp_path / "synthetic", n_train=300, n_test_per_dt=20, seed=4)
    assert out == tmp_path / "synthetic" / "FadingFlash"
    assert sorted(p.name for p in out.parent.iterdir()) == ["FadingFlash"]  # no temp left
    meta = json.loads((out / "meta.json").read_text())
    n_dt = len(TEST_DT_GRID)
    N = 300 + 20 * n_dt
    for key in (
        "name",
        "benchmark",
        "task",
        "N",
        "C",
        "L",
        "n_train",
        "n_test",
        "fold_scheme",
        "n_folds",
        "test_sets",
        "generation",
        "seed",
        "timestamps",
        "source_url",
    ):
        assert key in meta, key
    assert (meta["name"], meta["benchmark"], meta["task"]) == (
        "FadingFlash",
        "synthetic",
        "regression",
    )
    assert (meta["N"], meta["C"], meta["L"]) == (N, 4, 40)
    assert meta["fold_scheme"] == "fixed_test_sets" and meta["n_folds"] == 1
    assert meta["generation"]["train_dt_range"] == [0.5, 1.5]
    assert list(meta["test_sets"]) == [f"dt={d:g}" for d in TEST_DT_GRID]

    X = np.load(out / "X.npy", mmap_mode="r", allow_pickle=False)
    y = np.load(out / "y.npy", allow_pickle=False)
    T = np.load(out / "T.npy", allow_pickle=False)
    M = np.load(out / "M.npy", allow_pickle=False)
    assert X.shape == (N, 4, 40) and X.dtype == np.float32
    assert y.shape == (N, 40) and y.dtype == np.float32
    assert T.shape == (N, 40) and T.dtype == np.float32
    assert M.shape == (N, 4, 40) and M.dtype == bool and M.all()

    union = []
    for d in TEST_DT_GRID:
        rows = _index_file(out / meta["test_sets"][f"dt={d:g}"])
        assert rows.size == 20
        steps = np.diff(T[rows].astype(np.float64), axis=1, prepend=0.0)
        np.testing.assert_allclose(steps, d, rtol=1e-5, atol=2e-6)
        union.extend(rows)
    fold0 = _index_file(out / "test_indices_fold_0.txt")
    np.testing.assert_array_equal(np.sort(fold0), np.sort(union))
    np.testing.assert_array_equal(fold0, np.arange(300, N))
    ds = store.PreparedDataset(out)  # the generic store opens it: y is (N, 40) for regression
    np.testing.assert_array_equal(ds.test_indices(0), fold0)
    assert ds.y.shape == (N, 40)
    train_steps = np.diff(T[:300].astype(np.float64), axis=1, prepend=0.0)
    assert train_steps.min() > 0.5 - 1e-5 and train_steps.max() < 1.5 + 1e-5

    # same seed -> the same arrays
    again = prepare_fading_flash(tmp_path / "again", n_train=300, n_test_per_dt=20, seed=4)
    for f in ("X.npy", "y.npy", "T.npy", "M.npy"):
        np.testing.assert_array_equal(np.load(out / f), np.load(again / f))


# --------------------------------------------------------------------------- drop rate
def test_drop_time_steps_counts_and_timestamps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3, 101)).astype(np.float32)
    for per_series in (False, True):
        for rate in (0.1, 0.3, 0.5, 0.7, 0.9):
            Xd, Td, Md = drop_time_steps(X, rate=rate, seed=3, per_series=per_series)
            k = max(2, round((1 - rate) * 101))
            assert k == n_kept(101, rate)
            assert Xd.shape == (6, 3, k) and Td.shape == (6, k) and Md.shape == (6, 3, k)
            assert Xd.dtype == np.float32 and Td.dtype == np.float32 and Md.dtype == bool
            assert Md.all()
            idx = Td.astype(np.int64)
            assert np.all(np.diff(Td, axis=1) > 0)  # strictly increasing
            assert np.all(idx[:, 0] == 0)  # the first step is always kept
            assert np.all((idx >= 0) & (idx < 101)) and np.all(idx == Td)
            for i in range(6):  # a subset of the originals, values carried with them
                np.testing.assert_array_equal(Xd[i], X[i][:, idx[i]])
            if not per_series:
                assert np.all(idx == idx[:1])
    _, Td, _ = drop_time_steps(X, rate=0.5, seed=3, per_series=True)
    assert len({tuple(r) for r in Td.astype(int)}) > 1  # independent per series


def test_drop_time_steps_identity_custom_times_and_determinism():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 2, 30)).astype(np.float32)
    T = np.cumsum(rng.uniform(0.1, 1.0, size=(4, 30)), axis=1)
    for per_series in (False, True):
        Xd, Td, Md = drop_time_steps(X, T, rate=0.0, seed=9, per_series=per_series)
        np.testing.assert_array_equal(Xd, X)
        np.testing.assert_allclose(Td, T.astype(np.float32))
        assert Md.all() and Md.shape == X.shape
        a = drop_time_steps(X, T, rate=0.4, seed=9, per_series=per_series)
        b = drop_time_steps(X, T, rate=0.4, seed=9, per_series=per_series)
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)
        assert np.all(np.isin(a[1], T.astype(np.float32)))
        assert np.all(np.diff(a[1], axis=1) > 0)
    # the shared mask is the reference's drop_mask: t=0 kept, sorted, seeded
    keep = drop_mask(17984, 0.9, 204)
    assert keep[0] == 0 and np.all(np.diff(keep) > 0)
    assert keep.size == round(0.1 * 17984)
    np.testing.assert_array_equal(keep, drop_mask(17984, 0.9, 204))


def test_drop_time_steps_pads_absent_steps():
    X = np.arange(2 * 1 * 10, dtype=np.float32).reshape(2, 1, 10) + 1.0
    M = np.ones((2, 10), dtype=bool)
    M[1, 6:] = False  # series 1 has 6 present steps (an unequal-length series)
    Xd, Td, Md = drop_time_steps(X, rate=0.5, seed=0, per_series=True, M=M)
    assert Xd.shape == (2, 1, 5)
    assert Md[0].all() and Md[1, 0].sum() == 3  # round(0.5 * 6) = 3 kept
    assert np.all(Xd[1, 0, 3:] == 0) and not Md[1, 0, 3:].any()  # right-padded with zeros
    assert np.all(Td[1, 3:] == Td[1, 2])  # padding repeats the last timestamp (Δ = 0)
    assert np.all(Td[1, :3] < 6)  # never an absent step


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, float("nan"), True, "0.5"])
def test_drop_rate_validation(rate):
    X = np.zeros((2, 1, 10), dtype=np.float32)
    with pytest.raises(ValueError, match="rate"):
        drop_time_steps(X, rate=rate, seed=0)


def test_prepare_drop_rate_variant_from_basicmotions(basicmotions, tmp_path):
    src = store.PreparedDataset(basicmotions)
    L, n_tr, n_te = src.meta["L"], src.meta["n_train"], src.meta["n_test"]
    out = prepare_drop_rate_variant(basicmotions, tmp_path / "synthetic", seed=42)
    assert out == tmp_path / "synthetic" / "BasicMotionsDropRate"
    assert sorted(p.name for p in out.parent.iterdir()) == ["BasicMotionsDropRate"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["fold_scheme"] == "fixed_test_sets" and meta["n_folds"] == 1
    assert meta["derived_from"]["name"] == "BasicMotions"
    assert meta["drop"]["train_rate"] == 0.5
    assert meta["drop"]["test_rates"] == list(TEST_RATES)
    assert meta["drop"]["seed"] == 42
    assert meta["classes"] == src.meta["classes"]
    N = n_tr + n_te * len(TEST_RATES)
    width = n_kept(L, min(TEST_RATES))
    assert (meta["N"], meta["C"], meta["L"]) == (N, src.meta["C"], width)

    X = np.load(out / "X.npy", mmap_mode="r", allow_pickle=False)
    y = np.load(out / "y.npy", allow_pickle=False)
    T = np.load(out / "T.npy", allow_pickle=False)
    M = np.load(out / "M.npy", allow_pickle=False)
    assert X.shape == (N, src.meta["C"], width) and T.shape == (N, width)
    assert M.shape == X.shape and M.dtype == bool
    src_X, src_y = np.asarray(src.X), np.asarray(src.y)
    train_idx, test_idx = src.train_indices(0), src.test_indices(0)

    # training rows: train_rate dropped, one shared mask
    k = n_kept(L, 0.5)
    assert M[:n_tr, :, :k].all() and not M[:n_tr, :, k:].any()
    np.testing.assert_array_equal(y[:n_tr], src_y[train_idx])
    keep = drop_mask(L, 0.5, 42)
    np.testing.assert_array_equal(T[:n_tr, :k], np.broadcast_to(keep, (n_tr, k)))
    np.testing.assert_array_equal(X[:n_tr, :, :k], src_X[train_idx][:, :, keep])
    assert np.all(X[:n_tr, :, k:] == 0)

    union = []
    for i, r in enumerate(TEST_RATES):
        rows = _index_file(out / meta["test_sets"][f"rate={r:g}"])
        assert rows.size == n_te
        k = n_kept(L, r)
        assert np.all(M[rows].any(axis=1).sum(axis=1) == k)
        np.testing.assert_array_equal(y[rows], src_y[test_idx])
        Tk = T[rows][:, :k]
        assert np.all(np.diff(Tk, axis=1) > 0) and np.all(Tk[:, 0] == 0)
        keep = drop_mask(L, r, 200 + i)  # the reference's fixed test masks
        np.testing.assert_array_equal(X[rows][:, :, :k], src_X[test_idx][:, :, keep])
        union.extend(rows)
    fold0 = _index_file(out / "test_indices_fold_0.txt")
    np.testing.assert_array_equal(np.sort(fold0), np.sort(union))
    np.testing.assert_array_equal(fold0, np.arange(n_tr, N))

    # the generic store opens it
    ds = store.PreparedDataset(out)
    np.testing.assert_array_equal(ds.test_indices(0), fold0)
    np.testing.assert_array_equal(ds.train_indices(0), np.arange(n_tr))

    with pytest.raises(ValueError, match="train_rate"):
        prepare_drop_rate_variant(basicmotions, tmp_path / "bad", train_rate=1.0)
    with pytest.raises(ValueError, match="test_rates"):
        prepare_drop_rate_variant(basicmotions, tmp_path / "bad", test_rates=(0.1, 1.2))
    assert not (tmp_path / "bad").exists()


def test_prepare_drop_rate_variant_needs_classification(basicmotions, tmp_path):
    src = tmp_path / "BasicMotions"
    shutil.copytree(basicmotions, src)
    meta = json.loads((src / "meta.json").read_text())
    meta["task"] = "regression"
    (src / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="classification"):
        prepare_drop_rate_variant(src, tmp_path / "out")
    assert not (tmp_path / "out" / "BasicMotionsDropRate").exists()
