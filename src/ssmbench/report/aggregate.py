"""Run records -> one table (metrics.csv) -> per benchmark/model summary (summary.json).

Conventions (documented here because the paper leaves them implicit):

* a dataset's error is the mean ``test_error`` over its folds (runs); a model's error is
  the mean of those dataset errors (every dataset weighs the same, whatever its folds);
* a dataset's std is the population std (``ddof=0``, numpy's default) of ``test_error``
  over its folds, so a single run gives 0 rather than NaN; a model's std is their mean;
* ranks: per dataset the models are ranked by dataset error (1 = lowest, ties get the
  average rank), only on the datasets where *every* model of the benchmark has a result,
  and averaged over those datasets (``n_ranked_datasets``);
* params and MMac: mean over folds per dataset, then over datasets.

metrics.csv holds results only, so that a rerun with the same results leaves it byte for
byte as it was: what a run is (benchmark, dataset, model, fold, seed, settings, sizes) and
what it measured. Where, when and with what it ran (``NOT_IN_METRICS``: wall-clock times,
host and hardware, the scan path and micro-batches the device chose, the job, git, library
versions, the code digest and data checksums) stays in the records.

A run whose record or curve is not as it was written (``ssmbench.staleness.unit_problems``:
its content does not match its ``content_sha256``, or its curve not its ``curve_sha256``)
is left out of every table, with a line in the report's log naming the file and what to
do. Its test scores per epoch are a diagnostic that no main table reads: the
selection-optimism table checks them on its own (``selection_optimism``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ssmbench.io import atomic_write, atomic_write_text
from ssmbench.provenance_file import PROVENANCE_KEYS
from ssmbench.report.errors import RecordError
from ssmbench.staleness import unit_problems

log = logging.getLogger("ssmbench.report")

#: Key order of a run record (docs/contracts.md); metrics.csv columns follow it, less
#: ``NOT_IN_METRICS``.
RECORD_KEYS = (
    "benchmark",
    "dataset",
    "model",
    "family",
    "fold",
    "seed",
    "task",
    "test_accuracy",
    "test_error",
    "test_loss",
    "test_mae",
    "best_epoch",
    "best_val_loss",
    "best_val_accuracy",
    "epochs_run",
    "max_epochs",
    "stopped_early",
    "batch_size",
    "n_train",
    "n_val",
    "n_test",
    "val_split",
    "reading",
    "inputs",
    "steps_source",
    "mask_source",
    "train_seconds",
    "test_seconds",
    "params",
    "mmac",
    "device",
    "threads",
    "scan",
    "micro_batches",
    "versions",
    "git_commit",
    "git_dirty",
    "hostname",
    "created",
    "model_params",
    "protocol",
    "tuned",
    "origins",
)
#: Record keys left out of metrics.csv (a record written before provenance had a file of its
#: own holds the provenance and wall-clock times itself): provenance
#: (``provenance_file.PROVENANCE_KEYS``),
#: where each setting came from (``origins``; the values are in ``protocol`` and
#: ``model_params``), wall-clock times, the device the run used and how it ran there (the
#: scan path its layers took, whether micro-batches were applied: both follow the device,
#: neither changes a result), the fingerprints of its code, data, curve and own content
#: (the curve and the record hold wall-clock times), the probes' arrays (train/probes.py)
#: and the file of the test split's per-epoch scores (a diagnostic that stays out of every
#: result table).
NOT_IN_METRICS = (
    *PROVENANCE_KEYS,
    "origins",
    "train_seconds",
    "test_seconds",
    "device",
    "device_name",
    "threads",
    "scan",
    "micro_batches",
    # how often the run was stopped and resumed: a resumed run's results are those of an
    # uninterrupted one (train.protocol)
    "resumed",
    "code_digest",
    "dataset_sha256",
    "prepared_sha256",
    # what the data's preparation warned of: the report log says it, run by run
    "data_warnings",
    "curve_sha256",
    "content_sha256",
    "probes",
    # the test split's per-epoch scores (train.epoch_test_scores): a diagnostic kept apart
    "test_scores_file",
    "test_scores_sha256",
)
#: Keys a record must have for the report to use it.
REQUIRED_KEYS = ("benchmark", "dataset", "model", "fold", "test_error")
#: Standard deviation over folds: population std (see module docstring).
STD_DDOF = 0
#: Decimal places kept in summary.json (stable diffs).
SUMMARY_DECIMALS = 6

_RECORD_NAME = re.compile(r"^fold(\d+)\.json$")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def iter_record_paths(runs_dir: str | os.PathLike) -> list[Path]:
    """The finished run records under ``runs_dir``: files named exactly ``fold{k}.json``.

    Temporary files (``.fold0.json.xyz.tmp``, ``fold0.json.tmp`` ...) never match.
    """
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise FileNotFoundError(f"runs directory not found: {runs_dir}")
    return sorted(
        p for p in runs_dir.rglob("fold*.json") if p.is_file() and _RECORD_NAME.match(p.name)
    )


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_record(path: str | os.PathLike, runs_dir: str | os.PathLike | None = None) -> dict:
    """Read and check one run record; :class:`RecordError` naming the file if it is bad."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"malformed run record {path}: {exc}") from exc
    if not isinstance(record, dict):
        raise RecordError(
            f"malformed run record {path}: expected a JSON object, got {type(record).__name__}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise RecordError(f"malformed run record {path}: missing key(s) {', '.join(missing)}")
    for key in ("benchmark", "dataset", "model"):
        if not isinstance(record[key], str) or not record[key]:
            raise RecordError(f"malformed run record {path}: {key!r} must be a non-empty string")
    if not isinstance(record["fold"], int) or isinstance(record["fold"], bool):
        raise RecordError(f"malformed run record {path}: 'fold' must be an integer")
    for key in ("test_error", "params", "mmac"):
        value = record.get(key)
        if value is not None and not _is_number(value):
            raise RecordError(
                f"malformed run record {path}: {key!r} must be a number or null, got {value!r}"
            )
        # what `ssmbench train` writes: finite, not negative; an error rate at most 1
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise RecordError(
                f"malformed run record {path}: {key!r} must be a finite number >= 0 or null, "
                f"got {value!r}"
            )
    if (
        record.get("error_metric", "error") == "error"
        and record.get("test_error") is not None
        and record["test_error"] > 1
    ):
        raise RecordError(
            f"malformed run record {path}: 'test_error' {record['test_error']!r} is an error "
            f"rate (error_metric 'error': 1 - accuracy), so at most 1"
        )
    # The curve a record vouches for: a plain file name beside it and a sha256.
    curve = record.get("curve_file")
    if curve is not None and (
        not isinstance(curve, str) or not curve or Path(curve).name != curve or curve[0] == "."
    ):
        raise RecordError(
            f"malformed run record {path}: 'curve_file' must be a file name beside it, "
            f"got {curve!r}"
        )
    digest = record.get("curve_sha256")
    if digest is not None and not (isinstance(digest, str) and _SHA256.fullmatch(digest)):
        raise RecordError(
            f"malformed run record {path}: 'curve_sha256' must be 64 hex digits, got {digest!r}"
        )
    # The file's place must agree with its content: runs/{benchmark}/{dataset}/{model}/fold{k}.
    match = _RECORD_NAME.match(path.name)
    if match and int(match.group(1)) != record["fold"]:
        raise RecordError(
            f"run record {path}: file name says fold {match.group(1)}, "
            f"record says fold {record['fold']}"
        )
    if runs_dir is not None:
        parts = path.resolve().relative_to(Path(runs_dir).resolve()).parts
        if len(parts) == 4:
            for key, found in zip(("benchmark", "dataset", "model"), parts[:3], strict=True):
                if record[key] != found:
                    raise RecordError(
                        f"run record {path}: lies under {key} {found!r} but "
                        f"says {key} {record[key]!r}"
                    )
    return record


def edited_problems(path: str | os.PathLike, record: dict) -> list[str]:
    """What of a run the tables read is not as it was written: the record's content and
    its curve (``ssmbench.staleness.unit_problems`` without the test scores, which no main
    table reads); a record without its own sha256 is not as written. Empty for a run as
    written."""
    return unit_problems(path, record, scores=False)


def _cell(value):
    """Nested values (versions, model_params, protocol) become canonical JSON strings."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def collect_records(runs_dir: str | os.PathLike) -> pd.DataFrame:
    """One row per finished run record under ``runs_dir`` (``{benchmark}/{dataset}/{model}/
    fold{k}.json``), sorted by benchmark, dataset, model, fold.

    Columns follow the contract's key order, then any extra keys (sorted), then
    ``record_path`` (relative to ``runs_dir``). Nested values are JSON strings. No record:
    an empty frame with the contract's columns. A bad record: :class:`RecordError`. A
    record or curve not as written (`edited_problems`) is left out, with a log line.
    """
    runs_dir = Path(runs_dir)
    rows = []
    for path in iter_record_paths(runs_dir):
        record = read_record(path, runs_dir)
        problems = edited_problems(path, record)
        if problems:
            log.warning(
                "%s left out: changed by hand: %s; re-run the job with --force or restore "
                "the file", path, "; ".join(problems),
            )  # fmt: skip
            continue
        if record.get("data_warnings"):
            log.warning(
                "%s: trained on data its preparation warned of: %s", path,
                "; ".join(map(str, record["data_warnings"])),
            )  # fmt: skip
        row = {k: _cell(v) for k, v in record.items()}
        row["record_path"] = path.relative_to(runs_dir).as_posix()
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=[*RECORD_KEYS, "record_path"])
    df = pd.DataFrame(rows)
    extra = sorted(c for c in df.columns if c not in RECORD_KEYS and c != "record_path")
    columns = [c for c in RECORD_KEYS if c in df.columns] + extra + ["record_path"]
    df = df[columns]
    for key in ("family", "params", "mmac"):  # used by the summary and the figures
        if key not in df.columns:
            df[key] = np.nan
    df["test_error"] = pd.to_numeric(df["test_error"], errors="raise").astype(float)
    dup = df.duplicated(["benchmark", "dataset", "model", "fold"], keep=False)
    if dup.any():
        paths = ", ".join(df.loc[dup, "record_path"])
        raise RecordError(f"more than one record for the same run: {paths}")
    df = df.sort_values(["benchmark", "dataset", "model", "fold"], kind="stable")
    return df.reset_index(drop=True)


def metrics_table(df: pd.DataFrame) -> pd.DataFrame:
    """The records table without the ``NOT_IN_METRICS`` columns: what metrics.csv holds."""
    return df.drop(columns=[c for c in NOT_IN_METRICS if c in df.columns])


def write_metrics_csv(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write the records table's results (``metrics_table``) as CSV, atomically."""
    table = metrics_table(df)
    return atomic_write(
        path, lambda p: table.to_csv(p, index=False, lineterminator="\n", encoding="utf-8")
    )


def filter_models(df: pd.DataFrame, benchmark_models: Mapping[str, Iterable[str]] | None):
    if benchmark_models is None:
        return df
    keep = pd.Series(False, index=df.index)
    for bench, models in benchmark_models.items():
        keep |= (df["benchmark"] == bench) & df["model"].isin(list(models))
    return df[keep]


def dataset_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, model, dataset): ``error`` (mean over folds), ``std`` (over folds,
    ddof=0), ``n_runs``, ``params``, ``mmac``."""
    work = df.assign(
        test_error=pd.to_numeric(df["test_error"], errors="coerce"),
        params=pd.to_numeric(df["params"], errors="coerce"),
        mmac=pd.to_numeric(df["mmac"], errors="coerce"),
    )
    g = work.groupby(["benchmark", "model", "dataset"], sort=True)
    out = pd.DataFrame(
        {
            "error": g["test_error"].mean(),
            "std": g["test_error"].std(ddof=STD_DDOF),
            "n_runs": g["test_error"].size(),
            "params": g["params"].mean(),
            "mmac": g["mmac"].mean(),
        }
    )
    return out.reset_index()


def dataset_ranks(per_ds: pd.DataFrame, models: Iterable[str]) -> pd.DataFrame:
    """Per dataset (index) and model (columns): the rank of the model's error (1 =
    lowest, ties averaged) on the datasets where every one of ``models`` has an error;
    ``per_ds`` is one benchmark's ``dataset_table``."""
    wide = per_ds.pivot_table(index="dataset", columns="model", values="error", aggfunc="first")
    wide = wide.reindex(columns=list(dict.fromkeys(models)))
    return wide.dropna(how="any").rank(axis=1, method="average", ascending=True)


