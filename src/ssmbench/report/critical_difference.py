"""Critical-difference diagrams of the models' errors over a benchmark's datasets: the
MS4N paper's rank comparison (its Figures 3 and 7 rank the models; this adds which
differences are significant), drawn with aeon's ``plot_critical_difference``: pairwise
Wilcoxon signed-rank tests, Holm correction, α = 0.05 by default, lower error better.

``cd_data`` chooses the datasets × models error matrix the test runs on, ``cd_p_values``
gives the test's p-values (what the bars are drawn from), ``cd_diagram`` draws and saves.
Ours and the paper's are two calls of ``cd_diagram`` on the two per-dataset frames.

Where a diagram would mislead it is not drawn: with fewer than ``MIN_DATASETS`` datasets
(no pair could be told apart) or fewer than 3 models (aeon's diagram starts with a
Friedman test, which needs 3), a plain figure lists the mean ranks and says why.
"""

from __future__ import annotations

import logging
import math
import os
import textwrap
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from aeon.benchmarking.stats import check_friedman, wilcoxon_test
from aeon.visualisation import plot_critical_difference
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from . import style
from .aggregate import dataset_ranks
from .context import DrawContext, from_results
from .results import restrict

log = logging.getLogger(__name__)

ALPHA = 0.05


def wilcoxon_min_pairs(alpha: float, two_sided: bool = True) -> int:
    """The fewest pairs with which an exact Wilcoxon signed-rank test can reach
    ``p ≤ alpha``: its smallest p (every difference the same sign) is 2^-n one-sided and
    2^(1-n) two-sided."""
    sides = 2 if two_sided else 1
    return max(1, math.ceil(math.log2(sides / alpha)))


#: Fewer datasets than this and no pair of models can differ significantly: two-sided at
#: α = 0.05 the Wilcoxon test needs 6 pairs (2/2^5 = 0.0625, 2/2^6 = 0.031), so a diagram
#: of fewer datasets would only ever show one bar joining every model.
MIN_DATASETS = wilcoxon_min_pairs(ALPHA)
#: aeon's clique search starts with a Friedman test, which needs 3 models.
MIN_MODELS_DIAGRAM = 3
#: aeon's defaults are 6 and 1.5 inches; the label space fits "iTransformer (10.2)".
WIDTH_IN = 7.0
TEXTSPACE_IN = 1.9
FOOTNOTE_CHARS = 120  # a line of 7.5 pt text across WIDTH_IN
#: aeon prints the model names at 16 pt, too big for "HInception" in TEXTSPACE_IN.
LABEL_FONTSIZE = 11
#: inches per character of a label at LABEL_FONTSIZE (with its rank): longer names than
#: TEXTSPACE_IN holds widen the label space
LABEL_CHAR_IN = 0.085


def label_space(labels) -> float:
    """The label space (inches) each side of the axis: TEXTSPACE_IN, or more for long
    names (e.g. "TIDES-physio-ImInput" with its rank)."""
    longest = max((len(str(label)) for label in labels), default=0)
    return max(TEXTSPACE_IN, LABEL_CHAR_IN * (longest + 7))


class Dropped(NamedTuple):
    """What ``cd_data`` left out of the test: ``kind`` "model" or "dataset"."""

    kind: str
    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.reason}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _error_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    benchmarks = frame["benchmark"].dropna().unique()
    if len(benchmarks) > 1:
        raise ValueError(
            "critical difference: one benchmark at a time, got " + ", ".join(sorted(benchmarks))
        )
    work = frame.assign(error=pd.to_numeric(frame["error"], errors="coerce"))
    wide = work.pivot_table(index="dataset", columns="model", values="error", aggfunc="first")
    models = sorted(work["model"].astype(str).unique())
    return wide.reindex(columns=models).sort_index()


