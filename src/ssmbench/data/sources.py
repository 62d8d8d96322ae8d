"""One entry point per step for every data source: fetch, prepare, and the pre-flight
check that a dataset can be had. The CLI and the workflow call these; each source's
module does the work. params.yaml `benchmarks.<b>.source` picks it:

* ``uea``       UEA archive (``uea.py``): local archive folder, aeon's bundled sets, download.
* ``monster``   MONSTER on the Hugging Face Hub (``monster.py``).
* ``physiome``  Physiome-ODE (``physiome/``): generated from myokit models, or the
                official Zenodo archive.
* ``synthetic`` the TIDES Fading Flash task (``fading_flash.py``), generated.
* ``uea_drop``  a dataset of another benchmark with time steps dropped at random
                (``drop_rate.py``): ``<Base>Drop`` is derived from the prepared ``<Base>`` of
                the benchmark named by ``derived_from`` (EigenWormsDrop <- uea/EigenWorms).
* ``uea6``      a UEA dataset under the Log-NCDE protocol (``uea6.py``): pooled, without
                duplicates, one 70/15/15 split per seed; derived from the prepared dataset
                of the same name of the benchmark named by ``derived_from`` (uea).

Two jobs fetching or preparing the same dataset at once (two workflows on one shared
folder, a retried job racing a stale one) take turns on a lock file beside the target
(``.<Name>.lock``, kept out of DVC by ``.dvcignore``); each step also writes into a
temporary folder renamed into place, so a folder is never seen half-written.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.names import name_problem
from ssmbench.data.provenance import (
    PROVENANCE,
    REJECTED,
    reject_raw_copy,
    verified_provenance,
)
from ssmbench.io import atomic_write_json

SOURCES = ("uea", "monster", "physiome", "synthetic", "uea_drop", "uea6")
#: the sources whose datasets are made from a prepared dataset of another benchmark
DERIVED_SOURCES = ("uea_drop", "uea6")
#: the suffix naming a drop-rate variant: EigenWormsDrop is derived from EigenWorms
DROP_SUFFIX = "Drop"
#: how long a job waits for another job's fetch/prepare of the same dataset
LOCK_TIMEOUT_S = 6 * 3600


def _plain_name(step: str, name: str) -> None:
    """`name` becomes the folder `<raw_dir>/<name>` or `<out_dir>/<name>`: a plain name only,
    refused before anything is read or written."""
    if (problem := name_problem("dataset", name)) is not None:
        raise DataError(f"{step}: {problem}")


def _source(settings: dict) -> str:
    source = settings.get("source")
    if source not in SOURCES:
        raise DataError(f"benchmark source {source!r} is not one of {SOURCES}")
    return source


@contextmanager
def dataset_lock(parent: Path, name: str):
    """Hold ``<parent>/.<name>.lock`` (filelock: fcntl where available) for one step."""
    from filelock import FileLock, Timeout

    parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(parent / f".{name}.lock"), timeout=LOCK_TIMEOUT_S)
    try:
        with lock:
            yield
    except Timeout as exc:
        raise DataError(
            f"{parent / name}: another job held the lock {lock.lock_file} for more than "
            f"{LOCK_TIMEOUT_S} s. If no job is running, delete the lock file and retry."
        ) from exc


def derived_base(name: str, settings: dict) -> tuple[str, str]:
    """(benchmark, dataset) a derived dataset is made from: ``uea_drop``'s ``<Base>Drop``
    <- ``<derived_from>/<Base>``, ``uea6``'s ``<Name>`` <- ``<derived_from>/<Name>``."""
    if settings.get("source") == "uea6":
        return settings.get("derived_from", "uea"), name
    if not name.endswith(DROP_SUFFIX) or name == DROP_SUFFIX:
        raise DataError(
            f"{name}: a drop-rate dataset is named <Base>{DROP_SUFFIX} (e.g. "
            f"EigenWorms{DROP_SUFFIX}); fix its name in params.yaml"
        )
    return settings.get("derived_from", "uea"), name[: -len(DROP_SUFFIX)]


