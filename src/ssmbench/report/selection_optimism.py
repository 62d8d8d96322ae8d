"""What choosing the tested epoch on the test split would have bought: per cell, ours
beside "ours if the test split had chosen the epoch" and the paper's, strictly apart from
our results.

Runs made with protocol ``epoch_test_scores`` publish their test split's scores at every
validated epoch beside their record (``ssmbench.train.epoch_test_scores``). This module is
the only reader of those files. For each such run:

* ``tested``: the record's test error, at the epoch the validation split chose;
* ``test_selected``: the lowest test error over the validated epochs (the epoch a
  protocol that selects on the test split by accuracy would have tested, as several
  reference codes do: docs/protocol.md);
* ``optimism = tested − test_selected`` (≥ 0): how much lower a test-selected protocol
  would have printed this run's error.

A file that is missing or is not the one its record names (sha256) is left out with a
warning, and the table says how many runs it covers. Regression runs are left out (the
diagnostic is about accuracy-selected epochs). The table (``selection_optimism``) has one
row per (benchmark, dataset, model) with ``n`` runs, then one row per model: the mean
over its datasets ("mean").
"""

from __future__ import annotations

import io
import logging
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ssmbench.staleness import sha256_hex
from ssmbench.train.epoch_test_scores import SCORES_COLUMNS, SCORES_FILE_KEY, SCORES_SHA256_KEY

from .context import DrawContext
from .tables import write_table

log = logging.getLogger(__name__)

RUN_COLUMNS = (
    "benchmark", "dataset", "model", "fold", "tested", "tested_epoch", "test_selected",
    "test_selected_epoch", "optimism",
)  # fmt: skip
TABLE_COLUMNS = (
    "benchmark", "dataset", "model", "n", "ours", "ours if test-selected", "optimism", "paper",
)  # fmt: skip
#: the dataset column of a model's row of means
MEAN_ROW = "mean"
DECIMALS = 3
NO_RUNS = "no run of these records scored its test split per epoch (protocol epoch_test_scores)"


def _scores_of(runs_dir: Path, row) -> pd.DataFrame | None:
    """The test scores a record row names, or None (with a warning) when the file is
    missing or not the one the record was written with."""
    record_path = runs_dir / row["record_path"]
    name = row[SCORES_FILE_KEY]
    path = record_path.parent / str(name)
    if Path(str(name)).name != str(name):
        log.warning("%s: test_scores_file %r is not a file name beside it: left out",
                    record_path, name)  # fmt: skip
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("%s: its test scores %s cannot be read (%s): left out",
                    record_path, path.name, exc.strerror or exc)  # fmt: skip
        return None
    if sha256_hex(data) != row.get(SCORES_SHA256_KEY):
        log.warning("%s: its test scores %s are not the ones written with it (sha256): "
                    "left out", record_path, path.name)  # fmt: skip
        return None
    try:
        scores = pd.read_csv(io.BytesIO(data))
    except (ValueError, pd.errors.ParserError) as exc:  # empty, ragged, not UTF-8
        log.warning("%s: not a table of test scores (%s): left out", path,
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__)  # fmt: skip
        return None
    if tuple(scores.columns) != SCORES_COLUMNS:
        log.warning("%s: columns %s, expected %s: left out", path, list(scores.columns),
                    list(SCORES_COLUMNS))  # fmt: skip
        return None
    return scores


