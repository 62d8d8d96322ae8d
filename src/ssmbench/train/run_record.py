"""What a run's record holds, and its curve's columns: `write_run` builds both and
publishes them as one unit (``ssmbench.train.record_files``; the keys: docs/contracts.md)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ssmbench.train.record_files import curve_path_of, publish_record
from ssmbench.train.records import provenance

#: a run's curve file, one row per epoch (validation columns empty between validations)
CURVE_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds")


def write_run(spec, record_path: Path, curve: list[dict], objective, results: dict) -> dict:
    """Publish the run's curve and record as one unit (``ssmbench.train.record_files``):
    docs/contracts.md."""
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
        "dataset_sha256": spec.get("dataset_sha256"),
        "code_digest": spec.get("code"),
        "curve_file": curve_path_of(record_path).name,
    }
    record.update(provenance())
    return publish_record(record_path, record, buffer.getvalue())
