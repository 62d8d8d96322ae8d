"""The TIDES paper's Fading Flash experiment from the run records: the error of each model
at each test step size Δ (table and figure, the training range shaded) and the paper's
three claims about it, each with the criterion that decides it and the numbers.

The records hold, per test set ``dt=<Δ>``, the test MSE and the variance of its targets
(``test_sets``); the relative error is √(MSE / Var y) · 100, per run, then mean ± std over
the runs (seeds).
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
MISSING_RUN = "a model or Δ it needs has no run"

DATASET = ("synthetic", "FadingFlash")
#: The noisy variant: trained on noisy rows, tested on clean ones (data/synthetic/prepare.py).
NOISY_DATASET = "FadingFlashNoisy"
#: The training range of Δ (params.yaml ``benchmarks.synthetic.generator.dt_range``'s
#: default, the reference's U[0.5, 1.5]).
TRAIN_RANGE = (0.5, 1.5)
#: The params.yaml models the claims are about.
CLAIM_MODELS = {"S5": "FF-S5", "TIDES": "FF-TIDES", "MambaS": "FF-MambaS"}
#: How much worse counts as "cannot fit" / "degrades": a factor on the relative error.
FACTOR = 3.0
#: "Accurate": a relative error at most this (%) at every Δ.
ACCURATE_PCT = 10.0


def _claim(claim, criterion, numbers, holds, needed) -> dict:
    return claim_row(claim, criterion, numbers, holds, needed, missing=MISSING_RUN)


def _of(records: pd.DataFrame, dataset: str) -> pd.DataFrame:
    return records[(records["benchmark"] == DATASET[0]) & (records["dataset"] == dataset)]


def fading_flash_results(records: pd.DataFrame, dataset: str = DATASET[1]) -> pd.DataFrame:
    """One row per (model, fold, Δ) of the records of ``dataset`` (Fading Flash, or its
    noisy variant): ``model, fold, dt, mse, target_var, rel_error`` (%; NaN without a
    target variance)."""
    rows = []
    columns = ["model", "fold", "dt", "mse", "target_var", "rel_error"]
    if records.empty or "test_sets" not in records.columns:
        return pd.DataFrame(columns=columns)
    sel = _of(records, dataset)
    for r in sel.itertuples(index=False):
        test_sets = getattr(r, "test_sets", None)
        sets = parsed(test_sets)
        for key, entry in sorted(sets.items()):
            if not key.startswith("dt="):
                continue
            mse, var = float(entry["loss"]), entry.get("target_var")
            rel = 100.0 * np.sqrt(mse / var) if var else np.nan
            rows.append({"model": r.model, "fold": int(r.fold), "dt": float(key[3:]),
                         "mse": mse, "target_var": var, "rel_error": rel})  # fmt: skip
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["model", "dt", "fold"], kind="stable").reset_index(drop=True)


def _summary(results: pd.DataFrame) -> pd.DataFrame:
    g = results.groupby(["model", "dt"])
    return pd.DataFrame(
        {
            "mse": g["mse"].mean(), "mse_std": g["mse"].std(ddof=0),
            "mse_min": g["mse"].min(), "mse_max": g["mse"].max(),
            "rel": g["rel_error"].mean(), "rel_std": g["rel_error"].std(ddof=0),
            "rel_min": g["rel_error"].min(), "rel_max": g["rel_error"].max(),
            "n": g["fold"].nunique(),
        }
    ).reset_index()  # fmt: skip


def fading_flash_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per Δ; per model ``{model} MSE`` and ``{model} rel. error (%)``, mean ± std
    over its runs; Δ inside the training range marked ``(train)``."""
    if results.empty:
        return pd.DataFrame({"Δ": [MISSING], "note": ["no Fading Flash records"]})
    s = _summary(results)
    table: dict[str, list] = {"Δ": []}
    dts = sorted(s["dt"].unique())
    for dt in dts:
        inside = TRAIN_RANGE[0] <= dt <= TRAIN_RANGE[1]
        table["Δ"].append(f"{dt:g}" + (" (train)" if inside else ""))
    for model in sorted(s["model"].unique()):
        m = s[s["model"] == model].set_index("dt")
        n = int(m["n"].max())
        table[f"{model} MSE (n={n})"] = [
            f"{m.at[dt, 'mse']:.2e} {PM} {m.at[dt, 'mse_std']:.1e}" if dt in m.index else MISSING
            for dt in dts
        ]
        table[f"{model} rel. error %"] = [
            f"{m.at[dt, 'rel']:.1f} {PM} {m.at[dt, 'rel_std']:.1f}"
            if dt in m.index and np.isfinite(m.at[dt, "rel"])
            else MISSING
            for dt in dts
        ]
    return pd.DataFrame(table)


