"""A run's record and its curve: what they hold (`write_run`, `CURVE_COLUMNS`; the keys:
docs/contracts.md) and how they are published as one unit.

``fold{k}.json`` (the record) and ``fold{k}.curve.csv`` (its per-epoch curve) are the
run's two outputs. They are written so that a reader never takes a curve for the run of a
record it does not belong to:

1. both are staged first, complete and fsynced, under hidden names beside their targets
   (``.fold0.curve.csv.<id>.staged``, ``.fold0.json.<id>.staged``: no reader's pattern
   matches a dot name). A full disk or any other write error fails here, before anything
   is published: the previous record and curve stay as they were, and `RecordWriteError`
   names the file and says so;
2. the curve is renamed into place, then the record, last: a record exists only if its
   run finished. The record holds the curve's sha256 (``curve_sha256``), so a process
   killed between the two renames leaves an old record beside a curve that does not
   match it, which every reader sees (``ssmbench.staleness.curve_problem``): the record
   is not current, the curve is not trusted. When the record's rename fails, the previous
   curve is put back.

A run may publish files of its own beside these (``extra``: the test scores of
``ssmbench.train.epoch_test_scores``). They are staged with the others, so that a write
error publishes nothing, and renamed into place first; the record holds their sha256, so
one left beside an older record by a failed rename is seen not to belong to it.

Where, when and how long the run ran (host, commit, times, each epoch's seconds) is in
its provenance file, ``fold{k}.provenance.json`` (``ssmbench.train.provenance``),
published first with the others; it holds the record's sha256, so that the record and
the curve hold only what the run computed and a rerun of the same code, data and settings
writes them byte for byte as they were.

The record holds the sha256 of its own content (``content_sha256``,
``ssmbench.staleness.sealed``), so a record changed after it was written is seen by every
reader too.

Leftovers of a killed publication (staged files, a kept previous curve) are removed by
the run's next publication. Removing a leftover or a staged file is never what fails a
publication: one that cannot be removed (a read-only folder) stays for the next, and the
error that stopped the publication is the one reported. A folder that takes no writes
(read-only, no permission) is named in the error with what to do.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import uuid
from collections.abc import Mapping
from pathlib import Path

from ssmbench.io import atomic_write_json, atomic_write_text
from ssmbench.staleness import (
    CONTENT_SHA256_KEY,
    CURVE_FILE_KEY,
    CURVE_SHA256_KEY,
    sealed,
    sha256_hex,
)
from ssmbench.train.epoch_test_scores import (
    SCORES_FILE_KEY,
    SCORES_SHA256_KEY,
    scores_path_of,
    scores_text,
)
from ssmbench.train.provenance import (
    EPOCH_SECONDS_KEY,
    RUN_FACT_KEYS,
    provenance,
    provenance_path_of,
    provenance_text,
)

#: a run's curve file, one row per epoch (validation columns empty between validations);
#: each epoch's wall-clock seconds are in the run's provenance file (``epoch_seconds``)
CURVE_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy")

STAGED_SUFFIX = ".staged"
PREVIOUS_SUFFIX = ".previous"
#: the causes that say the folder takes no writes at all (not a full disk)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class RecordWriteError(OSError):
    """A run's record or curve that could not be written; the message names the file,
    the cause, and what was kept. ``errno`` is the cause's."""

    def __init__(self, message: str, cause: OSError):
        super().__init__(message)
        self.errno = cause.errno


def curve_path_of(record_path: Path) -> Path:
    """The curve file beside a record: ``fold{k}.json`` -> ``fold{k}.curve.csv``."""
    return record_path.with_name(record_path.stem + ".curve.csv")


def _hidden(path: Path, tag: str, suffix: str) -> Path:
    return path.with_name(f".{path.name}.{tag}{suffix}")


