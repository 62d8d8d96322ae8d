"""How a run reads its rows: the batch size (`batch_size_for`), batches read by index
(`iterate_batches`), and its training rows into memory once or from disk in
block-shuffled order.

A prepared X is memory-mapped (``ssmbench.data.store``). Batches of rows drawn uniformly at
random from a memory map are read at a small fraction of the disk's sequential rate on a
cold page cache (``benchmarks/bench_scale.py``: 0.055x on a 6 GB X), which for MONSTER's
57 GB S2Agri is about 20 minutes of reading per epoch. ``protocol.reading`` in params.yaml
chooses per run (`plan_reading`):

* ``memory`` (X's size <= ``in_memory_max_gb``): X is copied into memory once per run
  and every epoch is a full shuffle, ``train_idx[randperm(n)]`` from the run's generator
  alone, so a run on a dataset that fits gets the same batches whatever the block settings.
* ``blocks`` (a larger X): the sorted training rows are cut into blocks of
  ``block_rows`` consecutive training rows (``block_mb`` of X each); an epoch shuffles
  the blocks, then takes them ``buffer_blocks`` at a time (a *window*) and shuffles the
  rows of each window (`BlockShuffledOrder`). A batch then holds rows of at most two windows'
  blocks, and `BlockReader` reads each block once, whole, with ``os.pread`` into a cache
  of two windows: near-sequential reads, and a resident set bounded by the cache, not by
  N (no page of the memory map is touched). Following the epoch's order, it reads the
  next window in the background while the current one is trained on (`BlockReader.follow`).

Both orders are deterministic functions of the shuffling generator's state at the
epoch's start (and of the training rows and settings), which is what a checkpoint keeps:
a resumed epoch rebuilds the same order (``train.protocol``).
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ssmbench.data.npy_chunks import read_npy_header
from ssmbench.data.row_file import RowFile
from ssmbench.reading_plan import MEMORY, ReadingPlan

#: threads reading a window's blocks at once (requests in flight; the GIL is released)
READ_THREADS = 4
#: the reading threads' name prefix (`BlockReader.close` checks whether it runs in one)
READ_THREAD_NAME = "blockread"
#: a block whose file span is more than this many times its own rows (a test fold lying
#: between its training rows) is read run by run, not as one span
MAX_SPAN_FACTOR = 2
#: rows compared at a time when checking that rows are sorted
SORTED_CHECK_ROWS = 1 << 20
#: a page: `RowValues` reads rows less than this apart at once
PAGE_BYTES = 4096
#: rows read at a time for the blocks' first and last rows (1 MiB of int32)
BOUNDS_CHUNK_ROWS = 1 << 18


def full_order(train_idx: np.ndarray, generator: torch.Generator) -> np.ndarray:
    """A full shuffle of the training rows: ``train_idx[randperm(n)]``."""
    return train_idx[torch.randperm(len(train_idx), generator=generator).numpy()]


def epoch_order(
    train_idx: np.ndarray, generator: torch.Generator, block_rows: int, buffer_blocks: int
) -> np.ndarray:
    """The whole of `BlockShuffledOrder` as one array (in ``train_idx``'s dtype): for tests
    and benchmarks; a run reads it a window at a time instead."""
    order = BlockShuffledOrder(train_idx, generator, block_rows, buffer_blocks)
    return order[0 : len(order)]


@dataclass
class _WindowDraws:
    """Where a `BlockShuffledOrder`'s private generator stands: the state after the block
    order, the window it draws next, and the last two windows drawn."""

    generator: torch.Generator
    after_blocks: torch.Tensor
    next_window: int = 0
    windows: OrderedDict = field(default_factory=OrderedDict)


class BlockShuffledOrder:
    """A block-shuffled permutation of ``train_idx``, drawn a window at a time.

    The sorted rows are cut into blocks of ``block_rows`` consecutive positions, the blocks
    shuffled (one ``randperm``), then the rows of each window of ``buffer_blocks``
    consecutive blocks (in the shuffled block order) shuffled together (one ``randperm`` a
    window, in window order). Every row exactly once; drawn from ``generator`` only.

    Built, it leaves ``generator`` where drawing the whole epoch leaves it (the epoch's
    draws are made once and thrown away), and draws its windows from a copy of the
    generator's state at the start: the same rows whatever else the generator is used
    for meanwhile, and the next epoch starts where it would. It holds the block order and
    at most two windows' rows (a batch spans at most two), not an order of N rows; sorted
    rows (as `split_fold` gives) are not copied. Sliced like an array: ``order[a:b]`` is
    the rows at those positions (an ndarray), ``order[a:]`` the same order from ``a`` on
    (how a resumed epoch skips the batches it had done)."""

    def __init__(self, train_idx: np.ndarray, generator: torch.Generator, block_rows: int,
                 buffer_blocks: int, start: int = 0):  # fmt: skip
        if isinstance(block_rows, bool) or int(block_rows) < 1:
            raise ValueError(f"block_rows must be >= 1, got {block_rows!r}")
        if isinstance(buffer_blocks, bool) or int(buffer_blocks) < 1:
            raise ValueError(f"buffer_blocks must be >= 1, got {buffer_blocks!r}")
        self.rows = sorted_rows(train_idx)  # a RowFile as it is (sorted when drawn)
        self.block_rows, self.buffer_blocks = int(block_rows), int(buffer_blocks)
        self.start = int(start)
        n = len(self.rows)
        n_blocks = math.ceil(n / self.block_rows)
        private = torch.Generator()
        private.set_state(generator.get_state())
        self.blocks = torch.randperm(n_blocks, generator=private).numpy()
        sizes = np.full(n_blocks, self.block_rows, dtype=np.int64)
        if n_blocks:
            sizes[-1] = n - (n_blocks - 1) * self.block_rows
        in_order = sizes[self.blocks]
        # window w holds positions window_starts[w] .. window_starts[w + 1] - 1
        self.window_starts = np.r_[0, np.cumsum(
            [in_order[w : w + self.buffer_blocks].sum()
             for w in range(0, n_blocks, self.buffer_blocks)], dtype=np.int64)]  # fmt: skip
        # shared with the orders sliced from this one (``order[a:]``)
        self._draws = _WindowDraws(private, private.get_state())
        for w in range(len(self.window_starts) - 1):  # the caller's generator past the epoch
            torch.randperm(int(self.window_starts[w + 1] - self.window_starts[w]),
                           generator=private)  # fmt: skip
        generator.set_state(private.get_state())
        private.set_state(self._draws.after_blocks)

    @property
    def dtype(self) -> np.dtype:
        return self.rows.dtype

    def __len__(self) -> int:
        return max(0, len(self.rows) - self.start)

    def _window(self, w: int) -> np.ndarray:
        """Window w's rows, in their shuffled order: drawn in window order from the
        private generator (from the block order again when an earlier one is asked for)."""
        draws = self._draws
        if w in draws.windows:
            return draws.windows[w]
        if w < draws.next_window:
            draws.generator.set_state(draws.after_blocks)
            draws.next_window = 0
        while True:
            v = draws.next_window
            window = self.blocks[v * self.buffer_blocks : (v + 1) * self.buffer_blocks]
            # the window's rows in block order (block b: rows[b*block_rows : ...], a slice
            # of an array or one pread of a RowFile), then shuffled together
            rows = np.concatenate([block_slice(self.rows, int(b), self.block_rows)
                                   for b in window])  # fmt: skip
            shuffled = torch.randperm(len(rows), generator=draws.generator).numpy()
            draws.next_window += 1
            if v == w:
                draws.windows[w] = rows[shuffled]
                while len(draws.windows) > 2:
                    draws.windows.popitem(last=False)
                return draws.windows[w]

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a BlockShuffledOrder is sliced by [a:b] or [a:] only")
        a, b, _ = key.indices(len(self))
        if key.stop is None:  # the order from a on, still drawn a window at a time
            tail = object.__new__(BlockShuffledOrder)
            tail.__dict__.update(self.__dict__)
            tail.start = self.start + a
            return tail
        lo, hi = self.start + a, self.start + max(a, b)
        parts, w = [], int(np.searchsorted(self.window_starts, lo, side="right")) - 1
        while lo < hi:
            first = int(self.window_starts[w])
            window = self._window(w)
            parts.append(window[lo - first : min(hi, first + len(window)) - first])
            lo, w = first + len(window), w + 1
        return np.concatenate(parts) if parts else self.rows[:0].copy()

    def __array__(self, dtype=None, copy=None):
        out = self[0 : len(self)]
        return out if dtype is None else out.astype(dtype)


def block_slice(rows, b: int, block_rows: int) -> np.ndarray:
    """Block b of sorted ``rows`` (an array or a `RowFile`): positions
    ``b*block_rows .. (b+1)*block_rows - 1``."""
    return rows[b * block_rows : min(len(rows), (b + 1) * block_rows)]


def block_bounds(rows, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(first row, last row) of each block of sorted ``rows``, as int64 arrays of
    ``ceil(len(rows) / block_rows)``; a `RowFile` read a bounded chunk at a time."""
    n = len(rows)
    n_blocks = math.ceil(n / block_rows)
    firsts, lasts = np.empty(n_blocks, np.int64), np.empty(n_blocks, np.int64)
    chunk = block_rows * max(1, BOUNDS_CHUNK_ROWS // block_rows)  # whole blocks a chunk
    for start in range(0, n, chunk):
        part = rows[start : min(n, start + chunk)]
        b = start // block_rows
        firsts[b : b + math.ceil(len(part) / block_rows)] = part[::block_rows]
        ends = np.minimum(np.arange(block_rows - 1, len(part) + block_rows - 1, block_rows),
                          len(part) - 1)  # fmt: skip
        lasts[b : b + len(ends)] = part[ends]
    return firsts, lasts


def sorted_rows(rows):
    """``rows`` as a sorted integer array: itself when it is one already (no copy); a
    `RowFile` (sorted by construction, checked by ``fold_split.read_split``) as it is."""
    if isinstance(rows, RowFile):
        return rows
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu":
        rows = rows.astype(np.int64)
    # checked a chunk at a time: no N-long comparison array
    for start in range(0, len(rows) - 1, SORTED_CHECK_ROWS):
        part = rows[start : start + SORTED_CHECK_ROWS + 1]
        if not (part[1:] >= part[:-1]).all():
            return np.sort(rows)
    return rows


def plan_order(
    plan: ReadingPlan | None, train_idx: np.ndarray, generator
) -> np.ndarray | BlockShuffledOrder:
    """The epoch's row order under ``plan``: None or MEMORY, `full_order` (an array);
    BLOCKS, a `BlockShuffledOrder` (drawn a window at a time as it is read)."""
    if plan is None or plan.mode == MEMORY:
        return full_order(train_idx, generator)
    return BlockShuffledOrder(train_idx, generator, plan.block_rows, plan.buffer_blocks)


class BlockReader:
    """Rows of a .npy X (N, ...) by index, for a fixed sorted set of ``rows`` (an array, or
    a `RowFile` on disk), read a block at a time: block b is
    ``rows[b*block_rows : (b+1)*block_rows]``, read with one ``os.pread`` of the file span
    from its first to its last row (rows of other splits in between included) into a
    cache of at most ``cache_blocks`` blocks (least recently used dropped first; a batch
    needing more keeps them all until the next one). A block whose span is more than
    MAX_SPAN_FACTOR times its rows (a contiguous test fold between its training rows) is
    read run of consecutive rows by run instead, into a buffer of its own rows only, so no
    block reads or holds more than that. Indexing with sorted rows (as ``iterate_batches``
    does) gives the rows' array, like ``X[rows]``. No memory map, and of ``rows`` only each
    block's first and last row and the cached blocks' rows: nothing here enters the
    process's RSS but the cache (and 16 bytes a block)."""

    def __init__(self, path: str | os.PathLike, rows, block_rows: int, cache_blocks: int,
                 threads: int = READ_THREADS, labels: str | os.PathLike | None = None):  # fmt: skip
        self.path = Path(path)
        shape, fortran, dtype, self.offset = read_npy_header(self.path)
        if fortran:
            raise ValueError(f"{self.path}: a Fortran-ordered array cannot be read by rows")
        self.shape, self.dtype, self.ndim = shape, np.dtype(dtype), len(shape)
        # labels (N,) read with each block, one gather more a block (`BlockLabels`)
        self.labels_path = None if labels is None else Path(labels)
        if self.labels_path is not None:
            label_shape, _, label_dtype, self.labels_offset = read_npy_header(self.labels_path)
            if label_shape != shape[:1]:
                raise ValueError(f"{self.labels_path}: shape {label_shape}, expected "
                                 f"{shape[:1]}: one label a row of {self.path}")  # fmt: skip
            self.labels_dtype = np.dtype(label_dtype)
        self._labels_fd: int | None = None
        self._last: tuple | None = None  # the batch last read, and its labels
        self.row_shape = shape[1:]
        self.row_bytes = int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize
        self.rows = sorted_rows(rows)  # shared with the run's own (sorted) rows
        self.block_rows, self.cache_blocks = int(block_rows), max(1, int(cache_blocks))
        # block -> (its rows, their values, the buffer holding them, the first file row
        # of its span when read whole (else None), the labels of the same rows or None),
        # or the Future of that while it is read ahead
        self.cache: OrderedDict[int, tuple] = OrderedDict()
        self.threads = max(1, int(threads))
        self.firsts, self.lasts = block_bounds(self.rows, self.block_rows)
        spans = self.lasts - self.firsts + 1
        # spans read whole, bounded; a block beyond the bound is read run by run
        self.max_span = int(min(spans.max(), MAX_SPAN_FACTOR * self.block_rows)) if len(
            spans) else 1  # fmt: skip
        self._free: list[np.ndarray] = []
        self._pool: ThreadPoolExecutor | None = None
        self.bytes_read = 0
        self._count_lock = threading.Lock()
        self._fd: int | None = None
        self._route: _Route | None = None  # the order read ahead along (`follow`)

    def __len__(self) -> int:
        return self.shape[0]

    def _open(self) -> None:
        """Opens X's descriptor (and the labels') in the calling thread, before any block is
        read: the reading threads (`_read_block`) only use them."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        if self.labels_path is not None and self._labels_fd is None:
            self._labels_fd = os.open(self.labels_path, os.O_RDONLY)

    def close(self) -> None:
        if self._pool is not None:  # read-ahead not started is dropped, in flight waited for
            # closed in a reading thread only when its finished read let the reader go,
            # that is when no other read holds it: nothing to wait for (nor can it join itself)
            in_pool = threading.current_thread().name.startswith(READ_THREAD_NAME)
            self._pool.shutdown(wait=not in_pool, cancel_futures=True)
            self._pool = None
        for fd in (self._fd, self._labels_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._labels_fd = None
        self.cache.clear()
        self._free.clear()
        self._last = None
        self._route = None

    @property
    def labels(self) -> BlockLabels:
        """The labels of this reader's rows, read with its blocks (``labels=`` given)."""
        if self.labels_path is None:
            raise ValueError(f"{self.path}: this reader was made without labels")
        return BlockLabels(self)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _span(self, b: int) -> tuple[int, int]:
        """Block b's bytes in the file: (offset, length)."""
        first, last = int(self.firsts[b]), int(self.lasts[b])
        return self.offset + first * self.row_bytes, (last - first + 1) * self.row_bytes

    def _buffer(self) -> np.ndarray:
        """A block's buffer: an evicted block's when there is one (no fresh pages to fault
        in), else a new one of the largest span."""
        if self._free:
            return self._free.pop()
        return np.empty((self.max_span, *self.row_shape), dtype=self.dtype)

    def _pread(self, out: np.ndarray, first_row: int) -> None:
        """File rows first_row.. into ``out`` (contiguous), as many as it holds."""
        got = pread_exactly(self._fd, out, self.offset + first_row * self.row_bytes, self.path)
        with self._count_lock:  # reads run in threads: `+=` around the read would lose some
            self.bytes_read += got

    def _pread_labels(self, out: np.ndarray, first_row: int) -> None:
        at = self.labels_offset + first_row * self.labels_dtype.itemsize
        pread_exactly(self._labels_fd, out, at, self.labels_path)

    def _read_block(self, b: int, buffer: np.ndarray) -> tuple:
        """(its rows, their values or its span, ``buffer``, the span's first file row, the
        labels of the same) for a block read whole; (its rows, their values, ``buffer``,
        None, their labels) for one read run by run. Labels None without ``labels=``."""
        first, last = int(self.firsts[b]), int(self.lasts[b])
        rows = block_slice(self.rows, b, self.block_rows)
        with_labels = self.labels_path is not None
        if last - first + 1 <= len(buffer):
            out = buffer[: last - first + 1]
            self._pread(out, first)
            labels = np.empty(len(out), self.labels_dtype) if with_labels else None
            if with_labels:
                self._pread_labels(labels, first)
            return rows, out, buffer, first, labels
        out = buffer[: len(rows)]
        labels = np.empty(len(rows), self.labels_dtype) if with_labels else None
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1  # where a run of consecutive rows ends
        for lo, hi in zip(np.r_[0, breaks], np.r_[breaks, len(rows)], strict=True):
            self._pread(out[lo:hi], int(rows[lo]))
            if with_labels:
                self._pread_labels(labels[lo:hi], int(rows[lo]))
        return rows, out, buffer, None, labels

    def __getitem__(self, batch) -> np.ndarray:
        asked = batch  # the object: `BlockLabels` gives its labels when asked for it next
        batch = np.asarray(batch)
        if batch.dtype.kind not in "iu" and batch.size:
            raise TypeError(f"{self.path}: rows are asked for by integer index, got {batch.dtype}")
        outside = IndexError(f"{self.path}: rows outside this reader's set were asked for")
        if len(batch) and (not len(self.firsts) or batch.min() < self.firsts[0]
                           or batch.max() > self.lasts[-1]):  # fmt: skip
            raise outside
        batch = batch.astype(np.int64, copy=False).reshape(-1)
        with_labels = self.labels_path is not None
        if not batch.size:
            if with_labels:
                self._last = (asked, np.empty(0, self.labels_dtype))
            return np.empty((0, *self.row_shape), dtype=self.dtype)
        # sorted (as iterate_batches asks) so each block's rows are one slice of the batch
        unsort = None if (batch[1:] >= batch[:-1]).all() else np.argsort(batch, kind="stable")
        if unsort is not None:
            batch = batch[unsort]
        # the block each row would be in: the last whose first row is at or before it
        blocks = np.searchsorted(self.firsts, batch, side="right") - 1
        cuts = np.flatnonzero(blocks[1:] != blocks[:-1]) + 1
        los, his = np.r_[0, cuts], np.r_[cuts, len(batch)]
        needed = blocks[los].tolist()  # ascending: the file front to back
        keep = set(needed)
        missing = [b for b in needed if b not in self.cache]
        for old in list(self.cache):
            if len(self.cache) + len(missing) <= self.cache_blocks:
                break
            if old not in keep:
                self._free.append(self._entry(self.cache.pop(old))[2])
        # the missing blocks read by `threads` threads at once (os.preadv releases the GIL):
        # several requests in flight, as the kernel's read-ahead has for a sequential read
        buffers = [self._buffer() for _ in missing]
        self._open()
        if self.threads > 1 and len(missing) > 1:
            done = list(self._reading_pool().map(self._read_block, missing, buffers))
        else:
            done = [self._read_block(b, buf) for b, buf in zip(missing, buffers, strict=True)]
        self.cache.update(zip(missing, done, strict=True))
        out = np.empty((len(batch), *self.row_shape), dtype=self.dtype)
        labels_out = np.empty(len(batch), self.labels_dtype) if with_labels else None
        for b, lo, hi in zip(needed, los.tolist(), his.tolist(), strict=True):
            rows, values, _, first, labels = self.cache[b] = self._entry(self.cache[b])
            self.cache.move_to_end(b)
            # in the block's own rows (their dtype: no cast of the block): one of this set?
            wanted = batch[lo:hi].astype(rows.dtype, copy=False)
            at = rows.searchsorted(wanted)
            if at[-1] >= len(rows) or (rows[at] != wanted).any():
                raise outside
            where = wanted - first if first is not None else at
            out[lo:hi] = values[where]
            if with_labels:
                labels_out[lo:hi] = labels[where]
        if unsort is not None:
            out[unsort] = out.copy()
            if with_labels:
                labels_out[unsort] = labels_out.copy()
        if with_labels:
            self._last = (asked, labels_out)
        if self._route is not None:
            self._read_ahead(needed)
        return out

    def follow(self, order: BlockShuffledOrder) -> None:
        """Read ahead along ``order`` (an epoch's order over this reader's rows, with its
        block size): once a batch lies wholly in one window, the blocks of earlier windows
        are dropped (an epoch visits each window once) and the next window's blocks read
        in the background while this window's batches are served, as a sequential read
        has the kernel's read-ahead. The cache then holds at most two windows. Only a hint:
        a block asked for that is not there is read then, whatever the order."""
        if order.block_rows != self.block_rows or len(order.rows) != len(self.rows):
            raise ValueError(f"{self.path}: an order of {len(order.rows)} rows in blocks of "
                             f"{order.block_rows} cannot guide a reader of {len(self.rows)} "
                             f"rows in blocks of {self.block_rows}")  # fmt: skip
        if order.buffer_blocks * 2 > self.cache_blocks:
            raise ValueError(f"{self.path}: reading ahead windows of {order.buffer_blocks} "
                             f"blocks needs a cache of {2 * order.buffer_blocks} blocks, "
                             f"this one holds {self.cache_blocks}")  # fmt: skip
        window_of = np.empty(len(order.blocks), np.int64)
        window_of[order.blocks] = np.arange(len(order.blocks)) // order.buffer_blocks
        self._route = _Route(order.blocks, order.buffer_blocks, window_of)

    def _read_ahead(self, needed: list[int]) -> None:
        """After a batch of blocks ``needed``: when they are all of one window w and w + 1
        is not being read yet, drop the blocks of other windows, start reading w + 1's
        (those not cached already)."""
        route = self._route
        windows = route.window_of[needed]
        w = int(windows[0])
        if w + 1 == route.ahead or (windows != w).any():
            return
        route.ahead = w + 1
        for b in [b for b in self.cache if route.window_of[b] not in (w, w + 1)]:
            self._free.append(self._entry(self.cache.pop(b))[2])
        nxt = route.blocks[(w + 1) * route.buffer_blocks : (w + 2) * route.buffer_blocks]
        self._open()
        for b in nxt.tolist():
            if b not in self.cache:
                self.cache[b] = self._reading_pool().submit(self._read_block, b, self._buffer())

    def _entry(self, entry) -> tuple:
        """A cache entry's block (rows, values, buffer, first row, labels): a block read
        ahead waited for."""
        return entry.result() if isinstance(entry, Future) else entry

    def _reading_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=READ_THREAD_NAME)
        return self._pool


@dataclass
class _Route:
    """The order a `BlockReader` reads ahead along: its blocks in epoch order, the blocks a
    window, each block's window, and the window being read ahead."""

    blocks: np.ndarray
    buffer_blocks: int
    window_of: np.ndarray
    ahead: int | None = None


class BlockLabels:
    """The labels of a `BlockReader`'s rows, read with its blocks: ``labels[batch]`` just
    after ``reader[batch]`` with the same batch object (what ``iterate_batches`` does) is
    the labels that read gathered (a lookup: no second search of the blocks); any other
    batch is read through the reader. Indexed like the label array."""

    def __init__(self, reader: BlockReader):
        self.reader = reader
        self.dtype, self.shape, self.ndim = reader.labels_dtype, reader.shape[:1], 1

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, batch) -> np.ndarray:
        last = self.reader._last
        if last is None or last[0] is not batch:
            self.reader[batch]
            last = self.reader._last
        return last[1]


