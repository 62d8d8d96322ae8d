"""The runtimes a suite's runs need, and the params.yaml block that asks for them.

A run whose estimate exceeds its size class's ``runtime`` (``plan.RunEstimate.over_limit``)
would be stopped by the scheduler at its limit, and resumed from its checkpoint by each
retry until the retries run out. For each (model, size class) with such runs (training
runs and search trials alike: a search's job asks for the runtime times its trials),
`needed_runtimes` gives the runtime the longest of them needs: its estimate plus
``MARGIN``, rounded up to ``STEP_MIN`` minutes. A run's resolved runtime depends on its
model and size class alone (``ssmbench.resources``), so one figure per pair covers them
all.

`resources_block` writes them as params.yaml's ``resources.train.models``: every entry
params.yaml has, with ``sizes.<class>.runtime`` set where a run needs more, and a header
that says what each figure covers (`ssmbench plan --resources`, docs/plan.md). Applied,
the same plan lists no run over its runtime.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from dataclasses import dataclass

import yaml

#: the runtime asked beyond the longest estimate: estimates are medians of a few steps
MARGIN = 1.25
#: runtimes are rounded up to this many minutes
STEP_MIN = 30
#: runs a SLURM job holds in a grouped size class, when the profile does not say
DEFAULT_GROUP_COMPONENTS = 10


@dataclass
class Need:
    """The runs of ``model`` in ``size_class`` over their runtime ``limit_min``, and the
    runtime (minutes) that fits the longest of them."""

    model: str
    size_class: str
    limit_min: float
    minutes: int
    runs: list  # plan.RunEstimate

    @property
    def worst(self):
        return max(self.runs, key=lambda e: e.seconds)


def runtime_for(seconds: float) -> int:
    """Minutes to ask for a run estimated at ``seconds``: + MARGIN, up to STEP_MIN."""
    return math.ceil(MARGIN * seconds / 60.0 / STEP_MIN) * STEP_MIN


def needed_runtimes(bill) -> list[Need]:
    """One `Need` per (model, size class) with runs over their runtime, in the bill's
    order of runs."""
    over: dict[tuple[str, str], list] = defaultdict(list)
    for e in bill.estimates:
        if e.over_limit:
            over[(e.job.model, e.size_class)].append(e)
    needs = []
    for (model, size_class), runs in over.items():
        worst = max(runs, key=lambda e: e.seconds)
        needs.append(Need(model, size_class, worst.runtime_min, runtime_for(worst.seconds), runs))
    return needs


def describe(need: Need) -> str:
    """What ``need`` covers: its runs and searches, and the longest with its dataset."""
    n_runs = sum(1 for e in need.runs if e.stage == "train")
    searches = [e for e in need.runs if e.stage == "tune"]
    parts = [f"{n_runs} runs"] if n_runs else []
    if searches:
        trials = sum(e.trials for e in searches)
        what = "search" if len(searches) == 1 else "searches"
        parts.append(f"{len(searches)} {what} ({trials} trials)")
    worst = need.worst
    return (
        f"{' and '.join(parts)}, up to ~{worst.seconds / 3600:.1f} h "
        f"({worst.job.benchmark}/{worst.job.dataset})"
    )


def resources_block(bill, params: dict, file: str = "resources.yaml") -> str:
    """params.yaml's ``resources.train.models`` with the runtimes of `needed_runtimes`
    set, as YAML under a header of comments (what each figure covers, how to apply it);
    ``file``: the name the header gives the block's file."""
    needs = needed_runtimes(bill)
    models = copy.deepcopy(params["resources"]["train"].get("models") or {})
    for need in needs:
        entry = models.setdefault(need.model, {})
        entry.setdefault("sizes", {}).setdefault(need.size_class, {})["runtime"] = need.minutes
    epochs = (
        "max_epochs (early stopping ignored: an upper bound)"
        if all(e.epochs_from == "max_epochs" for e in bill.estimates)
        else "the median of the suite's records where there are some, else max_epochs"
    )
    machines = ", ".join(f"{d} runs with {m}'s figures" for d, m in bill.machines.items() if m)
    lines = [
        f"# resources.train.models for suite {bill.suite}: `ssmbench plan --suite "
        f"{bill.suite} --resources > {file}`",
        f"# estimated {machines}; epochs: {epochs}.",
    ]
    if needs:
        lines.append(
            f"# params.yaml's entries, and the runtime (minutes) each (model, size class) "
            f"needs: its longest run's estimate + {round(100 * (MARGIN - 1))} %, rounded up "
            f"to {STEP_MIN} minutes:"
        )
        lines += [
            f"#   {n.model}, {n.size_class}: {n.limit_min:g} -> {n.minutes} ({describe(n)})"
            for n in needs
        ]
    else:
        lines.append("# No run's estimate exceeds its runtime: params.yaml's entries as they are.")
    sizes = params["resources"]["train"]["sizes"]
    for size_class in dict.fromkeys(n.size_class for n in needs):
        if not sizes[size_class].get("group"):
            continue
        per_job = bill.group_components.get(f"train_{size_class}", DEFAULT_GROUP_COMPONENTS)
        longest = max(n.minutes for n in needs if n.size_class == size_class)
        lines.append(
            f"# {size_class} puts {per_job} runs in a SLURM job, which asks for the sum of their "
            f"runtimes (up to {per_job} x {longest} min); group-components: "
            f"train_{size_class}=1 in the SLURM profile gives each run a job of its own."
        )
    lines += [
        "# Review, then apply it for one invocation (Snakemake merges it over params.yaml):",
        f"#   snakemake --profile slurm --config suite={bill.suite} --configfile {file}",
        "# or for good: put its `models:` in place of params.yaml's resources.train.models.",
        "# A runtime above your partition's time limit is never scheduled: give such runs a",
        "# GPU (models.<model>.sizes.<class>.gpu: 1) or fewer epochs, and plan again.",
    ]
    body = yaml.safe_dump(
        {"resources": {"train": {"models": models}}}, sort_keys=False, default_flow_style=None
    )
    return "\n".join(lines) + "\n" + body
