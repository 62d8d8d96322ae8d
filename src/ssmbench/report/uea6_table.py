"""The TIDES paper's UEA-6 table from the run records: test accuracy (%) mean ± std per
dataset and model, ours (benchmark ``uea6``) beside the Log-NCDE benchmark's published
baselines (``reference/published_uea6_logncde.csv``), with the average and the average
rank.

Ours and theirs are over the same protocol (``docs/uea6_protocol.md``) but not the same
split rows (their permutation is JAX's). A model of ours that reimplements one of theirs
(``PUBLISHED_AS``: ``S5-logncde`` is their S5 with their per-dataset configuration,
``LogNCDE`` their Log-NCDE with theirs, ``Mamba1-logncde`` their PyTorch Mamba block with
theirs) has its published column beside it. Ranks (1 = best) are over every column of the
table on the datasets all of them have; population std over the seeds, as the published
one. A cell of ours over fewer or more runs than the published seeds (5) says how many:
``47.4 ± 0.0 (n=1)``.

No critical-difference diagram is drawn for UEA-6: over 6 datasets a rank test cannot
separate many models. The Markdown says by how much (``nemenyi_critical_difference``:
the Nemenyi critical difference of the table's columns over the 6 datasets, Demšar 2006,
JMLR 7:1-30, section 3.2.2).
"""

from __future__ import annotations

import math

import pandas as pd
from scipy.stats import studentized_range

from .context import DrawContext
from .critical_difference import ALPHA
from .reference import load_published_uea6
from .tables import MISSING, PM, write_table

BENCHMARK = "uea6"
#: Our model -> the published model it reimplements.
PUBLISHED_AS = {"S5-logncde": "S5", "LogNCDE": "log_ncde", "Mamba1-logncde": "mamba"}
#: the published seeds per cell; a cell of ours with another count is marked with its n
PUBLISHED_SEEDS = 5
#: The published models shown (the Log-NCDE paper's UEA table; the linear-NCDE variants
#: of the later paper are in the file but not in the TIDES paper's table).
PUBLISHED_MODELS = ("log_ncde", "ncde", "nrde", "lru", "S5", "S6", "mamba")
#: Said beside the table (honest selection: docs/uea6_protocol.md row 16).
SELECTION_NOTE = (
    "Ours: configurations fixed or chosen on validation rows only; the checkpoint tested "
    "is the best-validation-accuracy one (TIDES: the lowest-validation-loss one, as its "
    "paper's uea/main.py). The TIDES reference re-ranked its top UEA configurations by "
    "seed-42 test accuracy (uea/run_top_configs.py:101-104); the Log-NCDE baselines are "
    "its fixed per-dataset configurations."
)
#: Said beside the table: what to expect on MotorImagery.
MOTOR_IMAGERY_NOTE = (
    "MotorImagery (2 classes, 64 EEG channels x 3,000 steps, 378 rows): the published "
    "accuracies are 47-58 %, around chance (50 %); ours are expected there too and are "
    "not tuned toward the published ones."
)


def nemenyi_critical_difference(n_models: int, n_datasets: int, alpha: float = ALPHA) -> float:
    """The Nemenyi test's critical difference of average ranks (Demšar 2006, section
    3.2.2): ``q_α · sqrt(k(k+1) / (6N))`` for ``k`` models over ``N`` datasets,
    ``q_α`` the studentised range's upper-α quantile for ``k`` groups and infinite
    degrees of freedom over √2 (Demšar's Table 5a: 2.343 for k = 3, 3.031 for k = 8).
    Two models' average ranks must differ by more than this to differ at ``alpha``."""
    q = studentized_range.ppf(1.0 - alpha, n_models, math.inf) / math.sqrt(2.0)
    return float(q * math.sqrt(n_models * (n_models + 1) / (6.0 * n_datasets)))


def cd_note(n_columns: int, n_datasets: int, alpha: float = ALPHA) -> str:
    """The note on why UEA-6 has no critical-difference diagram, with the number."""
    cd = nemenyi_critical_difference(n_columns, n_datasets, alpha)
    return (
        f"No critical-difference diagram: with {n_columns} columns over {n_datasets} "
        f"datasets the Nemenyi critical difference at α = {alpha:g} is {cd:.2f} average "
        f"ranks, where first and last can be at most {n_columns - 1} apart: only models "
        "near the two ends of the ranking could be told apart."
    )


