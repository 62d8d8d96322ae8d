"""The MS4N paper's Figures 3 (MONSTER) and 7 (UEA), ours beside the paper's: (A) mean rank
vs MMac per sample, bubble area proportional to parameters; (B) mean error per model;
(C) mean std over runs per model. Colours are the paper's model groups (``style``).

Also the pieces ``figure1`` (the paper's Figure 1) shares: the model points of a pair of
per-dataset frames (``overview_data``), the complexity axis with its 1-FLOP stub for the
non-deep models, bubbles, label spreading and the footnote block.

NonDL models (QUANT, Hydra, ET) have no parameters or MACs; the paper places them at 20K
parameters and 1 FLOP (1e-6 MMac), and so do these figures (``COMPLEXITY_PROXY``), on a
separate stub of the MMac axis so that nine empty decades do not squeeze the deep models.
"""

from __future__ import annotations

import logging
import math
import os
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator
from matplotlib.transforms import Bbox

from . import style
from .results import PAPER_MODEL_FAMILY, model_summary

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
#: Bubble areas (points^2): ``_AREA_MAX`` for the largest parameter count, but at least
#: ``_AREA_REFERENCE`` parameters (so that a few small models do not fill the panel, and
#: figures of different subsets share a scale); none smaller than ``_AREA_MIN``.
_AREA_MAX = 1800.0
_AREA_REFERENCE = 300_000.0
_AREA_MIN = 30.0
_PLAIN = FuncFormatter(lambda v, _pos: f"{v:g}")
_NOTE_FONTSIZE = 7.5
_LABEL_FONTSIZE = 7


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


def format_params(params: float, proxy: bool = False) -> str:
    """A parameter count as a bubble label prints it: 24.7k, 1.2M, n/a; ``*`` = proxy."""
    if params is None or not np.isfinite(params):
        return "params n/a"
    if params >= 1e6:
        text = f"{params / 1e6:.1f}M"
    elif params >= 1e3:
        text = f"{params / 1e3:.1f}k"
    else:
        text = f"{params:.0f}"
    return text + ("*" if proxy else "")


def bubble_area(params: float, largest: float) -> float:
    """Marker area (points^2) proportional to ``params`` (``_AREA_MAX`` at ``largest`` or
    ``_AREA_REFERENCE``, whichever is more); the minimum when unknown."""
    if not np.isfinite(params):
        return _AREA_MIN
    scale = max(largest, _AREA_REFERENCE) if np.isfinite(largest) else _AREA_REFERENCE
    return max(_AREA_MIN, _AREA_MAX * params / scale)


