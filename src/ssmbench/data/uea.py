"""The UEA multivariate archive: fetch the raw ``.ts`` files, prepare them.

``fetch_uea`` puts ``<raw_dir>/<Name>/<Name>_{TRAIN,TEST}.ts`` in place, with a
``provenance.json`` beside them; ``prepare_uea`` turns them into the prepared format of
``docs/contracts.md`` (``X.npy``, ``y.npy``, ``test_indices_fold_0.txt``, ``meta.json``).

Where the files come from, in this order:

1. ``archive_dir`` (params.yaml ``benchmarks.uea.archive_dir``): ``<archive_dir>/<Name>/``,
   each of the two files either plain or compressed (see below).
2. The copy aeon ships inside its wheel (``aeon/datasets/data/<Name>/``: BasicMotions and
   JapaneseVowels).
3. If ``download``: aeon's downloader, ``aeon.datasets.load_classification(name,
   extract_path=...)``, which fetches every file of the dataset's Zenodo record (tsml
   community; record ids in ``aeon.datasets.tsc_datasets.tsc_zenodo``) into
   ``<extract_path>/<Name>/``. We only keep the two original ``.ts`` files.

Checksums and compressed files in ``archive_dir``:

* Each file is checked against the sha256 listed in ``<archive_dir>/SHA256SUMS`` (paths
  ``<Name>/<Name>_TRAIN.ts``) or ``<archive_dir>/<Name>/SHA256SUMS`` (bare names), when
  listed; a mismatch refuses the fetch and keeps the previous raw copy.
* For each split the first of ``<Name>_<SPLIT>.ts``, ``<Name>_<SPLIT>.ts.xz`` and
  ``<Name>_<SPLIT>.ts.gz`` that exists is read, the two splits chosen separately. A plain
  file wins: it needs no decompression, and it is how a file refused by the caps below is
  supplied (decompressed by hand beside the compressed one). Large archive files are kept
  compressed (MotorImagery's 415 MB TRAIN file is 3 MB as ``.xz``:
  ``../shared/data/uea-xz``).
* A compressed file is decompressed streamed (:mod:`ssmbench.data.compressed`: chunk by
  chunk, hashing as it writes, never whole in memory, refused past a size cap and a
  compression-ratio cap, or when truncated or corrupt) into the raw folder's staged
  ``<Name>_<SPLIT>.ts``: the raw folder always holds the plain ``.ts``, and everything
  after the fetch reads it as it would a plain copy. Its checksum is that of the
  **decompressed** content, listed under the ``.ts`` name; the compressed file's own
  sha256 is also checked where a list names it (``<Name>/<Name>_TRAIN.ts.xz`` in
  ``SHA256SUMS``, or in ``SHA256SUMS.xz`` / ``SHA256SUMS.gz`` beside it, the form of
  ``../shared/data/uea-xz``). ``provenance.json``'s ``decompressed_from`` records, per raw
  file, the file read, its compression, its sha256 and size.

Policies (also written into each ``meta.json``):

* **Labels.** Class ids are ``0..K-1`` in sorted (Python string) order of the original
  label strings as they appear in the data rows. The header's ``@classLabel`` list is only
  used to check the data rows, and that match ignores case (``str.casefold``): some
  archive releases spell a label differently in the header and in the rows (RacketSports),
  and aeon's own reader lower-cases both. We keep the data's spelling; were one label
  spelt two ways in the rows, the two are one class, named by its most frequent spelling.
  A row label that is not in the header (case aside) is an error: it is how a truncated
  last line usually shows.
* **Lengths.** Series of unequal length (JapaneseVowels 7–29) are z-scored on their real
  values and then right-padded with zeros to the maximum length over TRAIN and TEST.
* **NaNs.** Trailing NaNs at the end of a series are padding of an unequal-length
  series and are treated like it (zeros after normalisation). Any other NaN (or an
  infinite value) makes preparation fail, naming the file and the count: we do not impute.
* **Normalisation.** Per-channel z-score with the mean and (population) standard
  deviation of all real values of the official TRAIN split only; a standard deviation of
  0 is replaced by 1.
* **Rows.** ``X`` holds the TRAIN rows then the TEST rows in file order; the TEST rows are
  ``test_indices_fold_0.txt`` and ``meta["fold_scheme"] == "official_split"``.
* **Catalog.** The rows of each file, C, L (the longest series) and the number of classes
  are compared with the catalog's entry before X is built: a difference the entry does
  not expect (``expected_differences``) is an error naming the file(s) and both numbers,
  since a file cut short at a line end reads as fewer rows and raises nothing else. A
  deliberate subset declares itself in its files' header (``@subset <what>``): its
  differences are then recorded (``meta["catalog_check"]``) with a warning
  (``meta["warnings"]``, printed by ``ssmbench prepare``).
* **Size.** X.npy may be at most ``MAX_PREPARED_RATIO`` (16) times the bytes of the two
  ``.ts`` files once it is above ``PREPARED_FREE_BYTES`` (256 MiB): every row is padded to
  the longest, so one very long line would make X hundreds of times its source. Raise or
  lift the cap with ``benchmarks.uea.max_prepared_ratio`` (null: no cap);
  ``meta["prepared_size"]`` records the sizes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from ssmbench.data.catalog import compare_with_catalog, domain_of
from ssmbench.data.checksums import SUMS_FILE, listed_sha256, sha256_file
from ssmbench.data.compressed import SUFFIXES, compression_of, decompress_to
from ssmbench.data.download import copy_file, install_staged, staged_path, staging
from ssmbench.data.errors import DataError
from ssmbench.data.provenance import (
    ORIGIN,
    PROVENANCE,
    file_stamp,
    refetch_command,
    source_change,
    utc_now,
    verified_provenance,
)
from ssmbench.io import atomic_folder, atomic_write_json

SPLITS = ("TRAIN", "TEST")
NORMALISATION = "per_channel_train_zscore"
LENGTH_POLICY_EQUAL = "equal_length: every series has the same length, no padding"
LENGTH_POLICY_PAD = "right_zero_pad_after_zscore: shorter series padded with zeros at the end"
NAN_POLICY = (
    "reject: a NaN inside a series is an error; trailing NaNs are padding of an "
    "unequal-length series (zeros after normalisation)"
)
LABEL_POLICY = (
    "class ids in sorted order of the data rows' label strings; case ignored only to "
    "match the @classLabel header"
)
ZENODO_RECORD_URL = "https://zenodo.org/records/{}"
#: the names a file of archive_dir may have, first found wins (the module docstring)
ARCHIVE_SUFFIXES = ("", *SUFFIXES)
#: the cap on X.npy's size: at most this many times the bytes of the two .ts files
#: (params.yaml ``benchmarks.uea.max_prepared_ratio``; null: no cap) ...
MAX_PREPARED_RATIO = 16.0
#: ... once X.npy is larger than this; a smaller X is never refused
PREPARED_FREE_BYTES = 256 << 20
#: the .ts header tag by which a deliberate subset of a catalogued dataset declares itself
SUBSET_TAG = "subset"
#: the file whose rows a catalog field counts (other fields: both files)
_FIELD_SPLITS = {"n_train": ("TRAIN",), "n_test": ("TEST",)}


# --------------------------------------------------------------------------- helpers
def _file_names(name: str) -> dict[str, str]:
    return {split: f"{name}_{split}.ts" for split in SPLITS}


def _expected_sums(root: Path, name: str) -> tuple[dict[str, str], str | None]:
    """Checksums of the two files from ``<root>/SHA256SUMS`` or ``<root>/<name>/SHA256SUMS``.

    Returns ({file name: sha256}, the checksum file used or None).
    """
    return listed_sha256(root, root / name, name, _file_names(name).values())


def _archive_file(src_dir: Path, fname: str) -> Path | None:
    """The file read for ``fname`` in an archive folder ``<archive_dir>/<name>``:
    ``fname``, ``fname.xz`` or ``fname.gz``, the first that exists; None if none does. A
    file that resolves (through symbolic links) outside ``archive_dir`` is refused: a link
    could bring any file of the machine into the raw folder."""
    for suffix in ARCHIVE_SUFFIXES:
        path = src_dir / (fname + suffix)
        if path.is_file():
            root = src_dir.parent.resolve()
            if not path.resolve().is_relative_to(root):
                raise DataError(
                    f"{path}: a symbolic link to a file outside archive_dir ({root}); put "
                    "the file itself in the archive folder"
                )
            return path
    return None


def _accepted_names(fname: str) -> str:
    return f"{fname} (or {', '.join(fname + s for s in ARCHIVE_SUFFIXES[1:])})"


def _compressed_sums(root: Path, name: str, src: Path) -> tuple[str | None, str | None]:
    """The sha256 listed for the compressed file ``src`` (``<root>/SHA256SUMS``, or the
    ``SHA256SUMS.xz`` / ``.gz`` list of compressed files), and the list that gives it."""
    for sums_file in (SUMS_FILE, SUMS_FILE + src.suffix):
        sums, used = listed_sha256(root, root / name, name, [src.name], sums_file)
        if src.name in sums:
            return sums[src.name], used
    return None, None


def _aeon_bundled_dir(name: str) -> Path | None:
    """aeon's bundled copy: ``<aeon package>/datasets/data/<name>/`` (BasicMotions, ...)."""
    try:
        import aeon.datasets
    except ImportError:
        return None
    folder = Path(aeon.datasets.__file__).resolve().parent / "data" / name
    if all((folder / f).is_file() for f in _file_names(name).values()):
        return folder
    return None


