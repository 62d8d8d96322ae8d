"""The ``uea6`` source: a UEA dataset under the Log-NCDE protocol (``prepare.py``): pooled,
without duplicates, one 70/15/15 split per seed (its ``split`` settings); derived from
the prepared dataset of the same name of the benchmark named by ``derived_from`` (uea)."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.source_type import Source


def derived_from(name: str, settings: dict) -> tuple[str, str]:
    return settings["derived_from"], name


def recipe(name: str, settings: dict) -> dict:
    return {
        "derived_from": "/".join(derived_from(name, settings)),
        "split": settings["split"],
    }


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.uea6.prepare import prepare_uea6_variant

    base_benchmark, base = derived_from(name, settings)
    source_dir = out_dir.parent / base_benchmark / base
    split = dict(settings["split"])
    try:
        return prepare_uea6_variant(source_dir, out_dir, name=name, benchmark=out_dir.name, **split)
    except TypeError as exc:
        raise DataError(
            f"benchmarks.<uea6 benchmark>.split in params.yaml: {exc}. Allowed keys: seeds, "
            "fractions."
        ) from exc


def check_recipe(name: str, settings: dict) -> None:
    from ssmbench.data.uea6.prepare import check_split

    try:
        check_split(**settings["split"])
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{name}: bad split settings (params.yaml benchmarks.<b>.split): {exc}"
        ) from exc


def split_rows(name: str, settings: dict, size, val_fraction: float):
    """The ``split.fractions`` of the pooled rows (duplicates not removed): a permutation
    cut at int(f_train N), int((f_train + f_val) N)."""
    fractions = settings["split"].get("fractions")
    if not fractions or size is None or size.N is None:
        return None
    N = int(size.N)
    a, b = int(fractions[0] * N), int((fractions[0] + fractions[1]) * N)
    return a, b - a, N - b


def catalog() -> dict:
    from ssmbench.data.uea6.catalog import CATALOG

    return CATALOG


SOURCE = Source(
    prepare=prepare,
    content_keys=("derived_from", "split"),
    recipe=recipe,
    check_recipe=check_recipe,
    derived_from=derived_from,
    catalog=catalog,
    settings_schema=Path(__file__).with_name("params.schema.yaml"),
    split_rows=split_rows,
)
