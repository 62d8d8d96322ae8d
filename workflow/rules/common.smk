# The suite's grid, path helpers and input functions, every function the rule files use
# (they hold rules only): wiring only, the decisions are the ssmbench package's (what is
# stale: ssmbench.staleness; a run's resources: ssmbench.resources). At parse time
# check_params() cross-checks params.yaml (suites -> known datasets/models, model
# hyperparameters), TrainResources() resources.train, and check_suite_sources() that every
# dataset can be had and check_model_lengths() that every model can read its datasets'
# series, so a bad config or a missing archive folder stops the workflow before any job
# runs.
import functools
import json
import shlex
import sys
from pathlib import Path

from ssmbench.data.names import BENCHMARK_PATTERN, NAME_PATTERN
from ssmbench.data.sources import DERIVED_SOURCES, data_settings, derived_base, source_files
from ssmbench.config import (
    ConfigError,
    Job,
    benchmark_settings,
    check_params,
    check_suite_sources,
    job_spec,
    split_recipe,
    suite_datasets,
    suite_grid,
    suite_searches,
    tuned_path,
    unknown_name,
    untuned_spec,
)
from ssmbench.io import atomic_write_json
from ssmbench.search_space import SEARCHES_INDEX, search_digest, search_of, tuned_is_current
from ssmbench.report.outputs import figure_captions, output_paths, report_dirs
from ssmbench.resources import TrainResources
from ssmbench.series_lengths import check_model_lengths
from ssmbench.snakemake_internals import (
    group_components,
    keep_going_in_group_job,
    runs_group_job,
    submits_to_cluster,
)
from ssmbench.staleness import (
    KEEP_BOTH,
    other_suites_record,
    search_marker_path,
    settings_marker_path,
    sync_marker,
    sync_settings_marker,
)
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake_interface_executor_plugins.settings import DeploymentMethod

check_params(config)
check_suite_sources(config)
check_model_lengths(config)

SUITE = config["suite"]
PATHS = config["paths"]
GRID = suite_grid(config)
DATASETS = suite_datasets(config)
TRAIN_RESOURCES = TrainResources(config)
SEARCHES = suite_searches(config)
# the suite's report: results/ and figures/ for the suite params.yaml names (PARAMS_SUITE,
# Snakefile), results/suites/<suite>/ for any other
REPORT_DIRS = report_dirs(PATHS, SUITE, PARAMS_SUITE)


# the name patterns of ssmbench.data.names: a wildcard is one plain path component
wildcard_constraints:
    benchmark=BENCHMARK_PATTERN,
    dataset=NAME_PATTERN,
    model=NAME_PATTERN,
    fold=r"\d+",


def record_paths():
    return [str(job.record_path(PATHS["runs"])) for job in GRID]


def tuned_paths():
    return [str(tuned_path(config, job)) for job in SEARCHES]


def prepared_dirs():
    return [f"{PATHS['prepared']}/{b}/{d}" for b, d in DATASETS]


def report_files(kind):
    """The report's files of one kind, for the suite's benchmarks, in the suite's report
    folders (named by ssmbench.report.outputs)."""
    benchmarks = sorted({job.benchmark for job in GRID})
    return output_paths(REPORT_DIRS.results, REPORT_DIRS.figures, benchmarks, kind)


def report_figures():
    """{figure: report(its PNG and PDF, caption)}: each figure of the suite's report with
    its own caption (workflow/report/<caption>.rst) in `snakemake --report`."""
    benchmarks = sorted({job.benchmark for job in GRID})
    return {
        key: report(files, caption=f"../report/{caption}.rst", category="Figures")
        for key, (files, caption) in figure_captions(
            REPORT_DIRS.results, REPORT_DIRS.figures, benchmarks
        ).items()
    }


def known(wildcards, model=None):
    """A target path (`snakemake results/runs/...`) names what params.yaml defines: its
    benchmark, dataset (and model) are checked when the DAG is built, before any job runs."""
    unknown = unknown_name(config, wildcards.benchmark, wildcards.dataset, model)
    if unknown is not None:
        kind, why = unknown
        raise ConfigError(f"{kind} wildcard of a target: {why}")


