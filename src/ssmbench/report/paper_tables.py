"""Tables 1–5 of the MS4N paper, ours beside the paper's in every cell.

Each function takes two per-dataset frames (``results``): ``ours`` (from the run records)
and ``paper`` (the paper's Tables 3 and 5), either of which may be empty, and returns a
table of strings: per figure an ``(ours)`` and a ``(paper)`` column. Where the paper prints
a summary figure (Tables 1, 2, 4) that figure is the ``(paper)`` cell when our runs cover
the datasets it was taken over; otherwise the paper's cell is recomputed from its
per-dataset rows on our datasets and says so (``n=k``). ``–`` marks a cell with no
figure. With ``ours`` empty (``ssmbench report --published``) only the paper's columns
are filled.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .aggregate import dataset_ranks
from .context import DrawContext
from .reference import load_published_domains_monster, load_published_summary
from .results import model_summary, restrict
from .tables import AVERAGE_LABEL, MISSING, PM, write_table

DECIMALS = 3  # as in the paper
RANK_LABEL = "Average rank"
OURS, PAPER = "ours", "paper"
#: The paper's column order (Tables 3 and 5); other models follow by name.
PAPER_MODEL_ORDER = (
    "MS4N", "MS4", "MS4-2Layer", "MS4-H128", "S4D", "Mamba1", "Mamba2", "ConvTran",
    "HInception", "FCN", "Transformer", "Informer", "iTransformer", "GRU", "LSTM", "Quant",
    "Hydra", "ET",
)  # fmt: skip
#: Table 1's models (the SSM family of the paper).
TABLE1_MODELS = ("MS4N", "MS4", "Mamba2", "Mamba1")
#: Table 2's models (the MS4 ablation).
TABLE2_MODELS = ("MS4N", "MS4-2Layer", "MS4-H128", "MS4")
#: Table 4's domains, in its order, with their dataset counts in the paper.
TABLE4_DOMAINS = {"Audio": 7, "Satellite": 7, "HAR": 7, "EEG": 4, "Counts": 2, "Other": 2}
#: The MONSTER datasets the paper's printed summaries average over.
PAPER_MONSTER_DATASETS = 29


def fmt(value, decimals: int = DECIMALS, std=None) -> str:
    """``0.123`` or ``0.123 ± 0.010``; ``–`` for a missing value."""
    if value is None or pd.isna(value):
        return MISSING
    if std is None or pd.isna(std):
        return f"{value:.{decimals}f}"
    return f"{value:.{decimals}f} {PM} {std:.{decimals}f}"


def fmt_count(value) -> str:
    """A parameter count with thousands separators; ``–`` when missing."""
    return MISSING if value is None or pd.isna(value) else f"{value:,.0f}"


def model_order(models: Sequence[str]) -> list[str]:
    """``models`` in the paper's column order, others after, by name."""
    rank = {m: i for i, m in enumerate(PAPER_MODEL_ORDER)}
    return sorted(dict.fromkeys(models), key=lambda m: (rank.get(m, len(rank)), m))


def _with_n(text: str, n: int, total: int) -> str:
    return text if text == MISSING or n >= total else f"{text} (n={n})"


