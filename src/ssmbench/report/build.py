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
from pathlib import Path

import pandas as pd

from ssmbench.io import atomic_write, atomic_write_text

from .aggregate import (
    collect_records,
    filter_models,
    summarise,
    write_metrics_csv,
    write_summary_json,
)
from .critical_difference import cd_diagram
from .drop_rate import drop_rate_claims, drop_rate_figure, drop_rate_results, drop_rate_table
from .fading_flash import (
    NOISY_DATASET,
    decay_results,
    fading_flash_claims,
    fading_flash_decay_figure,
    fading_flash_figure,
    fading_flash_results,
    fading_flash_table,
)
from .figure1 import figure1
from .figures import CURVE_COLUMNS, figure8, load_curves, write_curves_csv
from .im_ablation import im_ablation_claims, im_ablation_results, im_ablation_table
from .outputs import (
    CONSISTENCY_KEY,
    PAPER_BENCHMARKS,
    Artefact,
    artefact_stem,
    artefacts,
    published_dir,
    report_outputs,
)
from .overview import overview_figure
from .pairwise import pairwise_figure
from .paper_tables import (
    paper_consistency,
    per_dataset_table,
    table1,
    table2,
    table4,
)
from .physiome_table import physiome_cd_diagram, physiome_results, write_physiome_table
from .polar_ranks import polar_rank_figure
from .protocol_notes import write_protocol_notes
from .reference import load_published_summary
from .results import ours_per_dataset, paper_per_dataset, restrict
from .scorecard import (
    leaderboard_comparison,
    leaderboard_counts,
    published_counterparts,
    scorecard,
    scorecard_counts,
    write_scorecard,
)
from .selection_optimism import selection_optimism_runs, selection_optimism_table
from .style import message_figure
from .tables import write_table
from .uea6_table import uea6_results, write_uea6_table

log = logging.getLogger("ssmbench.report")

#: The training-curve figure compares these two (the paper's MS4 vs MS4N); others only if
#: neither ran.
CURVE_MODELS = ("MS4", "MS4N")
#: It draws at most this many datasets unless report.figure8_datasets names them.
CURVE_MAX_DATASETS = 3
DEFAULT_THRESHOLDS = {"val_loss": 0.5, "val_accuracy": 0.9}
#: Figures 8 and 9: the dataset each shows.
CONVERGENCE_DATASETS = {"figure8": "Pedestrian", "figure9": "Traffic"}
#: Figures 4–6: the MONSTER domains of each.
POLAR_DOMAINS = {
    "figure4": ("Audio", "Other"),
    "figure5": ("EEG", "HAR"),
    "figure6": ("Satellite", "Counts"),
}
#: Significance level of the critical-difference diagrams.
CD_ALPHA = 0.05


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


def _on(frame: pd.DataFrame, benchmarks: list[str]) -> pd.DataFrame:
    return frame[frame["benchmark"].isin(benchmarks)]


def _paper_epochs(dataset: str) -> dict[tuple[str, str], int]:
    """Section 5.3's convergence epochs (val loss) on ``dataset``."""
    s = load_published_summary()
    metric = f"convergence_epoch_val_loss_{dataset}"
    rows = s[s["metric"] == metric]
    return {(r.model, "val_loss"): int(r.value) for r in rows.itertuples(index=False)}


def _written(prefix: str, paths: Mapping[str, Path]) -> dict[str, Path]:
    return {f"{prefix}_{ext}": path for ext, path in paths.items()}