def _generated_provenance(name: str, raw_dir: Path, settings: dict, source: str) -> dict:
    """Generated and derived datasets have no raw files: their 'fetch' records what they
    will be made from, so every dataset has the same fetch -> prepare steps."""
    dest = raw_dir / name
    existing = verified_provenance(dest, name, [])
    if source == "synthetic":
        recipe = {"generator": settings.get("generator") or {}}
    elif source == "uea6":
        recipe = {
            "derived_from": "/".join(derived_base(name, settings)),
            "split": settings.get("split") or {},
        }
    else:
        recipe = {
            "derived_from": "/".join(derived_base(name, settings)),
            "drop": settings.get("drop") or {},
        }
    if existing is not None and existing.get("recipe") == recipe:
        return existing
    prov = {
        "name": name,
        "source": source,
        "raw_files": {},
        "recipe": recipe,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write_json(dest / PROVENANCE, prov)
    return prov


def fetch(name: str, raw_dir: str | Path, settings: dict, *, force: bool = False) -> dict:
    """Put the raw files of `name` under `<raw_dir>/<name>/`; return their provenance.
    ``force`` fetches again even when the raw copy matches its provenance."""
    _plain_name("fetch", name)
    source = _source(settings)
    raw_dir = Path(raw_dir)
    with dataset_lock(raw_dir, name):
        prov = _fetch_source(name, raw_dir, settings, source, force)
        (raw_dir / name / REJECTED).unlink(missing_ok=True)  # the copy that failed is gone
        return prov


def _fetch_source(name: str, raw_dir: Path, settings: dict, source: str, force: bool) -> dict:
    if source == "uea":
        from ssmbench.data.uea import fetch_uea

        return fetch_uea(
            name,
            raw_dir,
            archive_dir=settings.get("archive_dir"),
            download=settings.get("download", True),
            force=force,
        )
    if source == "monster":
        from ssmbench.data.monster import fetch_monster

        return fetch_monster(
            name,
            raw_dir,
            revision=settings.get("revision", "main"),
            local_dir=settings.get("local_dir"),
            offline=settings.get("offline", False),
            force=force,
        )
    if source == "physiome":
        from ssmbench.data.physiome import fetch_physiome

        if force:
            settings = {**settings, "zenodo": {**(settings.get("zenodo") or {}), "force": True}}
        return fetch_physiome(name, raw_dir, settings)
    return _generated_provenance(name, raw_dir, settings, source)


def prepare(name: str, raw_dir: str | Path, out_dir: str | Path, settings: dict) -> Path:
    """Write the prepared folder `<out_dir>/<name>/` from the raw files; return it."""
    _plain_name("prepare", name)
    source = _source(settings)
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    with dataset_lock(out_dir, name):
        # A UEA or MONSTER copy that fails to prepare is a bad raw copy (every check
        # there is on the raw files): rejected, so the next fetch fetches it again.
        if source == "uea":
            from ssmbench.data.uea import prepare_uea

            try:
                return prepare_uea(name, raw_dir, out_dir)
            except DataError as exc:
                raise reject_raw_copy(raw_dir, name, exc) from exc
        if source == "monster":
            from ssmbench.data.monster import prepare_monster

            try:
                return prepare_monster(name, raw_dir, out_dir)
            except DataError as exc:
                raise reject_raw_copy(raw_dir, name, exc) from exc
        if source == "physiome":
            from ssmbench.data.physiome import prepare_physiome

            return prepare_physiome(name, raw_dir, out_dir, settings)
        if source == "synthetic":
            return _prepare_synthetic(name, out_dir, settings)
        if source == "uea6":
            return _prepare_uea6(name, out_dir, settings)
        return _prepare_drop(name, out_dir, settings)


def _prepare_synthetic(name: str, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data import fading_flash

    if name not in fading_flash.NAMES:
        raise DataError(
            f"synthetic dataset {name!r} is unknown: the synthetic source makes "
            f"{' and '.join(fading_flash.NAMES)} only"
        )
    gen = {**(settings.get("generator") or {}), "name": name}
    if "dt_range" in gen:
        gen["dt_range"] = tuple(gen["dt_range"])
    try:
        return fading_flash.prepare_fading_flash(out_dir, **gen)
    except TypeError as exc:  # an unknown generator key
        raise DataError(
            f"benchmarks.synthetic.generator in params.yaml: {exc}. Allowed keys: n_train, "
            f"n_test_per_dt, seed, test_dts, dt_range, dt_per_step."
        ) from exc


def _prepare_drop(name: str, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.drop_rate import prepare_drop_rate_variant

    base_benchmark, base = derived_base(name, settings)
    source_dir = out_dir.parent / base_benchmark / base
    drop = dict(settings.get("drop") or {})
    try:
        return prepare_drop_rate_variant(
            source_dir, out_dir, name=name, benchmark=out_dir.name, **drop
        )
    except TypeError as exc:
        raise DataError(
            f"benchmarks.<drop benchmark>.drop in params.yaml: {exc}. Allowed keys: "
            f"train_rate, test_rates, seed, test_seeds, per_series."
        ) from exc


def _prepare_uea6(name: str, out_dir: Path, settings: dict) -> Path:
    from ssmbench.data.uea6 import prepare_uea6_variant

    base_benchmark, base = derived_base(name, settings)
    source_dir = out_dir.parent / base_benchmark / base
    split = dict(settings.get("split") or {})
    try:
        return prepare_uea6_variant(source_dir, out_dir, name=name, benchmark=out_dir.name, **split)
    except TypeError as exc:
        raise DataError(
            f"benchmarks.<uea6 benchmark>.split in params.yaml: {exc}. Allowed keys: seeds, "
            "fractions."
        ) from exc


def check_available(name: str, raw_dir: str | Path, settings: dict) -> None:
    """Raise DataError if `name` cannot be fetched (decided without network): not fetched
    yet, and neither a local copy nor (allowed) download can supply it. A derived dataset
    is checked through its base (see ``ssmbench.config.check_suite_sources``)."""
    source = _source(settings)
    _check_recipe(name, source, settings)
    if (Path(raw_dir) / name / PROVENANCE).is_file():
        return
    if source == "uea":
        from ssmbench.data.uea import locate_uea

        locate_uea(name, settings.get("archive_dir"), settings.get("download", True))
    elif source == "monster":
        from ssmbench.data.monster import locate_local

        if settings.get("local_dir"):
            locate_local(name, settings["local_dir"])
        elif settings.get("offline", False):
            raise DataError(
                f"MONSTER dataset {name} is not fetched yet and offline is set: set "
                f"benchmarks.monster.local_dir to a folder holding {name}/{name}_X.npy, "
                f"{name}_y.npy and test_indices_fold_0..4.txt, or set offline: false."
            )
    elif source == "physiome":
        from ssmbench.data.physiome import locate_physiome

        locate_physiome(name, settings)


def _check_recipe(name: str, source: str, settings: dict) -> None:
    """Generator keys a generated dataset would reject, found before any job runs."""
    import inspect

    if source == "synthetic":
        from ssmbench.data import fading_flash

        if name not in fading_flash.NAMES:
            raise DataError(
                f"synthetic dataset {name!r} is unknown: the synthetic source makes "
                f"{' and '.join(fading_flash.NAMES)} only"
            )
        allowed = set(inspect.signature(fading_flash.prepare_fading_flash).parameters)
        allowed -= {"out_dir", "name"}
        generator = settings.get("generator") or {}
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
    elif source == "uea_drop":
        derived_base(name, settings)
    elif source == "uea6":
        from ssmbench.data.uea6 import check_split

        try:
            check_split(**(settings.get("split") or {}))
        except (TypeError, ValueError) as exc:
            raise DataError(
                f"{name}: bad split settings (params.yaml benchmarks.<b>.split): {exc}"
            ) from exc
    elif source == "physiome":
        from ssmbench.data.physiome import resolve_settings

        resolve_settings(name, settings)


def data_settings(settings: dict) -> str:
    """The settings a dataset's content depends on, as stable JSON: the workflow passes
    it to fetch/prepare as a rule param, so changing them re-prepares the dataset."""
    keys = {
        # where a UEA/MONSTER copy comes from does not change it (checksums): not here
        "uea": ("normalise",),
        "monster": ("revision",),
        "physiome": ("mode", "generator", "zenodo"),
        "synthetic": ("generator",),
        "uea_drop": ("derived_from", "drop"),
        "uea6": ("derived_from", "split"),
    }[_source(settings)]
    return json.dumps({k: settings.get(k) for k in keys}, sort_keys=True)
