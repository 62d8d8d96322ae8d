"""A dataset's size as its runs will see it, known before any run: its catalog row
(``ssmbench.data.catalog``), else its prepared folder.

A dataset needs no catalog row to be fetched, prepared and trained on. What is known
about its size before then comes from the catalog; for one the catalog lacks (a user's
own), from its prepared folder once it is prepared: ``meta.json`` (``N``, ``C``, ``L``,
``n_classes``, ``task``, UEA's ``n_train`` and ``n_test``), and where meta.json lacks the
shape, the header of ``X.npy`` (read alone: the array is never opened). A catalog row that
lacks a field takes it from the prepared folder too. ``ssmbench plan`` reads sizes here;
a dataset known to neither is not estimated, with the reason and the command that
prepares it (:func:`unknown_size`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

from ssmbench.data.errors import DataError

__all__ = ["DatasetSize", "dataset_size", "prepared_size", "unknown_size"]


@dataclass(frozen=True)
class DatasetSize:
    """What is known of a dataset's size (``None``: not known) and where it came from:
    ``"catalog"``, or the prepared file read (``meta.json``, ``X.npy``'s header)."""

    N: int | None
    C: int | None
    L: int | None
    n_classes: int | None
    task: str
    n_train: int | None = None  # UEA: the archive's TRAIN rows
    n_test: int | None = None  # UEA: its TEST rows
    origin: str = "catalog"

    @property
    def shape_known(self) -> bool:
        return None not in (self.N, self.C, self.L)


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def prepared_size(folder: str | Path) -> DatasetSize | None:
    """The size of the prepared dataset ``folder`` (``<paths.prepared>/<benchmark>/<name>``)
    from its ``meta.json``, the shape from ``X.npy``'s header where meta.json lacks it;
    None where the folder holds neither. A file that cannot be read is a DataError naming
    it."""
    from ssmbench.data.npy_chunks import read_npy_header

    folder = Path(folder)
    meta_path, x_path = folder / "meta.json", folder / "X.npy"
    meta: dict = {}
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{meta_path}: not readable as JSON ({exc})") from exc
        if not isinstance(meta, dict):
            raise DataError(f"{meta_path}: not a JSON object")
    elif not x_path.is_file():
        return None
    shape = [_int(meta.get(k)) for k in ("N", "C", "L")]
    origin = str(meta_path)
    if None in shape and x_path.is_file():
        header = read_npy_header(x_path)[0]
        if len(header) == 3:
            shape, origin = list(header), f"{x_path} (header)"
    classes = meta.get("classes")
    n_classes = _int(meta.get("n_classes")) or (len(classes) if isinstance(classes, list) else None)
    return DatasetSize(
        N=shape[0],
        C=shape[1],
        L=shape[2],
        n_classes=n_classes,
        task=str(meta.get("task") or "classification"),
        n_train=_int(meta.get("n_train")),
        n_test=_int(meta.get("n_test")),
        origin=origin,
    )


def _catalog_size(benchmark: str, dataset: str, source: str) -> DatasetSize | None:
    from ssmbench.data.catalog import catalog_entry

    entry = catalog_entry(benchmark, dataset, source)
    if entry is None:
        return None
    return DatasetSize(
        N=entry.N,
        C=entry.C,
        L=entry.L,
        n_classes=entry.n_classes,
        task=entry.task,
        n_train=entry.n_train,
        n_test=entry.n_test,
    )


def dataset_size(
    prepared: str | Path, benchmark: str, dataset: str, source: str | None = None
) -> DatasetSize | None:
    """The size of ``benchmark/dataset``: its catalog row (under ``benchmark``, else its
    ``source``), each field the row lacks from the prepared folder
    ``<prepared>/<benchmark>/<dataset>`` (:func:`prepared_size`); None where neither
    knows it."""
    known = _catalog_size(benchmark, dataset, source or benchmark)
    complete = known is not None and known.shape_known
    if complete and (known.n_classes is not None or known.task == "regression"):
        return known
    prepared_known = prepared_size(Path(prepared) / benchmark / dataset)
    if known is None or prepared_known is None:
        return known or prepared_known
    filled = {
        f.name: getattr(prepared_known, f.name)
        for f in fields(DatasetSize)
        if getattr(known, f.name) is None and getattr(prepared_known, f.name) is not None
    }
    return replace(known, **filled, origin=f"catalog, {prepared_known.origin}") if filled else known


def unknown_size(prepared: str | Path, benchmark: str, dataset: str, suite: str) -> str:
    """Why ``benchmark/dataset``'s size is not known, and what to do: prepare it."""
    return (
        f"{benchmark}/{dataset}: not in the catalog (ssmbench.data.catalog) and not prepared "
        f"({Path(prepared) / benchmark / dataset / 'meta.json'} does not exist), so its size "
        f"is not known: prepare it first: snakemake --cores 1 prepared --config suite={suite}"
    )