def _aeon_version() -> str | None:
    try:
        import aeon

        return aeon.__version__
    except ImportError:
        return None


def _download_with_aeon(name: str, workdir: Path) -> tuple[Path, str]:
    """Download ``name`` with aeon into ``workdir/<name>/``; returns (folder, record url)."""
    try:
        from aeon.datasets import load_classification
        from aeon.datasets.tsc_datasets import tsc_zenodo
    except ImportError as e:
        raise DataError(
            f"UEA dataset {name}: downloading needs aeon ({e}). Install the pinned "
            f"dependencies (pip install -e .) or set benchmarks.uea.archive_dir."
        ) from e
    if name not in tsc_zenodo:
        raise DataError(
            f"UEA dataset {name}: aeon knows no download for it "
            f"(aeon.datasets.tsc_datasets.tsc_zenodo). Check the name's spelling in "
            f"params.yaml, or put the files in benchmarks.uea.archive_dir/{name}/."
        )
    url = ZENODO_RECORD_URL.format(tsc_zenodo[name])
    folder = workdir / name
    try:
        # Downloads every file of the Zenodo record into <extract_path>/<name>/, then
        # loads it (which we do not need; our own reader reads the files afterwards).
        load_classification(
            name, extract_path=str(workdir), load_equal_length=False, load_no_missing=False
        )
    except Exception as e:  # aeon raises ValueError/URLError/OSError, wrapped
        if not all((folder / f).is_file() for f in _file_names(name).values()):
            raise DataError(
                f"UEA dataset {name}: download from {url} via aeon failed "
                f"({type(e).__name__}: {e}). Without network access, copy the archive "
                f"files to <archive_dir>/{name}/{name}_TRAIN.ts and _TEST.ts and set "
                f"benchmarks.uea.archive_dir in params.yaml."
            ) from e
    for fname in _file_names(name).values():
        if not (folder / fname).is_file():
            raise DataError(
                f"UEA dataset {name}: the download from {url} has no {fname}. "
                f"Set benchmarks.uea.archive_dir to a local copy of the archive."
            )
    return folder, url