def cd_data(
    frame: pd.DataFrame, min_datasets: int = MIN_DATASETS
) -> tuple[pd.DataFrame, list[Dropped]]:
    """The errors the test runs on: a datasets × models frame (index ``dataset``, columns
    ``model``, both sorted by name, no NaN) over the datasets where every kept model has a
    result (``aggregate.dataset_ranks``), and what was left out, with why.

    A model with no error at all is left out. A model missing on some datasets is left out
    only if keeping it would leave fewer than ``min_datasets`` common datasets (the
    sparsest first, until enough remain); otherwise the datasets without it are. When
    no choice of models reaches ``min_datasets`` (every model has fewer), models are left
    out only until some dataset has every model, so the mean ranks can still be shown.
    ``frame``: one benchmark's per-dataset frame.
    """
    wide = _error_matrix(frame)
    dropped: list[Dropped] = []
    coverage = wide.notna().sum()
    for model in coverage.index[coverage == 0]:
        dropped.append(Dropped("model", model, "no error on any dataset"))
    models = [m for m in wide.columns if coverage[m] > 0]
    n_all = int(wide.notna().any(axis=1).sum())
    target = min_datasets if models and coverage[models].max() >= min_datasets else 1

    def common(kept):
        return dataset_ranks(frame, kept).index if kept else pd.Index([])

    while models and len(common(models)) < target:
        # the sparsest model goes first (then by name): it costs the most datasets
        sparsest = min(models, key=lambda m: (coverage[m], m))
        n_common = len(common(models))
        with_it = (
            f"only {_plural(n_common, 'dataset')} have every model (fewer than {target})"
            if target > 1
            else "no dataset has every model"
        )
        reason = f"results on {coverage[sparsest]} of {n_all} datasets; with it {with_it}"
        dropped.append(Dropped("model", sparsest, reason))
        models.remove(sparsest)
    kept = common(models)
    scores = wide.loc[kept, models] if models else wide.iloc[:0, :0]
    for dataset in wide.index.difference(kept):
        missing = [m for m in models if pd.isna(wide.loc[dataset, m])]
        if models:
            dropped.append(Dropped("dataset", dataset, "no result for " + ", ".join(missing)))
    scores = scores.astype(float)
    scores.index.name, scores.columns.name = "dataset", "model"
    return scores, dropped


def mean_ranks(scores: pd.DataFrame) -> pd.Series:
    """Each model's mean rank over the rows of ``scores`` (1 = lowest error, ties
    averaged), best first (then by name)."""
    if scores.empty:
        return pd.Series(dtype=float, name="mean_rank")
    ranks = scores.rank(axis=1, method="average", ascending=True).mean()
    order = sorted(ranks.index, key=lambda m: (ranks[m], m))
    return ranks[order].rename("mean_rank")


def _rank_order(values: np.ndarray) -> np.ndarray:
    """The column order aeon sorts by (its ``_sort_by_average_rank``: ``np.argsort`` of the
    mean ranks), so p-values are labelled as aeon computes them."""
    ranks = pd.DataFrame(values).rank(axis=1, method="average").to_numpy()
    return np.argsort(ranks.mean(axis=0))


