"""The TIDES paper's Im Λ ablation from the run records: TIDES with a static (LTI) Im Λ
against TIDES with an input-dependent Im Λ, Re Λ and B/C input-dependent in both (table)
and the paper's claim about it, with the criterion that decides it and the numbers.

The pairs come from the records, not from model names: among the ``tides`` records, a
record whose ``model_params`` has ``lambda_im_mode: input_dependent`` is paired with the
records on the same (benchmark, dataset) of a model whose ``model_params`` equal its own
but for ``lambda_im_mode``; a key a model entry leaves out takes the family's default
(``DEFAULTS``). Per test set the metric is the accuracy (classification) or the test MSE
(regression; the record's ``test_error`` under ``test`` when it has no separate test sets).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .claims import claim_row, parsed
from .context import DrawContext
from .tables import MISSING, PM, write_table

FAMILY = "tides"
LTI, INPUT = "lti", "input_dependent"
#: The family's defaults (models/tides.py) for the keys the pairing reads.
DEFAULTS = {"lambda_im_mode": LTI, "lambda_re_mode": INPUT, "bc_mode": INPUT}
#: "Better": by more than this many standard errors of the difference of the means.
SE_FACTOR = 2.0
#: Per metric, whether higher is better.
HIGHER_IS_BETTER = {"accuracy": True, "mse": False}
#: The test-set key of a record without separate test sets.
TEST_KEY = "test"

_COLUMNS = ["benchmark", "dataset", "test_set", "lti_model", "input_model", "mode", "fold",
            "metric", "value"]  # fmt: skip
_KEYS = ["benchmark", "dataset", "test_set", "lti_model", "input_model", "metric"]


def _measures(r) -> list[tuple[str, str, float]]:
    """A record's ``(test_set, metric, value)``: accuracy or MSE per separate test set, or
    the record's test error under ``TEST_KEY`` when it has none."""
    sets = parsed(getattr(r, "test_sets", None))
    task = getattr(r, "task", None)
    if not isinstance(task, str):  # no task column: a test set with an accuracy classifies
        task = "classification" if any("accuracy" in e for e in sets.values()) else "regression"
    out = []
    for key, entry in sorted(sets.items()):
        if task == "classification":
            acc = entry.get("accuracy")
            out.append((key, "accuracy", float(acc) if acc is not None else 1 - entry["error"]))
        else:
            out.append((key, "mse", float(entry["loss"])))
    error = getattr(r, "test_error", None)
    if not sets and error is not None and np.isfinite(error):
        # classification: test_error = 1 - accuracy; regression: the test MSE
        metric = "accuracy" if task == "classification" else "mse"
        out.append((TEST_KEY, metric, 1 - error if metric == "accuracy" else float(error)))
    return out


