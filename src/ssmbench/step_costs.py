"""The calibration table behind ``ssmbench plan``: measured seconds per training step.

``calibration/step_seconds.csv`` (package data) holds one row per measurement: on which
``machine`` (a name such as ``dev-cpu-2core`` or ``h200``) and ``device`` (``cpu`` or
``cuda``) with how many ``threads``, which model ``family`` (params.yaml's ``family``;
``model`` names the entry that was timed), at which batch shape ``B``, ``C``, ``L``, the
timed entry's forward MMac for one row at that shape (``mmac_full``,
``ssmbench.complexity.mmac(convention="full")``), and the medians ``step_s`` (one
training step: zero_grad, forward, loss, backward, optimiser step) and ``eval_s`` (one
forward pass without gradients, the validation and test batches; empty when not
measured), with the date (``measured``) and where the figure comes from (``source``).
For the families that are fitted once rather than trained (``family_is_estimator``:
QUANT, Hydra, ExtraTrees) ``B`` is the number of training rows, ``step_s`` the whole
fit and ``eval_s`` the prediction of ``B`` rows, and ``mmac_full`` is empty.

How a figure is read off the table (``StepCosts.seconds``): a row's *work* is ``B x
mmac_full`` (the batch's forward MACs, so that a wider configuration or a longer series
costs more in proportion), or ``B x C x L`` values for the fitted families. Through one
machine's points of one family, ordered by work, the seconds are linear between
neighbouring points, constant below the smallest (a small step is bound by per-op
overhead: kernel launches, Python), and proportional to the work above the largest (no
gain in efficiency assumed beyond what was measured). A family with no point on the
machine has no figure (``None``): the caller says so rather than guessing.

``benchmarks/calibrate.py`` measures a machine and writes its rows into the project's own
table (params.yaml ``paths.calibration``), never into the package's: ``tables`` reads the
two, the project's rows of a (machine, family) replacing the package's.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ssmbench.config import ConfigError

#: the table shipped with the package
TABLE = Path(__file__).with_name("calibration") / "step_seconds.csv"
COLUMNS = (
    "machine", "device", "threads", "family", "model", "B", "C", "L", "mmac_full",
    "step_s", "eval_s", "measured", "source",
)  # fmt: skip
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Point:
    """One row of the table (see the module docstring)."""

    machine: str
    device: str
    threads: int
    family: str
    model: str
    B: int
    C: int
    L: int
    mmac_full: float | None
    step_s: float
    eval_s: float | None
    measured: str
    source: str

    @property
    def work(self) -> float:
        """B x forward MMac per row; for a fitted family B x C x L values."""
        if self.mmac_full is None:
            return float(self.B * self.C * self.L)
        return self.B * self.mmac_full


def _number(value: str, kind, where: str, field: str, optional: bool = False):
    if value in ("", None):
        if optional:
            return None
        raise ConfigError(f"{where}: {field} is empty; it must be a number")
    try:
        number = kind(value)
    except ValueError:
        raise ConfigError(f"{where}: {field} = {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ConfigError(f"{where}: {field} = {value!r} must be a finite number >= 0")
    return number


def read_table(path: str | Path = TABLE) -> list[Point]:
    """The table's rows, checked: every column present, numbers where numbers belong,
    ``device`` one of ``DEVICES``. A problem raises ConfigError naming the file, the row
    (its line) and the field; so does a file that is not UTF-8 text or not CSV the csv
    module can read (a field over its length limit, as an unbalanced quote that swallows
    the rest of a large file makes)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the calibration table: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the calibration table is not UTF-8 text ({exc}); it must be the CSV "
            "that benchmarks/calibrate.py writes"
        ) from None
    try:
        return _points(path, text)
    except csv.Error as exc:
        raise ConfigError(
            f"{path}: the calibration table is not CSV that can be read ({exc}); look for "
            "an unbalanced quote, which takes the rest of the file into one field"
        ) from None


def _points(path: Path, text: str) -> list[Point]:
    """The checked rows of ``text``, the calibration table read from ``path`` (read_table);
    the csv module's csv.Error passes through."""
    reader = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise ConfigError(
            f"{path}: the calibration table lacks the column(s) {', '.join(missing)} "
            f"(expected: {', '.join(COLUMNS)}); regenerate it with benchmarks/calibrate.py"
        )
    points = []
    for k, row in enumerate(reader, start=2):
        where = f"{path} data row {k - 1}"
        if row["device"] not in DEVICES:
            raise ConfigError(f"{where}: device = {row['device']!r}; it must be one of {DEVICES}")
        for field in ("machine", "family", "model"):
            if not row[field]:
                raise ConfigError(f"{where}: {field} is empty")
        points.append(
            Point(
                machine=row["machine"],
                device=row["device"],
                threads=_number(row["threads"], int, where, "threads"),
                family=row["family"],
                model=row["model"],
                B=_number(row["B"], int, where, "B"),
                C=_number(row["C"], int, where, "C"),
                L=_number(row["L"], int, where, "L"),
                mmac_full=_number(row["mmac_full"], float, where, "mmac_full", optional=True),
                step_s=_number(row["step_s"], float, where, "step_s"),
                eval_s=_number(row["eval_s"], float, where, "eval_s", optional=True),
                measured=row["measured"],
                source=row["source"],
            )
        )
    return points


