"""What every source records about its raw files: `<raw_dir>/<Name>/provenance.json` with
the sha256 of each file, the check that a recorded fetch is still intact, and the
rejection of a raw copy that failed to prepare.

A raw copy can match its record and still be bad (a truncated download, a corrupt file in
the source folder): preparing it fails. :func:`reject_raw_copy` then moves its
``provenance.json`` aside to ``.provenance.rejected.json`` (with the error), so the next
fetch (``ssmbench fetch``, or the workflow, whose fetch output it is) fetches it again
instead of keeping it.

A raw copy is a snapshot of its source: a copy of the user's files (``archive_dir``,
``local_dir``), never a link to them. ``provenance.json`` records where each file came from
and a stamp of it (:func:`file_stamp`: path, size, time stamps, inode), so that
:func:`source_change` can tell cheaply whether the source still holds what was copied: a
file whose stamp is unchanged is taken as unchanged; any other is hashed once and compared
with the sha256 the fetch recorded."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError

PROVENANCE = "provenance.json"
#: a rejected record, kept beside the raw files for the post-mortem (see the module docstring)
REJECTED = ".provenance.rejected.json"

__all__ = [
    "ORIGIN",
    "PROVENANCE",
    "REJECTED",
    "check_raw_files",
    "fetch_record",
    "file_stamp",
    "read_provenance",
    "recorded_files",
    "refetch_command",
    "reject_raw_copy",
    "sha256_file",
    "source_change",
    "utc_now",
    "verified_provenance",
]

#: the key of ``provenance.json`` holding each raw file's source stamp (:func:`file_stamp`)
ORIGIN = "origin"


def utc_now() -> str:
    """The time stamp of a record (``fetched``, ``created``): UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def verified_provenance(dest: Path, name: str, file_names: Iterable[str]) -> dict | None:
    """The provenance recorded in `dest` if every file is there with its recorded size
    (where recorded) and sha256; None if anything is missing, unreadable or different."""
    prov_path = dest / PROVENANCE
    if not prov_path.is_file():
        return None
    try:
        prov = json.loads(prov_path.read_text(encoding="utf-8"))
        recorded = prov["raw_files"]
        sizes = prov.get("sizes") or {}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    for fname in file_names:
        path, rel = dest / fname, f"{name}/{fname}"
        if rel not in recorded or not path.is_file():
            return None
        if rel in sizes and path.stat().st_size != sizes[rel]:
            return None  # cheap check first: hashing a 57 GB file is not
        if sha256_file(path) != recorded[rel]:
            return None
    return prov