def _draw(artefact: Artefact, stem: Path, ours, paper, curves, options) -> dict[str, Path]:
    """Write one artefact; ``ours``/``paper`` per-dataset frames (``paper`` already on
    our datasets and models, or all of it in the published-only report)."""
    key = artefact.key
    full_paper = options["full_paper"]
    curves_only = key in CONVERGENCE_DATASETS or key == "training_curves"
    if key == "physiome_cd":  # the leaderboard's columns are drawn even without ours
        return physiome_cd_diagram(options["physiome"], stem, alpha=CD_ALPHA)
    if artefact.kind == "figure" and not curves_only:
        needs = list(artefact.needs)
        if _on(ours, needs).empty and _on(paper, needs).empty:
            where = " or ".join(needs)
            log.warning("%s: skipped: no results of ours or the paper's on %s", key, where)
            return message_figure(stem, artefact.what, [f"no results on {where} in these records"])
    if key == "table1":
        return write_table(table1(ours, full_paper), stem)
    if key == "table2":
        return write_table(table2(ours, full_paper, options.get("counts")), stem)
    if key == "table3":
        return write_table(per_dataset_table(ours, full_paper, "monster"), stem)
    if key == "table4":
        return write_table(table4(ours, full_paper, options.get("counts")), stem)
    if key == "table5":
        return write_table(per_dataset_table(ours, full_paper, "uea"), stem)
    if key == "fading_flash_table":
        return write_table(fading_flash_table(options["fading_flash"]), stem)
    if key == "fading_flash_claims":
        return write_table(fading_flash_claims(options["fading_flash"]), stem)
    if key == "fading_flash":
        return fading_flash_figure(options["fading_flash"], stem)
    if key == "fading_flash_noisy_table":
        return write_table(fading_flash_table(options["fading_flash_noisy"]), stem)
    if key == "fading_flash_noisy":
        title = "Fading Flash, trained on noisy rows, tested clean"
        return fading_flash_figure(options["fading_flash_noisy"], stem, title)
    if key == "fading_flash_decay":
        return fading_flash_decay_figure(options["decay"], stem)
    if key == "drop_rate_table":
        return write_table(drop_rate_table(options["drop_rate"]), stem)
    if key == "drop_rate_claims":
        return write_table(drop_rate_claims(options["drop_rate"]), stem)
    if key == "drop_rate":
        return drop_rate_figure(options["drop_rate"], stem)
    if key == "selection_optimism":
        return write_table(selection_optimism_table(options["selection_optimism"], full_paper),
                           stem)  # fmt: skip
    if key == "uea6_results":
        return write_uea6_table(options["uea6"], stem)
    if key == "physiome_results":
        return write_physiome_table(options["physiome"], stem)
    if key == "im_ablation_table":
        return write_table(im_ablation_table(options["im_ablation"]), stem)
    if key == "im_ablation_claims":
        return write_table(im_ablation_claims(options["im_ablation"]), stem)
    if key.endswith("_table"):
        bench = key.removesuffix("_table")
        regression = bench in options["regression"]
        table = per_dataset_table(ours, paper.iloc[0:0], bench, regression=regression)
        return write_table(table, stem)
    if key == "figure1":
        return figure1(ours, paper, stem)
    if key in ("figure3", "figure7") or key.startswith("overview_"):
        bench = {"figure3": "monster", "figure7": "uea"}.get(key, key.removeprefix("overview_"))
        label = {"figure3": "Figure 3", "figure7": "Figure 7"}.get(key, "overview")
        return overview_figure(restrict(ours, bench), restrict(paper, bench), stem, bench, label)
    if key in POLAR_DOMAINS:
        return polar_rank_figure(
            restrict(ours, "monster"), restrict(paper, "monster"), stem, POLAR_DOMAINS[key],
            f"Figure {key.removeprefix('figure')}",
        )  # fmt: skip
    if key.startswith("figure10_"):
        bench = key.removeprefix("figure10_")
        return pairwise_figure(restrict(ours, bench), restrict(paper, bench), stem, bench)
    if key.startswith("cd_"):
        bench = key.split("_")[1]
        of_paper = key.endswith("_paper") or ours.empty
        frame = restrict(paper if of_paper else ours, bench)
        whose = "the paper's (MS4N paper)" if of_paper else "ours"
        title = f"{bench.upper()}: critical differences, {whose}"
        if frame.empty:
            log.warning("%s: skipped the diagram: no %s results on %s", key, whose, bench)
            return message_figure(stem, title, [f"no {whose} results on {bench} to rank"])
        return cd_diagram(frame, stem, title, alpha=CD_ALPHA)
    if key in CONVERGENCE_DATASETS or key == "training_curves":
        return _curve_figure(key, stem, curves, options)
    raise ValueError(f"no drawing for report artefact {key!r}")


def _curve_figure(key: str, stem: Path, curves: pd.DataFrame, options) -> dict[str, Path]:
    thresholds = options["thresholds"]
    if key in CONVERGENCE_DATASETS:
        dataset = CONVERGENCE_DATASETS[key]
        label = f"Figure {key.removeprefix('figure')}"
        have = curves[(curves["dataset"] == dataset) & (curves["benchmark"] == "monster")]
        if have.empty:
            log.warning("%s: no training curves of %s in these records: drawn with the "
                        "paper's epochs only", key, dataset)  # fmt: skip
        paths, _ = figure8(
            have, stem, thresholds, models=CURVE_MODELS, datasets=[dataset],
            selected=options["selected"], paper_epochs=_paper_epochs(dataset),
            title=f"{label}: MS4 vs MS4N on {dataset} (cf. MS4N paper, {label})",
        )  # fmt: skip
        return paths
    datasets = options["curve_datasets"]
    if not datasets and not curves.empty:
        present = set(curves["model"])
        models = [m for m in CURVE_MODELS if m in present] or sorted(present)
        have_all = curves[curves["model"].isin(models)].groupby("dataset")["model"].nunique()
        datasets = (
            sorted(have_all[have_all == len(models)].index) or sorted(curves["dataset"].unique())
        )[:CURVE_MAX_DATASETS]
    if curves.empty:
        log.warning("training_curves: no training curves in these records (non-deep "
                    "models only, or no run finished): the figure says so")  # fmt: skip
    paths, _ = figure8(
        curves, stem, thresholds, models=CURVE_MODELS, datasets=datasets,
        selected=options["selected"], title="Training dynamics",
    )  # fmt: skip
    return paths


