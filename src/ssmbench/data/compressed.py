"""One compressed file (``.xz`` or ``.gz``) decompressed, streamed, into a staged file.

:func:`decompress_to` reads the compressed file chunk by chunk (:data:`CHUNK` bytes), feeds
each chunk to an :mod:`lzma` or :mod:`zlib` decompressor that returns at most
:data:`CHUNK` bytes per call, and writes each piece to the target file as it comes,
hashing both sides as it goes. So neither the compressed nor the decompressed file is ever
held in memory (a 415 MB ``.ts`` from a 3 MB ``.xz``: a few MiB of buffers), and nothing
reads the output again to hash it.

What it refuses, each with a :class:`DataError` naming the file, what is wrong and what to
do (the partial output is left to the caller, whose staging deletes it):

* a file that does not start with the format's magic bytes (not xz / not gzip at all), or
  whose content the decompressor rejects (corrupt, a failed integrity check);
* a truncated file: the input ends before the stream's end marker
  (``decompressor.eof`` still false);
* bytes after the last stream that are neither zero padding nor another stream of the
  same format (``cat a.xz b.xz`` and multi-member gzip files are read whole, as the
  ``xz`` and ``gzip`` tools read them);
* a decompression bomb, counted while streaming, before anything past a cap is written:
  more than ``max_bytes`` (:data:`MAX_DECOMPRESSED_BYTES`) of output, or, once past
  :data:`RATIO_FREE_BYTES`, more than ``max_ratio`` (:data:`MAX_DECOMPRESSION_RATIO`)
  bytes out per compressed byte read. The caps are far above the UEA archive: its
  largest ``.ts`` files are well under 8 GiB, and the real MotorImagery TRAIN file
  compresses 126:1 with ``xz``, where a run of zeros compresses thousands to one;
* an ``.xz`` stream that needs more than :data:`XZ_MEMLIMIT` of decoder memory (a
  dictionary past any ``xz`` preset's: ``xz -9`` needs 65 MiB).

A file too large or too compressible for the caps, yet genuine, is decompressed by hand
(``xz -dk``, ``gunzip -k``) and read as a plain file instead.
"""

from __future__ import annotations

import hashlib
import lzma
import zlib
from pathlib import Path

from ssmbench.data.checksums import CHUNK
from ssmbench.data.errors import DataError

#: the compressions read, by file suffix
SUFFIXES = {".xz": "xz", ".gz": "gzip"}
MAGIC = {"xz": b"\xfd7zXZ\x00", "gzip": b"\x1f\x8b"}
#: the most bytes one compressed file may decompress to
MAX_DECOMPRESSED_BYTES = 8 * 2**30
#: ... and, once past RATIO_FREE_BYTES, the most bytes out per compressed byte read
MAX_DECOMPRESSION_RATIO = 1000
RATIO_FREE_BYTES = 64 * 2**20
#: the most memory the xz decoder may use (xz -9: 65 MiB)
XZ_MEMLIMIT = 256 * 2**20


def compression_of(path: Path) -> str | None:
    """``"xz"``, ``"gzip"`` or None (not a compressed name) from ``path``'s suffix."""
    return SUFFIXES.get(Path(path).suffix)


class _Stream:
    """One xz stream or gzip member, behind one interface for the two decompressors."""

    def __init__(self, compression: str):
        self.xz = compression == "xz"
        if self.xz:
            self.d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT)
        else:
            self.d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self.last = b""

    def feed(self, data: bytes) -> bytes:
        self.last = self.d.decompress(data, CHUNK)
        return self.last

    def pending(self) -> bool:
        """Whether output may still come without new input."""
        if self.d.eof:
            return False
        if self.xz:
            return not self.d.needs_input
        return bool(self.d.unconsumed_tail) or len(self.last) == CHUNK

    def drain(self) -> bytes:
        """The next piece of output from the input already given."""
        return self.feed(b"" if self.xz else self.d.unconsumed_tail)

    @property
    def eof(self) -> bool:
        return self.d.eof

    @property
    def unused_data(self) -> bytes:
        return self.d.unused_data


