"""The reproduced-vs-published scorecard: for every (benchmark, dataset, model) cell that
both our runs and a published table have, our error beside the published one, their
difference, a z score, and whether they agree under ``AgreementRule``.

The published cells (``PUBLISHED_SOURCES``): the MS4N paper's Tables 3 (MONSTER) and 5
(UEA), and the published cells of a model that one of ours reimplements under another name
(``published_counterparts``): the paper's FCN against ``FCN-MONSTER``, the MONSTER code's
FCN (``MS4N_PUBLISHED_AS``), beside our Wang et al. ``FCN``; UEA-6's ``S5-logncde`` and
``LogNCDE`` against the Log-NCDE benchmark's S5 and Log-NCDE (error = 1 − accuracy), and
on Physiome-ODE our ``LinODEnet`` (``PHYSIOME_PUBLISHED_AS``) against the leaderboard's
LinODENet column.

Of the Physiome-ODE leaderboard's six only LinODENet is reimplemented here. What a
researcher asks of the other runs is whether they beat the state of the art:
``leaderboard_comparison`` sets each model of ours, on each official dataset, beside the
leaderboard's best there, and where it would place among the six.
Each of our models is shown, not our best per dataset, which would be picked on the test
sets. The generated stand-ins (benchmark ``physiome``) are not the leaderboard's test sets
and are not compared (``physiome_table``).

``scorecard`` builds the table (worst cell first), ``scorecard_counts`` the agree/compared
counts that summary.json carries (a DVC metric: ints, sorted keys), ``leaderboard_counts``
the Physiome-ODE counts beside them, ``write_scorecard`` the CSV and Markdown files.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ssmbench.io import atomic_write, atomic_write_text

from .outputs import PAPER_BENCHMARKS
from .physiome_table import (
    DECIMALS as PHYSIOME_DECIMALS,
)
from .physiome_table import (
    GENERATED_BENCHMARK,
    OFFICIAL,
    OFFICIAL_BENCHMARK,
    PUBLISHED_FOLDS,
    PUBLISHED_MODELS,
    load_published_physiome,
    printed,
)
from .physiome_table import (
    PUBLISHED_AS as PHYSIOME_TABLE_PUBLISHED_AS,
)
from .reference import load_published_uea6
from .results import PER_DATASET_COLUMNS, paper_per_dataset
from .uea6_table import BENCHMARK as UEA6_BENCHMARK
from .uea6_table import PUBLISHED_AS as UEA6_PUBLISHED_AS

log = logging.getLogger(__name__)

#: ours -> the MS4N paper's column it is also compared with: FCN-MONSTER, the network the
#: MONSTER code builds for FCN (docs/reproduced.md, the zoo at the paper's protocol)
MS4N_PUBLISHED_AS = {"FCN-MONSTER": "FCN"}

CELL_KEYS = ["benchmark", "dataset", "model"]
SCORECARD_COLUMNS = [
    *CELL_KEYS, "ours_mean", "ours_std", "ours_n", "paper_mean", "paper_std", "paper_n",
    "diff", "z", "tolerance", "agree",
]  # fmt: skip
#: The per-benchmark entry of ``scorecard_counts`` that sums every model.
ALL_MODELS = "all"
NO_COMMON_CELL = "no cell is in both our records and the paper"
DECIMALS = 3  # the Markdown's numbers, as the paper prints them
CSV_DECIMALS = 6  # as summary.json: enough for any comparison, stable across reruns
#: Where each benchmark's published cells come from (the Markdown says it below the rule).
PUBLISHED_SOURCES = {
    "monster": "the MS4N paper's Table 3",
    "uea": "the MS4N paper's Table 5",
    UEA6_BENCHMARK: "the Log-NCDE benchmark (github Benjamin-Walker/log-neural-cdes @5612f00), "
    "error = 1 − test accuracy, population std over its 5 seeds; "
    + ", ".join(f"{ours} against its {theirs}" for ours, theirs in UEA6_PUBLISHED_AS.items()),
    OFFICIAL_BENCHMARK: "the Physiome-ODE leaderboard (github kloetergensc/Physiome-ODE "
    "@4829169, README), error = test MSE",
}
#: Our Physiome-ODE model -> the leaderboard model it reimplements (LinODEnet ->
#: LinODENet), scored like S5-logncde.
PHYSIOME_PUBLISHED_AS: dict[str, str] = PHYSIOME_TABLE_PUBLISHED_AS
#: Why a cell of ours on these benchmarks has no published figure (the "not compared" list).
NO_FIGURE_WHY = {
    GENERATED_BENCHMARK: "generated with myokit, not the Physiome-ODE leaderboard's test "
    "sets (physiome_results shows them, unranked)",
    OFFICIAL_BENCHMARK: "not one of the leaderboard's models (see Physiome-ODE against the "
    "leaderboard's best)",
}
LEADERBOARD_COLUMNS = [
    "dataset", "model", "ours_mse", "ours_std", "ours_n", "best_model", "best_mse",
    "best_std", "diff", "ratio", "z", "place", "verdict",
]  # fmt: skip
#: ``leaderboard_comparison``'s verdicts, at the leaderboard's printed precision.
LEADERBOARD_VERDICTS = ("ahead", "level", "behind")
#: Column dtypes other than float (run counts are whole numbers, NA where unknown).
_DTYPES = {
    "benchmark": object, "dataset": object, "model": object, "ours_n": "Int64",
    "paper_n": "Int64", "agree": bool,
}  # fmt: skip


@dataclass(frozen=True)
class AgreementRule:
    """When a reproduced error agrees with the published one.

    A cell agrees when ``|ours − paper| ≤ max(k_sigma · σ_paper, floor)``:

    * ``k_sigma`` (2.0): how many of the paper's run-to-run stds (its ``±``, over 5 MONSTER
      folds or 40 UEA runs) the two means may differ by; two stds cover ~95% of one run's
      spread, so a faithful rerun of a handful of runs lands inside it;
    * ``floor`` (0.03, i.e. 3 percentage points of error): the least tolerance, so that a
      cell whose published std is ~0 (a saturated dataset, or a std printed as 0.000) does
      not demand an exact match. A missing σ_paper counts as 0 (the floor alone).
    """

    k_sigma: float = 2.0
    floor: float = 0.03

    def tolerance(self, paper_std):
        """The largest |ours − paper| that agrees (elementwise on arrays)."""
        sigma = np.nan_to_num(np.asarray(paper_std, dtype=float), nan=0.0)
        return np.maximum(self.k_sigma * sigma, self.floor)

    def sentence(self) -> str:
        """The rule in one sentence, for the scorecard's Markdown."""
        return (
            f"A cell agrees when |ours − paper| ≤ max({self.k_sigma:g} · σ_paper, "
            f"{self.floor:g}), σ_paper being the paper's std over its runs (0 if it prints "
            "none); z = (ours − paper) / √(σ_ours²/n_ours + σ_paper²/n_paper)."
        )