def _log_ticks(ax, axis: str, low: float, high: float) -> None:
    """Decades labelled plainly (0.1, 1, 10); also 2 and 5 when the span is short."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogLocator(base=10))
    target.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    target.set_major_formatter(_PLAIN)
    short = math.log10(high / low) <= 2.2
    target.set_minor_formatter(_PLAIN if short else NullFormatter())


def complexity_axes(fig: Figure, spec, axis: str, with_stub: bool):
    """(main, stub) axes in ``spec`` whose ``axis`` ("x" or "y") is MMac on a log scale;
    ``stub`` (None unless ``with_stub``) is a narrow piece of that axis at 1 FLOP for the
    NonDL proxies, sharing the other axis, with break marks between the two."""
    if not with_stub:
        main = fig.add_subplot(spec)
        (main.set_xscale if axis == "x" else main.set_yscale)("log")
        return main, None
    proxy = COMPLEXITY_PROXY["mmac"]
    if axis == "x":
        grid = spec.subgridspec(1, 2, width_ratios=[1, 7], wspace=0.03)
        stub = fig.add_subplot(grid[0])
        main = fig.add_subplot(grid[1], sharey=stub)
        main.tick_params(axis="y", which="both", left=False, labelleft=False)
        stub.spines["right"].set_visible(False)
        main.spines["left"].set_visible(False)
        stub.set_xscale("log")
        stub.set_xlim(proxy / 5, proxy * 5)
        stub.set_xticks([proxy], ["1 FLOP*"])
        stub.xaxis.set_minor_formatter(NullFormatter())
        stub.tick_params(axis="x", which="minor", bottom=False)
        main.set_xscale("log")
        marks = ((stub, 1.0), (main, 0.0))
        for ax, x in marks:
            ax.plot(
                [x, x],
                [0, 1],
                transform=ax.transAxes,
                linestyle="",
                marker=[(-1, -2), (1, 2)],
                markersize=8,
                color="black",
                mec="black",
                mew=1,
                clip_on=False,
            )
    else:
        grid = spec.subgridspec(2, 1, height_ratios=[7, 1], hspace=0.03)
        main = fig.add_subplot(grid[0])
        stub = fig.add_subplot(grid[1], sharex=main)
        main.tick_params(axis="x", which="both", bottom=False, labelbottom=False)
        stub.spines["top"].set_visible(False)
        main.spines["bottom"].set_visible(False)
        stub.set_yscale("log")
        stub.set_ylim(proxy / 5, proxy * 5)
        stub.set_yticks([proxy], ["1 FLOP*"])
        stub.yaxis.set_minor_formatter(NullFormatter())
        stub.tick_params(axis="y", which="minor", left=False)
        main.set_yscale("log")
        for ax, y in ((stub, 1.0), (main, 0.0)):
            ax.plot(
                [0, 1],
                [y, y],
                transform=ax.transAxes,
                linestyle="",
                marker=[(-2, -1), (2, 1)],
                markersize=8,
                color="black",
                mec="black",
                mew=1,
                clip_on=False,
            )
    return main, stub


def panel_title(main, stub, letter: str, text: str) -> None:
    """A panel's title, left-aligned; with a stub on the left the letter goes over the stub
    (a long title over a narrow stub would widen it in the layout)."""
    left_stub = (
        stub is not None
        and stub.get_subplotspec().colspan.start == 0
        and (stub.get_subplotspec().get_gridspec().ncols > 1)
    )
    if left_stub:
        stub.set_title(letter, loc="left", fontsize=10)
        main.set_title(text, loc="left", fontsize=10)
    else:
        main.set_title(f"{letter}  {text}", loc="left", fontsize=10)


def set_complexity_limits(main, axis: str, values: Iterable[float]) -> None:
    """Log limits of the MMac axis around ``values`` (a decade when there are none)."""
    vals = np.array([v for v in values if np.isfinite(v) and v > 0], dtype=float)
    low, high = (vals.min() / 2.5, vals.max() * 2.5) if len(vals) else (0.1, 1000.0)
    (main.set_xlim if axis == "x" else main.set_ylim)(low, high)
    if len(vals):
        _log_ticks(main, axis, low, high)
    else:  # an empty axis: ticks would suggest values
        target = main.xaxis if axis == "x" else main.yaxis
        target.set_major_locator(NullLocator())
        target.set_minor_locator(NullLocator())


def set_linear_limits(ax, axis: str, values: Iterable[float], floor: float = 0.3) -> None:
    """Linear limits padded around ``values`` (room for the bubbles and their labels)."""
    vals = np.array([v for v in values if np.isfinite(v)], dtype=float)
    if not len(vals):
        return
    low, high = vals.min(), vals.max()
    pad = max(floor, 0.18 * (high - low))
    (ax.set_xlim if axis == "x" else ax.set_ylim)(low - pad, high + pad)


class Bubbles:
    """What ``draw_bubbles`` drew, for ``finish``: the label of each model, and every
    bubble (axes, data point, area) for the labels to keep off."""

    def __init__(self):
        self.labels: list[tuple] = []  # (annotation, area)
        self.points: list[tuple] = []  # (axes, (x, y), area)
        self.stubs: list[tuple] = []  # (main, stub, axis) of complexity_axes


def draw_bubbles(
    bubbles: Bubbles, main, stub, points: pd.DataFrame, value: str, axis: str, largest: float
) -> None:
    """Draw ``points`` (rows of ``overview_data`` that can be placed) on the MMac ``axis``
    of ``main`` (or ``stub`` for the NonDL proxies) against ``value``: the primary source
    filled, the other hollow, a thin line joining the two points of a model; one label per
    model (on its primary point), placed by ``finish``."""
    if stub is not None:
        bubbles.stubs.append((main, stub, axis))
    placed: dict[str, dict[bool, tuple]] = {}
    for row in points.itertuples(index=False):
        ax = stub if (row.proxy and stub is not None) else main
        colour = style.colour_of(row.family)
        mmac, val = float(row.plotted_mmac), float(getattr(row, value))
        xy = (mmac, val) if axis == "x" else (val, mmac)
        area = bubble_area(float(row.plotted_params), largest)
        edge = "--" if not np.isfinite(row.plotted_params) else "-"  # no parameter count
        if row.primary:
            ax.scatter(
                *xy,
                s=area,
                color=colour,
                alpha=0.55,
                edgecolors="black",
                linewidths=0.7,
                linestyles=edge,
                zorder=3,
            )
        else:
            ax.scatter(*xy, s=area, zorder=4, linestyles=edge, **style.paper_style(colour))
        bubbles.points.append((ax, xy, area))
        placed.setdefault(row.model, {})[bool(row.primary)] = (ax, xy, row, area)
    for model, by_primary in placed.items():
        if True in by_primary and False in by_primary:
            (ax1, xy1, row, _), (ax2, xy2, _, _) = by_primary[True], by_primary[False]
            if ax1 is ax2:  # a line across the axis break would mean nothing
                ax1.plot(
                    [xy1[0], xy2[0]],
                    [xy1[1], xy2[1]],
                    color=style.colour_of(row.family),
                    linewidth=0.9,
                    alpha=0.8,
                    zorder=2,
                )
        ax, xy, row, area = by_primary.get(True, by_primary.get(False))
        text = f"{model}\n{format_params(float(row.plotted_params), bool(row.proxy))}"
        if True not in by_primary:
            text += " (paper)"
        ann = ax.annotate(
            text,
            xy,
            xytext=(0, 0),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=_LABEL_FONTSIZE,
            zorder=5,
            annotation_clip=False,
            linespacing=1.0,
            arrowprops={
                "arrowstyle": "-",
                "color": "0.35",
                "linewidth": 0.5,
                "shrinkA": 1,
                "shrinkB": math.sqrt(area) / 2,
            },
        )
        bubbles.labels.append((ann, area))


def _overlap(a: Bbox, b: Bbox) -> float:
    return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))


#: Where a label may go, as multiples of (bubble radius + half the label) from its point:
#: on it, then around it, nearest first.
_DIRECTIONS = ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))
_CANDIDATES = ((0.0, 0.0),) + tuple(
    (k * dx, k * dy) for k in (1.0, 1.7, 2.5) for dx, dy in _DIRECTIONS
)


def finish(fig: Figure, bubbles: Bubbles, stub_gap_in: float = 0.1) -> None:
    """Lay the figure out, then freeze it (positions are measured in pixels): bring each
    complexity stub next to its main axes, and place every label on its bubble or, where
    it would cover another label or bubble, beside it with a thin line to it."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    fig.set_layout_engine("none")  # so that the positions measured here are the saved ones
    for main, stub, axis in bubbles.stubs:
        m, st = main.get_position(), stub.get_position()
        if axis == "x":
            x0 = st.x1 + stub_gap_in / fig.get_figwidth()
            main.set_position([x0, m.y0, m.x1 - x0, m.height])
        else:
            y0 = st.y1 + stub_gap_in / fig.get_figheight()
            main.set_position([m.x0, y0, m.width, m.y1 - y0])
    if not bubbles.labels:
        return
    renderer = canvas.get_renderer()
    px = fig.dpi / 72.0  # pixels per point
    discs = []
    for ax, xy, area in bubbles.points:
        cx, cy = ax.transData.transform(xy)
        half = math.sqrt(area) / 2 * px * 0.8  # the square inside-ish the disc
        discs.append(Bbox.from_extents(cx - half, cy - half, cx + half, cy + half))
    taken: list[Bbox] = []
    for ann, area in sorted(bubbles.labels, key=lambda la: -la[1]):
        ann.xyann = (0, 0)
        box = Text.get_window_extent(ann, renderer)
        w, h = box.width, box.height
        cx, cy = ann.axes.transData.transform(ann.xy)
        frame = ann.axes.get_window_extent(renderer)
        radius = math.sqrt(area) / 2 * px
        own = Bbox.from_extents(cx - radius, cy - radius, cx + radius, cy + radius)
        # a label would hide a bubble much narrower than itself: put it beside one
        small = 2 * radius < w
        best, best_score, best_k = None, math.inf, 0.0
        for rank, (kx, ky) in enumerate(_CANDIDATES):
            if small and (kx, ky) == (0.0, 0.0):
                continue
            dx = kx * (radius + w / 2 + 2 * px)
            dy = ky * (radius + h / 2 + 1 * px)
            cand = Bbox.from_bounds(cx + dx - w / 2, cy + dy - h / 2, w, h)
            inside = _overlap(cand, frame)
            score = (
                10 * sum(_overlap(cand, t) for t in taken)
                + sum(_overlap(cand, d) for d in discs if not _same(d, own))
                + 5 * (w * h - inside)
                + rank * 1e-3
            )
            if score < best_score:
                best, best_score, best_k = (dx / px, dy / px), score, max(abs(kx), abs(ky))
            if score < 1.0:
                break
        ann.xyann = best
        ann.arrow_patch.set_visible(best_k > 1.0)  # a label next to its bubble needs no line
        taken.append(Text.get_window_extent(ann, renderer))  # the text, not its line


