"""What every drawing function of the report gets: one ``DrawContext``.

An artefact's entry in ``outputs.py`` names its function (``"module:function"``); the
report calls it as ``fn(context)`` with the frames of the whole report, the artefact and
where its files go (``stem``), and writes what it returns ({format: path}). A function
that needs more than these frames computes it from ``records`` through ``once``, so the
table, the claims and the figure of one study share one computation and ``build.py``
never learns what any artefact needs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from .outputs import Artefact

log = logging.getLogger("ssmbench.report")


@dataclass(frozen=True, eq=False)
class DrawContext:
    """The report's inputs, as every drawing function gets them.

    ``records``: the run records, one row per run (``aggregate.collect_records``; empty in
    the published-only report); ``ours``: our per-dataset results; ``paper``: the MS4N
    paper's per-dataset rows on our datasets and models (all of them in the
    published-only report); ``full_paper``: all of its rows; ``curves``: the epoch curves
    (``figures.load_curves``); ``thresholds`` and ``curve_datasets``: params.yaml
    ``report.convergence_thresholds`` and ``report.figure8_datasets``; ``runs_dir``: the
    records' folder (None in the published-only report); ``model_entries``: params.yaml
    ``models:`` of the suite, when given; ``artefact`` and ``stem``: the artefact being
    drawn and its files' path without extension (``outputs.artefact_stem``)."""

    records: pd.DataFrame
    ours: pd.DataFrame
    paper: pd.DataFrame
    full_paper: pd.DataFrame
    curves: pd.DataFrame
    thresholds: Mapping[str, float]
    curve_datasets: list[str] | None = None
    runs_dir: Path | None = None
    model_entries: Mapping[str, Mapping] | None = None
    artefact: Artefact | None = None
    stem: Path | None = None
    memo: dict = field(default_factory=dict, repr=False)

    def once(self, make: Callable[..., Any], *args) -> Any:
        """``make(self, *args)``, computed once per report (the contexts of its artefacts
        share ``memo``); ``args`` must be hashable."""
        key = (make, args)
        if key not in self.memo:
            self.memo[key] = make(self, *args)
        return self.memo[key]


def from_results(draw: Callable[[DrawContext], dict[str, Path]]):
    """A figure drawn from the per-dataset results (``ours``, ``paper``): where neither
    has a row on the artefact's benchmarks, a figure that says so stands in, and the log
    says it was skipped."""

    @functools.wraps(draw)
    def drawn(ctx: DrawContext) -> dict[str, Path]:
        artefact = ctx.artefact
        needs = list(artefact.needs)
        if all(f[f["benchmark"].isin(needs)].empty for f in (ctx.ours, ctx.paper)):
            from .style import message_figure  # matplotlib: at drawing time only

            where = " or ".join(needs)
            log.info("%s: skipped: no results of ours or the paper's on %s", artefact.key,
                        where)  # fmt: skip
            lines = [f"no results on {where} in these records"]
            return message_figure(ctx.stem, artefact.what, lines)
        return draw(ctx)

    return drawn