def uea6_results(records: pd.DataFrame) -> pd.DataFrame:
    """``dataset, model, source ("ours" / "published"), accuracy, std, n``: our runs on
    ``uea6`` (accuracy = 1 − test error per seed, mean and population std) and the
    published rows, both in 0–1."""
    rows = []
    if not records.empty:
        ours = records[records["benchmark"] == BENCHMARK]
        for (dataset, model), g in ours.groupby(["dataset", "model"], sort=True):
            acc = 1.0 - g["test_error"].astype(float)
            rows.append({"dataset": dataset, "model": model, "source": "ours",
                         "accuracy": float(acc.mean()), "std": float(acc.std(ddof=0)),
                         "n": int(len(acc))})  # fmt: skip
    published = load_published_uea6()
    published = published[published["model"].isin(PUBLISHED_MODELS)]
    for r in published.itertuples(index=False):
        rows.append({"dataset": r.dataset, "model": r.model, "source": "published",
                     "accuracy": r.accuracy_mean, "std": r.accuracy_std,
                     "n": int(r.n_seeds)})  # fmt: skip
    return pd.DataFrame(rows, columns=["dataset", "model", "source", "accuracy", "std", "n"])


def _columns(results: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(header, model, source) per column: each of our models, followed by its published
    counterpart; then the other published models."""
    ours = sorted(results.loc[results["source"] == "ours", "model"].unique())
    cols, shown = [], set()
    for model in ours:
        cols.append((f"{model} (ours)", model, "ours"))
        twin = PUBLISHED_AS.get(model)
        if twin is not None:
            cols.append((f"{twin} (published)", twin, "published"))
            shown.add(twin)
    published = set(results.loc[results["source"] == "published", "model"])
    for model in PUBLISHED_MODELS:
        if model not in shown and model in published:
            cols.append((f"{model} (published)", model, "published"))
    return cols


def uea6_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset (accuracy % mean ± std), then ``Average`` and ``Average rank``
    (over the datasets every column has)."""
    datasets = sorted(results["dataset"].unique())
    cols = _columns(results)
    value = {(r.dataset, r.model, r.source): r for r in results.itertuples(index=False)}
    table: dict[str, list] = {"Dataset": list(datasets)}
    means = pd.DataFrame(index=datasets, columns=[c[0] for c in cols], dtype=float)
    for header, model, source in cols:
        cells = []
        for dataset in datasets:
            r = value.get((dataset, model, source))
            if r is None:
                cells.append(MISSING)
                continue
            means.loc[dataset, header] = 100.0 * r.accuracy
            cell = f"{100 * r.accuracy:.1f} {PM} {100 * r.std:.1f}"
            if source == "ours" and r.n != PUBLISHED_SEEDS:
                cell += f" (n={r.n})"
            cells.append(cell)
        table[header] = cells
    complete = means.dropna(axis=0, how="any")
    ranks = complete.rank(axis=1, ascending=False, method="average")
    n = len(complete)
    table["Dataset"] += [f"Average (on {n})", f"Average rank (on {n})"]
    for header, *_ in cols:
        table[header] += [
            f"{complete[header].mean():.1f}" if n else MISSING,
            f"{ranks[header].mean():.2f}" if n else MISSING,
        ]
    return pd.DataFrame(table)


def write_uea6_table(results: pd.DataFrame, stem) -> dict:
    """The table as CSV, Markdown and LaTeX (``tables.write_table``), the Markdown with
    the note on critical differences (``cd_note``: the table's columns over the UEA-6
    datasets) and the selection note below it."""
    from pathlib import Path

    from ssmbench.io import atomic_write_text

    table = uea6_table(results)
    paths = write_table(table, stem)
    md = Path(paths["md"])
    n_datasets = load_published_uea6()["dataset"].nunique()
    notes = "\n\n".join(
        [cd_note(len(table.columns) - 1, n_datasets), MOTOR_IMAGERY_NOTE, SELECTION_NOTE]
    )
    atomic_write_text(md, md.read_text(encoding="utf-8") + "\n" + notes + "\n")
    return paths


def ranks_of(table: pd.DataFrame) -> dict[str, float]:
    """Each column's average rank, as a number (for the tests and the summary)."""
    row = table[table["Dataset"].str.startswith("Average rank")].iloc[0]
    return {k: float(v) for k, v in row.items() if k != "Dataset" and v not in (MISSING, "")}


def draw_table(ctx: DrawContext) -> dict:
    """The report's entry (outputs.py: ``uea6_results``)."""
    return write_uea6_table(uea6_results(ctx.records), ctx.stem)