def write_table(points: Iterable[Point], path: str | Path = TABLE, header: str = "") -> None:
    """Write ``points`` as the table (atomically), ``header`` as leading ``#`` lines."""
    from ssmbench.io import atomic_write_text

    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    rows = [",".join(COLUMNS)]
    for p in points:
        values = [
            p.machine, p.device, str(p.threads), p.family, p.model, str(p.B), str(p.C),
            str(p.L), "" if p.mmac_full is None else f"{p.mmac_full:.6g}", f"{p.step_s:.6g}",
            "" if p.eval_s is None else f"{p.eval_s:.6g}", p.measured, _quoted(p.source),
        ]  # fmt: skip
        rows.append(",".join(values))
    atomic_write_text(path, "\n".join(lines + rows) + "\n")


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if ("," in text or '"' in text) else text


def interpolate(points: list[tuple[float, float]], work: float) -> float:
    """Seconds at ``work`` through (work, seconds) points: linear between neighbours,
    the smallest point's seconds below it, proportional to the largest above it. Points
    of equal work are averaged."""
    if not points:
        raise ValueError("no points to interpolate")
    merged: dict[float, list[float]] = {}
    for w, s in points:
        merged.setdefault(w, []).append(s)
    xs = sorted(merged)
    ys = [sum(merged[x]) / len(merged[x]) for x in xs]
    if work <= xs[0]:
        return ys[0]
    if work >= xs[-1]:
        return ys[-1] * work / xs[-1] if xs[-1] > 0 else ys[-1]
    for k in range(1, len(xs)):
        if work <= xs[k]:
            x0, y0, x1, y1 = xs[k - 1], ys[k - 1], xs[k], ys[k]
            return y0 + (y1 - y0) * (work - x0) / (x1 - x0)
    raise AssertionError("unreachable: work lies between the first and last points")


def tables(params: dict) -> list[Path]:
    """The calibration tables ``ssmbench plan`` reads: the package's, then the project's
    (params.yaml ``paths.calibration``) where it exists."""
    own = (params.get("paths") or {}).get("calibration")
    return [TABLE, *([Path(own)] if own and Path(own).is_file() else [])]


def calibrate_command(machine: str, device: str, model: str, params: dict) -> str:
    """The command that measures ``model``'s family on ``machine`` into the project's table."""
    table = (params.get("paths") or {}).get("calibration") or "calibration/step_seconds.csv"
    flags = f" --device {device}" if device != "cpu" else ""
    return (f"python benchmarks/calibrate.py --machine {machine}{flags} --models {model} "
            f"--table {table}")  # fmt: skip


class StepCosts:
    """The table, by machine and family (see the module docstring)."""

    def __init__(self, points: Iterable[Point]):
        self.points = list(points)
        self._by: dict[tuple[str, str], list[Point]] = {}
        for p in self.points:
            self._by.setdefault((p.machine, p.family), []).append(p)

    @classmethod
    def load(cls, *paths: str | Path) -> StepCosts:
        """The tables at ``paths`` (default: the package's) as one: where a later table
        has rows of a (machine, family), they replace the earlier tables' rows of it."""
        merged: list[Point] = []
        for path in paths or (TABLE,):
            rows = read_table(path)
            replaced = {(p.machine, p.family) for p in rows}
            merged = [p for p in merged if (p.machine, p.family) not in replaced] + rows
        return cls(merged)

    def machines(self) -> dict[str, str]:
        """machine -> its device, in the table's order."""
        out: dict[str, str] = {}
        for p in self.points:
            out.setdefault(p.machine, p.device)
        return out

    def families(self, machine: str) -> list[str]:
        return sorted({p.family for p in self.points if p.machine == machine})

    def has(self, machine: str, family: str) -> bool:
        return (machine, family) in self._by

    def seconds(self, machine: str, family: str, work: float, kind: str = "step") -> float | None:
        """Seconds of one training step (``kind="step"``) or one forward pass without
        gradients (``"eval"``) of a batch of ``work`` (B x MMac per row), on ``machine``;
        None where the table has no point for (machine, family). An ``eval`` figure with
        no measured ``eval_s`` is a third of the step's (a forward of the step's forward,
        backward, optimiser step)."""
        rows = self._by.get((machine, family))
        if not rows:
            return None
        if kind == "step":
            return interpolate([(p.work, p.step_s) for p in rows], work)
        if kind != "eval":
            raise ValueError(f"kind must be 'step' or 'eval', got {kind!r}")
        measured = [(p.work, p.eval_s) for p in rows if p.eval_s is not None]
        if measured:
            return interpolate(measured, work)
        return interpolate([(p.work, p.step_s / 3.0) for p in rows], work)
