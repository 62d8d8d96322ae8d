"""Training curves: ``curves.csv`` and the curve figures (the MS4N paper's Figures 8
and 9, MS4 vs MS4N on Pedestrian and Traffic, and the suite's training dynamics).

Drawn with ``style`` (object API, deterministic files).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ssmbench.io import atomic_write
from ssmbench.staleness import CURVE_FILE_KEY, content_problem, curve_problem
from ssmbench.train.record import CURVE_COLUMNS

from .aggregate import RecordError, read_record
from .context import DrawContext
from .reference import load_published_summary
from .style import message_figure, save

log = logging.getLogger(__name__)

_CURVE_NAME = re.compile(r"^fold(\d+)\.curve\.csv$")


# ---------------------------------------------------------------- curves / Figure 8


def load_curves(runs_dir: str | os.PathLike, models: Sequence[str] | None = None) -> pd.DataFrame:
    """All ``fold{k}.curve.csv`` beside a finished record ``fold{k}.json`` that is that
    record's curve, as one frame with columns
    ``benchmark, dataset, model, fold, epoch, train_loss, train_accuracy, val_loss,
    val_accuracy`` (``train.record.CURVE_COLUMNS``: a curve written before each epoch's
    seconds moved to the run's provenance file has a ``seconds`` column, which is left
    out); ``models`` keeps only those models.

    A curve without its record (an unfinished run) is skipped. So is, with a warning, a
    curve its record does not vouch for (``ssmbench.staleness.curve_problem``: not the
    file the record names, or not the sha256 it holds: a new run's curve beside the
    previous run's record); a record that names no curve file vouches for the one beside
    it. A curve whose record is not as it was written (its content does not match its
    ``content_sha256``: ``ssmbench.staleness.content_problem``) is left out with a
    warning too, as the tables leave out that record."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise FileNotFoundError(f"runs directory not found: {runs_dir}")
    frames = []
    for path in sorted(runs_dir.rglob("fold*.curve.csv")):
        m = _CURVE_NAME.match(path.name)
        record_path = path.with_name(f"fold{m.group(1)}.json") if m else None
        if record_path is None or not record_path.is_file():
            continue
        record = read_record(record_path, runs_dir)
        if models is not None and record["model"] not in models:
            continue
        edited = content_problem(record)
        if edited:
            log.warning(
                "curve %s left out: its record %s was changed by hand (%s); re-run the job "
                "with --force or restore the file", path, record_path.name, edited,
            )  # fmt: skip
            continue
        if CURVE_FILE_KEY in record:
            problem = (
                f"the record names {record[CURVE_FILE_KEY]!r}"
                if record[CURVE_FILE_KEY] != path.name
                else curve_problem(record_path, record)
            )
            if problem:
                log.warning(
                    "curve %s left out: it is not the curve of the record beside it, %s (%s)",
                    path, record_path.name, problem,
                )  # fmt: skip
                continue
        try:
            curve = pd.read_csv(path, float_precision="round_trip")  # exact, not 1 ulp off
        except (OSError, ValueError) as exc:
            raise RecordError(f"malformed curve file {path}: {exc}") from exc
        missing = [c for c in CURVE_COLUMNS if c not in curve.columns]
        if missing:
            raise RecordError(
                f"malformed curve file {path}: missing column(s) {', '.join(missing)}"
            )
        curve = curve[list(CURVE_COLUMNS)]
        for column in CURVE_COLUMNS:  # numbers, or empty (an epoch not validated)
            values = pd.to_numeric(curve[column], errors="coerce")
            bad = values.isna() & curve[column].notna()
            if bad.any():
                row = int(bad.to_numpy().argmax())
                raise RecordError(
                    f"malformed curve file {path}: {column} {curve[column].iloc[row]!r} on data "
                    f"row {row + 1} is not a number"
                )
            curve[column] = values
        curve.insert(0, "fold", record["fold"])
        curve.insert(0, "model", record["model"])
        curve.insert(0, "dataset", record["dataset"])
        curve.insert(0, "benchmark", record["benchmark"])
        frames.append(curve)
    if not frames:
        return pd.DataFrame(columns=["benchmark", "dataset", "model", "fold", *CURVE_COLUMNS])
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(
        ["benchmark", "dataset", "model", "fold", "epoch"], kind="stable"
    ).reset_index(drop=True)


def first_crossing(epochs, values, threshold: float, below: bool) -> int | None:
    """First epoch whose value is below (``below``) / above ``threshold``; None if never."""
    values = np.asarray(values, dtype=float)
    hit = values < threshold if below else values > threshold
    idx = np.flatnonzero(hit)
    return int(np.asarray(epochs)[idx[0]]) if idx.size else None


_PANELS = (
    ("train_loss", "train loss"),
    ("val_loss", "validation loss"),
    ("train_accuracy", "train accuracy"),
    ("val_accuracy", "validation accuracy"),
)
_BELOW = {"val_loss": True, "val_accuracy": False, "train_loss": True, "train_accuracy": False}
_STYLES = ("-", "--", ":", "-.")


def figure8(
    curves: pd.DataFrame,
    path_stem: str | os.PathLike,
    thresholds: Mapping[str, float],
    models: Sequence[str] | None = ("MS4", "MS4N"),
    datasets: Sequence[str] | None = None,
    selected: Mapping[tuple[str, str], Sequence[int]] | None = None,
    paper_epochs: Mapping[tuple[str, str], int] | None = None,
    title: str | None = None,
) -> tuple[dict[str, Path], dict]:
    """Figure 8: training dynamics, 2×2 panels (train loss, val loss, train acc, val acc).

    One line per (model, dataset) — colour = model, line style = dataset — each the mean
    over that pair's runs (folds) at every epoch (runs stopped early drop out of the mean
    from then on). In a panel whose metric has a threshold (``thresholds["val_loss"]``:
    first epoch *below*; ``thresholds["val_accuracy"]``: first epoch *above*) the
    threshold is a grey dotted line, each mean curve's first crossing a vertical marker
    annotated with the epoch, and the legend says the epoch or "never". Epochs that were not
    validated (``val_interval`` > 1) are left out of the validation panels.

    ``selected``: {(model, dataset): the epochs the protocol tested, one per run (the
    records' ``best_epoch``)}; each mean curve gets a dot at their median, the legend says
    it: the same selection rule as the tables.

    ``paper_epochs``: {(model, metric): epoch} the paper reports for a threshold crossing
    (section 5.3: val loss on Pedestrian and Traffic), drawn as hollow stars on the
    threshold line with the epoch printed; ``title``: the figure's title.

    ``models``: which models (those absent from ``curves`` are skipped; when none is
    present, all models are drawn); ``datasets``: which datasets (default: all).
    Returns ({"png": path, "pdf": path}, {model: {dataset: {metric: epoch or None}}}).
    """
    c = curves
    if datasets is not None:
        c = c[c["dataset"].isin(list(datasets))]
    if c.empty:
        return _no_curves(path_stem, datasets, paper_epochs, title), {}
    present = set(c["model"])
    model_list = [m for m in dict.fromkeys(models or ()) if m in present]
    if model_list:
        c = c[c["model"].isin(model_list)]
    else:
        model_list = sorted(present)
    ds_list = sorted(c["dataset"].unique())
    palette, n = ("tab10", 10) if len(model_list) <= 10 else ("tab20", 20)
    colours = {m: matplotlib.colormaps[palette](i % n) for i, m in enumerate(model_list)}
    style = {d: _STYLES[i % len(_STYLES)] for i, d in enumerate(ds_list)}
    metrics = [p for p, _ in _PANELS]
    mean = c.groupby(["model", "dataset", "epoch"], sort=True)[metrics].mean().reset_index()
    n_runs = c.groupby(["model", "dataset"])["fold"].nunique()

    fig = Figure(figsize=(12, 8), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True)
    crossings: dict = {m: {d: {} for d in ds_list} for m in model_list}
    for ax, (metric, panel_title) in zip(axes.flat, _PANELS, strict=True):
        thr = thresholds.get(metric)
        marker_n = 0
        for model in model_list:
            for ds in ds_list:
                sel = mean[(mean["model"] == model) & (mean["dataset"] == ds)]
                sel = sel[["epoch", metric]].dropna()  # validated epochs only
                if sel.empty:
                    continue
                label = f"{model} · {ds}" if len(ds_list) > 1 else model
                if not metric.startswith("val"):
                    label += f" (n={int(n_runs[(model, ds)])})"
                colour = colours[model]
                if thr is not None:
                    ep = first_crossing(sel["epoch"], sel[metric], thr, _BELOW[metric])
                    crossings[model][ds][metric] = ep
                    word = "<" if _BELOW[metric] else ">"
                    if ep is None:
                        label += f": never {word} {thr:g}"
                    else:
                        label += f": {word} {thr:g} at epoch {ep}"
                        yv = float(sel.loc[sel["epoch"] == ep, metric].iloc[0])
                        ax.plot([ep], [yv], marker="*", markersize=13, color=colour,
                                markeredgecolor="black", linestyle="", zorder=5)  # fmt: skip
                        ax.annotate(
                            f"ep {ep}",
                            (ep, yv),
                            xytext=(6, 10 + 14 * marker_n),
                            textcoords="offset points",
                            fontsize=8,
                            color=colour,
                            arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.6},
                        )
                        marker_n += 1
                picked = (selected or {}).get((model, ds))
                if picked:
                    at = int(np.median(picked))
                    label += f"; tested epoch {at} (median)"
                    near = sel.iloc[int(np.argmin(np.abs(sel["epoch"].to_numpy() - at)))]
                    ax.plot([near["epoch"]], [near[metric]], "o", color=colour, markersize=5)
                ax.plot(
                    sel["epoch"],
                    sel[metric],
                    color=colour,
                    linestyle=style[ds],
                    linewidth=1.6,
                    label=label,
                )
        if thr is not None:
            ax.axhline(thr, color="grey", linestyle=":", linewidth=1)
            for (model, pmetric), ep in (paper_epochs or {}).items():
                if pmetric != metric:
                    continue
                colour = colours.get(model, "black")
                ax.plot([ep], [thr], marker="*", markersize=14, markerfacecolor="none",
                        markeredgecolor=colour, linestyle="", zorder=5,
                        label=f"{model} (paper): {'<' if _BELOW[metric] else '>'} {thr:g} "
                        f"at epoch {ep}")  # fmt: skip
        ax.set_title(panel_title, loc="left", fontsize=10)
        ax.set_ylabel(panel_title)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a panel with no curve (no accuracy) has none
            ax.legend(fontsize=8, loc="best")
    for ax in axes[1]:
        ax.set_xlabel("epoch")
    desc = ", ".join(
        f"{k} {'<' if _BELOW.get(k, True) else '>'} {v:g}" for k, v in thresholds.items()
    )
    fig.suptitle(
        (title or "Training dynamics (cf. MS4N paper, Fig. 8)")
        + f"; mean over runs; ★ first crossing of {desc}",
        fontsize=11,
    )
    return save(fig, path_stem), crossings


