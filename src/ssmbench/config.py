"""params.yaml: loading, validation and the suite grid.

params.yaml is the single source of truth. `load_params` reads it and checks it against
the JSON Schema (``ssmbench.params_file``: a syntax error, a key given twice or an empty
file is named with its line; the schema checks its shape and the type and range of every
value, a suite's overrides included); `check_params` then checks what a schema cannot:
that every suite names known benchmarks, datasets and models, that each model's
hyperparameters fit its family, and that batch_min <= batch_max. All run when Snakemake
parses the workflow, so a bad config fails before any job runs, with the words
`ssmbench check` uses.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssmbench.data.names import name_problem
from ssmbench.data.validation_split import split_settings
from ssmbench.params_file import ConfigError, read_params_and_files, validate_schema
from ssmbench.precedence import (
    BATCH_AND_EPOCH_KEYS,
    COMMAND_OPTIONS,
    PROTOCOL_KEYS,
    TRAINING_KEYS,
    Tuned,
    merge_into,
    resolve,
    resolve_model_params,
    resolve_settings,
)
from ssmbench.setting_defaults import source_defaults
from ssmbench.staleness import training_code_digest


@dataclass(frozen=True, order=True)
class Job:
    """One run: one model on one fold of one dataset."""

    benchmark: str
    dataset: str
    model: str
    fold: int

    def __post_init__(self):
        # Each name is a path component of the run's files under every root: one that is
        # not a plain name (``..``, ``/``, absolute, empty) never makes a Job.
        problems = [
            problem
            for kind in ("benchmark", "dataset", "model")
            if (problem := name_problem(kind, getattr(self, kind))) is not None
        ]
        if isinstance(self.fold, bool) or not isinstance(self.fold, int) or self.fold < 0:
            problems.append(f"fold {self.fold!r} is not a fold number (an integer >= 0)")
        if problems:
            raise ConfigError(f"not a run: {'; '.join(problems)}")

    def record_path(self, runs_dir: str | Path) -> Path:
        return Path(runs_dir) / self.benchmark / self.dataset / self.model / f"fold{self.fold}.json"


def load_params(
    path: str | Path = "params.yaml",
    suite: str | None = None,
    command_line: dict | None = None,
    command_options: dict | None = None,
) -> dict:
    """Read, schema-validate and cross-check params.yaml; `suite` overrides `params["suite"]`,
    `command_line` settings go over every place and `command_options` (a command's own
    options: ``train --max-epochs``) over those (``ssmbench.precedence``)."""
    params, files = read_params_and_files(path)
    if suite is not None:
        params["suite"] = suite
    if command_line:
        params["command_line"] = dict(command_line)
        files = {**files, "command_line": "the command line: --set, or snakemake --config"}
    if command_options:
        params[COMMAND_OPTIONS] = dict(command_options)
        files = {**files, COMMAND_OPTIONS: "the command line: the command's own options"}
    validate_schema(params, source=str(path), files=files)
    check_params(params, source=str(path))
    return params


def known_datasets(params: dict, benchmark: str) -> list[str]:
    return list(params["benchmarks"][benchmark].get("datasets", []))


def unknown_name(
    params: dict,
    benchmark: str,
    dataset: str,
    model: str | None = None,
    source: str = "params.yaml",
) -> tuple[str, str] | None:
    """The first of benchmark, dataset (and model) that params.yaml does not define, as
    (kind, why); None when it defines all. A run, a fetch or a prepare of a name it does
    not define is refused before it starts."""
    benchmarks = params["benchmarks"]
    if benchmark not in benchmarks:
        return "benchmark", (
            f"{benchmark!r} is not a benchmark of {source} (benchmarks: {', '.join(benchmarks)})"
        )
    datasets = known_datasets(params, benchmark)
    if dataset not in datasets:
        return "dataset", (
            f"{dataset!r} is not a dataset of benchmark {benchmark!r} in {source} "
            f"(benchmarks.{benchmark}.datasets: {', '.join(datasets)})"
        )
    if model is not None and model not in params["models"]:
        return "model", (
            f"{model!r} is not a model of {source} (models: {', '.join(params['models'])})"
        )
    return None


def name_problems(params: dict) -> list[str]:
    """Every name params.yaml gives that becomes a path component (benchmarks, datasets,
    models, suites, derived_from) and is not a plain name (ssmbench.data.names), one line
    each, naming its dotted path."""
    found: list[tuple[str, str, object]] = [("suite", "suite", params.get("suite"))]
    for bname, bench in (params.get("benchmarks") or {}).items():
        found.append(("benchmarks", "benchmark", bname))
        if isinstance(bench, dict):
            if "derived_from" in bench:
                found.append(
                    (f"benchmarks.{bname}.derived_from", "benchmark", bench["derived_from"])
                )
            found += [
                (f"benchmarks.{bname}.datasets", "dataset", d) for d in bench.get("datasets") or []
            ]
            found += [
                (f"benchmarks.{bname}.dataset_overrides", "dataset", d)
                for d in bench.get("dataset_overrides") or {}
            ]
    found += [("models", "model", m) for m in params.get("models") or {}]
    for model, entry in (params.get("models") or {}).items():
        if isinstance(entry, dict):
            found += [
                (f"models.{model}.dataset_params", "dataset", d)
                for d in entry.get("dataset_params") or {}
            ]
    for sname, suite in (params.get("suites") or {}).items():
        found.append(("suites", "suite", sname))
        if not isinstance(suite, dict):
            continue
        for bench, datasets in (suite.get("benchmarks") or {}).items():
            found.append((f"suites.{sname}.benchmarks", "benchmark", bench))
            found += [(f"suites.{sname}.benchmarks.{bench}", "dataset", d) for d in datasets or []]
        found += [(f"suites.{sname}.models", "model", m) for m in suite.get("models") or []]
        for bench, models in (suite.get("benchmark_models") or {}).items():
            found.append((f"suites.{sname}.benchmark_models", "benchmark", bench))
            found += [
                (f"suites.{sname}.benchmark_models.{bench}", "model", m) for m in models or []
            ]
        found += [
            (f"suites.{sname}.model_overrides", "model", m)
            for m in suite.get("model_overrides") or {}
        ]
        found += [
            (f"suites.{sname}.benchmark_overrides", "benchmark", b)
            for b in suite.get("benchmark_overrides") or {}
        ]
    return [
        f"{where}: {problem}"
        for where, kind, value in found
        if (problem := name_problem(kind, value)) is not None
    ]


def check_params(params: dict, source: str = "params.yaml") -> None:
    """Cross-references the schema cannot express. Raises ConfigError listing every problem."""
    from ssmbench.data.source_registry import SOURCES
    from ssmbench.models import validate_model_params
    from ssmbench.models.imported import entry_problems
    from ssmbench.path_roots import system_root_problems

    problems: list[str] = name_problems(params)
    problems += system_root_problems(params)
    suites = params.get("suites", {})
    if params.get("suite") not in suites:
        problems.append(
            f"suite: {params.get('suite')!r} is not a suite defined under `suites:` "
            f"(known: {', '.join(sorted(suites))})"
        )
    known = {d for b in params.get("benchmarks", {}).values() for d in b.get("datasets") or []}
    for name, entry in params.get("models", {}).items():
        own = (entry.get("dataset_params") or {}) if isinstance(entry, dict) else {}
        for dataset in [None, *own]:
            where = f"models.{name}" + (f".dataset_params.{dataset}" if dataset else "")
            if dataset is not None and dataset not in known:
                problems.append(f"{where}: {dataset!r} is not a dataset of any benchmark")
                continue
            try:
                resolved = model_entry(params, name, dataset)
                own_family = entry_problems(name, resolved)  # package.module:Class
                if own_family:
                    problems += [f"{where}: {problem}" for problem in own_family]
                    break
                validate_model_params(name, resolved)
            except ValueError as exc:
                problems.append(f"{where}: {exc}")
        for dataset, settings in ((entry.get("dataset_settings") or {}) if isinstance(entry, dict)
                                  else {}).items():  # fmt: skip
            where = f"models.{name}.dataset_settings.{dataset}"
            if dataset not in known:
                problems.append(f"{where}: {dataset!r} is not a dataset of any benchmark")
            for key in settings or {}:
                if key not in TRAINING_KEYS:
                    problems.append(f"{where}.{key}: not a training setting (allowed: "
                                    f"{', '.join(sorted(TRAINING_KEYS))})")  # fmt: skip
    for bname, bench_params in params["benchmarks"].items():
        for ds in bench_params.get("dataset_overrides") or {}:
            if ds not in bench_params["datasets"]:
                problems.append(
                    f"benchmarks.{bname}.dataset_overrides: {ds!r} is not one of "
                    f"benchmarks.{bname}.datasets"
                )
    for sname, suite in suites.items():
        for bench, datasets in suite.get("benchmarks", {}).items():
            if bench not in params["benchmarks"]:
                problems.append(
                    f"suites.{sname}.benchmarks: unknown benchmark {bench!r} "
                    f"(known: {', '.join(sorted(params['benchmarks']))})"
                )
                continue
            known = set(known_datasets(params, bench))
            for ds in datasets:
                if ds not in known:
                    problems.append(
                        f"suites.{sname}.benchmarks.{bench}: unknown dataset {ds!r}; add it to "
                        f"benchmarks.{bench}.datasets or fix the spelling"
                    )
        named = [("models", m) for m in suite.get("models", [])]
        for bench, models in (suite.get("benchmark_models") or {}).items():
            if bench not in (suite.get("benchmarks") or {}):
                problems.append(
                    f"suites.{sname}.benchmark_models: {bench!r} is not a benchmark of "
                    f"this suite (its benchmarks: {', '.join(suite.get('benchmarks') or {})})"
                )
            named += [(f"benchmark_models.{bench}", m) for m in models]
        for where, model in named:
            if model not in params.get("models", {}):
                problems.append(
                    f"suites.{sname}.{where}: unknown model {model!r} "
                    f"(known: {', '.join(sorted(params.get('models', {})))})"
                )
        allowed = PROTOCOL_KEYS | {
            key for bench in params["benchmarks"].values() for key in bench
        } - {"datasets", "dataset_overrides"}
        for key in suite.get("overrides", {}) or {}:
            if key not in allowed:
                problems.append(
                    f"suites.{sname}.overrides.{key}: unknown key: {key!r} is neither a protocol "
                    f"key nor a benchmark setting (allowed: {', '.join(sorted(allowed))})"
                )
        for bench, overrides in (suite.get("benchmark_overrides") or {}).items():
            if bench not in (suite.get("benchmarks") or {}):
                problems.append(
                    f"suites.{sname}.benchmark_overrides: {bench!r} is not a benchmark of "
                    f"this suite (its benchmarks: {', '.join(suite.get('benchmarks') or {})})"
                )
                continue
            # and what the benchmark's source reads, set in params.yaml or not (archive_dir)
            source = SOURCES.get(params["benchmarks"].get(bench, {}).get("source"))
            own = (
                PROTOCOL_KEYS
                | BATCH_AND_EPOCH_KEYS
                | set(params["benchmarks"].get(bench, {}))
                | set(source.settings.keys if source is not None else ())
            ) - {"datasets", "dataset_overrides", "source"}
            for key in overrides or {}:
                if key not in own:
                    problems.append(
                        f"suites.{sname}.benchmark_overrides.{bench}.{key}: unknown key: {key!r} "
                        f"is not a setting of benchmark {bench!r} (allowed: "
                        f"{', '.join(sorted(own))})"
                    )
        for model, overrides in (suite.get("model_overrides") or {}).items():
            if model not in {m for b in suite.get("benchmarks") or {}
                             for m in suite_models(params, b, sname)}:  # fmt: skip
                problems.append(
                    f"suites.{sname}.model_overrides: {model!r} is not a model of this suite"
                )
            for key in overrides or {}:
                if key not in PROTOCOL_KEYS | BATCH_AND_EPOCH_KEYS:
                    problems.append(
                        f"suites.{sname}.model_overrides.{model}.{key}: unknown key: {key!r} "
                        f"is not a training setting (allowed: "
                        f"{', '.join(sorted(PROTOCOL_KEYS | BATCH_AND_EPOCH_KEYS))})"
                    )
    problems += _batch_range_problems(params)
    problems += _recipe_problems(params)
    problems += tuning_problems(params)
    if problems:
        raise ConfigError(f"{source} has {len(problems)} problem(s):\n  " + "\n  ".join(problems))


def _batch_range_problems(params: dict) -> list[str]:
    """batch_min <= batch_max, in each benchmark and in each suite's merged settings of
    it (the schema bounds each value alone, not the pair)."""
    problems = []
    for bname, bench in params["benchmarks"].items():
        if bench.get("batch_min", 1) > bench.get("batch_max", bench.get("batch_min", 1)):
            problems.append(
                f"benchmarks.{bname}: batch_min {bench['batch_min']} is above batch_max "
                f"{bench['batch_max']}"
            )
    for sname, suite in params.get("suites", {}).items():
        for bname in suite.get("benchmarks", {}):
            if bname not in params["benchmarks"]:
                continue  # named by check_params
            own = params["benchmarks"][bname]
            settings = benchmark_settings(params, bname, sname)
            low, high = settings.get("batch_min"), settings.get("batch_max")
            if low is None or high is None or low <= high:
                continue
            if own.get("batch_min") == low and own.get("batch_max") == high:
                continue  # the benchmark's own pair, named above
            problems.append(
                f"suites.{sname}: benchmark {bname}'s batch_min {low} is above its batch_max "
                f"{high} after the suite's overrides"
            )
    return problems


def _recipe_problems(params: dict) -> list[str]:
    """Each dataset of a benchmark whose source checks its settings (``check_recipe`` in
    the source table: a Physiome-ODE model its mode can have, a Fading Flash generator's
    keys, a UEA-6 split, a drop-rate variant's name) passes that check with the
    benchmark's settings and its own overrides; a suite's overrides are checked with its
    datasets (``check_suite_sources``)."""
    from ssmbench.data.errors import DataError
    from ssmbench.data.source_registry import SOURCES

    problems = []
    for bname, bench in params["benchmarks"].items():
        source = SOURCES.get(bench.get("source")) if isinstance(bench, dict) else None
        if source is None or source.check_recipe is None:
            continue
        for dataset in bench.get("datasets") or []:
            # over the source's defaults, as a run resolves them (ssmbench.setting_defaults)
            settings = {**source_defaults(bench.get("source")), **copy.deepcopy(bench)}
            merge_into(settings, (bench.get("dataset_overrides") or {}).get(dataset) or {})
            try:
                source.check_recipe(dataset, settings)
            except DataError as exc:
                problems.append(f"benchmarks.{bname}.datasets: {dataset}: {exc}")
    return problems


def source_changed(
    params: dict, benchmark: str, dataset: str, root: str | Path = "."
) -> str | None:
    """Why the raw copy of ``dataset`` (under ``root``) no longer stands for its source
    (another ``archive_dir`` or ``local_dir``, a source file changed in place since the
    fetch: ``ssmbench.data.sources.raw_copy_problem``); None when it does, when it was not
    fetched, or for a source that is downloaded or generated. Reads no unchanged file."""
    from ssmbench.data.errors import DataError
    from ssmbench.data.sources import raw_copy_problem

    settings = benchmark_settings(params, benchmark, None, dataset)
    try:
        return raw_copy_problem(dataset, Path(root) / params["paths"]["raw"] / benchmark, settings)
    except DataError as exc:
        return str(exc)


def check_suite_sources(params: dict, suite: str | None = None) -> None:
    """Every dataset of the suite can be fetched: already fetched, in a local copy
    (archive_dir / local_dir), shipped by aeon, or downloadable. Checked when the workflow
    starts, so a missing local folder with no network fails before any job runs. Raises
    ConfigError listing each."""
    from ssmbench.data.errors import DataError
    from ssmbench.data.sources import DERIVED_SOURCES, check_available, derived_base

    problems = []
    for bench, dataset in suite_datasets(params, suite):
        settings, origins = resolve_settings(params, bench, dataset, None, suite)
        try:
            try:
                check_available(dataset, Path(params["paths"]["raw"]) / bench, settings)
            except DataError as exc:
                raise DataError(f"{exc}{_source_origins(str(exc), settings, origins)}") from exc
            if settings["source"] in DERIVED_SOURCES:  # derived: its base must be available
                base_bench, base = derived_base(dataset, settings)
                if base_bench not in params["benchmarks"]:
                    raise DataError(
                        f"{bench}/{dataset}: derived_from names benchmark {base_bench!r}, "
                        f"which params.yaml does not define"
                    )
                base_settings = benchmark_settings(params, base_bench, suite, base)
                check_available(base, Path(params["paths"]["raw"]) / base_bench, base_settings)
        except DataError as exc:
            problems.append(str(exc))
    if problems:
        name = suite or params["suite"]
        problems = list(dict.fromkeys(problems))  # one setting's problem, said once
        raise ConfigError(f"suite {name!r} cannot get its data:\n  " + "\n  ".join(problems))
    stopped = [
        f"{bench}/{dataset}: {why}, and val_split_fallback is error"
        for bench, dataset, fallback, why in validation_fallbacks(params, suite)
        if fallback == "error"
    ]
    if stopped:
        name = suite or params["suite"]
        raise ConfigError(
            f"suite {name!r}: no stratified validation split exists for\n  "
            + "\n  ".join(stopped)
            + "\nSet protocol.val_split_fallback to shuffle or per_class, or leave them out."
        )


def _source_origins(text: str, settings: dict, origins: dict[str, str]) -> str:
    """Where the settings that an error about a dataset's data names were set
    (``archive_dir``, ``local_dir``...: its source's content keys in ``text``): the key to
    fix, as ``ssmbench explain`` shows it."""
    from ssmbench.data.source_registry import SOURCES

    source = SOURCES.get(settings.get("source"))
    keys = [k for k in (source.content_keys if source else ()) if k in origins and k in text]
    where = [f"{origins[k]}.{k}" for k in keys if settings.get(k) is not None]
    return f" (set by {', '.join(where)})" if where else ""


def validation_fallbacks(params: dict, suite: str | None = None) -> list[tuple[str, str, str, str]]:
    """(benchmark, dataset, fallback, why) of the suite's datasets whose official training
    split (a catalog row's ``n_train``: UEA's) is too small for a stratified validation split
    of ``val_fraction`` (from the catalog's row and class counts, before any download): their
    runs take ``val_split_fallback``. ``ssmbench check`` lists them; a fallback of ``error``
    stops the workflow before any job runs."""
    import math

    from ssmbench.data.catalog import catalog_entry
    from ssmbench.data.validation_split import stratified_split_fits

    found = []
    for bench, dataset in suite_datasets(params, suite):
        settings = benchmark_settings(params, bench, suite, dataset)
        entry = catalog_entry(bench, dataset, settings["source"])
        n, k = (entry.n_train, entry.n_classes) if entry is not None else (None, None)
        if not (n and k):
            continue
        if not stratified_split_fits(n, k, settings["val_fraction"]):
            n_val = math.ceil(float(settings["val_fraction"]) * n)
            why = (
                f"{settings['val_fraction']:g} of its {n} training rows is {n_val}, for {k} classes"
            )
            found.append((bench, dataset, settings["val_split_fallback"], why))
    return found


def suite_models(params: dict, benchmark: str, suite: str | None = None) -> list[str]:
    """The models a suite runs on one of its benchmarks: ``benchmark_models[benchmark]``
    where the suite names one (e.g. the Fading Flash models on ``synthetic`` only), else
    its ``models``."""
    spec = params["suites"][suite or params["suite"]]
    return list((spec.get("benchmark_models") or {}).get(benchmark) or spec["models"])


def suite_grid(params: dict, suite: str | None = None) -> list[Job]:
    """Every (benchmark, dataset, model, fold) job of a suite, in a stable order."""
    name = suite or params["suite"]
    spec = params["suites"][name]
    jobs = [
        Job(bench, ds, model, int(fold))
        for bench, datasets in spec["benchmarks"].items()
        for ds in datasets
        for model in suite_models(params, bench, name)
        for fold in spec["folds"]
    ]
    return sorted(set(jobs))


def suites_of(params: dict, job: Job) -> list[str]:
    """The suites whose grid holds ``job``, in params.yaml's order (without building the
    grids)."""
    return [
        name
        for name, spec in params["suites"].items()
        if job.dataset in (spec["benchmarks"].get(job.benchmark) or ())
        and job.model in suite_models(params, job.benchmark, name)
        and job.fold in spec["folds"]
    ]


def suite_searches(params: dict, suite: str | None = None) -> list[Job]:
    """The searches a suite runs before its train jobs: one per (benchmark, dataset,
    model) of its grid that ``tuning.searches`` tunes, as the Job of the searched fold."""
    from ssmbench.search_space import search_of

    name = suite or params["suite"]
    spec = params["suites"][name]
    jobs = set()
    for bench, datasets in spec["benchmarks"].items():
        for model in suite_models(params, bench, name):
            # a search is of (benchmark, model, suite): asked once, not once per fold
            search = search_of(params, bench, model, name)
            if search is not None:
                jobs.update(Job(bench, ds, model, int(search["fold"])) for ds in datasets)
    return sorted(jobs)


def suite_datasets(params: dict, suite: str | None = None) -> list[tuple[str, str]]:
    """The (benchmark, dataset) pairs a suite needs prepared."""
    return sorted({(j.benchmark, j.dataset) for j in suite_grid(params, suite)})


def benchmark_settings(
    params: dict, benchmark: str, suite: str | None = None, dataset: str | None = None
) -> dict:
    """The training settings every run of a benchmark (on ``dataset``) shares: the places
    of `ssmbench.precedence` less the model's, last wins."""
    return resolve_settings(params, benchmark, dataset, None, suite)[0]


def model_entry(params: dict, model: str, dataset: str | None = None) -> dict:
    """A model's hyperparameters as a run on ``dataset`` builds them: its params.yaml
    entry with the dataset's own (``dataset_params``) over it (`ssmbench.precedence`)."""
    return resolve_model_params(params, model, dataset)[0]


def run_settings(params: dict, job: Job, suite: str | None = None) -> dict:
    """A run's training settings from params.yaml: the places of `ssmbench.precedence`,
    last wins (no tuned file: `job_spec` adds it)."""
    return resolve_settings(params, job.benchmark, job.dataset, job.model, suite)[0]


def tuning_problems(params: dict) -> list[str]:
    """Every problem of ``tuning:`` and the suites' ``tuning`` (the schema checks
    the shapes): a search of an unknown model or benchmark, an empty space, a name in it
    that is neither a training setting nor a hyperparameter of the model's family, a
    search setting that is not a training setting."""
    from ssmbench.models import validate_model_params
    from ssmbench.search_space import space_problems

    problems = []
    for model, search in ((params.get("tuning") or {}).get("searches") or {}).items():
        where = f"tuning.searches.{model}"
        if model not in params.get("models", {}):
            problems.append(f"{where}: unknown model {model!r} (a search is named by the "
                            "model it tunes)")  # fmt: skip
            continue
        for bench in search.get("benchmarks") or []:
            if bench not in params["benchmarks"]:
                problems.append(f"{where}.benchmarks: unknown benchmark {bench!r}")
        for key in search.get("settings") or {}:
            if key not in TRAINING_KEYS:
                problems.append(f"{where}.settings.{key}: not a training setting (allowed: "
                                f"{', '.join(sorted(TRAINING_KEYS))})")  # fmt: skip
        if search.get("n_trials", 0) < 1:
            problems.append(f"{where}.n_trials: {search.get('n_trials')!r}; the budget must "
                            "be at least 1 trial")  # fmt: skip
        problems += space_problems(
            f"{where}.space", search.get("space"), model_entry(params, model), TRAINING_KEYS,
            lambda entry, name=model: validate_model_params(name, entry),
        )  # fmt: skip
    for sname, suite in params.get("suites", {}).items():
        overrides = suite.get("tuning") or {}
        if "n_trials" in overrides and overrides["n_trials"] < 1:
            problems.append(f"suites.{sname}.tuning.n_trials: "
                            f"{overrides['n_trials']!r}; the budget must be at least 1 "
                            "trial")  # fmt: skip
        for key in overrides.get("settings") or {}:
            if key not in TRAINING_KEYS:
                problems.append(f"suites.{sname}.tuning.settings.{key}: not a "
                                "training setting")  # fmt: skip
    return problems


def tuned_path(params: dict, job: Job) -> Path:
    """The tuned-parameters file a (benchmark, dataset, model) run reads (paths.tuned)."""
    from ssmbench.search_space import tuned_file

    return tuned_file(params["paths"]["tuned"], job.benchmark, job.dataset, job.model)


# --- a block-read dataset's fold splits (the split rule; ssmbench.train.fold_split)


def split_path(params: dict, benchmark: str, dataset: str, fold: int) -> Path:
    """Where fold ``fold``'s split of (benchmark, dataset) is written by the split rule
    (`ssmbench split`): ``{paths.splits}/{benchmark}/{dataset}/fold{fold}``."""
    return Path(params["paths"]["splits"]) / benchmark / dataset / f"fold{int(fold)}"


def reads_in_blocks(params: dict, benchmark: str, dataset: str, suite: str | None = None) -> bool:
    """Whether the runs on a dataset will read X in blocks: its catalog size N x C x L
    (`ssmbench.resources.catalog_size`, known before any download) as float32 is above
    the benchmark's ``protocol.reading.in_memory_max_gb`` (`reading_plan.plan_reading`,
    its defaults and checks). False where the catalog does not know the size."""
    from ssmbench.reading_plan import BLOCKS, plan_reading
    from ssmbench.resources import catalog_size

    values = catalog_size(params["benchmarks"], benchmark, dataset)
    if values is None:
        return False
    settings = benchmark_settings(params, benchmark, suite, dataset)
    try:
        # the catalog gives N x C x L only: X as (N x C x L) rows of one float32 value
        return plan_reading(settings, (int(values), 1, 1), itemsize=4).mode == BLOCKS
    except ValueError as exc:
        raise ConfigError(f"benchmark {benchmark}, dataset {dataset}: {exc}") from exc


def _run_of(run) -> tuple[str, str, int]:
    if isinstance(run, Job):
        return run.benchmark, run.dataset, run.fold
    benchmark, dataset, fold = run
    return benchmark, dataset, int(fold)


def split_dir_of(
    params: dict, run: Job | tuple[str, str, int], suite: str | None = None
) -> Path | None:
    """The folder of a run's fold split, drawn once by the split rule and read by its
    training jobs (``spec["split_dir"]``): `split_path` for a dataset read in blocks
    (`reads_in_blocks`), None for every other (its runs draw their split themselves:
    such a dataset fits in memory). ``run`` is a `Job` or (benchmark, dataset, fold)."""
    benchmark, dataset, fold = _run_of(run)
    if not reads_in_blocks(params, benchmark, dataset, suite):
        return None
    return split_path(params, benchmark, dataset, fold)


def split_recipe(
    params: dict, benchmark: str, dataset: str, fold: int, suite: str | None = None
) -> dict:
    """What the split rule draws fold ``fold``'s split with (`split_settings`):
    from the benchmark's settings (`benchmark_settings`), the same for every model of the
    fold. A run whose own settings draw another split (a model's ``dataset_settings`` or
    the suite's ``model_overrides`` of val_fraction, val_split_seed, val_split_fallback or
    seed_base, or a tuned value of one) is refused (`untuned_spec`, `job_spec`)."""
    return split_settings(benchmark_settings(params, benchmark, suite, dataset), int(fold))


def _check_split_settings(params: dict, spec: dict, suite: str | None, why: str) -> None:
    """A run that reads its fold's split from ``spec["split_dir"]`` draws it as the split
    rule does; else ConfigError, before any job runs (read_split would refuse it)."""
    benchmark, dataset, fold = spec["benchmark"], spec["dataset"], int(spec["fold"])
    drawn = split_recipe(params, benchmark, dataset, fold, suite)
    own = split_settings(spec["settings"], fold)
    if own != drawn:
        fields = ", ".join(k for k in drawn if own.get(k) != drawn[k])
        raise ConfigError(
            f"{benchmark}/{dataset}/{spec['model']}/fold{fold}: {dataset} is read in blocks, "
            f"so its fold splits are drawn once for every model with the benchmark's settings "
            f"{drawn}, but this run's {why} give {own} (differs in {fields}); leave these "
            "settings to the benchmark for this dataset"
        )


def untuned_spec(params: dict, job: Job, suite: str | None = None) -> dict[str, Any]:
    """A run's spec from params.yaml alone (no tuned values): what a search's trials start
    from, on the search's fold. A run on a dataset read in blocks also names the folder of
    its fold's split (``split_dir``, `split_dir_of`), which its set-up reads."""
    return _spec(params, job, suite, None)


#: the largest run seed (seed_base + fold): numpy's generators take seeds below 2**32
MAX_SEED = 2**32 - 1


def _spec(params: dict, job: Job, suite: str | None, tuned: Tuned | None) -> dict[str, Any]:
    resolved = resolve(params, job.benchmark, job.dataset, job.model, suite, tuned)
    seed = int(resolved.settings["seed_base"]) + job.fold
    if seed > MAX_SEED:
        raise ConfigError(
            f"{job.benchmark}/{job.dataset}/{job.model}/fold{job.fold} in suite "
            f"{suite or params['suite']}: its seed, seed_base "
            f"({resolved.settings_origin.get('seed_base')}) + fold, is {seed}, above "
            f"{MAX_SEED} (2**32 - 1, the largest seed numpy takes); use smaller folds or "
            "seed_base"
        )
    spec = {
        "benchmark": job.benchmark,
        "dataset": job.dataset,
        "model": job.model,
        "fold": job.fold,
        "model_params": resolved.model_params,
        "settings": resolved.settings,
        # where each value came from (ssmbench.precedence): the record keeps it; no result
        # depends on it (staleness.tracked_settings leaves it out)
        "origins": {"settings": resolved.settings_origin, "model_params": resolved.params_origin},
        "prepared_dir": str(Path(params["paths"]["prepared"]) / job.benchmark / job.dataset),
        "code": training_code_digest(params["models"][job.model]["family"]),
    }
    split_dir = split_dir_of(params, job, suite)
    if split_dir is not None:  # only then: the spec of every other run is unchanged
        spec["split_dir"] = str(split_dir)
        why = f"tuned settings ({tuned.file})" if tuned else "settings (model or suite overrides)"
        _check_split_settings(params, spec, suite, why)
    return spec


def job_spec(params: dict, job: Job, suite: str | None = None) -> dict[str, Any]:
    """Everything a training run needs, resolved: what `ssmbench train` runs, and what
    `ssmbench.staleness.record_state` compares a record with (so a change to any of it
    reruns exactly the affected runs).

    A run whose (benchmark, model) is tuned (``ssmbench.search_space.search_of``) takes the
    tuned file's values over its model entry and settings, and ``tuned`` says which file
    (sha256) and values; before the tune stage has written that file, ``tuned`` says it
    is missing (``ssmbench train`` then refuses to run)."""
    from ssmbench.search_space import search_of, tuned_params

    spec = untuned_spec(params, job, suite)
    search = search_of(params, job.benchmark, job.model, suite)
    if search is None:
        return spec
    path = tuned_path(params, job)
    if not path.is_file():
        spec["tuned"] = {"file": str(path), "missing": True}
        return spec
    tuned = tuned_params(path, job.benchmark, job.dataset, job.model, search["space"])
    spec = _spec(params, job, suite,
                 Tuned(str(path), tuned["model_params"], tuned["training_settings"]))  # fmt: skip
    spec["tuned"] = {
        "file": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "params": tuned["params"],
        "metric": tuned["metric"],
        "best_value": tuned["best_value"],
        "n_trials": tuned["n_trials"],
        "fold": tuned["fold"],
        "study": tuned["study"],
    }
    return spec
