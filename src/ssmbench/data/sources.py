"""One entry point per step for every data source: fetch, prepare, and the pre-flight
check that a dataset can be had. The CLI and the workflow call these; each step
dispatches through the source table, ``SOURCES`` (``source_registry.py``: params.yaml
`benchmarks.<b>.source` -> a `Source`, ``source_type.py``), to the source's folder
(``data/<name>/``):

* ``uea``       UEA archive (``uea/``): local archive folder, aeon's bundled sets, download.
* ``monster``   MONSTER on the Hugging Face Hub (``monster/``).
* ``physiome``  Physiome-ODE (``physiome/``): generated from myokit models, or the official
                Zenodo archive.
* ``synthetic`` the TIDES Fading Flash task (``synthetic/``), generated.
* ``uea_drop``  a dataset of another benchmark with time steps dropped at random
                (``uea_drop/``): ``<Base>Drop`` is derived from the prepared ``<Base>`` of
                the benchmark named by ``derived_from`` (EigenWormsDrop <- uea/EigenWorms).
* ``uea6``      a UEA dataset under the Log-NCDE protocol (``uea6/``): pooled, without
                duplicates, one 70/15/15 split per seed; derived from the prepared dataset
                of the same name of the benchmark named by ``derived_from`` (uea).

A generated or derived source has no raw files: its fetch records its recipe (what it
will be made from) in ``provenance.json``, so every dataset has the same fetch -> prepare
steps. Two jobs fetching or preparing the same dataset at once (two workflows on one
shared folder, a retried job racing a stale one) take turns on a lock file beside the
target (``.<Name>.lock``, kept out of DVC by ``.dvcignore``); each step also writes into a
temporary folder renamed into place, so a folder is never seen half-written.
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ssmbench.data.errors import DataError
from ssmbench.data.names import name_problem
from ssmbench.data.provenance import PROVENANCE, REJECTED, verified_provenance
from ssmbench.data.source_registry import SOURCES
from ssmbench.data.source_type import Source
from ssmbench.io import atomic_write_json, remove_leftover_staging

log = logging.getLogger(__name__)

__all__ = [
    "DERIVED_SOURCES",
    "LOCK_TIMEOUT_S",
    "SOURCES",
    "Source",
    "check_available",
    "data_settings",
    "dataset_lock",
    "derived_base",
    "fetch",
    "prepare",
    "raw_copy_problem",
    "rejected_copy_problem",
    "source_files",
]

#: the sources whose datasets are made from a prepared dataset of another benchmark
DERIVED_SOURCES = tuple(name for name, source in SOURCES.items() if source.derived_from)
#: how long a job waits for another job's fetch/prepare of the same dataset
LOCK_TIMEOUT_S = 6 * 3600


def _plain_name(step: str, name: str) -> None:
    """`name` becomes the folder `<raw_dir>/<name>` or `<out_dir>/<name>`: a plain name only,
    refused before anything is read or written."""
    if (problem := name_problem("dataset", name)) is not None:
        raise DataError(f"{step}: {problem}")


def _source(settings: dict) -> str:
    """The benchmark's source name, one of the table's."""
    source = settings.get("source")
    known = tuple(SOURCES)
    if source not in known:
        raise DataError(f"benchmark source {source!r} is not one of {known}")
    return source


def _complete(settings: dict) -> dict:
    """A benchmark's settings over its source's defaults (its folder's, ``Source.settings``,
    as ``ssmbench.setting_defaults`` gives a run them): a benchmark entry as written reads
    as a run's resolved settings do, so the sources' readers hold no default of their own."""
    return {**SOURCES[_source(settings)].settings.defaults(), **settings}


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


def _remove_leftovers(folder: Path, name: str | None = None) -> None:
    """Remove what a fetch or preparation killed mid-write left in ``folder`` (its staging
    files, ``ssmbench.io.remove_leftover_staging``), saying so; the caller holds the
    dataset's lock, so no live step's staging is among them."""
    for path in remove_leftover_staging(folder, name):
        log.info("removed %s, left by an interrupted fetch or preparation", path)


def derived_base(name: str, settings: dict) -> tuple[str, str]:
    """(benchmark, dataset) a derived dataset is made from: ``uea_drop``'s ``<Base>Drop``
    <- ``<derived_from>/<Base>``, ``uea6``'s ``<Name>`` <- ``<derived_from>/<Name>``."""
    source, settings = _source(settings), _complete(settings)
    derived_from = SOURCES[source].derived_from
    if derived_from is None:
        raise DataError(
            f"{name}: benchmark source {source!r} is not derived from another benchmark "
            f"(the derived sources: {DERIVED_SOURCES})"
        )
    return derived_from(name, settings)


