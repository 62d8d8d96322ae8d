"""The reproduced-vs-published scorecard: for every (benchmark, dataset, model) cell that
both our runs and the MS4N paper's Tables 3 (MONSTER) and 5 (UEA) have, our error beside
the paper's, their difference, a z score, and whether they agree under ``AgreementRule``.

``scorecard`` builds the table (worst cell first), ``scorecard_counts`` the agree/compared
counts that summary.json carries (a DVC metric: ints, sorted keys), ``write_scorecard``
the CSV and Markdown files.
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

log = logging.getLogger(__name__)

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
            line = f"{model} ({bench}, {other}): {len(group)} cell(s), {why}"
            lines.append(line)
            log.warning("scorecard: skipped %s", line)
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


def scorecard_counts(card: pd.DataFrame) -> dict:
    """``{benchmark: {model: {"agree": k, "compared": n}, "all": {...}}}``, ints only and
    every level's keys sorted (summary.json is a DVC metric); ``{}`` for an empty card."""
    counts: dict = {}
    for bench in sorted(card["benchmark"].unique()):
        bcard = card[card["benchmark"] == bench]
        entry = {
            str(model): {
                "agree": int(group["agree"].sum()),
                "compared": int(len(group)),
            }
            for model, group in bcard.groupby("model", sort=True)
        }
        entry[ALL_MODELS] = {"agree": int(bcard["agree"].sum()), "compared": int(len(bcard))}
        counts[str(bench)] = {k: entry[k] for k in sorted(entry)}
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
                }
            )
    return pd.DataFrame(rows, columns=["benchmark", "model", "agree", "compared", "share"])


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


def scorecard_markdown(card: pd.DataFrame, rule: AgreementRule = AgreementRule()) -> str:
    """The scorecard as Markdown: the rule (its first line), the per-model agree/compared
    summary, what was not compared, then the cells (3 decimals, agree as yes/no)."""
    parts = [rule.sentence(), ""]
    if card.empty:
        parts += [f"Scorecard: {NO_COMMON_CELL}.", ""]
    else:
        parts += ["## Agreement per model", "", _markdown(_summary_table(scorecard_counts(card)))]
        parts.append("")
    not_compared = card.attrs.get("not_compared") or []
    if not_compared:
        parts += ["Not compared:", "", *(f"- {line}" for line in not_compared), ""]
    parts += ["## Cells, most disagreeing first", "", _markdown(_cells_table(card)), ""]
    return "\n".join(parts)


def write_scorecard(
    card: pd.DataFrame, stem: str | os.PathLike, rule: AgreementRule = AgreementRule()
) -> dict[str, Path]:
    """Write ``stem.csv`` (the card's numbers, 6 decimals) and ``stem.md``
    (``scorecard_markdown``), each atomically; returns {"csv": path, "md": path}.
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
        "md": atomic_write_text(stem.with_name(stem.name + ".md"), scorecard_markdown(card, rule)),
    }
