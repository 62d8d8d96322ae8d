"""`ssmbench plan`: what a suite will cost, before anything is submitted.

For every run of the suite's grid (and every trial of the searches it runs first), an
estimate of its wall time, from the files alone (no dataset's arrays are opened: a
prepared folder's meta.json, or X.npy's header, only for a dataset the catalog lacks)::

    seconds = epochs x (ceil(n_train / B) x step_s(B)
                        + [epoch validated] x ceil(n_val / B) x eval_s(B))
              + ceil(n_test / B) x eval_s(B)

* ``n_train``, ``n_val``, ``n_test``: the dataset's size, from the catalog
  (``ssmbench.data.catalog``) or, for a dataset it lacks, the prepared folder's meta.json
  or X.npy header (``ssmbench.data.sizes``; neither: not estimated, with the command that
  prepares it), split by its benchmark's rule (``row_counts``); ``B``: the run's batch size
  (``train.splits.batch_size_for``).
* ``epochs``: ``max_epochs`` (``epochs="max"``, the default: early stopping ignored, an
  upper bound), or the median epochs run by the benchmark's records of the same model
  where there are some (``epochs="records"``).
* ``step_s`` and ``eval_s``: the calibration table (``ssmbench.step_costs``) at the work
  ``B x`` the run's forward MMac per row (its model built for its dataset's C, K and L on
  the meta device, ``complexity.mmac(convention="full")``, or that figure as
  ``ssmbench.mmac_table`` keeps it), on the machine that plays the run's part: the GPU
  machine for a run whose size class asks for a GPU, the CPU machine otherwise. A model
  whose family the table lacks for that machine is not estimated and is listed as such.
* Fitted models (QUANT, Hydra, ExtraTrees): one fit of ``n_train`` rows and the prediction
  of ``n_val + n_test`` rows, from their table rows (work in values, B x C x L).

The bill sums per size class and per model: runs, SLURM jobs (a size class with
``group: true`` goes ``group-components`` runs to a job, profiles/slurm/config.yaml),
CPU-hours (wall x the CPUs a run asks for), GPU-hours (wall x its GPUs), and lists, per
model and size class, the runs whose estimate exceeds their ``runtime`` with the runtime
they need (``ssmbench.plan_resources``, which also writes it as a params.yaml block).
``ssmbench.plan_check`` sets the estimate beside the ``train_seconds`` of existing
records (``ssmbench plan --check``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ssmbench.config import ConfigError, Job, model_entry, run_settings, suite_grid
from ssmbench.mmac_table import MMacTable
from ssmbench.plan_resources import DEFAULT_GROUP_COMPONENTS, describe, needed_runtimes
from ssmbench.resources import TrainResources
from ssmbench.step_costs import StepCosts, calibrate_command

EPOCH_SOURCES = ("max", "records")
PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "slurm" / "config.yaml"


@dataclass
class RunEstimate:
    """One run's (or one search trial's) estimate; ``seconds`` None: not estimated
    (``problem`` says why)."""

    job: Job
    stage: str  # "train", or "tune" for a search's trials (``trials`` of them)
    size_class: str
    device: str  # "cuda" where the size class asks for a GPU, else "cpu"
    machine: str | None
    cpus: int
    gpus: int
    runtime_min: float
    n_train: int = 0
    n_val: int = 0
    n_test: int = 0
    batch_size: int = 0
    epochs: int = 0
    epochs_from: str = "max_epochs"
    trials: int = 1
    seconds: float | None = None  # one run (one trial)
    problem: str | None = None
    uncalibrated: bool = False  # not estimated for want of a figure for its family/machine

    @property
    def name(self) -> str:
        j = self.job
        return f"{j.benchmark}/{j.dataset}/{j.model}/fold{j.fold}"

    @property
    def total_seconds(self) -> float:
        return 0.0 if self.seconds is None else self.seconds * self.trials

    @property
    def over_limit(self) -> bool:
        return self.seconds is not None and self.seconds > 60.0 * self.runtime_min


@dataclass
class Bill:
    suite: str
    estimates: list[RunEstimate]
    machines: dict[str, str | None]  # "cpu"/"cuda" -> the machine whose figures are used
    group_components: dict[str, int] = field(default_factory=dict)


# ----------------------------------------------------------------------------- rows


def _known_size(params: dict, benchmark: str, dataset: str):
    """What is known of ``benchmark``/``dataset``'s size (``ssmbench.data.sizes``): its
    catalog row (under the benchmark, else the benchmark's ``source``; a benchmark
    params.yaml does not define, a record's under ``plan --check DIR``, under its own name
    alone), else its prepared folder's meta.json or X.npy header; None: neither knows it.
    A prepared folder that cannot be read raises ConfigError."""
    from ssmbench.data.errors import DataError
    from ssmbench.data.sizes import dataset_size

    source = (params["benchmarks"].get(benchmark) or {}).get("source", benchmark)
    try:
        return dataset_size(params["paths"]["prepared"], benchmark, dataset, source)
    except DataError as exc:
        raise ConfigError(f"{benchmark}/{dataset}: {exc}") from None


def size_of(params: dict, benchmark: str, dataset: str, suite: str | None = None):
    """`_known_size`; one not known raises ConfigError saying so, and the command that
    prepares it."""
    from ssmbench.data.sizes import unknown_size

    size = _known_size(params, benchmark, dataset)
    if size is None:
        prepared = params["paths"]["prepared"]
        raise ConfigError(unknown_size(prepared, benchmark, dataset, suite or params["suite"]))
    return size


def row_counts(
    params: dict, job: Job, settings: dict, suite: str | None = None
) -> tuple[int, int, int]:
    """(n_train, n_val, n_test) of a run, from its dataset's size (``_known_size``: the
    catalog, else the prepared folder) and its source's split rule (``Source.split_rows``:
    UEA and its drop-rate variants the archive's TRAIN/TEST with ``val_fraction`` of TRAIN
    for validation; UEA-6 the ``split.fractions`` of the pooled rows, duplicates not
    removed; MONSTER its 5 given folds; Physiome-ODE 70/20/10; the synthetic sets their
    generator's sizes). A source without a rule, or whose rule cannot tell, has a fifth
    tested and ``val_fraction`` of the rest for validation. Raises ConfigError where the
    dataset's size is needed and not known."""
    from ssmbench.data.source_registry import SOURCES
    from ssmbench.data.split_rows import held_out

    source = SOURCES.get(params["benchmarks"][job.benchmark].get("source", job.benchmark))
    val_fraction = float(settings["val_fraction"])
    known = _known_size(params, job.benchmark, job.dataset)
    if source is not None and source.split_rows is not None:
        rows = source.split_rows(job.dataset, settings, known, val_fraction)
        if rows is not None:
            return rows
    size = known or size_of(params, job.benchmark, job.dataset, suite)
    if size.N is None:
        raise ConfigError(
            f"{job.benchmark}/{job.dataset}: neither the catalog (ssmbench.data.catalog) nor "
            "its prepared meta.json knows its number of rows, so no estimate can be made"
        )
    return held_out(int(size.N), round(0.2 * int(size.N)), val_fraction)


