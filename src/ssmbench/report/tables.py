"""How a report table is written: CSV, GitHub Markdown and a booktabs LaTeX tabular
(the tables themselves are built in ``paper_tables``)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ssmbench.io import atomic_write, atomic_write_text

MISSING = "–"  # en dash: no figure (model not in the paper / not run)
PM = "±"
AVERAGE_LABEL = "Average"


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
    first = df.iloc[:, 0].astype(str).tolist()
    if AVERAGE_LABEL in first[1:]:  # a rule above the summary rows
        body.insert(first.index(AVERAGE_LABEL), r"\midrule")
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
