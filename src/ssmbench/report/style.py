"""How every figure draws: the MS4N paper's model groups and colours, the markers that
tell ours from the paper's, and the deterministic save (PNG and PDF).

The figures use matplotlib's object API (``matplotlib.figure.Figure``, Agg canvas) and
never pyplot, so they set no global backend and leak no figures. PNG carries no date; PDF
is saved without ``CreationDate``, so an unchanged figure is byte for byte the same.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ssmbench.io import atomic_write

from .outputs import figure_files

DPI = 150
#: Where the MS4N paper's figures place models without parameters or MACs (QUANT, Hydra,
#: ET: "not applicable" in their records): 20K parameters and 1 FLOP.
COMPLEXITY_PROXY = {"params": 20_000.0, "mmac": 1e-6}
#: The paper's groups (Figures 3 and 7), in legend order, with their colours.
GROUP_COLOURS = {
    "SSM": "#2ca02c",  # green
    "Transformer": "#1f77b4",  # blue
    "Hybrid": "#9467bd",  # purple
    "RNN": "#d62728",  # red
    "CNN": "#ff7f0e",  # orange
    "NonDL": "#7f7f7f",  # grey
    "Other": "#8c564b",  # a family the paper does not have
}
#: Ours are filled markers; the paper's the same marker hollow (``PAPER_STYLE``).
OURS_LABEL = "ours"
PAPER_LABEL = "paper"


def group_of(family) -> str:
    """The paper's group of a params.yaml family, as its model class declares it
    (``GROUP``; ``Other`` when it has none)."""
    from ssmbench.models import family_group

    if family is None or (isinstance(family, float) and pd.isna(family)):
        return "Other"
    return family_group(str(family)) or "Other"


def colour_of(family) -> str:
    """The colour of a family's group."""
    return GROUP_COLOURS[group_of(family)]


def is_non_deep(family) -> bool:
    """NonDL (QUANT, Hydra, ET): no parameters or MACs, drawn with ×."""
    return group_of(family) == "NonDL"


def paper_style(colour: str) -> dict:
    """Scatter keywords of a paper point: hollow, edged in ``colour``."""
    return {"facecolors": "none", "edgecolors": colour, "linewidths": 1.4}


def source_handles(published_only: bool, with_paper: bool = True, markersize: float = 6):
    """Legend entries that tell ours (filled) from the paper's (hollow); one "paper"
    entry in the published-only figures."""
    dot = {"marker": "o", "linestyle": "none", "markersize": markersize}
    handles = [Line2D([], [], color="0.3", label=PAPER_LABEL if published_only else OURS_LABEL,
                      **dot)]  # fmt: skip
    if not published_only and with_paper:
        handles.append(
            Line2D(
                [],
                [],
                markerfacecolor="none",
                markeredgecolor="0.3",
                markeredgewidth=1.4,
                label=f"{PAPER_LABEL} (hollow)",
                **dot,
            )  # fmt: skip
        )
    return handles


def save(fig: Figure, path_stem: str | os.PathLike) -> dict[str, Path]:
    """Save ``fig`` as PNG and PDF (``outputs.figure_files``: ``{folder}/png/{name}.png``,
    ``{folder}/pdf/{name}.pdf`` for ``path_stem`` = ``{folder}/{name}``), atomically and
    reproducibly."""
    FigureCanvasAgg(fig)
    paths = figure_files(path_stem)
    png = atomic_write(
        paths["png"],
        lambda p: fig.savefig(p, format="png", dpi=DPI, metadata={"Software": None}),
    )
    pdf = atomic_write(
        paths["pdf"],
        lambda p: fig.savefig(
            p, format="pdf", metadata={"CreationDate": None, "Producer": None, "Creator": None}
        ),
    )
    return {"png": png, "pdf": pdf}


def note(ax, text: str) -> None:
    """A panel's message in its centre (what is missing and why)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9,
            wrap=True)  # fmt: skip


def message_figure(path_stem: str | os.PathLike, title: str, lines: list[str]) -> dict[str, Path]:
    """A figure that only says why it has nothing to draw (and what the paper has)."""
    fig = Figure(figsize=(8, 3), layout="constrained")
    ax = fig.subplots()
    ax.set_axis_off()
    note(ax, "\n".join(lines))
    fig.suptitle(title, fontsize=11)
    return save(fig, path_stem)