def _discard(*paths: Path) -> None:
    """Remove files that are not part of any published unit (staged files, kept previous
    curves), as far as the folder allows: no reader's pattern matches their dot names,
    and one left behind is removed by the run's next publication."""
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError:  # a read-only folder says EROFS even for a missing file
            pass


def _remove_leftovers(*targets: Path) -> None:
    """Staged files and kept previous curves of earlier publications that were killed."""
    for target in targets:
        for suffix in (STAGED_SUFFIX, PREVIOUS_SUFFIX):
            _discard(*target.parent.glob(f".{target.name}.*{suffix}"))


def _describe(exc: OSError) -> str:
    code = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    cause = exc.strerror or str(exc) or type(exc).__name__
    return f"{cause} ({code})" if code else cause


def _what_to_do(exc: OSError, folder: Path) -> str:
    """For a folder that takes no writes: which one (the record's, or the nearest that
    exists when it cannot be made), and what to do."""
    if exc.errno not in NOT_WRITABLE:
        return ""
    while not folder.is_dir() and folder.parent != folder:
        folder = folder.parent
    return (
        f"; the folder {folder} takes no writes: make it writable (or set paths.runs to a "
        "folder that is) and run the job again"
    )


def publish_record(
    record_path: str | os.PathLike,
    record: dict,
    curve_text: str,
    extra: Mapping[Path, str] | None = None,
    facts: dict | None = None,
) -> dict:
    """Publish ``record`` at `record_path` and ``curve_text`` beside it
    (`curve_path_of`), as the module docstring says; ``extra``: {path beside the record:
    its text}, published before them (the record holds their sha256: the caller's keys).
    ``facts``: where, when and how long the run ran, published before them in the
    record's provenance file (``ssmbench.train.provenance``), which holds the record's
    sha256 rather than the reverse, so that the record is the same for every rerun.
    Returns the record as written: with ``curve_file``, ``curve_sha256`` and the sha256
    of its own content (``content_sha256``). `RecordWriteError` if any of them cannot be
    written."""
    record_path = Path(record_path)
    curve_path = curve_path_of(record_path)
    record = {
        **record,
        CURVE_FILE_KEY: curve_path.name,
        CURVE_SHA256_KEY: sha256_hex(curve_text.encode("utf-8")),
    }
    record = sealed(record)  # a NaN stays: atomic_write_json refuses it, naming the field
    had_record = record_path.is_file()
    kept = (
        f"the previous record {record_path.name} and its curve were kept"
        if had_record
        else "no record or curve was published"
    )
    tag = uuid.uuid4().hex
    staged_curve = _hidden(curve_path, tag, STAGED_SUFFIX)
    staged_record = _hidden(record_path, tag, STAGED_SUFFIX)
    extra = {Path(path): text for path, text in (extra or {}).items()}
    if facts is not None:
        extra[provenance_path_of(record_path)] = provenance_text(facts, record[CONTENT_SHA256_KEY])
    staged_extra = {path: _hidden(path, tag, STAGED_SUFFIX) for path in extra}
    writing = record_path.parent
    try:
        record_path.parent.mkdir(parents=True, exist_ok=True)
        _remove_leftovers(curve_path, record_path, *extra)
        for path, text in extra.items():
            writing = path
            atomic_write_text(staged_extra[path], text)
        writing = curve_path
        atomic_write_text(staged_curve, curve_text)
        writing = record_path
        atomic_write_json(staged_record, record)
    except BaseException as exc:  # a full disk, a value JSON cannot hold, a signal...
        _discard(staged_curve, staged_record, *staged_extra.values())
        if isinstance(exc, OSError):
            message = (
                f"could not write {writing}: {_describe(exc)}; {kept}"
                f"{_what_to_do(exc, record_path.parent)}"
            )
            raise RecordWriteError(message, exc) from exc
        raise
    for path, staged in staged_extra.items():
        try:
            os.replace(staged, path)
        except OSError as exc:
            _discard(staged_curve, staged_record, *staged_extra.values())
            raise RecordWriteError(
                f"could not publish {path}: {_describe(exc)}; {kept}"
                f"{_what_to_do(exc, record_path.parent)}",
                exc,
            ) from exc
    _rename_pair(staged_curve, curve_path, staged_record, record_path, tag, kept)
    return record


