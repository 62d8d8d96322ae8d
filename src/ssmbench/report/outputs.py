"""Every file the report step writes, named in one place, and the function that draws each.

``build_report`` writes exactly these paths, the Snakemake ``report`` rule declares them
(each figure with its caption, ``workflow/report/<caption>.rst``), ``ssmbench report
--list-outputs`` prints them, and a test holds the DVC ``report`` stage's outs to them.

Each suite's report has its own folder (``report_dirs``): the suite that params.yaml's
``suite`` names, the one ``dvc repro`` runs, reports into ``paths.results`` and
``paths.figures`` (the DVC ``report`` stage's outs and metrics); any other suite into
``{results}/suites/{suite}/``, the same files in the same layout. Its ``summary.json``,
written last, names the suite and the grid it was made for (``report_made_for``), so a
folder that holds another suite's report is told apart from this one's.

The artefacts are the MS4N paper's (``PAPER_ARTEFACTS``: Tables 1–5, Figures 1 and
3–10, named after the paper) for the benchmarks it has, critical-difference diagrams, a
per-dataset table and an overview figure for any other benchmark, and the files every
report has (metrics, summary, curves, protocol notes, the scorecard, the training curves).

Each artefact names its drawing function as a string, ``"module:function"``, imported
only when the report draws it (``Artefact.drawer``): the workflow imports this module at
every parse, and it loads neither matplotlib nor pandas.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import NamedTuple

TABLE_FORMATS = ("csv", "md", "tex")
FIGURE_FORMATS = ("png", "pdf")
SCORECARD_FORMATS = ("csv", "md")
#: The folder of the tables, under the results folder.
TABLES_FOLDER = "tables"
#: The folder of ``ssmbench report --published``, under the results folder.
PUBLISHED_FOLDER = "published"
#: The folder of the reports of the suites params.yaml does not name, under the results
#: folder: one folder per suite, ``{results}/suites/{suite}/``.
SUITES_FOLDER = "suites"
#: summary.json's keys that say what the report was made for (the rest are benchmarks
#: and the scorecard's counts).
SUITE_KEY, GRID_KEY = "suite", "grid"
#: The kinds of output, in the order they are listed.
KINDS = (
    "metrics", "metric_files", "summary", "curves", "protocol_notes", "scorecard", "table",
    "figure",
)  # fmt: skip
#: The folder of the per-model metric files (``metric_files``), under the results folder.
METRIC_FILES_FOLDER = "metrics"
#: The paper's benchmarks (the ones with published figures).
PAPER_BENCHMARKS = ("monster", "uea")
#: The package a drawing function's module is relative to when it starts with a dot.
DRAW_PACKAGE = "ssmbench.report"


def draw_function(spec: str) -> Callable:
    """The function ``spec`` names, ``"module:function"`` (a module starting with a dot is
    one of ``ssmbench.report``: ``".overview:draw_overview"``), imported now."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"drawing function {spec!r}: expected 'module:function'")
    fn = getattr(import_module(module, DRAW_PACKAGE), name, None)
    if not callable(fn):
        raise ValueError(f"drawing function {spec!r}: {module} has no function {name!r}")
    return fn


@dataclass(frozen=True)
class Artefact:
    """One table or figure: ``key`` (its file stem), ``kind`` (``table`` or ``figure``),
    ``needs`` (it is written when the suite has any of these benchmarks), ``what`` (one
    line: what it shows), ``caption`` (its caption file under ``workflow/report``, without
    ``.rst``: every figure's, which the Snakemake report shows; a table's where it has one,
    for a report that takes tables) and ``draw`` (keyword: its drawing function,
    ``"module:function"``, called as ``fn(context)`` with a ``context.DrawContext`` and
    returning {format: path} of the files it wrote under ``context.stem``)."""

    key: str
    kind: str
    needs: tuple[str, ...]
    what: str
    caption: str | None = None
    draw: str = field(kw_only=True)

    @property
    def benchmark(self) -> str:
        """The one benchmark of an artefact of one benchmark."""
        if len(self.needs) != 1:
            raise ValueError(f"{self.key}: drawn for {self.needs}, not one benchmark")
        return self.needs[0]

    def drawer(self) -> Callable:
        """Its drawing function (``draw_function(self.draw)``)."""
        return draw_function(self.draw)


