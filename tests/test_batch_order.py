"""protocol.reading (ssmbench.train.batch_order): an X that fits the budget is read into
memory and fully shuffled, exactly as before; a larger one is read from disk in
block-shuffled epochs that are permutations, deterministic in the generator, and resume
mid-epoch with the same rows."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch
from conftest import make_project, signal_at_training_batch

from ssmbench.config import ConfigError, Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params, validate_schema
from ssmbench.reading_plan import BLOCKS, MEMORY, plan_reading, reading_settings
from ssmbench.setting_defaults import setting_defaults
from ssmbench.train import batch_order, protocol, run_setup
from ssmbench.train.batch_order import BlockReader, BlockShuffledOrder, epoch_order, plan_order
from ssmbench.train.checkpoint import TrainingInterrupted
from ssmbench.train.protocol import run_job


def _reading(**given) -> dict:
    """Settings whose ``reading`` is the schema's defaults with ``given`` over them."""
    return {"reading": {**setting_defaults()["reading"], **given}}


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- the order
@pytest.mark.parametrize(
    "n,block_rows,buffer_blocks", [(1000, 7, 3), (64, 64, 1), (5, 10, 4), (1001, 1, 1000)]
)
def test_epoch_order_is_a_permutation_of_the_training_rows(n, block_rows, buffer_blocks):
    rows = np.sort(np.random.default_rng(1).choice(5 * n, n, replace=False)).astype(np.int64)
    order = epoch_order(rows[::-1].copy(), _gen(), block_rows, buffer_blocks)
    assert order.dtype == np.int64 and len(order) == n
    assert np.array_equal(np.sort(order), rows)


def test_epoch_order_is_deterministic_in_the_generator_state():
    rows = np.arange(0, 3000, 3, dtype=np.int64)
    g = _gen(5)
    g.manual_seed(5)
    first = epoch_order(rows, g, 16, 4)
    after = g.get_state()
    second_epoch = epoch_order(rows, g, 16, 4)
    g.set_state(after)  # a resumed epoch: the state at its start
    assert np.array_equal(epoch_order(rows, g, 16, 4), second_epoch)
    assert np.array_equal(epoch_order(rows, _gen(5), 16, 4), first)
    assert not np.array_equal(first, second_epoch)
    assert not np.array_equal(epoch_order(rows, _gen(6), 16, 4), first)


def _eager_block_order(rows, generator, block_rows, buffer_blocks):
    """The block-shuffled order drawn whole, as the definition reads: the blocks'
    randperm, then one randperm a window, in window order."""
    n = len(rows)
    blocks = torch.randperm(math.ceil(n / block_rows), generator=generator).numpy()
    parts = []
    for w in range(0, len(blocks), buffer_blocks):
        positions = np.concatenate([np.arange(b * block_rows, min(n, (b + 1) * block_rows))
                                    for b in blocks[w : w + buffer_blocks]])  # fmt: skip
        parts.append(rows[positions[torch.randperm(len(positions), generator=generator).numpy()]])
    return np.concatenate(parts) if parts else rows[:0]


@pytest.mark.parametrize("n,block_rows,buffer_blocks", [
    (1000, 7, 3), (64, 64, 1), (5, 10, 4), (0, 4, 2), (12_345, 100, 8)])  # fmt: skip
