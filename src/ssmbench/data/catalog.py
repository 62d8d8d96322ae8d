"""What is known about each dataset before it is fetched: the catalog of both studies.

Each source's folder holds its rows (``<source>/catalog.py``: one table ``{name: row}`` per
benchmark name, ``ssmbench.data.catalog_entry`` says what a row holds), and its `Source`
gives them (``catalog``); this module gathers them through the source table
(``SOURCES``), in its order, so a new source's rows are listed by its registration alone.
The prepared ``meta.json`` holds the values actually read from the files; the catalog's are
for planning (batch sizes, resources), the report's domain grouping, and a check of what
was read (``catalog_entry.compare_with_row``).

:func:`catalog` returns every dataset of both studies as :class:`CatalogEntry` rows.
"""

from __future__ import annotations

from ssmbench.data.catalog_entry import CatalogEntry, domain_in, entry_of
from ssmbench.data.errors import DataError
from ssmbench.data.source_registry import SOURCES

__all__ = [
    "BENCHMARKS",
    "CatalogEntry",
    "catalog",
    "catalog_entry",
    "domain_of",
    "known_datasets",
]


def _tables() -> dict[str, dict[str, dict]]:
    """benchmark name -> its table of rows, every source's, in the source table's order:
    the sources' own tables (a row changed in one is seen here), asked each time."""
    tables: dict[str, dict[str, dict]] = {}
    for name, source in SOURCES.items():
        for benchmark, table in (source.catalog() if source.catalog else {}).items():
            if benchmark in tables:
                raise DataError(
                    f"source {name!r}: catalog benchmark {benchmark!r} is also another "
                    "source's; give each benchmark's rows one source"
                )
            tables[benchmark] = table
    return tables


BENCHMARKS: tuple[str, ...] = tuple(_tables())


def _match(kind: str, value: str, known: list[str]) -> str:
    for k in known:
        if k.lower() == value.lower():
            return k
    raise DataError(f"unknown {kind} {value!r}; known {kind}s: {', '.join(known)}")


def catalog(benchmark: str | None = None, domain: str | None = None) -> list[CatalogEntry]:
    """Every dataset of both studies (UEA, MONSTER, the TIDES tasks), in benchmark order.

    ``benchmark`` and ``domain`` filter (case-insensitive); an unknown value raises
    :class:`DataError` naming the known ones.
    """
    tables = _tables()
    entries = [
        entry_of(bench, name, info)
        for bench, table in tables.items()
        for name, info in table.items()
    ]
    if benchmark is not None:
        benchmark = _match("benchmark", benchmark, list(tables))
        entries = [e for e in entries if e.benchmark == benchmark]
    if domain is not None:
        domains = sorted({info["domain"] for t in tables.values() for info in t.values()})
        domain = _match("domain", domain, domains)
        entries = [e for e in entries if e.domain == domain]
    return entries


def catalog_entry(benchmark: str, name: str, source: str | None = None) -> CatalogEntry | None:
    """The row of ``name`` under ``benchmark``, else under ``source`` (a benchmark of that
    source under a name of its own: ``uea10``'s rows are ``uea``'s); None when neither
    table holds it."""
    tables = _tables()
    for bench in dict.fromkeys(b for b in (benchmark, source) if b is not None):
        info = tables.get(bench, {}).get(name)
        if info is not None:
            return entry_of(bench, name, info)
    return None


def known_datasets(benchmark: str) -> list[str]:
    """Names of the datasets of ``benchmark`` that the catalog describes, sorted."""
    tables = _tables()
    try:
        return sorted(tables[benchmark])
    except KeyError:
        raise DataError(
            f"benchmark {benchmark!r}: no dataset catalog for it; known benchmarks: "
            f"{sorted(tables)}. Check the benchmark name in params.yaml."
        ) from None


def domain_of(benchmark: str, name: str, default: str = "Other") -> str:
    """The catalog's domain of a dataset (or of one of its aliases), ``default`` when the
    catalog lacks it."""
    return domain_in(_tables().get(benchmark, {}), name, default)