def _tested_epochs(records: pd.DataFrame) -> dict[tuple[str, str], list[int]]:
    """{(model, dataset): the epochs the protocol tested, one per run} (none for a record
    without ``best_epoch``: a non-deep model's, or an older record's)."""
    if "best_epoch" not in records.columns:
        log.warning("training curves: no record has best_epoch: no tested epoch is marked")
        return {}
    epochs = pd.to_numeric(records["best_epoch"], errors="coerce")
    return {
        (model, ds): [int(e) for e in epochs[group.index].dropna()]
        for (model, ds), group in records.groupby(["model", "dataset"])
    }


def build_report(
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    report_params: Mapping | None,
    benchmark_models: Mapping[str, Iterable[str]] | None = None,
    grid: Iterable[tuple[str, str, str, int]] | None = None,
    benchmarks: Iterable[str] | None = None,
    model_entries: Mapping[str, Mapping] | None = None,
) -> dict[str, Path]:
    """Write the whole report and return {name: path} of what was written: exactly the
    files of ``outputs.report_outputs`` for ``benchmarks`` (default: those found in the
    records).

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
        log.warning("%s: no record of this benchmark yet: its artefacts say so", bench)

    outputs = {o.name: o.path for o in report_outputs(results_dir, figures_dir, benchmarks)}
    written: dict[str, Path] = {}
    written["metrics_csv"] = write_metrics_csv(records, outputs["metrics_csv"])
    ours = ours_per_dataset(records)
    full_paper = paper_per_dataset(PAPER_BENCHMARKS)
    # the MS4N paper's cells, and the TIDES benchmarks' published cells of the models of
    # ours that reimplement one (UEA-6's S5-logncde)
    published = pd.concat([full_paper, published_counterparts()], ignore_index=True)
    card = scorecard(ours, _compared(ours, published))
    physiome = physiome_results(records)
    leaderboard = leaderboard_comparison(physiome)
    summary = summarise(records, benchmark_models)
    summary["scorecard"] = scorecard_counts(card)
    if not leaderboard.empty:  # only with runs on the official archive: others unchanged
        summary["physiome_leaderboard"] = leaderboard_counts(leaderboard)
    written["summary_json"] = write_summary_json(summary, outputs["summary_json"])
    written["protocol_notes_md"] = write_protocol_notes(records, outputs["protocol_notes_md"])
    scorecard_files = write_scorecard(card, results_dir / "scorecard", leaderboard=leaderboard)
    written.update(_written("scorecard", scorecard_files))

    curves = _in_grid(load_curves(runs_dir), grid)
    if benchmark_models is not None and not curves.empty:
        curves = filter_models(curves, benchmark_models).reset_index(drop=True)
    written["curves_csv"] = write_curves_csv(curves, outputs["curves_csv"])
    tasks = records.groupby("benchmark")["task"].agg(set) if "task" in records else {}
    options = {
        "full_paper": full_paper,
        "regression": {b for b, t in dict(tasks).items() if t == {"regression"}},
        "thresholds": dict(report_params.get("convergence_thresholds") or DEFAULT_THRESHOLDS),
        "curve_datasets": report_params.get("figure8_datasets"),
        "selected": _tested_epochs(records),
        "fading_flash": fading_flash_results(records),
        "fading_flash_noisy": fading_flash_results(records, NOISY_DATASET),
        "decay": decay_results(records),
        "drop_rate": drop_rate_results(records),
        "im_ablation": im_ablation_results(records),
        "uea6": uea6_results(records),
        "physiome": physiome,
        # the only reader of the runs' per-epoch test scores (kept apart from every result)
        "selection_optimism": selection_optimism_runs(records, runs_dir),
    }
    if "monster" in benchmarks and model_entries:
        from .table4 import table4_comparison  # builds models: imports torch, only here

        run = set(records.loc[records["benchmark"] == "monster", "model"])
        names = [m for m in model_entries if m in run]
        options["counts"] = table4_comparison(model_entries, names) if names else None
    paper = _compared(ours, full_paper)
    for artefact in artefacts(benchmarks):
        stem = artefact_stem(artefact, results_dir, figures_dir)
        written.update(_written(artefact.key, _draw(artefact, stem, ours, paper, curves, options)))
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
    empty_curves = load_curves_frame()
    report_params = dict(report_params or {})
    options = {
        "full_paper": full_paper,
        "regression": set(),
        "thresholds": dict(report_params.get("convergence_thresholds") or DEFAULT_THRESHOLDS),
        "curve_datasets": None,
        "selected": {},
    }
    written: dict[str, Path] = {}
    for artefact in artefacts(PAPER_BENCHMARKS, published=True):
        stem = artefact_stem(artefact, root, root / "figures")
        written.update(
            _written(artefact.key, _draw(artefact, stem, empty, full_paper, empty_curves, options))
        )
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
