"""Datasets: fetching raw files, preparing them in the common format, opening them.

* :mod:`ssmbench.data.catalog` — what is known about each dataset (domain, shape, size).
* :mod:`ssmbench.data.sources` — fetch / prepare / pre-flight check, by benchmark source.
* :mod:`ssmbench.data.uea` — the UEA archive's files, fetched: :func:`fetch_uea`;
  :mod:`ssmbench.data.uea_prepare` — prepared: :func:`prepare_uea`; the ``.ts`` reader:
  :mod:`ssmbench.data.ts_reader`.
* :mod:`ssmbench.data.monster` — MONSTER from the Hugging Face Hub or a local copy;
  :mod:`ssmbench.data.monster_prepare` — prepared (its chunked ``.npy`` reader/writer:
  :mod:`ssmbench.data.npy_chunks`).
* :mod:`ssmbench.data.physiome` — Physiome-ODE, generated with myokit or from Zenodo.
* :mod:`ssmbench.data.fading_flash` — TIDES' Fading Flash task, generated.
* :mod:`ssmbench.data.drop_rate` — drop-rate variants of a prepared dataset (TIDES).
* :mod:`ssmbench.data.store` — the prepared format (``docs/contracts.md``):
  :class:`PreparedDataset`; :mod:`ssmbench.data.validation_split` — the
  early-stopping validation rows (:func:`stratified_validation_split`, the authors' split).
* Shared by the sources: :mod:`ssmbench.data.download` (verified, resumable download, safe
  extraction, stage-then-replace install), :mod:`ssmbench.data.checksums` (the file
  hasher, ``SHA256SUMS``), :mod:`ssmbench.data.provenance` (``provenance.json``).
"""

from ssmbench.data.catalog import UEA_DATASETS, known_datasets
from ssmbench.data.errors import DataError
from ssmbench.data.store import PreparedDataset
from ssmbench.data.uea import fetch_uea
from ssmbench.data.uea_prepare import prepare_uea
from ssmbench.data.validation_split import stratified_validation_split

__all__ = [
    "DataError",
    "PreparedDataset",
    "UEA_DATASETS",
    "fetch_uea",
    "known_datasets",
    "prepare_uea",
    "stratified_validation_split",
]
