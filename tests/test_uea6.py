"""UEA-6 under the Log-NCDE protocol (data/uea6/): pooled rows without exact
duplicates, the archive's values, one 70/15/15 split per seed with its own validation
rows, and the settings refused before any job runs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from aeon.datasets import load_basic_motions

from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.data.uea6.prepare import (
    SEEDS,
    check_split,
    pooled_unique_rows,
    prepare_uea6_variant,
    seed_splits,
)
from ssmbench.train.fold_split import split_indices


@pytest.fixture(scope="module")
def basicmotions(tmp_path_factory):
    root = tmp_path_factory.mktemp("bm")
    fetch_uea("BasicMotions", root / "raw", download=False)
    return prepare_uea("BasicMotions", root / "raw", root / "prepared")


def test_duplicates_go_the_first_stays_and_the_order_is_kept():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2, 5)).astype(np.float32)
    X[4] = X[1]  # a later copy of row 1
    X[5] = X[0]
    assert pooled_unique_rows(X).tolist() == [0, 1, 2, 3]
    X[3, 1, 4] += 1e-6  # one value apart: not a duplicate
    X[2] = X[3]
    X[3, 1, 4] -= 1e-6
    assert pooled_unique_rows(X).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "n, sizes",
    [(236, (165, 35, 36)), (409, (286, 61, 62)), (561, (392, 84, 85)), (80, (56, 12, 12))],
)
def test_the_split_sizes_are_the_log_ncde_codes(n, sizes):
    # int(0.7 n) / int(0.85 n) - int(0.7 n) / the rest (EigenWorms, Heartbeat, SCP1)
    train, val, test = seed_splits(n, SEEDS[0])
    assert (len(train), len(val), len(test)) == sizes
    assert np.array_equal(np.sort(np.concatenate([train, val, test])), np.arange(n))
    again = seed_splits(n, SEEDS[0])
    assert all(np.array_equal(a, b) for a, b in zip(again, (train, val, test), strict=True))
    assert not np.array_equal(seed_splits(n, SEEDS[1])[2], test)


def test_basicmotions_has_the_archive_values_and_a_split_per_seed(basicmotions, tmp_path):
    out = PreparedDataset(prepare_uea6_variant(basicmotions, tmp_path / "uea6"))
    meta = out.meta
    assert (meta["N"], meta["n_pooled"], meta["duplicates_removed"]) == (80, 80, 0)
    assert meta["fold_scheme"] == "given_folds" and meta["n_folds"] == len(SEEDS)
    assert meta["split"]["seeds"] == list(SEEDS) and meta["normalisation"]["kind"] == "none"
    X_tr, _ = load_basic_motions(split="train")
    X_te, _ = load_basic_motions(split="test")
    archive = np.concatenate([X_tr, X_te])
    np.testing.assert_allclose(np.asarray(out.X), archive, rtol=0, atol=5e-6)  # not z-scored
    assert np.array_equal(np.asarray(out.y), np.asarray(PreparedDataset(basicmotions).y))
    tests = []
    for k in range(len(SEEDS)):
        train, val, test = split_indices(out, k, 0.1, seed=0)
        assert (len(train), len(val), len(test)) == (56, 12, 12)
        assert not (set(train) & set(val) or set(train) & set(test) or set(val) & set(test))
        tests.append(tuple(test))
    assert len(set(tests)) == len(SEEDS)  # each seed its own test rows


def test_duplicated_rows_are_removed_with_their_labels(basicmotions, tmp_path):
    base = tmp_path / "uea" / "BasicMotions"
    shutil.copytree(basicmotions, base)
    X, y = np.load(base / "X.npy"), np.load(base / "y.npy")
    X, y = np.concatenate([X, X[[3, 50]]]), np.concatenate([y, y[[3, 50]]])
    np.save(base / "X.npy", X)
    np.save(base / "y.npy", y)
    meta = json.loads((base / "meta.json").read_text())
    meta["N"] = len(X)
    (base / "meta.json").write_text(json.dumps(meta))
    out = PreparedDataset(prepare_uea6_variant(base, tmp_path / "uea6"))
    assert (out.meta["N"], out.meta["duplicates_removed"]) == (80, 2)
    assert np.array_equal(np.asarray(out.y), y[:80])


def test_unequal_lengths_or_a_bad_split_are_refused(basicmotions, tmp_path):
    base = tmp_path / "uea" / "BasicMotions"
    shutil.copytree(basicmotions, base)
    meta = json.loads((base / "meta.json").read_text())
    meta["min_length"] = 50
    (base / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="equal-length"):
        prepare_uea6_variant(base, tmp_path / "uea6")
    for bad, match in (
        ({"seeds": [1, 1]}, "distinct"),
        ({"seeds": []}, "non-empty"),
        ({"fractions": [0.7, 0.3]}, "leave a test split"),
        ({"fractions": [0.7]}, "train, validation"),
    ):
        with pytest.raises(ValueError, match=match):
            check_split(**bad)
    with pytest.raises(DataError, match="too few"):
        seed_splits(3, 0)
