"""One row of the dataset catalog: what is known about a dataset before it is fetched.

Each source's folder holds its rows (``<source>/catalog.py``) as plain dicts, one table per
benchmark name (``{name: row}``); ``ssmbench.data.catalog`` gathers them through the source
table and turns each into a :class:`CatalogEntry`. A row's keys: ``domain``; ``task``
(default ``"classification"``); ``N`` (the rows; for a row that gives ``n_train`` and
``n_test`` instead, their sum), ``C``, ``L``, ``classes``; ``n_train``, ``n_test`` (an
official split's sizes, where one exists); ``source`` (where the data come from), ``ref``
(where the figures come from); ``aliases``, ``notes``; and ``expected_differences``
(:func:`compare_with_row`). A row carries the figures its source fixes before any data
exist; a field not known, or that only the prepared data give, is left out (or None)
rather than guessed.

**Checked against the data.** A source that reads its files' sizes compares them with its
row (:func:`compare_with_row`, on the fields it names). A difference that is known and
accepted is written into the row as ``expected_differences``: ``{field: {"data": the
value the files hold, "reason": why}}``; the value is pinned, so another value is still a
difference.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogEntry:
    """One dataset of either study, as known before it is fetched (``None``: not known).
    ``n_train`` and ``n_test`` are its official split's sizes, where it has one."""

    name: str
    benchmark: str
    domain: str
    task: str
    N: int | None
    C: int | None
    L: int | None
    n_classes: int | None
    source: str | None
    ref: str | None
    aliases: tuple[str, ...] = ()
    notes: str = ""
    n_train: int | None = None
    n_test: int | None = None


def catalog_row(
    domain, task, C=None, L=None, classes=None, N=None, source=None, ref=None, notes=""
):
    """A catalog row from its fields (those not known: None)."""
    return {
        "domain": domain,
        "task": task,
        "N": N,
        "C": C,
        "L": L,
        "classes": classes,
        "source": source,
        "ref": ref,
        "aliases": (),
        "notes": notes,
    }


def entry_of(benchmark: str, name: str, info: dict) -> CatalogEntry:
    """The :class:`CatalogEntry` of row ``info`` of ``benchmark``'s table."""
    n_train, n_test = info.get("n_train"), info.get("n_test")
    N = info.get("N")
    if N is None and n_train is not None and n_test is not None:
        N = n_train + n_test
    return CatalogEntry(
        name=name,
        benchmark=benchmark,
        domain=info["domain"],
        task=info.get("task", "classification"),
        N=N,
        C=info.get("C"),
        L=info.get("L"),
        n_classes=info.get("classes"),
        source=info.get("source"),
        ref=info.get("ref"),
        aliases=tuple(info.get("aliases", ())),
        notes=info.get("notes", ""),
        n_train=n_train,
        n_test=n_test,
    )


def row_named(table: dict[str, dict], name: str) -> tuple[str, dict] | None:
    """(the row's name, the row) of ``name`` or of a row that lists ``name`` among its
    ``aliases``; None when the table has neither."""
    if name in table:
        return name, table[name]
    return next(((k, v) for k, v in table.items() if name in v.get("aliases", ())), None)


def domain_in(table: dict[str, dict], name: str, default: str = "Other") -> str:
    """The domain of ``name`` (or of a row it is an alias of) in ``table``; ``default``
    when the table lacks it."""
    found = row_named(table, name)
    return default if found is None else found[1].get("domain", default)


def compare_with_row(
    where: str, info: dict | None, read: dict[str, int], fields: tuple[str, ...]
) -> dict:
    """What was read from a dataset's files (``read``: a value per field of ``fields``)
    against its catalog row ``info`` (``where``: ``"<benchmark>/<name>"``).

    Returns ``{"entry": where (None when there is no row), "compared": [the fields the
    row gives], "differences": [{"field", "catalog", "data", "reason"}]}``; ``reason`` is
    the row's ``expected_differences`` reason where it expects exactly that value, else
    None (an unexpected difference). A field the row leaves out (not known, e.g.
    InsectWingbeat's L) is not compared.
    """
    if info is None:
        return {"entry": None, "compared": [], "differences": []}
    expected = info.get("expected_differences") or {}
    compared, differences = [], []
    for field in fields:
        want, got = info.get(field), read.get(field)
        if want is None or got is None:
            continue
        compared.append(field)
        if want != got:
            known = expected.get(field) or {}
            reason = known.get("reason") if known.get("data") == got else None
            differences.append({"field": field, "catalog": want, "data": got, "reason": reason})
    return {"entry": where, "compared": compared, "differences": differences}