def job_of(wildcards):
    known(wildcards, wildcards.model)
    return Job(wildcards.benchmark, wildcards.dataset, wildcards.model, int(wildcards.fold))


@functools.cache
def spec_of(job):
    """job_spec once per job: Snakemake evaluates input functions more than once per job
    (5,000+ jobs on the paper grid)."""
    return job_spec(config, job)


# A finished record is never replaced by a run of other settings for another suite
# (ssmbench.staleness.other_suites_record): refused before any job runs, unless
# --config replace=true (then each train job gets --replace).
if workflow.is_main_process and not REPLACE_RECORDS:
    _others = [
        (job.model, problem)
        for job in GRID
        if (problem := other_suites_record(job.record_path(PATHS["runs"]), spec_of(job), SUITE))
    ]
    if _others:
        _model = _others[0][0]
        _shown = [problem for _, problem in _others[:5]]
        _lines = [
            f"suite {SUITE!r} would replace {len(_others)} finished record(s) of another "
            "suite made with other settings:",
            *(f"  {problem}" for problem in _shown),
            *([f"  ... {len(_others) - 5} more"] if len(_others) > 5 else []),
            KEEP_BOTH.format(model=_model, replace="snakemake --config replace=true"),
        ]
        raise ConfigError("\n".join(_lines))


def settings_marker(wildcards):
    """Every run's extra input: a small file holding its settings, under paths.settings
    (not versioned: neither git nor DVC tracks it). It exists because Snakemake's own
    params trigger needs its metadata (.snakemake/), which a fresh clone whose records
    came from `dvc pull` lacks: the record itself says what it was made with, and the
    marker's age carries ssmbench.staleness.record_state to Snakemake's mtime trigger
    (newer than the record: rerun; see sync_settings_marker)."""
    job = job_of(wildcards)
    marker = settings_marker_path(PATHS["settings"], job.record_path(""))
    return str(sync_settings_marker(job.record_path(PATHS["runs"]), marker, spec_of(job)))


# --- A block-read dataset's fold splits (rule split; ssmbench.config.split_dir_of)


def split_input(wildcards):
    """A run's fold split, drawn once by rule split for all its models, where its dataset
    is read in blocks (the spec's split_dir, which `ssmbench train` reads); nothing for
    every other run."""
    split_dir = spec_of(job_of(wildcards)).get("split_dir")
    return [] if split_dir is None else [split_dir]


def search_split_input(wildcards):
    """A search's fold split (its trials read it as a run of that fold does), as
    split_input."""
    _, job = search_of_target(wildcards)
    split_dir = untuned_spec(config, job).get("split_dir")
    return [] if split_dir is None else [split_dir]


def split_settings_of(wildcards):
    """What a fold's split is drawn with (ssmbench.config.split_recipe), as rule split's
    params: changing it draws the split again (Snakemake reruns a job whose params
    changed), and a drawn split's training jobs then run (`ssmbench train` keeps a record
    that is current)."""
    known(wildcards)
    recipe = split_recipe(config, wildcards.benchmark, wildcards.dataset, int(wildcards.fold))
    return json.dumps(recipe, sort_keys=True)


# --- Hyperparameter searches (params.yaml `tuning`; ssmbench.search_space)


def tuned_input(wildcards):
    """A tuned run's tuned file (written by rule tune); nothing for other runs."""
    if search_of(config, wildcards.benchmark, wildcards.model) is None:
        return []
    return [str(tuned_path(config, job_of(wildcards)))]


def search_of_target(wildcards):
    known(wildcards, wildcards.model)
    search = search_of(config, wildcards.benchmark, wildcards.model)
    if search is None:
        raise ConfigError(
            f"{wildcards.model} is not tuned on benchmark {wildcards.benchmark}: no search "
            "in params.yaml tuning.searches names it"
        )
    job = Job(wildcards.benchmark, wildcards.dataset, wildcards.model, int(search["fold"]))
    return search, job


