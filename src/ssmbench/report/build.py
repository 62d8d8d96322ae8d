"""Everything the report step writes, from the run records under ``runs_dir``, and the
published-only report of ``ssmbench report --published``.

Every artefact is written for the suite's benchmarks whatever subset of the grid has
records: a missing model, dataset or published figure is a gap the artefact marks, and
the log (``logging``, logger ``ssmbench.report``) says what was skipped and why.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ssmbench.io import atomic_write, atomic_write_text

from .aggregate import (
    collect_records,
    filter_models,
    metric_files,
    summarise,
    write_metric_files,
    write_metrics_csv,
    write_summary_json,
)
from .context import DrawContext
from .figures import CURVE_COLUMNS, load_curves, write_curves_csv
from .outputs import (
    CONSISTENCY_KEY,
    GRID_KEY,
    PAPER_BENCHMARKS,
    SUITE_KEY,
    Artefact,
    artefact_stem,
    artefacts,
    grid_entry,
    published_dir,
    report_outputs,
)
from .paper_tables import paper_consistency
from .physiome_table import physiome_of
from .protocol_notes import write_protocol_notes
from .results import ours_per_dataset, paper_per_dataset
from .scorecard import (
    leaderboard_comparison,
    leaderboard_counts,
    published_counterparts,
    scorecard,
    scorecard_counts,
    write_scorecard,
)

log = logging.getLogger("ssmbench.report")

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


def _compared(ours: pd.DataFrame, paper: pd.DataFrame, cells: bool = True) -> pd.DataFrame:
    """The paper's rows on the (benchmark, dataset)s and (benchmark, model)s we ran
    (``cells=False``: on our benchmarks' datasets and models, so that a cell of ours the
    paper lacks, or one of its cells on our models that we did not run, still shows)."""
    if ours.empty:
        return paper.iloc[0:0]
    datasets = set(zip(ours["benchmark"], ours["dataset"], strict=True))
    models = set(zip(ours["benchmark"], ours["model"], strict=True))
    keep = [
        ((b, d) in datasets or not cells) and (b, m) in models
        for b, d, m in zip(paper["benchmark"], paper["dataset"], paper["model"], strict=True)
    ]
    return paper[keep].reset_index(drop=True)


def _written(prefix: str, paths: Mapping[str, Path]) -> dict[str, Path]:
    return {f"{prefix}_{ext}": path for ext, path in paths.items()}


def _thresholds(report_params: Mapping) -> dict[str, float]:
    return dict(report_params.get("convergence_thresholds") or DEFAULT_THRESHOLDS)


def _draw_all(
    context: DrawContext, drawn: Iterable[Artefact], results_dir: Path, figures_dir: Path
) -> dict[str, Path]:
    """Every artefact, each by the function its entry in ``outputs.py`` names, called as
    ``fn(context)`` with the artefact and its ``stem``; {name: path} of what they wrote."""
    drawn = [(artefact, artefact.drawer()) for artefact in drawn]  # a bad name fails first
    written: dict[str, Path] = {}
    for artefact, draw in drawn:
        stem = artefact_stem(artefact, results_dir, figures_dir)
        written.update(_written(artefact.key, draw(replace(context, artefact=artefact, stem=stem))))
    return written


def build_report(
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    report_params: Mapping | None,
    benchmark_models: Mapping[str, Iterable[str]] | None = None,
    grid: Iterable[tuple[str, str, str, int]] | None = None,
    benchmarks: Iterable[str] | None = None,
    model_entries: Mapping[str, Mapping] | None = None,
    suite: str | None = None,
) -> dict[str, Path]:
    """Write the whole report and return {name: path} of what was written: exactly the
    files of ``outputs.report_outputs`` for ``benchmarks`` (default: those found in the
    records). ``summary.json`` is written last, so that it names the suite of a whole
    report: ``suite`` (its ``suite`` key, when given) and ``grid``'s size and digest
    (its ``grid`` key, when given; ``outputs.grid_entry``).

    ``report_params``: params.yaml ``report`` (``convergence_thresholds``; optional
    ``figure8_datasets``). ``benchmark_models`` ({benchmark: [models]}, e.g. from the suite)
    restricts the report to those models, which are then the set ranked together.
    ``grid`` ((benchmark, dataset, model, fold) tuples, e.g. a suite's jobs) restricts it
    to exactly those runs, so records left by another suite do not leak into this one.
    ``model_entries`` (params.yaml ``models:``, the suite's): Table 4's parameters and MMac
    of every model built for every MONSTER dataset (else the records' own counts).
    No record at all: ``FileNotFoundError``; a malformed one: ``RecordError``.
    """
    report_params = dict(report_params or {})
    results_dir, figures_dir = Path(results_dir), Path(figures_dir)
    grid = None if grid is None else list(grid)  # read three times
    records = _in_grid(collect_records(runs_dir), grid)
    if benchmark_models is not None:
        benchmark_models = {b: list(m) for b, m in benchmark_models.items()}
        records = filter_models(records, benchmark_models).reset_index(drop=True)
    if records.empty:
        which = f" for {benchmark_models}" if benchmark_models is not None else ""
        raise FileNotFoundError(
            f"no finished run records (fold*.json) under {runs_dir}{which}: nothing to report"
        )
    benchmarks = sorted(set(benchmarks) if benchmarks else set(records["benchmark"]))
    for bench in sorted(set(benchmarks) - set(records["benchmark"])):
        log.info("%s: no record of this benchmark yet: its artefacts say so", bench)

    outputs = {o.name: o.path for o in report_outputs(results_dir, figures_dir, benchmarks)}
    # everything read (and checked) before anything is written: a bad curve or reference
    # file stops the report with the previous outputs as they were
    curves = _in_grid(load_curves(runs_dir), grid)
    full_paper = paper_per_dataset(PAPER_BENCHMARKS)
    written: dict[str, Path] = {}
    written["metrics_csv"] = write_metrics_csv(records, outputs["metrics_csv"])
    ours = ours_per_dataset(records)
    if benchmark_models is not None and not curves.empty:
        curves = filter_models(curves, benchmark_models).reset_index(drop=True)
    context = DrawContext(
        records=records, ours=ours, paper=_compared(ours, full_paper), full_paper=full_paper,
        curves=curves, thresholds=_thresholds(report_params),
        curve_datasets=report_params.get("figure8_datasets"), runs_dir=Path(runs_dir),
        model_entries=model_entries,
    )  # fmt: skip
    # the MS4N paper's cells, and the TIDES benchmarks' published cells of the models of
    # ours that reimplement one (UEA-6's S5-logncde)
    published = pd.concat([full_paper, published_counterparts()], ignore_index=True)
    card = scorecard(ours, _compared(ours, published))
    physiome = context.once(physiome_of)  # shared with the Physiome-ODE artefacts
    leaderboard = leaderboard_comparison(physiome)
    summary = summarise(records, benchmark_models)
    summary["scorecard"] = scorecard_counts(card)
    if not leaderboard.empty:  # only with runs on the official archive: others unchanged
        summary["physiome_leaderboard"] = leaderboard_counts(leaderboard)
    if suite is not None:
        summary[SUITE_KEY] = suite
    if grid is not None:
        summary[GRID_KEY] = grid_entry(grid)
    written["protocol_notes_md"] = write_protocol_notes(records, outputs["protocol_notes_md"])
    scorecard_files = write_scorecard(card, results_dir / "scorecard", leaderboard=leaderboard)
    written.update(_written("scorecard", scorecard_files))
    written["curves_csv"] = write_curves_csv(curves, outputs["curves_csv"])
    written.update(_draw_all(context, artefacts(benchmarks), results_dir, figures_dir))
    files = metric_files(summary, benchmarks)
    written["metric_files"] = write_metric_files(files, outputs["metric_files"])
    # last: a summary.json that names the suite stands for a whole report of it
    written["summary_json"] = write_summary_json(summary, outputs["summary_json"])
    missing = set(outputs) - set(written)
    if missing:  # a contract check: the rule and the DVC stage declare every one
        raise RuntimeError(f"report: declared outputs not written: {sorted(missing)}")
    return written


def build_published(
    results_dir: str | os.PathLike, report_params: Mapping | None = None
) -> dict[str, Path]:
    """``ssmbench report --published``: every paper artefact drawn from the published
    numbers alone, under ``outputs.published_dir(results_dir)``, and the paper's
    summaries recomputed from its per-dataset rows (``paper_consistency``)."""
    root = published_dir(results_dir)
    full_paper = paper_per_dataset(PAPER_BENCHMARKS)
    empty = full_paper.iloc[0:0]
    context = DrawContext(
        records=pd.DataFrame(), ours=empty, paper=full_paper, full_paper=full_paper,
        curves=load_curves_frame(), thresholds=_thresholds(dict(report_params or {})),
    )  # fmt: skip
    drawn = artefacts(PAPER_BENCHMARKS, published=True)
    written = _draw_all(context, drawn, root, root / "figures")
    consistency = paper_consistency(full_paper)
    written.update(
        _written(CONSISTENCY_KEY, write_consistency(consistency, root / "tables" / CONSISTENCY_KEY))
    )
    return written


def load_curves_frame() -> pd.DataFrame:
    """An empty curves frame (the published report has no training curves)."""
    return pd.DataFrame(columns=["benchmark", "dataset", "model", "fold", *CURVE_COLUMNS])


def write_consistency(table: pd.DataFrame, stem: Path) -> dict[str, Path]:
    """``paper_consistency.{csv,md}``: the CSV as computed; the Markdown with a summary
    line (how many printed figures the rows reproduce) above the table."""
    stem = Path(stem)
    csv = atomic_write(
        stem.with_name(stem.name + ".csv"),
        lambda p: table.to_csv(p, index=False, lineterminator="\n", encoding="utf-8"),
    )
    ranks = table["metric"].str.contains("rank")
    lines = [
        "# The MS4N paper's summary figures, recomputed from its per-dataset rows",
        "",
        "Printed: Tables 1, 2, 4 and the text of sections 5.1–5.2. Recomputed: from Tables "
        "3 and 5 (3 decimals; a mean of them can be off by 0.0005, which the tolerance "
        "allows). Ranks: among the models of Table 3 (14) or Table 5 (12), ties averaged.",
        "",
        f"* errors and stds: {int(table.loc[~ranks, 'agrees'].sum())} of {int((~ranks).sum())} "
        "agree",
        f"* ranks: {int(table.loc[ranks, 'agrees'].sum())} of {int(ranks.sum())} agree (see "
        "the note column for why the paper's ranks are over other model sets)",
        "",
    ]
    shown = table.assign(agrees=table["agrees"].map({True: "yes", False: "no"}))
    body = shown.to_markdown(index=False, tablefmt="github", floatfmt=".4f")
    md = atomic_write_text(stem.with_name(stem.name + ".md"), "\n".join(lines) + body + "\n")
    return {"csv": csv, "md": md}
