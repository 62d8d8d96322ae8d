"""A real slice of the UEA archive's MotorImagery, written by the tests themselves.

The real compressed archive's ``MotorImagery/MotorImagery_{TRAIN,TEST}.ts.xz`` (415 MB and
122 MB of ``.ts`` text; `UEA_XZ`) is read from its beginning only: the header lines and
the first rows, each channel cut to its first values, ``@seriesLength`` set to match, and
an ``@subset`` line saying so (a subset of the catalog's MotorImagery that does not
declare itself is refused when prepared: ``ssmbench.data.uea.prepare``).
:func:`motor_imagery_slice` writes them into an archive folder (plain, ``.ts.xz`` or
``.ts.gz``) with a ``SHA256SUMS`` of the decompressed content, the form
``ssmbench.data.uea.fetch.fetch_uea`` reads as ``archive_dir``.

The folder is the environment variable ``SSMBENCH_UEA_XZ``'s, else ``shared/data/uea-xz``
beside the repository; without it :func:`require_uea_xz` skips the test.

Import it as the tests import ``hub_server`` (pytest puts ``tests/`` on ``sys.path``):
``from uea_slice import motor_imagery_slice``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import lzma
import os
from pathlib import Path

NAME = "MotorImagery"
UEA_XZ = Path(
    os.environ.get("SSMBENCH_UEA_XZ")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "uea-xz"
)
#: the header line by which the slice declares itself a subset of the catalog's
#: MotorImagery (its rows and length differ from the catalog entry's on purpose)
SUBSET_LINE = (
    b"@subset the first %d %s rows, each channel cut to its first %d values (tests/uea_slice.py)\n"
)
#: file suffix per ``compression`` argument
SUFFIX = {None: "", "none": "", "xz": ".xz", "gz": ".gz", "gzip": ".gz"}


def require_uea_xz() -> Path:
    """The folder of the real compressed MotorImagery files; skips the test without it."""
    import pytest

    if not all((UEA_XZ / NAME / f"{NAME}_{s}.ts.xz").is_file() for s in ("TRAIN", "TEST")):
        pytest.skip(
            f"no {UEA_XZ}/{NAME}/{NAME}_{{TRAIN,TEST}}.ts.xz (the real compressed UEA "
            f"files; set SSMBENCH_UEA_XZ to a folder holding them)"
        )
    return UEA_XZ


@functools.lru_cache(maxsize=8)
def slice_ts(split: str, n_rows: int, length: int) -> bytes:
    """``MotorImagery_<split>.ts`` cut to its header and first ``n_rows`` rows, each channel
    to its first ``length`` values, as bytes (the header's comments are not UTF-8; kept as
    they are). Decompresses only the beginning of the stream."""
    src = UEA_XZ / NAME / f"{NAME}_{split}.ts.xz"
    out: list[bytes] = []
    rows = 0
    in_data = False
    with lzma.open(src, "rb") as f:
        for raw in f:  # one line at a time: a 1.5 MB row, never the whole file
            line = raw.rstrip(b"\r\n")
            if not in_data:
                if line.lower().startswith(b"@serieslength"):
                    line = b"@seriesLength %d" % length
                in_data = line.strip().lower() == b"@data"
                if in_data:  # the slice says what it is (ssmbench.data.uea.prepare: SUBSET_TAG)
                    out.append(SUBSET_LINE % (n_rows, split.encode(), length))
                out.append(line + b"\n")
                continue
            if not line.strip():
                continue
            *channels, label = line.split(b":")
            cut = [b",".join(c.split(b",")[:length]) for c in channels]
            if any(c.count(b",") + 1 != length for c in cut):
                raise ValueError(f"{src}: a row has fewer than {length} values per channel")
            out.append(b":".join([*cut, label]) + b"\n")
            rows += 1
            if rows == n_rows:
                break
    if rows < n_rows:
        raise ValueError(f"{src}: only {rows} rows, {n_rows} asked for")
    return b"".join(out)


def compress(data: bytes, compression: str | None) -> bytes:
    """``data`` as the file content for ``compression`` (None: plain). Fast presets: the
    format is the same as the archive's."""
    if SUFFIX[compression] == ".xz":
        return lzma.compress(data, preset=1)
    if SUFFIX[compression] == ".gz":
        return gzip.compress(data, compresslevel=6, mtime=0)
    return data


def motor_imagery_slice(
    dest_dir: str | os.PathLike,
    n_train: int = 20,
    n_test: int = 10,
    length: int = 500,
    compression: str | None = "xz",
) -> Path:
    """Write ``<dest_dir>/MotorImagery/MotorImagery_{TRAIN,TEST}.ts[.xz|.gz]`` (a slice of the
    real files: the first ``n_train`` / ``n_test`` rows, ``length`` steps; ``compression``
    ``"xz"``, ``"gz"`` or None for plain ``.ts``) and ``<dest_dir>/SHA256SUMS`` with the
    sha256 of the decompressed ``.ts`` content; return ``dest_dir``. The first 20 TRAIN
    and 10 TEST rows hold both classes (finger, tongue)."""
    require_uea_xz()
    dest_dir = Path(dest_dir)
    folder = dest_dir / NAME
    folder.mkdir(parents=True, exist_ok=True)
    sums = []
    for split, n in (("TRAIN", n_train), ("TEST", n_test)):
        data = slice_ts(split, n, length)
        fname = f"{NAME}_{split}.ts"
        (folder / (fname + SUFFIX[compression])).write_bytes(compress(data, compression))
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {NAME}/{fname}\n")
    (dest_dir / "SHA256SUMS").write_text("".join(sums), encoding="utf-8")
    return dest_dir