def _copy_verified(src: Path, tmp: Path, expected: str | None) -> str:
    """Copy ``src`` to the staged path ``tmp``; check its sha256 and return it."""
    dest_dir = tmp.parent
    try:
        copy_file(src, tmp)
    except OSError as e:
        raise DataError(f"{src}: could not copy it to {dest_dir} ({e}).") from e
    digest = sha256_file(tmp)
    if expected is not None and digest != expected:
        raise DataError(
            f"{src}: sha256 {digest} does not match {expected} listed in the source's "
            f"SHA256SUMS. The file is corrupt or a different version; replace it with a "
            f"good copy (the previous copy in {dest_dir}, if any, was kept)."
        )
    return digest


def _mismatch(src: Path, what: str, got: str, listed: str, where: str, fix: str) -> DataError:
    """The error for a file whose sha256 is not the one listed for it."""
    return DataError(
        f"{src}: sha256 {got} {what} does not match {listed} listed for {where}. The file "
        f"is corrupt or a different version; {fix}"
    )


def _decompress_verified(
    src: Path,
    tmp: Path,
    root: Path,
    name: str,
    expected: str | None,
    max_bytes: int | None,
    max_ratio: float | None,
) -> tuple[str, dict]:
    """Decompress ``src`` into the staged path ``tmp``, check the decompressed content's
    sha256 (and ``src``'s own where listed); return (sha256, its provenance record)."""
    compression = compression_of(src)
    got = decompress_to(src, tmp, compression, max_bytes=max_bytes, max_ratio=max_ratio)
    listed, listed_in = _compressed_sums(root, name, src)
    keep = f"Nothing was installed; the previous copy in {tmp.parent}, if any, was kept."
    if listed is not None and got["compressed_sha256"] != listed:
        raise _mismatch(src, "of the compressed file", got["compressed_sha256"], listed,
                        f"{name}/{src.name} in {listed_in}", "replace it with a good copy, or "
                        f"fix the list. {keep}")  # fmt: skip
    if expected is not None and got["sha256"] != expected:
        raise _mismatch(src, "of the decompressed content", got["sha256"], expected,
                        f"{name}/{src.stem} in the source's SHA256SUMS",
                        f"replace it with a good copy. {keep}")  # fmt: skip
    record = {
        "file": f"{name}/{src.name}",
        "compression": compression,
        "sha256": got["compressed_sha256"],
        "bytes": got["compressed_bytes"],
        "decompressed_bytes": got["bytes"],
        "verified_against": listed_in,
    }
    return got["sha256"], record


