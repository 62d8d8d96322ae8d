"""What every source records about its raw files: `<raw_dir>/<Name>/provenance.json` with
the sha256 of each file, and the check that a recorded fetch is still intact."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

PROVENANCE = "provenance.json"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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
