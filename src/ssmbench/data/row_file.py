"""Row indices kept on disk: a sorted 1-D integer ``.npy`` read a slice at a time.

A fold of MONSTER's S2Agri has 42.7 M training rows; held in memory as int32 they are
170 MB, and with the validation and test rows and the labels 5 bytes a row of every
training job's resident set (``benchmarks/bench_row_indices.py``). A `RowFile` holds none
of them: ``rows[a:b]`` reads those positions with one ``os.pread`` (no memory map, whose
pages would build up in the resident set over an epoch), and `chunks` reads the whole set
front to back a bounded piece at a time. ``np.asarray(rows)`` reads it all, for the code
paths that need the rows in memory anyway (an estimator's fit, a dataset read into memory).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.npy_chunks import read_npy_header

#: rows read at a time by `RowFile.chunks` (4 MiB of int32)
CHUNK_ROWS = 1 << 20


class RowFile:
    """The sorted row indices in a 1-D integer ``.npy`` at ``path``, read on demand.

    ``len(rows)``, ``rows.dtype``, ``rows[a:b]`` (an ndarray) and ``rows[i]`` (an int) as
    for the array; `chunks` for a pass over all of them. Opening checks the header only;
    `check_sorted` (one pass) that the rows strictly increase and lie in ``[0, n_rows)``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        shape, fortran, dtype, self.offset = read_npy_header(self.path)
        if len(shape) != 1 or dtype.kind not in "iu" or fortran:
            raise DataError(
                f"{self.path}: expected a 1-D integer array of row indices, found shape "
                f"{shape} of {dtype}. Run the split step again."
            )
        self.dtype = np.dtype(dtype)
        self._len = shape[0]
        self._fd: int | None = None

    def __len__(self) -> int:
        return self._len

    @property
    def nbytes(self) -> int:
        return self._len * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"RowFile({str(self.path)!r}, {self._len} rows of {self.dtype})"

    def _read(self, start: int, stop: int) -> np.ndarray:
        out = np.empty(max(0, stop - start), dtype=self.dtype)
        if not out.size:
            return out
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        view, at = memoryview(out).cast("B"), self.offset + start * self.dtype.itemsize
        done = 0
        while done < len(view):
            got = os.preadv(self._fd, [view[done:]], at + done)
            if got <= 0:
                raise DataError(f"{self.path}: ended early at byte {at + done}.")
            done += got
        return out

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self._len)
            if step != 1:
                raise TypeError(f"{self.path}: a RowFile is sliced with step 1 only")
            return self._read(start, max(start, stop))
        if isinstance(key, int | np.integer) and not isinstance(key, bool):
            i = int(key) + (self._len if key < 0 else 0)
            if not 0 <= i < self._len:
                raise IndexError(f"{self.path}: position {key} outside its {self._len} rows")
            return self._read(i, i + 1)[0].item()
        raise TypeError(f"{self.path}: a RowFile is read by position or slice, got {key!r}")

    def chunks(self, rows: int = CHUNK_ROWS):
        """(first position, its rows) for the whole file, ``rows`` at a time."""
        for start in range(0, self._len, rows):
            yield start, self._read(start, min(self._len, start + rows))

    def check_sorted(self, n_rows: int) -> None:
        """Raise `DataError` unless the rows strictly increase within ``[0, n_rows)``."""
        previous = None
        for start, part in self.chunks():
            if part.size and (
                (previous is not None and part[0] <= previous)
                or (part.size > 1 and (part[1:] <= part[:-1]).any())
            ):
                raise DataError(
                    f"{self.path}: row indices not strictly increasing near position "
                    f"{start}. Run the split step again."
                )
            if part.size:
                previous = int(part[-1])
        if previous is not None and (int(self[0]) < 0 or previous >= n_rows):
            raise DataError(
                f"{self.path}: row indices outside [0, {n_rows}) (the dataset's N). Run the "
                f"split step again."
            )

    def __array__(self, dtype=None, copy=None):
        out = self._read(0, self._len)
        return out if dtype is None else out.astype(dtype)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __getstate__(self):  # a copy (or another process) opens its own descriptor
        return {**self.__dict__, "_fd": None}


def save_rows(path: str | os.PathLike, rows: np.ndarray) -> None:
    """Write sorted row indices to ``path`` as a ``.npy``: a temporary file, then a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(rows), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