def fading_flash_claims(results: pd.DataFrame) -> pd.DataFrame:
    """The paper's claims (a)–(c), each: ``claim, criterion, numbers, verdict`` ("holds",
    "does not hold", or "not tested" when a model or Δ it needs has no run)."""
    s = _summary(results) if not results.empty else pd.DataFrame(columns=["model", "dt", "rel"])
    rel = {(r.model, r.dt): r.rel for r in s.itertuples(index=False)}
    names = CLAIM_MODELS

    def at(role, dt):
        return rel.get((names[role], dt), np.nan)

    def in_range(role):
        values = [v for (m, dt), v in rel.items()
                  if m == names[role] and TRAIN_RANGE[0] <= dt <= TRAIN_RANGE[1]]  # fmt: skip
        return float(np.mean(values)) if values else np.nan

    rows = []
    s5, tides = in_range("S5"), in_range("TIDES")
    rows.append(_claim(
        "(a) S5 cannot fit the zone-dependent decay: its error stays high inside the "
        "training Δ range",
        f"S5's mean relative error over Δ in [{TRAIN_RANGE[0]:g}, {TRAIN_RANGE[1]:g}] is "
        f"≥ {FACTOR:g}× TIDES's",
        f"S5 {s5:.2f}%, TIDES {tides:.2f}% (ratio {s5 / tides:.1f})" if tides else "",
        s5 >= FACTOR * tides, [s5, tides],
    ))  # fmt: skip
    lo, one, hi = at("MambaS", 0.1), at("MambaS", 1.0), at("MambaS", 2.0)
    rows.append(_claim(
        "(b) MambaS degrades outside the training Δ range",
        f"MambaS's relative error at Δ = 0.1 and at Δ = 2.0 are each ≥ {FACTOR:g}× its "
        "error at Δ = 1.0",
        f"Δ=0.1: {lo:.2f}%, Δ=1.0: {one:.2f}%, Δ=2.0: {hi:.2f}%",
        lo >= FACTOR * one and hi >= FACTOR * one, [lo, one, hi],
    ))  # fmt: skip
    grid = {dt: v for (m, dt), v in rel.items() if m == names["TIDES"]}
    worst = max(grid.items(), key=lambda kv: kv[1]) if grid else (np.nan, np.nan)
    rows.append(_claim(
        "(c) TIDES stays accurate across the whole Δ grid",
        f"TIDES's relative error is ≤ {ACCURATE_PCT:g}% at every Δ of the grid",
        f"largest: {worst[1]:.2f}% at Δ = {worst[0]:g} ({len(grid)} Δ)",
        bool(grid) and worst[1] <= ACCURATE_PCT, [worst[1]] if grid else [np.nan],
    ))  # fmt: skip
    return pd.DataFrame(rows)


def fading_flash_figure(
    results: pd.DataFrame, path_stem, title: str = "Fading Flash"
) -> dict[str, Path]:
    """MSE (log) and relative error against Δ per model, mean over runs with the range
    over the runs as a band (a ± std band has no log scale), the training range shaded."""
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    if results.empty:
        for ax in axes:
            style.note(ax, "no Fading Flash records")
    s = _summary(results) if not results.empty else None
    markers = "o^s*Dvx+"
    for ax, (col, label) in zip(
        axes, (("mse", "test MSE"), ("rel", "relative error (%)")), strict=True
    ):
        ax.axvspan(*TRAIN_RANGE, color="0.9", zorder=0, label="training Δ range")
        if s is not None:
            for i, model in enumerate(sorted(s["model"].unique())):
                m = s[s["model"] == model].sort_values("dt")
                line = ax.plot(m["dt"], m[col], marker=markers[i % len(markers)],
                               label=f"{model} (n={int(m['n'].max())})")[0]  # fmt: skip
                ax.fill_between(m["dt"], m[f"{col}_min"], m[f"{col}_max"],
                                color=line.get_color(), alpha=0.15)  # fmt: skip
        ax.set_yscale("log")
        ax.set_xlabel("test step size Δ")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{title}: error against the test step size (cf. TIDES paper); "
                 "mean over seeds, band: their range", fontsize=11)  # fmt: skip
    return style.save(fig, path_stem)


