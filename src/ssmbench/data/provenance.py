"""What every source records about its raw files: `<raw_dir>/<Name>/provenance.json` with
the sha256 of each file, and the check that a recorded fetch is still intact."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.data.checksums import sha256_file

PROVENANCE = "provenance.json"

__all__ = ["PROVENANCE", "recorded_files", "sha256_file", "utc_now", "verified_provenance"]


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
