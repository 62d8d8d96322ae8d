"""The TIDES paper's Physiome-ODE table from the run records: test MSE mean ± std per
dataset and model, ours beside the six models of the Physiome-ODE leaderboard
(``reference/published_physiome_leaderboard.csv``: github kloetergensc/Physiome-ODE
@4829169, README), with the leaderboard's own summary rows (``Wins``, ``Average rank``),
and the critical-difference diagram of the same columns.

Two kinds of rows of ours:

* benchmark ``physiome_ode``: the official archive (Zenodo record 11492058), datasets
  named by the leaderboard's code (DUP01, HOD01, ...; an archive name such as
  ``dupont_1991a`` is mapped to its code): the leaderboard's test sets, ranked with it;
* benchmark ``physiome``: our own simulation of a model with myokit
  (``ssmbench.data.physiome``), labelled ``HOD01 (generated)`` where the leaderboard has
  the same model (``PHYSIOME_MODELS[name]["official"]``), else ``Noble1962 (generated)``.
  It is not the leaderboard's test set (another model file, our own draws of the
  perturbations, noise and masks), so its MSE is not comparable with the leaderboard's:
  shown, never ranked (ranked among ours alone it would add nothing its cells do not
  say), its published cells left empty.

Conventions, the leaderboard's where it has one (under them the shipped CSV reproduces
the README's own summary rows: tests/test_physiome_table.py):

* MSE: the mean over the folds; std: the population std over the folds (ddof 0,
  ``aggregate.STD_DDOF``, as TIDES' ``physiome_ode/run_final_folds.py`` prints it with
  ``np.std``; which one the leaderboard prints it does not say:
  docs/physiome_official_format.md §4);
* columns are compared at the leaderboard's printed precision (``DECIMALS``), so that a
  difference it cannot show decides no win and no rank;
* ``Wins``: the datasets on which a column has the lowest MSE, every tied column counted
  (the README bolds every tied best; its Wins row, though, gives Neural Flows 2 where its
  table bolds none: the rows here count the table);
* ``Average rank``: 1 = the lowest MSE, tied columns share the lowest of their ranks
  (pandas ``method="min"``: the README's Avg. Rank row is that of its table);
* both over the official datasets every ranked column has; a column with no official
  result (a model of ours run on generated data only) is not ranked.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ssmbench.data.physiome.models import BENCHMARK as GENERATED_BENCHMARK
from ssmbench.data.physiome.models import PHYSIOME_MODELS

from .aggregate import STD_DDOF
from .context import DrawContext
from .critical_difference import ALPHA, cd_diagram, wilcoxon_min_pairs
from .reference import load_published_physiome
from .style import message_figure
from .tables import MISSING, PM, write_table

log = logging.getLogger(__name__)

#: The official archive's benchmark (params.yaml ``benchmarks``).
OFFICIAL_BENCHMARK = "physiome_ode"
#: The leaderboard's models, in its column order.
PUBLISHED_MODELS = ("GRU-ODE-Bayes", "LinODENet", "CRU", "Neural Flows", "GraFITi", "GraFITi-C")
#: Our model -> the leaderboard model it reimplements (its column is shown beside ours).
PUBLISHED_AS = {"LinODEnet": "LinODENet"}
#: The leaderboard's folds (its README: mean ± std over 5 folds).
PUBLISHED_FOLDS = 5
#: The leaderboard prints 3 decimals; wins and ranks are decided at that precision.
DECIMALS = 3
#: ``test_set`` of a row: the leaderboard's test sets, or our own simulation.
OFFICIAL, GENERATED = "official", "generated"
RESULT_COLUMNS = ["label", "dataset", "code", "test_set", "model", "source", "mse", "std", "n"]
#: The diagram is drawn only over at least this many datasets with every column. aeon
#: tests each pair one-sided at α/(k−1) (Holm's first step): with the 8 columns of two
#: models of ours beside the six published, 0.05/7 = 0.0071, which an exact Wilcoxon test
#: reaches from 8 datasets only if every one goes the same way (2^-8 = 0.0039; 2^-7 =
#: 0.0078 does not); from 10 a pair still separates when the worse model wins the
#: datasets of its smallest differences (rank sum ≤ 4: 7/1024 = 0.0068). Fewer than 10:
#: a diagram could only show the all-one-way pairs, and says nothing a rank list does not.
CD_MIN_DATASETS = 10
#: Said below the table (honest selection: docs/physiome_official_format.md).
METRIC_NOTE = (
    "MSE: test MSE pooled over every observed target value of a fold's test split, in "
    "the archive's normalised (z-scored) units; mean ± std over the folds (ours: "
    'population std, ddof 0; the leaderboard does not say which), "(n=k)" where a cell '
    "has other than 5 folds. Wins: the datasets on which a column has the lowest MSE at "
    "the printed 3 decimals, every tied column counted; Average rank: 1 = lowest, tied "
    "columns sharing the lowest of their ranks (the leaderboard's conventions); both over "
    'the official datasets every ranked column has. Rows "(generated)": our own myokit '
    "simulation of the model, not the leaderboard's test set: shown, not ranked."
)
SELECTION_NOTE = (
    "Ours: configurations fixed or chosen on validation MSE only, the best-validation "
    "checkpoint tested. The TIDES reference tuned TIDES per dataset with Optuna (TPE) on "
    "fold-0 validation MSE (physiome_ode/hypersearch_physio.py), ran the top-K trials by "
    "validation on all 5 folds and marked the one of lowest mean test MSE best "
    "(physiome_ode/run_top_k_final.py:111, 194); its paper's numbers are not in its "
    "repository. The leaderboard's models: the Physiome-ODE training scripts "
    "(experiments/training/train_*.py: early stopping on validation MSE, the "
    "best-validation checkpoint tested); how their hyperparameters were chosen its "
    "README does not say."
)


def _codes() -> dict[str, str]:
    """The leaderboard's archive name -> code (``hodgkin_huxley_1952_variant01`` ->
    ``HOD01``), from the CSV's ``dataset`` column."""
    published = load_published_physiome()
    return dict(zip(published["dataset"], published["code"], strict=True))


