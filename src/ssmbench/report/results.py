"""Per-dataset results in one shape, whether ours (from run records) or the MS4N paper's
(from its published tables), so that every artefact draws either, or both side by side.

A *per-dataset frame* has one row per (benchmark, dataset, model) and the columns
``PER_DATASET_COLUMNS``: ``error`` (mean test error over the runs), ``std`` (their std),
``n_runs``, ``params`` and ``mmac`` (NaN where unknown or not applicable), ``family`` (the
params.yaml family; NaN where unknown) and ``domain`` (the catalog's).

A *model summary* (``model_summary``) has one row per (benchmark, model): mean error, mean
rank over the datasets every compared model has, mean std, and the complexity means, by
the conventions of ``aggregate`` (its module docstring).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from ssmbench.data.catalog import domain_of

from .aggregate import dataset_table, filter_models, rank_datasets
from .reference import (
    load_published_domains_monster,
    load_published_errors,
    load_published_summary,
)

PER_DATASET_COLUMNS = (
    "benchmark", "dataset", "model", "family", "domain", "error", "std", "n_runs", "params",
    "mmac",
)  # fmt: skip
#: How many runs each of the paper's cells averages (section 4: 5 MONSTER folds; 40 UEA
#: runs).
PAPER_RUNS = {"monster": 5, "uea": 40}
#: The paper's model names -> our params.yaml family, for the published frames.
PAPER_MODEL_FAMILY = {
    "MS4N": "ms4", "MS4": "ms4", "MS4-2Layer": "ms4", "MS4-H128": "ms4", "S4D": "s4d",
    "Mamba1": "mamba1", "Mamba2": "mamba2", "ConvTran": "convtran", "HInception": "hinception",
    "FCN": "fcn", "Transformer": "transformer", "Informer": "informer",
    "iTransformer": "itransformer", "GRU": "gru", "LSTM": "lstm", "Quant": "quant",
    "Hydra": "hydra", "ET": "extratrees",
}  # fmt: skip
#: Table 4's metric names for the complexity columns.
_TABLE4_METRICS = {"Param": "params", "FLOPs": "mmac"}


def _with_domain(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["domain"] = [
        domain_of(b, d) for b, d in zip(frame["benchmark"], frame["dataset"], strict=False)
    ]
    return frame


def ours_per_dataset(records: pd.DataFrame) -> pd.DataFrame:
    """The per-dataset frame of run records (``aggregate.collect_records``)."""
    if records.empty:
        return pd.DataFrame(columns=list(PER_DATASET_COLUMNS))
    per_ds = dataset_table(records)
    families = (
        records.dropna(subset=["family"]).groupby(["benchmark", "model"])["family"].first()
        if "family" in records.columns
        else pd.Series(dtype=object)
    )
    per_ds["family"] = [
        families.get((b, m), np.nan)
        for b, m in zip(per_ds["benchmark"], per_ds["model"], strict=False)
    ]
    return _with_domain(per_ds)[list(PER_DATASET_COLUMNS)]


def paper_complexity() -> pd.DataFrame:
    """The paper's parameters and MMac per (benchmark, model, domain): MONSTER from Table 4
    (per domain), UEA from the figures the text of section 5.2 quotes (``domain`` NaN:
    one figure for the whole benchmark). Columns ``benchmark, model, domain, params,
    mmac``."""
    t4 = load_published_domains_monster()
    t4 = t4[t4["metric"].isin(_TABLE4_METRICS)]
    wide = t4.pivot_table(
        index=["model", "domain"], columns="metric", values="value", aggfunc="first",
        dropna=False,
    ).rename(columns=_TABLE4_METRICS).reset_index()  # fmt: skip
    wide.insert(0, "benchmark", "monster")
    text = load_published_summary()
    text = text[(text["benchmark"] == "uea") & text["metric"].isin(("params", "mmac"))]
    uea = text.pivot_table(index="model", columns="metric", values="value").reset_index()
    uea.insert(0, "benchmark", "uea")
    uea["domain"] = np.nan
    out = pd.concat([wide, uea], ignore_index=True)
    for col in ("params", "mmac"):
        if col not in out.columns:
            out[col] = np.nan
    return out[["benchmark", "model", "domain", "params", "mmac"]]


def paper_per_dataset(benchmarks: Iterable[str] | None = None) -> pd.DataFrame:
    """The per-dataset frame of the paper's Tables 3 (MONSTER) and 5 (UEA): error and std
    as printed, ``n_runs`` from ``PAPER_RUNS``, params and MMac from ``paper_complexity``
    (a MONSTER dataset gets its domain's Table 4 figure)."""
    pub = load_published_errors()
    if benchmarks is not None:
        pub = pub[pub["benchmark"].isin(list(benchmarks))]
    frame = pub.rename(columns={"error_mean": "error", "error_std": "std"})
    frame = _with_domain(frame)
    frame["n_runs"] = [PAPER_RUNS.get(b, np.nan) for b in frame["benchmark"]]
    frame["family"] = [PAPER_MODEL_FAMILY.get(m, np.nan) for m in frame["model"]]
    cx = paper_complexity()
    by_domain = {
        (r.benchmark, r.model, r.domain): (r.params, r.mmac)
        for r in cx.itertuples(index=False)
        if isinstance(r.domain, str)
    }
    by_bench = {
        (r.benchmark, r.model): (r.params, r.mmac)
        for r in cx.itertuples(index=False)
        if not isinstance(r.domain, str)
    }
    pairs = [
        by_domain.get((b, m, d), by_bench.get((b, m), (np.nan, np.nan)))
        for b, m, d in zip(frame["benchmark"], frame["model"], frame["domain"], strict=False)
    ]
    frame["params"] = [p for p, _ in pairs]
    frame["mmac"] = [c for _, c in pairs]
    return (
        frame[list(PER_DATASET_COLUMNS)]
        .sort_values(["benchmark", "model", "dataset"], kind="stable")
        .reset_index(drop=True)
    )


def restrict(
    per_ds: pd.DataFrame,
    benchmark: str | None = None,
    models: Iterable[str] | None = None,
    datasets: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Rows of ``benchmark``, ``models`` and ``datasets`` (each None: all)."""
    keep = pd.Series(True, index=per_ds.index)
    if benchmark is not None:
        keep &= per_ds["benchmark"] == benchmark
    if models is not None:
        keep &= per_ds["model"].isin(list(models))
    if datasets is not None:
        keep &= per_ds["dataset"].isin(list(datasets))
    return per_ds[keep].reset_index(drop=True)


def model_summary(
    per_ds: pd.DataFrame, benchmark_models: Mapping[str, Iterable[str]] | None = None
) -> pd.DataFrame:
    """One row per (benchmark, model) of a per-dataset frame: ``family, mean_error,
    mean_rank, mean_std, n_datasets, n_ranked_datasets, n_runs, params, mmac``.

    Ranks are over the datasets where every model of ``benchmark_models[benchmark]``
    (default: every model in the frame for that benchmark) has a result."""
    per_ds = filter_models(per_ds, benchmark_models)
    rows = []
    for bench, bdf in per_ds.groupby("benchmark", sort=True):
        models = sorted(bdf["model"].unique())
        expected = list((benchmark_models or {}).get(bench, models))
        ranks, n_ranked = rank_datasets(bdf, expected)
        for model in models:
            mdf = bdf[bdf["model"] == model]
            fam = mdf["family"].dropna()
            rows.append(
                {
                    "benchmark": bench,
                    "model": model,
                    "family": fam.iloc[0] if len(fam) else np.nan,
                    "mean_error": mdf["error"].mean(),
                    "mean_rank": ranks.get(model, np.nan),
                    "mean_std": mdf["std"].mean(),
                    "n_datasets": int(mdf["dataset"].nunique()),
                    "n_ranked_datasets": n_ranked,
                    "n_runs": int(pd.to_numeric(mdf["n_runs"], errors="coerce").fillna(0).sum()),
                    "params": pd.to_numeric(mdf["params"], errors="coerce").mean(),
                    "mmac": pd.to_numeric(mdf["mmac"], errors="coerce").mean(),
                }
            )
    columns = [
        "benchmark", "model", "family", "mean_error", "mean_rank", "mean_std", "n_datasets",
        "n_ranked_datasets", "n_runs", "params", "mmac",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
