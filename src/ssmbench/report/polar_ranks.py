"""Figures 4–6 of the MS4N paper: polar rank plots of the models per MONSTER domain pair
(Figure 4 Audio/Other, Figure 5 EEG/HAR, Figure 6 Satellite/Counts).

One polar panel per domain: one spoke per model, in rank order, its length the model's
average rank over the domain's datasets (ranked among the models present, on the datasets
where every one of them has a result: ``aggregate.dataset_ranks``); a dot at its end sized
by the parameters (× for the NonDL models, placed at the paper's 20K), coloured by the
paper's group; dashed circles at ranks 5 and 10; a dashed connector through the dots.
The paper's ranks are hollow markers on the same spokes: Table 4's Rank where it ranks
the same models on the same datasets, else recomputed from the paper's Table 3 on ours.
``polar_rank_data`` returns what a panel draws.
"""

from __future__ import annotations

import logging
import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ssmbench.data.catalog import catalog

from . import style
from .aggregate import dataset_ranks
from .context import DrawContext, from_results
from .reference import load_published_domains_monster
from .results import restrict

log = logging.getLogger(__name__)

#: The paper's figure for each MONSTER domain pair (the ``domain`` column's names).
DOMAIN_PAIRS = {
    "figure4": ("Audio", "Other"),
    "figure5": ("EEG", "HAR"),
    "figure6": ("Satellite", "Counts"),
}
DATA_COLUMNS = ("model", "source", "rank", "params", "group", "n_datasets")
#: The paper's Figure 7 places models without parameters (NonDL) at 20K.
NON_DEEP_PARAMS = style.COMPLEXITY_PROXY["params"]
#: Dashed reference circles and their labels.
RANK_CIRCLES = {5: "Top-5", 10: "Top-10"}
#: Marker area (points²): the smallest dot, and the range the largest parameter count gets.
_MIN_AREA, _AREA_RANGE = 25.0, 320.0


@dataclass
class DomainRanks:
    """One panel's data and what the figure must say about it."""

    data: pd.DataFrame
    primary: str | None  # "ours" or "paper": the filled series
    n_datasets: int = 0  # datasets in the domain (either frame)
    n_ranked: int = 0  # datasets the primary ranks average over
    paper_note: str = ""  # where the paper's ranks come from
    gaps: list[str] = field(default_factory=list)
    empty_reason: str = ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _with_results(frame: pd.DataFrame, domain: str) -> pd.DataFrame:
    sub = frame[frame["domain"] == domain].copy()
    sub["error"] = pd.to_numeric(sub["error"], errors="coerce")
    sub["params"] = pd.to_numeric(sub["params"], errors="coerce")
    return sub


def _family(rows: pd.DataFrame, model: str):
    fam = rows.loc[rows["model"] == model, "family"].dropna()
    return fam.iloc[0] if len(fam) else np.nan


def _rows(frame, ranks: pd.DataFrame, source: str, models) -> list[dict]:
    """One data row per ranked model: mean rank and the mean parameters in the domain."""
    out = []
    for model in models:
        mrows = frame[frame["model"] == model]
        out.append(
            {
                "model": model,
                "source": source,
                "rank": float(ranks[model].mean()),
                "params": float(mrows["params"].mean())
                if mrows["params"].notna().any()
                else np.nan,
                "group": style.group_of(_family(frame, model)),
                "n_datasets": int(len(ranks)),
            }
        )
    return out


def _table4_ranks(domain: str) -> pd.Series:
    t4 = load_published_domains_monster()
    t4 = t4[(t4["domain"] == domain) & (t4["metric"] == "Rank")].dropna(subset=["value"])
    return t4.set_index("model")["value"].astype(float)


def _full_domain_datasets(benchmark, domain: str) -> set[str]:
    if benchmark != "monster":
        return set()
    return {e.name for e in catalog("monster") if e.domain == domain}