def generated_counterpart(name: str, codes: dict[str, str] | None = None) -> str | None:
    """The leaderboard code of a generated dataset's model (``HodgkinHuxley1952`` ->
    ``HOD01``), None where the leaderboard has no dataset of it."""
    official = PHYSIOME_MODELS.get(name, {}).get("official")
    return (codes if codes is not None else _codes()).get(official) if official else None


def physiome_results(records: pd.DataFrame) -> pd.DataFrame:
    """``RESULT_COLUMNS``: one row per (dataset, model) of ours on ``physiome_ode`` and
    ``physiome`` (mean and population std of ``test_error``, the pooled masked test MSE,
    over the folds; ``n`` folds) and one per leaderboard cell (``n`` = 5).

    ``label``: the table's row (the code; ``"HOD01 (generated)"`` for our generated
    HOD01, ``"HOD01, HodgkinHuxley1952 (generated)"`` for another generated set of that
    model); ``dataset``: the records' name; ``code``: the leaderboard's (None for a
    generated dataset it lacks); ``test_set``: ``official`` or ``generated``;
    ``source``: ``ours`` or ``published``."""
    published = load_published_physiome()
    codes = dict(zip(published["dataset"], published["code"], strict=True))
    known = set(published["code"])
    rows = []
    if not records.empty:
        ours = records[records["benchmark"].isin([OFFICIAL_BENCHMARK, GENERATED_BENCHMARK])]
        for (bench, dataset, model), g in ours.groupby(["benchmark", "dataset", "model"]):
            mse = g["test_error"].astype(float)
            if bench == OFFICIAL_BENCHMARK:
                code = dataset if dataset in known else codes.get(dataset, dataset)
                label, test_set = code, OFFICIAL
            else:
                code = generated_counterpart(dataset, codes)
                # HOD01 is also the name of our transcription of the leaderboard's model;
                # another dataset of the same model (HodgkinHuxley1952) says its own name
                named = code not in (None, dataset) and code in PHYSIOME_MODELS
                shown = f"{code}, {dataset}" if named else code
                label = f"{shown or dataset} ({GENERATED})"
                test_set = GENERATED
            rows.append({"label": label, "dataset": dataset, "code": code,
                         "test_set": test_set, "model": model, "source": "ours",
                         "mse": float(mse.mean()), "std": float(mse.std(ddof=STD_DDOF)),
                         "n": int(len(mse))})  # fmt: skip
    for r in published.itertuples(index=False):
        rows.append({"label": r.code, "dataset": r.code, "code": r.code, "test_set": OFFICIAL,
                     "model": r.model, "source": "published", "mse": r.mse_mean,
                     "std": r.mse_std, "n": PUBLISHED_FOLDS})  # fmt: skip
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def printed(value: float) -> float:
    """``value`` as the table prints it (``DECIMALS`` places), the number wins and ranks
    compare."""
    return float(f"{value:.{DECIMALS}f}")