def _published_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(PER_DATASET_COLUMNS))
    return frame.astype({"error": float, "std": float, "n_runs": float})


def published_counterparts(
    uea6_as: dict[str, str] = UEA6_PUBLISHED_AS,
    physiome_as: dict[str, str] = PHYSIOME_PUBLISHED_AS,
    ms4n_as: dict[str, str] = MS4N_PUBLISHED_AS,
) -> pd.DataFrame:
    """A per-dataset frame (``results.PER_DATASET_COLUMNS``) of the published cells of
    each model one of ours reimplements under another name, under our model's name so
    that ``scorecard`` pairs them: the MS4N paper's (``ms4n_as``, as printed), ``uea6``
    (``uea6_table.PUBLISHED_AS``: error = 1 − accuracy, std as published, ``n_runs`` its
    seeds) and ``physiome_ode``
    (``physiome_as``: error = the leaderboard's MSE, ``n_runs`` 5)."""
    rows = []
    paper = paper_per_dataset(PAPER_BENCHMARKS)
    for ours, theirs in sorted(ms4n_as.items()):
        for r in paper[paper["model"] == theirs].itertuples(index=False):
            rows.append({"benchmark": r.benchmark, "dataset": r.dataset, "model": ours,
                         "error": r.error, "std": r.std, "n_runs": r.n_runs})  # fmt: skip
    uea6 = load_published_uea6()
    for ours, theirs in sorted(uea6_as.items()):
        for r in uea6[uea6["model"] == theirs].itertuples(index=False):
            rows.append({"benchmark": UEA6_BENCHMARK, "dataset": r.dataset, "model": ours,
                         "error": 1.0 - r.accuracy_mean, "std": r.accuracy_std,
                         "n_runs": r.n_seeds})  # fmt: skip
    leaderboard = load_published_physiome()
    for ours, theirs in sorted(physiome_as.items()):
        for r in leaderboard[leaderboard["model"] == theirs].itertuples(index=False):
            rows.append({"benchmark": OFFICIAL_BENCHMARK, "dataset": r.code, "model": ours,
                         "error": r.mse_mean, "std": r.mse_std,
                         "n_runs": PUBLISHED_FOLDS})  # fmt: skip
    return _published_frame(rows)


