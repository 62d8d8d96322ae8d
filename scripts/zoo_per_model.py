"""The per-model table of docs/reproduced.md's zoo section, from a report's files.

    python scripts/zoo_per_model.py [RESULTS] [--suite uea10-zoo] [--benchmark uea]

reads ``RESULTS/metrics.csv`` (one row per run), ``RESULTS/scorecard.csv`` (one row per
cell ours and the paper both have) and ``RESULTS/tables/selection_optimism.csv`` (the
diagnostic of what selecting the epoch on the test split would have printed), all written
by ``ssmbench --suite SUITE report`` (RESULTS: the suite's report folder by default,
``results/suites/SUITE`` unless params.yaml names the suite; ``ssmbench.report.outputs
.report_dirs``), and prints one Markdown row per model of the suite, in the suite's order,
then the row of every compared cell:

    model | sets | runs per cell | agree / compared | mean ours − paper | above / below |
    ours, mean error | if the test split chose the epoch | optimism

The agreement columns are the scorecard's per-model counts (``report.scorecard.scorecard_counts``,
as in ``results/scorecard.md``); "ours, mean error" is the mean over the model's datasets
of each cell's mean test error; the last two columns are the selection-optimism table's
row of means (dataset ``mean``). The three files are only read: the optimism columns stay
a diagnostic beside our numbers, as in the report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ssmbench.config import load_params, suite_models
from ssmbench.params_file import named_suite
from ssmbench.report.outputs import report_dirs
from ssmbench.report.scorecard import ALL_MODELS, scorecard_counts
from ssmbench.report.selection_optimism import MEAN_ROW

NOT_RUN = "not run yet"
NO_PAPER = "no paper figure"
FITTED_ONCE = "– (fitted once)"
HEADER = (
    "| model | sets | runs per cell | agree / compared | mean ours − paper | above / below "
    "| ours, mean error | if the test split chose the epoch | optimism |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def _runs_per_cell(counts: pd.Series) -> str:
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low}–{high}"


def per_model_rows(
    metrics: pd.DataFrame,
    scorecard: pd.DataFrame,
    optimism: pd.DataFrame,
    models: list[str],
    benchmark: str,
) -> list[str]:
    """The table's rows (Markdown, without the header) for ``models`` on ``benchmark``."""
    metrics = metrics[metrics["benchmark"] == benchmark]
    card = scorecard[scorecard["benchmark"] == benchmark]
    counts = scorecard_counts(card).get(benchmark, {})
    means = optimism[(optimism["benchmark"] == benchmark) & (optimism["dataset"] == MEAN_ROW)]
    means = means.set_index("model")
    rows = []
    for model in models:
        runs = metrics[metrics["model"] == model]
        if runs.empty:
            rows.append(f"| {model} | 0 | – | {NOT_RUN} | | | | | |")
            continue
        cells = runs.groupby("dataset")["test_error"].agg(["size", "mean"])
        if model not in counts:
            agreement = f"{NO_PAPER} | – | –"
        else:
            c = counts[model]
            agreement = (
                f"{c['agree']}/{c['compared']} | {c['mean_diff']:+.3f} | "
                f"{c['above']} / {c['below']}"
            )
        if model in means.index:
            m = means.loc[model]
            chosen = f"{m['ours if test-selected']} | {m['optimism']}"
        else:
            chosen = f"{FITTED_ONCE} | –"
        rows.append(
            f"| {model} | {len(cells)} | {_runs_per_cell(cells['size'])} | {agreement} | "
            f"{cells['mean'].mean():.3f} | {chosen} |"
        )
    if ALL_MODELS in counts:
        c = counts[ALL_MODELS]
        rows.append(
            f"| all compared | | | {c['agree']}/{c['compared']} | {c['mean_diff']:+.3f} | "
            f"{c['above']} / {c['below']} | | | |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default=None, type=Path,
                        help="the report's folder (default: the suite's)")  # fmt: skip
    parser.add_argument("--suite", default="uea10-zoo")
    parser.add_argument("--benchmark", default="uea")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args(argv)
    params = load_params(args.params, suite=args.suite)
    results = args.results
    if results is None:
        results = report_dirs(params["paths"], args.suite, named_suite(args.params)).results
    files = {
        "metrics": results / "metrics.csv",
        "scorecard": results / "scorecard.csv",
        "optimism": results / "tables" / "selection_optimism.csv",
    }
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        print(
            f"zoo_per_model: {', '.join(missing)} missing: run "
            f"`ssmbench --suite {args.suite} report` first",
            file=sys.stderr,
        )
        return 2
    frames = {
        "metrics": pd.read_csv(files["metrics"]),
        "scorecard": pd.read_csv(files["scorecard"]),
        # the optimism table as printed: its cells are the report's formatted strings
        "optimism": pd.read_csv(files["optimism"], dtype=str, keep_default_na=False),
    }
    models = suite_models(params, args.benchmark, args.suite)
    print(HEADER)
    print("\n".join(per_model_rows(**frames, models=models, benchmark=args.benchmark)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
