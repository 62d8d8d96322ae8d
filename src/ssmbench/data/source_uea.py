"""The ``uea`` source: the UEA archive (``uea.py``) from a local archive folder
(``archive_dir``), aeon's bundled sets, or a download (``download``)."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.provenance import reject_raw_copy
from ssmbench.data.source_type import Source


def fetch(name: str, raw_dir: Path, settings: dict, force: bool) -> dict:
    from ssmbench.data.uea import fetch_uea

    return fetch_uea(
        name,
        raw_dir,
        archive_dir=settings.get("archive_dir"),
        download=settings.get("download", True),
        force=force,
    )


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.uea import prepare_uea

    # every check of the preparation is on the raw files: a copy that fails to prepare
    # is a bad raw copy, rejected, so the next fetch fetches it again
    try:
        return prepare_uea(name, raw_dir, out_dir)
    except DataError as exc:
        raise reject_raw_copy(raw_dir, name, exc) from exc


def locate(name: str, settings: dict) -> None:
    from ssmbench.data.uea import locate_uea

    locate_uea(name, settings.get("archive_dir"), settings.get("download", True))


# where a copy comes from does not change it (checksums): archive_dir and download are
# not content settings
SOURCE = Source(prepare=prepare, content_keys=("normalise",), fetch=fetch, locate=locate)