def _cells(frame: pd.DataFrame, side: str) -> pd.DataFrame:
    """One row per cell with a finite error: ``{side}_mean, {side}_std, {side}_n``."""
    frame = frame.assign(error=pd.to_numeric(frame["error"], errors="coerce"))
    no_error = frame["error"].isna()
    if no_error.any():
        names = ", ".join(
            f"{b}/{d}/{m}" for b, d, m in frame.loc[no_error, CELL_KEYS].itertuples(index=False)
        )
        log.warning("scorecard: skipped %s cells %s: no error", side, names)
    frame = frame[~no_error]
    dup = frame.duplicated(CELL_KEYS, keep="first")
    if dup.any():
        names = ", ".join(
            f"{b}/{d}/{m}" for b, d, m in frame.loc[dup, CELL_KEYS].itertuples(index=False)
        )
        log.warning("scorecard: skipped %s duplicate rows %s: kept the first", side, names)
        frame = frame[~dup]
    return pd.DataFrame(
        {
            **{k: frame[k].astype(str) for k in CELL_KEYS},
            f"{side}_mean": frame["error"].astype(float),
            f"{side}_std": pd.to_numeric(frame["std"], errors="coerce").astype(float),
            f"{side}_n": pd.to_numeric(frame["n_runs"], errors="coerce").astype(float),
        }
    )


def _log_unmatched(merged: pd.DataFrame) -> list[str]:
    """Per (benchmark, model, side): the cells only one side has; logged and returned."""
    lines = []
    for side, other, why in (
        ("left_only", "ours", "no paper figure"),
        ("right_only", "paper", "not in our records"),
    ):
        rows = merged[merged["_merge"] == side]
        for (bench, model), group in rows.groupby(["benchmark", "model"], sort=True):
            reason = NO_FIGURE_WHY.get(bench, why) if side == "left_only" else why
            line = f"{model} ({bench}, {other}): {len(group)} cell(s), {reason}"
            lines.append(line)
            log.info("scorecard: skipped %s", line)
    return lines


