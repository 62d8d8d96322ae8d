"""The UEA multivariate archive: where its raw ``.ts`` files come from, and fetching them.

``fetch_uea`` puts ``<raw_dir>/<Name>/<Name>_{TRAIN,TEST}.ts`` in place, with a
``provenance.json`` beside them; ``ssmbench.data.uea.prepare.prepare_uea`` turns them into
the prepared format of ``docs/contracts.md`` (the ``.ts`` reader:
``ssmbench.data.uea.ts_reader``).

Where the files come from, in this order:

1. ``archive_dir`` (params.yaml ``benchmarks.uea.archive_dir``, or one dataset's
   ``dataset_overrides.<Name>.archive_dir``): ``<archive_dir>/<Name>/``, each of the two
   files either plain or compressed (see below). ``archive_dir`` is one folder or a list of
   folders searched in order: the first that holds ``<Name>/`` is read
   (:func:`archive_root`), and ``provenance.json`` records it (``archive_dir``). The
   suites that read the user's own copy of the archive say ``${paths.uea_archive}``:
   params.yaml's ``paths.uea_archive``, or the environment variable
   ``SSMBENCH_UEA_ARCHIVE`` (``ssmbench.params_file.INPUT_PATHS``); left unset, a fetch
   names that setting (:func:`archive_dirs`).
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
  compressed (MotorImagery's 415 MB TRAIN file is 3 MB as ``.xz``).
* A compressed file is decompressed streamed (:mod:`ssmbench.data.compressed`: chunk by
  chunk, hashing as it writes, never whole in memory, refused past a size cap and a
  compression-ratio cap, or when truncated or corrupt) into the raw folder's staged
  ``<Name>_<SPLIT>.ts``: the raw folder always holds the plain ``.ts``, and everything
  after the fetch reads it as it would a plain copy. Its checksum is that of the
  **decompressed** content, listed under the ``.ts`` name; the compressed file's own
  sha256 is also checked where a list names it (``<Name>/<Name>_TRAIN.ts.xz`` in
  ``SHA256SUMS``, or in ``SHA256SUMS.xz`` / ``SHA256SUMS.gz`` beside it, the form of a
  compressed copy of the archive). ``provenance.json``'s ``decompressed_from`` records, per raw
  file, the file read, its compression, its sha256 and size.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from ssmbench.data.checksums import SUMS_FILE, listed_sha256, sha256_file
from ssmbench.data.compressed import SUFFIXES, compression_of, decompress_to
from ssmbench.data.download import copy_file, install_staged, staged_path, staging
from ssmbench.data.errors import DataError
from ssmbench.data.provenance import (
    ORIGIN,
    PROVENANCE,
    file_stamp,
    source_change,
    utc_now,
    verified_provenance,
)
from ssmbench.io import atomic_write_json

#: the two files of a dataset, ``<Name>_TRAIN.ts`` and ``<Name>_TEST.ts``
SPLITS = ("TRAIN", "TEST")
ZENODO_RECORD_URL = "https://zenodo.org/records/{}"
#: the names a file of archive_dir may have, first found wins (the module docstring)
ARCHIVE_SUFFIXES = ("", *SUFFIXES)
#: ``archive_dir``: unset, one folder, or folders searched in order (:func:`archive_root`)
ArchiveDir = str | os.PathLike | list[str] | None
#: a folder of ``archive_dir`` that names a params.yaml path not set (``${paths.uea_archive}``
#: with paths.uea_archive unset: reading params.yaml puts a set path in its place)
UNSET_PATH = re.compile(r"\$\{paths\.([A-Za-z_][A-Za-z0-9_]*)\}")


# --------------------------------------------------------------------------- helpers
# --------------------------------------------------------------------------- helpers
def file_names(name: str) -> dict[str, str]:
    return {split: f"{name}_{split}.ts" for split in SPLITS}


def archive_dirs(archive_dir: ArchiveDir) -> list[Path]:
    """The folders of ``archive_dir`` in search order: none (null), one (a string), or
    the list's. Anything else is a DataError saying what the setting takes (params.yaml's
    schema refuses it first; this holds for a caller of the functions here too)."""
    if archive_dir is None:
        return []
    if isinstance(archive_dir, str | os.PathLike):
        return [Path(_unset_reference_refused(archive_dir))]
    if (
        isinstance(archive_dir, list | tuple)
        and archive_dir
        and all(isinstance(d, str | os.PathLike) for d in archive_dir)
    ):
        return [Path(_unset_reference_refused(d)) for d in archive_dir]
    raise DataError(
        f"archive_dir is {archive_dir!r}: give a folder (a string), or a non-empty list of "
        "folders (strings) searched in order, or null"
    )


def _unset_reference_refused(folder: str | os.PathLike) -> str | os.PathLike:
    """``folder``, unless it is a ``${paths.KEY}`` that reading params.yaml left in place
    because paths.KEY is not set (``ssmbench.params_file``): then a DataError naming the
    setting and its environment variable."""
    match = UNSET_PATH.fullmatch(str(folder))
    if match is None:
        return folder
    key = match[1]
    raise DataError(
        f"archive_dir is {folder}, and paths.{key} is not set: set it to the folder of your "
        f"copy of the UEA archive (<Name>/<Name>_TRAIN.ts and _TEST.ts, plain or as .ts.xz "
        f"or .ts.gz) in params.yaml (paths: {key}: /path/to/uea) or in the environment "
        f"(SSMBENCH_{key.upper()}=/path/to/uea, which wins over params.yaml)"
    )


def archive_root(name: str, archive_dir: ArchiveDir) -> Path | None:
    """The folder of ``archive_dir`` that ``name`` is read from: the first that holds
    ``<name>/``; a single folder is that folder whether it holds it or not (the fetch then
    names the files it lacks). None: unset, or no folder of the list holds ``<name>/``.

    This folder, not the whole list, is where the data come from: the content key of
    ``source.py`` and the ``archive_dir`` of ``provenance.json``, so a folder added to the
    list that does not hold ``<name>/`` changes nothing of ``name``'s."""
    dirs = archive_dirs(archive_dir)
    if len(dirs) == 1:
        return dirs[0]
    return next((root for root in dirs if (root / name).is_dir()), None)


