"""What a run's record holds, and its curve's columns: `write_run` builds both and
publishes them as one unit (``ssmbench.train.record_files``; the keys: docs/contracts.md)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ssmbench.staleness import sha256_hex
from ssmbench.train.epoch_test_scores import (
    SCORES_FILE_KEY,
    SCORES_SHA256_KEY,
    scores_path_of,
    scores_text,
)
from ssmbench.train.record_files import curve_path_of, publish_record
from ssmbench.train.records import provenance

#: a run's curve file, one row per epoch (validation columns empty between validations)
CURVE_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds")


def write_run(
    spec, record_path: Path, curve: list[dict], objective, results: dict,
    test_scores: list[dict] | None = None,
) -> dict:  # fmt: skip
    """Publish the run's curve and record as one unit (``ssmbench.train.record_files``):
    docs/contracts.md. ``test_scores`` (protocol ``epoch_test_scores``): the test split's
    scores per validated epoch, published beside them in their own file
    (``ssmbench.train.epoch_test_scores``), which the record names with its sha256."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CURVE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(curve)

    fold, settings = int(spec["fold"]), spec["settings"]
    record = {
        "benchmark": spec["benchmark"],
        "dataset": spec["dataset"],
        "model": spec["model"],
        "family": spec["model_params"]["family"],
        "fold": fold,
        "seed": int(settings.get("seed_base", 0)) + fold,
        "task": objective.task,
        **results,
        "model_params": spec["model_params"],
        "protocol": settings,
        # the tuned file whose values are in model_params / protocol (the tune stage)
        "tuned": spec.get("tuned"),
        # the place of params.yaml (or the tuned file) each value came from (precedence)
        "origins": spec.get("origins"),
        "dataset_sha256": spec.get("dataset_sha256"),
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
    record.update(provenance())
    return publish_record(record_path, record, buffer.getvalue(), extra)