def rank_datasets(per_ds: pd.DataFrame, models: Iterable[str]) -> tuple[dict, int]:
    """({model: mean rank}, number of datasets ranked) over ``dataset_ranks``; no mean
    rank for any model when no dataset has all of them."""
    ranks = dataset_ranks(per_ds, models)
    if ranks.empty:
        return {}, 0
    return {m: float(ranks[m].mean()) for m in ranks.columns}, int(len(ranks))


def summary_frame(
    df: pd.DataFrame, benchmark_models: Mapping[str, Iterable[str]] | None = None
) -> pd.DataFrame:
    """One row per (benchmark, model): ``family, mean_error, mean_rank, mean_std, n_datasets,
    n_ranked_datasets, n_runs, params, mmac`` (see the module docstring).

    ``benchmark_models`` ({benchmark: [model, ...]}) restricts the records to those models;
    they are then "all models of the benchmark" for ranking. By default every model found.
    """
    df = filter_models(df, benchmark_models)
    if df.empty:
        raise ValueError("no run records to summarise")
    per_ds = dataset_table(df)
    families = (
        df.dropna(subset=["family"]).groupby(["benchmark", "model"])["family"].first()
        if "family" in df.columns
        else pd.Series(dtype=object)
    )
    rows = []
    for bench, bdf in per_ds.groupby("benchmark", sort=True):
        models = sorted(bdf["model"].unique())
        if benchmark_models is not None and bench in benchmark_models:
            expected = list(benchmark_models[bench])
        else:
            expected = models
        ranks, n_ranked = rank_datasets(bdf, expected)
        for model in models:
            mdf = bdf[bdf["model"] == model]
            rows.append(
                {
                    "benchmark": bench,
                    "model": model,
                    "family": families.get((bench, model), np.nan),
                    "mean_error": mdf["error"].mean(),
                    "mean_rank": ranks.get(model, np.nan),
                    "mean_std": mdf["std"].mean(),
                    "n_datasets": int(mdf["dataset"].nunique()),
                    "n_ranked_datasets": n_ranked,
                    "n_runs": int(mdf["n_runs"].sum()),
                    "params": mdf["params"].mean(),
                    "mmac": mdf["mmac"].mean(),
                }
            )
    return pd.DataFrame(rows)


