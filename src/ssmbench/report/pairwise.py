"""Figure 10 of the MS4N paper: MS4N against MS4 and against Mamba2, one point per dataset.

Each panel plots the other model's error (x) against MS4N's (y): points below the dashed
diagonal (shaded green) are datasets where MS4N has the lower error, above it (red) where
the other has. Ours are filled, the paper's (Table 3/5, the same datasets) hollow; each
panel counts "MS4N better on k of n", ties apart, beside the count the paper's text gives
(section 5.3: 27 of the MONSTER datasets against MS4, 26 against Mamba2).
``pairwise_data`` and ``better_count`` return what a panel draws and counts.
"""

from __future__ import annotations

import logging
import os
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Polygon

from . import style
from .context import DrawContext, from_results
from .reference import load_published_summary
from .results import restrict

log = logging.getLogger(__name__)

#: The paper's per-dataset table and display name of each benchmark.
PAPER_TABLE = {"monster": "Table 3", "uea": "Table 5"}
BENCHMARK_NAME = {"monster": "MONSTER", "uea": "UEA"}

PAIR_COLUMNS = ("dataset", "reference_error", "other_error", "better", "domain")
#: Two errors this close are a tie (the paper's table prints three decimals, so equal
#: printed errors are exactly equal floats).
TIE_TOLERANCE = 1e-12
BETTER_SHADE, WORSE_SHADE, SHADE_ALPHA = "#2ca02c", "#d62728", 0.10
#: Domain colours: no green or red, which the shading means.
_DOMAIN_PALETTE = (
    "#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
    "#393b79", "#637939",
)  # fmt: skip


def _empty_pairs() -> pd.DataFrame:
    return pd.DataFrame(columns=list(PAIR_COLUMNS))


def pairwise_data(frame: pd.DataFrame, reference: str, other: str) -> pd.DataFrame:
    """One row per dataset where both models have an error: ``dataset, reference_error,
    other_error, better ("reference" / "other" / "tie": the lower error wins), domain``,
    sorted by dataset; empty when either model has no result."""
    rows = frame[frame["model"].isin([reference, other])].copy()
    rows["error"] = pd.to_numeric(rows["error"], errors="coerce")
    rows = rows.dropna(subset=["error"])
    if rows.empty or not {reference, other} <= set(rows["model"]):
        return _empty_pairs()
    wide = rows.pivot_table(index="dataset", columns="model", values="error", aggfunc="first")
    wide = wide[[reference, other]].dropna(how="any")
    if wide.empty:
        return _empty_pairs()
    domains = rows.drop_duplicates("dataset").set_index("dataset")["domain"]
    ref, oth = wide[reference].to_numpy(float), wide[other].to_numpy(float)
    tie = np.abs(ref - oth) <= TIE_TOLERANCE
    better = np.where(tie, "tie", np.where(ref < oth, "reference", "other"))
    out = pd.DataFrame(
        {
            "dataset": wide.index.astype(str),
            "reference_error": ref,
            "other_error": oth,
            "better": better,
            "domain": [domains.get(d, np.nan) for d in wide.index],
        }
    )
    return out.sort_values("dataset", kind="stable").reset_index(drop=True)


def better_count(frame: pd.DataFrame, reference: str, other: str) -> tuple[int, int, int]:
    """(datasets where ``reference`` has the lower error, ties, datasets compared)."""
    pairs = pairwise_data(frame, reference, other)
    return (
        int((pairs["better"] == "reference").sum()),
        int((pairs["better"] == "tie").sum()),
        int(len(pairs)),
    )


def published_better_count(benchmark: str, reference: str, other: str) -> float | None:
    """The count the paper's text gives (``datasets_better_than_{other}``), or None."""
    s = load_published_summary()
    hit = s[
        (s["benchmark"] == benchmark)
        & (s["model"] == reference)
        & (s["metric"] == f"datasets_better_than_{other}")
    ]
    return float(hit["value"].iloc[0]) if len(hit) else None


def _count_text(label: str, pairs: pd.DataFrame, reference: str) -> str:
    wins = int((pairs["better"] == "reference").sum())
    ties = int((pairs["better"] == "tie").sum())
    return (
        f"{label}: {reference} better on {wins} of {len(pairs)} "
        f"({ties} tie{'' if ties == 1 else 's'})"
    )


def _missing(frame: pd.DataFrame, models) -> list[str]:
    have = set(frame.loc[pd.to_numeric(frame["error"], errors="coerce").notna(), "model"])
    return [m for m in models if m not in have]


