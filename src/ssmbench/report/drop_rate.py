"""The TIDES paper's random time-step drop ablation from the run records: the accuracy of
each model, trained with a drop rate r_train = 0.5, at each test drop rate r_test (table
and figure, the training rate marked) and the paper's claim about it, with the criterion
that decides it and the numbers.

The records hold, per test set ``rate=<r_test>``, the test accuracy (``test_sets``); the
table and figure give its mean ± std over the runs (seeds), per dataset.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import style
from .claims import claim_row, parsed
from .context import DrawContext, from_results
from .tables import MISSING, PM, write_table

#: What a claim says when a model or test set it needs has no run.
MISSING_RUN = "a model or r_test it needs has no run"

#: The benchmarks whose records are drop-rate runs (``<Base>Drop`` datasets).
DROP_BENCHMARKS = ("uea_drop",)
#: The drop rate the models are trained with (params.yaml ``benchmarks.uea_drop``).
TRAIN_RATE = 0.5
#: The test drop rate the claim is about.
CLAIM_RATE = 0.9
#: The params.yaml models the claim is about.
CLAIM_MODELS = {"TIDES": "TIDES-drop", "MambaS": "MambaS-drop"}
#: "Keeps its accuracy": loses at most this much accuracy from r_test = 0.5 to 0.9.
KEEP = 0.05
#: "Falls": loses at least this much accuracy from r_test = 0.5 to 0.9.
FALL = 0.10
#: At most this many panels in a row of the figure.
PANELS_PER_ROW = 4

_COLUMNS = ["benchmark", "dataset", "model", "fold", "rate", "accuracy"]
_PREFIX = "rate="


def _claim(claim, criterion, numbers, holds, needed) -> dict:
    return claim_row(claim, criterion, numbers, holds, needed, missing=MISSING_RUN)


def drop_rate_results(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (record, test drop rate) of the drop-rate records (benchmarks in
    ``DROP_BENCHMARKS``): ``benchmark, dataset, model, fold, rate, accuracy``."""
    rows = []
    if records.empty or "test_sets" not in records.columns:
        return pd.DataFrame(columns=_COLUMNS)
    sel = records[records["benchmark"].isin(DROP_BENCHMARKS)]
    for r in sel.itertuples(index=False):
        test_sets = getattr(r, "test_sets", None)
        sets = parsed(test_sets)
        for key, entry in sorted(sets.items()):
            if not key.startswith(_PREFIX):
                continue
            acc = entry.get("accuracy")
            acc = float(acc) if acc is not None else 1.0 - float(entry["error"])
            rows.append({"benchmark": r.benchmark, "dataset": r.dataset, "model": r.model,
                         "fold": int(r.fold), "rate": float(key[len(_PREFIX):]),
                         "accuracy": acc})  # fmt: skip
    out = pd.DataFrame(rows, columns=_COLUMNS)
    order = ["benchmark", "dataset", "model", "rate", "fold"]
    return out.sort_values(order, kind="stable").reset_index(drop=True)


def _summary(results: pd.DataFrame) -> pd.DataFrame:
    g = results.groupby(["dataset", "model", "rate"])
    return pd.DataFrame(
        {
            "acc": g["accuracy"].mean(), "acc_std": g["accuracy"].std(ddof=0),
            "n": g["fold"].nunique(),
        }
    ).reset_index()  # fmt: skip


def _rate_label(rate: float) -> str:
    return f"{rate:g}" + (" (train)" if rate == TRAIN_RATE else "")