# ----------------------------------------------------------------------------- work


class _Work:
    """Forward MMac per row of (model, dataset), computed once each (meta device), or
    read from ``table`` (``ssmbench.mmac_table``: the project's cache, the package's
    table) under a key of everything it depends on: a changed model, configuration or
    code misses the key and is counted again."""

    def __init__(self, params: dict, suite: str | None, table: MMacTable):
        self.params = params
        self.suite = suite
        self._cache: dict[tuple[str, str], tuple[float | None, int, int]] = {}
        self.table = table

    def of(self, job: Job) -> tuple[float | None, int, int]:
        """(MMac per row or None for a fitted model, C, L); raises ConfigError."""
        key = (job.model, job.dataset)
        if key not in self._cache:
            self._cache[key] = self._compute(job)
        return self._cache[key]

    def save(self) -> None:
        """Writes the figures counted in this run into the project's cache."""
        self.table.save()

    def _compute(self, job: Job):
        from ssmbench.complexity import mmac
        from ssmbench.mmac_table import mmac_key
        from ssmbench.models import build_model, family_is_estimator, supports_per_step

        size = size_of(self.params, job.benchmark, job.dataset, self.suite)
        if None in (size.C, size.L):
            raise ConfigError(
                f"{job.benchmark}/{job.dataset}: neither the catalog nor its prepared data "
                "know its channels and length, so its model's cost cannot be computed"
            )
        C, L = int(size.C), int(size.L)
        model_params = model_entry(self.params, job.model, job.dataset)
        if family_is_estimator(model_params["family"]):
            return None, C, L
        regression = size.task == "regression"
        K = C if regression else int(size.n_classes or 2)
        per_step = regression and supports_per_step(model_params)

        def count() -> float:
            model = build_model(job.model, C, K, L, model_params, per_step=per_step)
            return mmac(model, C, L, device="meta", convention="full")

        try:
            key = mmac_key(model_params["family"], model_params, C, L, K, per_step)
            return self.table.get(key, count), C, L
        except Exception as exc:  # a model that cannot be built for this shape
            raise ConfigError(f"{job.model} on {job.dataset} (C {C}, L {L}): {exc}") from None