def write_searches_index(index, log, suite, tuned):
    """The tuned rule's job: the index of the suite's tuned files (paths relative to
    paths.tuned), and a line saying so in its log."""
    atomic_write_json(index, {"suite": suite, "tuned": list(tuned)})
    with open(log, "w") as log_file:
        print(f"{index}: {len(tuned)} tuned file(s) of suite {suite}", file=log_file)


def search_marker(wildcards):
    """A search's extra input, like a run's settings marker: it holds the search and is
    dated after the tuned file when that file did not come from this search (budget and
    base run included: ssmbench.search_space.tuned_is_current), so the search reruns."""
    search, job = search_of_target(wildcards)
    base = untuned_spec(config, job)
    tuned = tuned_path(config, job)
    marker = search_marker_path(PATHS["settings"], job.benchmark, job.dataset, job.model)
    text = json.dumps({"search": search, "digest": search_digest(search, base)},
                      sort_keys=True, indent=1) + "\n"  # fmt: skip
    return str(sync_marker(tuned, marker, text, lambda: tuned_is_current(tuned, search, base)))


# --- Fetching and preparing a dataset (workflow/rules/data.smk)


def fetch_inputs(wildcards):
    """The user's files a fetch copies (archive_dir's, local_dir's; none for a download or
    a generated dataset): one newer than the raw copy's provenance.json (edited in place)
    fetches again, and the fetch compares contents (ssmbench.data.sources.source_files)."""
    known(wildcards)
    settings = benchmark_settings(config, wildcards.benchmark, None, wildcards.dataset)
    return [str(p) for p in source_files(wildcards.dataset, settings)]


def data_recipe(wildcards):
    """The settings a dataset's content depends on (generator, drop rates, revision...):
    changing them re-prepares it (Snakemake reruns a job whose params changed)."""
    known(wildcards)
    settings = benchmark_settings(config, wildcards.benchmark, None, wildcards.dataset)
    return data_settings(settings, wildcards.dataset)


def prepare_inputs(wildcards):
    """A dataset's raw files; a derived dataset (uea_drop, uea6) also needs its base
    prepared."""
    known(wildcards)
    inputs = [f"{PATHS['raw']}/{wildcards.benchmark}/{wildcards.dataset}/provenance.json"]
    settings = benchmark_settings(config, wildcards.benchmark, None, wildcards.dataset)
    if settings["source"] in DERIVED_SOURCES:
        base_benchmark, base = derived_base(wildcards.dataset, settings)
        inputs.append(f"{PATHS['prepared']}/{base_benchmark}/{base}")
    return inputs


# --- Resources of a training job (params.yaml `resources.train`; docs/cluster.md),
# resolved per run by ssmbench.resources.TrainResources.


def train_resource(key):
    """A `resources:` entry of rule train; mem_mb and runtime grow with each attempt."""

    def get(wildcards, attempt):
        return TRAIN_RESOURCES.value(
            key, wildcards.benchmark, wildcards.dataset, wildcards.model, attempt
        )

    return get


def tune_resource(key):
    """A `resources:` entry of the tune rule, the training job's with its runtime times the
    search's budget (a killed or timed-out search resumes on its next attempt)."""

    def get(wildcards, attempt):
        value = TRAIN_RESOURCES.value(
            key, wildcards.benchmark, wildcards.dataset, wildcards.model, attempt
        )
        if key == "runtime" and value is not None:
            return value * int(search_of_target(wildcards)[0]["n_trials"])
        return value

    return get


def tune_threads(wildcards):
    return train_threads(wildcards)


def train_threads(wildcards):
    return TRAIN_RESOURCES.value("threads", wildcards.benchmark, wildcards.dataset, wildcards.model)


def run_priority(wildcards):
    """Larger datasets first (ssmbench.resources.TrainResources.priority)."""
    return TRAIN_RESOURCES.priority(wildcards.benchmark, wildcards.dataset)