def drop_rate_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, r_test); per model ``{model} (n={n})``, the accuracy mean ±
    std (ddof 0) over its runs; r_test = ``TRAIN_RATE`` marked ``(train)``."""
    if results.empty:
        return pd.DataFrame(
            {"dataset": [MISSING], "r_test": [MISSING], "note": ["no drop-rate records"]}
        )
    s = _summary(results)
    keys = sorted({(r.dataset, r.rate) for r in s.itertuples(index=False)})
    table: dict[str, list] = {
        "dataset": [d for d, _ in keys],
        "r_test": [_rate_label(rate) for _, rate in keys],
    }
    for model in sorted(s["model"].unique()):
        m = s[s["model"] == model].set_index(["dataset", "rate"])
        n = int(m["n"].max())
        table[f"{model} (n={n})"] = [
            f"{m.at[k, 'acc']:.3f} {PM} {m.at[k, 'acc_std']:.3f}" if k in m.index else MISSING
            for k in keys
        ]
    return pd.DataFrame(table)


def _signed(value: float) -> str:
    return f"{value:+.3f}".replace("-", "−")


def drop_rate_claims(results: pd.DataFrame) -> pd.DataFrame:
    """The paper's claim (d), decided per dataset of the results (one row each): ``claim,
    criterion, numbers, verdict`` ("holds", "does not hold", or "not tested" when a model
    or r_test it needs has no run; one "not tested" row without any dataset)."""
    claim = f"(d) at r_test = {CLAIM_RATE:g} TIDES keeps its accuracy while MambaS falls"
    criterion = (
        f"TIDES's mean accuracy at r_test = {CLAIM_RATE:g} is ≥ its accuracy at r_test = "
        f"{TRAIN_RATE:g} − {KEEP:g}, and MambaS's mean accuracy at {CLAIM_RATE:g} is ≤ its "
        f"accuracy at {TRAIN_RATE:g} − {FALL:g}"
    )
    if results.empty:
        return pd.DataFrame([_claim(claim, criterion, "", False, [np.nan])])
    s = _summary(results)
    acc = {(r.dataset, r.model, r.rate): r.acc for r in s.itertuples(index=False)}
    rows = []
    for dataset in sorted(s["dataset"].unique()):

        def at(role, rate, dataset=dataset):
            return acc.get((dataset, CLAIM_MODELS[role], rate), np.nan)

        t0, t1 = at("TIDES", TRAIN_RATE), at("TIDES", CLAIM_RATE)
        m0, m1 = at("MambaS", TRAIN_RATE), at("MambaS", CLAIM_RATE)
        rows.append(_claim(
            f"{claim} ({dataset})",
            f"on {dataset}: {criterion}",
            f"TIDES {t0:.3f} → {t1:.3f} ({_signed(t1 - t0)}); "
            f"MambaS {m0:.3f} → {m1:.3f} ({_signed(m1 - m0)})",
            t1 >= t0 - KEEP and m1 <= m0 - FALL, [t0, t1, m0, m1],
        ))  # fmt: skip
    return pd.DataFrame(rows)


def drop_rate_figure(results: pd.DataFrame, path_stem) -> dict[str, Path]:
    """Accuracy against r_test per model, one panel per dataset (at most
    ``PANELS_PER_ROW`` a row): the mean over runs with a ± std band, the training rate a
    dashed line."""
    datasets = sorted(results["dataset"].unique()) if not results.empty else [None]
    ncols = min(len(datasets), PANELS_PER_ROW)
    nrows = -(-len(datasets) // ncols)
    fig = Figure(figsize=(max(4.6 * ncols + 0.6, 7.0), 3.8 * nrows + 0.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    s = _summary(results) if not results.empty else None
    markers = "o^s*Dvx+"
    models = sorted(s["model"].unique()) if s is not None else []
    for ax in axes[len(datasets) :]:
        ax.set_axis_off()
    for ax, dataset in zip(axes, datasets, strict=False):
        ax.axvline(TRAIN_RATE, color="0.4", linestyle="--", linewidth=1,
                   label="training drop rate")  # fmt: skip
        if s is None:
            style.note(ax, "no drop-rate records")
        else:
            d = s[s["dataset"] == dataset]
            for model in sorted(d["model"].unique()):
                i = models.index(model)  # one colour and marker per model in every panel
                m = d[d["model"] == model].sort_values("rate")
                ax.plot(m["rate"], m["acc"], marker=markers[i % len(markers)], color=f"C{i % 10}",
                        label=f"{model} (n={int(m['n'].max())})")  # fmt: skip
                ax.fill_between(m["rate"], m["acc"] - m["acc_std"], m["acc"] + m["acc_std"],
                                color=f"C{i % 10}", alpha=0.15)  # fmt: skip
            ax.set_title(str(dataset), fontsize=10)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("test drop rate r_test")
        ax.set_ylabel("test accuracy")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Drop rate: accuracy against the test drop rate, trained at r_train = "
                 f"{TRAIN_RATE:g} (cf. TIDES paper)\nmean over seeds, band: ± std",
                 fontsize=11)  # fmt: skip
    return style.save(fig, path_stem)


# ---------------------------------------------------------------- the report's entries
# (outputs.py names these; each gets a context.DrawContext)


def _results(ctx: DrawContext) -> pd.DataFrame:
    return drop_rate_results(ctx.records)


def draw_table(ctx: DrawContext) -> dict[str, Path]:
    return write_table(drop_rate_table(ctx.once(_results)), ctx.stem)


def draw_claims(ctx: DrawContext) -> dict[str, Path]:
    return write_table(drop_rate_claims(ctx.once(_results)), ctx.stem)


@from_results
def draw_figure(ctx: DrawContext) -> dict[str, Path]:
    return drop_rate_figure(ctx.once(_results), ctx.stem)