# --------------------------------------------------------------------------- fetch
def origin_problem(
    name: str, prov: dict, archive_dir: str | os.PathLike | None
) -> tuple[str | None, dict]:
    """Why the raw copy recorded by ``prov`` no longer stands for where ``fetch_uea`` takes
    ``name`` from, or None; and the source stamps now (to record when only they changed:
    ``provenance.source_change``). With ``archive_dir`` set: the copy came from another
    folder or source, or a file of ``<archive_dir>/<name>/`` is another file (a plain
    ``.ts`` put beside the ``.ts.xz`` read before) or holds other bytes than at the fetch
    (same path). Unset: the copy came from an ``archive_dir``."""
    stamps = prov.get(ORIGIN) or {}
    source, url = prov.get("source"), prov.get("source_url")
    if archive_dir is None:
        if source == "archive_dir":
            return (
                f"benchmarks.uea.archive_dir is unset, but the raw copy came from archive_dir "
                f"{url}",
                {},
            )
        return None, stamps
    src_dir = Path(archive_dir) / name
    if source != "archive_dir" or url != str(src_dir.resolve()):
        return (
            f"benchmarks.uea.archive_dir is {archive_dir} ({src_dir.resolve()}), but the raw "
            f"copy came from {source} {url}",
            {},
        )
    decompressed = prov.get("decompressed_from") or {}
    files, fetched = {}, {}
    for fname in _file_names(name).values():
        rel = f"{name}/{fname}"
        src = _archive_file(src_dir, fname)
        if src is None:
            continue  # gone: the copy stands (source_change)
        files[rel] = src
        if compression_of(src) is None:
            fetched[rel] = (prov.get("raw_files") or {}).get(rel)
        else:  # the compressed file's own sha256
            fetched[rel] = (decompressed.get(rel) or {}).get("sha256")
    return source_change(files, fetched, stamps)


def archive_files(name: str, archive_dir: str | os.PathLike | None) -> list[Path]:
    """The files of ``<archive_dir>/<name>/`` that a fetch reads (plain or compressed), as
    far as they exist; none without ``archive_dir``."""
    if archive_dir is None:
        return []
    src_dir = Path(archive_dir) / name
    found = (_archive_file(src_dir, fname) for fname in _file_names(name).values())
    return [p for p in found if p is not None]


def locate_uea(
    name: str, archive_dir: str | os.PathLike | None = None, download: bool = True
) -> tuple[str, Path | None]:
    """Where ``fetch_uea`` takes ``name`` from, decided without touching the network:
    ``("archive_dir", folder)``, ``("aeon_bundled", folder)`` or ``("download", None)``.

    Raises DataError when the dataset cannot be had (archive_dir set but missing the files,
    or offline with no copy), so that a workflow can refuse to start instead of failing in
    a job.
    """
    names = _file_names(name)
    if archive_dir is not None:
        src_dir = Path(archive_dir) / name
        missing = [
            _accepted_names(str(src_dir / f))
            for f in names.values()
            if _archive_file(src_dir, f) is None
        ]
        if missing:
            raise DataError(
                f"UEA dataset {name}: archive_dir is set to {archive_dir} but "
                f"{' and '.join(missing)} does not exist. Put the archive's files there "
                f"(<archive_dir>/{name}/{name}_TRAIN.ts and _TEST.ts, plain or compressed "
                f"as .ts.xz or .ts.gz), or set benchmarks.uea.archive_dir: null to use "
                f"aeon's copy or download."
            )
        return "archive_dir", src_dir
    bundled = _aeon_bundled_dir(name)
    if bundled is not None:
        return "aeon_bundled", bundled
    if download:
        return "download", None
    raise DataError(
        f"UEA dataset {name} is not available offline: archive_dir is not set, "
        f"aeon does not ship it, and download is off. Set "
        f"benchmarks.uea.archive_dir to a folder holding {name}/{names['TRAIN']} "
        f"and {names['TEST']}, or set benchmarks.uea.download: true."
    )