def _same(a: Bbox, b: Bbox) -> bool:
    """Whether ``a`` is (inside) the label's own bubble ``b``."""
    return abs(a.x0 + a.x1 - b.x0 - b.x1) < 1 and abs(a.y0 + a.y1 - b.y0 - b.y1) < 1


def wrap_notes(notes: Sequence[str], width_in: float) -> list[str]:
    """Notes wrapped to the figure's width (a line per note, continued indented)."""
    chars = max(40, int(width_in * 72 / (_NOTE_FONTSIZE * 0.52)))
    lines = []
    for text in notes:
        lines.extend(textwrap.wrap(text, chars, subsequent_indent="   ") or [""])
    return lines


def notes_height(lines: Sequence[str]) -> float:
    """Inches the notes block needs."""
    return 0.15 + len(lines) * _NOTE_FONTSIZE * 1.45 / 72


def draw_notes(ax, lines: Sequence[str]) -> None:
    """The footnote block: what the figure covers and what it could not draw."""
    ax.set_axis_off()
    ax.text(
        0.0,
        1.0,
        "\n".join(lines),
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=_NOTE_FONTSIZE,
        linespacing=1.3,
    )


def legend_handles(groups: Iterable[str], has_ours: bool, has_paper: bool, bars: bool) -> list:
    """Legend entries: one per group present, then which marker is which source."""
    present = set(groups)
    handles = [
        Patch(facecolor=c, edgecolor="black", linewidth=0.6, label=g)
        for g, c in style.GROUP_COLOURS.items()
        if g in present
    ]
    grey = "0.3"
    if has_ours:
        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="",
                markersize=9,
                color=grey,
                alpha=0.6,
                markeredgecolor="black",
                label="ours (filled)",
            )
        )
        if has_paper:
            handles.append(
                Line2D(
                    [],
                    [],
                    marker="o",
                    linestyle="",
                    markersize=9,
                    markerfacecolor="none",
                    markeredgecolor=grey,
                    label="MS4N paper (hollow)",
                )
            )
            if bars:
                handles.append(
                    Patch(
                        facecolor="white",
                        edgecolor=grey,
                        hatch="////",
                        label="MS4N paper (hatched bar)",
                    )
                )
            handles.append(
                Line2D([], [], color=grey, linewidth=0.8, label="joins ours to the paper's")
            )
    elif has_paper:
        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="",
                markersize=9,
                color=grey,
                alpha=0.6,
                markeredgecolor="black",
                label="published (MS4N paper)",
            )
        )
    return handles


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
        logger.warning(
            "%s: skipped the paper's points for %s (%s): no paper values",
            artefact,
            ", ".join(no_paper),
            name,
        )
    no_ours = sorted(by_source["paper"] - by_source["ours"])
    if no_ours:
        notes.append(f"{name}: no results of ours for {', '.join(no_ours)} (paper only).")
        logger.warning(
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
                logger.warning(
                    "%s: skipped %s (%s) in %s: %s", artefact, row.model, whose, panel, why
                )
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
                log.warning(
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
                log.warning(
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
