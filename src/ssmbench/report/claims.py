"""The rows that check the TIDES paper's claims (Fading Flash, the drop-rate and the Im Λ
ablations: ``claim, criterion, numbers, verdict``), and the record fields they read.

Each claim states its criterion before any run; a claim whose models or test sets have no
run is "not tested", said in the row and logged, never decided either way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)

#: What a claim's row can say.
VERDICTS = ("holds", "does not hold", "not tested")


def claim_row(
    claim: str,
    criterion: str,
    numbers: str,
    holds: bool,
    needed: Sequence[float] = (),
    *,
    missing: str = "a model or test set it needs has no run",
) -> dict:
    """One claim's row: "holds" / "does not hold" by ``holds``, or "not tested" (the
    numbers then say ``missing``, and a warning is logged) when a value in ``needed`` is
    not finite."""
    if any(not np.isfinite(v) for v in needed):
        log.warning("%s: not tested (%s)", claim, missing)
        return {"claim": claim, "criterion": criterion, "numbers": missing,
                "verdict": "not tested"}  # fmt: skip
    verdict = "holds" if holds else "does not hold"
    return {"claim": claim, "criterion": criterion, "numbers": numbers, "verdict": verdict}


def parsed(value) -> dict:
    """A record's mapping field (``test_sets``, ``model_params``, ``probes``): a dict as
    read from the record, or its JSON text (metrics.csv); {} when empty."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        return json.loads(value)
    return {}