def im_ablation_results(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (pair, record of either side, test set): ``benchmark, dataset,
    test_set, lti_model, input_model, mode`` ("lti" / "input_dependent")``, fold, metric``
    ("accuracy" / "mse")``, value``."""
    if records.empty or "model_params" not in records.columns:
        return pd.DataFrame(columns=_COLUMNS)
    groups: dict[tuple, dict[str, list]] = {}
    for r in records.itertuples(index=False):
        hyper = {**DEFAULTS, **parsed(r.model_params)}
        family = getattr(r, "family", None)
        family = family if isinstance(family, str) else hyper.get("family")
        if family != FAMILY or hyper["lambda_re_mode"] != INPUT or hyper["bc_mode"] != INPUT:
            continue
        mode = hyper["lambda_im_mode"]
        if mode not in (LTI, INPUT):
            continue
        rest = {k: v for k, v in hyper.items() if k != "lambda_im_mode"}
        key = (r.benchmark, r.dataset, json.dumps(rest, sort_keys=True, default=str))
        groups.setdefault(key, {LTI: [], INPUT: []})[mode].append(r)
    rows = []
    for (benchmark, dataset, _), sides in groups.items():
        for lti_model in sorted({r.model for r in sides[LTI]}):
            for input_model in sorted({r.model for r in sides[INPUT]}):
                for mode, model in ((LTI, lti_model), (INPUT, input_model)):
                    for r in sides[mode]:
                        if r.model != model:
                            continue
                        for test_set, metric, value in _measures(r):
                            rows.append({"benchmark": benchmark, "dataset": dataset,
                                         "test_set": test_set, "lti_model": lti_model,
                                         "input_model": input_model, "mode": mode,
                                         "fold": int(r.fold), "metric": metric,
                                         "value": float(value)})  # fmt: skip
    out = pd.DataFrame(rows, columns=_COLUMNS)
    order = ["benchmark", "dataset", "test_set", "lti_model", "input_model", "mode", "fold"]
    return out.sort_values(order, kind="stable").reset_index(drop=True)


def _compare(results: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, dataset, test set, pair, metric): each mode's mean, std (ddof 0),
    std (ddof 1) and n; the difference input − lti, the improvement (the difference signed
    so that > 0 favours the input-dependent Im Λ) and its standard error."""
    g = results.groupby(_KEYS + ["mode"])["value"]
    s = pd.DataFrame(
        {"mean": g.mean(), "std": g.std(ddof=0), "sd1": g.std(ddof=1), "n": g.count()}
    ).reset_index()
    rows = []
    for key, part in s.groupby(_KEYS, sort=True):
        row = dict(zip(_KEYS, key, strict=True))
        sides = {r.mode: r for r in part.itertuples(index=False)}
        for mode in (LTI, INPUT):
            side = sides.get(mode)
            for stat in ("mean", "std", "sd1", "n"):
                row[f"{mode}_{stat}"] = getattr(side, stat) if side is not None else np.nan
        diff = row[f"{INPUT}_mean"] - row[f"{LTI}_mean"]
        if np.isclose(row[f"{INPUT}_mean"], row[f"{LTI}_mean"], rtol=1e-9, atol=0.0):
            diff = 0.0  # equal means (e.g. 38/40 on both sides), not a rounding-level winner
        row["difference"] = diff
        row["improvement"] = diff if HIGHER_IS_BETTER[row["metric"]] else -diff
        if all(row[f"{m}_n"] >= 2 for m in (LTI, INPUT)):
            row["se"] = float(np.sqrt(sum(row[f"{m}_sd1"] ** 2 / row[f"{m}_n"]
                                          for m in (LTI, INPUT))))  # fmt: skip
        else:
            row["se"] = np.nan
        imp = row["improvement"]
        row["better"] = (
            MISSING if not np.isfinite(imp) else INPUT if imp > 0 else LTI if imp < 0 else "tie"
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(mean, std, n, metric) -> str:
    if not np.isfinite(mean):
        return MISSING
    if metric == "accuracy":
        return f"{mean:.3f} {PM} {std:.3f} (n={int(n)})"
    return f"{mean:.2e} {PM} {std:.1e} (n={int(n)})"


def _rounded(value: float) -> float:
    return float(f"{value:.4g}") if np.isfinite(value) else np.nan


def im_ablation_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (benchmark, dataset, test set) and pair: the metric, each mode's mean ±
    std (ddof 0) over its runs with n, the difference input − lti of the means, which mode
    is better (accuracy: higher, MSE: lower; or "tie") and the difference's standard error
    √(s₁²/n₁ + s₂²/n₂) with ddof-1 stds (NaN when a side has fewer than 2 runs)."""
    if results.empty:
        return pd.DataFrame({"benchmark": [MISSING], "note": ["no Im Λ ablation pairs"]})
    c = _compare(results)
    return pd.DataFrame(
        {
            "benchmark": c["benchmark"],
            "dataset": c["dataset"],
            "test_set": c["test_set"],
            "pair (lti / input-dependent)": c["lti_model"] + " / " + c["input_model"],
            "metric": c["metric"],
            "Im Λ lti": [_cell(r[f"{LTI}_mean"], r[f"{LTI}_std"], r[f"{LTI}_n"], r["metric"])
                         for _, r in c.iterrows()],
            "Im Λ input-dependent": [
                _cell(r[f"{INPUT}_mean"], r[f"{INPUT}_std"], r[f"{INPUT}_n"], r["metric"])
                for _, r in c.iterrows()
            ],
            "difference": [_rounded(v) for v in c["difference"]],
            "better": c["better"],
            "se": [_rounded(v) for v in c["se"]],
        }
    )  # fmt: skip


def im_ablation_claims(results: pd.DataFrame) -> pd.DataFrame:
    """The paper's claim (e): ``claim, criterion, numbers, verdict`` ("holds", "does not
    hold", or "not tested" without a pair, or without a comparison with ≥ 2 runs a side)."""
    claim = "(e) an input-dependent Im Λ does not improve on a static one"
    criterion = (
        f"on no (dataset, test set) is the input-dependent Im Λ better than the LTI one by "
        f"more than {SE_FACTOR:g} standard errors of the difference (se = √(s₁²/n₁ + "
        "s₂²/n₂), ddof-1 stds; accuracy: higher is better; MSE: lower is better)"
    )
    if results.empty:
        why = "no LTI / input-dependent Im Λ pair has runs"
        return pd.DataFrame([claim_row(claim, criterion, "", False, [np.nan], missing=why)])
    c = _compare(results)
    compared = c[np.isfinite(c["se"])]
    if compared.empty:
        why = "no (dataset, test set) has ≥ 2 runs of both modes"
        return pd.DataFrame([claim_row(claim, criterion, "", False, [np.nan], missing=why)])
    imp, se = compared["improvement"], compared["se"]
    beyond = imp > SE_FACTOR * se
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (imp / se).fillna(-np.inf)
    best = compared.loc[z.idxmax()]
    numbers = (
        f"{int(beyond.sum())} of {len(compared)} compared (dataset, test set) improve by "
        f"> {SE_FACTOR:g} se; largest improvement (in se): {best['improvement']:+.3g} "
        f"{best['metric']} on {best['dataset']} / {best['test_set']} (se {best['se']:.3g}, "
        f"{z.max():.1f} se)"
    )
    return pd.DataFrame([claim_row(claim, criterion, numbers, not beyond.any())])


# ---------------------------------------------------------------- the report's entries
# (outputs.py names these; each gets a context.DrawContext)


def _results(ctx: DrawContext) -> pd.DataFrame:
    return im_ablation_results(ctx.records)


def draw_table(ctx: DrawContext) -> dict[str, Path]:
    return write_table(im_ablation_table(ctx.once(_results)), ctx.stem)


def draw_claims(ctx: DrawContext) -> dict[str, Path]:
    return write_table(im_ablation_claims(ctx.once(_results)), ctx.stem)