#: The paper's artefacts, in the paper's order.
PAPER_ARTEFACTS = (
    Artefact("table1", "table", ("monster",), "Table 1: average std over folds, SSMs, MONSTER",
             draw=".paper_tables:draw_table1"),
    Artefact("table2", "table", ("monster",), "Table 2: the MS4 ablation on MONSTER",
             draw=".paper_tables:draw_table2"),
    Artefact("table3", "table", ("monster",), "Table 3: MONSTER per dataset, error ± std",
             draw=".paper_tables:draw_per_dataset"),
    Artefact("table4", "table", ("monster",), "Table 4: per MONSTER domain",
             draw=".paper_tables:draw_table4"),
    Artefact("table5", "table", ("uea",), "Table 5: UEA per dataset, error ± std",
             draw=".paper_tables:draw_per_dataset"),
    Artefact("figure1", "figure", PAPER_BENCHMARKS, "Figure 1: error vs MMac", "figure1",
             draw=".figure1:draw_figure1"),
    Artefact("figure3", "figure", ("monster",), "Figure 3: MONSTER overview", "figure3",
             draw=".overview:draw_paper_overview"),
    Artefact("figure4", "figure", ("monster",), "Figure 4: ranks, Audio/Other", "polar",
             draw=".polar_ranks:draw_polar"),
    Artefact("figure5", "figure", ("monster",), "Figure 5: ranks, EEG/HAR", "polar",
             draw=".polar_ranks:draw_polar"),
    Artefact("figure6", "figure", ("monster",), "Figure 6: ranks, Satellite/Counts", "polar",
             draw=".polar_ranks:draw_polar"),
    Artefact("figure7", "figure", ("uea",), "Figure 7: UEA overview", "figure7",
             draw=".overview:draw_paper_overview"),
    Artefact("figure8", "figure", ("monster",), "Figure 8: MS4 vs MS4N on Pedestrian", "figure8",
             draw=".figures:draw_convergence"),
    Artefact("figure9", "figure", ("monster",), "Figure 9: MS4 vs MS4N on Traffic", "figure8",
             draw=".figures:draw_convergence"),
    Artefact("figure10_monster", "figure", ("monster",), "Figure 10: MS4N vs MS4, Mamba2",
             "figure10", draw=".pairwise:draw_figure10"),
    Artefact("figure10_uea", "figure", ("uea",), "Figure 10 on UEA", "figure10",
             draw=".pairwise:draw_figure10"),
    Artefact("cd_monster", "figure", ("monster",), "critical differences, MONSTER", "cd",
             draw=".critical_difference:draw_cd"),
    Artefact("cd_uea", "figure", ("uea",), "critical differences, UEA", "cd",
             draw=".critical_difference:draw_cd"),
)  # fmt: skip
#: The paper's critical-difference diagrams beside ours (``cd_{benchmark}_paper``).
PAPER_CD = {"monster": "cd_monster_paper", "uea": "cd_uea_paper"}
#: ``ssmbench report --published`` also writes how the paper's summaries follow from its
#: per-dataset rows.
CONSISTENCY_KEY = "paper_consistency"


def other_benchmark_artefacts(benchmark: str) -> tuple[Artefact, ...]:
    """A benchmark the paper does not have: its per-dataset table and overview figure."""
    return (
        Artefact(f"{benchmark}_table", "table", (benchmark,), f"{benchmark} per dataset",
                 draw=".paper_tables:draw_benchmark_table"),
        Artefact(f"overview_{benchmark}", "figure", (benchmark,), f"{benchmark} overview",
                 "overview", draw=".overview:draw_overview"),
    )  # fmt: skip