def _expected_sums(root: Path, name: str) -> tuple[dict[str, str], str | None]:
    """Checksums of the two files from ``<root>/SHA256SUMS`` or ``<root>/<name>/SHA256SUMS``.

    Returns ({file name: sha256}, the checksum file used or None).
    """
    return listed_sha256(root, root / name, name, file_names(name).values())


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
    if all((folder / f).is_file() for f in file_names(name).values()):
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
        if not all((folder / f).is_file() for f in file_names(name).values()):
            raise DataError(
                f"UEA dataset {name}: download from {url} via aeon failed "
                f"({type(e).__name__}: {e}). Without network access, copy the archive "
                f"files to <archive_dir>/{name}/{name}_TRAIN.ts and _TEST.ts and set "
                f"benchmarks.uea.archive_dir in params.yaml."
            ) from e
    for fname in file_names(name).values():
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
def origin_problem(name: str, prov: dict, archive_dir: ArchiveDir) -> tuple[str | None, dict]:
    """Why the raw copy recorded by ``prov`` no longer stands for where ``fetch_uea`` takes
    ``name`` from, or None; and the source stamps now (to record when only they changed:
    ``provenance.source_change``). With ``archive_dir`` set: the copy came from another
    folder or source than :func:`archive_root` names (a list whose folders no longer hold
    ``<name>/`` keeps a copy made from one of them), or a file of the folder is another
    file (a plain ``.ts`` put beside the ``.ts.xz`` read before) or holds other bytes than
    at the fetch (same path). Unset: the copy came from an ``archive_dir``."""
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
    root = archive_root(name, archive_dir)
    if root is None:
        # no folder of the list holds it now: the copy stands if it came from one of them
        # (its source is gone, as a single folder's files may be: source_change)
        listed = {str((d / name).resolve()) for d in archive_dirs(archive_dir)}
        if source == "archive_dir" and url in listed:
            return None, stamps
        return (
            f"benchmarks.uea.archive_dir is {_shown(archive_dir)}, and no folder of it holds "
            f"{name}/, but the raw copy came from {source} {url}",
            {},
        )
    src_dir = root / name
    if source != "archive_dir" or url != str(src_dir.resolve()):
        return (
            f"benchmarks.uea.archive_dir is {_shown(archive_dir)} ({src_dir.resolve()}), but "
            f"the raw copy came from {source} {url}",
            {},
        )
    decompressed = prov.get("decompressed_from") or {}
    files, fetched = {}, {}
    for fname in file_names(name).values():
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