def _only_one(frame: pd.DataFrame, reference: str, other: str) -> list[str]:
    """Datasets where just one of the pair has an error."""
    rows = frame[frame["model"].isin([reference, other])]
    rows = rows[pd.to_numeric(rows["error"], errors="coerce").notna()]
    per_dataset = rows.groupby("dataset")["model"].nunique()
    return sorted(per_dataset[per_dataset < 2].index)


def _draw_pairs(ax, pairs: pd.DataFrame, colours: dict, filled: bool) -> None:
    for domain, group in pairs.groupby(pairs["domain"].fillna("Other"), sort=True):
        colour = colours[domain]
        kwargs = {"color": colour} if filled else style.paper_style(colour)
        ax.scatter(
            group["other_error"],
            group["reference_error"],
            s=30,
            zorder=4 if filled else 5,
            **kwargs,
        )


def _panel(ax, ours, paper, benchmark, reference, other, colours, published_only) -> list[str]:
    """Draw one comparison; return the panel's footnote lines (gaps)."""
    notes: list[str] = []
    ours_pairs = _empty_pairs() if published_only else pairwise_data(ours, reference, other)
    paper_pairs = pairwise_data(paper, reference, other)
    for name, frame, pairs in (("ours", ours, ours_pairs), ("paper", paper, paper_pairs)):
        if published_only and name == "ours":
            continue
        missing = _missing(frame, (reference, other))
        what = "runs" if name == "ours" else "paper values"
        if missing:
            notes.append(f"{name}: no {' or '.join(missing)} {what}")
            log.info(
                "pairwise: skipped %s vs %s (%s): no %s %s",
                reference,
                other,
                name,
                " or ".join(missing),
                what,
            )
        elif pairs.empty:
            notes.append(f"{name}: no dataset where both have a result")
            log.info(
                "pairwise: skipped %s vs %s (%s): no dataset where both have a result",
                reference,
                other,
                name,
            )
        only_one = _only_one(frame, reference, other)
        if only_one and not missing:
            notes.append(f"{name}: only one of the pair on {', '.join(only_one)}")
            log.info(
                "pairwise: skipped %s vs %s (%s) on %s: only one of the pair has a result",
                reference,
                other,
                name,
                ", ".join(only_one),
            )
    if not ours_pairs.empty:  # the paper's points for the datasets we compare
        paper_pairs = paper_pairs[paper_pairs["dataset"].isin(ours_pairs["dataset"])]
    ax.set_title(f"{reference} vs {other}", fontsize=11)
    if ours_pairs.empty and paper_pairs.empty:
        ax.set_xticks([])
        ax.set_yticks([])
        style.note(ax, "\n".join(notes) or f"no {reference} / {other} results")
        return []
    values = np.concatenate(
        [
            p[["reference_error", "other_error"]].to_numpy(float).ravel()
            for p in (ours_pairs, paper_pairs)
        ]
    )
    top = float(np.nanmax(values))
    top = top * 1.06 if top > 0 else 1.0
    ax.add_patch(
        Polygon(
            [(0, 0), (top, 0), (top, top)],
            closed=True,
            color=BETTER_SHADE,
            alpha=SHADE_ALPHA,
            lw=0,
            zorder=0,
        )
    )
    ax.add_patch(
        Polygon(
            [(0, 0), (0, top), (top, top)],
            closed=True,
            color=WORSE_SHADE,
            alpha=SHADE_ALPHA,
            lw=0,
            zorder=0,
        )
    )
    ax.plot([0, top], [0, top], ls="--", color="0.3", lw=1.0, zorder=1)
    if not ours_pairs.empty and not paper_pairs.empty:  # ours to the paper's, per dataset
        joined = ours_pairs.merge(paper_pairs, on="dataset", suffixes=("", "_paper"))
        for r in joined.itertuples(index=False):
            ax.plot(
                [r.other_error, r.other_error_paper],
                [r.reference_error, r.reference_error_paper],
                color="0.7",
                lw=0.6,
                zorder=2,
            )
    if not ours_pairs.empty:
        _draw_pairs(ax, ours_pairs, colours, filled=True)
    if not paper_pairs.empty:
        _draw_pairs(ax, paper_pairs, colours, filled=published_only)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_aspect("equal")
    ax.set_xlabel(f"{other} error (x)")
    ax.set_ylabel(f"{reference} error (y)")
    lines = []
    if not ours_pairs.empty:
        lines.append(_count_text("ours", ours_pairs, reference))
    elif not published_only:
        lines.append(f"ours: no {' or '.join(_missing(ours, (reference, other))) or 'pairs'}")
    if not paper_pairs.empty:
        table = PAPER_TABLE.get(benchmark, "the paper")
        label = f"paper ({table})" if ours_pairs.empty else f"paper ({table}), same datasets"
        lines.append(_count_text(label, paper_pairs, reference))
    published = published_better_count(benchmark, reference, other)
    if published is not None:
        lines.append(f"paper's text (§5.3, all its datasets): better on {published:.0f}")
    # Below the axes: a box inside would hide points near the diagonal's top.
    ax.text(
        0.5,
        -0.13,
        "\n".join(lines),
        transform=ax.transAxes,
        ha="center",
        va="top",
        fontsize=8.5,
        bbox={"boxstyle": "round", "fc": "white", "ec": "0.7", "alpha": 0.9},
    )
    ax.text(
        0.97,
        0.03,
        f"{reference} better",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8,
        color=BETTER_SHADE,
        fontweight="bold",
    )
    ax.text(
        0.03,
        0.97,
        f"{other} better",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=8,
        color=WORSE_SHADE,
        fontweight="bold",
    )
    return notes


