"""Which code reads each key of params.yaml that is not a run's setting: the table
tests/test_config.py holds against the JSON Schema (both ways) and against each reader's
source, so a key nothing reads, or one read but not in the schema, fails a test. A run's
settings need no entry: their reader is found in the source, where it reads
``settings["<key>"]``. Nothing reads this table at run time. A data source's rows are
listed where it declares its settings, its folder's params.schema.yaml
(``ssmbench.data.source_settings``), and added to the table from there.
"""

from __future__ import annotations

from ssmbench.data.source_registry import SOURCES

#: Who reads each key params.yaml may hold. A key is a dotted path; ``*`` stands for any
#: name of a map (a benchmark, a model, a suite, a size class) and, inside a pattern, for
#: anything (fnmatch). A reader is ``module:function`` (or ``module`` for a whole module)
#: or a workflow file. tests/test_config.py checks that these patterns and the schema's
#: keys are the same set, that each reader's source names its key, and that every key
#: the code reads from params.yaml is in the schema.
CONFIG_READERS: dict[str, tuple[str, ...]] = {
    "suite": ("ssmbench.config:suite_grid", "workflow/rules/common.smk"),
    "command_line": ("ssmbench.precedence:resolve_settings", "workflow/rules/common.smk"),
    "command_options": ("ssmbench.precedence",),
    "paths.raw": (
        "ssmbench.cli.data:cmd_fetch",
        "ssmbench.cli.data:cmd_prepare",
        "workflow/rules/data.smk",
    ),
    "paths.prepared": ("ssmbench.config:_spec", "workflow/rules/data.smk"),
    "paths.runs": (
        "ssmbench.cli.train:_record_path",
        "ssmbench.cli.check:cmd_grid",
        "ssmbench.cli.report:cmd_report",
        "ssmbench.cli.plan:_plan_check_records",
        "ssmbench.status",
        "workflow/rules/train.smk",
    ),
    "paths.logs": (
        "ssmbench.status",
        "workflow/rules/train.smk",
        "ssmbench.report.outputs:report_dirs",
    ),
    # a suite's report folders (cmd_report: also --published's)
    "paths.results": ("ssmbench.report.outputs:report_dirs", "ssmbench.cli.report:cmd_report"),
    "paths.figures": ("ssmbench.report.outputs:report_dirs",),
    "paths.checkpoints": ("ssmbench.cli.train:_train", "ssmbench.status"),
    "paths.settings": ("workflow/rules/common.smk",),
    # a block-read dataset's fold splits, drawn once by the split rule (split_dir_of)
    "paths.splits": ("ssmbench.config:split_path", "workflow/rules/split.smk"),
    # the user's copy of the UEA archive: put in place of each ${paths.uea_archive}
    "paths.uea_archive": ("ssmbench.params_file",),
    # A run's settings (protocol_values, batch_and_epoch_values, benchmark_values) are not
    # listed: their reader is the code that reads ``settings["<key>"]`` of a run's resolved
    # settings, which tests/test_config.py finds in the source. Listed are those read by
    # other names: how a run reads X (reading_plan.py), a source's nested settings, and
    # the keys a source takes without naming them.
    "*.reading.in_memory_max_gb": ("ssmbench.reading_plan:reading_settings",),
    "*.reading.block_mb": ("ssmbench.reading_plan:reading_settings",),
    "*.reading.buffer_blocks": ("ssmbench.reading_plan:reading_settings",),
    "benchmarks.*.dataset_overrides": ("ssmbench.precedence:settings_places",),
    "benchmarks.*.datasets": ("ssmbench.config:known_datasets",),
    # a model entry's other keys are its family's hyperparameters: validate_model_params
    # checks them against the family, build_model passes them to its constructor
    "models.*.family": ("ssmbench.models.registry:validate_model_params",),
    "models.*.*": ("ssmbench.models.registry:validate_model_params",),
    "models.*.dataset_params": ("ssmbench.precedence:resolve_model_params",),
    "models.*.dataset_settings": ("ssmbench.precedence:settings_places",),
    "suites.*.benchmarks.*": ("ssmbench.config:suite_grid",),
    "suites.*.models": ("ssmbench.config:suite_models",),
    "suites.*.variants.*": ("ssmbench.params_file:_expand_variants",),
    "suites.*.benchmark_models.*": ("ssmbench.config:suite_models",),
    "suites.*.folds": ("ssmbench.config:suite_grid",),
    "suites.*.overrides": ("ssmbench.precedence:settings_places",),
    "suites.*.benchmark_overrides.*": ("ssmbench.precedence:settings_places",),
    "suites.*.model_overrides.*": ("ssmbench.precedence:settings_places",),
    # resources: what each rule gives Snakemake as its resources (its SLURM executor turns
    # them into sbatch flags); a training job's come per run from ssmbench.resources
    "resources.prepare": ("workflow/rules/data.smk",),
    "resources.report": ("workflow/rules/report.smk",),
    "resources.*.threads": ("workflow/rules/common.smk",),
    "resources.*.cpus_per_task": ("workflow/rules/train.smk",),
    "resources.*.mem_mb": ("workflow/rules/train.smk",),
    "resources.*.runtime": ("workflow/rules/train.smk",),
    "resources.*.gpu": ("workflow/rules/train.smk",),
    "resources.*.gpu_model": ("workflow/rules/train.smk",),
    "resources.*.slurm_extra": ("workflow/rules/train.smk",),
    "resources.train.default": ("ssmbench.resources:TrainResources",),
    "resources.train.sizes.*.max_values": ("ssmbench.resources:TrainResources",),
    "resources.train.sizes.*.group": ("ssmbench.resources:TrainResources",),
    "resources.train.models.*.sizes": ("ssmbench.resources:TrainResources",),
    "report.convergence_thresholds": ("ssmbench.report.build",),
    "report.convergence_thresholds.val_loss": ("ssmbench.report.figures",),
    "report.convergence_thresholds.val_accuracy": ("ssmbench.report.figures",),
    "report.figure8_datasets": ("ssmbench.report.build",),
    "suites.*.description": ("ssmbench.cli.check:cmd_check",),
    # hyperparameter searches (ssmbench.search_space; the tune stage: ssmbench.train.tune)
    "paths.tuned": ("ssmbench.config:tuned_path", "workflow/rules/tune.smk"),
    "paths.tuning": ("ssmbench.cli.tune:_tune",),
    "paths.calibration": ("ssmbench.step_costs:tables", "benchmarks/calibrate.py"),
    "tuning.storage": ("ssmbench.cli.tune:_tune",),
    "tuning.stale_after_s": ("ssmbench.cli.tune:_tune",),
    "tuning.searches.*.benchmarks": ("ssmbench.search_space:search_of",),
    "tuning.searches.*.fold": ("ssmbench.search_space:search_of",),
    "tuning.searches.*.sampler_seed": ("ssmbench.search_space:search_of",),
    "tuning.searches.*.n_startup_trials": ("ssmbench.search_space:search_of",),
    "tuning.searches.*.settings": ("ssmbench.search_space:search_of",),
    "tuning.searches.*.n_trials": ("ssmbench.train.tune:run_search",),
    "tuning.searches.*.space": ("ssmbench.train.tune:run_search",),
    "suites.*.tuning": ("ssmbench.search_space:search_of",),
    "suites.*.tuning.n_trials": ("ssmbench.search_space:search_of",),
    "suites.*.tuning.settings": ("ssmbench.search_space:search_of",),
    "tuning.searches.*.space.*.type": ("ssmbench.search_space:suggest",),
    # low, high, log, step, choices: read by the entry's kind
    "tuning.searches.*.space.*.*": ("ssmbench.search_space:suggest",),
}


def _source_readers() -> dict[str, tuple[str, ...]]:
    """The sources' rows: ``benchmarks.*.<key>`` for each key whose readers a source's
    folder names (a nested key, or one a source takes without naming it), and
    ``benchmarks.*.dataset_overrides.*.<key>`` too where a dataset may set it for itself;
    a key two sources name lists both's readers."""
    rows: dict[str, tuple[str, ...]] = {}
    for source in SOURCES.values():
        settings = source.settings
        for key, readers in settings.readers.items():
            places = [f"benchmarks.*.{key}"]
            if key in settings.dataset_keys:
                places.append(f"benchmarks.*.dataset_overrides.*.{key}")
            for place in places:
                rows[place] = tuple(dict.fromkeys((*rows.get(place, ()), *readers)))
    return rows


CONFIG_READERS.update(_source_readers())
