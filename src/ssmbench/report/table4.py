"""Table 4 of the MS4N paper: our parameters and MMac per MONSTER domain beside the
published ones, and the gaps a model family declares where it cannot match them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from ssmbench.complexity import domain_averages
from ssmbench.models import family_is_estimator, table4_gaps

from .reference import load_published_domains_monster

#: Table 4's metric names for our two figures.
_METRICS = (("params", "Param"), ("mmac", "FLOPs"))


def table4_comparison(models: Mapping, names: Iterable[str] | None = None, device: str = "meta"):
    """Our parameters and MMac beside the MS4N paper's Table 4, per model and MONSTER
    domain: a DataFrame with ``model, domain, n (datasets counted), params, params_paper,
    params_diff_pct, mmac, mmac_paper, mmac_diff_pct`` (diff = ours / paper - 1, in %).
    ``models``: the params.yaml ``models:`` mapping; ``names``: which (default: those
    Table 4 has).
    Non-deep models (no parameters or MACs: "not applicable") get empty figures."""
    table4 = load_published_domains_monster()
    published = {(r.model, r.domain, r.metric): r.value for r in table4.itertuples()}
    names = list(names) if names else [m for m in models if m in set(table4["model"])]
    rows = []
    for name in names:
        entry = models[name]
        estimator = family_is_estimator(entry["family"])
        ours = {} if estimator else domain_averages(name, entry, device=device)
        for domain in dict.fromkeys(table4["domain"]):
            row = {"model": name, "domain": domain, "n": ours.get(domain, {}).get("n")}
            for key, metric in _METRICS:
                value = ours.get(domain, {}).get(key)
                paper = published.get((name, domain, metric))
                paper = None if paper is None or pd.isna(paper) else float(paper)
                row[key] = value
                row[f"{key}_paper"] = paper
                row[f"{key}_diff_pct"] = (
                    100.0 * (value / paper - 1.0) if value is not None and paper else None
                )
            rows.append(row)
    return pd.DataFrame(rows)


def declared_gaps(family: str) -> dict[tuple[str, str], str]:
    """Where a params.yaml model family says it cannot reproduce Table 4, and why:
    ``{(key, domain or "*"): reason}`` with key ``params`` or ``mmac``, from the model
    class's ``TABLE4_GAPS`` (empty when it declares none)."""
    return table4_gaps(family)


def declared_gap(family: str, key: str, domain: str) -> str | None:
    """The reason ``family`` gives for not matching Table 4's ``key`` in ``domain`` (a gap
    declared for every domain, ``"*"``, included), or None."""
    gaps = declared_gaps(family)
    return gaps.get((key, domain)) or gaps.get((key, "*"))
