"""The validation split in a few bytes a row draws exactly scikit-learn's rows, and the
fold's index files are read a block of text at a time without changing what they say."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

from ssmbench.data import store
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.data.validation_split import (
    array_chunks,
    split_rows,
    stratified_validation_split,
)


def _labels(kind: str, n: int, k: int, rng) -> np.ndarray:
    if kind == "uniform":
        return rng.integers(0, k, n)
    if kind == "tied":  # equal class counts: _approximate_mode breaks ties with the rng
        return np.repeat(np.arange(k), n // k + 1)[:n]
    if kind == "skewed":  # one large class, labels that are neither 0.. nor contiguous
        p = np.r_[0.6, np.full(k - 1, 0.4 / (k - 1))]
        return rng.choice(np.arange(k) * 7 - 3, n, p=p)
    return rng.integers(0, k, n).astype(np.float64) + 0.5  # float labels


@pytest.mark.parametrize("kind", ["uniform", "tied", "skewed", "float"])
@pytest.mark.parametrize("fraction", [0.1, 0.25])
def test_stratified_rows_equal_scikit_learns(kind, fraction):
    rng = np.random.default_rng(len(kind))
    for trial in range(12):
        n, k = int(rng.integers(40, 4000)), int(rng.integers(2, 12))
        y = _labels(kind, n, k, rng)
        for seed in (0, 1234, trial):
            expected = next(StratifiedShuffleSplit(1, test_size=fraction, random_state=seed)
                            .split(np.zeros(n), y))  # fmt: skip
            train, val = stratified_validation_split(y, fraction, seed, "error")
            assert np.array_equal(train, np.sort(expected[0]))
            assert np.array_equal(val, np.sort(expected[1]))


@pytest.mark.parametrize("labels", ["below 128", "widened past 127", "sparse ids"])
def test_many_classes_rows_equal_scikit_learns(labels):
    """Class ids past int8's range (the codes widened to int16 at the first such chunk, a
    chunk after the start) give scikit-learn's rows too."""
    rng = np.random.default_rng(7)
    n = 30_000
    y = {"below 128": rng.integers(0, 127, n), "widened past 127": rng.integers(0, 200, n),
         "sparse ids": rng.choice([0, 5, 127, 128, 4000, 32000], n)}[labels]  # fmt: skip
    y[: n // 2] = np.minimum(y[: n // 2], 100)  # the wide ids only in later chunks
    expected = next(StratifiedShuffleSplit(1, test_size=0.1, random_state=1234)
                    .split(np.zeros(n), y))  # fmt: skip
    train, val, method = split_rows(array_chunks(y, rows=4096), n, 0.1, 1234, "error")
    assert method == "stratified"
    assert np.array_equal(train, np.sort(expected[0]))
    assert np.array_equal(val, np.sort(expected[1]))


def test_shuffle_fallback_rows_equal_shufflesplits():
    y = np.array([0] * 30 + [1])  # a single-row class: no stratified split exists
    for seed in (0, 7, 1234):
        expected = next(ShuffleSplit(1, test_size=0.1, random_state=seed).split(y))
        train, val = stratified_validation_split(y, 0.1, seed, "shuffle")
        assert np.array_equal(val, np.sort(expected[1]))
        assert np.array_equal(train, np.sort(expected[0]))


def test_rows_outside_the_pool_are_never_drawn_and_the_pool_split_is_the_same():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 6, 20_000)
    test = np.sort(rng.choice(len(y), 4_000, replace=False))
    pool = np.setdiff1d(np.arange(len(y)), test)
    local_train, local_val = stratified_validation_split(y[pool], 0.1, 1234)
    # labels read in chunks that do not divide the rows evenly, as from y.npy
    train, val, method = split_rows(array_chunks(y, 777), len(y), 0.1, 1234, outside=test)
    assert method == "stratified" and train.dtype == val.dtype == np.int32
    assert np.array_equal(train, pool[local_train]) and np.array_equal(val, pool[local_val])
    assert not np.intersect1d(np.r_[train, val], test).size
    assert len(train) + len(val) == len(pool)


def test_a_class_only_among_the_test_rows_is_not_a_class_of_the_pool():
    y = np.array([0] * 40 + [1] * 40 + [2] * 5)
    test = np.arange(80, 85)  # class 2 lies wholly in the test fold
    train, val, method = split_rows(array_chunks(y), len(y), 0.1, 0, outside=test)
    assert method == "stratified"
    expected = next(StratifiedShuffleSplit(1, test_size=0.1, random_state=0)
                    .split(np.zeros(80), y[:80]))  # fmt: skip
    assert np.array_equal(val, np.sort(expected[1]))


def test_per_class_fallback_validates_every_class_of_two_rows_or_more():
    y = np.array([0] * 9 + [1] * 2 + [2] * 1 + [3] * 30)
    train, val, method = split_rows(array_chunks(y), len(y), 0.1, 5, "per_class")
    assert method == "per_class"  # class 2 has one row: no stratified split exists
    counts = np.bincount(y[val], minlength=4)
    assert counts.tolist() == [1, 1, 0, 3]  # min(n - 1, max(1, round(0.1 n)))
    assert np.array_equal(np.sort(np.r_[train, val]), np.arange(len(y)))


def _prepared(tmp_path, n, test_rows, text):
    folder = tmp_path / "ds"
    folder.mkdir()
    np.save(folder / "X.npy", np.zeros((n, 1, 2), np.float32))
    np.save(folder / "y.npy", np.arange(n, dtype=np.int64) % 3)
    meta = {"name": "ds", "N": n, "C": 1, "L": 2, "task": "classification",
            "fold_scheme": "official_split", "n_folds": 1, "n_classes": 3}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "test_indices_fold_0.txt").write_text(text(test_rows))
    return folder


def test_index_files_parse_the_same_across_text_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "INDEX_TEXT_BYTES", 7)  # blocks that cut numbers in two
    rows = np.random.default_rng(0).choice(5000, 700, replace=False)
    folder = _prepared(tmp_path, 5000, rows, lambda r: "\n".join(map(str, r)) + "\n")
    got = PreparedDataset(folder).test_indices(0)
    assert got.dtype == np.int32 and np.array_equal(got, np.sort(rows))
    train = PreparedDataset(folder).train_indices(0)
    assert np.array_equal(train, np.setdiff1d(np.arange(5000), rows))


@pytest.mark.parametrize(
    "text,says",
    [
        ("1\n2\nx3\n", "expected one integer row index per line"),
        ("1\n2\n2\n", "duplicate row indices"),
        ("1\n9999\n", "index out of range"),
        ("\n", "empty index set"),
    ],  # fmt: skip
)
def test_bad_index_files_name_the_file_and_the_fault(tmp_path, monkeypatch, text, says):
    monkeypatch.setattr(store, "INDEX_TEXT_BYTES", 3)
    folder = _prepared(tmp_path, 100, None, lambda _: text)
    with pytest.raises(DataError, match=says) as err:
        PreparedDataset(folder).test_indices(0)
    assert "test_indices_fold_0.txt" in str(err.value)
