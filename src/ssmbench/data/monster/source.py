"""The ``monster`` source: MONSTER from the Hugging Face Hub at a ``revision``, or a local
copy (``local_dir``); ``offline`` forbids the Hub. ``fetch.py`` fetches, ``prepare.py``
prepares."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.provenance import reject_raw_copy
from ssmbench.data.source_type import Source


def fetch(name: str, raw_dir: Path, settings: dict, force: bool) -> dict:
    from ssmbench.data.monster.fetch import fetch_monster

    return fetch_monster(
        name,
        raw_dir,
        revision=settings["revision"],
        local_dir=settings["local_dir"],
        offline=settings["offline"],
        force=force,
    )


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.monster.prepare import prepare_monster

    # every check of the preparation is on the raw files: a copy that fails to prepare
    # is a bad raw copy, rejected, so the next fetch fetches it again
    try:
        return prepare_monster(name, raw_dir, out_dir)
    except DataError as exc:
        raise reject_raw_copy(raw_dir, name, exc) from exc


def locate(name: str, settings: dict) -> None:
    from ssmbench.data.monster.fetch import locate_local

    if settings["local_dir"]:
        locate_local(name, settings["local_dir"])
    elif settings["offline"]:
        raise DataError(
            f"MONSTER dataset {name} is not fetched yet and offline is set: set "
            f"benchmarks.monster.local_dir to a folder holding {name}/{name}_X.npy, "
            f"{name}_y.npy and test_indices_fold_0..4.txt, or set offline: false."
        )


def source_files(name: str, settings: dict) -> list[Path]:
    from ssmbench.data.monster.fetch import local_files

    return local_files(name, settings["local_dir"])


def raw_copy_problem(name: str, raw_dir: Path, settings: dict) -> str | None:
    from ssmbench.data.monster.fetch import origin_problem
    from ssmbench.data.provenance import read_provenance

    prov = read_provenance(raw_dir / name)
    if prov is None:
        return None
    return origin_problem(
        name,
        raw_dir / name,
        prov,
        revision=settings["revision"],
        local_dir=settings["local_dir"],
        offline=settings["offline"],
    )[0]


def split_rows(name: str, settings: dict, size, val_fraction: float):
    """Its 5 given folds: a fifth of the rows tested, ``val_fraction`` of the rest for
    validation."""
    from ssmbench.data.split_rows import held_out

    if size is None or size.N is None:
        return None
    return held_out(int(size.N), int(size.N) // 5, val_fraction)


def catalog() -> dict:
    from ssmbench.data.monster.catalog import CATALOG

    return CATALOG


# revision and local_dir are where the data come from: changing one fetches and prepares
# again (offline only forbids the network)
SOURCE = Source(
    prepare=prepare,
    content_keys=("revision", "local_dir"),
    fetch=fetch,
    locate=locate,
    source_files=source_files,
    raw_copy_problem=raw_copy_problem,
    catalog=catalog,
    settings_schema=Path(__file__).with_name("params.schema.yaml"),
    split_rows=split_rows,
)
