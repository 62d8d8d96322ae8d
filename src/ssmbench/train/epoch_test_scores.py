"""The test split scored at every validated epoch: a diagnostic of selection optimism,
kept apart from the run's results (protocol ``epoch_test_scores``; off by default).

Several reference codes of this field choose the tested epoch on the test split
(docs/protocol.md says which, file and line). What that would have bought is measurable
only if a run also scores its test rows at each epoch: with ``epoch_test_scores: true`` it
does, and publishes those scores in ``fold{k}.test_scores.csv`` beside its record, in the
same unit as the record and its curve (``record.publish_record``). The record names
the file and holds its sha256 (``SCORES_FILE_KEY``, ``SCORES_SHA256_KEY``).

Nothing that decides a run reads these scores. Selection, early stopping and tuning see
the validation rows only; the test rows are scored in eval mode without gradients and draw
no random numbers, so a run trains, selects and tests the same epoch with or without them
(tests/test_epoch_test_scores.py). A tuning trial has no test rows and scores none. A
non-finite test loss is kept as NaN and never stops the run: the diagnostic must not
change its outcome. The only reader is the report's selection-optimism table
(``ssmbench.report.selection_optimism``); the main tables, the scorecard and summary.json
never open the file.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from ssmbench.staleness import SCORES_FILE_KEY, SCORES_SHA256_KEY  # noqa: F401 (re-exported)

#: the columns of a run's test scores, one row per validated epoch
SCORES_COLUMNS = ("epoch", "test_loss", "test_accuracy")


def scores_path_of(record_path: str | Path) -> Path:
    """The test scores beside a record: ``fold{k}.json`` -> ``fold{k}.test_scores.csv``."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.stem + ".test_scores.csv")


def score_epoch(data, model, batch_size: int, device, epoch: int, name: str) -> dict:
    """One row of the test scores: the test rows' loss and accuracy (regression: MSE and
    NaN) with the model's weights at the end of `epoch`. A non-finite loss is NaN here,
    not a divergence: only the training and validation losses decide a run's fate."""
    from ssmbench.train.checks import DivergedError

    try:
        loss, accuracy = data.score(
            model, data.test_idx, batch_size, device, f"[{name}] test scores, epoch {epoch}"
        )[:2]
    except DivergedError:
        loss, accuracy = math.nan, math.nan
    return {"epoch": epoch, "test_loss": float(loss), "test_accuracy": float(accuracy)}


def scores_text(rows: list[dict]) -> str:
    """The test scores file's content (CSV, ``SCORES_COLUMNS``)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SCORES_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
