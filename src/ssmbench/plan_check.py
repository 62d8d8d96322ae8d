"""`ssmbench plan --check`: the estimate beside the training time records measured.

For each run record (a dict as ``ssmbench train`` writes it), ``estimate_error`` estimates
the run with the record's own epochs, row counts, batch size and forward MMac on a machine
of the calibration table (``ssmbench.plan.run_seconds``, the bill's formula) and sets it
beside the record's ``train_seconds``; ``format_error`` lists them with the median and
worst ratio. ``record_problems`` says which fields of a record are not what ``ssmbench
train`` writes: such a record is left out, with a warning naming it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ssmbench.config import ConfigError
from ssmbench.plan import run_seconds, size_of
from ssmbench.step_costs import StepCosts


@dataclass
class Check:
    """An existing record's measured training time beside the estimate for it."""

    name: str
    machine: str
    epochs: int
    measured_s: float
    estimated_s: float | None

    @property
    def ratio(self) -> float | None:
        return None if self.estimated_s is None else self.estimated_s / self.measured_s


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def record_problems(record: dict) -> list[str]:
    """What makes ``record`` (a run record's dict) unfit for ``estimate_error``: each
    field it reads that is not of the kind ``ssmbench train`` writes. The names
    (benchmark, dataset, model, family) non-empty strings, fold an integer >= 0,
    train_seconds a finite number > 0, epochs_run an integer >= 1, mmac_full a finite
    number >= 0 or null (null: a fitted model), batch_size an integer >= 1 (null allowed
    for a fitted model), n_train and n_val integers >= 0 or left out. A string that
    spells a number is refused too: train writes numbers as JSON numbers, so a string is
    a record edited or made by something else. An empty list: fit."""
    problems = []

    def bad(key: str, want: str) -> None:
        if key not in record:
            problems.append(f"{key} is missing ({want})")
        else:
            problems.append(f"{key} = {record[key]!r} is not {want}")

    for key in ("benchmark", "dataset", "model", "family"):
        if not isinstance(record.get(key), str) or not record[key]:
            bad(key, "a name")
    if not (_is_int(record.get("fold")) and record["fold"] >= 0):
        bad("fold", "an integer >= 0")
    seconds = record.get("train_seconds")
    if not (_is_number(seconds) and math.isfinite(seconds) and seconds > 0):
        bad("train_seconds", "a finite number of seconds > 0")
    if not (_is_int(record.get("epochs_run")) and record["epochs_run"] >= 1):
        bad("epochs_run", "an integer >= 1")
    mmac_row = record.get("mmac_full")
    if mmac_row is not None and not (
        _is_number(mmac_row) and math.isfinite(mmac_row) and mmac_row >= 0
    ):
        bad("mmac_full", "a finite number >= 0, or null for a fitted model")
    batch = record.get("batch_size")
    if not (_is_int(batch) and batch >= 1) and not (batch is None and mmac_row is None):
        bad("batch_size", "an integer >= 1 (null only for a fitted model)")
    for key in ("n_train", "n_val"):
        if record.get(key) is not None and not (_is_int(record[key]) and record[key] >= 0):
            bad(key, "an integer >= 0")
    return problems


def estimate_error(
    records: list[dict], costs: StepCosts, machine: str, params: dict | None = None
) -> list[Check]:
    """For each record (a run record's dict): the estimate with the record's own
    epochs_run, row counts, batch size and forward MMac, on ``machine``, beside its
    ``train_seconds`` (training and validation, from the first epoch to the last).
    A record with ``record_problems`` is passed over (``ssmbench plan --check`` names
    each one in a warning before it gets here)."""
    checks = []
    for r in records:
        if record_problems(r):
            continue
        name = f"{r['benchmark']}/{r['dataset']}/{r['model']}/fold{r['fold']}"
        mmac_row = r.get("mmac_full")
        C = L = None
        if mmac_row is None and params is not None:  # a fitted model: work in values
            try:
                size = size_of(params, r["benchmark"], r["dataset"])
                C, L = size.C, size.L
            except ConfigError:
                pass  # not known: not estimated, as below
        n_train, n_val = int(r.get("n_train") or 0), int(r.get("n_val") or 0)
        est = None
        if mmac_row is not None or None not in (C, L):
            est = run_seconds(
                costs, machine, r["family"], mmac_row, C or 0, L or 0, n_train, n_val, 0,
                int(r.get("batch_size") or 1), int(r["epochs_run"]),
            )  # fmt: skip
        checks.append(Check(name, machine, int(r["epochs_run"]), float(r["train_seconds"]), est))
    return checks


def format_error(checks: list[Check]) -> str:
    """One line per record, and the median and worst ratio of estimated to measured."""
    lines = [f"{'run':<48}{'epochs':>7}{'measured s':>12}{'estimated s':>13}{'est/meas':>10}"]
    ratios = []
    for c in checks:
        est = "n/a" if c.estimated_s is None else f"{c.estimated_s:,.1f}"
        ratio = "" if c.ratio is None else f"{c.ratio:.2f}"
        if c.ratio is not None:
            ratios.append(c.ratio)
        lines.append(f"{c.name:<48}{c.epochs:>7}{c.measured_s:>12,.1f}{est:>13}{ratio:>10}")
    if ratios:
        # the worst is the farthest from 1 either way; an estimate of 0 s (a table whose
        # step_s is 0) is the farthest of all
        logs = [abs(math.log(r)) if r > 0 else math.inf for r in ratios]
        worst = ratios[logs.index(max(logs))]
        lines.append(
            f"{len(ratios)} runs: estimated / measured median {statistics.median(ratios):.2f}, "
            f"worst {worst:.2f} (machine {checks[0].machine})"
        )
    else:
        lines.append("no record with a figure for its family on this machine")
    return "\n".join(lines)
