# The suite's grid, path helpers and input functions. At parse time check_params()
# cross-checks params.yaml (suites -> known datasets/models, model hyperparameters) and
# check_suite_sources() that every dataset can be had, so a bad config or a missing
# archive folder stops the workflow before any job runs.
import functools
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
    tracked_settings,
)
from ssmbench.data.catalog import catalog
from snakemake.logging import logger

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


@functools.cache
def spec_of(job):
    """job_spec once per job: train_spec and settings_marker both need it, and Snakemake
    evaluates params more than once per job (5,000+ jobs on the paper grid)."""
    return job_spec(config, job)


def train_spec(wildcards):
    """The resolved settings of one run. Snakemake tracks rule params, so editing the
    protocol, the model's hyperparameters or the suite's overrides reruns exactly the runs
    they change."""
    return json.dumps(tracked_settings(spec_of(job_of(wildcards))), sort_keys=True)


def settings_marker(wildcards):
    """Every run's extra input: a small file holding its settings, whose age says whether
    the run's record is current (see ssmbench.config.sync_settings_marker)."""
    job = job_of(wildcards)
    marker = Path(PATHS["logs"]) / "settings" / job.record_path("").with_suffix(".json")
    return str(sync_settings_marker(job.record_path(PATHS["runs"]), marker, spec_of(job)))


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


# --- Resources of a training job (params.yaml `resources.train`; README "On a cluster").
# Resolved per run from the dataset's size class (by the catalog's N x C x L, so no
# dataset file is opened) and the model: default -> sizes[class] -> models[model]
# -> models[model].sizes[class]. Retries ask for more: attempt x mem_mb and runtime.
TRAIN_RESOURCES = config["resources"]["train"]
SIZE_CLASSES = list(TRAIN_RESOURCES["sizes"])
CLASS_KEYS = ("max_values", "group")
CATALOG_VALUES = {
    (entry.benchmark, entry.name): (
        entry.N * entry.C * entry.L if None not in (entry.N, entry.C, entry.L) else None
    )
    for entry in catalog()
}


def check_train_resources():
    """What the schema cannot check: model names and size-class names that exist."""
    where = "params.yaml resources.train"
    for model, entry in TRAIN_RESOURCES.get("models", {}).items():
        if model not in config["models"]:
            raise ValueError(
                f"{where}.models.{model}: no such model in params.yaml `models` "
                f"(known: {', '.join(sorted(config['models']))}); fix or remove the entry"
            )
        for size in entry.get("sizes", {}):
            if size not in SIZE_CLASSES:
                raise ValueError(
                    f"{where}.models.{model}.sizes.{size}: no such size class "
                    f"(resources.train.sizes has {', '.join(SIZE_CLASSES)})"
                )
    for name in SIZE_CLASSES[:-1]:
        if "max_values" not in TRAIN_RESOURCES["sizes"][name]:
            raise ValueError(
                f"{where}.sizes.{name}: only the last size class may omit max_values "
                "(it takes every larger or unknown dataset)"
            )


check_train_resources()


def size_class(benchmark, dataset):
    """The size class of a dataset: the first whose max_values its catalog N x C x L does
    not exceed; a dataset of unknown size (or not in the catalog) takes the last class."""
    source = config["benchmarks"][benchmark].get("source", benchmark)
    values = CATALOG_VALUES.get((source, dataset))
    if values is not None:
        for name in SIZE_CLASSES:
            limit = TRAIN_RESOURCES["sizes"][name].get("max_values")
            if limit is None or values <= limit:
                return name
    return SIZE_CLASSES[-1]


def train_resources_of(benchmark, dataset, model):
    """The resolved resources of one run, before any retry."""
    size = size_class(benchmark, dataset)
    model_entry = TRAIN_RESOURCES.get("models", {}).get(model, {})
    resolved = dict(TRAIN_RESOURCES["default"])
    resolved.update(
        {k: v for k, v in TRAIN_RESOURCES["sizes"][size].items() if k not in CLASS_KEYS}
    )
    resolved.update({k: v for k, v in model_entry.items() if k != "sizes"})
    resolved.update(model_entry.get("sizes", {}).get(size, {}))
    resolved.setdefault("cpus_per_task", resolved["threads"])
    return resolved


def train_resource(key):
    """A `resources:` entry of rule train; mem_mb and runtime grow with each attempt."""

    def get(wildcards, attempt):
        value = train_resources_of(wildcards.benchmark, wildcards.dataset, wildcards.model)
        value = value.get(key, "" if key in ("gpu_model", "slurm_extra") else 0)
        return value * attempt if key in ("mem_mb", "runtime") else value

    return get


def train_threads(wildcards):
    return train_resources_of(wildcards.benchmark, wildcards.dataset, wildcards.model)[
        "threads"
    ]


def train_group(wildcards):
    """Runs of a size class with group: true share SLURM jobs (group train_<class>);
    `group-components: train_<class>=N` in the slurm profile puts N runs in one job.
    Other runs are not grouped. Ignored by local runs."""
    size = size_class(wildcards.benchmark, wildcards.dataset)
    if not TRAIN_RESOURCES["sizes"][size].get("group"):
        return None
    keep_going_inside_slurm_job()
    warn_group_layout(f"train_{size}")
    return f"train_{size}"


GROUP_LAYOUT_CHECKED = set()


def warn_group_layout(group):
    """A group job's runs run one after another (see keep_going_inside_slurm_job), but
    with --cores N > 1 Snakemake plans N of them side by side: N x the CPUs and memory,
    1/N of the summed runtime, so the group job hits its time limit. Warn once."""
    if group in GROUP_LAYOUT_CHECKED or workflow.remote_exec:
        return
    GROUP_LAYOUT_CHECKED.add(group)
    cores = workflow.resource_settings.cores
    cluster = workflow.resource_settings.nodes is not None
    components = workflow.group_settings.group_components.get(group, 1)
    if cluster and components > 1 and cores is not None and cores > 1:
        logger.warning(
            f"Warning: group {group} bundles {components} runs per SLURM job, which run one "
            f"after another, but --cores {cores} makes Snakemake ask for {cores} runs side by "
            f"side (their CPUs and memory added up, 1/{cores} of their runtimes). Use "
            "--cores 1 (as profiles/slurm/config.yaml does); each run's CPUs come from "
            "params.yaml resources.train either way."
        )


def keep_going_inside_slurm_job():
    """Inside a SLURM job, the plugin's job step runs a group job's runs one after another
    in a `snakemake --mode remote` process that gets no --keep-going from the submitting
    Snakemake (and reads no profile): one failing run would stop the runs after it. So that
    process is switched to keep going. Its execution settings exist only once it builds the
    DAG, which is when this is called (from train_group); the scheduler reads them later."""
    settings = workflow.execution_settings
    if workflow.remote_exec and settings is not None and not settings.keep_going:
        settings.keep_going = True


def train_entries_with(key):
    """Whether any entry of resources.train sets `key` (string resources are declared
    by rule train only then: an empty gpu_model or slurm_extra is not passed on)."""
    models = TRAIN_RESOURCES.get("models", {}).values()
    entries = [TRAIN_RESOURCES["default"], *TRAIN_RESOURCES["sizes"].values(), *models]
    entries += [size for entry in models for size in entry.get("sizes", {}).values()]
    return any(key in entry for entry in entries)


USES_GPU_MODEL = train_entries_with("gpu_model")
USES_SLURM_EXTRA = train_entries_with("slurm_extra")


def cli():
    """`ssmbench` with the suite this workflow runs (so --config suite=... reaches jobs)."""
    return f"ssmbench --suite {shlex.quote(SUITE)}"
