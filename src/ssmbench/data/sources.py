"""One entry point per step for every data source: fetch, prepare, and the pre-flight
check that a dataset can be had. The CLI and the workflow call these; each source's
module (uea.py, monster.py) does the work. params.yaml `benchmarks.<b>.source` picks it.
"""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.provenance import PROVENANCE

SOURCES = ("uea", "monster")


def _source(settings: dict) -> str:
    source = settings.get("source")
    if source not in SOURCES:
        raise DataError(f"benchmark source {source!r} is not one of {SOURCES}")
    return source


def fetch(name: str, raw_dir: str | Path, settings: dict) -> dict:
    """Put the raw files of `name` under `<raw_dir>/<name>/`; return their provenance."""
    if _source(settings) == "uea":
        from ssmbench.data.uea import fetch_uea

        return fetch_uea(
            name,
            raw_dir,
            archive_dir=settings.get("archive_dir"),
            download=settings.get("download", True),
        )
    from ssmbench.data.monster import fetch_monster

    return fetch_monster(
        name,
        raw_dir,
        revision=settings.get("revision", "main"),
        local_dir=settings.get("local_dir"),
        offline=settings.get("offline", False),
    )


def prepare(name: str, raw_dir: str | Path, out_dir: str | Path, settings: dict) -> Path:
    """Write the prepared folder `<out_dir>/<name>/` from the raw files; return it."""
    if _source(settings) == "uea":
        from ssmbench.data.uea import prepare_uea

        return prepare_uea(name, raw_dir, out_dir)
    from ssmbench.data.monster import prepare_monster

    return prepare_monster(name, raw_dir, out_dir)


def check_available(name: str, raw_dir: str | Path, settings: dict) -> None:
    """Raise DataError if `name` cannot be fetched (decided without network): not fetched
    yet, and neither a local copy nor (allowed) download can supply it."""
    if (Path(raw_dir) / name / PROVENANCE).is_file():
        return
    if _source(settings) == "uea":
        from ssmbench.data.uea import locate_uea

        locate_uea(name, settings.get("archive_dir"), settings.get("download", True))
        return
    from ssmbench.data.monster import locate_local

    if settings.get("local_dir"):
        locate_local(name, settings["local_dir"])
    elif settings.get("offline", False):
        raise DataError(
            f"MONSTER dataset {name} is not fetched yet and offline is set: set "
            f"benchmarks.monster.local_dir to a folder holding {name}/{name}_X.npy, "
            f"{name}_y.npy and test_indices_fold_0..4.txt, or set offline: false."
        )