def domain_ranks(ours: pd.DataFrame, paper: pd.DataFrame, domain: str) -> DomainRanks:
    """Ours and the paper's average ranks in ``domain``, with the notes the panel shows."""
    o, p = _with_results(ours, domain), _with_results(paper, domain)
    gaps: list[str] = []
    for name, rows in (("ours", o), ("paper", p)):
        no_result = sorted(set(rows["model"]) - set(rows.loc[rows["error"].notna(), "model"]))
        if no_result:
            gaps.append(f"{name}: no error for {', '.join(no_result)}")
    o, p = o[o["error"].notna()], p[p["error"].notna()]
    empty = pd.DataFrame(columns=list(DATA_COLUMNS))
    if o.empty and p.empty:
        return DomainRanks(empty, None, gaps=gaps, empty_reason=f"no results in {domain}")
    # Ours ranks among our models; the paper's are then made comparable to them.
    primary, base = ("ours", o) if not o.empty else ("paper", p)
    if primary == "paper" and not ours.empty:
        gaps.append(f"no runs of ours in {domain}: paper values only")
    pool = sorted(base["model"].unique())
    n_datasets = int(base["dataset"].nunique())
    ranks = dataset_ranks(base, pool)
    if ranks.empty:
        reason = (
            f"no {domain} dataset where all {len(pool)} models ({', '.join(pool)}) have a result"
        )
        return DomainRanks(empty, primary, n_datasets, gaps=gaps, empty_reason=reason)
    ranked = list(ranks.index)
    rows = _rows(base, ranks, primary, pool) if primary == "ours" else []
    paper_note = ""
    if p.empty:
        gaps.append(f"no paper values in {domain}")
    else:
        benchmark = base["benchmark"].iloc[0]
        t4 = _table4_ranks(domain) if benchmark == "monster" else pd.Series(dtype=float)
        full = _full_domain_datasets(benchmark, domain)
        paper_covers = (
            set(t4.index) <= set(p["model"])
            and full <= set(p["dataset"])
            and dataset_ranks(p[p["dataset"].isin(full)], list(t4.index)).shape[0] == len(full)
        )
        # Table 4 ranks 15 models on the whole domain: comparable only to ranks of those.
        if len(t4) and full and paper_covers and set(pool) == set(t4.index) and set(ranked) == full:
            prank = pd.DataFrame({m: [t4[m]] * len(full) for m in pool}, index=sorted(full))
            paper_note = (
                f"paper ranks: Table 4 ({_count(len(pool), 'model')}, "
                f"{_count(len(full), 'dataset')})"
            )
        else:
            pmodels = [m for m in pool if m in set(p["model"])]
            pdatasets = [d for d in ranked if d in set(p["dataset"])]
            prank = dataset_ranks(p[p["dataset"].isin(pdatasets)], pmodels)
            why = ""
            if len(t4) and set(pool) != set(t4.index):
                others = sorted(set(t4.index) - set(pool))
                why = f"; Table 4 ranks {len(t4)} models" + (
                    f", also {', '.join(others)}" if 0 < len(others) <= 3 else ""
                )
            elif len(t4) and set(ranked) != full:
                why = f"; Table 4 ranks all {len(full)} datasets"
            elif len(t4) and not paper_covers:
                why = "; the paper frame lacks some of Table 4's results"
            paper_note = (
                f"paper ranks: recomputed from Table 3 ({_count(len(pmodels), 'model')}, "
                f"{_count(len(prank), 'dataset')}){why}"
            )
            missing = [m for m in pool if m not in pmodels]
            if missing:
                gaps.append(f"no paper value for {', '.join(missing)}")
        if prank.empty:
            gaps.append(f"no {domain} dataset where the paper has all of {', '.join(pool)}")
        else:
            rows += _rows(p, prank, "paper", list(prank.columns))
        if primary == "ours":
            extra = sorted(set(p["model"]) - set(pool))
            if extra:
                gaps.append(f"paper only, not ranked against ours: {', '.join(extra)}")
    data = pd.DataFrame(rows, columns=list(DATA_COLUMNS))
    for source in ("ours", "paper"):
        unsized = data[(data["source"] == source) & data["params"].isna()]
        unsized = sorted(unsized.loc[unsized["group"] != "NonDL", "model"])
        if unsized:
            gaps.append(f"{source}: no parameter count for {', '.join(unsized)} (smallest dot)")
    return DomainRanks(data, primary, n_datasets, len(ranked), paper_note, gaps)


def polar_rank_data(ours: pd.DataFrame, paper: pd.DataFrame, domain: str) -> pd.DataFrame:
    """What the ``domain`` panel draws: one row per (model, source) with ``model, source
    ("ours" / "paper"), rank (mean over n_datasets), params (mean over the domain's
    datasets; NaN where unknown or, for NonDL, not applicable), group, n_datasets``.
    Ours first, then the paper's; each in ascending rank."""
    data = domain_ranks(ours, paper, domain).data
    if data.empty:
        return data
    order = {"ours": 0, "paper": 1}
    data = data.assign(_s=data["source"].map(order))
    data = data.sort_values(["_s", "rank", "model"], kind="stable").drop(columns="_s")
    return data.reset_index(drop=True)