def cd_p_values(
    frame: pd.DataFrame, alpha: float = ALPHA, min_datasets: int = MIN_DATASETS
) -> pd.DataFrame:
    """The pairwise p-values behind the diagram of ``frame`` (on ``cd_data``'s matrix), as
    aeon computes them: models in mean-rank order (best first); entry [i, j] (i above j)
    is the one-sided Wilcoxon signed-rank p that model i has lower errors than model j,
    unadjusted; NaN on and below the diagonal. With 3 or more models aeon first runs a
    Friedman test: when its p ≥ ``alpha`` every pair is set to p = 1 (one clique).

    ``attrs``: ``friedman_p`` (NaN for 2 models), ``adjusted_alpha`` (α/(k−1): aeon's Holm
    correction, the level each pair is tested at), ``n_datasets``. An empty frame for
    fewer than 2 models or no dataset.
    """
    scores, _ = cd_data(frame, min_datasets)
    if scores.shape[1] < 2 or scores.empty:
        return pd.DataFrame(dtype=float)
    values = scores.to_numpy(float)
    order = _rank_order(values)
    labels = [str(m) for m in scores.columns[order]]
    k = len(labels)
    friedman_p = float("nan")
    if k >= MIN_MODELS_DIAGRAM:
        friedman_p = float(check_friedman(pd.DataFrame(values).rank(axis=1).to_numpy()))
    if friedman_p >= alpha:
        p = np.ones((k, k))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # identical columns: p = 1, aeon warns
            p = wilcoxon_test(values[:, order], labels, lower_better=True)
    p = np.where(np.triu(np.ones((k, k), dtype=bool), 1), p, np.nan)
    out = pd.DataFrame(p, index=pd.Index(labels, name="model"), columns=labels)
    out.attrs.update(friedman_p=friedman_p, adjusted_alpha=alpha / (k - 1), n_datasets=len(scores))
    return out


def _families(frame: pd.DataFrame) -> dict:
    known = frame.dropna(subset=["family"])
    return known.groupby("model")["family"].first().to_dict()


def _dropped_lines(dropped: list[Dropped]) -> list[str]:
    """The footnote's account of what was left out: models one by one, datasets grouped
    by the models they lack."""
    lines = [f"left out model {d.name}: {d.reason}" for d in dropped if d.kind == "model"]
    by_reason: dict[str, list[str]] = {}
    for d in dropped:
        if d.kind == "dataset":
            by_reason.setdefault(d.reason, []).append(d.name)
    for reason, names in by_reason.items():
        lines.append(f"left out {_plural(len(names), 'dataset')} ({reason}): " + ", ".join(names))
    return lines


def _wrap(lines: list[str]) -> list[str]:
    return [w for line in lines for w in textwrap.wrap(line, FOOTNOTE_CHARS) or [""]]


def _group_legend(fig, families: dict, models, y: float) -> None:
    groups = list(dict.fromkeys(style.group_of(families.get(m)) for m in models))
    groups = [g for g in style.GROUP_COLOURS if g in groups]  # the paper's order
    if not groups:
        return
    handles = [Line2D([], [], color=style.GROUP_COLOURS[g], lw=3) for g in groups]
    fig.legend(
        handles, groups, loc="upper center", bbox_to_anchor=(0.5, y), ncol=len(groups),
        frameon=False, fontsize=8, handlelength=1.5, columnspacing=1.2,
    )  # fmt: skip


def _frame_around(fig, body_height: float, title: str, families, models, footnote) -> None:
    """Grow ``fig`` by a band on top (title, group legend) and one below (footnote), its
    single axes keeping its size in inches, so aeon's drawing is not rescaled."""
    lines = _wrap(footnote)
    top, bottom = 0.75, 0.2 + 0.16 * len(lines)
    width = fig.get_size_inches()[0]
    height = body_height + top + bottom
    fig.set_size_inches(width, height)
    for ax in fig.axes:
        ax.set_position([0, bottom / height, 1, body_height / height])
    fig.suptitle(title, y=1 - 0.08 / height, va="top", fontsize=11)
    _group_legend(fig, families, models, 1 - 0.42 / height)
    fig.text(0.015, (bottom - 0.1) / height, "\n".join(lines), ha="left", va="top",
             fontsize=7.5, linespacing=1.25)  # fmt: skip


