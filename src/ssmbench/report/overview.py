"""The MS4N paper's Figures 3 (MONSTER) and 7 (UEA), ours beside the paper's: (A) mean rank
vs MMac per sample, bubble area proportional to parameters; (B) mean error per model;
(C) mean std over runs per model. Colours are the paper's model groups (``style``).

Also the model points of a pair of per-dataset frames (``overview_data``) and the gaps
notes that ``figure1`` (the paper's Figure 1) shares; both draw with ``bubble_plot``.

NonDL models (QUANT, Hydra, ET) have no parameters or MACs; the paper places them at 20K
parameters and 1 FLOP (1e-6 MMac), and so do these figures (``COMPLEXITY_PROXY``), on a
separate stub of the MMac axis so that nine empty decades do not squeeze the deep models.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import style
from .bubble_plot import (
    Bubbles,
    complexity_axes,
    draw_bubbles,
    draw_notes,
    finish,
    legend_handles,
    notes_height,
    panel_title,
    set_complexity_limits,
    set_linear_limits,
    wrap_notes,
)
from .context import DrawContext, from_results
from .results import PAPER_MODEL_FAMILY, model_summary, restrict

log = logging.getLogger(__name__)

#: Where the MS4N paper plots models that have no parameters or MACs.
COMPLEXITY_PROXY = style.COMPLEXITY_PROXY
PROXY_NOTE = (
    "* NonDL models ({models}) have no parameters or MACs; as in the MS4N paper they are "
    "placed at 20K parameters and 1 FLOP (= 1e-6 MMac), on the axis stub marked 1 FLOP."
)
BENCHMARK_NAMES = {"monster": "MONSTER", "uea": "UEA"}
SOURCES = ("ours", "paper")
DATA_COLUMNS = (
    "source",
    "benchmark",
    "model",
    "family",
    "group",
    "primary",
    "mean_error",
    "mean_rank",
    "mean_std",
    "n_datasets",
    "n_ranked_datasets",
    "params",
    "mmac",
    "plotted_params",
    "plotted_mmac",
    "proxy",
)


def benchmark_name(benchmark: str) -> str:
    """How a figure names a benchmark (MONSTER, UEA)."""
    return BENCHMARK_NAMES.get(str(benchmark).lower(), str(benchmark))


def _family(model: str, family) -> object:
    """The frame's family, else the paper's for that model name (our records may lack it)."""
    if isinstance(family, str):
        return family
    return PAPER_MODEL_FAMILY.get(model, np.nan)


def overview_data(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, benchmark, model) of two per-dataset frames (``source`` is
    ``ours`` or ``paper``): ``model_summary``'s mean_error, mean_rank (each source ranked
    over its own frame), mean_std, n_datasets, n_ranked_datasets, params and mmac; the
    paper's ``group``; ``primary`` (the source drawn filled: ours where ours has rows for
    the benchmark, else the paper's); and ``plotted_params`` / ``plotted_mmac``, where a
    NonDL model without figures is placed (``COMPLEXITY_PROXY``, ``proxy`` True)."""
    parts = []
    for source, frame in zip(SOURCES, (ours, paper), strict=True):
        if frame is None or frame.empty:
            continue
        summary = model_summary(frame)
        summary.insert(0, "source", source)
        parts.append(summary)
    if not parts:
        raise ValueError("overview: no results to draw: both `ours` and `paper` are empty")
    data = pd.concat(parts, ignore_index=True)
    data["family"] = [_family(m, f) for m, f in zip(data["model"], data["family"], strict=True)]
    data["group"] = [style.group_of(f) for f in data["family"]]
    ours_benchmarks = set(data.loc[data["source"] == "ours", "benchmark"])
    data["primary"] = [
        (s == "ours") == (b in ours_benchmarks)
        for s, b in zip(data["source"], data["benchmark"], strict=True)
    ]
    for col in ("mean_error", "mean_rank", "mean_std", "params", "mmac"):
        data[col] = pd.to_numeric(data[col], errors="coerce").astype(float)
    non_deep = np.array([style.is_non_deep(f) for f in data["family"]], dtype=bool)
    data["proxy"] = non_deep & data["mmac"].isna().to_numpy()
    data["plotted_mmac"] = data["mmac"].where(~data["proxy"], COMPLEXITY_PROXY["mmac"])
    no_params = non_deep & data["params"].isna().to_numpy()
    data["plotted_params"] = data["params"].where(~no_params, COMPLEXITY_PROXY["params"])
    order = {s: i for i, s in enumerate(SOURCES)}
    data = data.sort_values(
        ["benchmark", "source", "model"], key=lambda c: c.map(order) if c.name == "source" else c
    )
    return data[list(DATA_COLUMNS)].reset_index(drop=True)


