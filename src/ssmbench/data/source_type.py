"""The `Source` type: what one data source (params.yaml ``benchmarks.<b>.source``) does.

Each source is one `Source` object in a folder of its own, ``data/<name>/source.py``
(``uea/source.py``, ``uea6/source.py``, ...), registered in ``SOURCES``
(``source_registry.py``); the steps of ``sources.py`` (fetch, prepare, the pre-flight
check, the content settings, the base of a derived dataset) dispatch through that table,
and the catalog, the params schema and ``ssmbench.plan`` ask it what they need to know of a
source (its rows, its settings, its split rule). Every folder holds the same roles under
the same names: ``source.py`` (its ``SOURCE``), ``fetch.py`` (raw files, where it has
any), ``prepare.py`` (the prepared folder), ``catalog.py`` (its rows) and
``params.schema.yaml`` (its settings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ssmbench.data.source_settings import SourceSettings, read_source_settings


@dataclass(frozen=True)
class Source:
    """One data source's operations; ``name`` is a dataset name, ``settings`` the
    benchmark's settings (params.yaml ``benchmarks.<b>``, dataset overrides merged).

    A source has raw files (``fetch``) or is made by a recipe (``recipe``), never both:

    * ``prepare(name, raw_dir, out_dir, settings) -> Path``: write the prepared folder
      ``<out_dir>/<name>/`` and return it (``sources.prepare`` holds the lock).
    * ``content_keys``: the settings the prepared content depends on, where it comes from
      included (``archive_dir``, ``local_dir``, ``revision``) (``data_settings``: changing
      one fetches and prepares the dataset again).
    * ``content_values(name, settings) -> dict``: the values of ``content_keys`` for one
      dataset where they are not the settings' own (``uea``: the folder of an
      ``archive_dir`` list that holds it); None: the settings' own.
    * ``fetch(name, raw_dir, settings, force) -> dict``: put the raw files under
      ``<raw_dir>/<name>/`` and return their provenance (``force``: fetch again even when
      the copy matches its provenance).
    * ``recipe(name, settings) -> dict``: for a generated or derived source (no raw
      files), what its fetch records in ``provenance.json``; a new recipe is recorded
      anew, so the dataset is prepared again.
    * ``locate(name, settings)``: raise DataError if a dataset not fetched yet cannot be
      fetched (decided without network); None: nothing to check.
    * ``check_recipe(name, settings)``: raise DataError for settings the source would
      reject (unknown generator keys, a bad split), before any job runs; None: none.
    * ``derived_from(name, settings) -> (benchmark, dataset)``: for a source made from a
      prepared dataset of another benchmark, which one; None: not derived.
    * ``source_files(name, settings) -> list[Path]``: the user's files a fetch copies (a
      local archive folder's), as far as they exist; the workflow makes them the fetch
      rule's inputs, so a newer one fetches again. None: none (a download, a recipe).
    * ``raw_copy_problem(name, raw_dir, settings) -> str | None``: why the fetched raw copy
      ``<raw_dir>/<name>/`` no longer stands for where ``settings`` take the data from
      (another folder, a source file changed since the fetch), decided without network
      and without reading an unchanged file; None: it does, or nothing was fetched.
    * ``catalog() -> {benchmark: {name: row}}``: what the source knows of its datasets
      before they are fetched (its folder's ``catalog.py``; a row's keys:
      ``ssmbench.data.catalog_entry``), gathered by ``ssmbench.data.catalog``; None: none.
    * ``settings_schema``: its folder's ``params.schema.yaml``, the settings it reads
      (``settings``: ``source_settings.py`` says what it declares); None: none of its own.
    * ``split_rows(name, settings, size, val_fraction) -> (n_train, n_val, n_test) |
      None``: a run's row counts by the source's split rule, before any data are read,
      from the dataset's size (``sizes.DatasetSize``: the catalog's, else the prepared
      folder's; None: not known) and the run's ``val_fraction`` (``split_rows.py``);
      None: the rule cannot tell, or there is none (``ssmbench.plan.row_counts`` then has
      a fifth tested).
    * ``archive_folder(name, settings) -> Path | None``: the folder of the user's local
      archive the dataset is fetched from, ``<root>/<name>/``, where its fetch reads that
      folder as well when it holds the fetched files ``.xz``-compressed with a
      ``SHA256SUMS`` (``ssmbench offline pack`` carries it so); None: no such folder.
    """

    prepare: Callable[[str, Path, Path, dict], Path]
    content_keys: tuple[str, ...]
    content_values: Callable[[str, dict], dict] | None = None
    fetch: Callable[[str, Path, dict, bool], dict] | None = None
    recipe: Callable[[str, dict], dict] | None = None
    locate: Callable[[str, dict], None] | None = None
    check_recipe: Callable[[str, dict], None] | None = None
    derived_from: Callable[[str, dict], tuple[str, str]] | None = None
    source_files: Callable[[str, dict], list[Path]] | None = None
    raw_copy_problem: Callable[[str, Path, dict], str | None] | None = None
    catalog: Callable[[], dict[str, dict[str, dict]]] | None = None
    settings_schema: Path | None = None
    split_rows: Callable[..., tuple[int, int, int] | None] | None = None
    archive_folder: Callable[[str, dict], Path | None] | None = None

    @property
    def settings(self) -> SourceSettings:
        """The settings it reads: its keys' JSON Schema, those a dataset may set for
        itself, who reads each (``settings_schema``'s, read once per process)."""
        if self.settings_schema is None:
            return SourceSettings()
        return read_source_settings(self.settings_schema)

    def __post_init__(self) -> None:
        if (self.fetch is None) == (self.recipe is None):
            raise TypeError("a Source has either fetch (raw files) or recipe (made), not both")
        if self.derived_from is not None and self.recipe is None:
            raise TypeError("a derived Source is made from its base: it has a recipe")
