"""A run's provenance file beside its record, as its readers see it: where it is
(``fold{k}.json`` -> ``fold{k}.provenance.json``), which keys it holds, and reading it back
into the record it belongs to. ``ssmbench.train.provenance`` writes it (what a run
records of where, when and with what it ran); this module reads it, for the layers that
do not train (staleness, plan, the report)."""

from __future__ import annotations

import json
import os
from pathlib import Path

#: The keys ``provenance()`` adds to a record (where, when and with what it ran).
PROVENANCE_KEYS = (
    "versions",
    "git_commit",
    "git_dirty",
    "hostname",
    "cpu",
    "cpu_count",
    "platform",
    "gpu",
    "gpu_count",
    "cuda_visible_devices",
    "slurm_job_id",
    "slurm_restart_count",
    "slurm",
    "attempt",
    "argv",
    "created",
)

#: The keys of a run's results that go to its provenance file, not its record: they differ
#: from one run of the same code, data and settings to the next (wall-clock seconds; the
#: epochs and batches at which a stopped run was resumed, which change no result).
RUN_FACT_KEYS = ("train_seconds", "test_seconds", "resumed")
#: each epoch's wall-clock seconds (the curve's rows, in order)
EPOCH_SECONDS_KEY = "epoch_seconds"
#: the sha256 of the record's content (its ``content_sha256``) a provenance file belongs to
RECORD_SHA256_KEY = "record_sha256"
#: ``fold{k}.json`` -> ``fold{k}.provenance.json`` (.dvcignore names the pattern)
PROVENANCE_SUFFIX = ".provenance.json"


def provenance_path_of(record_path: str | os.PathLike) -> Path:
    """The provenance file beside a record: ``fold{k}.json`` -> ``fold{k}.provenance.json``."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.stem + PROVENANCE_SUFFIX)


def is_provenance_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a record's provenance file (not a record)."""
    return Path(path).name.endswith(PROVENANCE_SUFFIX)


def record_provenance(record_path: str | os.PathLike, record: dict) -> dict:
    """Where, when and how long the run of ``record`` (read from ``record_path``) ran:
    its provenance file's keys when the file belongs to this record (its
    ``record_sha256`` is the record's ``content_sha256``); the same keys from the record
    itself when it holds them (a record written before provenance had a file of its own);
    else ``{}``: not known (no file, one left by another run, or unreadable)."""
    inline = {k: record[k] for k in (*PROVENANCE_KEYS, *RUN_FACT_KEYS) if k in record}
    if inline:
        return inline
    try:
        facts = json.loads(provenance_path_of(record_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    sha = record.get("content_sha256")
    if not isinstance(facts, dict) or sha is None or facts.get(RECORD_SHA256_KEY) != sha:
        return {}
    return {k: v for k, v in facts.items() if k != RECORD_SHA256_KEY}


def with_provenance(record_path: str | os.PathLike, record: dict) -> dict:
    """``record`` with its provenance (`record_provenance`) merged in, for the readers of
    times, hosts and command lines (``ssmbench plan --check``, which suite made a record)."""
    return {**record, **record_provenance(record_path, record)}