def pread_exactly(fd: int, out: np.ndarray, at: int, path) -> int:
    """Fill ``out`` (contiguous) from byte ``at`` of the open file ``fd``; its bytes."""
    view, done = memoryview(out).cast("B"), 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], at + done)
        if got <= 0:
            raise OSError(f"{path}: short read at byte {at + done}")
        done += got
    return done


class RowValues:
    """The rows of a .npy (y: (N,), or (N, ...)) at any row indices, read with
    ``os.pread``: rows less than a page apart in one read, so a batch costs at most one
    read a row and an evaluation's sorted rows a read per page. For block mode's labels:
    no memory map (its pages would build up in the resident set) and no copy in memory.
    Indexed like the array with integer rows (sorted or not)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        shape, fortran, dtype, self.offset = read_npy_header(self.path)
        if fortran:
            raise ValueError(f"{self.path}: a Fortran-ordered array cannot be read by rows")
        self.shape, self.dtype, self.ndim = shape, np.dtype(dtype), len(shape)
        self.row_shape = shape[1:]
        self.row_bytes = int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize
        self.merge_gap = max(1, PAGE_BYTES // max(1, self.row_bytes))
        self._fd: int | None = None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.asarray(rows)
        if rows.dtype.kind not in "iu" and rows.size:
            raise TypeError(f"{self.path}: rows are asked for by integer index, got {rows.dtype}")
        rows = rows.astype(np.int64, copy=False).reshape(-1)
        out = np.empty((len(rows), *self.row_shape), dtype=self.dtype)
        if not rows.size:
            return out
        if rows.min() < 0 or rows.max() >= self.shape[0]:
            raise IndexError(f"{self.path}: row outside [0, {self.shape[0]}) asked for")
        order = None if (rows[1:] >= rows[:-1]).all() else np.argsort(rows, kind="stable")
        wanted = rows if order is None else rows[order]
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        got = np.empty_like(out)
        breaks = np.flatnonzero(np.diff(wanted) > self.merge_gap) + 1
        for lo, hi in zip(np.r_[0, breaks], np.r_[breaks, len(wanted)], strict=True):
            first = int(wanted[lo])
            span = np.empty((int(wanted[hi - 1]) - first + 1, *self.row_shape), self.dtype)
            pread_exactly(self._fd, span, self.offset + first * self.row_bytes, self.path)
            got[lo:hi] = span[wanted[lo:hi] - first]
        if order is None:
            return got
        out[order] = got
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# --- the batch size, and batches read by index -------------------------------------


def batch_size_for(settings: dict, n_train: int) -> int:
    """The paper's "batch 4–64 by dataset size": the power of two at or below
    batch_fraction * n_train, clipped to [batch_min, batch_max]. A fixed `batch_size`
    (e.g. MONSTER's 256) wins where it is not null."""
    if settings["batch_size"] is not None:
        return int(settings["batch_size"])
    target = max(1.0, settings["batch_fraction"] * n_train)
    size = 2 ** int(math.floor(math.log2(target)))
    return int(min(settings["batch_max"], max(settings["batch_min"], size)))


def iterate_batches(
    X: np.ndarray,
    y: np.ndarray,
    indices: np.ndarray,
    batch_size: int,
    generator: torch.Generator | None = None,
    *,
    target_dtype=np.int64,
    target_mask: np.ndarray | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
) -> Iterator[tuple]:
    """Batches ``(x, y)`` (or ``(x, y, target_mask)``), then, when ``inputs`` is given, a
    dict of its arrays' rows (a time-aware model's ``steps`` (N, L) float32, ``mask``
    (N, C, L) bool), read by index from X (a memory map is fine: only the batch is loaded).

    Shuffled with `generator` when given. Indices within a batch are sorted so a memory
    map is read front to back; the order inside a batch does not change the gradient.
    """
    order = indices
    if generator is not None:
        order = indices[torch.randperm(len(indices), generator=generator).numpy()]
    for start in range(0, len(order), batch_size):
        batch = np.sort(order[start : start + batch_size])
        xb = torch.from_numpy(np.ascontiguousarray(X[batch], dtype=np.float32))
        yb = torch.from_numpy(np.asarray(y[batch], dtype=target_dtype))
        out = (xb, yb)
        if target_mask is not None:
            out += (torch.from_numpy(np.asarray(target_mask[batch], dtype=bool)),)
        if inputs is not None:
            out += ({name: _rows(values, batch) for name, values in inputs.items()},)
        yield out


def _rows(values: np.ndarray, batch: np.ndarray) -> torch.Tensor:
    """The batch's rows of an extra input: bool stays bool (a mask), the rest float32."""
    dtype = bool if values.dtype == np.bool_ else np.float32
    return torch.from_numpy(np.ascontiguousarray(values[batch], dtype=dtype))