def _rename_pair(
    staged_curve: Path, curve_path: Path, staged_record: Path, record_path: Path, tag: str,
    kept: str,
) -> None:  # fmt: skip
    """Curve into place, then the record; the previous curve back if the record's rename
    fails (a hard link keeps it meanwhile, where the file system has them)."""
    previous = _hidden(curve_path, tag, PREVIOUS_SUFFIX)
    try:
        os.link(curve_path, previous)
    except OSError:
        previous = None  # no previous curve, or no hard links here
    try:
        os.replace(staged_curve, curve_path)
        try:
            os.replace(staged_record, record_path)
        except OSError:
            if previous is not None:
                os.replace(previous, curve_path)
            else:
                curve_path.unlink(missing_ok=True)
            raise
    except OSError as exc:
        _discard(staged_curve, staged_record)
        raise RecordWriteError(
            f"could not publish {record_path}: {_describe(exc)}; {kept}"
            f"{_what_to_do(exc, record_path.parent)}",
            exc,
        ) from exc
    finally:
        if previous is not None:
            _discard(previous)


def write_run(
    spec, record_path: Path, curve: list[dict], objective, results: dict,
    test_scores: list[dict] | None = None,
) -> dict:  # fmt: skip
    """Publish the run's curve and record as one unit (``ssmbench.train.record``):
    docs/contracts.md. ``test_scores`` (protocol ``epoch_test_scores``): the test split's
    scores per validated epoch, published beside them in their own file
    (``ssmbench.train.epoch_test_scores``), which the record names with its sha256. The
    results' ``RUN_FACT_KEYS`` and each curve row's ``seconds`` go to the provenance file
    with `provenance()` (``ssmbench.train.provenance``)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CURVE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row.get(k) for k in CURVE_COLUMNS} for row in curve)
    facts = {
        **provenance(),
        **{k: results[k] for k in RUN_FACT_KEYS if k in results},
        EPOCH_SECONDS_KEY: [row.get("seconds") for row in curve],
    }
    results = {k: v for k, v in results.items() if k not in RUN_FACT_KEYS}

    fold, settings = int(spec["fold"]), spec["settings"]
    record = {
        "benchmark": spec["benchmark"],
        "dataset": spec["dataset"],
        "model": spec["model"],
        "family": spec["model_params"]["family"],
        "fold": fold,
        "seed": int(settings["seed_base"]) + fold,
        "task": objective.task,
        **results,
        "model_params": spec["model_params"],
        "protocol": settings,
        # the tuned file whose values are in model_params / protocol (the tune stage)
        "tuned": spec.get("tuned"),
        # the place of params.yaml (or the tuned file) each value came from (precedence)
        "origins": spec.get("origins"),
        "dataset_sha256": spec.get("dataset_sha256"),
        # the sha256 of each prepared file trained on (meta.json prepared_files)
        "prepared_sha256": spec.get("prepared_sha256"),
        # what the dataset's preparation warned of (meta.json warnings: a declared subset
        # of the catalog's rows, a difference from the catalog); [] when nothing
        "data_warnings": spec.get("data_warnings", []),
        "code_digest": spec.get("code"),
        "curve_file": curve_path_of(record_path).name,
    }
    extra = {}
    if test_scores is not None:
        text = scores_text(test_scores)
        path = scores_path_of(record_path)
        record[SCORES_FILE_KEY] = path.name
        record[SCORES_SHA256_KEY] = sha256_hex(text.encode("utf-8"))
        extra[path] = text
    return publish_record(record_path, record, buffer.getvalue(), extra, facts)
