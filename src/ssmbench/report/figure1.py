"""The MS4N paper's Figure 1, its accuracy-efficiency summary, ours beside the paper's:
(A) MONSTER and (B) UEA, mean error (x) vs MMac per sample (y, log scale), bubble area
proportional to parameters, labelled with the model names; colours are the paper's model
groups, NonDL models at the paper's 20K parameters and 1 FLOP (``overview``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

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
    set_complexity_limits,
    set_linear_limits,
    wrap_notes,
)
from .context import DrawContext, from_results
from .overview import (
    PROXY_NOTE,
    benchmark_name,
    coverage,
    overview_data,
    placeable,
    source_gaps,
)

log = logging.getLogger(__name__)

ARTEFACT = "figure1"
#: The panels, in order.
BENCHMARKS = ("monster", "uea")
DATA_COLUMNS = (
    "source",
    "benchmark",
    "model",
    "family",
    "group",
    "primary",
    "mean_error",
    "n_datasets",
    "params",
    "mmac",
    "plotted_params",
    "plotted_mmac",
    "proxy",
)


def _of_benchmark(frame: pd.DataFrame | None, benchmark: str) -> pd.DataFrame:
    if frame is None or frame.empty:
        return pd.DataFrame()
    return frame[frame["benchmark"].str.lower() == benchmark]


def figure1_data(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, benchmark, model) of the MONSTER and UEA rows of ``ours`` and
    ``paper``: mean error, parameters and MMac (as ``overview_data``, ``plotted_*`` placing
    the NonDL models at the paper's proxy; ``primary``: the source drawn filled). Empty
    (with the columns) when neither frame has a MONSTER or UEA row."""
    parts = [(_of_benchmark(ours, b), _of_benchmark(paper, b)) for b in BENCHMARKS]
    ours_rows = pd.concat([o for o, _ in parts if len(o)] or [pd.DataFrame()])
    paper_rows = pd.concat([p for _, p in parts if len(p)] or [pd.DataFrame()])
    if ours_rows.empty and paper_rows.empty:
        return pd.DataFrame(columns=list(DATA_COLUMNS))
    return overview_data(ours_rows, paper_rows)[list(DATA_COLUMNS)]


def figure1(
    ours: pd.DataFrame, paper: pd.DataFrame, path_stem: str | os.PathLike
) -> dict[str, Path]:
    """Figure 1: mean error vs MMac per sample (log), bubble area proportional to
    parameters, (A) MONSTER and (B) UEA. ``ours`` and ``paper`` may hold both benchmarks;
    a benchmark neither has gets no panel (the notes say so), and the panels drawn are
    lettered in order. Ours filled, the paper's hollow
    (joined by a thin line); a panel without ours draws the paper's filled ("published
    values"). Saves PNG and PDF (``style.save``), returns their paths."""
    no_rows = all(f is None or f.empty for f in (ours, paper))
    if no_rows:
        raise ValueError("figure1: no results to draw: both `ours` and `paper` are empty")
    for name, frame in (("ours", ours), ("paper", paper)):
        if frame is not None and len(frame):
            other = sorted(set(frame["benchmark"].str.lower()) - set(BENCHMARKS))
            if other:
                log.info(
                    "%s: skipped %s rows of %s: Figure 1 has MONSTER and UEA only",
                    ARTEFACT,
                    name,
                    ", ".join(other),
                )
    data = figure1_data(ours, paper)
    if data.empty:
        raise ValueError("figure1: no MONSTER or UEA rows in `ours` or `paper`")
    has_ours = (data["source"] == "ours").any()

    notes, placed = [], {}
    drawn = [bench for bench in BENCHMARKS if (data["benchmark"] == bench).any()]
    letters = dict(zip(drawn, "AB", strict=False))
    for bench in BENCHMARKS:
        name = benchmark_name(bench)
        rows = data[data["benchmark"] == bench]
        if rows.empty:
            notes.append(f"No {name} panel: no {name} results in these records.")
            log.info("%s: no %s panel: no %s results", ARTEFACT, name, name)
            continue
        letter = letters[bench]
        o, p = _of_benchmark(ours, bench), _of_benchmark(paper, bench)
        if len(o):
            cover = f"ours {coverage(o)}" + (f", paper {coverage(p)}" if len(p) else "")
        else:
            cover = f"published values (MS4N paper), {coverage(p)}"
        notes.append(f"{letter} ({name}) covers {cover}.")
        notes += source_gaps(ARTEFACT, data, bench, log)
        ok, gaps = placeable(ARTEFACT, rows, "mean_error", "mean error", f"{letter} ({name})", log)
        notes += gaps
        placed[bench] = ok
    proxied = sorted(set(data.loc[data["proxy"], "model"]))
    if proxied:
        notes.append(PROXY_NOTE.format(models=", ".join(proxied)))

    fig_w, panel_h = 7.5 * len(drawn) + 0.5 * (2 - len(drawn)), 6.2
    lines = wrap_notes(notes, fig_w * 0.85)
    fig = Figure(figsize=(fig_w, panel_h + notes_height(lines)), layout="constrained")
    outer = fig.add_gridspec(2, len(drawn), height_ratios=[panel_h, notes_height(lines)])
    known = data["plotted_params"].dropna()
    largest = float(known.max()) if len(known) else 1.0  # one scale for both panels
    bubbles = Bubbles()
    for col, bench in enumerate(drawn):
        name, letter = benchmark_name(bench), letters[bench]
        ok = placed[bench]
        rows = data[data["benchmark"] == bench]
        main, stub = complexity_axes(fig, outer[0, col], "y", bool(ok["proxy"].any()))
        draw_bubbles(bubbles, main, stub, ok, "mean_error", "y", largest)
        set_complexity_limits(main, "y", ok.loc[~ok["proxy"], "plotted_mmac"])
        set_linear_limits(main, "x", ok["mean_error"], floor=0.02)
        if ok[~ok["proxy"]].empty:
            style.note(main, "no model with both a mean error and MMac")
        main.set_ylabel("MMac per sample (log scale)")
        (stub if stub is not None else main).set_xlabel("mean error (lower is better)")
        for ax in (main, stub):
            if ax is not None:
                ax.grid(True, which="major", alpha=0.3)
        published = "" if (rows["source"] == "ours").any() else ": published values (MS4N paper)"
        n_models = rows["model"].nunique()
        main.set_title(
            f"{letter}  {name}{published} ({n_models} model{'s' * (n_models != 1)}; "
            "bubble area ∝ parameters)",
            loc="left",
            fontsize=10,
        )
    handles = legend_handles(data["group"], has_ours, (data["source"] == "paper").any(), False)
    fig.legend(handles=handles, title="model group", loc="outside right upper", fontsize=8)
    draw_notes(fig.add_subplot(outer[1, :]), lines)
    what = "" if has_ours else "published values (MS4N paper): "
    names = " and ".join(benchmark_name(bench) for bench in drawn)
    fig.suptitle(f"Accuracy vs efficiency, {what}{names} (cf. MS4N paper, Figure 1)", fontsize=12)
    finish(fig, bubbles)
    return style.save(fig, path_stem)


@from_results
def draw_figure1(ctx: DrawContext) -> dict[str, Path]:
    """The report's entry (outputs.py): ours and the paper's rows on our datasets."""
    return figure1(ctx.ours, ctx.paper, ctx.stem)