def fetch_uea(
    name: str,
    raw_dir: str | os.PathLike,
    archive_dir: str | os.PathLike | None = None,
    download: bool = True,
    force: bool = False,
    *,
    max_decompressed_bytes: int | None = None,
    max_decompression_ratio: float | None = None,
) -> dict:
    """Put ``<raw_dir>/<name>/<name>_{TRAIN,TEST}.ts`` in place; return their provenance.

    The provenance ``{source, source_url, raw_files {"<name>/<file>": sha256}, ...}`` is
    also written to ``<raw_dir>/<name>/provenance.json``, with ``decompressed_from`` when a
    file of ``archive_dir`` was compressed, ``origin`` (each file of ``archive_dir``'s
    stamp) and ``fetched_because`` (why a recorded copy was replaced). Nothing is copied
    when the files are already there with the recorded checksums, unless ``force``,
    ``archive_dir``'s SHA256SUMS lists other checksums, or the copy no longer stands for
    its source (:func:`origin_problem`: another archive_dir, a file changed in place).
    Files are copied (or decompressed) to temporary names and
    renamed into place only once both have been read and checked, so a failed fetch keeps
    the previous good copy. ``max_decompressed_bytes`` and ``max_decompression_ratio``
    override the caps of :mod:`ssmbench.data.compressed` (for tests).
    """
    raw_dir = Path(raw_dir)
    dest = raw_dir / name
    names = _file_names(name)

    archive = Path(archive_dir) if archive_dir is not None else None
    archive_sums: dict[str, str] = {}
    if archive is not None:
        archive_sums, _ = _expected_sums(archive, name)

    because = None
    if not force:
        prov = verified_provenance(dest, name, _file_names(name).values())
        if prov is not None and all(
            prov["raw_files"].get(f"{name}/{f}") == s for f, s in archive_sums.items()
        ):
            because, stamps = origin_problem(name, prov, archive)
            if because is None:
                if stamps != (prov.get(ORIGIN) or {}):
                    # touched, not changed: record the stamps, so the next check reads nothing
                    prov = {**prov, ORIGIN: stamps}
                    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
                return prov

    workdir: Path | None = None
    try:
        source, src_dir = locate_uea(name, archive, download)
        if source == "archive_dir":
            root, source_url = archive, str(src_dir.resolve())
        elif source == "aeon_bundled":
            root = src_dir.parent
            source_url = f"aeon=={_aeon_version()}:aeon/datasets/data/{name}"
        else:
            raw_dir.mkdir(parents=True, exist_ok=True)
            workdir = Path(tempfile.mkdtemp(prefix=f".{name}.download-", dir=raw_dir))
            src_dir, source_url = _download_with_aeon(name, workdir)
            root = workdir

        expected, sums_used = _expected_sums(root, name)
        raw_files: dict[str, str] = {}
        decompressed: dict[str, dict] = {}
        stamps = {}
        with staging(dest) as staged:
            for fname in names.values():
                src = src_dir / fname
                if source == "archive_dir":
                    src = _archive_file(src_dir, fname) or src
                    # taken before the copy: a change while copying shows as another stamp
                    stamps[f"{name}/{fname}"] = file_stamp(src)
                staged[fname] = staged_path(dest, fname)
                if compression_of(src) is None:
                    digest = _copy_verified(src, staged[fname], expected.get(fname))
                else:
                    digest, decompressed[f"{name}/{fname}"] = _decompress_verified(
                        src,
                        staged[fname],
                        root,
                        name,
                        expected.get(fname),
                        max_decompressed_bytes,
                        max_decompression_ratio,
                    )
                raw_files[f"{name}/{fname}"] = digest
            install_staged(staged, dest)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    prov = {
        "dataset": name,
        "source": source,
        "source_url": source_url,
        "raw_files": raw_files,
        "verified_against": sums_used,
        "aeon_version": _aeon_version(),
        "fetched": utc_now(),
    }
    if decompressed:
        prov["decompressed_from"] = decompressed
    if stamps:
        prov[ORIGIN] = stamps
    if because:
        prov["fetched_because"] = because
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov


# --------------------------------------------------------------------------- .ts reader
class TsFile:
    """A parsed ``.ts`` file: per-case float64 arrays ``(C, L_i)`` (NaN = padding)."""

    def __init__(self, path, series, labels, header, class_values, n_padding_nan):
        self.path = path
        self.series: list[np.ndarray] = series
        self.labels: list[str] = labels
        self.header: dict[str, str] = header
        self.class_values: list[str] = class_values
        self.n_padding_nan: int = n_padding_nan

    @property
    def n_channels(self) -> int:
        return self.series[0].shape[0]


