"""The drawing kit of the complexity figures (the MS4N paper's Figures 1, 3 and 7): an MMac
axis on a log scale with a 1-FLOP stub for the non-deep models, bubbles whose area grows
with the parameters, labels spread so that none overlaps, the footnote block and the
legend. ``overview`` and ``figure1`` draw with it."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence

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

COMPLEXITY_PROXY = style.COMPLEXITY_PROXY
#: Bubble areas (points^2): ``_AREA_MAX`` for the largest parameter count, but at least
#: ``_AREA_REFERENCE`` parameters (so that a few small models do not fill the panel, and
#: figures of different subsets share a scale); none smaller than ``_AREA_MIN``.
_AREA_MAX = 1800.0
_AREA_REFERENCE = 300_000.0
_AREA_MIN = 30.0
_PLAIN = FuncFormatter(lambda v, _pos: f"{v:g}")
_NOTE_FONTSIZE = 7.5
_LABEL_FONTSIZE = 7


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
