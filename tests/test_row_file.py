"""Row indices on disk (ssmbench.data.row_file.RowFile) and the block-mode readers over
them: the same order and rows as over the array, with none of the N rows in memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from ssmbench.data.errors import DataError
from ssmbench.data.row_file import RowFile, save_rows
from ssmbench.train.batch_order import (
    BOUNDS_CHUNK_ROWS,
    BlockReader,
    BlockShuffledOrder,
    RowValues,
    block_bounds,
    epoch_order,
)


def _rows(n, spread=5, seed=1, dtype=np.int32):
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(spread * n, n, replace=False)).astype(dtype)


def test_a_row_file_reads_like_the_array(tmp_path):
    rows = _rows(10_000)
    save_rows(tmp_path / "rows.npy", rows)
    assert not list(tmp_path.glob(".*"))  # the temporary file renamed away
    on_disk = RowFile(tmp_path / "rows.npy")
    assert len(on_disk) == rows.size and on_disk.dtype == np.int32
    assert on_disk.nbytes == rows.nbytes
    for a, b in [(0, 10), (9_990, 10_000), (5_000, 5_000), (9_995, 20_000), (-5, None)]:
        assert np.array_equal(on_disk[a:b], rows[a:b])
    assert on_disk[0] == rows[0] and on_disk[-1] == rows[-1] and isinstance(on_disk[3], int)
    assert np.array_equal(np.asarray(on_disk), rows)
    assert np.array_equal(np.concatenate([c for _, c in on_disk.chunks(999)]), rows)
    on_disk.check_sorted(5 * rows.size)
    with pytest.raises(IndexError):
        on_disk[rows.size]
    with pytest.raises(TypeError, match="step 1"):
        on_disk[::2]
    with pytest.raises(TypeError, match="position or slice"):
        on_disk[np.array([1, 2])]


@pytest.mark.parametrize(
    "values,n_rows,message",
    [([3, 2, 5], 10, "not strictly increasing"), ([1, 1, 2], 10, "not strictly increasing"),
     ([1, 2, 10], 10, r"outside \[0, 10\)"), ([-1, 2], 10, r"outside \[0, 10\)")],
)  # fmt: skip
def test_unsorted_or_out_of_range_rows_are_refused(tmp_path, values, n_rows, message):
    save_rows(tmp_path / "rows.npy", np.array(values, dtype=np.int32))
    with pytest.raises(DataError, match=message) as err:
        RowFile(tmp_path / "rows.npy").check_sorted(n_rows)
    assert "rows.npy" in str(err.value) and "split step again" in str(err.value)


@pytest.mark.parametrize("array", [np.zeros((3, 2), np.int32), np.zeros(3, np.float32)])
def test_a_file_that_is_not_row_indices_is_refused(tmp_path, array):
    np.save(tmp_path / "rows.npy", array)
    with pytest.raises(DataError, match="1-D integer array of row indices"):
        RowFile(tmp_path / "rows.npy")


@pytest.mark.parametrize("n,block_rows", [(10_000, 7), (4096, 4096), (5, 10), (3_000_001, 1000)])
def test_block_bounds_of_a_file_equal_the_arrays(tmp_path, n, block_rows):
    rows = _rows(n, spread=2)
    save_rows(tmp_path / "rows.npy", rows)
    firsts, lasts = block_bounds(RowFile(tmp_path / "rows.npy"), block_rows)
    assert np.array_equal(firsts, rows[::block_rows])
    assert np.array_equal(lasts, rows[np.minimum(np.arange(block_rows - 1, n + block_rows - 1,
                                                           block_rows), n - 1)])  # fmt: skip
    assert np.array_equal((firsts, lasts), block_bounds(rows, block_rows))


def test_the_order_and_batches_over_a_file_equal_those_over_the_array(tmp_path):
    n = 50_000
    rows = _rows(n)
    save_rows(tmp_path / "rows.npy", rows)
    X = np.arange(5 * n * 2, dtype=np.float32).reshape(5 * n, 2)
    np.save(tmp_path / "X.npy", X)
    on_disk = RowFile(tmp_path / "rows.npy")
    g_array, g_file = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    order = epoch_order(rows, g_array, 97, 5)
    assert np.array_equal(epoch_order(on_disk, g_file, 97, 5), order)
    assert torch.equal(g_array.get_state(), g_file.get_state())  # the next epoch the same
    readers = [BlockReader(tmp_path / "X.npy", r, 97, 10) for r in (rows, on_disk)]
    lazy = BlockShuffledOrder(on_disk, torch.Generator().manual_seed(3), 97, 5)
    for start in range(0, n, 4096):
        batch = np.sort(lazy[start : start + 4096])
        assert np.array_equal(batch, np.sort(order[start : start + 4096]))
        got = [reader[batch] for reader in readers]
        assert np.array_equal(got[0], X[batch]) and np.array_equal(got[1], X[batch])
    with pytest.raises(IndexError):  # a row of the file between two of the set
        readers[1][np.array([rows[10] + 1 if rows[11] > rows[10] + 1 else rows[10] - 1])]
    for reader in readers:
        reader.close()


def test_readers_over_a_file_hold_none_of_its_rows(tmp_path):
    """The order and the reader over 4 M rows on disk (16 MB of int32) trace a bounded
    amount: the block bounds (16 bytes a block), two windows and the cache's blocks."""
    n, block_rows, buffer_blocks = 4_000_000, 4096, 4
    save_rows(tmp_path / "rows.npy", np.arange(0, 2 * n, 2, dtype=np.int32))
    np.lib.format.open_memmap(tmp_path / "X.npy", "w+", np.float32, (2 * n, 1))
    on_disk = RowFile(tmp_path / "rows.npy")
    tracemalloc.start()
    try:
        order = BlockShuffledOrder(on_disk, torch.Generator().manual_seed(0), block_rows,
                                   buffer_blocks)  # fmt: skip
        reader = BlockReader(tmp_path / "X.npy", on_disk, block_rows, 2 * buffer_blocks)
        for start in range(0, 3 * block_rows * buffer_blocks, 256):
            reader[np.sort(order[start : start + 256])]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    window_and_cache = 2 * block_rows * buffer_blocks * 8 + 2 * buffer_blocks * block_rows * 12
    bounds = 2 * 8 * (n // block_rows + 1)
    chunks = 2 * BOUNDS_CHUNK_ROWS * 4  # the bounds read a chunk at a time (two alive)
    assert peak < window_and_cache + bounds + chunks + (512 << 10), f"traced {peak:,} bytes"
    assert peak < on_disk.nbytes / 2
    reader.close()


@pytest.mark.parametrize("shape", [(100_000,), (20_000, 3)])
def test_row_values_read_any_rows_like_the_array(tmp_path, shape):
    values = np.random.default_rng(2).integers(0, 200, size=shape).astype(np.int64)
    np.save(tmp_path / "y.npy", values)
    y = RowValues(tmp_path / "y.npy")
    assert len(y) == shape[0] and y.dtype == np.int64
    rng = np.random.default_rng(3)
    for rows in (np.sort(rng.choice(shape[0], 256, replace=False)),  # a training batch
                 rng.choice(shape[0], 300, replace=True),  # unsorted, repeated
                 np.arange(5_000, 9_000), np.array([shape[0] - 1, 0]),
                 np.array([], dtype=np.int64)):  # fmt: skip
        assert np.array_equal(y[rows], values[rows])
    assert np.array_equal(y[np.arange(10, dtype=np.int32)], values[:10])
    for outside in ([shape[0]], [-1]):
        with pytest.raises(IndexError, match="y.npy"):
            y[np.array(outside)]
    with pytest.raises(TypeError, match="integer"):
        y[np.array([1.0])]
    y.close()