def read_ts(path: str | os.PathLike) -> TsFile:
    """Read a classification ``.ts`` file (the UEA/aeon format) with exact label strings.

    Our own reader rather than ``aeon.datasets.load_from_ts_file``: aeon lower-cases the
    labels and reports errors without the line; this one keeps the labels' case and
    raises :class:`DataError` naming the file and line for any malformed or truncated
    content. Trailing NaNs of a series are kept as NaN (padding); any other NaN or an
    infinite value raises.
    """
    path = Path(path)
    header: dict[str, str] = {}
    class_values: list[str] | None = None
    series: list[np.ndarray] = []
    labels: list[str] = []
    n_channels: int | None = None
    interior_nan = 0
    interior_lines: list[int] = []
    n_padding = 0
    in_data = False
    hint = "The file looks truncated or malformed; fetch it again."

    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise DataError(f"{path}: cannot open it ({e}). Run the fetch step first.") from e
    with f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if not in_data:
                if not line.startswith("@"):
                    raise DataError(  # the line is not quoted: never a file's content
                        f"{path}: line {lineno}: expected a header tag (@...) or @data, "
                        f"found a line of {len(line)} characters that is neither. {hint}"
                    )
                tokens = line.split()
                key = tokens[0][1:].lower()
                if key == "data":
                    in_data = True
                    if class_values is None:
                        raise DataError(
                            f"{path}: no @classLabel tag before @data, so it is not a "
                            f"classification file. Check that this is the UEA dataset."
                        )
                    if header.get("timestamps", "false").lower() == "true":
                        raise DataError(
                            f"{path}: @timeStamps true is not supported (no UEA dataset "
                            f"uses it). Use a file without timestamps."
                        )
                    continue
                header[key] = " ".join(tokens[1:])
                if key == "classlabel":
                    flag = tokens[1].lower() if len(tokens) > 1 else ""
                    if flag != "true" or len(tokens) < 3:
                        raise DataError(
                            f"{path}: line {lineno}: '@classLabel {header[key]}' — expected "
                            f"'@classLabel true <label> <label> ...' for a classification "
                            f"dataset. {hint}"
                        )
                    class_values = tokens[2:]
                continue

            parts = line.split(":")
            label = parts[-1].strip()
            chans = parts[:-1]
            if n_channels is None:
                n_channels = len(chans)
                dims = header.get("dimensions")
                if dims is not None and dims.isdigit() and int(dims) != n_channels:
                    raise DataError(
                        f"{path}: line {lineno}: {n_channels} channels but the header says "
                        f"@dimensions {dims}. {hint}"
                    )
                if n_channels == 0:
                    raise DataError(f"{path}: line {lineno}: no ':'-separated channels. {hint}")
                univariate = header.get("univariate", "").lower()
                if univariate == "true" and n_channels != 1:
                    raise DataError(
                        f"{path}: line {lineno}: {n_channels} channels but the header says "
                        f"@univariate true. {hint}"
                    )
            if len(chans) != n_channels:
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): {len(chans)} channels, "
                    f"expected {n_channels}. {hint}"
                )
            allowed = {c.casefold() for c in class_values}
            if label.casefold() not in allowed:
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): label {label!r} is not "
                    f"one of the @classLabel values {class_values}. {hint}"
                )
            try:
                arrays = [
                    np.array(ch.replace("?", "NaN").split(","), dtype=np.float64) for ch in chans
                ]
            except ValueError as e:
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): a value is not a "
                    f"number ({e}). {hint}"
                ) from None
            length = len(arrays[0])
            if any(len(a) != length for a in arrays):
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): channels have "
                    f"different lengths {sorted({len(a) for a in arrays})}. {hint}"
                )
            if header.get("equallength", "").lower() == "true":
                sl = header.get("serieslength")
                if sl is not None and sl.isdigit() and int(sl) != length:
                    raise DataError(
                        f"{path}: line {lineno} (case {len(series) + 1}): {length} values "
                        f"per channel but the header says @seriesLength {sl}. {hint}"
                    )
            case = np.stack(arrays)
            if np.isinf(case).any():
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): infinite values. "
                    f"Replace the file with a clean copy."
                )
            nan = np.isnan(case)
            if nan.any():
                # Per channel: NaNs after the last real value are padding.
                real = ~nan
                last = np.where(real.any(axis=1), length - np.argmax(real[:, ::-1], axis=1), 0)
                interior = sum(int(nan[c, : last[c]].sum()) for c in range(n_channels))
                if interior:
                    interior_nan += interior
                    interior_lines.append(lineno)
                case_len = int(last.max())
                n_padding += int(nan.sum()) - interior
                if case_len == 0:
                    raise DataError(
                        f"{path}: line {lineno} (case {len(series) + 1}): the series has "
                        f"only missing values. Remove the case or use a clean copy."
                    )
                case = case[:, :case_len]
            series.append(case)
            labels.append(label)

    if not in_data:
        raise DataError(f"{path}: no @data line. {hint}")
    if not series:
        raise DataError(f"{path}: no data rows after @data. {hint}")
    if interior_nan:
        raise DataError(
            f"{path}: {interior_nan} missing value(s) (NaN or '?') inside series, first on "
            f"line(s) {interior_lines[:5]}. Only trailing NaNs (padding) are accepted; we "
            f"do not impute. Use a copy without missing values."
        )
    return TsFile(path, series, labels, header, class_values, n_padding)


# --------------------------------------------------------------------------- prepare
def _class_table(labels: list[str]) -> list[str]:
    """Class names, sorted: one per case-folded label, spelt as most often in the data."""
    spellings: dict[str, Counter] = {}
    for label in labels:
        spellings.setdefault(label.casefold(), Counter())[label] += 1
    names = [min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c in spellings.values()]
    return sorted(names)


def _check_prepared_size(
    paths: dict[str, Path], parsed: dict[str, TsFile], shape: tuple, max_ratio: float | None
) -> dict:
    """X.npy's size against the two .ts files': refused past ``max_ratio`` times their bytes
    once above ``PREPARED_FREE_BYTES`` (every row is padded to the longest, so one long
    line can make X hundreds of times its source). Returns the sizes for meta.json."""
    raw = sum(p.stat().st_size for p in paths.values())
    prepared = int(np.prod(shape, dtype=np.int64)) * np.dtype(np.float32).itemsize
    sizes = {"raw_bytes": raw, "x_bytes": prepared, "ratio": round(prepared / max(raw, 1), 3),
             "max_ratio": max_ratio, "free_bytes": PREPARED_FREE_BYTES}  # fmt: skip
    if max_ratio is None or prepared <= PREPARED_FREE_BYTES or prepared <= max_ratio * raw:
        return sizes
    split, case = max(
        ((sp, i) for sp in SPLITS for i in range(len(parsed[sp].series))),
        key=lambda k: parsed[k[0]].series[k[1]].shape[1],
    )
    raise DataError(
        f"{paths[split]}: case {case + 1} has {shape[2]:,} steps, so X.npy would be (N, C, L) "
        f"= {tuple(shape)} float32, {prepared / 1e6:,.1f} MB, {prepared / raw:,.0f} times the "
        f"{raw / 1e6:,.1f} MB of the two .ts files; the cap is {max_ratio:g} times once above "
        f"{PREPARED_FREE_BYTES / 2**20:,.0f} MiB (every row is padded to the longest). A line "
        f"that long is usually a damaged file: fetch it again. If the file is right, raise "
        f"the cap, benchmarks.uea.max_prepared_ratio in params.yaml (null: no cap)."
    )


def _check_catalog(
    name: str, paths: dict[str, Path], parsed: dict[str, TsFile], read: dict
) -> tuple[dict, list[str]]:
    """What was read against the catalog's entry (``catalog.compare_with_catalog``):
    (``meta["catalog_check"]``, warnings). A difference the entry does not expect is a
    DataError naming the file(s) and both numbers, unless the files that hold the field
    declare themselves a subset (``@subset <what>`` in the header): then it is recorded,
    with a warning that results on it are not those of the catalog's dataset."""
    check = compare_with_catalog("uea", name, read)
    subset = {}
    for split in SPLITS:
        if SUBSET_TAG in parsed[split].header:
            text = parsed[split].header[SUBSET_TAG].strip()
            if not text:
                raise DataError(
                    f"{paths[split]}: '@{SUBSET_TAG}' without saying what subset the file "
                    f"holds. Write e.g. '@{SUBSET_TAG} the first 20 rows, 500 steps'."
                )
            subset[split] = text
    refused, excused = [], []
    for diff in check["differences"]:
        if diff["reason"] is not None:
            continue
        splits = _FIELD_SPLITS.get(diff["field"], SPLITS)
        declared = [subset[sp] for sp in splits if sp in subset]
        if declared:
            diff["reason"] = f"declared subset: {'; '.join(dict.fromkeys(declared))}"
            excused.append(diff)
        else:
            refused.append((diff, splits))
    if refused:
        files = [paths[sp] for sp in dict.fromkeys(sp for _, splits in refused for sp in splits)]
        listed = "; ".join(
            f"{d['field']}: catalog {d['catalog']}, read {d['data']} (from "
            f"{' and '.join(paths[sp].name for sp in splits)})"
            for d, splits in refused
        )
        raise DataError(
            f"{' and '.join(map(str, files))}: {name} as read differs from its catalog entry "
            f"{check['entry']} (ssmbench.data.catalog): {listed}. A .ts file cut short at a "
            f"line end reads as fewer rows and raises nothing else: fetch the dataset again. "
            f"If the archive's files really differ, record the value and the reason in the "
            f"entry's expected_differences (src/ssmbench/data/catalog.py); a deliberate "
            f"subset of the rows or steps declares itself with an '@{SUBSET_TAG} <what>' line "
            f"in the header of its .ts files."
        )
    if check["entry"] is None:
        result = "not in the catalog"
    elif excused:
        result = "declared subset"
    else:
        result = "differs as expected" if check["differences"] else "agrees"
    warnings = []
    if excused:
        where = ", ".join(f"{paths[sp].name}: {text!r}" for sp, text in subset.items())
        counts = ", ".join(f"{d['field']} {d['data']} of the catalog's {d['catalog']}"
                           for d in excused)  # fmt: skip
        warnings.append(
            f"{name} is a declared subset of the catalog's dataset {check['entry']} "
            f"(@{SUBSET_TAG} in {where}): {counts}. Results on it are not comparable with "
            f"the full dataset's."
        )
    return {**check, "result": result, "subset": subset or None}, warnings