def scorecard(
    ours: pd.DataFrame, paper: pd.DataFrame, rule: AgreementRule = AgreementRule()
) -> pd.DataFrame:
    """One row per (benchmark, dataset, model) cell present in both per-dataset frames,
    the most disagreeing first.

    Columns ``SCORECARD_COLUMNS``: ``ours_mean/std/n`` and ``paper_mean/std/n`` (error,
    its std over the runs, the number of runs), ``diff = ours − paper``,
    ``z = diff / sqrt(ours_std²/ours_n + paper_std²/paper_n)`` (Welch's statistic of the
    two means; NaN when that denominator is 0 or unknown), ``tolerance`` (the rule's
    bound for this cell) and ``agree`` (``|diff| ≤ tolerance``). Sorted by
    ``|diff| − tolerance`` descending, then by cell. Cells without an error on either
    side are not compared; cells only one side has are logged, and listed in
    ``card.attrs["not_compared"]`` (which ``write_scorecard`` prints).
    """
    left, right = _cells(ours, "ours"), _cells(paper, "paper")
    merged = left.merge(right, on=CELL_KEYS, how="outer", indicator=True)
    not_compared = _log_unmatched(merged)
    card = merged[merged["_merge"] == "both"].drop(columns="_merge")
    if card.empty:
        card = pd.DataFrame({c: pd.Series(dtype=_DTYPES.get(c, float)) for c in SCORECARD_COLUMNS})
        card.attrs["not_compared"] = not_compared
        return card
    card = card.copy()
    card["diff"] = card["ours_mean"] - card["paper_mean"]
    variance = card["ours_std"] ** 2 / card["ours_n"] + card["paper_std"] ** 2 / card["paper_n"]
    denominator = np.sqrt(variance.where(variance > 0))  # 0, inf or NaN -> NaN
    card["z"] = (card["diff"] / denominator).where(np.isfinite(denominator))
    card["tolerance"] = rule.tolerance(card["paper_std"])
    card["agree"] = (card["diff"].abs() <= card["tolerance"]).astype(bool)
    card["_excess"] = card["diff"].abs() - card["tolerance"]
    card = card.sort_values(
        ["_excess", *CELL_KEYS], ascending=[False, True, True, True], kind="stable"
    )
    card = card.drop(columns="_excess")[SCORECARD_COLUMNS].reset_index(drop=True)
    card = card.astype({c: _DTYPES[c] for c in ("ours_n", "paper_n")})
    card.attrs["not_compared"] = not_compared
    return card


def _counts(cells: pd.DataFrame) -> dict:
    """One model's (or a benchmark's) counts over its cells: agreeing of compared, the
    mean signed difference ours − paper, and how many cells ours is above (a higher error
    than the paper's) and below, at summary.json's 6 decimals (equal: neither)."""
    diff = cells["diff"].astype(float).round(CSV_DECIMALS)
    return {
        "above": int((diff > 0).sum()),
        "agree": int(cells["agree"].sum()),
        "below": int((diff < 0).sum()),
        "compared": int(len(cells)),
        "mean_diff": round(float(diff.mean()), CSV_DECIMALS),
    }


def scorecard_counts(card: pd.DataFrame) -> dict:
    """``{benchmark: {model: {"above", "agree", "below", "compared", "mean_diff"}, "all":
    {...}}}`` (``_counts``), every level's keys sorted (summary.json is a DVC metric:
    ``dvc metrics diff`` shows each); ``{}`` for an empty card."""
    counts: dict = {}
    for bench in sorted(card["benchmark"].unique()):
        bcard = card[card["benchmark"] == bench]
        entry = {str(model): _counts(group) for model, group in bcard.groupby("model", sort=True)}
        entry[ALL_MODELS] = _counts(bcard)
        counts[str(bench)] = {k: entry[k] for k in sorted(entry)}
    return counts