def decompress_to(
    src: Path,
    dest: Path,
    compression: str,
    *,
    max_bytes: int | None = None,
    max_ratio: float | None = None,
) -> dict:
    """Decompress ``src`` (``compression``: ``"xz"`` or ``"gzip"``) into ``dest``, streamed.

    Returns ``{"sha256", "bytes"}`` of the decompressed content and ``{"compressed_sha256",
    "compressed_bytes"}`` of ``src``. ``max_bytes`` and ``max_ratio`` default to
    :data:`MAX_DECOMPRESSED_BYTES` and :data:`MAX_DECOMPRESSION_RATIO` (read when called).
    Raises DataError for the cases of the module docstring; ``dest`` may then hold a
    partial output (never more than ``max_bytes``), which the caller deletes."""
    src, dest = Path(src), Path(dest)
    max_bytes = MAX_DECOMPRESSED_BYTES if max_bytes is None else max_bytes
    max_ratio = MAX_DECOMPRESSION_RATIO if max_ratio is None else max_ratio
    label = {"xz": "an xz", "gzip": "a gzip"}[compression]
    tool = {"xz": "xz -t", "gzip": "gzip -t"}[compression]
    fix = (
        f"Replace it with a good copy (check it with `{tool} {src.name}`), or put the "
        f"decompressed file beside it. Nothing was installed; the previous copy, if any, "
        f"was kept."
    )
    out_hash = hashlib.sha256()
    in_hash = hashlib.sha256()
    read = written = 0

    def write(piece: bytes) -> None:
        nonlocal written
        total = written + len(piece)
        if total > max_bytes:
            raise DataError(
                f"{src}: decompresses to more than {max_bytes} bytes, the cap on one "
                f"decompressed file (ssmbench.data.compressed.MAX_DECOMPRESSED_BYTES): a "
                f"decompression bomb, or not the expected file. Refused while "
                f"decompressing; nothing was installed, the previous copy was kept. If "
                f"the file is genuine, decompress it by hand and put the plain file "
                f"beside it."
            )
        if total > RATIO_FREE_BYTES and total > max_ratio * read:
            raise DataError(
                f"{src}: {read} compressed bytes decompress to more than {total} bytes, "
                f"over the cap of {max_ratio}:1 (ssmbench.data.compressed."
                f"MAX_DECOMPRESSION_RATIO): a decompression bomb, or not the expected "
                f"file. Refused while decompressing; nothing was installed, the previous "
                f"copy was kept. If the file is genuine, decompress it by hand and put "
                f"the plain file beside it."
            )
        if piece:
            out.write(piece)
            out_hash.update(piece)
            written = total

    try:
        with open(src, "rb") as handle, open(dest, "wb") as out:
            data = handle.read(CHUNK)
            read = len(data)
            in_hash.update(data)
            if not data.startswith(MAGIC[compression]):
                raise DataError(
                    f"{src}: not {label} file, though its name says so: it does not "
                    f"start with the {compression} magic bytes"
                    f"{' (it is empty)' if not data else ''}. {fix}"
                )
            stream: _Stream | None = _Stream(compression)
            while True:
                if stream is None:  # between streams: zero padding, or another stream
                    data = data.lstrip(b"\0")
                    if data:
                        if not data.startswith(MAGIC[compression][: len(data)]):
                            raise DataError(
                                f"{src}: bytes after the end of the {compression} data "
                                f"are neither padding nor another {compression} stream. "
                                f"{fix}"
                            )
                        stream = _Stream(compression)
                if stream is not None and data:
                    write(stream.feed(data))
                    while stream.pending():
                        write(stream.drain())
                    if stream.eof:
                        data, stream = stream.unused_data, None
                        continue
                data = handle.read(CHUNK)
                if not data:
                    break
                read += len(data)
                in_hash.update(data)
            if stream is not None:
                raise DataError(
                    f"{src}: truncated: the file ends before the end of its "
                    f"{compression} stream ({read} bytes read, {written} decompressed). "
                    f"{fix}"
                )
    except (lzma.LZMAError, zlib.error, EOFError) as e:
        what = (
            "needs more decoder memory than the cap (ssmbench.data.compressed.XZ_MEMLIMIT)"
            if "memory usage limit" in str(e).lower()
            else "is corrupt"
        )
        raise DataError(
            f"{src}: {what} ({type(e).__name__}: {e}), after {read} bytes read and "
            f"{written} decompressed. {fix}"
        ) from e
    except OSError as e:
        raise DataError(f"{src}: could not decompress it to {dest.parent} ({e}).") from e
    return {
        "sha256": out_hash.hexdigest(),
        "bytes": written,
        "compressed_sha256": in_hash.hexdigest(),
        "compressed_bytes": read,
    }
