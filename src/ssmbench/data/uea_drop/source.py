"""The ``uea_drop`` source: a dataset of another benchmark with time steps dropped at
random (``prepare.py``): ``<Base>Drop`` is derived from the prepared ``<Base>`` of the
benchmark named by ``derived_from`` (EigenWormsDrop <- uea/EigenWorms), by its ``drop``
settings."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.source_type import Source

#: the suffix naming a drop-rate variant: EigenWormsDrop is derived from EigenWorms
DROP_SUFFIX = "Drop"


def derived_from(name: str, settings: dict) -> tuple[str, str]:
    if not name.endswith(DROP_SUFFIX) or name == DROP_SUFFIX:
        raise DataError(
            f"{name}: a drop-rate dataset is named <Base>{DROP_SUFFIX} (e.g. "
            f"EigenWorms{DROP_SUFFIX}); fix its name in params.yaml"
        )
    return settings["derived_from"], name[: -len(DROP_SUFFIX)]


def recipe(name: str, settings: dict) -> dict:
    return {
        "derived_from": "/".join(derived_from(name, settings)),
        "drop": settings["drop"],
    }


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.uea_drop.prepare import prepare_drop_rate_variant

    base_benchmark, base = derived_from(name, settings)
    source_dir = out_dir.parent / base_benchmark / base
    drop = dict(settings["drop"])
    try:
        return prepare_drop_rate_variant(
            source_dir, out_dir, name=name, benchmark=out_dir.name, **drop
        )
    except TypeError as exc:
        raise DataError(
            f"benchmarks.<drop benchmark>.drop in params.yaml: {exc}. Allowed keys: "
            f"train_rate, test_rates, seed, test_seeds, per_series."
        ) from exc


def check_recipe(name: str, settings: dict) -> None:
    derived_from(name, settings)  # the name: <Base>Drop


def split_rows(name: str, settings: dict, size, val_fraction: float):
    """Its base's TRAIN/TEST (the UEA catalog's row), with ``val_fraction`` of TRAIN for
    validation."""
    from ssmbench.data.split_rows import official_split
    from ssmbench.data.uea.catalog import UEA_DATASETS

    row = UEA_DATASETS.get(name) or UEA_DATASETS.get(name.removesuffix(DROP_SUFFIX)) or {}
    n_train, n_test = row.get("n_train"), row.get("n_test")
    return official_split(n_train, n_test, val_fraction) if n_train and n_test else None


def catalog() -> dict:
    from ssmbench.data.uea_drop.catalog import CATALOG

    return CATALOG


SOURCE = Source(
    prepare=prepare,
    content_keys=("derived_from", "drop"),
    recipe=recipe,
    check_recipe=check_recipe,
    derived_from=derived_from,
    catalog=catalog,
    settings_schema=Path(__file__).with_name("params.schema.yaml"),
    split_rows=split_rows,
)