_SUMMARY_FIELDS = (
    "mean_error",
    "mean_rank",
    "mean_std",
    "n_datasets",
    "n_ranked_datasets",
    "n_runs",
    "params",
    "mmac",
)


def _json_number(value):
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return None
    return round(value, SUMMARY_DECIMALS)


def summarise(
    df: pd.DataFrame, benchmark_models: Mapping[str, Iterable[str]] | None = None
) -> dict:
    """``{benchmark: {model: {error, rank, std, n_datasets, n_ranked_datasets, n_runs,
    params, mmac}}}``: numbers only (null where undefined), rounded to 6 decimals."""
    frame = summary_frame(df, benchmark_models)
    out: dict = {}
    for row in frame.itertuples(index=False):
        entry = {}
        for field in _SUMMARY_FIELDS:
            value = getattr(row, field)
            if field.startswith("n_"):
                entry[field] = int(value)
            else:
                entry[field] = _json_number(value)
        out.setdefault(row.benchmark, {})[row.model] = entry
    return out


#: a metric file's keys (``metric_files``) and the summary fields they come from ("error"
#: alone would not do: DVC takes any key named so for a failure to read the file)
METRIC_KEYS = {
    "test_error": "mean_error",
    "rank": "mean_rank",
    "std": "mean_std",
    "runs": "n_runs",
    "datasets": "n_datasets",
}