# ----------------------------------------------------------------------------- estimate


def _records_epochs(params: dict, suite: str) -> dict[tuple[str, str], int]:
    """(benchmark, model) -> median epochs_run of its records under paths.runs."""
    import json

    runs = Path(params["paths"]["runs"])
    found: dict[tuple[str, str], list[int]] = defaultdict(list)
    for job in suite_grid(params, suite):
        path = job.record_path(runs)
        if not path.is_file():
            continue
        try:
            epochs = json.loads(path.read_text()).get("epochs_run")
        except (OSError, ValueError):
            continue
        if isinstance(epochs, int) and epochs > 0:
            found[(job.benchmark, job.model)].append(epochs)
    return {k: round(statistics.median(v)) for k, v in found.items()}


def run_seconds(
    costs: StepCosts,
    machine: str,
    family: str,
    mmac_row: float | None,
    C: int,
    L: int,
    n_train: int,
    n_val: int,
    n_test: int,
    batch: int,
    epochs: int,
    val_interval: int = 1,
) -> float | None:
    """The estimate of one run (module docstring); None where the table has no figure
    for (machine, family)."""  # fmt: skip
    if mmac_row is None:  # fitted once: fit n_train rows, predict the others
        fit = costs.seconds(machine, family, float(n_train * C * L), "step")
        if fit is None:
            return None
        predict = costs.seconds(machine, family, float((n_val + n_test) * C * L), "eval")
        return fit + predict
    work = batch * mmac_row
    step = costs.seconds(machine, family, work, "step")
    if step is None:
        return None
    forward = costs.seconds(machine, family, work, "eval")
    validated = math.ceil(epochs / max(1, val_interval))
    per_batch = math.ceil
    return (
        epochs * per_batch(n_train / batch) * step
        + validated * per_batch(n_val / batch) * forward
        + per_batch(n_test / batch) * forward
    )


def _group_components(profile: Path = PROFILE) -> dict[str, int]:
    """``group-components`` of the SLURM profile: group name -> runs per job."""
    import yaml

    try:
        items = (yaml.safe_load(profile.read_text()) or {}).get("group-components") or []
    except OSError:
        return {}
    out = {}
    for item in items:
        name, _, n = str(item).partition("=")
        if n.strip().isdigit():
            out[name.strip()] = int(n)
    return out