def leaderboard_comparison(physiome: pd.DataFrame) -> pd.DataFrame:
    """Physiome-ODE, where no model of ours is a leaderboard model: one row per (official
    dataset, model of ours) of ``physiome_table.physiome_results``, the leaderboard's
    order of datasets, then by model. Columns ``LEADERBOARD_COLUMNS``:

    * ``ours_mse/std/n``: ours; ``best_model``, ``best_mse``, ``best_std``: the
      leaderboard's lowest MSE there at its printed 3 decimals (tied models named
      together, the std of the first in its column order);
    * ``diff = ours − best``, ``ratio = ours / best`` (NaN where best is 0), ``z`` as in
      ``scorecard`` (the best's n = 5 folds);
    * ``place``: where ours would stand among the six, 1–7 (1 + how many are lower at 3
      decimals: ties share the better place, the table's rank convention);
    * ``verdict``: ``ahead`` / ``level`` / ``behind`` the best at 3 decimals.

    The generated stand-ins are not the leaderboard's test sets: left out."""
    rows = []
    ours = physiome[(physiome["source"] == "ours") & (physiome["test_set"] == OFFICIAL)]
    published = physiome[physiome["source"] == "published"]
    order = {code: i for i, code in enumerate(dict.fromkeys(load_published_physiome()["code"]))}
    for r in ours.itertuples(index=False):
        theirs = published[published["label"] == r.label].set_index("model")
        theirs = theirs.reindex([m for m in PUBLISHED_MODELS if m in theirs.index])
        if theirs.empty:
            continue
        shown = theirs["mse"].map(printed)
        best = shown.min()
        best_models = list(shown.index[shown == best])
        best_std = float(theirs.loc[best_models[0], "std"])
        mine = printed(r.mse)
        variance = r.std**2 / r.n + best_std**2 / PUBLISHED_FOLDS
        diff = r.mse - best
        rows.append({
            "dataset": r.label, "model": r.model, "ours_mse": r.mse, "ours_std": r.std,
            "ours_n": r.n, "best_model": ", ".join(best_models), "best_mse": best,
            "best_std": best_std, "diff": diff,
            "ratio": r.mse / best if best > 0 else math.nan,
            "z": diff / math.sqrt(variance) if variance > 0 else math.nan,
            "place": 1 + int((shown < mine).sum()),
            "verdict": "ahead" if mine < best else "level" if mine == best else "behind",
        })  # fmt: skip
    frame = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    if frame.empty:
        return frame
    frame["_order"] = [order.get(d, len(order)) for d in frame["dataset"]]
    frame = frame.sort_values(["_order", "dataset", "model"], kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)


def leaderboard_counts(comparison: pd.DataFrame) -> dict:
    """``{model: {"ahead": a, "behind": b, "compared": n, "level": l}}`` of
    ``leaderboard_comparison``, ints and sorted keys (summary.json's
    ``physiome_leaderboard``); ``{}`` for no row."""
    counts = {}
    for model, group in comparison.groupby("model", sort=True):
        entry = {v: int((group["verdict"] == v).sum()) for v in LEADERBOARD_VERDICTS}
        entry["compared"] = int(len(group))
        counts[str(model)] = {k: entry[k] for k in sorted(entry)}
    return counts


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{DECIMALS}f}"


