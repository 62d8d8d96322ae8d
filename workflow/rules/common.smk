# The suite's grid, path helpers and input functions. At parse time check_params()
# cross-checks params.yaml (suites -> known datasets/models, model hyperparameters) and
# check_suite_sources() that every dataset can be had, so a bad config or a missing
# archive folder stops the workflow before any job runs.
import json
import shlex
from pathlib import Path

from ssmbench.io import atomic_write_json
from ssmbench.config import (
    Job,
    check_params,
    check_suite_sources,
    job_spec,
    record_is_stale,
    suite_datasets,
    suite_grid,
    train_resources,
)

check_params(config)
check_suite_sources(config)

SUITE = config["suite"]
PATHS = config["paths"]
GRID = suite_grid(config)
DATASETS = suite_datasets(config)


wildcard_constraints:
    benchmark="[a-z0-9_]+",
    dataset="[A-Za-z0-9_-]+",
    model="[A-Za-z0-9_-]+",
    fold=r"\d+",


def record_paths():
    return [str(job.record_path(PATHS["runs"])) for job in GRID]


def prepared_dirs():
    return [f"{PATHS['prepared']}/{b}/{d}" for b, d in DATASETS]


def job_of(wildcards):
    return Job(wildcards.benchmark, wildcards.dataset, wildcards.model, int(wildcards.fold))


def train_spec(wildcards):
    """The resolved settings of one run. Snakemake tracks rule params, so editing the
    protocol, the model's hyperparameters or the suite's overrides reruns exactly the runs
    they change."""
    return json.dumps(job_spec(config, job_of(wildcards)), sort_keys=True)


def stale_record_marker(wildcards):
    """An extra input for a run whose existing record was made with other settings.

    Snakemake's own params trigger needs its metadata (.snakemake/), which a fresh clone
    whose records came from `dvc pull` lacks; the record itself keeps the settings it was
    run with. A stale record gets a marker file written now (newer than the record), so
    the mtime trigger reruns exactly that job. (A missing input would not do: Snakemake
    does not rerun a job with existing outputs for an input it could still make.)"""
    job = job_of(wildcards)
    record = job.record_path(PATHS["runs"])
    if not record.is_file():
        return []
    spec = job_spec(config, job)
    if not record_is_stale(record, spec):
        return []
    marker = Path(PATHS["logs"]) / "stale" / f"{record.relative_to(PATHS['runs'])}"
    atomic_write_json(marker, spec)
    return [str(marker)]


def train_resource(key):
    def get(wildcards, attempt):
        value = train_resources(config, wildcards.model).get(key, 0)
        # A retried job (--retries) asks for more time and memory each attempt.
        return value * attempt if key in ("mem_mb", "runtime") else value

    return get


def cli():
    """`ssmbench` with the suite this workflow runs (so --config suite=... reaches jobs)."""
    return f"ssmbench --suite {shlex.quote(SUITE)}"
