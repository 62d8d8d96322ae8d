"""Everything the report step writes, from the run records under ``runs_dir``."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

from .aggregate import (
    collect_records,
    filter_models,
    summarise,
    summary_frame,
    write_metrics_csv,
    write_summary_json,
)
from .figures import figure7, figure8, load_curves, write_curves_csv
from .outputs import figure7_stem, figure8_stem, report_outputs, table_stem
from .protocol_notes import write_protocol_notes
from .reference import load_published_errors
from .tables import benchmark_table, write_table

#: Figure 8 compares these two (the paper's MS4 vs MS4N); others only if neither ran.
FIGURE8_MODELS = ("MS4", "MS4N")
#: Figure 8 draws at most this many datasets unless report.figure8_datasets names them.
FIGURE8_MAX_DATASETS = 3
DEFAULT_THRESHOLDS = {"val_loss": 0.5, "val_accuracy": 0.9}


def _in_grid(df, grid):
    if grid is None or df.empty:
        return df
    keys = {(b, d, m, int(f)) for b, d, m, f in grid}
    rows = [
        (b, d, m, int(f)) in keys
        for b, d, m, f in zip(df["benchmark"], df["dataset"], df["model"], df["fold"], strict=True)
    ]
    return df[rows].reset_index(drop=True)


def build_report(
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    report_params: Mapping | None,
    benchmark_models: Mapping[str, Iterable[str]] | None = None,
    grid: Iterable[tuple[str, str, str, int]] | None = None,
) -> dict[str, Path]:
    """Write the whole report and return {name: path} of what was written: the files of
    ``outputs.report_outputs`` for the benchmarks found in the records (``uea_table`` is
    the paper's Table 5); Figure 8 is skipped, with a warning, when there are no curves.

    ``report_params``: params.yaml ``report`` (``convergence_thresholds``; optional
    ``figure8_datasets``). ``benchmark_models`` ({benchmark: [models]}, e.g. from the suite)
    restricts the report to those models, which are then the set ranked together.
    ``grid`` ((benchmark, dataset, model, fold) tuples, e.g. a suite's jobs) restricts it
    to exactly those runs, so records left by another suite do not leak into this one.
    No record at all: ``FileNotFoundError``; a malformed one: ``RecordError``.
    """
    report_params = dict(report_params or {})
    results_dir, figures_dir = Path(results_dir), Path(figures_dir)
    records = _in_grid(collect_records(runs_dir), grid)
    if benchmark_models is not None:
        benchmark_models = {b: list(m) for b, m in benchmark_models.items()}
        records = filter_models(records, benchmark_models).reset_index(drop=True)
    if records.empty:
        which = f" for {benchmark_models}" if benchmark_models is not None else ""
        raise FileNotFoundError(
            f"no finished run records (fold*.json) under {runs_dir}{which}: nothing to report"
        )

    benchmarks = sorted(records["benchmark"].unique())
    outputs = {o.name: o.path for o in report_outputs(results_dir, figures_dir, benchmarks)}
    written: dict[str, Path] = {}
    written["metrics_csv"] = write_metrics_csv(records, outputs["metrics_csv"])
    written["summary_json"] = write_summary_json(
        summarise(records, benchmark_models), outputs["summary_json"]
    )

    written["protocol_notes_md"] = write_protocol_notes(records, outputs["protocol_notes_md"])

    published = load_published_errors()
    summ = summary_frame(records, benchmark_models)
    for bench in benchmarks:
        table = benchmark_table(records, published, bench)
        for ext, path in write_table(table, table_stem(results_dir, bench)).items():
            written[f"{bench}_table_{ext}"] = path
        for ext, path in figure7(summ, figure7_stem(figures_dir, bench), bench).items():
            written[f"figure7_{bench}_{ext}"] = path

    curves = _in_grid(load_curves(runs_dir), grid)
    if benchmark_models is not None and not curves.empty:
        curves = filter_models(curves, benchmark_models).reset_index(drop=True)
    written["curves_csv"] = write_curves_csv(curves, outputs["curves_csv"])
    if curves.empty:
        warnings.warn(f"no training curves under {runs_dir}: figure 8 not drawn", stacklevel=2)
        return written
    thresholds = dict(report_params.get("convergence_thresholds") or DEFAULT_THRESHOLDS)
    datasets = report_params.get("figure8_datasets")
    if not datasets:
        present = set(curves["model"])
        models = [m for m in FIGURE8_MODELS if m in present] or sorted(present)
        have_all = curves[curves["model"].isin(models)].groupby("dataset")["model"].nunique()
        datasets = (
            sorted(have_all[have_all == len(models)].index) or sorted(curves["dataset"].unique())
        )[:FIGURE8_MAX_DATASETS]
    selected = {
        (model, ds): [int(e) for e in group["best_epoch"].dropna()]
        for (model, ds), group in records.groupby(["model", "dataset"])
    }
    paths, _ = figure8(
        curves, figure8_stem(figures_dir), thresholds, models=FIGURE8_MODELS,
        datasets=datasets, selected=selected,
    )  # fmt: skip
    written["figure8_png"], written["figure8_pdf"] = paths["png"], paths["pdf"]
    return written