def _too_few_message(n: int, k: int, alpha: float, min_datasets: int, p2) -> list[str]:
    need = wilcoxon_min_pairs(alpha)
    msgs = []
    if n < min_datasets:
        why = (
            f"Wilcoxon needs ≥ {need} to reach α = {alpha:g}"
            if min_datasets == need
            else f"this diagram asks ≥ {min_datasets}; Wilcoxon needs ≥ {need} to reach "
            f"α = {alpha:g}"
        )
        msgs.append(
            f"{_plural(n, 'dataset')}: too few for a critical-difference test ({why}); "
            "ranks shown without significance bars"
        )
    if k < 2:
        msgs.append(
            f"{_plural(k, 'model')}: a critical-difference test compares ≥ 2 models; "
            "ranks shown without significance bars"
        )
    elif k < MIN_MODELS_DIAGRAM and n >= min_datasets:
        verdict = "significant" if p2 <= alpha else "not significant"
        msgs.append(
            f"{k} models: aeon's diagram needs ≥ {MIN_MODELS_DIAGRAM} (it starts with a "
            f"Friedman test); one-sided Wilcoxon signed-rank p = {p2:.3g}, {verdict} at "
            f"α = {alpha:g}; ranks shown without significance bars"
        )
    return msgs


def _ranks_figure(scores, families, title, messages, footnote) -> Figure:
    """The figure drawn instead of a diagram: each model's mean rank, and why no test."""
    ranks = mean_ranks(scores)
    k = max(len(ranks), 1)
    fig = Figure(figsize=(WIDTH_IN, 1.0))
    ax = fig.add_axes([0, 0, 1, 1])
    body = 0.9 + 0.3 * k
    _frame_around(fig, body, title, families, list(ranks.index), messages + footnote)
    # inner margins in inches: model names on the left, the axis label below
    width, height = fig.get_size_inches()
    x0, y0, bottom = 1.5 / width, ax.get_position().y0, 0.55
    ax.set_position([x0, y0 + bottom / height, 1 - x0 - 0.3 / width, (body - bottom - 0.15)
                     / height])  # fmt: skip
    if ranks.empty:
        ax.set_axis_off()
        style.note(ax, "no model has a result on a common dataset")
        return fig
    y = np.arange(len(ranks))
    colours = [style.colour_of(families.get(m)) for m in ranks.index]
    ax.scatter(ranks.to_numpy(), y, c=colours, s=40, zorder=3)
    for yi, r in zip(y, ranks.to_numpy(), strict=True):
        ax.annotate(f"{r:.2f}", (r, yi), xytext=(6, 0), textcoords="offset points",
                    va="center", fontsize=8)  # fmt: skip
    ax.set_yticks(y, list(ranks.index), fontsize=9)
    for label, colour in zip(ax.get_yticklabels(), colours, strict=True):
        label.set_color(colour)
    ax.set_ylim(len(ranks) - 0.5, -0.5)  # best on top
    n_models = scores.shape[1]
    ax.set_xlim(0.5, n_models + 0.5)
    ax.set_xticks(range(1, n_models + 1))
    ax.grid(axis="x", lw=0.4, alpha=0.5)
    ax.set_xlabel(
        f"mean rank over {_plural(len(scores), 'dataset')} (1 = lowest error)", fontsize=9
    )
    return fig


