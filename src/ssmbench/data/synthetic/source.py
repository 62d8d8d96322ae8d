"""The ``synthetic`` source: the TIDES Fading Flash task (``prepare.py``), generated
from its ``generator`` settings."""

from __future__ import annotations

from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.source_type import Source


def _known(name: str):
    """fading_flash, once `name` is known to be one of its datasets."""
    from ssmbench.data.synthetic import prepare as fading_flash

    if name not in fading_flash.NAMES:
        raise DataError(
            f"synthetic dataset {name!r} is unknown: the synthetic source makes "
            f"{' and '.join(fading_flash.NAMES)} only"
        )
    return fading_flash


def recipe(name: str, settings: dict) -> dict:
    return {"generator": settings["generator"]}


def prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    fading_flash = _known(name)
    gen = {**settings["generator"], "name": name}
    if "dt_range" in gen:
        gen["dt_range"] = tuple(gen["dt_range"])
    try:
        return fading_flash.prepare_fading_flash(out_dir, **gen)
    except TypeError as exc:  # an unknown generator key
        raise DataError(
            f"benchmarks.synthetic.generator in params.yaml: {exc}. Allowed keys: n_train, "
            f"n_test_per_dt, seed, test_dts, dt_range, dt_per_step."
        ) from exc


def check_recipe(name: str, settings: dict) -> None:
    """Generator keys and values the generator would reject, found without generating."""
    import inspect

    fading_flash = _known(name)
    allowed = set(inspect.signature(fading_flash.prepare_fading_flash).parameters)
    allowed -= {"out_dir", "name"}
    generator = settings["generator"]
    unknown = set(generator) - allowed
    if unknown:
        raise DataError(
            f"{name}: unknown key(s) {sorted(unknown)} in the generator settings "
            f"(params.yaml benchmarks.<b>.generator); allowed: {sorted(allowed)}"
        )
    try:
        fading_flash.check_generator(generator)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{name}: bad generator settings (params.yaml benchmarks.<b>.generator): {exc}"
        ) from exc


def split_rows(name: str, settings: dict, size, val_fraction: float):
    """The generator's sizes: ``n_train`` rows (``val_fraction`` of them for validation)
    and ``n_test_per_dt`` per test step size; None where the settings give no n_train."""
    from ssmbench.data.split_rows import official_split

    gen = settings["generator"]
    if not gen.get("n_train"):
        return None
    n_test = int(gen.get("n_test_per_dt", 0)) * len(gen.get("test_dts") or [1])
    return official_split(int(gen["n_train"]), n_test, val_fraction)


def catalog() -> dict:
    from ssmbench.data.synthetic.catalog import CATALOG

    return CATALOG


SOURCE = Source(
    prepare=prepare,
    content_keys=("generator",),
    recipe=recipe,
    check_recipe=check_recipe,
    catalog=catalog,
    settings_schema=Path(__file__).with_name("params.schema.yaml"),
    split_rows=split_rows,
)