#: The TIDES paper's Fading Flash artefacts (benchmark ``synthetic``).
FADING_FLASH_ARTEFACTS = (
    Artefact("fading_flash_table", "table", ("synthetic",),
             "Fading Flash: MSE and relative error per Δ and model",
             draw=".fading_flash:draw_table"),
    Artefact("fading_flash_claims", "table", ("synthetic",),
             "Fading Flash: the TIDES paper's claims, checked",
             draw=".fading_flash:draw_claims"),
    Artefact("fading_flash", "figure", ("synthetic",), "Fading Flash: error against Δ",
             "fading_flash", draw=".fading_flash:draw_figure"),
    Artefact("fading_flash_noisy_table", "table", ("synthetic",),
             "Fading Flash trained on noisy rows: MSE and relative error per Δ and model",
             draw=".fading_flash:draw_noisy_table"),
    Artefact("fading_flash_noisy", "figure", ("synthetic",),
             "Fading Flash trained on noisy rows: error against Δ", "fading_flash_noisy",
             draw=".fading_flash:draw_noisy_figure"),
    Artefact("fading_flash_decay", "figure", ("synthetic",),
             "Fading Flash: each model's effective decay rate per zone", "fading_flash_decay",
             draw=".fading_flash:draw_decay_figure"),
)  # fmt: skip
#: The TIDES paper's random time-step drop ablation (benchmark ``uea_drop``).
DROP_RATE_ARTEFACTS = (
    Artefact("drop_rate_table", "table", ("uea_drop",),
             "drop-rate ablation: accuracy per test drop rate and model",
             draw=".drop_rate:draw_table"),
    Artefact("drop_rate_claims", "table", ("uea_drop",),
             "drop-rate ablation: the TIDES paper's claim, checked",
             draw=".drop_rate:draw_claims"),
    Artefact("drop_rate", "figure", ("uea_drop",), "drop-rate ablation: accuracy against r_test",
             "drop_rate", draw=".drop_rate:draw_figure"),
)  # fmt: skip
#: The TIDES paper's UEA-6 table: ours beside the Log-NCDE benchmark's baselines.
UEA6_ARTEFACTS = (
    Artefact("uea6_results", "table", ("uea6",),
             "UEA-6 (Log-NCDE protocol): accuracy per dataset, ours beside the published",
             draw=".uea6_table:draw_table"),
)  # fmt: skip
#: The TIDES paper's Physiome-ODE table (ours on the official archive and our generated
#: stand-ins, beside the leaderboard) and the critical differences of its columns.
PHYSIOME_ARTEFACTS = (
    Artefact("physiome_results", "table", ("physiome_ode", "physiome"),
             "Physiome-ODE: test MSE per dataset, ours beside the leaderboard, wins and "
             "average rank", "physiome_results", draw=".physiome_table:draw_table"),
    Artefact("physiome_cd", "figure", ("physiome_ode", "physiome"),
             "Physiome-ODE: critical differences, ours beside the leaderboard", "physiome_cd",
             draw=".physiome_table:draw_cd"),
)  # fmt: skip
#: The Im Λ ablation: TIDES with a static vs an input-dependent Im Λ, where it has pairs.
IM_ABLATION_ARTEFACTS = (
    Artefact("im_ablation_table", "table", ("uea_drop", "physiome"),
             "Im Λ ablation: static vs input-dependent Im Λ per dataset",
             draw=".im_ablation:draw_table"),
    Artefact("im_ablation_claims", "table", ("uea_drop", "physiome"),
             "Im Λ ablation: the TIDES paper's claim, checked",
             draw=".im_ablation:draw_claims"),
)  # fmt: skip

#: Diagnostics of the paper's benchmarks, apart from our results: what choosing the tested
#: epoch on the test split would have bought (runs with protocol epoch_test_scores).
DIAGNOSTIC_ARTEFACTS = (
    Artefact("selection_optimism", "table", PAPER_BENCHMARKS,
             "selection optimism: ours, ours if the test split had chosen the epoch, the "
             "paper's, per cell and per model", draw=".selection_optimism:draw_table"),
)  # fmt: skip


def artefacts(benchmarks: Iterable[str], published: bool = False) -> list[Artefact]:
    """The tables and figures for a suite with these benchmarks (``published``: those of
    ``ssmbench report --published``, the paper's alone)."""
    benchmarks = set(PAPER_BENCHMARKS if published else benchmarks)
    out = [a for a in PAPER_ARTEFACTS if benchmarks & set(a.needs)]
    if published:
        return out
    for bench in PAPER_BENCHMARKS:
        if bench in benchmarks:
            out.append(Artefact(PAPER_CD[bench], "figure", (bench,),
                                f"critical differences, {bench}, the paper's", "cd",
                                draw=".critical_difference:draw_cd_paper"))  # fmt: skip
    for bench in sorted(benchmarks - set(PAPER_BENCHMARKS)):
        out += other_benchmark_artefacts(bench)
    for group in (FADING_FLASH_ARTEFACTS, DROP_RATE_ARTEFACTS, IM_ABLATION_ARTEFACTS,
                  UEA6_ARTEFACTS, PHYSIOME_ARTEFACTS, DIAGNOSTIC_ARTEFACTS):  # fmt: skip
        out += [a for a in group if benchmarks & set(a.needs)]
    what = "training curves of MS4 and MS4N (or of the models run)"
    draw = ".figures:draw_training_curves"
    out.append(Artefact("training_curves", "figure", tuple(sorted(benchmarks)), what, "curves",
                        draw=draw))  # fmt: skip
    return out