# ---------------------------------------------------------------- shared drawing pieces


def coverage(frame: pd.DataFrame) -> str:
    """ "3 models, 2 datasets" of a per-dataset frame."""
    n_models, n_datasets = frame["model"].nunique(), frame["dataset"].nunique()
    return f"{n_models} model{'s' * (n_models != 1)}, {n_datasets} dataset{'s' * (n_datasets != 1)}"


def source_gaps(
    artefact: str, data: pd.DataFrame, benchmark: str, logger: logging.Logger = log
) -> list[str]:
    """Models one source has and the other lacks (when both have rows), noted and logged."""
    bench = data[data["benchmark"] == benchmark]
    by_source = {s: set(bench.loc[bench["source"] == s, "model"]) for s in SOURCES}
    if not by_source["ours"] or not by_source["paper"]:
        return []
    notes = []
    name = benchmark_name(benchmark)
    no_paper = sorted(by_source["ours"] - by_source["paper"])
    if no_paper:
        notes.append(f"{name}: no paper figure for {', '.join(no_paper)} (ours only).")
        logger.info(
            "%s: skipped the paper's points for %s (%s): no paper values",
            artefact,
            ", ".join(no_paper),
            name,
        )
    no_ours = sorted(by_source["paper"] - by_source["ours"])
    if no_ours:
        notes.append(f"{name}: no results of ours for {', '.join(no_ours)} (paper only).")
        logger.info(
            "%s: skipped our points for %s (%s): no results of ours",
            artefact,
            ", ".join(no_ours),
            name,
        )
    return notes


def placeable(
    artefact: str,
    data: pd.DataFrame,
    value: str,
    value_name: str,
    panel: str,
    logger: logging.Logger = log,
) -> tuple[pd.DataFrame, list[str]]:
    """Rows of ``data`` with a ``value`` and a positive plotted MMac, and a note (also
    logged) per source of the models that cannot be placed and why; a note for the models
    drawn at the minimum size for want of a parameter count."""
    has_value = data[value].notna()
    has_mmac = data["plotted_mmac"].notna() & (data["plotted_mmac"] > 0)
    notes = []
    for source in SOURCES:
        rows = data[data["source"] == source]
        whose = "ours" if source == "ours" else "paper"
        reasons = []
        for row, ok_value, ok_mmac in zip(
            rows.itertuples(index=False),
            has_value[rows.index],
            has_mmac[rows.index],
            strict=True,
        ):
            missing = [w for w, ok in ((value_name, ok_value), ("MMac", ok_mmac)) if not ok]
            if missing:
                why = "no " + " and no ".join(missing)
                reasons.append(f"{row.model} ({why})")
                logger.info("%s: skipped %s (%s) in %s: %s", artefact, row.model, whose, panel, why)
        if reasons:
            notes.append(f"{panel}, not placed ({whose}): {'; '.join(reasons)}.")
    ok = data[has_value & has_mmac]
    no_params = ok[ok["plotted_params"].isna()]
    for source in SOURCES:
        models = sorted(no_params.loc[no_params["source"] == source, "model"])
        if models:
            whose = "ours" if source == "ours" else "paper"
            notes.append(
                f"{panel} ({whose}): no parameter count for {', '.join(models)}: drawn at the "
                "smallest size, dashed edge."
            )
    return ok, notes


# ---------------------------------------------------------------- Figures 3 and 7


def _bar_order(data: pd.DataFrame, col: str) -> list[str]:
    """Models ascending by the primary source's ``col`` (then the other's); models without a
    primary value last."""
    primary = data[data["primary"]].set_index("model")[col]
    secondary = data[~data["primary"]].set_index("model")[col]

    def key(model):
        p, s = primary.get(model, np.nan), secondary.get(model, np.nan)
        return (
            not np.isfinite(p),
            p if np.isfinite(p) else 0.0,
            s if np.isfinite(s) else 0.0,
            model,
        )

    return sorted(set(data["model"]), key=key)


