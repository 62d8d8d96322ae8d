"""The ``physiome`` source: Physiome-ODE (``physiome/``), generated from myokit models
(``mode: generate``, its ``generator`` settings) or the official Zenodo archive
(``mode: zenodo``, its ``zenodo`` settings)."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.source_type import Source


def fetch(name: str, raw_dir: Path, settings: dict, force: bool) -> dict:
    from ssmbench.data.physiome import fetch_physiome

    if force:
        settings = {**settings, "zenodo": {**(settings.get("zenodo") or {}), "force": True}}
    return fetch_physiome(name, raw_dir, settings)


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.physiome import prepare_physiome

    return prepare_physiome(name, raw_dir, out_dir, settings)


def locate(name: str, settings: dict) -> None:
    from ssmbench.data.physiome import locate_physiome

    locate_physiome(name, settings)


def check_recipe(name: str, settings: dict) -> None:
    from ssmbench.data.physiome import resolve_settings

    resolve_settings(name, settings)


def split_rows(name: str, settings: dict, size, val_fraction: float):
    """70/20/10 of the instances: the generator's ``n_instances``, else the dataset's N."""
    if size is None or size.N is None:
        return None
    N = int((settings.get("generator") or {}).get("n_instances") or size.N)
    n_val, n_test = round(0.2 * N), round(0.1 * N)
    return N - n_val - n_test, n_val, n_test


def catalog() -> dict:
    from ssmbench.data.physiome.catalog import CATALOG

    return CATALOG


SOURCE = Source(
    prepare=prepare,
    content_keys=("mode", "generator", "zenodo"),
    fetch=fetch,
    locate=locate,
    check_recipe=check_recipe,
    catalog=catalog,
    settings_schema=Path(__file__).with_name("params.schema.yaml"),
    split_rows=split_rows,
)