def _summary_table(counts: dict) -> pd.DataFrame:
    rows = []
    for bench, models in counts.items():
        # the models by name, then the benchmark's total
        for model in [*(m for m in models if m != ALL_MODELS), ALL_MODELS]:
            c = models[model]
            rows.append(
                {
                    "benchmark": bench,
                    "model": model,
                    "agree": str(c["agree"]),
                    "compared": str(c["compared"]),
                    "share": f"{c['agree'] / c['compared']:.0%}",
                    "mean ours − paper": f"{c['mean_diff']:+.{DECIMALS}f}",
                    "above": str(c["above"]),
                    "below": str(c["below"]),
                }
            )
    columns = ["benchmark", "model", "agree", "compared", "share", "mean ours − paper",
               "above", "below"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _cells_table(card: pd.DataFrame) -> pd.DataFrame:
    table = pd.DataFrame({c: card[c].astype(str) for c in CELL_KEYS})
    for col in SCORECARD_COLUMNS[len(CELL_KEYS) :]:
        if col == "agree":
            table[col] = ["yes" if a else "no" for a in card[col]]
        elif col in ("ours_n", "paper_n"):
            table[col] = ["–" if pd.isna(n) else str(int(n)) for n in card[col]]
        else:
            table[col] = [_fmt(v) for v in card[col]]
    return table.reindex(columns=SCORECARD_COLUMNS)


def _markdown(df: pd.DataFrame) -> str:
    if df.empty:  # tabulate prints nothing for no rows: write the header by hand
        return "| " + " | ".join(df.columns) + " |\n|" + "|".join("---" for _ in df.columns) + "|"
    return df.to_markdown(index=False, tablefmt="github", disable_numparse=True)


def _sources_line(card: pd.DataFrame) -> list[str]:
    benches = [b for b in sorted(card["benchmark"].unique()) if b in PUBLISHED_SOURCES]
    if not benches:
        return []
    return ["Published: " + "; ".join(f"{b}: {PUBLISHED_SOURCES[b]}" for b in benches) + ".", ""]


def _leaderboard_markdown(comparison: pd.DataFrame) -> list[str]:
    """The Physiome-ODE section: what it is, the per-model counts, the rows."""
    counts = pd.DataFrame(
        [{"model": m, **{k: str(v) for k, v in c.items()}}
         for m, c in leaderboard_counts(comparison).items()],
        columns=["model", *LEADERBOARD_VERDICTS, "compared"],
    )  # fmt: skip
    rows = pd.DataFrame({c: comparison[c].astype(str) for c in ("dataset", "model")})
    for col in LEADERBOARD_COLUMNS[2:]:
        if col in ("ours_n", "place"):
            rows[col] = [str(int(v)) for v in comparison[col]]
        elif col in ("best_model", "verdict"):
            rows[col] = comparison[col].astype(str)
        elif col in ("ratio", "z"):
            rows[col] = ["–" if pd.isna(v) else f"{v:.2f}" for v in comparison[col]]
        else:
            rows[col] = [f"{v:.{PHYSIOME_DECIMALS}f}" for v in comparison[col]]
    return [
        "## Physiome-ODE: ours against the leaderboard's best", "",
        "A model of ours that is none of the leaderboard's six has no cell above to "
        "reproduce. Each row sets one model of ours, on one official dataset, beside the "
        "lowest published test MSE there (3 decimals, as printed; tied models named "
        "together): diff = ours − best, ratio = ours / best, place = where ours would "
        "stand among the six (1 = a lower MSE than all six, 7 = a higher one, ties sharing "
        "the better place), verdict at 3 decimals. A comparison with the state of the art, "
        "not an agreement test; the generated stand-ins (benchmark physiome) are not its "
        "test sets and are left out.", "",
        _markdown(counts), "", _markdown(rows), "",
    ]  # fmt: skip


def scorecard_markdown(
    card: pd.DataFrame,
    rule: AgreementRule = AgreementRule(),
    leaderboard: pd.DataFrame | None = None,
) -> str:
    """The scorecard as Markdown: the rule (its first line), where the published cells
    come from, the per-model agree/compared summary, what was not compared, the cells (3
    decimals, agree as yes/no), then, given ``leaderboard`` rows
    (``leaderboard_comparison``), the Physiome-ODE section."""
    parts = [rule.sentence(), "", *_sources_line(card)]
    if card.empty:
        parts += [f"Scorecard: {NO_COMMON_CELL}.", ""]
    else:
        parts += ["## Agreement per model", "", _markdown(_summary_table(scorecard_counts(card)))]
        parts += ["", "Above / below: cells where our error is higher / lower than the "
                  "paper's; mean ours − paper over the compared cells (negative: ours lower).",
                  ""]  # fmt: skip
    not_compared = card.attrs.get("not_compared") or []
    if not_compared:
        parts += ["Not compared:", "", *(f"- {line}" for line in not_compared), ""]
    parts += ["## Cells, most disagreeing first", "", _markdown(_cells_table(card)), ""]
    if leaderboard is not None and not leaderboard.empty:
        parts += _leaderboard_markdown(leaderboard)
    return "\n".join(parts)


def write_scorecard(
    card: pd.DataFrame,
    stem: str | os.PathLike,
    rule: AgreementRule = AgreementRule(),
    leaderboard: pd.DataFrame | None = None,
) -> dict[str, Path]:
    """Write ``stem.csv`` (the card's numbers, 6 decimals) and ``stem.md``
    (``scorecard_markdown``, with the Physiome-ODE section of ``leaderboard`` where it
    has rows), each atomically; returns {"csv": path, "md": path}.
    ``rule``: the one the card was built with, for the Markdown's sentence."""
    stem = Path(stem)
    csv_card = card.reindex(columns=SCORECARD_COLUMNS)
    return {
        "csv": atomic_write(
            stem.with_name(stem.name + ".csv"),
            lambda p: csv_card.to_csv(
                p,
                index=False,
                lineterminator="\n",
                encoding="utf-8",
                float_format=f"%.{CSV_DECIMALS}f",
            ),
        ),
        "md": atomic_write_text(
            stem.with_name(stem.name + ".md"), scorecard_markdown(card, rule, leaderboard)
        ),
    }