def test_the_order_drawn_a_window_at_a_time_is_the_whole_draw(n, block_rows, buffer_blocks):
    """Read a batch at a time, from any position on (a resumed epoch), even with another
    slice read in between, it gives the rows of the whole draw, and leaves the caller's
    generator where the whole draw does."""
    rows = np.sort(np.random.default_rng(n).choice(3 * n + 1, n, replace=False)).astype(np.int32)
    g_whole, g_lazy = _gen(3), _gen(3)
    whole = _eager_block_order(rows, g_whole, block_rows, buffer_blocks)
    order = BlockShuffledOrder(rows, g_lazy, block_rows, buffer_blocks)
    assert torch.equal(g_whole.get_state(), g_lazy.get_state())
    torch.randperm(50, generator=g_lazy)  # the generator used meanwhile changes nothing
    assert len(order) == n and order.dtype == np.int32
    for start in sorted({0, 1, 37, n // 2, max(0, n - 1)}):
        tail = order[start:]
        read = [tail[i : i + 33] for i in range(0, len(tail), 33)]
        assert np.array_equal(np.concatenate(read) if read else rows[:0], whole[start:])
    tail = order[n // 3 :]
    assert np.array_equal(order[0:10], whole[:10])  # back to the start: redrawn, the same
    assert np.array_equal(tail[0:50], whole[n // 3 : n // 3 + 50])
    assert np.array_equal(epoch_order(rows, _gen(3), block_rows, buffer_blocks), whole)


def test_the_order_holds_two_windows_not_n_rows():
    rows = np.arange(100_000, dtype=np.int64)
    order = BlockShuffledOrder(rows, _gen(), 100, 10)  # windows of 1,000 rows
    for i in range(0, len(order), 256):
        order[i : i + 256]
    held = sum(w.nbytes for w in order._draws.windows.values())
    assert len(order._draws.windows) <= 2 and held <= 2 * 1000 * 8
    assert order.rows is rows  # the sorted rows shared, not copied
    with pytest.raises(TypeError):
        order[np.array([1, 2])]


def test_each_window_holds_whole_blocks_of_consecutive_rows():
    rows = np.arange(10, 10 + 1000, dtype=np.int64) * 2  # sorted training rows
    block_rows, buffer_blocks = 10, 4
    order = epoch_order(rows, _gen(3), block_rows, buffer_blocks)
    window = block_rows * buffer_blocks
    position = {int(r): i for i, r in enumerate(rows)}
    seen_blocks = []
    for w in range(0, len(order), window):
        blocks = {position[int(r)] // block_rows for r in order[w : w + window]}
        assert len(blocks) == buffer_blocks  # a window is buffer_blocks whole blocks...
        for b in blocks:  # ...each all there, its rows consecutive training rows
            assert set(order[w : w + window].tolist()) >= set(
                rows[b * block_rows : (b + 1) * block_rows].tolist()
            )
        seen_blocks += sorted(blocks)
    assert sorted(seen_blocks) == list(range(len(rows) // block_rows))
    # the blocks are shuffled, and so are the rows within a window
    assert seen_blocks[:buffer_blocks] != list(range(buffer_blocks))
    assert not np.array_equal(np.sort(order[:window]), order[:window])


def test_in_memory_order_is_the_old_full_shuffle_bit_for_bit():
    train_idx = np.random.default_rng(0).permutation(5000).astype(np.int64)[:4000]
    plan = plan_reading(_reading(), (5000, 2, 8))
    assert plan.mode == MEMORY
    g_new, g_old = _gen(7), _gen(7)
    for _ in range(3):  # several epochs from one generator
        new = plan_order(plan, train_idx, g_new)
        old = train_idx[torch.randperm(len(train_idx), generator=g_old).numpy()]
        assert np.array_equal(new, old) and new.dtype == old.dtype
    assert torch.equal(g_new.get_state(), g_old.get_state())


def test_the_budget_decides_the_mode_and_block_rows_follow_block_mb():
    shape = (100_000, 10, 24)  # 960 bytes a row, 96 MB
    assert plan_reading(_reading(in_memory_max_gb=0.1), shape).mode == MEMORY
    plan = plan_reading(_reading(in_memory_max_gb=0.05, block_mb=1, buffer_blocks=8), shape)
    assert plan.mode == BLOCKS and plan.block_rows == (1 << 20) // 960 == 1092
    assert plan.buffer_blocks == 8
    assert plan.describe()["mode"] == "blocks" and "BLOCK-SHUFFLED" in plan.message()
    # a row larger than a block: one row a block
    assert plan_reading(_reading(in_memory_max_gb=0, block_mb=1e-6), shape).block_rows == 1


# ----------------------------------------------------------------------------- settings
@pytest.mark.parametrize("key,value,message", [
    ("block_mb", 0, "protocol.reading.block_mb"),
    ("block_mb", -1.0, "protocol.reading.block_mb"),
    ("buffer_blocks", 0, "protocol.reading.buffer_blocks"),
    ("buffer_blocks", 2.5, "protocol.reading.buffer_blocks"),
    ("in_memory_max_gb", -1, "protocol.reading.in_memory_max_gb"),
])  # fmt: skip
def test_bad_reading_settings_are_refused_naming_the_key(key, value, message):
    params = read_params("params.yaml")
    bad = copy.deepcopy(params)
    bad["protocol"]["reading"][key] = value
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        validate_schema(bad)
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        reading_settings(_reading(**{key: value}))
    with pytest.raises(ValueError, match="block_rows"):
        epoch_order(np.arange(10), _gen(), 0, 1)


def test_unknown_reading_key_and_suite_override_are_checked():
    params = read_params("params.yaml")
    bad = copy.deepcopy(params)
    bad["protocol"]["reading"]["block_rows"] = 64
    with pytest.raises(ConfigError, match="protocol.reading"):
        validate_schema(bad)
    bad = copy.deepcopy(params)
    bad["suites"]["tiny"]["overrides"]["reading"] = {"buffer_blocks": 0}
    with pytest.raises(ConfigError, match=r"suites\.tiny\.overrides\.reading\.buffer_blocks"):
        validate_schema(bad)
    with pytest.raises(ValueError, match="unknown"):
        reading_settings(_reading(block_rows=64))
    with pytest.raises(ValueError, match=r"missing key\(s\) \['block_mb'\]"):
        reading_settings({"reading": {"in_memory_max_gb": 1.0, "buffer_blocks": 2}})


def test_params_yaml_states_the_defaults():
    params = read_params("params.yaml")
    assert params["protocol"]["reading"] == setting_defaults()["reading"]


# ----------------------------------------------------------------------------- the reader
def test_block_reader_gives_the_rows_of_the_file(tmp_path):
    X = np.random.default_rng(0).standard_normal((500, 3, 7)).astype(np.float32)
    np.save(tmp_path / "X.npy", X)
    rows = np.sort(np.random.default_rng(1).choice(500, 300, replace=False))
    reader = BlockReader(tmp_path / "X.npy", rows, block_rows=16, cache_blocks=4)
    order = epoch_order(rows, _gen(), 16, 2)
    for s in range(0, len(order), 37):
        batch = np.sort(order[s : s + 37])
        assert np.array_equal(reader[batch], X[batch])
        assert len(reader.cache) <= max(4, len(np.unique(np.searchsorted(rows, batch) // 16)))
    with pytest.raises(IndexError):
        reader[np.array([int(np.setdiff1d(np.arange(500), rows)[0])])]
    # an epoch reads each block about once (two windows' cache), not once a batch
    assert reader.bytes_read <= 2 * X.nbytes
    reader.close()


def test_block_reader_batches_hold_no_copy_of_its_rows(tmp_path):
    """A batch (int64, as sorting an order gives) over int32 rows is located without an
    int64 copy of all the reader's rows (8 bytes a row, once a batch); rows outside its
    range and non-integer indices are refused."""
    import tracemalloc

    n = 2_000_000
    np.save(tmp_path / "X.npy", np.arange(n, dtype=np.float32).reshape(n, 1))
    rows = np.arange(0, n, 2, dtype=np.int32)  # 1 M rows, 4 MB
    reader = BlockReader(tmp_path / "X.npy", rows, block_rows=4096, cache_blocks=4)
    batch = np.sort(np.random.default_rng(0).choice(rows, 256, replace=False)).astype(np.int64)
    reader[batch]  # the blocks cached, so what is traced below is the lookup
    tracemalloc.start()
    try:
        got = reader[batch]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(got[:, 0], batch.astype(np.float32))
    assert peak < rows.nbytes / 4, f"a batch of 256 traced {peak:,} bytes"
    for outside in ([n + 2], [-2], [1]):
        with pytest.raises(IndexError):
            reader[np.array(outside, dtype=np.int64)]
    with pytest.raises(TypeError, match="integer"):
        reader[batch.astype(np.float64)]
    assert reader[[]].shape == (0, 1)
    reader.close()


@pytest.mark.parametrize(
    "rows", [np.arange(0, 5_000, 3), np.r_[np.arange(40), np.arange(4_900, 5_000)]]
)
def test_block_reader_reads_the_labels_with_the_blocks(tmp_path, rows):
    """Labels read with each block (spans and run-by-run blocks alike), for sorted and
    unsorted batches; the labels of the batch just read come without a second lookup."""
    X = np.random.default_rng(4).standard_normal((5_000, 3)).astype(np.float32)
    y = np.random.default_rng(5).integers(0, 9, 5_000)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    reader = BlockReader(tmp_path / "X.npy", rows, 16, 4, labels=tmp_path / "y.npy")
    labels = reader.labels
    assert labels.dtype == y.dtype and len(labels) == len(y)
    rng = np.random.default_rng(6)
    for batch in (np.sort(rng.choice(rows, 64, replace=False)), rng.choice(rows, 50),
                  rows[:0]):  # fmt: skip
        assert np.array_equal(reader[batch], X[batch])
        got = labels[batch]
        assert got is reader._last[1] and np.array_equal(got, y[batch])
    other = np.sort(rng.choice(rows, 10, replace=False))  # not the batch just read
    assert np.array_equal(labels[other], y[other])
    np.save(tmp_path / "short.npy", y[:-1])
    with pytest.raises(ValueError, match="one label a row"):
        BlockReader(tmp_path / "X.npy", rows, 16, 4, labels=tmp_path / "short.npy")
    with pytest.raises(ValueError, match="without labels"):
        _ = BlockReader(tmp_path / "X.npy", rows, 16, 4).labels
    reader.close()


def _span_bytes(reader):
    """The bytes of an epoch that reads each of ``reader``'s blocks once."""
    return sum(reader._span(b)[1] for b in range(len(reader.firsts)))


@pytest.mark.parametrize("threads", [1, 4])
def test_reading_ahead_gives_the_same_batches_and_reads_each_block_once(tmp_path, threads):
    """A reader following the epoch's order gives the batches (values and labels) of one
    that does not, reads each block once an epoch, the next window while the current one
    is served, and holds at most two windows of blocks; over two epochs and a resumed
    tail of an order."""
    X = np.random.default_rng(7).standard_normal((6_000, 3)).astype(np.float32)
    y = np.random.default_rng(8).integers(0, 5, 6_000)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    rows = np.sort(np.random.default_rng(9).choice(6_000, 4_000, replace=False))
    block_rows, buffer_blocks, batch = 32, 3, 50
    args = (tmp_path / "X.npy", rows, block_rows, 2 * buffer_blocks)
    ahead = BlockReader(*args, threads=threads, labels=tmp_path / "y.npy")
    plain = BlockReader(*args, threads=threads, labels=tmp_path / "y.npy")
    generator = _gen(3)
    for epoch in range(2):
        order = BlockShuffledOrder(rows, generator, block_rows, buffer_blocks)
        ahead.follow(order)
        before, buffers = ahead.bytes_read, set()
        # the first batch wholly in window 1
        first_in_1 = -(-int(order.window_starts[1]) // batch) * batch
        assert first_in_1 + batch <= order.window_starts[2]
        for s in range(0, len(order), batch):
            part = np.sort(order[s : s + batch])
            assert np.array_equal(ahead[part], X[part]) and np.array_equal(plain[part], X[part])
            assert np.array_equal(ahead.labels[part], y[part])
            assert len(ahead.cache) <= 2 * buffer_blocks
            buffers.update(id(entry[2]) for entry in map(ahead._entry, ahead.cache.values()))
            if s == first_in_1:  # window 2's blocks are on their way, window 0's dropped
                assert set(ahead.cache) == set(order.blocks[buffer_blocks : 3 * buffer_blocks])
        assert ahead.bytes_read - before == _span_bytes(ahead), epoch
        assert len(buffers) <= 2 * buffer_blocks
    tail = BlockShuffledOrder(rows, _gen(11), block_rows, buffer_blocks)
    ahead.follow(tail)
    rest = tail[7 * batch :]  # a resumed epoch: its order from batch 7 on
    for s in range(0, len(rest), batch):
        part = np.sort(rest[s : s + batch])
        assert np.array_equal(ahead[part], X[part])
    ahead.close()
    plain.close()


def test_a_reader_follows_only_an_order_of_its_own_blocks(tmp_path):
    np.save(tmp_path / "X.npy", np.zeros((400, 2), np.float32))
    rows = np.arange(0, 400, 2)
    reader = BlockReader(tmp_path / "X.npy", rows, block_rows=8, cache_blocks=4)
    with pytest.raises(ValueError, match="blocks of 4 cannot guide a reader of 200 rows in "
                                         "blocks of 8"):  # fmt: skip
        reader.follow(BlockShuffledOrder(rows, _gen(), 4, 2))
    with pytest.raises(ValueError, match="needs a cache of 6 blocks, this one holds 4"):
        reader.follow(BlockShuffledOrder(rows, _gen(), 8, 3))
    with pytest.raises(ValueError, match="an order of 100 rows"):
        reader.follow(BlockShuffledOrder(rows[:100], _gen(), 8, 2))
    order = BlockShuffledOrder(rows, _gen(), 8, 2)
    reader.follow(order)
    reader[np.sort(order[0:4])]
    reader.close()  # blocks still being read ahead: waited for or dropped, no error
    assert reader._pool is None and not reader.cache


def test_a_reader_let_go_while_reading_ahead_closes_its_files(tmp_path):
    """Its last reads hold the reader: it is closed in a reading thread when they end,
    without joining that thread, and its descriptors are closed."""
    import gc
    import os
    import threading
    import time

    np.save(tmp_path / "X.npy", np.zeros((4_000, 8), np.float32))
    np.save(tmp_path / "y.npy", np.zeros(4_000, np.int64))
    rows = np.arange(4_000)
    fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    before = fds()
    errors = []
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        for _ in range(5):
            reader = BlockReader(tmp_path / "X.npy", rows, 16, 8, labels=tmp_path / "y.npy")
            order = BlockShuffledOrder(rows, _gen(), 16, 4)
            reader.follow(order)
            reader[np.sort(order[0:10])]  # window 1 now read ahead, in the pool's threads
            del reader
        deadline = time.monotonic() + 10
        while fds() > before and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.01)
    finally:
        threading.excepthook = threading.__excepthook__
    assert fds() == before and not errors


# ----------------------------------------------------------------------------- the runs
JOB = Job("uea", "BasicMotions", "MS4", 0)
# BasicMotions: 36 training rows of 6 x 100 float32 (2,400 bytes): blocks of 4 rows,
# windows of 2 blocks; batch 4, 9 batches an epoch
BLOCK_READING = {"in_memory_max_gb": 0, "block_mb": 4 * 2400 / (1 << 20), "buffer_blocks": 2}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    def edit(params):
        params["protocol"]["checkpoint_min_seconds"] = 0

    root = make_project(tmp_path_factory.mktemp("batch_order") / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def spec_of(project, max_epochs=6, reading=None):
    params = read_params(project / "params.yaml")
    spec = job_spec(params, JOB)
    spec["settings"]["max_epochs"] = max_epochs
    if reading is not None:
        spec["settings"]["reading"] = reading
    spec["prepared_dir"] = str(project / spec["prepared_dir"])
    return spec


def _spy_orders(monkeypatch):
    """Each epoch's (train_idx, generator state before, order) as the protocol draws it."""
    seen = []
    real = protocol.plan_order

    def spy(plan, train_idx, generator):
        before = generator.get_state()
        order = real(plan, train_idx, generator)
        seen.append((plan, train_idx.copy(), before, np.asarray(order)))
        return order

    monkeypatch.setattr(protocol, "plan_order", spy)
    return seen


def test_an_in_memory_run_draws_the_old_order(project, tmp_path, monkeypatch):
    seen = _spy_orders(monkeypatch)
    lines = []
    record = run_job(spec_of(project, 3), tmp_path / "fold0.json", log=lines.append)
    assert record["reading"]["mode"] == "memory"
    assert any("read into memory once" in line for line in lines), lines
    assert len(seen) == 3
    for _plan, train_idx, before, order in seen:
        g = torch.Generator()
        g.set_state(before)
        assert np.array_equal(order, train_idx[torch.randperm(len(train_idx), generator=g).numpy()])


def test_block_mode_run_resumes_mid_epoch_with_the_same_rows(project, tmp_path, monkeypatch):
    spec = spec_of(project, 6, BLOCK_READING)
    seen = _spy_orders(monkeypatch)
    lines = []
    reference = run_job(spec, tmp_path / "ref" / "fold0.json", log=lines.append)
    assert reference["reading"] == {
        "mode": "blocks", "x_gb": 0.000192, "in_memory_max_gb": 0, "block_rows": 4,
        "buffer_blocks": 2, "block_mb": round(4 * 2400 / (1 << 20), 6),
    }  # fmt: skip
    assert any("BLOCK-SHUFFLED" in line for line in lines), lines
    reference_orders = [order for *_, order in seen]
    assert len(reference_orders) == 6
    seen.clear()

    # stopped in epoch 4 after its 5th batch, then resumed
    record_path, checkpoint = tmp_path / "run" / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    signal_at_training_batch(monkeypatch, 9 * 3 + 5)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record_path, log=lambda _: None, checkpoint_path=checkpoint)
    monkeypatch.undo()
    seen = _spy_orders(monkeypatch)
    resumed = run_job(spec, record_path, log=lambda _: None, checkpoint_path=checkpoint)
    # the resumed epoch 4 rebuilt epoch 4's order, and so on
    assert [o.tolist() for *_, o in seen] == [o.tolist() for o in reference_orders[3:]]
    for key in ("test_error", "test_loss", "best_val_loss", "best_epoch", "epochs_run"):
        assert resumed[key] == reference[key], key
    assert json.loads(record_path.read_text())["reading"]["mode"] == "blocks"


def test_a_run_reading_ahead_trains_as_one_that_does_not(project, tmp_path, monkeypatch):
    """Each block-mode epoch's reader follows that epoch's order; the record is the one
    of a run whose reader does not read ahead."""
    spec = spec_of(project, 3, BLOCK_READING)
    followed = []
    real = BlockReader.follow

    def spy(reader, order):
        followed.append(len(order))
        real(reader, order)

    monkeypatch.setattr(BlockReader, "follow", spy)
    record = run_job(spec, tmp_path / "ahead" / "fold0.json", log=lambda _: None)
    assert followed == [record["n_train"]] * 3
    monkeypatch.setattr(BlockReader, "follow", lambda reader, order: None)
    without = run_job(spec, tmp_path / "plain" / "fold0.json", log=lambda _: None)
    for key in ("test_error", "test_loss", "best_val_loss", "best_epoch", "epochs_run"):
        assert record[key] == without[key], key


def test_x_is_read_into_memory_by_training_only(project):
    """A deep run reads X into memory at its first batch; a tuning trial (validation_only:
    its test rows are never read) keeps the memory map, the same rows in the same order;
    block mode reads through a BlockReader."""
    run = run_setup.set_up(spec_of(project), 1)
    assert run.data.X_memory is None  # nothing read before training asks for it
    X = run.data.train_X()
    assert type(X) is np.ndarray and run.data.rows_X(run.data.val_idx) is X
    trial = run_setup.set_up(spec_of(project), 1, validation_only=True)
    assert isinstance(trial.data.train_X(), np.memmap) and trial.data.X_memory is None
    blocks = run_setup.set_up(spec_of(project, reading=BLOCK_READING), 1)
    assert isinstance(blocks.data.train_X(), BlockReader)
    rows = np.sort(blocks.data.train_idx[:9])
    assert np.array_equal(blocks.data.train_X()[rows], X[rows])
    # block mode reads the labels by row (no map, no copy); memory mode keeps the map
    labels = blocks.data.y
    assert isinstance(labels, batch_order.RowValues) and len(labels) == len(X)
    every = np.arange(len(X))
    assert np.array_equal(labels[every], blocks.data.dataset.y)
    shuffled = np.random.default_rng(0).permutation(len(X))[:20]
    assert np.array_equal(labels[shuffled], blocks.data.dataset.y[shuffled])
    assert blocks.data.classes_in(blocks.data.val_idx) == set(
        np.asarray(blocks.data.dataset.y)[blocks.data.val_idx].tolist()
    )
    assert isinstance(run.data.y, np.memmap)


def test_a_block_around_a_test_fold_reads_its_own_rows_only(tmp_path):
    """Training rows on both sides of a contiguous test fold: the block that straddles it
    is read run by run, so no read (nor buffer) holds the fold's rows."""
    X = np.random.default_rng(2).standard_normal((10_000, 2, 5)).astype(np.float32)
    np.save(tmp_path / "X.npy", X)
    rows = np.r_[np.arange(0, 50), np.arange(9_950, 10_000)]  # rows 50..9,949: a test fold
    reader = BlockReader(tmp_path / "X.npy", rows, block_rows=64, cache_blocks=4)
    for batch in (rows[:30], rows[40:70], rows[60:]):
        assert np.array_equal(reader[batch], X[batch])
    assert reader.bytes_read == len(rows) * X[0].nbytes  # each row once, no fold row
    assert reader.max_span <= 2 * 64
    reader.close()


def test_a_run_on_the_split_steps_files_trains_as_one_that_draws_it(project, tmp_path):
    """A fold's split written by the split step (ssmbench.train.fold_split) and read as
    RowFiles: the same rows, the same block-shuffled epochs, the same record; in memory
    mode the rows are read whole; a split drawn with other settings is refused."""
    from ssmbench.data.errors import DataError
    from ssmbench.data.row_file import RowFile
    from ssmbench.train.fold_split import write_split

    spec = spec_of(project, 4, BLOCK_READING)
    reference = run_job(spec, tmp_path / "ref" / "fold0.json", log=lambda _: None)
    drawn = run_setup.set_up(spec, 1).data
    write_split(spec["prepared_dir"], 0, spec["settings"], tmp_path / "split")
    on_disk = {**spec, "split_dir": str(tmp_path / "split")}
    data = run_setup.set_up(on_disk, 1).data
    for part in ("train_idx", "val_idx", "test_idx"):
        assert isinstance(getattr(data, part), RowFile)
        assert np.array_equal(np.asarray(getattr(data, part)), getattr(drawn, part)), part
    assert data.val_split == drawn.val_split
    record = run_job(on_disk, tmp_path / "disk" / "fold0.json", log=lambda _: None)
    for key in ("test_error", "test_loss", "best_val_loss", "best_epoch", "epochs_run",
                "n_train", "n_val", "n_test"):  # fmt: skip
        assert record[key] == reference[key], key
    in_memory = run_setup.set_up({**spec_of(project, 4), "split_dir": on_disk["split_dir"]}, 1)
    assert type(in_memory.data.train_idx) is np.ndarray
    assert np.array_equal(in_memory.data.train_idx, drawn.train_idx)
    other = copy.deepcopy(on_disk)
    other["settings"]["val_fraction"] = 0.2
    with pytest.raises(DataError, match="split.json.*val_fraction"):
        run_setup.set_up(other, 1)