def estimate(
    params: dict,
    costs: StepCosts,
    suite: str | None = None,
    cpu_machine: str | None = None,
    gpu_machine: str | None = None,
    epochs_from: str = "max",
    mmac: MMacTable | None = None,
) -> Bill:
    """The bill of ``suite`` (params.yaml's ``suite`` when None); ``mmac``: where the
    models' MMac are kept (``ssmbench.mmac_table``; None: the package's table, no cache),
    written back (``MMacTable.save``) once the bill is made."""
    from ssmbench.config import suite_searches
    from ssmbench.search_space import search_of
    from ssmbench.train.batch_order import batch_size_for

    if epochs_from not in EPOCH_SOURCES:
        raise ConfigError(f"--epochs must be one of {EPOCH_SOURCES}, got {epochs_from!r}")
    suite = suite or params["suite"]
    machines = costs.machines()
    for flag, name, device in (("--cpu-machine", cpu_machine, "cpu"),
                               ("--gpu-machine", gpu_machine, "cuda")):  # fmt: skip
        if name is not None and machines.get(name) != device:
            known = [m for m, d in machines.items() if d == device]
            raise ConfigError(
                f"{flag} {name}: the calibration table has no {device} machine of that name "
                f"(it has: {', '.join(known) or 'none'}); run benchmarks/calibrate.py on it"
            )
    chosen = {
        "cpu": cpu_machine or next((m for m, d in machines.items() if d == "cpu"), None),
        "cuda": gpu_machine or next((m for m, d in machines.items() if d == "cuda"), None),
    }
    resources = TrainResources(params)
    work = _Work(params, suite, mmac if mmac is not None else MMacTable())
    resolved: dict[tuple, tuple] = {}  # a run's settings and rows: the same for every fold
    from_records = _records_epochs(params, suite) if epochs_from == "records" else {}
    runs = [(job, "train", None) for job in suite_grid(params, suite)]
    for job in suite_searches(params, suite):
        runs.append((job, "tune", search_of(params, job.benchmark, job.model, suite)))
    estimates = []
    for job, stage, search in runs:
        res = resources.of(job.benchmark, job.dataset, job.model)
        gpus = int(res.get("gpu") or 0)
        device = "cuda" if gpus > 0 else "cpu"
        est = RunEstimate(
            job=job, stage=stage,
            size_class=resources.size_class(job.benchmark, job.dataset),
            device=device, machine=chosen[device],
            cpus=max(1, int(res.get("cpus_per_task") or res.get("threads") or 1)),
            gpus=gpus, runtime_min=float(res.get("runtime") or 0),
        )  # fmt: skip
        estimates.append(est)
        if search is not None:
            est.trials = int(search["n_trials"])
        family = params["models"][job.model]["family"]
        key = (job.benchmark, job.dataset, job.model, stage)
        if key not in resolved:
            settings = run_settings(params, job, suite)
            if search is not None:
                settings.update(search.get("settings") or {})
            try:
                resolved[key] = (settings, row_counts(params, job, settings, suite), None)
            except ConfigError as exc:
                resolved[key] = (settings, None, str(exc))
        settings, rows, problem = resolved[key]
        try:
            if problem is not None:
                raise ConfigError(problem)
            est.n_train, est.n_val, est.n_test = rows
            mmac_row, C, L = work.of(job)
        except ConfigError as exc:
            est.problem = str(exc)
            continue
        est.batch_size = batch_size_for(settings, est.n_train)
        est.epochs = int(settings["max_epochs"])
        est.epochs_from = "max_epochs"
        if (job.benchmark, job.model) in from_records and stage == "train":
            est.epochs = min(est.epochs, from_records[(job.benchmark, job.model)])
            est.epochs_from = "records"
        if est.machine is None:
            est.problem = f"the calibration table has no {device} machine"
            est.uncalibrated = True
            continue
        est.seconds = run_seconds(
            costs, est.machine, family, mmac_row, C, L, est.n_train, est.n_val, est.n_test,
            est.batch_size, est.epochs, int(settings["val_interval"]),
        )  # fmt: skip
        if est.seconds is None:
            est.problem = (
                f"not estimated: no calibration for family {family!r} on {est.machine}; "
                f"measure it with `{calibrate_command(est.machine, device, job.model, params)}`"
            )
            est.uncalibrated = True
    work.save()
    return Bill(suite, estimates, chosen, _group_components())