def bar_gaps(artefact: str, data: pd.DataFrame, col: str, value_name: str, panel: str):
    """A note per source (also logged) of the models it has but without ``col``."""
    notes = []
    for source in SOURCES:
        rows = data[(data["source"] == source)]
        missing = sorted(rows.loc[rows[col].isna(), "model"])
        if missing:
            whose = "ours" if source == "ours" else "paper"
            notes.append(f"{panel}: no {value_name} ({whose}) for {', '.join(missing)}.")
            for model in missing:
                log.info(
                    "%s: skipped %s bar of %s (%s) in %s: no value",
                    artefact,
                    value_name,
                    model,
                    whose,
                    panel,
                )
    return notes


def _bars(ax, data: pd.DataFrame, col: str, ylabel: str, title: str) -> None:
    """Panel B or C: one bar per model (``_bar_order``), the primary source filled and
    labelled with its value, the other hatched beside it; "n/a" where a value is missing."""
    models = _bar_order(data, col)
    primary = data[data["primary"]].set_index("model")[col]
    secondary = data[~data["primary"]].set_index("model")[col]
    family = data.drop_duplicates("model").set_index("model")["family"]
    paired = len(secondary) > 0 and len(primary) > 0
    width = 0.4 if paired else 0.7
    offset = width / 2 if paired else 0.0
    x = np.arange(len(models), dtype=float)
    colours = [style.colour_of(family[m]) for m in models]
    prim = np.array([primary.get(m, np.nan) for m in models], dtype=float)
    sec = np.array([secondary.get(m, np.nan) for m in models], dtype=float)
    bars = ax.bar(
        x - offset,
        np.nan_to_num(prim),
        width,
        color=colours,
        edgecolor="black",
        linewidth=0.6,
        alpha=0.85,
        zorder=3,
    )
    ax.bar_label(
        bars,
        labels=[f"{v:.3f}" if np.isfinite(v) else "n/a" for v in prim],
        fontsize=6.5,
        padding=2,
        rotation=90,
    )
    if paired:
        hatched = ax.bar(
            x + offset,
            np.nan_to_num(sec),
            width,
            facecolor="white",
            edgecolor=colours,
            hatch="////",
            linewidth=0.8,
            zorder=3,
        )
        ax.bar_label(
            hatched,
            labels=["" if np.isfinite(v) else "n/a" for v in sec],
            fontsize=6.5,
            padding=2,
            rotation=90,
        )
    ax.set_xticks(x, models, rotation=45, ha="right", fontsize=8)
    ax.set_xlim(-0.7, len(models) - 0.3)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    tops = np.concatenate([prim[np.isfinite(prim)], sec[np.isfinite(sec)]])
    top = tops.max() if len(tops) else 0.0
    ax.set_ylim(0, top * 1.3 if top > 0 else 1.0)
    if not len(tops):
        style.note(ax, f"no {ylabel} for any model")