def metric_files(summary: Mapping, benchmarks: Iterable[str]) -> dict[str, dict]:
    """{``{benchmark}/{model}.json``: its metrics}: per benchmark of ``summary``
    (`summarise`, with its ``scorecard`` counts) and model, ``METRIC_KEYS`` of its entry and,
    where the scorecard compares the model with a paper, ``agree``: its cells within the
    paper's spread. One small file per model, so that ``dvc metrics show`` prints one row
    per model and six columns, and ``dvc metrics diff`` a line per changed number (a commit's
    effect on how much of the paper is reproduced among them)."""
    out = {}
    for benchmark in benchmarks:
        card = (summary.get("scorecard") or {}).get(benchmark) or {}
        for model, entry in (summary.get(benchmark) or {}).items():
            metrics = {k: entry.get(v) for k, v in METRIC_KEYS.items()}
            if model in card:  # the cells within the paper's spread (scorecard.md)
                metrics["agree"] = card[model].get("agree")
            out[f"{benchmark}/{model}.json"] = metrics
    return out


def write_metric_files(files: Mapping[str, dict], folder: str | os.PathLike) -> Path:
    """The ``metric_files`` into ``folder``, as a whole: written in a temporary sibling that
    replaces it (a model no longer in the report leaves no file behind)."""
    from ssmbench.io import atomic_folder

    with atomic_folder(folder) as tmp:
        for name, metrics in sorted(files.items()):
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(metrics, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return Path(folder)


def write_summary_json(summary: Mapping, path: str | os.PathLike) -> Path:
    """Write the summary as sorted, indented JSON (stable for ``dvc metrics diff``)."""
    text = json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return atomic_write_text(path, text)
