"""Reading and writing ``.npy`` files chunk of rows by chunk of rows, for raw arrays too
large for memory (MONSTER's ``X`` reaches tens of GB): the header checked against the file
size, a sequential C-order writer, the row spans of a chunk, and one pass over ``X`` that
hashes it, counts its non-finite values and writes its float32 copy.

Plain sequential reads and writes rather than ``np.load(mmap_mode=...)`` /
``np.lib.format.open_memmap`` where it matters: pages touched through a memory map count
in the process's resident set until they are evicted; these do not.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError

#: bytes of rows read (and converted) at a time, unless a caller gives its chunk rows
CHUNK_BYTES = 32 << 20


def read_npy_header(path: Path) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran_order, dtype, data offset) of a .npy file, checked against its size."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            offset = f.tell()
    except (ValueError, OSError, EOFError) as e:
        raise DataError(
            f"{path}: not a readable .npy file ({e}). The file is corrupt or truncated; "
            f"fetch it again."
        ) from e
    if dtype.hasobject:
        raise DataError(f"{path}: holds Python objects (dtype {dtype}); expected numbers.")
    expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    actual = path.stat().st_size
    if actual != expected:
        raise DataError(
            f"{path}: {actual} bytes but its header (shape {shape}, dtype {dtype}) needs "
            f"{expected}. The file is truncated or corrupt; fetch it again."
        )
    return tuple(int(s) for s in shape), bool(fortran), dtype, offset


def write_npy(path: Path, shape: tuple[int, ...], dtype, chunks) -> None:
    """Write a C-order .npy from an iterator of arrays (consecutive rows), sequentially.

    Plain writes rather than ``np.lib.format.open_memmap``: pages written through a memory
    map count in the process's resident set until they are evicted; these do not.
    """
    dtype = np.dtype(dtype)
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    rows = 0
    with open(path, "wb") as f:
        _write_header(f, header)
        for chunk in chunks:
            chunk = np.ascontiguousarray(chunk, dtype=dtype)
            f.write(chunk.data)
            rows += chunk.shape[0]
        f.flush()
        os.fsync(f.fileno())
    if rows != shape[0]:
        raise DataError(f"{path}: wrote {rows} rows, expected {shape[0]} (internal error).")


def _write_header(f, header: dict) -> None:
    try:
        np.lib.format.write_array_header_1_0(f, header)
    except ValueError:  # header too long for format 1.0
        np.lib.format.write_array_header_2_0(f, header)


def row_chunks(n_rows: int, row_bytes: int, chunk_rows: int | None):
    step = chunk_rows or max(1, CHUNK_BYTES // max(1, row_bytes))
    for start in range(0, n_rows, step):
        yield start, min(n_rows, start + step)


def scan_and_convert(path: Path, hdr, out: Path | None, chunk_rows: int | None) -> tuple[str, dict]:
    """One pass over ``X``: its sha256, counts of non-finite values, and (with ``out``) a
    float32 C-order copy written chunk by chunk. Never holds more than a chunk."""
    shape, fortran, dtype, offset = hdr
    N = shape[0]
    row_items = int(np.prod(shape[1:], dtype=np.int64))
    counts = {"nan": 0, "inf": 0, "overflow": 0}
    is_float = dtype.kind == "f"

    def check(a: np.ndarray) -> np.ndarray:
        if is_float:
            bad = ~np.isfinite(a)
            n_bad = int(np.count_nonzero(bad))
            if n_bad:
                n_nan = int(np.count_nonzero(np.isnan(a)))
                counts["nan"] += n_nan
                counts["inf"] += n_bad - n_nan
        if out is None:
            return a
        with np.errstate(over="ignore"):  # counted below
            conv = a.astype(np.float32)
        if is_float and dtype.itemsize > 4:
            n_conv_bad = int(np.count_nonzero(~np.isfinite(conv)))
            counts["overflow"] += n_conv_bad - int(np.count_nonzero(~np.isfinite(a)))
        return conv

    if fortran:  # rare: hash the file, then read rows through a memory map
        digest = sha256_file(path)
        mm = np.load(path, mmap_mode="r", allow_pickle=False)

        def chunks():
            for s, e in row_chunks(N, row_items * dtype.itemsize, chunk_rows):
                yield check(np.array(mm[s:e]))

        if out is None:
            for _ in chunks():
                pass
        else:
            write_npy(out, shape, np.float32, chunks())
        del mm
        return digest, counts

    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(offset))

        def chunks():
            buf = None
            for s, e in row_chunks(N, row_items * dtype.itemsize, chunk_rows):
                nbytes = (e - s) * row_items * dtype.itemsize
                if buf is None or len(buf) < nbytes:
                    buf = bytearray(nbytes)
                view = memoryview(buf)[:nbytes]
                got = f.readinto(view)
                if got != nbytes:
                    raise DataError(f"{path}: ended early at row {s} (truncated); fetch it again.")
                h.update(view)
                a = np.frombuffer(view, dtype=dtype).reshape((e - s,) + shape[1:])
                yield check(a)

        if out is None:
            for _ in chunks():
                pass
        else:
            write_npy(out, shape, np.float32, chunks())
    return h.hexdigest(), counts