def _no_curves(path_stem, datasets, paper_epochs, title) -> dict[str, Path]:
    """The curve figure when the records hold no curve for it: says so, and lists the
    paper's epochs."""
    where = f" on {', '.join(datasets)}" if datasets else ""
    lines = [f"no training curves{where} in these records"]
    for (model, metric), epoch in sorted((paper_epochs or {}).items()):
        lines.append(f"paper: {model} reaches its {metric} threshold at epoch {epoch}")
    return message_figure(path_stem, title or "Training dynamics", lines)


def write_curves_csv(curves: pd.DataFrame, path: str | os.PathLike) -> Path:
    """All curves in one long CSV (for ``dvc plots``), atomically."""
    return atomic_write(
        path, lambda p: curves.to_csv(p, index=False, lineterminator="\n", encoding="utf-8")
    )


# ---------------------------------------------------------------- the report's entries
# (outputs.py names these; each gets a context.DrawContext)

#: The training-curve figure compares these two (the paper's MS4 vs MS4N); others only if
#: neither ran.
CURVE_MODELS = ("MS4", "MS4N")
#: It draws at most this many datasets unless report.figure8_datasets names them.
CURVE_MAX_DATASETS = 3
#: Figures 8 and 9: the dataset each shows.
CONVERGENCE_DATASETS = {"figure8": "Pedestrian", "figure9": "Traffic"}