def _columns(results: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(header, model, source) per column: our models by name, each followed by the
    leaderboard model it reimplements (``PUBLISHED_AS``), then the other leaderboard models
    in its order."""
    ours = sorted(results.loc[results["source"] == "ours", "model"].unique())
    present = set(results.loc[results["source"] == "published", "model"])
    cols, shown = [], set()
    for model in ours:
        cols.append((f"{model} (ours)", model, "ours"))
        twin = PUBLISHED_AS.get(model)
        if twin in present:
            cols.append((f"{twin} (published)", twin, "published"))
            shown.add(twin)
    return cols + [
        (f"{m} (published)", m, "published")
        for m in PUBLISHED_MODELS
        if m in present and m not in shown
    ]


def _official_labels(results: pd.DataFrame) -> list[str]:
    """The official rows: the leaderboard's order (its README's), then any other code."""
    order = list(dict.fromkeys(load_published_physiome()["code"]))
    have = set(results.loc[results["test_set"] == OFFICIAL, "label"])
    return [c for c in order if c in have] + sorted(have - set(order))


def ranked_scores(results: pd.DataFrame) -> pd.DataFrame:
    """The official datasets × ranked columns (headers) of printed MSE means, over the
    datasets every ranked column has; a column without any official result is not
    ranked. What ``Wins``, ``Average rank`` and the diagram are computed on."""
    official = results[results["test_set"] == OFFICIAL]
    scores = pd.DataFrame(index=_official_labels(results), dtype=float)
    for header, model, source in _columns(results):
        cells = official[(official["model"] == model) & (official["source"] == source)]
        if not cells.empty:
            scores[header] = pd.Series(
                [printed(v) for v in cells["mse"]], index=list(cells["label"]), dtype=float
            )
    if scores.shape[1] == 0:  # nothing ranked: no dataset has "every column"
        return scores.iloc[0:0]
    return scores.dropna(axis=0, how="any")


def wins_and_ranks(scores: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per column of ``ranked_scores``: the datasets it is best on (ties: a win for each
    tied column) and its average rank (ties share the lowest rank)."""
    best = scores.min(axis=1)
    wins = scores.eq(best, axis=0).sum().astype(int)
    ranks = scores.rank(axis=1, method="min", ascending=True).mean()
    return wins, ranks


def _cell(r) -> str:
    text = f"{r.mse:.{DECIMALS}f} {PM} {r.std:.{DECIMALS}f}"
    return text if r.n == PUBLISHED_FOLDS else f"{text} (n={r.n})"