def _area(params: float, group: str, largest: float) -> float:
    if group == "NonDL":
        params = NON_DEEP_PARAMS
    if not np.isfinite(params) or not np.isfinite(largest) or largest <= 0:
        return _MIN_AREA
    return _MIN_AREA + _AREA_RANGE * min(params / largest, 1.0)


def _label(value: float) -> str:
    return f"{value / 1e6:.1f}M" if value >= 1e6 else f"{value / 1e3:.0f}K"


def _draw_panel(ax, info: DomainRanks, largest: float) -> None:
    data = info.data
    primary = data[data["source"] == info.primary]
    order = primary.sort_values(["rank", "model"], kind="stable")["model"].tolist()
    paper = data[data["source"] == "paper"].set_index("model") if info.primary == "ours" else None
    n = len(order)
    theta = {m: 2 * np.pi * i / n for i, m in enumerate(order)}
    top = max(float(data["rank"].max()), float(n))
    rmax = top + 0.6
    ax.set_theta_zero_location("N")
    ax.set_theta_direction(-1)
    ax.set_ylim(0, rmax)
    ring = np.linspace(0, 2 * np.pi, 361)
    gap_angle = -np.pi / n if n > 1 else np.pi  # between the last spoke and the first
    for radius in RANK_CIRCLES:
        if radius < rmax:
            ax.plot(ring, np.full_like(ring, radius), ls="--", lw=0.9, color="0.45", zorder=1)
    # The rank scale, read along the gap between the last spoke and the first.
    ticks = [t for t in (1, 5, 10, 15) if t < rmax]
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{t} {RANK_CIRCLES[t]}" if t in RANK_CIRCLES else str(t) for t in ticks])
    ax.tick_params(axis="y", labelsize=7, colors="0.3")
    ax.set_rlabel_position(np.degrees(gap_angle))
    rows = primary.set_index("model")
    for model in order:
        t, r = theta[model], rows.loc[model]
        colour = style.GROUP_COLOURS[r["group"]]
        marker = "X" if r["group"] == "NonDL" else "o"
        ax.plot([t, t], [0, r["rank"]], color=colour, lw=2.2, alpha=0.8, zorder=2)
        ax.scatter(
            [t],
            [r["rank"]],
            s=_area(r["params"], r["group"], largest),
            color=colour,
            marker=marker,
            zorder=4,
            edgecolors="white",
            linewidths=0.5,
        )
        if paper is not None and model in paper.index:
            q = paper.loc[model]
            ax.scatter(
                [t],
                [q["rank"]],
                s=_area(q["params"], q["group"], largest),
                marker=marker,
                zorder=5,
                **style.paper_style(colour),
            )
    if n > 1:
        ax.plot(
            [theta[m] for m in order],
            [rows.loc[m, "rank"] for m in order],
            ls="--",
            lw=1.0,
            color="0.25",
            zorder=3,
        )
    ax.set_xticks([theta[m] for m in order])
    ax.set_xticklabels(order, fontsize=8)
    for tick, model in zip(ax.get_xticklabels(), order, strict=True):
        tick.set_color(style.GROUP_COLOURS[rows.loc[model, "group"]])
    ax.tick_params(axis="x", pad=2)
    ax.grid(color="0.85", lw=0.6)


def _panel_footnote(info: DomainRanks) -> str:
    n_models = int((info.data["source"] == info.primary).sum())
    lines = [f"{_count(n_models, 'model')}, ranked over {_count(info.n_ranked, 'dataset')}"]
    if info.n_ranked < info.n_datasets:
        lines[0] += f" of {info.n_datasets} (where all have a result)"
    if info.paper_note:
        lines.append(info.paper_note)
    lines += info.gaps
    return "\n".join(textwrap.fill(line, 90) for line in lines)


