"""Our errors beside the published ones, in the layout of the MS4N paper's Table 5."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ssmbench.io import atomic_write, atomic_write_text

from .aggregate import dataset_table

MISSING = "–"  # en dash: no figure (model not in the paper / not run)
PM = "±"
DECIMALS = 3  # as in the paper
AVERAGE_LABEL = "Average"


def _fmt(mean: float, std: float) -> str:
    if pd.isna(mean):
        return MISSING
    if pd.isna(std):
        return f"{mean:.{DECIMALS}f}"
    return f"{mean:.{DECIMALS}f} {PM} {std:.{DECIMALS}f}"


def _model_order(
    ours: Sequence[str], published_models: Sequence[str], preferred: Sequence[str] | None
) -> list[str]:
    order = list(preferred or []) + [m for m in published_models if m not in (preferred or [])]
    rank = {m: i for i, m in enumerate(order)}
    return sorted(ours, key=lambda m: (rank.get(m, len(rank)), m))


def benchmark_table(
    df: pd.DataFrame,
    published: pd.DataFrame,
    benchmark: str,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per dataset we ran (sorted by name) plus an ``Average`` row.

    Columns: ``Dataset``, then per model ``{model} (ours)`` and ``{model} (paper)``, each a
    string ``"error ± std"`` (3 decimals; ours: mean and std over folds, published: the
    paper's figure). ``–`` where there is no figure (e.g. S4D is not in the paper); no
    ``(paper)`` columns at all for a benchmark the paper has no figures for. Regression
    benchmarks label their columns ``{model} MSE (ours)``.
    ``models``: which of our models and in what order (default: the ones in ``df``, in
    the paper's column order, others after, by name). The ``Average`` row: ours is the
    mean (of errors, and of stds) over the datasets we ran that model on; the paper's is
    over those same datasets where it has a figure. When that is fewer than the table's
    datasets the count is appended, e.g. ``0.123 ± 0.010 (n=7)``.
    """
    df = df[df["benchmark"] == benchmark]
    if df.empty:
        raise ValueError(f"no run records for benchmark {benchmark!r}")
    pub = published[published["benchmark"] == benchmark]
    ours_models = list(dict.fromkeys(df["model"]))
    if models is None:
        models = _model_order(ours_models, list(dict.fromkeys(pub["model"])), None)
    else:
        models = [m for m in models if m in ours_models]
    per_ds = dataset_table(df)
    datasets = sorted(per_ds["dataset"].unique())

    ours = per_ds.set_index(["dataset", "model"])
    pubi = pub.drop_duplicates(["dataset", "model"]).set_index(["dataset", "model"])

    def column(src, model, mcol, scol):
        pairs = [
            (src.loc[(ds, model), mcol], src.loc[(ds, model), scol])
            if (ds, model) in src.index
            else (float("nan"), float("nan"))
            for ds in datasets
        ]
        return (
            pd.Series([m for m, _ in pairs], dtype=float),
            pd.Series([s for _, s in pairs], dtype=float),
        )

    def average(means, stds, mask):
        n = int((mask & means.notna()).sum())
        if not n:
            return MISSING
        avg = _fmt(means[mask].mean(), stds[mask].mean())
        return avg + (f" (n={n})" if n < len(datasets) else "")

    # Regression benchmarks (the TIDES tasks) report the test MSE, and the column says so.
    metric = " MSE" if "task" in df.columns and (df["task"] == "regression").all() else ""
    table = {"Dataset": [*datasets, AVERAGE_LABEL]}
    for model in models:
        om, os_ = column(ours, model, "error", "std")
        table[f"{model}{metric} (ours)"] = [*map(_fmt, om, os_), average(om, os_, om.notna())]
        if pub.empty:
            continue  # no published figures for this benchmark: no empty "(paper)" columns
        pm, ps = column(pubi, model, "error_mean", "error_std")
        # The paper's average is taken over the datasets we have for this model, so that
        # the two averages side by side cover the same datasets.
        table[f"{model}{metric} (paper)"] = [
            *map(_fmt, pm, ps),
            average(pm, ps, om.notna() & pm.notna()),
        ]
    return pd.DataFrame(table)


def uea_table(
    df: pd.DataFrame, published: pd.DataFrame, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """:func:`benchmark_table` for UEA: the paper's Table 5 layout."""
    return benchmark_table(df, published, "uea", models)


_TEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def tex_escape(text: str) -> str:
    """Escape LaTeX specials; ``±`` -> ``$\\pm$``, ``–`` -> ``--``."""
    out = "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))
    return out.replace(PM, r"$\pm$").replace(MISSING, "--")


def to_latex(df: pd.DataFrame) -> str:
    """A booktabs tabular (needs ``\\usepackage{booktabs}``); first column left, rest right."""
    align = "l" + "r" * (len(df.columns) - 1)
    lines = [
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(tex_escape(c) for c in df.columns) + r" \\",
        r"\midrule",
    ]
    body = [
        " & ".join(tex_escape(v) for v in row) + r" \\"
        for row in df.astype(str).itertuples(index=False)
    ]
    if len(body) > 1 and str(df.iloc[-1, 0]) == AVERAGE_LABEL:
        body.insert(len(body) - 1, r"\midrule")
    lines += body + [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, stem: str | os.PathLike) -> dict[str, Path]:
    """Write ``stem.csv``, ``stem.md`` (GitHub markdown) and ``stem.tex`` (booktabs),
    each atomically; returns {"csv": path, "md": path, "tex": path}."""
    stem = Path(stem)
    paths = {
        "csv": atomic_write(
            stem.with_name(stem.name + ".csv"),
            lambda p: df.to_csv(p, index=False, lineterminator="\n", encoding="utf-8"),
        ),
        "md": atomic_write_text(
            stem.with_name(stem.name + ".md"),
            df.to_markdown(index=False, tablefmt="github", disable_numparse=True) + "\n",
        ),
        "tex": atomic_write_text(stem.with_name(stem.name + ".tex"), to_latex(df)),
    }
    return paths