@dataclass(frozen=True)
class ReportOutput:
    """One file of the report: ``name`` (the key ``build_report`` returns it under),
    ``kind`` (one of ``KINDS``), ``path`` and, for a figure, its ``caption``."""

    name: str
    kind: str
    path: Path
    caption: str | None = None


def artefact_stem(artefact: Artefact, results_dir: Path, figures_dir: Path) -> Path:
    """Where an artefact's files go, without extension."""
    if artefact.kind == "table":
        return Path(results_dir) / TABLES_FOLDER / artefact.key
    return Path(figures_dir) / artefact.key


def _with_suffix(stem: Path, ext: str) -> Path:
    return stem.with_name(f"{stem.name}.{ext}")


def figure_files(stem: str | os.PathLike) -> dict[str, Path]:
    """A figure's files, one folder per format: ``{folder}/png/{name}.png`` and
    ``{folder}/pdf/{name}.pdf`` for ``stem`` = ``{folder}/{name}``, so that the PNG folder
    holds images only (``dvc plots`` renders a folder of images, and fails on a PDF)."""
    stem = Path(stem)
    return {ext: stem.parent / ext / f"{stem.name}.{ext}" for ext in FIGURE_FORMATS}


def _files(artefact: Artefact, stem: Path) -> list[ReportOutput]:
    if artefact.kind == "table":
        paths = {ext: _with_suffix(stem, ext) for ext in TABLE_FORMATS}
    else:
        paths = figure_files(stem)
    return [
        ReportOutput(f"{artefact.key}_{ext}", artefact.kind, path, artefact.caption)
        for ext, path in paths.items()
    ]


def report_outputs(
    results_dir: str | os.PathLike, figures_dir: str | os.PathLike, benchmarks: Iterable[str]
) -> list[ReportOutput]:
    """Every file the report writes for a suite with these benchmarks:

    * ``metrics_csv``: ``{results}/metrics.csv``, one row per run record (results only);
    * ``metric_files``: the folder ``{results}/metrics/``, one small JSON per benchmark and
      model, ``{benchmark}/{model}.json`` (``aggregate.metric_files``): the DVC metrics,
      one row each in ``dvc metrics show``;
    * ``summary_json``: ``{results}/summary.json``, {benchmark: {model: {error, rank...}}},
      the scorecard's counts and the suite and grid it was made for;
    * ``curves_csv``: ``{results}/curves.csv``, all epoch curves in long format;
    * ``protocol_notes_md``: ``{results}/protocol_notes.md``, the runs' settings beside the
      authors' code;
    * ``scorecard_{csv,md}``: ``{results}/scorecard.*``, ours vs the paper per cell;
    * each of ``artefacts(benchmarks)``: tables ``{results}/tables/{key}.{csv,md,tex}``,
      figures ``{figures}/png/{key}.png`` and ``{figures}/pdf/{key}.pdf``.
    """
    results_dir, figures_dir = Path(results_dir), Path(figures_dir)
    outputs = [
        ReportOutput("metrics_csv", "metrics", results_dir / "metrics.csv"),
        ReportOutput("metric_files", "metric_files", results_dir / METRIC_FILES_FOLDER),
        ReportOutput("summary_json", "summary", results_dir / "summary.json"),
        ReportOutput("curves_csv", "curves", results_dir / "curves.csv"),
        ReportOutput("protocol_notes_md", "protocol_notes", results_dir / "protocol_notes.md"),
    ]
    outputs += [
        ReportOutput(f"scorecard_{ext}", "scorecard", results_dir / f"scorecard.{ext}")
        for ext in SCORECARD_FORMATS
    ]
    for artefact in artefacts(benchmarks):
        outputs += _files(artefact, artefact_stem(artefact, results_dir, figures_dir))
    return outputs


