"""Figures 7 and 8 of the MS4N paper, redrawn from our runs.

Uses matplotlib's object API (``matplotlib.figure.Figure``, Agg canvas) and never pyplot,
so it sets no global backend and leaks no figures. Output is deterministic: PNG carries
no date, PDF is saved with ``CreationDate`` removed.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator

from ssmbench.io import atomic_write
from ssmbench.staleness import CURVE_FILE_KEY, curve_problem

from .aggregate import RecordError, read_record, summary_frame

CURVE_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds")
#: Left out of curves.csv: wall-clock time differs on every rerun (the run's own curve
#: file keeps it).
NOT_IN_CURVES_CSV = ("seconds",)
_CURVE_NAME = re.compile(r"^fold(\d+)\.curve\.csv$")
_DPI = 150
_PLAIN = FuncFormatter(lambda v, _pos: f"{v:g}")
#: Where the MS4N paper's Figure 7 plots models that have no parameters or MACs.
COMPLEXITY_PROXY = {"params": 20_000, "mmac": 1e-6}


def _save(fig: Figure, path_stem: str | os.PathLike) -> dict[str, Path]:
    """Save ``fig`` as ``{stem}.png`` and ``{stem}.pdf``, atomically and reproducibly."""
    FigureCanvasAgg(fig)
    stem = Path(path_stem)
    png = atomic_write(
        stem.with_name(stem.name + ".png"),
        lambda p: fig.savefig(p, format="png", dpi=_DPI, metadata={"Software": None}),
    )
    pdf = atomic_write(
        stem.with_name(stem.name + ".pdf"),
        lambda p: fig.savefig(
            p, format="pdf", metadata={"CreationDate": None, "Producer": None, "Creator": None}
        ),
    )
    return {"png": png, "pdf": pdf}


def _colours(keys: Sequence[str]) -> dict[str, tuple]:
    cmap = matplotlib.colormaps["tab10"]
    return {k: cmap(i % 10) for i, k in enumerate(sorted(set(map(str, keys))))}


# ---------------------------------------------------------------- Figure 7


def rank_vs_complexity(summary: pd.DataFrame) -> pd.DataFrame:
    """The points of Figure 7A: models with a mean rank and MMac > 0. Models without
    parameters or MACs (QUANT, Hydra, ET: ``params`` and ``mmac`` both null in their
    records, "not applicable") are placed at the MS4N paper's proxies of 20K parameters
    and 1 FLOP (``COMPLEXITY_PROXY``)."""
    s = summary.copy()
    s["mmac"] = pd.to_numeric(s["mmac"], errors="coerce").astype(float)
    s["params"] = pd.to_numeric(s["params"], errors="coerce").astype(float)
    no_count = s["mmac"].isna() & s["params"].isna()
    s.loc[no_count, "mmac"] = COMPLEXITY_PROXY["mmac"]
    s.loc[no_count, "params"] = float(COMPLEXITY_PROXY["params"])
    return s[s["mean_rank"].notna() & (s["mmac"] > 0)]


def figure7(data: pd.DataFrame, path_stem: str | os.PathLike, benchmark: str) -> dict[str, Path]:
    """Figure 7: (A) mean rank vs MMac (log x), bubble area ~ params, labelled by model;
    (B) mean error per model; (C) mean std per model. Colour = model family.

    ``data``: the records (``collect_records``) or a ``summary_frame``. Writes
    ``{path_stem}.png`` and ``.pdf``; returns their paths.
    """
    if "test_error" in data.columns and "fold" in data.columns:
        summary = summary_frame(data)
    else:
        summary = data
    s = summary[summary["benchmark"] == benchmark].copy()
    if s.empty:
        raise ValueError(f"no results for benchmark {benchmark!r}")
    if "family" not in s.columns:
        s["family"] = s["model"]
    s["family"] = s["family"].where(s["family"].notna(), "unknown").astype(str)
    s = s.sort_values(["mean_error", "model"], kind="stable").reset_index(drop=True)
    colours = _colours(s["family"])
    fam_colour = [colours[f] for f in s["family"]]

    fig = Figure(figsize=(13, 4.2), layout="constrained")
    ax_a, ax_b, ax_c = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1, 1]})

    # A: rank vs MMac
    a = rank_vs_complexity(s)
    params = pd.to_numeric(a["params"], errors="coerce").fillna(0).to_numpy(float)
    if len(a):
        pmax = params.max() if params.max() > 0 else 1.0
        sizes = 80 + 1400 * np.sqrt(params / pmax)
        ax_a.scatter(
            a["mmac"],
            a["mean_rank"],
            s=sizes,
            c=[colours[f] for f in a["family"]],
            alpha=0.55,
            edgecolors="black",
            linewidths=0.8,
            zorder=3,
        )
        for row, p in zip(a.itertuples(index=False), params, strict=True):
            ax_a.annotate(
                f"{row.model}\n{p / 1e3:.1f}k params",
                (row.mmac, row.mean_rank),
                ha="center",
                va="center",
                fontsize=8,
                zorder=4,
            )
        ax_a.set_xscale("log")
        ax_a.xaxis.set_major_locator(LogLocator(base=10))
        ax_a.xaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
        ax_a.xaxis.set_major_formatter(_PLAIN)
        ax_a.xaxis.set_minor_formatter(_PLAIN)
        xmin, xmax = a["mmac"].min(), a["mmac"].max()
        ax_a.set_xlim(xmin / 2.5, xmax * 2.5)
        ymin, ymax = a["mean_rank"].min(), a["mean_rank"].max()
        pad = max(0.35, 0.25 * (ymax - ymin))
        ax_a.set_ylim(ymin - pad, ymax + pad)
    else:
        ax_a.text(
            0.5,
            0.5,
            "no model with both a rank and MMac",
            ha="center",
            va="center",
            transform=ax_a.transAxes,
        )
    dropped = sorted(set(s["model"]) - set(a["model"]))
    n_ranked = int(s["n_ranked_datasets"].max()) if "n_ranked_datasets" in s else 0
    title = f"A  mean rank vs complexity ({n_ranked} datasets ranked)"
    ax_a.set_title(title, loc="left", fontsize=10)
    if dropped:
        ax_a.text(
            0.01,
            0.01,
            "not shown (no rank or MMac): " + ", ".join(dropped),
            transform=ax_a.transAxes,
            fontsize=7,
            va="bottom",
        )
    ax_a.set_xlabel("MMac per sample (log scale)")
    ax_a.set_ylabel("mean rank (lower is better)")
    ax_a.grid(True, which="both", alpha=0.3)

    # B, C: bars
    x = np.arange(len(s))
    for ax, col, label, letter in (
        (ax_b, "mean_error", "mean error", "B"),
        (ax_c, "mean_std", "mean std over runs", "C"),
    ):
        vals = pd.to_numeric(s[col], errors="coerce").to_numpy(float)
        bars = ax.bar(
            x, np.nan_to_num(vals), color=fam_colour, edgecolor="black", linewidth=0.6, zorder=3
        )
        ax.bar_label(
            bars,
            labels=[f"{v:.3f}" if np.isfinite(v) else "n/a" for v in vals],
            fontsize=8,
            padding=2,
        )
        ax.set_xticks(x, s["model"], rotation=30, ha="right")
        ax.set_ylabel(label)
        ax.set_title(f"{letter}  {label} per model", loc="left", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        top = np.nanmax(vals) if np.isfinite(vals).any() else 0.0
        ax.set_ylim(0, top * 1.18 if top > 0 else 1.0)

    handles = [
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            markersize=9,
            markerfacecolor=c,
            markeredgecolor="black",
            label=f,
        )
        for f, c in colours.items()
    ]
    fig.legend(handles=handles, title="family", loc="outside right center", fontsize=8)
    fig.suptitle(
        f"{benchmark.upper()}: accuracy vs complexity (cf. MS4N paper, Fig. 7)", fontsize=11
    )
    return _save(fig, path_stem)


# ---------------------------------------------------------------- curves / Figure 8


def load_curves(runs_dir: str | os.PathLike, models: Sequence[str] | None = None) -> pd.DataFrame:
    """All ``fold{k}.curve.csv`` beside a finished record ``fold{k}.json`` that is that
    record's curve, as one frame with columns
    ``benchmark, dataset, model, fold, epoch, train_loss, train_accuracy, val_loss,
    val_accuracy, seconds``; ``models`` keeps only those models.

    A curve without its record (an unfinished run) is skipped. So is, with a warning, a
    curve its record does not vouch for (``ssmbench.staleness.curve_problem``: not the
    file the record names, or not the sha256 it holds: a new run's curve beside the
    previous run's record); a record that names no curve file vouches for the one beside
    it."""
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
        if CURVE_FILE_KEY in record:
            problem = (
                f"the record names {record[CURVE_FILE_KEY]!r}"
                if record[CURVE_FILE_KEY] != path.name
                else curve_problem(record_path, record)
            )
            if problem:
                warnings.warn(
                    f"curve {path} left out: it is not the curve of the record beside it, "
                    f"{record_path.name} ({problem})",
                    stacklevel=2,
                )
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

    ``models``: which models (those absent from ``curves`` are skipped; when none is
    present, all models are drawn); ``datasets``: which datasets (default: all).
    Returns ({"png": path, "pdf": path}, {model: {dataset: {metric: epoch or None}}}).
    """
    c = curves
    if datasets is not None:
        c = c[c["dataset"].isin(list(datasets))]
    if c.empty:
        raise ValueError("no training curves to plot")
    present = set(c["model"])
    model_list = [m for m in dict.fromkeys(models or ()) if m in present]
    if model_list:
        c = c[c["model"].isin(model_list)]
    else:
        model_list = sorted(present)
    ds_list = sorted(c["dataset"].unique())
    colours = {m: matplotlib.colormaps["tab10"](i % 10) for i, m in enumerate(model_list)}
    style = {d: _STYLES[i % len(_STYLES)] for i, d in enumerate(ds_list)}
    metrics = [p for p, _ in _PANELS]
    mean = c.groupby(["model", "dataset", "epoch"], sort=True)[metrics].mean().reset_index()
    n_runs = c.groupby(["model", "dataset"])["fold"].nunique()

    fig = Figure(figsize=(12, 8), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True)
    crossings: dict = {m: {d: {} for d in ds_list} for m in model_list}
    for ax, (metric, title) in zip(axes.flat, _PANELS, strict=True):
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
                        ax.axvline(ep, color=colour, linestyle=style[ds], linewidth=1, alpha=0.8)
                        yv = float(sel.loc[sel["epoch"] == ep, metric].iloc[0])
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
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_ylabel(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    for ax in axes[1]:
        ax.set_xlabel("epoch")
    desc = ", ".join(
        f"{k} {'<' if _BELOW.get(k, True) else '>'} {v:g}" for k, v in thresholds.items()
    )
    fig.suptitle(
        f"Training dynamics, mean over runs (cf. MS4N paper, Fig. 8); thresholds: {desc}",
        fontsize=11,
    )
    return _save(fig, path_stem), crossings


def write_curves_csv(curves: pd.DataFrame, path: str | os.PathLike) -> Path:
    """All curves in one long CSV (for ``dvc plots``) without ``NOT_IN_CURVES_CSV``,
    atomically."""
    table = curves.drop(columns=[c for c in NOT_IN_CURVES_CSV if c in curves.columns])
    return atomic_write(
        path, lambda p: table.to_csv(p, index=False, lineterminator="\n", encoding="utf-8")
    )
