"""Datasets: fetching raw files, preparing them in the common format, opening them.

* :mod:`ssmbench.data.catalog` — what is known about each dataset (domain, shape, size),
  gathered from the sources' rows.
* :mod:`ssmbench.data.sources` — fetch / prepare / pre-flight check, by benchmark source,
  through the source table (:mod:`ssmbench.data.source_registry`).
* One folder per source, each with ``source.py`` (its `Source`), ``fetch.py``,
  ``prepare.py``, ``catalog.py`` and ``params.schema.yaml``:
  :mod:`ssmbench.data.uea` — the UEA archive (:func:`fetch_uea`, :func:`prepare_uea`; the
  ``.ts`` reader: :mod:`ssmbench.data.uea.ts_reader`);
  :mod:`ssmbench.data.monster` — MONSTER from the Hugging Face Hub or a local copy (its
  chunked ``.npy`` reader/writer: :mod:`ssmbench.data.npy_chunks`);
  :mod:`ssmbench.data.physiome` — Physiome-ODE, generated with myokit or from Zenodo;
  :mod:`ssmbench.data.synthetic` — TIDES' Fading Flash task, generated;
  :mod:`ssmbench.data.uea_drop` — drop-rate variants of a prepared dataset (TIDES);
  :mod:`ssmbench.data.uea6` — UEA datasets under the Log-NCDE protocol.
* :mod:`ssmbench.data.store` — the prepared format (``docs/contracts.md``):
  :class:`PreparedDataset`; :mod:`ssmbench.data.validation_split` — the
  early-stopping validation rows (:func:`stratified_validation_split`, the authors' split).
* Shared by the sources: :mod:`ssmbench.data.download` (verified, resumable download, safe
  extraction, stage-then-replace install), :mod:`ssmbench.data.checksums` (the file
  hasher, ``SHA256SUMS``), :mod:`ssmbench.data.provenance` (``provenance.json``).
"""

from __future__ import annotations

import importlib

#: the names this package offers, each from the module that defines it, imported on first
#: use: a module of the package that needs only the standard library (checksums,
#: compressed, download, names, errors) is imported without numpy, for the steps that run
#: before the project's packages are installed (``ssmbench offline unpack``)
_EXPORTS = {
    "DataError": "ssmbench.data.errors",
    "PreparedDataset": "ssmbench.data.store",
    "UEA_DATASETS": "ssmbench.data.uea.catalog",
    "fetch_uea": "ssmbench.data.uea.fetch",
    "known_datasets": "ssmbench.data.catalog",
    "prepare_uea": "ssmbench.data.uea.prepare",
    "stratified_validation_split": "ssmbench.data.validation_split",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