def pairwise_figure(
    ours: pd.DataFrame,
    paper: pd.DataFrame,
    path_stem: str | os.PathLike,
    benchmark: str,
    reference: str = "MS4N",
    others: tuple[str, ...] = ("MS4", "Mamba2"),
) -> dict[str, Path]:
    """The paper's Figure 10: one panel per model of ``others``, ``reference``'s error
    (y) against that model's (x) per dataset; ours filled, the paper's hollow (filled
    when ``ours`` is empty). Returns ``style.save``'s paths."""
    if ours.empty and paper.empty:
        raise ValueError("pairwise: both the ours and the paper frames are empty")
    published_only = ours.empty
    domains = sorted(
        {d if isinstance(d, str) else "Other" for d in [*ours["domain"], *paper["domain"]]}
    )
    colours = {d: _DOMAIN_PALETTE[i % len(_DOMAIN_PALETTE)] for i, d in enumerate(domains)}
    fig = Figure(figsize=(5.4 * len(others), 7.4))
    footnotes = []
    for i, other in enumerate(others):
        ax = fig.add_subplot(1, len(others), i + 1)
        notes = _panel(ax, ours, paper, benchmark, reference, other, colours, published_only)
        footnotes += [f"{reference} vs {other} — {n}" for n in notes]
    n_ours, n_paper = ours["dataset"].nunique(), paper["dataset"].nunique()
    cover = (
        f"paper: {n_paper} datasets"
        if published_only
        else (f"ours: {n_ours} datasets, paper: {n_paper}")
    )
    what = "published values (MS4N paper)" if published_only else "ours vs the MS4N paper"
    name = BENCHMARK_NAME.get(benchmark, benchmark)
    fig.suptitle(
        f"Figure 10 ({name}): {reference} against {', '.join(others)} per "
        f"dataset — {what}\n{cover}; lower error is better",
        fontsize=11,
    )
    fig.legend(
        handles=_legend(colours, published_only, reference),
        loc="lower center",
        bbox_to_anchor=(0.5, 0.045),
        ncol=min(len(colours) + 4, 12),
        fontsize=7.5,
        frameon=False,
    )
    text = "\n".join(textwrap.fill(f, 150) for f in footnotes)
    fig.text(0.5, 0.005, text, ha="center", va="bottom", fontsize=7, color="0.3")
    fig.subplots_adjust(left=0.07, right=0.97, top=0.87, bottom=0.29, wspace=0.25)
    return style.save(fig, path_stem)


def _legend(colours: dict, published_only: bool, reference: str) -> list:
    dot = {"marker": "o", "linestyle": "none", "markersize": 6}
    handles = style.source_handles(published_only)
    handles.append(Patch(color=BETTER_SHADE, alpha=0.3, label=f"{reference} better"))
    handles.append(Patch(color=WORSE_SHADE, alpha=0.3, label="other better"))
    handles += [Line2D([], [], color=c, label=d, **dot) for d, c in colours.items()]
    return handles


@from_results
def draw_figure10(ctx: DrawContext) -> dict[str, Path]:
    """The report's Figure 10 on the artefact's benchmark (outputs.py: ``figure10_{b}``)."""
    bench = ctx.artefact.benchmark
    return pairwise_figure(restrict(ctx.ours, bench), restrict(ctx.paper, bench), ctx.stem, bench)