class ReportDirs(NamedTuple):
    """Where one suite's report goes: ``results`` (metrics, summary, curves, protocol
    notes, scorecard, ``tables/``), ``figures`` (``png/``, ``pdf/``) and ``log`` (the
    Snakemake rule's log of the report's notices)."""

    results: Path
    figures: Path
    log: Path


def report_dirs(paths: Mapping[str, str], suite: str, params_suite: str | None) -> ReportDirs:
    """The folders of ``suite``'s report, given params.yaml's ``paths`` and the suite
    params.yaml itself names (``params_suite``, before any ``--suite`` or ``--config
    suite=`` override; ``params_file.named_suite``).

    The suite params.yaml names is the one ``dvc repro`` runs: its report is
    ``paths.results`` and ``paths.figures``, the DVC ``report`` stage's outs, and its log
    ``{logs}/report.log``. Any other suite's report is ``{results}/suites/{suite}/``, with
    its figures in ``figures/`` there and its log ``{logs}/suites/{suite}/report.log``, so
    that running it never overwrites what DVC versions."""
    logs = Path(paths["logs"])
    if suite == params_suite:
        return ReportDirs(Path(paths["results"]), Path(paths["figures"]), logs / "report.log")
    root = Path(paths["results"]) / SUITES_FOLDER / suite
    return ReportDirs(root, root / "figures", logs / SUITES_FOLDER / suite / "report.log")


def grid_digest(grid: Iterable[tuple[str, str, str, int]]) -> str:
    """A short sha256 of a grid's (benchmark, dataset, model, fold) runs, in any order:
    summary.json's ``grid.sha256``, which tells whether a report was made for the grid a
    suite has now."""
    runs = sorted([str(b), str(d), str(m), int(f)] for b, d, m, f in grid)
    return hashlib.sha256(json.dumps(runs).encode()).hexdigest()[:16]


def grid_entry(grid: Iterable[tuple[str, str, str, int]]) -> dict:
    """summary.json's ``grid``: how many runs the suite's grid has and its ``grid_digest``."""
    grid = list(grid)
    return {"runs": len(grid), "sha256": grid_digest(grid)}


def report_made_for(results_dir: str | os.PathLike) -> dict | None:
    """What the report in ``results_dir`` was made for, from its summary.json: {"suite":
    name or None (a summary written without one), "grid": {"runs", "sha256"} or None};
    None when the folder has no readable summary.json (no report yet)."""
    path = Path(results_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(summary, dict):
        return None
    suite, grid = summary.get(SUITE_KEY), summary.get(GRID_KEY)
    return {
        "suite": suite if isinstance(suite, str) else None,
        "grid": grid if isinstance(grid, dict) else None,
    }


def published_dir(results_dir: str | os.PathLike) -> Path:
    """``{results}/published``: where ``ssmbench report --published`` writes."""
    return Path(results_dir) / PUBLISHED_FOLDER


def published_outputs(results_dir: str | os.PathLike) -> list[ReportOutput]:
    """Every file of ``ssmbench report --published``: the paper's artefacts drawn from the
    published numbers alone, under ``published_dir`` (``tables/``, ``figures/``), and
    ``tables/paper_consistency.{csv,md}`` (its summaries recomputed from its rows)."""
    root = published_dir(results_dir)
    outputs = []
    for artefact in artefacts(PAPER_BENCHMARKS, published=True):
        outputs += _files(artefact, artefact_stem(artefact, root, root / "figures"))
    stem = root / TABLES_FOLDER / CONSISTENCY_KEY
    outputs += [
        ReportOutput(f"{CONSISTENCY_KEY}_{ext}", "table", _with_suffix(stem, ext))
        for ext in SCORECARD_FORMATS
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


def figure_captions(
    results_dir: str | os.PathLike, figures_dir: str | os.PathLike, benchmarks: Iterable[str]
) -> dict[str, tuple[list[str], str]]:
    """{figure key: ([its files], caption name)}: the Snakemake report's entries."""
    out: dict[str, tuple[list[str], str]] = {}
    for o in report_outputs(results_dir, figures_dir, benchmarks):
        if o.kind == "figure":
            key = o.path.stem
            files, _ = out.setdefault(key, ([], o.caption))
            files.append(str(o.path))
    return out
