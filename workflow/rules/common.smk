# The suite's grid, path helpers and input functions. At parse time check_params()
# cross-checks params.yaml (suites -> known datasets/models, model hyperparameters) and
# check_suite_sources() that every dataset can be had, so a bad config or a missing
# archive folder stops the workflow before any job runs.
import json
import shlex
from pathlib import Path

from ssmbench.data.sources import data_settings, derived_base
from ssmbench.config import (
    Job,
    benchmark_settings,
    check_params,
    check_suite_sources,
    job_spec,
    sync_settings_marker,
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


def settings_marker(wildcards):
    """Every run's extra input: a small file holding its settings, whose age says whether
    the run's record is current (see ssmbench.config.sync_settings_marker)."""
    job = job_of(wildcards)
    marker = Path(PATHS["logs"]) / "settings" / job.record_path("").with_suffix(".json")
    return str(sync_settings_marker(job.record_path(PATHS["runs"]), marker, job_spec(config, job)))


def data_recipe(wildcards):
    """The settings a dataset's content depends on (generator, drop rates, revision...):
    changing them re-prepares it (Snakemake reruns a job whose params changed)."""
    return data_settings(benchmark_settings(config, wildcards.benchmark, None, wildcards.dataset))


def prepare_inputs(wildcards):
    """A dataset's raw files; a derived dataset (uea_drop) also needs its base prepared."""
    inputs = [f"{PATHS['raw']}/{wildcards.benchmark}/{wildcards.dataset}/provenance.json"]
    settings = benchmark_settings(config, wildcards.benchmark, None, wildcards.dataset)
    if settings["source"] == "uea_drop":
        base_benchmark, base = derived_base(wildcards.dataset, settings)
        inputs.append(f"{PATHS['prepared']}/{base_benchmark}/{base}")
    return inputs


def train_resource(key):
    def get(wildcards, attempt):
        value = train_resources(config, wildcards.model).get(key, 0)
        # A retried job (--retries) asks for more time and memory each attempt.
        return value * attempt if key in ("mem_mb", "runtime") else value

    return get


def cli():
    """`ssmbench` with the suite this workflow runs (so --config suite=... reaches jobs)."""
    return f"ssmbench --suite {shlex.quote(SUITE)}"