def selection_optimism_runs(records: pd.DataFrame, runs_dir: str | os.PathLike) -> pd.DataFrame:
    """One row per classification run whose record names its test scores (``RUN_COLUMNS``);
    empty when none does."""
    runs_dir = Path(runs_dir)
    rows = []
    if SCORES_FILE_KEY not in records.columns:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    for _, row in records.iterrows():
        name = row[SCORES_FILE_KEY]
        if not isinstance(name, str) or row.get("task", "classification") != "classification":
            continue
        scores = _scores_of(runs_dir, row)
        if scores is None:
            continue
        acc = pd.to_numeric(scores["test_accuracy"], errors="coerce")
        if acc.isna().all():
            log.warning("%s: no finite test accuracy in its test scores: left out",
                        row["record_path"])  # fmt: skip
            continue
        # the epoch a test-selected protocol tests: best accuracy, then lowest loss, earliest
        order = scores.assign(acc=acc.fillna(-np.inf)).sort_values(
            ["acc", "test_loss", "epoch"], ascending=[False, True, True], kind="stable"
        )
        best = order.iloc[0]
        tested = float(row["test_error"])
        selected = 1.0 - float(best["acc"])
        tested_epoch = row.get("best_epoch")
        at_tested = scores.loc[scores["epoch"] == tested_epoch, "test_accuracy"]
        if len(at_tested) and not math.isclose(1.0 - float(at_tested.iloc[0]), tested,
                                               abs_tol=1e-9):  # fmt: skip
            log.warning(
                "%s: its test scores at the tested epoch %s (error %.6f) differ from the "
                "record's test error %.6f (a nondeterministic device?)",
                row["record_path"], tested_epoch, 1.0 - float(at_tested.iloc[0]), tested,
            )  # fmt: skip
        rows.append({
            "benchmark": row["benchmark"], "dataset": row["dataset"], "model": row["model"],
            "fold": int(row["fold"]), "tested": tested, "tested_epoch": tested_epoch,
            "test_selected": selected, "test_selected_epoch": int(best["epoch"]),
            "optimism": tested - selected,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


def _fmt(value: float) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{DECIMALS}f}"


def _fmt_pm(mean: float, std: float) -> str:
    if mean is None or not np.isfinite(mean):
        return "–"
    return f"{mean:.{DECIMALS}f} ± {std:.{DECIMALS}f}" if np.isfinite(std) else _fmt(mean)


def selection_optimism_table(runs: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, dataset, model): ``n`` runs, ours (mean ± population std of the
    tested errors), ours if test-selected (the same for ``test_selected``), the mean
    optimism and the paper's error (``paper``: a per-dataset frame,
    ``results.PER_DATASET_COLUMNS``); then per (benchmark, model) the means over its
    datasets (dataset ``mean``; the paper's mean over the same datasets, where it has
    them all). Formatted to 3 decimals, as the paper prints."""
    if runs.empty:
        return pd.DataFrame([{c: NO_RUNS if c == "benchmark" else "" for c in TABLE_COLUMNS}])
    published = {
        (r.benchmark, r.dataset, r.model): float(r.error) for r in paper.itertuples(index=False)
    }
    cells = (
        runs.groupby(["benchmark", "dataset", "model"], sort=True)
        .agg(
            n=("fold", "size"),
            ours=("tested", "mean"),
            ours_std=("tested", lambda s: s.std(ddof=0)),
            selected=("test_selected", "mean"),
            selected_std=("test_selected", lambda s: s.std(ddof=0)),
            optimism=("optimism", "mean"),
        )
        .reset_index()
    )
    cells["paper"] = [
        published.get((b, d, m), np.nan)
        for b, d, m in zip(cells["benchmark"], cells["dataset"], cells["model"], strict=True)
    ]
    rows = [
        {
            "benchmark": c.benchmark, "dataset": c.dataset, "model": c.model, "n": str(c.n),
            "ours": _fmt_pm(c.ours, c.ours_std),
            "ours if test-selected": _fmt_pm(c.selected, c.selected_std),
            "optimism": _fmt(c.optimism), "paper": _fmt(c.paper),
        }
        for c in cells.itertuples(index=False)
    ]  # fmt: skip
    for (bench, model), group in cells.groupby(["benchmark", "model"], sort=True):
        paper_mean = group["paper"].mean() if group["paper"].notna().all() else np.nan
        rows.append({
            "benchmark": bench, "dataset": MEAN_ROW, "model": model,
            "n": f"{int(group['n'].sum())} runs, {len(group)} datasets",
            "ours": _fmt(group["ours"].mean()),
            "ours if test-selected": _fmt(group["selected"].mean()),
            "optimism": _fmt(group["optimism"].mean()), "paper": _fmt(paper_mean),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def draw_table(ctx: DrawContext) -> dict[str, Path]:
    """The report's entry (outputs.py: ``selection_optimism``): the only reader of the
    runs' per-epoch test scores, kept apart from every result."""
    runs = selection_optimism_runs(ctx.records, ctx.runs_dir)
    return write_table(selection_optimism_table(runs, ctx.full_paper), ctx.stem)
