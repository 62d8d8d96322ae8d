"""Whether each model of a suite can read its datasets' series, before any job runs.

Some families cannot be built for short series: Log-NCDE's log-signature window
(``stepsize``) and RFormer's window count (``n_windows``) must fit in the series length
(``models.registry.length_problem``). A run would fail at its first epoch, possibly hours
into a cluster grid; ``check_model_lengths`` names every such (model entry, dataset) when
``ssmbench check`` runs and when the workflow starts.

A dataset's length is the prepared ``meta.json``'s ``L`` where the dataset is prepared (the
series as the runs read them), else the catalog's (``ssmbench.data.catalog``: Bagnall et
al.'s length, the maximum for unequal-length sets; under the dataset's benchmark, then its
source). A dataset of unknown length is not checked here; its run fails with the same
message.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from ssmbench.config import ConfigError, job_spec, suite_grid

__all__ = ["check_model_lengths", "known_length", "length_problems"]


@cache
def _catalog_lengths() -> dict[tuple[str, str], int | None]:
    from ssmbench.data.catalog import catalog

    return {(entry.benchmark, entry.name): entry.L for entry in catalog()}


def known_length(params: dict, benchmark: str, dataset: str) -> int | None:
    """The series length runs on ``benchmark/dataset`` read, or None where not known."""
    meta = Path(params["paths"]["prepared"]) / benchmark / dataset / "meta.json"
    if meta.is_file():
        try:
            length = json.loads(meta.read_text()).get("L")
        except (OSError, ValueError):
            length = None  # a damaged meta.json is the prepare step's to report
        if isinstance(length, int):
            return length
    source = params["benchmarks"][benchmark].get("source", benchmark)
    lengths = _catalog_lengths()
    return lengths.get((benchmark, dataset), lengths.get((source, dataset)))


def length_problems(params: dict, suite: str | None = None) -> list[str]:
    """One line per (benchmark, dataset, model) of the suite whose model entry (with the
    dataset's ``dataset_params`` and any tuned values) cannot read that dataset's series."""
    from ssmbench.models.registry import length_problem

    problems, seen = [], set()
    for job in suite_grid(params, suite):
        key = (job.benchmark, job.dataset, job.model)
        if key in seen:
            continue
        seen.add(key)
        length = known_length(params, job.benchmark, job.dataset)
        if length is None:
            continue
        spec = job_spec(params, job, suite)
        problem = length_problem(job.model, spec["model_params"], length)
        if problem:
            where = f"models.{job.model}"
            if job.dataset in (params["models"][job.model].get("dataset_params") or {}):
                where += f".dataset_params.{job.dataset}"
            problems.append(f"{where} on {job.benchmark}/{job.dataset} (L = {length}): {problem}")
    return problems


def check_model_lengths(params: dict, suite: str | None = None) -> None:
    """Raises ConfigError listing every ``length_problems`` line of the suite."""
    problems = length_problems(params, suite)
    if problems:
        name = suite or params["suite"]
        raise ConfigError(
            f"suite {name!r} has models that cannot read their datasets' series:\n  "
            + "\n  ".join(problems)
            + "\n  Fix the entry (or its dataset_params) in params.yaml, or leave the model "
            "out of that benchmark (the suite's benchmark_models)."
        )
