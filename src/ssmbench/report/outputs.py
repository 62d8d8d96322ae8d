"""Every file the report step writes, named in one place.

``build_report`` writes exactly these paths, the Snakemake ``report`` rule declares them,
``ssmbench report --list-outputs`` prints them (the Makefile's ``run`` target shows that
list), and a test holds the DVC ``report`` stage's outs to them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TABLE_FORMATS = ("csv", "md", "tex")
FIGURE_FORMATS = ("png", "pdf")
#: The folder of the per-benchmark tables, under the results folder.
TABLES_FOLDER = "tables"
#: The kinds of output, in the order they are listed.
KINDS = ("metrics", "summary", "curves", "protocol_notes", "table", "figure7", "figure8")


@dataclass(frozen=True)
class ReportOutput:
    """One file of the report: ``name`` (the key ``build_report`` returns it under),
    ``kind`` (one of ``KINDS``) and ``path``."""

    name: str
    kind: str
    path: Path


def table_stem(results_dir: str | os.PathLike, benchmark: str) -> Path:
    """``{results}/tables/{benchmark}_table``: ours beside the paper's, one extension each
    of ``TABLE_FORMATS``."""
    return Path(results_dir) / TABLES_FOLDER / f"{benchmark}_table"


def figure7_stem(figures_dir: str | os.PathLike, benchmark: str) -> Path:
    """``{figures}/figure7_{benchmark}``: rank, error and std vs complexity."""
    return Path(figures_dir) / f"figure7_{benchmark}"


def figure8_stem(figures_dir: str | os.PathLike) -> Path:
    """``{figures}/figure8_curves``: the training dynamics."""
    return Path(figures_dir) / "figure8_curves"


def _with_suffix(stem: Path, ext: str) -> Path:
    return stem.with_name(f"{stem.name}.{ext}")


def report_outputs(
    results_dir: str | os.PathLike, figures_dir: str | os.PathLike, benchmarks: Iterable[str]
) -> list[ReportOutput]:
    """Every file the report writes for a suite with these benchmarks:

    * ``metrics_csv``: ``{results}/metrics.csv``, one row per run record (results only);
    * ``summary_json``: ``{results}/summary.json``, {benchmark: {model: {error, rank...}}};
    * ``curves_csv``: ``{results}/curves.csv``, all epoch curves in long format;
    * ``protocol_notes_md``: ``{results}/protocol_notes.md``, the runs' settings beside the
      authors' code;
    * ``{bench}_table_{csv,md,tex}``: ``{results}/tables/{bench}_table.*``;
    * ``figure7_{bench}_{png,pdf}``: ``{figures}/figure7_{bench}.*``;
    * ``figure8_{png,pdf}``: ``{figures}/figure8_curves.*``.
    """
    results_dir, figures_dir = Path(results_dir), Path(figures_dir)
    outputs = [
        ReportOutput("metrics_csv", "metrics", results_dir / "metrics.csv"),
        ReportOutput("summary_json", "summary", results_dir / "summary.json"),
        ReportOutput("curves_csv", "curves", results_dir / "curves.csv"),
        ReportOutput("protocol_notes_md", "protocol_notes", results_dir / "protocol_notes.md"),
    ]
    benchmarks = sorted(set(benchmarks))
    for bench in benchmarks:
        stem = table_stem(results_dir, bench)
        outputs += [
            ReportOutput(f"{bench}_table_{ext}", "table", _with_suffix(stem, ext))
            for ext in TABLE_FORMATS
        ]
    for bench in benchmarks:
        stem = figure7_stem(figures_dir, bench)
        outputs += [
            ReportOutput(f"figure7_{bench}_{ext}", "figure7", _with_suffix(stem, ext))
            for ext in FIGURE_FORMATS
        ]
    stem = figure8_stem(figures_dir)
    outputs += [
        ReportOutput(f"figure8_{ext}", "figure8", _with_suffix(stem, ext)) for ext in FIGURE_FORMATS
    ]
    return outputs


def output_paths(
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    benchmarks: Iterable[str],
    kind: str | None = None,
) -> list[str]:
    """The paths of ``report_outputs`` as strings (what a Snakemake rule declares), only
    those of ``kind`` when given."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown report output kind {kind!r} (known: {', '.join(KINDS)})")
    return [
        str(o.path)
        for o in report_outputs(results_dir, figures_dir, benchmarks)
        if kind is None or o.kind == kind
    ]