def nothing_estimated(bill: Bill, params: dict) -> str | None:
    """Why the bill is empty, where it is (no run, or no run estimated): one line naming
    what is wrong and what to do; None for a bill with an estimate. Where the calibration
    table lacks every run's family (or machine), the families, the machines and the
    command that measures them."""
    if not bill.estimates:
        return (
            f"suite {bill.suite} has no runs (its grid of benchmarks x datasets x models x "
            "folds is empty): name a suite with runs (`ssmbench suites` lists them)"
        )
    if any(e.seconds is not None for e in bill.estimates):
        return None
    n = f"none of its {sum(1 for e in bill.estimates if e.stage == 'train'):,} runs"
    if not all(e.uncalibrated for e in bill.estimates):
        problem = next(e.problem for e in bill.estimates if not e.uncalibrated)
        return f"suite {bill.suite}: {n} can be estimated; the first reason: {problem}"
    missing: dict[tuple[str | None, str], dict[str, str]] = defaultdict(dict)
    for e in bill.estimates:  # (machine, device) -> family -> the first model of it
        missing[(e.machine, e.device)].setdefault(params["models"][e.job.model]["family"],
                                                  e.job.model)  # fmt: skip
    clauses = []
    for (machine, device), families in missing.items():
        if machine is None:
            clauses.append(
                f"the calibration table has no {device} machine: measure one with "
                f"`python benchmarks/calibrate.py --machine NAME --device {device}`"
            )
            continue
        command = calibrate_command(machine, device, ",".join(families.values()), params)
        clauses.append(
            f"the calibration table has no figures for {', '.join(sorted(families))} on "
            f"{machine}: measure them with `{command}`"
        )
    return f"suite {bill.suite}: {n} can be estimated: {'; '.join(clauses)}"


# ----------------------------------------------------------------------------- report


def _unit(bill: Bill) -> tuple[str, float]:
    """The bill's unit: hours, or minutes for a bill under an hour of CPU and GPU time."""
    cpu = sum(e.total_seconds * e.cpus for e in bill.estimates)
    gpu = sum(e.total_seconds * e.gpus for e in bill.estimates)
    return ("hours", 3600.0) if max(cpu, gpu) >= 3600 else ("minutes", 60.0)


def _jobs(bill: Bill, params: dict, size_class: str, n_runs: int) -> int:
    grouped = params["resources"]["train"]["sizes"][size_class].get("group")
    if not grouped:
        return n_runs
    per_job = bill.group_components.get(f"train_{size_class}", DEFAULT_GROUP_COMPONENTS)
    return math.ceil(n_runs / per_job)