def physiome_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per official dataset (MSE mean ± std, the leaderboard's order), then the
    generated stand-ins (by label), then ``Wins (on n)`` and ``Average rank (on n)``
    (``ranked_scores``); columns our models, then the leaderboard's six."""
    cols = _columns(results)
    generated = sorted(set(results.loc[results["test_set"] == GENERATED, "label"]))
    labels = _official_labels(results) + generated
    value = {(r.label, r.model, r.source): r for r in results.itertuples(index=False)}
    table: dict[str, list] = {"Dataset": list(labels)}
    for header, model, source in cols:
        table[header] = [
            _cell(value[(label, model, source)]) if (label, model, source) in value else MISSING
            for label in labels
        ]
    scores = ranked_scores(results)
    wins, ranks = wins_and_ranks(scores)
    n = len(scores)
    table["Dataset"] += [f"Wins (on {n})", f"Average rank (on {n})"]
    for header, *_ in cols:
        ranked = n and header in scores.columns
        table[header] += [
            str(int(wins[header])) if ranked else MISSING,
            f"{ranks[header]:.2f}" if ranked else MISSING,
        ]
    return pd.DataFrame(table)


def write_physiome_table(results: pd.DataFrame, stem: str | os.PathLike) -> dict[str, Path]:
    """The table as CSV, Markdown and LaTeX (``tables.write_table``), the Markdown with
    the notes on the metric and on selection below it."""
    from ssmbench.io import atomic_write_text

    paths = write_table(physiome_table(results), stem)
    md = Path(paths["md"])
    text = md.read_text(encoding="utf-8") + "\n" + METRIC_NOTE + "\n\n" + SELECTION_NOTE + "\n"
    atomic_write_text(md, text)
    return paths


def summary_row(table: pd.DataFrame, name: str) -> dict[str, float]:
    """A summary row (``"Wins"`` or ``"Average rank"``) as numbers, per ranked column."""
    row = table[table["Dataset"].str.startswith(f"{name} (on")].iloc[0]
    return {k: float(v) for k, v in row.items() if k != "Dataset" and v not in (MISSING, "")}


def cd_min_datasets(n_columns: int, alpha: float = ALPHA) -> int:
    """How many datasets with every column the diagram needs: ``CD_MIN_DATASETS``, or
    more where so many columns are compared that even all-one-way pairs need more (the
    exact one-sided Wilcoxon test at aeon's α/(k−1))."""
    if n_columns < 2:
        return CD_MIN_DATASETS
    return max(CD_MIN_DATASETS, wilcoxon_min_pairs(alpha / (n_columns - 1), two_sided=False))


#: The diagram's label space (critical_difference.TEXTSPACE_IN, 1.9 in at 11 pt) holds
#: about 11 characters: the two longer leaderboard names are shortened, and ours are marked
#: by a star rather than "(ours)".
CD_SHORT_NAMES = {"GRU-ODE-Bayes": "GRU-ODE-B", "Neural Flows": "NeuralFlows"}
OURS_MARK = "*"


def _cd_label(header: str) -> str:
    """A diagram label: ours starred, the published by their (short) name."""
    if header.endswith(" (ours)"):
        return header.removesuffix(" (ours)") + OURS_MARK
    name = header.removesuffix(" (published)")
    return CD_SHORT_NAMES.get(name, name)


def physiome_cd_diagram(
    results: pd.DataFrame, stem: str | os.PathLike, alpha: float = ALPHA
) -> dict[str, Path]:
    """The critical-difference diagram (``critical_difference.cd_diagram``: Wilcoxon,
    Holm, ``alpha``) of the table's ranked columns over the official datasets every one
    has, at the printed precision. Drawn over at least ``cd_min_datasets`` of them;
    fewer: the figure lists the mean ranks and says why no test. No run of ours on the
    official archive: the leaderboard's six alone."""
    scores = ranked_scores(results)
    ours = [c for c in scores.columns if c.endswith(" (ours)")]
    n_official = len(_official_labels(results))
    whose = (
        f"ours ({OURS_MARK}) beside the leaderboard"
        if ours
        else "the leaderboard's models (no run of ours on the official archive)"
    )
    title = f"Physiome-ODE: critical differences, {whose}"
    if scores.empty:
        log.warning("%s: no official dataset has every column: no diagram", Path(stem).name)
        lines = ["no official Physiome-ODE dataset has a result of every column"]
        return message_figure(stem, title, lines)
    if len(scores) < n_official:
        log.warning("%s: %d of %d official datasets have every column; the others are left "
                    "out", Path(stem).name, len(scores), n_official)  # fmt: skip
    frame = (
        scores.rename(columns=_cd_label)
        .rename_axis(index="dataset", columns="model")
        .stack()
        .rename("error")
        .reset_index()
    )
    frame["benchmark"], frame["family"] = OFFICIAL_BENCHMARK, np.nan
    need = cd_min_datasets(scores.shape[1], alpha)
    return cd_diagram(frame, stem, title, alpha=alpha, min_datasets=need)


# ---------------------------------------------------------------- the report's entries
# (outputs.py names these; each gets a context.DrawContext)


def physiome_of(ctx: DrawContext) -> pd.DataFrame:
    """``physiome_results`` of the report's records, computed once (``ctx.once``): the
    table, the diagram and the summary's leaderboard counts share it."""
    return physiome_results(ctx.records)


def draw_table(ctx: DrawContext) -> dict[str, Path]:
    return write_physiome_table(ctx.once(physiome_of), ctx.stem)


def draw_cd(ctx: DrawContext) -> dict[str, Path]:
    """The leaderboard's columns are drawn even without ours (no ``from_results``)."""
    return physiome_cd_diagram(ctx.once(physiome_of), ctx.stem, alpha=ALPHA)