def _paper_epochs(dataset: str) -> dict[tuple[str, str], int]:
    """Section 5.3's convergence epochs (val loss) on ``dataset``."""
    s = load_published_summary()
    metric = f"convergence_epoch_val_loss_{dataset}"
    rows = s[s["metric"] == metric]
    return {(r.model, "val_loss"): int(r.value) for r in rows.itertuples(index=False)}


def _tested_epochs(ctx: DrawContext) -> dict[tuple[str, str], list[int]]:
    """{(model, dataset): the epochs the protocol tested, one per run} (none for a record
    without ``best_epoch``: a non-deep model's, or an older record's; none at all in the
    published-only report)."""
    records = ctx.records
    if records.empty:
        return {}
    if "best_epoch" not in records.columns:
        log.warning("training curves: no record has best_epoch: no tested epoch is marked")
        return {}
    epochs = pd.to_numeric(records["best_epoch"], errors="coerce")
    return {
        (model, ds): [int(e) for e in epochs[group.index].dropna()]
        for (model, ds), group in records.groupby(["model", "dataset"])
    }


def draw_convergence(ctx: DrawContext) -> dict[str, Path]:
    """The report's Figures 8 and 9 (outputs.py): MS4 vs MS4N on the dataset of
    ``CONVERGENCE_DATASETS[key]``, with the paper's convergence epochs."""
    key, curves = ctx.artefact.key, ctx.curves
    dataset = CONVERGENCE_DATASETS[key]
    label = f"Figure {key.removeprefix('figure')}"
    have = curves[(curves["dataset"] == dataset) & (curves["benchmark"] == "monster")]
    if have.empty:
        log.info("%s: no training curves of %s in these records: drawn with the "
                    "paper's epochs only", key, dataset)  # fmt: skip
    paths, _ = figure8(
        have, ctx.stem, ctx.thresholds, models=CURVE_MODELS, datasets=[dataset],
        selected=ctx.once(_tested_epochs), paper_epochs=_paper_epochs(dataset),
        title=f"{label}: MS4 vs MS4N on {dataset} (cf. MS4N paper, {label})",
    )  # fmt: skip
    return paths


def draw_training_curves(ctx: DrawContext) -> dict[str, Path]:
    """The report's training dynamics (outputs.py: ``training_curves``): every model with
    curves in the records, on the datasets of params.yaml ``report.figure8_datasets``, else
    on up to ``CURVE_MAX_DATASETS`` that every such model has (else any). Figure 8 itself
    (``draw_figure8``) keeps the paper's two models."""
    curves, datasets = ctx.curves, ctx.curve_datasets
    models = sorted(set(curves["model"])) if not curves.empty else None
    if not datasets and not curves.empty:
        have_all = curves.groupby("dataset")["model"].nunique()
        datasets = (
            sorted(have_all[have_all == len(models)].index) or sorted(curves["dataset"].unique())
        )[:CURVE_MAX_DATASETS]
    if curves.empty:
        log.info("training_curves: no training curves in these records (non-deep "
                    "models only, or no run finished): the figure says so")  # fmt: skip
    paths, _ = figure8(
        curves, ctx.stem, ctx.thresholds, models=models, datasets=datasets,
        selected=ctx.once(_tested_epochs), title="Training dynamics",
    )  # fmt: skip
    return paths