def format_bill(bill: Bill, params: dict) -> str:
    """The bill as text: per size class, per model, the runs over their limit and the
    runs not estimated. Totals count the estimated runs and searches; where some are not
    estimated they are lower bounds, marked >=, with how many are missing and why below.
    Under an hour of CPU and GPU time, in minutes."""
    lines = []
    ests = bill.estimates
    train = [e for e in ests if e.stage == "train"]
    tune = [e for e in ests if e.stage == "tune"]
    unit, per = _unit(bill)
    short = "h" if unit == "hours" else "min"
    missing_all = [e for e in ests if e.seconds is None]
    bound = ">= " if missing_all else ""

    def amount(seconds: float) -> str:
        return f"{seconds / per:,.1f}"

    lines.append(
        f"Suite {bill.suite}: {len(train):,} training runs"
        + (f", {len(tune)} searches first ({sum(e.trials for e in tune):,} trials)" if tune else "")
    )
    for device, machine in bill.machines.items():
        lines.append(f"  {device} runs estimated with the figures of: {machine or '(none)'}")
    lines.append("")

    def row(label, group):
        done = [e for e in group if e.seconds is not None]
        cpu_h = sum(e.total_seconds * e.cpus for e in done)
        gpu_h = sum(e.total_seconds * e.gpus for e in done)
        wall = max((e.seconds for e in done), default=0.0)
        return (label, len(group), len(group) - len(done), cpu_h, gpu_h, wall)

    header = (
        f"{'size class':<12}{'runs':>7}{'searches':>10}{'jobs':>7}{'GPU':>5}{'limit min':>11}"
        f"{'CPU-' + unit:>14}{'GPU-' + unit:>14}{'longest ' + short:>12}{'no estimate':>13}"
    )
    lines.append(header)
    totals = [0.0, 0.0]
    for size in params["resources"]["train"]["sizes"]:
        group = [e for e in ests if e.size_class == size]
        if not group:
            continue
        _, n, missing, cpu_h, gpu_h, wall = row(size, group)
        n_train = sum(1 for e in group if e.stage == "train")
        n_tune = n - n_train
        jobs = _jobs(bill, params, size, n_train) + n_tune
        limits = sorted({e.runtime_min for e in group})
        limit = "/".join(f"{v:g}" for v in limits)
        gpus = "/".join(str(v) for v in sorted({e.gpus for e in group}))
        mark = ">= " if missing else ""
        lines.append(
            f"{size:<12}{n_train:>7}{n_tune:>10}{jobs:>7}{gpus:>5}{limit:>11}"
            f"{mark + amount(cpu_h):>14}{mark + amount(gpu_h):>14}{wall / per:>12.2f}"
            f"{missing:>13}"
        )
        totals[0] += cpu_h
        totals[1] += gpu_h
    lines.append(f"{'total':<52}{bound + amount(totals[0]):>14}{bound + amount(totals[1]):>14}")
    if missing_all:
        n_runs = sum(1 for e in missing_all if e.stage == "train")
        n_searches = len(missing_all) - n_runs
        what = f"{n_runs:,} of {len(train):,} runs" + (
            f" and {n_searches} of {len(tune)} searches" if n_searches else ""
        )
        lines.append(f">=: lower bounds: {what} are not estimated and not counted (why: below)")
    lines.append("")
    lines.append(
        f"{'model':<22}{'stage':<7}{'runs':>6}{'epochs':>8}{'CPU-' + unit:>14}"
        f"{'GPU-' + unit:>14}{'longest ' + short:>12}{'no estimate':>13}"
    )
    by_model: dict[tuple[str, str], list[RunEstimate]] = defaultdict(list)
    for e in ests:
        by_model[(e.job.model, e.stage)].append(e)
    for (model, stage), group in by_model.items():
        _, n, missing, cpu_h, gpu_h, wall = row(model, group)
        epochs = sorted({e.epochs for e in group if e.seconds is not None})
        ep = f"{epochs[0]}" if len(epochs) == 1 else (f"{epochs[0]}-{epochs[-1]}" if epochs else "")
        n_label = n if stage == "train" else f"{sum(e.trials for e in group)}t"
        mark = ">= " if missing else ""
        lines.append(
            f"{model:<22}{stage:<7}{n_label:>6}{ep:>8}{mark + amount(cpu_h):>14}"
            f"{mark + amount(gpu_h):>14}{wall / per:>12.2f}{missing:>13}"
        )
    lines.append("")
    needs = needed_runtimes(bill)
    if needs:
        n_over = sum(len(n.runs) for n in needs)
        lines.append(
            f"Runs whose estimate exceeds their size class's runtime ({n_over}), and the "
            f"runtime (minutes) each model needs there:"
        )
        for need in needs:
            lines.append(
                f"  {need.model}, {need.size_class}: {need.limit_min:g} -> {need.minutes}: "
                f"{describe(need)}; on {_datasets(need.runs)}"
            )
        lines.append(
            f"As a params.yaml block to review and apply: ssmbench plan --suite {bill.suite} "
            "--resources > resources.yaml"
        )
    else:
        lines.append("No run's estimate exceeds its size class's runtime.")
    missing: dict[str, list[RunEstimate]] = defaultdict(list)
    for e in ests:
        if e.seconds is None:
            missing[e.problem or ""].append(e)
    if missing:
        lines.append("")
        n_runs = sum(1 for e in missing_all if e.stage == "train")
        searches = f", {len(missing_all) - n_runs} searches" if len(missing_all) > n_runs else ""
        lines.append(f"Not estimated ({n_runs:,} runs{searches}):")
        for problem, group in missing.items():
            models = sorted({e.job.model for e in group})
            what = "runs" if all(e.stage == "train" for e in group) else "runs and searches"
            lines.append(
                f"  {problem}: {len(group)} {what} of {', '.join(models)} on {_datasets(group)}"
            )
    lines.append("")
    lines.append(
        "Estimate: epochs x (batches x s/step + validation batches x s/forward) + test, "
        "s/step from the calibration table at B x MMac per row; "
        + ("epochs = max_epochs (early stopping ignored: an upper bound)."
           if all(e.epochs_from == "max_epochs" for e in ests)
           else "epochs = the median of the records where there are some, else max_epochs.")
    )  # fmt: skip
    return "\n".join(lines)


def _datasets(group: list[RunEstimate], shown: int = 3) -> str:
    """The datasets of ``group``: the first ``shown`` names, then how many more."""
    names = sorted({f"{e.job.benchmark}/{e.job.dataset}" for e in group})
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