def polar_rank_figure(
    ours: pd.DataFrame,
    paper: pd.DataFrame,
    path_stem: str | os.PathLike,
    domains: tuple[str, str],
    figure_label: str,
) -> dict[str, Path]:
    """The paper's Figure 4, 5 or 6 (``figure_label``): a polar rank panel for each of
    ``domains`` (see ``DOMAIN_PAIRS``); ours filled, the paper's hollow on the same
    spokes (the paper's filled when ``ours`` is empty). Returns ``style.save``'s paths."""
    if ours.empty and paper.empty:
        raise ValueError(f"{figure_label}: both the ours and the paper frames are empty")
    infos = {d: domain_ranks(ours, paper, d) for d in domains}
    for domain, info in infos.items():
        if info.empty_reason:
            log.info("polar_ranks: skipped %s panel: %s", domain, info.empty_reason)
        for gap in info.gaps:
            log.info("polar_ranks: skipped %s in %s: %s", figure_label, domain, gap)
    drawn = pd.concat([i.data for i in infos.values() if not i.data.empty] or [pd.DataFrame()])
    params = [
        NON_DEEP_PARAMS if g == "NonDL" else v
        for v, g in zip(drawn.get("params", []), drawn.get("group", []), strict=True)
    ]
    params = [v for v in params if np.isfinite(v)]
    largest = max(params) if params else np.nan
    fig = Figure(figsize=(6.2 * len(domains), 7.6))
    for i, domain in enumerate(domains):
        info = infos[domain]
        ax = fig.add_subplot(1, len(domains), i + 1, projection="polar")
        if info.data.empty:
            ax.set_xticks([])
            ax.set_yticks([])
            style.note(ax, f"{domain}: {info.empty_reason}" + "".join(f"\n{g}" for g in info.gaps))
        else:
            _draw_panel(ax, info, largest)
            ax.text(
                0.5,
                -0.1,
                _panel_footnote(info),
                transform=ax.transAxes,
                ha="center",
                va="top",
                fontsize=7.5,
                color="0.2",
            )
        ax.set_title(domain, fontsize=12, fontweight="bold", pad=24)
    published_only = ours.empty
    what = "published values (MS4N paper)" if published_only else "ours vs the MS4N paper"
    fig.suptitle(f"{figure_label}: average rank per model, by MONSTER domain — {what}", fontsize=12)
    handles = _legend(drawn, published_only, largest)
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.03),
        ncol=len(handles),
        fontsize=7.5,
        frameon=False,
    )
    fig.text(
        0.5,
        0.008,
        "spoke length = average rank (1 = best); dot area ∝ parameters "
        "(× NonDL, placed at 20K); dashed line joins the models in rank order",
        ha="center",
        va="bottom",
        fontsize=7,
        color="0.35",
    )
    fig.subplots_adjust(left=0.04, right=0.96, top=0.86, bottom=0.25, wspace=0.35)
    return style.save(fig, path_stem)


def _legend(drawn: pd.DataFrame, published_only: bool, largest: float) -> list:
    dot = {"marker": "o", "linestyle": "none", "markersize": 7}
    with_paper = bool((drawn.get("source", pd.Series()) == "paper").any())
    handles = style.source_handles(published_only, with_paper, markersize=7)
    groups = list(dict.fromkeys(drawn["group"])) if "group" in drawn else []
    for group in style.GROUP_COLOURS:
        if group in groups:
            marker = "X" if group == "NonDL" else "o"
            handles.append(
                Line2D(
                    [],
                    [],
                    color=style.GROUP_COLOURS[group],
                    label=group,
                    **{**dot, "marker": marker},
                )
            )
    if np.isfinite(largest):
        sizes = [v for v in (10e3, 25e3, 50e3, 100e3, 300e3, 1e6, 3e6) if v <= largest * 1.05]
        for value in sizes[-3:]:
            area = _area(value, "", largest)
            handles.append(
                Line2D(
                    [],
                    [],
                    color="0.6",
                    marker="o",
                    linestyle="none",
                    markersize=np.sqrt(area),
                    label=_label(value),
                )
            )
    return handles


@from_results
def draw_polar(ctx: DrawContext) -> dict[str, Path]:
    """The report's Figures 4–6 (outputs.py): the domains of ``DOMAIN_PAIRS[key]``."""
    key = ctx.artefact.key
    return polar_rank_figure(
        restrict(ctx.ours, "monster"), restrict(ctx.paper, "monster"), ctx.stem,
        DOMAIN_PAIRS[key], f"Figure {key.removeprefix('figure')}",
    )  # fmt: skip