def _recorded_recipe(name: str, raw_dir: Path, source: str, recipe: dict) -> dict:
    """A generated or derived dataset's 'fetch': its recipe in ``provenance.json``, kept
    while it is the same recipe."""
    dest = raw_dir / name
    existing = verified_provenance(dest, name, [])
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
    settings = _complete(settings)
    source = _source(settings)
    raw_dir = Path(raw_dir)
    with dataset_lock(raw_dir, name):
        _remove_leftovers(raw_dir / name)
        entry = SOURCES[source]
        if entry.fetch is not None:
            prov = entry.fetch(name, raw_dir, settings, force)
        else:
            prov = _recorded_recipe(name, raw_dir, source, entry.recipe(name, settings))
        (raw_dir / name / REJECTED).unlink(missing_ok=True)  # the copy that failed is gone
        return prov


def prepare(name: str, raw_dir: str | Path, out_dir: str | Path, settings: dict) -> Path:
    """Write the prepared folder `<out_dir>/<name>/` from the raw files; return it. A raw
    copy that no longer stands for its source (`raw_copy_problem`) is not prepared: the
    error names why and the fetch that fetches it again; a prepared folder made before is
    kept."""
    _plain_name("prepare", name)
    settings = _complete(settings)
    source = _source(settings)
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    with dataset_lock(out_dir, name):
        _remove_leftovers(out_dir, name)
        if (why := raw_copy_problem(name, raw_dir, settings)) is not None:
            raise DataError(
                f"{raw_dir / name}: {why}. The raw copy no longer stands for its source, so "
                f"it was not prepared; fetch it again (`ssmbench fetch --benchmark "
                f"{raw_dir.name} --dataset {name}`, or rerun the workflow). The prepared "
                f"folder {out_dir / name}, if any, was kept."
            )
        return SOURCES[source].prepare(name, raw_dir, out_dir, settings)


def raw_copy_problem(name: str, raw_dir: str | Path, settings: dict) -> str | None:
    """Why the fetched raw copy ``<raw_dir>/<name>/`` no longer stands for where
    ``settings`` take the dataset from (another ``archive_dir`` or ``local_dir``, a source
    file changed in place since the fetch, a copy that failed to prepare: marked rejected
    by `reject_raw_copy`); None when it does, when nothing was fetched, or for a source
    without such a check. Without network; an unchanged source file (same path, size,
    times and inode as at the fetch) is not read, a changed one is hashed."""
    rejected = rejected_copy_problem(Path(raw_dir) / name)
    if rejected is not None:
        return rejected
    check = SOURCES[_source(settings)].raw_copy_problem
    return None if check is None else check(name, Path(raw_dir), _complete(settings))


def rejected_copy_problem(dest: Path) -> str | None:
    """Why the raw copy ``dest`` stands for no data: it failed to prepare (its
    ``provenance.json`` moved aside to :data:`REJECTED` with the error, and not fetched
    again since); None otherwise. The prepared folder made before is kept, but a record made
    from it no longer stands for the source: the fetch, the prepare and the run are due."""
    if (dest / PROVENANCE).exists() or not (dest / REJECTED).is_file():
        return None
    try:
        error = json.loads((dest / REJECTED).read_text(encoding="utf-8"))["rejected"]["error"]
    except (OSError, ValueError, KeyError, TypeError):
        error = f"see {dest / REJECTED}"
    return f"it failed to prepare ({error})"


def source_files(name: str, settings: dict) -> list[Path]:
    """The user's files a fetch of ``name`` copies (``archive_dir``'s, ``local_dir``'s), as
    far as they exist; none for a download or a generated dataset. The workflow makes them
    the fetch rule's inputs: a source file newer than the raw copy's ``provenance.json``
    fetches again, and the fetch decides by content whether it changed."""
    files = SOURCES[_source(settings)].source_files
    return [] if files is None else files(name, _complete(settings))


def check_available(name: str, raw_dir: str | Path, settings: dict) -> None:
    """Raise DataError if `name` cannot be fetched (decided without network): settings its
    source would reject, or not fetched yet, and neither a local copy nor (allowed)
    download can supply it. A derived dataset is checked through its base (see
    ``ssmbench.config.check_suite_sources``)."""
    source, settings = SOURCES[_source(settings)], _complete(settings)
    if source.check_recipe is not None:
        source.check_recipe(name, settings)
    if (Path(raw_dir) / name / PROVENANCE).is_file():
        return
    if source.locate is not None:
        source.locate(name, settings)


def data_settings(settings: dict, name: str | None = None) -> str:
    """The settings dataset ``name``'s content depends on (its source's ``content_keys``,
    where it comes from included: ``archive_dir``, ``local_dir``, ``revision``), as stable
    JSON: the workflow passes it to fetch/prepare as a rule param, so changing them fetches
    and prepares the dataset again. With ``name``, a source's ``content_values`` give the
    values for that dataset (UEA: the one folder of an ``archive_dir`` list it is read
    from, so a folder added to the list that does not hold it changes nothing)."""
    source, settings = SOURCES[_source(settings)], _complete(settings)
    values = {k: settings.get(k) for k in source.content_keys}
    if name is not None and source.content_values is not None:
        values.update(source.content_values(name, settings))
    return json.dumps(values, sort_keys=True)