def _compared_paper(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's rows on the datasets and models we ran (all of them with no runs)."""
    if ours.empty:
        return paper
    keys = set(zip(ours["benchmark"], ours["dataset"], ours["model"], strict=True))
    rows = [
        k in keys for k in zip(paper["benchmark"], paper["dataset"], paper["model"], strict=True)
    ]
    return paper[rows].reset_index(drop=True)


def _sources(ours: pd.DataFrame) -> tuple[str, ...]:
    return (PAPER,) if ours.empty else (OURS, PAPER)


# ---------------------------------------------------------------- Tables 3 and 5


def per_dataset_table(
    ours: pd.DataFrame,
    paper: pd.DataFrame,
    benchmark: str,
    models: Sequence[str] | None = None,
    regression: bool = False,
) -> pd.DataFrame:
    """Tables 3 (MONSTER) and 5 (UEA): one row per dataset, then ``Average`` and
    ``Average rank``; per model ``{model} (ours)`` and, where the paper has a figure of
    the model on one of the table's datasets, ``{model} (paper)``, each ``"error ± std"``.
    The paper's average and rank are over the datasets we ran that model on (ranks among
    our models that the paper has: ``(of k)`` when fewer than ours), so that both sit on
    the same datasets; ``(n=k)`` when that is fewer than the table's datasets.
    ``regression``: the figure is the test MSE, and the columns say so."""
    ours, paper = restrict(ours, benchmark), restrict(paper, benchmark)
    if ours.empty and paper.empty:
        raise ValueError(f"no results for benchmark {benchmark!r}, ours or the paper's")
    primary = paper if ours.empty else ours
    models = model_order(models or primary["model"].unique())
    datasets = sorted(primary["dataset"].unique())
    compared = _compared_paper(ours, paper)
    metric = " MSE" if regression else ""
    frames = {OURS: ours, PAPER: compared if not ours.empty else paper}
    table: dict[str, list[str]] = {"Dataset": [*datasets, AVERAGE_LABEL, RANK_LABEL]}
    published = set(paper.loc[paper["dataset"].isin(datasets), "model"]) if len(paper) else set()
    for model in models:
        for source in _sources(ours):
            if source == PAPER and model not in published:
                continue  # no published figure for the model here: no empty column
            frame = frames[source]
            cells = frame[frame["model"] == model].set_index("dataset")
            column = [
                fmt(cells.at[d, "error"], std=cells.at[d, "std"]) if d in cells.index else MISSING
                for d in datasets
            ]
            n = int(cells.loc[cells.index.isin(datasets), "error"].notna().sum())
            avg = fmt(cells["error"].mean(), std=cells["std"].mean()) if n else MISSING
            # ranked among the table's models this source has (the paper lacks e.g. S4D)
            ranked = [m for m in models if m in set(frame["model"])]
            ranks = dataset_ranks(frame[frame["dataset"].isin(datasets)], ranked)
            rank = f"{ranks[model].mean():.2f}" if len(ranks) and model in ranks else MISSING
            if rank != MISSING and len(ranked) < len(models):
                rank += f" (of {len(ranked)})"
            table[f"{model}{metric} ({source})"] = [
                *column,
                _with_n(avg, n, len(datasets)),
                _with_n(rank, len(ranks), len(datasets)),
            ]
    return pd.DataFrame(table)


# ---------------------------------------------------------------- Table 1


def _printed(source: str, metric: str) -> dict[str, float]:
    s = load_published_summary()
    s = s[(s["source"] == source) & (s["metric"] == metric)]
    return dict(zip(s["model"], s["value"], strict=True))


def table1(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Table 1: the average std over folds across MONSTER datasets for the SSMs (MS4N, MS4,
    Mamba2, Mamba1, and any other SSM we ran). ``(paper)`` is Table 1's printed figure
    when our runs cover all its datasets, else the mean of Table 3's stds on ours."""
    ours, paper = restrict(ours, "monster"), restrict(paper, "monster")
    printed = _printed("table1", "average_std")
    extra = [] if ours.empty else [m for m in ours["model"].unique() if m not in TABLE1_MODELS]
    ssm_extra = [
        m for m in extra
        if str(ours.loc[ours["model"] == m, "family"].iloc[0]) in ("ms4", "s4d", "mamba1", "mamba2")
    ]  # fmt: skip
    rows = []
    compared = _compared_paper(ours, paper)
    for model in [*TABLE1_MODELS, *ssm_extra]:
        row = {"Model": model}
        o = ours[ours["model"] == model] if not ours.empty else ours
        p = compared[compared["model"] == model]
        n = int(o["dataset"].nunique()) if not ours.empty else int(p["dataset"].nunique())
        if not ours.empty:
            row["Average std (ours)"] = fmt(o["std"].mean(), 4) if len(o) else MISSING
        covers_all = ours.empty or n >= PAPER_MONSTER_DATASETS
        if covers_all and model in printed:
            row["Average std (paper)"] = fmt(printed[model], 4)
        else:
            value = fmt(p["std"].mean(), 4) if len(p) else MISSING
            row["Average std (paper)"] = _with_n(value, len(p), PAPER_MONSTER_DATASETS)
        row["Datasets"] = str(n)
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- Table 2


def table2(
    ours: pd.DataFrame, paper: pd.DataFrame, counts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Table 2: the MS4 ablation on MONSTER: error, average rank (among the four
    variants), parameters and MMac, ours beside the paper's printed figures, which are over
    its 29 datasets (``Datasets (paper)``). Our parameters and MMac: the mean over the 29
    datasets of the model built for each (``counts``: ``table4.table4_comparison``, per
    domain with its dataset count), else the records' mean."""
    ours = restrict(ours, "monster")
    s = load_published_summary()
    s = s[s["source"] == "table2"]
    printed = {(r.model, r.metric): r.value for r in s.itertuples(index=False)}
    present = [m for m in TABLE2_MODELS if not ours.empty and m in set(ours["model"])]
    summary = (
        model_summary(restrict(ours, models=present), {"monster": present}).set_index("model")
        if present
        else pd.DataFrame()
    )
    built = _benchmark_means(counts)
    n = int(restrict(ours, models=present)["dataset"].nunique()) if present else 0
    rows = []
    for model in TABLE2_MODELS:
        row = {"Model": model}
        have = model in summary.index
        for label, key, metric, render in (
            ("Error", "mean_error", "error", lambda v: fmt(v, 4)),
            ("Rank", "mean_rank", "rank", lambda v: fmt(v, 2)),
            ("Params", "params", "params", fmt_count),
            ("MMac", "mmac", "mmac", lambda v: fmt(v, 2)),
        ):
            if not ours.empty:
                value = built.get((model, key), summary.at[model, key] if have else None)
                row[f"{label} (ours)"] = render(value) if have else MISSING
            row[f"{label} (paper)"] = render(printed.get((model, metric)))
        if not ours.empty:
            row["Datasets (ours)"] = str(n)
        row["Datasets (paper)"] = str(PAPER_MONSTER_DATASETS)
        rows.append(row)
    return pd.DataFrame(rows)


def _benchmark_means(counts: pd.DataFrame | None) -> dict[tuple[str, str], float]:
    """{(model, "params" | "mmac"): mean over every dataset} from per-domain means."""
    if counts is None or counts.empty or "n" not in counts:
        return {}
    out = {}
    for model, rows in counts.groupby("model"):
        n = pd.to_numeric(rows["n"], errors="coerce")
        for key in ("params", "mmac"):
            values = pd.to_numeric(rows[key], errors="coerce")
            if values.notna().all() and n.sum() > 0:
                out[(model, key)] = float((values * n).sum() / n.sum())
    return out


# ---------------------------------------------------------------- Table 4


def table4(
    ours: pd.DataFrame, paper: pd.DataFrame, counts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Table 4: per MONSTER domain (Audio 7, Satellite 7, HAR 7, EEG 4, Counts 2, Other 2
    datasets) and figure (Error, Rank, Params, MMac), per model ``(ours)`` and
    ``(paper)``. Ours: mean over the domain's datasets we ran; rank among our models on
    the domain's datasets that all have; params and MMac of the models built for each of
    the domain's datasets (``counts``: ``table4.table4_comparison``, as ``ssmbench
    complexity --table4``), else of the records. The paper's: Table 4's printed figure
    when we ran the whole domain (or in the published-only table), else Error and Rank
    recomputed from Table 3's rows on our datasets."""
    ours = restrict(ours, "monster")
    paper = restrict(paper, "monster")
    t4 = load_published_domains_monster()
    printed = {(r.domain, r.metric, r.model): r.value for r in t4.itertuples(index=False)}
    primary = paper if ours.empty else ours
    models = model_order(set(primary["model"]) | (set(t4["model"]) if ours.empty else set()))
    compared = _compared_paper(ours, paper)
    rows = []
    for domain in TABLE4_DOMAINS:
        o = ours[ours["domain"] == domain] if not ours.empty else ours
        p = compared[compared["domain"] == domain]
        whole = ours.empty or o["dataset"].nunique() >= TABLE4_DOMAINS[domain]
        o_ranks = dataset_ranks(o, [m for m in models if m in set(o["model"])]) if len(o) else None
        p_ranks = dataset_ranks(p, [m for m in models if m in set(p["model"])]) if len(p) else None
        for label, metric in (("Error", "Error"), ("Rank", "Rank"), ("Params", "Param"),
                              ("MMac", "FLOPs")):  # fmt: skip
            n = int(o["dataset"].nunique()) if not ours.empty else TABLE4_DOMAINS[domain]
            row = {"Domain": domain, "Figure": label, "Datasets": str(n)}
            for model in models:
                if not ours.empty:
                    built = _built(counts, model, domain, label)
                    row[f"{model} (ours)"] = (
                        built if built is not None else _domain_cell(o, o_ranks, model, label)
                    )
                value = printed.get((domain, metric, model))
                if whole or label in ("Params", "MMac"):
                    row[f"{model} (paper)"] = _render(label, value)
                else:
                    row[f"{model} (paper)"] = _domain_cell(p, p_ranks, model, label)
            rows.append(row)
    return pd.DataFrame(rows)


def _built(counts: pd.DataFrame | None, model: str, domain: str, label: str) -> str | None:
    """Our built model's count for a Params or MMac cell (None: take the records')."""
    if counts is None or label not in ("Params", "MMac") or counts.empty:
        return None
    key = "params" if label == "Params" else "mmac"
    rows = counts[(counts["model"] == model) & (counts["domain"] == domain)]
    return _render(label, rows[key].iloc[0]) if len(rows) else None


def _render(label: str, value) -> str:
    if label == "Params":
        return fmt_count(value)
    return fmt(value, 4 if label == "Error" else 2)


def _domain_cell(frame: pd.DataFrame, ranks, model: str, label: str) -> str:
    cells = frame[frame["model"] == model]
    if cells.empty:
        return MISSING
    if label == "Rank":
        if ranks is None or ranks.empty or model not in ranks:
            return MISSING
        return fmt(ranks[model].mean(), 2)
    key = {"Error": "error", "Params": "params", "MMac": "mmac"}[label]
    return _render(label, pd.to_numeric(cells[key], errors="coerce").mean())


# ---------------------------------------------------------------- the paper's own sums


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


#: Tables 3 and 5 print 3 decimals: a mean of their rows is within this of the mean of
#: the exact figures, so a recomputed mean can differ from a printed one by that much.
ROW_ROUNDING = 0.0005
#: Why a printed rank cannot be recomputed from the per-dataset rows.
RANK_NOTES = {
    ("table4", "monster"): "Table 4 ranks 15 models (iTransformer too); Table 3 has 14",
    ("text5.1", "monster"): "",
    ("text5.2", "uea"): "the text ranks Quant on UEA too (its rank 4.8); Table 5 has 12 models",
}


def paper_consistency(paper: pd.DataFrame) -> pd.DataFrame:
    """Every summary figure the paper prints (Tables 1, 2 and 4, the text of sections
    5.1–5.2) beside the same figure recomputed from its own per-dataset rows (Tables 3 and
    5): ``source, benchmark, model, metric, printed, recomputed, diff, tolerance, agrees,
    note``. ``tolerance``: half a unit of the printed figure's last decimal, plus
    ``ROW_ROUNDING`` for means of errors and stds (the rows are rounded to 3 decimals).
    Ranks are among every model of the per-dataset table (14 on MONSTER, 12 on UEA), ties
    averaged; ``note`` says where the paper ranked a different set of models. A figure
    the rows cannot give (parameters, Table 2's variants) is left out."""
    from .reference import read_reference_text

    text = read_reference_text(
        "published_summary.csv", ("source", "benchmark", "model", "metric", "value")
    )
    summary = model_summary(paper).set_index(["benchmark", "model"])
    rows = []

    def add(source, bench, model, metric, printed_text, recomputed, is_rank):
        printed = float(printed_text)
        tol = 0.5 * 10 ** -_decimals(printed_text) + (0.0 if is_rank else ROW_ROUNDING)
        diff = recomputed - printed
        rows.append(
            {
                "source": source, "benchmark": bench, "model": model, "metric": metric,
                "printed": printed, "recomputed": round(recomputed, 6),
                "diff": round(diff, 6), "tolerance": round(tol, 6),
                "agrees": bool(abs(diff) <= tol + 1e-12),
                "note": RANK_NOTES.get((source, bench), "") if is_rank else "",
            }
        )  # fmt: skip

    keys = {"error": "mean_error", "rank": "mean_rank", "average_std": "mean_std"}
    for r in text.itertuples(index=False):
        key = keys.get(r.metric)
        if key is None or (r.source == "table2" and r.metric == "rank"):
            continue  # Table 2 ranks the four variants; Table 3 has two of them
        if (r.benchmark, r.model) not in summary.index:
            continue  # Table 2's MS4-2Layer and MS4-H128: no per-dataset rows
        value = float(summary.at[(r.benchmark, r.model), key])
        add(r.source, r.benchmark, r.model, r.metric, r.value, value, r.metric == "rank")
    t4 = read_reference_text(
        "published_domains_monster.csv", ("domain", "metric", "model", "value")
    )
    t4 = t4[t4["metric"].isin(("Error", "Rank")) & (t4["value"] != "")]
    monster = restrict(paper, "monster")
    for domain in TABLE4_DOMAINS:
        d = monster[monster["domain"] == domain]
        ranks = dataset_ranks(d, sorted(d["model"].unique()))
        alias = "SI" if domain == "Satellite" else domain
        for r in t4[t4["domain"] == alias].itertuples(index=False):
            if r.model not in set(d["model"]):
                continue  # iTransformer: in Table 4, not in Table 3
            is_rank = r.metric == "Rank"
            value = (
                float(ranks[r.model].mean())
                if is_rank
                else float(d.loc[d["model"] == r.model, "error"].mean())
            )
            add("table4", "monster", r.model, f"{domain} {r.metric.lower()}", r.value, value,
                is_rank)  # fmt: skip
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- the report's entries
# (outputs.py names these; each gets a context.DrawContext and writes its table)


def _counts(ctx: DrawContext) -> pd.DataFrame | None:
    """Tables 2 and 4's parameters and MMac of every model of ours built for every MONSTER
    dataset (``table4.table4_comparison``), when params.yaml ``models:`` is given; else
    None (the records' own counts)."""
    if not ctx.model_entries:
        return None
    from .table4 import table4_comparison  # builds models: imports torch, only here

    run = set(ctx.records.loc[ctx.records["benchmark"] == "monster", "model"])
    names = [m for m in ctx.model_entries if m in run]
    return table4_comparison(ctx.model_entries, names) if names else None


def draw_table1(ctx: DrawContext):
    return write_table(table1(ctx.ours, ctx.full_paper), ctx.stem)


def draw_table2(ctx: DrawContext):
    return write_table(table2(ctx.ours, ctx.full_paper, ctx.once(_counts)), ctx.stem)


def draw_table4(ctx: DrawContext):
    return write_table(table4(ctx.ours, ctx.full_paper, ctx.once(_counts)), ctx.stem)


def draw_per_dataset(ctx: DrawContext):
    """Tables 3 and 5: the artefact's benchmark per dataset, ours beside the paper's."""
    return write_table(per_dataset_table(ctx.ours, ctx.full_paper, ctx.artefact.benchmark),
                       ctx.stem)  # fmt: skip


def _regression(ctx: DrawContext) -> set[str]:
    """The benchmarks whose every record is of a regression task."""
    if "task" not in ctx.records:
        return set()
    tasks = ctx.records.groupby("benchmark")["task"].agg(set)
    return {b for b, t in dict(tasks).items() if t == {"regression"}}


def draw_benchmark_table(ctx: DrawContext):
    """A benchmark the paper does not have: ours per dataset (its MSE where it regresses)."""
    bench = ctx.artefact.benchmark
    regression = bench in ctx.once(_regression)
    table = per_dataset_table(ctx.ours, ctx.paper.iloc[0:0], bench, regression=regression)
    return write_table(table, ctx.stem)