def file_stamp(path: Path) -> dict:
    """What identifies the content of the file at ``path`` without reading it: the file
    (resolved), its size, modification and change times, and inode. An edit in place
    changes the times (the change time cannot be set back by hand), a replaced file the
    inode."""
    st = Path(path).stat()
    return {
        "file": str(Path(path).resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
    }


def source_change(
    sources: dict[str, Path], fetched: dict[str, str], stamps: dict
) -> tuple[str | None, dict]:
    """Whether the source files of a raw copy still hold what was fetched from them.

    ``sources`` maps each raw file (``<name>/<file>``) to the source file it is copied from
    now, ``fetched`` to the sha256 of the source's bytes at the fetch, ``stamps`` to the
    :func:`file_stamp` recorded then (:data:`ORIGIN`). A file with the recorded stamp is
    taken as unchanged; another is hashed. Returns (why the copy no longer stands for its
    source, or None; the stamps now, to record when only they changed). A source file
    that is gone leaves the copy standing: it is all there is of it."""
    now: dict = {}
    for rel, path in sources.items():
        try:
            stamp = file_stamp(path)
        except OSError:
            if rel in stamps:
                now[rel] = stamps[rel]
            continue
        now[rel] = stamp
        before = stamps.get(rel) or {}
        if before == stamp:
            continue
        if before.get("file") not in (None, stamp["file"]):
            return f"{rel} comes from {stamp['file']}, but was fetched from {before['file']}", {}
        try:
            digest = sha256_file(path)
        except OSError as e:
            return f"{path} could not be read to compare it ({e.strerror or e})", {}
        if digest != fetched.get(rel):
            return (
                f"{path} changed since it was fetched (sha256 {digest[:12]}..., fetched "
                f"{str(fetched.get(rel))[:12]}...)",
                {},
            )
    return None, now


def read_provenance(dest: Path) -> dict | None:
    """``dest/provenance.json`` as a dict; None when there is none or it is not readable
    (the copy is then fetched again, as :func:`verified_provenance` has it)."""
    try:
        prov = json.loads((Path(dest) / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return prov if isinstance(prov, dict) else None


def recorded_files(dest: Path, name: str) -> list[str] | None:
    """The file names (relative to ``dest``) that ``dest/provenance.json`` records for
    dataset ``name``; None when there is no readable record or it lists none."""
    try:
        prov = json.loads((dest / PROVENANCE).read_text(encoding="utf-8"))
        keys = list(prov["raw_files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    files = [k.split("/", 1)[1] for k in keys if k.startswith(f"{name}/")]
    return files or None


def fetch_record(raw_dir: str | Path, name: str) -> dict | None:
    """The provenance a fetch wrote in ``<raw_dir>/<name>/``, for preparing its files: None
    where there is none (files placed by hand). Unlike :func:`read_provenance` (for the
    fetch, which fetches again), a record that cannot be read, or whose ``raw_files`` is not
    a mapping, is a DataError that says how to fetch again."""
    prov_path = Path(raw_dir) / name / PROVENANCE
    if not prov_path.is_file():
        return None
    try:
        prov = json.loads(prov_path.read_text(encoding="utf-8"))
        dict(prov.get("raw_files") or {})
    except (OSError, ValueError, TypeError, AttributeError) as e:
        raise DataError(
            f"{prov_path}: not a valid provenance record ({e}). Fetch {name} again "
            f"(`{refetch_command(raw_dir, name)}`)."
        ) from e
    return prov


def check_raw_files(
    raw_dir: str | Path,
    name: str,
    prov: dict,
    digests: dict[str, str],
    *,
    unrecorded_ok: bool = False,
) -> None:
    """Check the raw files about to be prepared against the sha256 their fetch recorded in
    ``prov`` (:func:`fetch_record`). ``digests`` maps each raw file (``<name>/<file>``) to
    its sha256 now. Raises DataError naming the file whose sha256 differs from the
    recorded one, or that the record lacks (unless ``unrecorded_ok``); each says how to
    fetch again."""
    recorded = dict(prov.get("raw_files") or {})
    prov_path = Path(raw_dir) / name / PROVENANCE
    again = refetch_command(raw_dir, name)
    for rel, digest in digests.items():
        path = prov_path.parent / Path(rel).name
        if rel not in recorded:
            if unrecorded_ok:
                continue
            raise DataError(
                f"{path}: not among the raw files recorded in {prov_path} at fetch time, so "
                f"it is not known to be what was fetched; fetch it again (`{again}`)."
            )
        if recorded[rel] != digest:
            raise DataError(
                f"{path}: sha256 {digest} differs from the one recorded in {prov_path} at "
                f"fetch time. The raw file changed; fetch it again (`{again}`)."
            )


def refetch_command(raw_dir: str | Path, name: str) -> str:
    """The command that fetches dataset ``name`` of ``<raw root>/<benchmark>`` again."""
    return f"ssmbench fetch --benchmark {Path(raw_dir).name} --dataset {name} --force"


def reject_raw_copy(raw_dir: str | Path, name: str, error: DataError) -> DataError:
    """Mark the raw copy ``<raw_dir>/<name>/`` as failed: its ``provenance.json`` moves to
    :data:`REJECTED` with the error, so the next fetch fetches it again. Returns ``error``'s
    message with what happens next, as a DataError to raise."""
    dest = Path(raw_dir) / name
    prov_path = dest / PROVENANCE
    try:
        prov = json.loads(prov_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        prov = None
    if isinstance(prov, dict):
        prov["rejected"] = {"when": utc_now(), "error": str(error)}
        tmp = dest / f"{REJECTED}.tmp"
        tmp.write_text(json.dumps(prov, indent=2) + "\n", encoding="utf-8")
        tmp.replace(dest / REJECTED)
    prov_path.unlink(missing_ok=True)
    if not isinstance(prov, dict):  # no fetched copy to mark (e.g. never fetched)
        return DataError(
            f"{error} (`{refetch_command(raw_dir, name)}`, or rerun the workflow)"
            if dest.is_dir()
            else str(error)
        )
    return DataError(
        f"{error} The raw copy {dest} is marked bad ({REJECTED}): the next fetch fetches it "
        f"again (`{refetch_command(raw_dir, name)}`, or rerun the workflow)."
    )