def archive_files(name: str, archive_dir: ArchiveDir) -> list[Path]:
    """The files of ``<archive_dir>/<name>/`` that a fetch reads (plain or compressed), as
    far as they exist; none without ``archive_dir``."""
    root = archive_root(name, archive_dir)
    if root is None:
        return []
    src_dir = root / name
    found = (_archive_file(src_dir, fname) for fname in file_names(name).values())
    return [p for p in found if p is not None]


def locate_uea(
    name: str, archive_dir: ArchiveDir = None, download: bool = True
) -> tuple[str, Path | None]:
    """Where ``fetch_uea`` takes ``name`` from, decided without touching the network:
    ``("archive_dir", folder)``, ``("aeon_bundled", folder)`` or ``("download", None)``.

    Raises DataError when the dataset cannot be had (archive_dir set but missing the files,
    or offline with no copy), so that a workflow can refuse to start instead of failing in
    a job.
    """
    names = file_names(name)
    dirs = archive_dirs(archive_dir)
    if dirs:
        absent = [d for d in dirs if not d.is_dir()]
        if absent:
            raise DataError(
                f"UEA dataset {name}: archive_dir {_shown(archive_dir)} names "
                f"{' and '.join(str(d) for d in absent)}, which is not a folder (relative "
                f"paths are taken from {Path.cwd()}). Fix the path, or take it out of "
                f"archive_dir."
            )
        root = archive_root(name, archive_dir)
        if root is None:
            raise DataError(
                f"UEA dataset {name}: no folder of archive_dir {_shown(archive_dir)} holds "
                f"{name}/. Put its files in one of them (<folder>/{name}/{names['TRAIN']} and "
                f"{names['TEST']}, plain or compressed as .ts.xz or .ts.gz), add the folder "
                f"that holds {name}/ to the list, or give this dataset its own: "
                f"benchmarks.<benchmark>.dataset_overrides.{name}.archive_dir."
            )
        src_dir = root / name
        missing = [
            _accepted_names(str(src_dir / f))
            for f in names.values()
            if _archive_file(src_dir, f) is None
        ]
        if missing:
            raise DataError(
                f"UEA dataset {name}: archive_dir is set to {_shown(archive_dir)} but "
                f"{' and '.join(missing)} does not exist. Put the archive's files there "
                f"(<archive_dir>/{name}/{name}_TRAIN.ts and _TEST.ts, plain or compressed "
                f"as .ts.xz or .ts.gz), add the folder that holds {name}/ to archive_dir (a "
                f"list of folders is searched in order), or set archive_dir: null to use "
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


def _shown(archive_dir: ArchiveDir) -> str:
    """``archive_dir`` as params.yaml spells it: a folder, or the list of them."""
    dirs = archive_dirs(archive_dir)
    if isinstance(archive_dir, str | os.PathLike):
        return str(archive_dir)
    return "[" + ", ".join(str(d) for d in dirs) + "]"


def fetch_uea(
    name: str,
    raw_dir: str | os.PathLike,
    archive_dir: ArchiveDir = None,
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
    names = file_names(name)

    archive = archive_root(name, archive_dir)
    archive_sums: dict[str, str] = {}
    if archive is not None:
        archive_sums, _ = _expected_sums(archive, name)

    because = None
    if not force:
        prov = verified_provenance(dest, name, file_names(name).values())
        if prov is not None and all(
            prov["raw_files"].get(f"{name}/{f}") == s for f, s in archive_sums.items()
        ):
            because, stamps = origin_problem(name, prov, archive_dir)
            if because is None:
                if stamps != (prov.get(ORIGIN) or {}):
                    # touched, not changed: record the stamps, so the next check reads nothing
                    prov = {**prov, ORIGIN: stamps}
                    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
                return prov

    workdir: Path | None = None
    try:
        source, src_dir = locate_uea(name, archive_dir, download)
        if source == "archive_dir":
            root, source_url = src_dir.parent, str(src_dir.resolve())
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
    if source == "archive_dir":
        prov["archive_dir"] = str(root)  # the folder of archive_dir it was read from
    if decompressed:
        prov["decompressed_from"] = decompressed
    if stamps:
        prov[ORIGIN] = stamps
    if because:
        prov["fetched_because"] = because
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov
