"""The ``uea`` source: the UEA archive from a local archive folder (``archive_dir``: one
folder, or a list searched in order), aeon's bundled sets, or a download (``download``).
``fetch.py`` fetches, ``prepare.py`` prepares."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.provenance import reject_raw_copy
from ssmbench.data.source_type import Source


def fetch(name: str, raw_dir: Path, settings: dict, force: bool) -> dict:
    from ssmbench.data.uea.fetch import fetch_uea

    return fetch_uea(
        name,
        raw_dir,
        archive_dir=settings["archive_dir"],
        download=settings["download"],
        force=force,
    )


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.uea.prepare import prepare_uea

    # every check of the preparation is on the raw files: a copy that fails to prepare
    # is a bad raw copy, rejected, so the next fetch fetches it again. max_prepared_ratio
    # only refuses: it never changes what is written, so it is no content setting
    try:
        return prepare_uea(
            name, raw_dir, out_dir, max_prepared_ratio=settings["max_prepared_ratio"]
        )
    except DataError as exc:
        raise reject_raw_copy(raw_dir, name, exc) from exc


def locate(name: str, settings: dict) -> None:
    from ssmbench.data.uea.fetch import locate_uea

    locate_uea(name, settings["archive_dir"], settings["download"])


def source_files(name: str, settings: dict) -> list[Path]:
    from ssmbench.data.uea.fetch import archive_files

    return archive_files(name, settings["archive_dir"])


def raw_copy_problem(name: str, raw_dir: Path, settings: dict) -> str | None:
    from ssmbench.data.provenance import read_provenance
    from ssmbench.data.uea.fetch import origin_problem

    prov = read_provenance(raw_dir / name)
    return None if prov is None else origin_problem(name, prov, settings["archive_dir"])[0]


def content_values(name: str, settings: dict) -> dict:
    """``archive_dir`` as the folder ``name`` is read from (``fetch.archive_root``): a list's
    other folders are not where it comes from. A single folder stays as written; a list
    none of whose folders holds it (a copy fetched from one that is gone, or none: the
    pre-flight check names it) stays the list."""
    from ssmbench.data.uea.fetch import archive_root

    archive_dir = settings["archive_dir"]
    if not isinstance(archive_dir, list):
        return {}
    root = archive_root(name, archive_dir)
    return {} if root is None else {"archive_dir": str(root)}


def split_rows(name: str, settings: dict, size, val_fraction: float):
    """The archive's TRAIN/TEST (the catalog's row, else the prepared folder's), with
    ``val_fraction`` of TRAIN for validation."""
    from ssmbench.data.split_rows import official_split
    from ssmbench.data.uea.catalog import UEA_DATASETS

    row = UEA_DATASETS.get(name) or {}
    n_train, n_test = row.get("n_train"), row.get("n_test")
    if not (n_train and n_test) and size is not None:  # a prepared set's own split
        n_train, n_test = size.n_train, size.n_test
    return official_split(n_train, n_test, val_fraction) if n_train and n_test else None


def archive_folder(name: str, settings: dict) -> Path | None:
    """``<archive_dir>/<name>/`` of the ``archive_dir`` folder ``name`` is read from; its
    fetch reads ``.ts.xz`` files and a ``SHA256SUMS`` there."""
    from ssmbench.data.uea.fetch import archive_root

    root = archive_root(name, settings["archive_dir"])
    return None if root is None else root / name


def catalog() -> dict:
    from ssmbench.data.uea.catalog import CATALOG

    return CATALOG


# archive_dir is where the data come from: pointing it elsewhere fetches and prepares
# again (download only says whether downloading is allowed)
SOURCE = Source(
    prepare=prepare,
    content_keys=("normalise", "archive_dir"),
    content_values=content_values,
    fetch=fetch,
    locate=locate,
    source_files=source_files,
    raw_copy_problem=raw_copy_problem,
    catalog=catalog,
    settings_schema=Path(__file__).with_name("params.schema.yaml"),
    split_rows=split_rows,
    archive_folder=archive_folder,
)