def prepare_uea(
    name: str,
    raw_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    max_prepared_ratio: float | None = MAX_PREPARED_RATIO,
) -> Path:
    """Prepare ``<raw_dir>/<name>/`` into ``<out_dir>/<name>/``; return that folder.

    ``out_dir`` is the benchmark's prepared folder (e.g. ``data/prepared/uea``). The
    dataset folder is written under a temporary name beside it and renamed into place.
    Before X is built, what was read is checked against the catalog (``_check_catalog``)
    and X's size against the raw files' (``_check_prepared_size``, ``max_prepared_ratio``
    times; None: no cap).
    """
    src = Path(raw_dir) / name
    out_dir = Path(out_dir)
    names = _file_names(name)
    paths = {split: src / fname for split, fname in names.items()}
    for p in paths.values():
        if not p.is_file():
            raise DataError(f"{p}: missing. Run the fetch step (fetch_uea) for {name} first.")

    raw_files = {f"{name}/{p.name}": sha256_file(p) for p in paths.values()}
    prov_path = src / PROVENANCE
    if prov_path.is_file():
        prov = json.loads(prov_path.read_text(encoding="utf-8"))
        for rel, digest in raw_files.items():
            if prov.get("raw_files", {}).get(rel) != digest:
                raise DataError(
                    f"{src / Path(rel).name}: sha256 {digest} differs from the one recorded "
                    f"in {prov_path} at fetch time. The raw file changed; fetch it again "
                    f"(`{refetch_command(raw_dir, name)}`)."
                )
        source, source_url = prov.get("source"), prov.get("source_url")
    else:  # files placed by hand: treat the raw folder itself as the archive
        source, source_url = "archive_dir", str(src.resolve())

    parsed = {split: read_ts(p) for split, p in paths.items()}
    tr, te = parsed["TRAIN"], parsed["TEST"]
    if tr.n_channels != te.n_channels:
        raise DataError(
            f"{paths['TEST']}: {te.n_channels} channels but {paths['TRAIN']} has "
            f"{tr.n_channels}. The two files are from different datasets or versions."
        )
    series = tr.series + te.series
    labels = tr.labels + te.labels
    n_train, n_test = len(tr.series), len(te.series)
    N, C = n_train + n_test, tr.n_channels
    lengths = np.array([s.shape[1] for s in series])
    L, min_len = int(lengths.max()), int(lengths.min())

    classes = _class_table(labels)
    index = {c.casefold(): i for i, c in enumerate(classes)}
    y = np.array([index[label.casefold()] for label in labels], dtype=np.int64)
    read = {"n_train": n_train, "n_test": n_test, "C": C, "L": L, "classes": len(classes)}
    catalog_check, warnings = _check_catalog(name, paths, parsed, read)
    prepared_size = _check_prepared_size(paths, parsed, (N, C, L), max_prepared_ratio)

    # Per-channel statistics of the real (non-padding) TRAIN values, in float64.
    total = np.zeros(C)
    count = np.zeros(C)
    for s in tr.series:
        total += np.nansum(s, axis=1)
        count += np.sum(~np.isnan(s), axis=1)
    mean = np.divide(total, count, out=np.zeros(C), where=count > 0)
    sq = np.zeros(C)
    for s in tr.series:
        sq += np.nansum((s - mean[:, None]) ** 2, axis=1)
    std = np.sqrt(np.divide(sq, count, out=np.zeros(C), where=count > 0))
    std = np.where((std > 0) & np.isfinite(std), std, 1.0)

    X = np.zeros((N, C, L), dtype=np.float32)
    for i, s in enumerate(series):
        z = (s - mean[:, None]) / std[:, None]
        X[i, :, : s.shape[1]] = np.nan_to_num(z, nan=0.0)

    from ssmbench import __version__

    meta = {
        "name": name,
        "benchmark": "uea",
        "domain": domain_of("uea", name),
        "task": "classification",
        "N": N,
        "C": C,
        "L": L,
        "n_classes": len(classes),
        "classes": classes,
        "n_train": n_train,
        "n_test": n_test,
        "fold_scheme": "official_split",
        "n_folds": 1,
        "source": source,
        "source_url": source_url,
        "raw_files": raw_files,
        "length_policy": LENGTH_POLICY_EQUAL if min_len == L else LENGTH_POLICY_PAD,
        "min_length": min_len,
        "max_length": L,
        "nan_policy": NAN_POLICY,
        "n_padding_nan": tr.n_padding_nan + te.n_padding_nan,
        "label_policy": LABEL_POLICY,
        "header_class_values": tr.class_values,
        "normalisation": {
            "kind": NORMALISATION,
            "mean": [float(v) for v in mean],
            "std": [float(v) for v in std],
        },
        "catalog_check": catalog_check,
        "prepared_size": prepared_size,
        "warnings": warnings,
        "prepared_with": __version__,
        "created": utc_now(),
    }

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / name
    with atomic_folder(target) as tmp:
        np.save(tmp / "X.npy", X, allow_pickle=False)
        np.save(tmp / "y.npy", y, allow_pickle=False)
        (tmp / "test_indices_fold_0.txt").write_text(
            "".join(f"{i}\n" for i in range(n_train, N)), encoding="utf-8"
        )
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return target