def decay_results(records: pd.DataFrame, dataset: str = DATASET[1]) -> pd.DataFrame:
    """One row per (model, fold, zone rate λ, Δ) of the records' ``effective_decay``
    probe (train/probes.py): ``model, fold, rate, dt, decay`` (the state closest to λ)."""
    columns = ["model", "fold", "rate", "dt", "decay"]
    if records.empty or "probes" not in records.columns:
        return pd.DataFrame(columns=columns)
    rows = []
    for r in _of(records, dataset).itertuples(index=False):
        probes = parsed(r.probes)
        probe = (probes or {}).get("effective_decay")
        if not probe:
            continue
        for rate, by_dt in zip(probe["rates"], probe["matched"], strict=True):
            for dt, decay in zip(probe["dts"], by_dt, strict=True):
                rows.append({"model": r.model, "fold": int(r.fold), "rate": float(rate),
                             "dt": float(dt), "decay": float(decay)})  # fmt: skip
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["model", "rate", "dt", "fold"], kind="stable").reset_index(drop=True)


def fading_flash_decay_figure(decay: pd.DataFrame, path_stem) -> dict[str, Path]:
    """One panel per zone: each model's effective decay rate against Δ (mean over runs,
    their range as a band), the zone's true λ dashed, the training range shaded (the
    reference's fig_mechanism)."""
    rates = sorted(decay["rate"].unique()) if not decay.empty else [None]
    fig = Figure(figsize=(4 * len(rates) + 1.5, 3.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(rates), sharey=True))
    markers = "o^s*Dvx+"
    models = sorted(decay["model"].unique()) if not decay.empty else []
    for ax, rate in zip(axes, rates, strict=True):
        ax.axvspan(*TRAIN_RANGE, color="0.9", zorder=0, label="training Δ range")
        if rate is None:
            style.note(ax, "no effective-decay probes in the Fading Flash records")
            continue
        ax.axhline(rate, color="black", linestyle="--", lw=1.2, label="true λ")
        for i, model in enumerate(models):
            m = decay[(decay["model"] == model) & (decay["rate"] == rate)]
            if m.empty:
                continue
            g = m.groupby("dt")["decay"]
            mean, lo, hi = g.mean(), g.min(), g.max()
            line = ax.plot(mean.index, mean.values, marker=markers[i % len(markers)],
                           label=f"{model} (n={m['fold'].nunique()})")[0]  # fmt: skip
            ax.fill_between(mean.index, lo.values, hi.values, color=line.get_color(), alpha=0.15)
        ax.set_xscale("log")
        ax.set_title(f"zone λ = {rate:g}", fontsize=10)
        ax.set_xlabel("test step size Δ")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("effective decay rate −Re Λ · step / Δ")
    axes[-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle("Fading Flash: the decay rate each model applies per unit of time, per zone "
                 "(the state closest to the zone's λ)", fontsize=11)  # fmt: skip
    return style.save(fig, path_stem)


# ---------------------------------------------------------------- the report's entries
# (outputs.py names these; each gets a context.DrawContext)


def _results(ctx: DrawContext, dataset: str) -> pd.DataFrame:
    return fading_flash_results(ctx.records, dataset)


def _decay(ctx: DrawContext) -> pd.DataFrame:
    return decay_results(ctx.records)


def draw_table(ctx: DrawContext) -> dict[str, Path]:
    return write_table(fading_flash_table(ctx.once(_results, DATASET[1])), ctx.stem)


def draw_claims(ctx: DrawContext) -> dict[str, Path]:
    return write_table(fading_flash_claims(ctx.once(_results, DATASET[1])), ctx.stem)


@from_results
def draw_figure(ctx: DrawContext) -> dict[str, Path]:
    return fading_flash_figure(ctx.once(_results, DATASET[1]), ctx.stem)


def draw_noisy_table(ctx: DrawContext) -> dict[str, Path]:
    return write_table(fading_flash_table(ctx.once(_results, NOISY_DATASET)), ctx.stem)


@from_results
def draw_noisy_figure(ctx: DrawContext) -> dict[str, Path]:
    title = "Fading Flash, trained on noisy rows, tested clean"
    return fading_flash_figure(ctx.once(_results, NOISY_DATASET), ctx.stem, title)


@from_results
def draw_decay_figure(ctx: DrawContext) -> dict[str, Path]:
    return fading_flash_decay_figure(ctx.once(_decay), ctx.stem)