def overview_figure(
    ours: pd.DataFrame,
    paper: pd.DataFrame,
    path_stem: str | os.PathLike,
    benchmark: str,
    figure_label: str,
) -> dict[str, Path]:
    """The MS4N paper's Figure 3 (MONSTER) or 7 (UEA) for ``benchmark``: (A) mean rank vs
    MMac per sample (log), bubble area proportional to parameters, labelled with name and
    parameters; (B) mean error and (C) mean std over runs per model, ascending. Ours
    filled, the paper's hollow bubbles (joined to ours by a thin line) and hatched bars;
    with ``ours`` empty the paper's are drawn filled ("published values"). ``figure_label``
    names the paper's figure ("Figure 3"). Saves PNG and PDF (``style.save``), returns
    their paths."""
    artefact = "overview"
    frames = []
    for name, frame in (("ours", ours), ("paper", paper)):
        frame = frame if frame is not None else pd.DataFrame()
        if len(frame):
            other = frame[frame["benchmark"].str.lower() != benchmark.lower()]
            if len(other):
                log.info(
                    "%s: skipped %d %s row(s) of other benchmarks (%s): not %s",
                    artefact,
                    len(other),
                    name,
                    ", ".join(sorted(set(other["benchmark"]))),
                    benchmark,
                )
            frame = frame[frame["benchmark"].str.lower() == benchmark.lower()]
        frames.append(frame)
    ours, paper = frames
    if ours.empty and paper.empty:
        raise ValueError(
            f"overview: no {benchmark_name(benchmark)} results to draw: both `ours` and "
            "`paper` are empty"
        )
    data = overview_data(ours, paper)
    bench = data["benchmark"].iloc[0]
    has_ours, has_paper = not ours.empty, not paper.empty
    name = benchmark_name(bench)

    notes = []
    if has_ours:
        cover = f"ours (filled): {coverage(ours)}"
        cover += f"; MS4N paper (hollow): {coverage(paper)}" if has_paper else "; no paper values"
    else:
        cover = f"published values (MS4N paper): {coverage(paper)}"
    notes.append(f"Covers {cover}. A: bubble area ∝ parameters (one scale for all).")
    notes += source_gaps(artefact, data, bench)

    a_points, a_notes = placeable(artefact, data, "mean_rank", "mean rank", "A")
    notes += a_notes
    notes += bar_gaps(artefact, data, "mean_error", "mean error", "B")
    notes += bar_gaps(artefact, data, "mean_std", "std over runs", "C")
    proxied = sorted(set(data.loc[data["proxy"], "model"]))
    if proxied:
        notes.append(PROXY_NOTE.format(models=", ".join(proxied)))
    with_stub = bool(a_points["proxy"].any())

    fig_w, panel_h = 17.0, 5.6
    lines = wrap_notes(notes, fig_w * 0.85)
    fig = Figure(figsize=(fig_w, panel_h + notes_height(lines)), layout="constrained")
    outer = fig.add_gridspec(
        2, 3, width_ratios=[1.7, 1, 1], height_ratios=[panel_h, notes_height(lines)]
    )
    main, stub = complexity_axes(fig, outer[0, 0], "x", with_stub)
    known = data["plotted_params"].dropna()
    largest = float(known.max()) if len(known) else 1.0
    bubbles = Bubbles()
    draw_bubbles(bubbles, main, stub, a_points, "mean_rank", "x", largest)
    set_complexity_limits(main, "x", a_points.loc[~a_points["proxy"], "plotted_mmac"])
    set_linear_limits(main, "y", a_points["mean_rank"], floor=0.6)
    if a_points[~a_points["proxy"]].empty:
        style.note(main, "no model with both a mean rank and MMac")
    main.set_xlabel("MMac per sample (log scale)")
    (stub if stub is not None else main).set_ylabel("mean rank (lower is better)")
    for ax in (main, stub):
        if ax is not None:
            ax.grid(True, which="major", alpha=0.3)
    ranked = {
        s: int(data.loc[data["source"] == s, "n_ranked_datasets"].max())
        for s in SOURCES
        if (data["source"] == s).any()
    }
    ranked_text = (
        f"{next(iter(ranked.values()))} datasets ranked"
        if len(set(ranked.values())) == 1
        else ", ".join(f"{s}: {n}" for s, n in ranked.items()) + " datasets ranked"
    )
    panel_title(main, stub, "A", f"mean rank vs MMac per sample ({ranked_text})")

    _bars(fig.add_subplot(outer[0, 1]), data, "mean_error", "mean error", "B  mean error per model")
    _bars(
        fig.add_subplot(outer[0, 2]),
        data,
        "mean_std",
        "mean std over runs",
        "C  mean std over runs per model",
    )
    handles = legend_handles(data["group"], has_ours, has_paper, bars=True)
    fig.legend(handles=handles, title="model group", loc="outside right upper", fontsize=8)

    draw_notes(fig.add_subplot(outer[1, :]), lines)
    what = "published values (MS4N paper): " if not has_ours else ""
    fig.suptitle(
        f"{name}: {what}mean rank vs complexity, mean error and std over runs "
        f"(cf. MS4N paper, {figure_label})",
        fontsize=12,
    )
    finish(fig, bubbles)
    return style.save(fig, path_stem)


def _draw(ctx: DrawContext, label: str) -> dict[str, Path]:
    bench = ctx.artefact.benchmark
    return overview_figure(restrict(ctx.ours, bench), restrict(ctx.paper, bench), ctx.stem,
                           bench, label)  # fmt: skip


@from_results
def draw_paper_overview(ctx: DrawContext) -> dict[str, Path]:
    """The report's Figures 3 and 7 (outputs.py: ``figure3``, ``figure7``)."""
    return _draw(ctx, f"Figure {ctx.artefact.key.removeprefix('figure')}")


@from_results
def draw_overview(ctx: DrawContext) -> dict[str, Path]:
    """The report's overview of a benchmark the paper does not have (``overview_{b}``)."""
    return _draw(ctx, "overview")