def cd_diagram(
    frame: pd.DataFrame,
    path_stem: str | os.PathLike,
    title: str,
    alpha: float = ALPHA,
    min_datasets: int = MIN_DATASETS,
) -> dict[str, Path]:
    """Draw the critical-difference diagram of ``frame`` (one benchmark's per-dataset
    frame: ours, or the paper's) over ``cd_data``'s datasets and models and save it as
    ``path_stem``.png/.pdf (``style.save``).

    aeon's ``plot_critical_difference``: Wilcoxon signed-rank tests, Holm correction,
    ``alpha``, lower error better; models coloured by the paper's group. The footnote says
    the test, the numbers of datasets and models, the Friedman p, and what was left out.
    With fewer than ``min_datasets`` datasets, or fewer than 3 models, a plain figure of
    the mean ranks says why no diagram is drawn (and the log says so too).
    """
    if frame.empty:
        raise ValueError("critical difference: the per-dataset frame is empty: nothing to rank")
    name = Path(path_stem).name
    scores, dropped = cd_data(frame, min_datasets)
    for d in dropped:
        log.info("%s: skipped %s %s: %s", name, d.kind, d.name, d.reason)
    families = _families(frame)
    n, k = scores.shape
    coverage = f"{_plural(n, 'dataset')}, {_plural(k, 'model')}"
    footnote = _dropped_lines(dropped)
    if n < min_datasets or k < MIN_MODELS_DIAGRAM:
        p = cd_p_values(frame, alpha, min_datasets)
        p2 = float(p.iloc[0, 1]) if p.shape == (2, 2) else float("nan")
        messages = _too_few_message(n, k, alpha, min_datasets, p2)
        for msg in messages:
            log.info("%s: skipped the critical-difference test: %s", name, msg)
        fig = _ranks_figure(scores, families, title, [*messages, coverage], footnote)
        return style.save(fig, path_stem)

    highlight = {m: style.colour_of(families.get(m)) for m in scores.columns}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # aeon warns of models tied on every dataset
        fig, _, _ = plot_critical_difference(
            scores.to_numpy(float), [str(m) for m in scores.columns], highlight=highlight,
            lower_better=True, test="wilcoxon", correction="holm", alpha=alpha,
            width=WIDTH_IN + 2 * (label_space(scores.columns) - TEXTSPACE_IN),
            textspace=label_space(scores.columns), return_p_values=True,
        )  # fmt: skip
    try:
        labels = {str(m) for m in scores.columns}
        for text in fig.axes[0].texts:
            if text.get_text() in labels:
                text.set_fontsize(LABEL_FONTSIZE)
        p = cd_p_values(frame, alpha, min_datasets)
        adjusted = p.attrs["adjusted_alpha"]
        separable = wilcoxon_min_pairs(adjusted, two_sided=False)
        lines = [
            f"Wilcoxon signed-rank, Holm correction, α = {alpha:g}; {coverage}",
            f"Friedman p = {p.attrs['friedman_p']:.2g}"
            + (" ≥ α: no difference tested, one bar joins all" if p.attrs["friedman_p"] >= alpha
               else "")
            + f"; a bar joins models not significantly different (aeon: each pair one-sided "
            f"at α/(k−1) = {adjusted:.2g})",
        ]  # fmt: skip
        if n < separable:
            lines.append(
                f"with {n} datasets no pair can reach α/(k−1) = {adjusted:.2g} (the test "
                f"needs ≥ {separable}): the bars cannot separate any models"
            )
        _frame_around(
            fig, fig.get_size_inches()[1], title, families, list(scores.columns),
            lines + footnote,
        )  # fmt: skip
        return style.save(fig, path_stem)
    finally:
        import matplotlib.pyplot  # aeon drew with it (imported here, by then loaded)

        matplotlib.pyplot.close(fig)  # aeon's figure is pyplot's: let pyplot forget it


def _draw(ctx: DrawContext, of_paper: bool) -> dict[str, Path]:
    key, bench = ctx.artefact.key, ctx.artefact.benchmark
    frame = restrict(ctx.paper if of_paper else ctx.ours, bench)
    whose = "the paper's (MS4N paper)" if of_paper else "ours"
    title = f"{bench.upper()}: critical differences, {whose}"
    if frame.empty:
        log.info("%s: skipped the diagram: no %s results on %s", key, whose, bench)
        return style.message_figure(ctx.stem, title, [f"no {whose} results on {bench} to rank"])
    return cd_diagram(frame, ctx.stem, title, alpha=ALPHA)


@from_results
def draw_cd(ctx: DrawContext) -> dict[str, Path]:
    """The report's diagram of ours on the artefact's benchmark (outputs.py: ``cd_{b}``);
    the paper's where we have no result at all (the published-only report)."""
    return _draw(ctx, of_paper=ctx.ours.empty)


@from_results
def draw_cd_paper(ctx: DrawContext) -> dict[str, Path]:
    """The report's diagram of the paper's results beside ours (``cd_{b}_paper``)."""
    return _draw(ctx, of_paper=True)