def train_group(wildcards):
    """Runs of a size class with group: true share SLURM jobs (group train_<class>);
    `group-components: train_<class>=N` in the slurm profile puts N runs in one job.
    Other runs are not grouped. Snakemake evaluates a rule's group only where an executor
    submits jobs, and in a dry run: a local run ignores it."""
    group = TRAIN_RESOURCES.group(wildcards.benchmark, wildcards.dataset)
    if group is not None:
        # the group job's process goes on past a failing run (ssmbench.snakemake_internals)
        keep_going_in_group_job(workflow)
        warn_group_layout(group)
    return group


GROUP_LAYOUT_CHECKED = set()


def warn_group_layout(group):
    """A group job's runs run one after another (the SLURM plugin's job step), but with
    --cores N > 1 Snakemake plans N of them side by side: N x the CPUs and memory, 1/N of
    the summed runtime, so the group job hits its time limit. Warn once."""
    if group in GROUP_LAYOUT_CHECKED or runs_group_job(workflow):
        return
    GROUP_LAYOUT_CHECKED.add(group)
    components = group_components(workflow, group)
    if not submits_to_cluster(workflow) or components < 2:
        return
    try:
        cores = workflow.cores
    except WorkflowError:  # no --cores: Snakemake caps no job's cores, nothing is side by side
        return
    if cores > 1:
        logger.warning(
            f"Warning: group {group} bundles {components} runs per SLURM job, which run one "
            f"after another, but --cores {cores} makes Snakemake ask for {cores} runs side by "
            f"side (their CPUs and memory added up, 1/{cores} of their runtimes). Use "
            "--cores 1 (as profiles/slurm/config.yaml does); each run's CPUs come from "
            "params.yaml resources.train either way."
        )


def stop_summary():
    """One line for Snakefile's onerror: the suite's runs counted by state (`ssmbench
    status`'s summary), so that a stop is read by what it left, not by Snakemake's message."""
    from ssmbench.status import suite_status, summary_line

    try:
        counts = summary_line(SUITE, suite_status(config, SUITE))
    except Exception as exc:  # the count is a courtesy: never hide Snakemake's own error
        return f"ssmbench: `ssmbench status` lists each run's state ({exc})"
    return (
        f"ssmbench: {counts} (`ssmbench status` lists each): the finished runs' records are "
        "kept and the next run of the workflow trains the rest. Snakemake's \"At least one "
        'job did not complete successfully" below follows a failed job, and also a SIGTERM '
        "to Snakemake, which starts no new job and lets the running ones finish."
    )


USES_GPU_MODEL = TRAIN_RESOURCES.sets("gpu_model")
USES_SLURM_EXTRA = TRAIN_RESOURCES.sets("slurm_extra")


# With --use-conda (or --software-deployment-method conda) each rule runs in the conda
# environment of its `conda:` directive (workflow/envs/ssmbench.yaml), whose `python` has
# this package installed; otherwise in the Python that runs Snakemake.
USES_CONDA = workflow.deployment_settings is not None and (
    DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
)


def cli(settings: bool = False):
    """The `ssmbench` of the Python that runs Snakemake (no `ssmbench` on PATH needed; a
    SLURM job step runs the same path on a shared filesystem), or of the rule's conda
    environment with --use-conda (USES_CONDA), with the suite this
    workflow runs (so --config suite=... reaches jobs) and, for the rules whose result
    depends on the training settings (``settings``: tune, split, train), the settings of
    the command line (--config max_epochs=... as ``--set``). The data and report rules
    do not take them, so a command-line setting does not rerun a fetch or a prepare."""
    sets = "".join(
        f" --set {shlex.quote(f'{key}={json.dumps(value)}')}"
        for key, value in ((config.get("command_line") or {}) if settings else {}).items()
    )
    python = "python" if USES_CONDA else shlex.quote(sys.executable)
    return f"{python} -m ssmbench --suite {shlex.quote(SUITE)}{sets}"
