"""`ssmbench check` (validate params.yaml, print the suite's grid size) and `ssmbench grid`
(list the suite's run records)."""

from __future__ import annotations

from ssmbench.cli.common import example, load


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="validate params.yaml and its studies; print the suite's runs and searches",
        **example("ssmbench check --suite uea10"),
    )  # fmt: skip
    p.add_argument(
        "--add-to-dvc", action="store_true",
        help="first add to dvc.yaml the lines it lacks for the study files and for the code "
        "of models of one's own (the lines check would otherwise ask for)",
    )  # fmt: skip
    p.set_defaults(func=cmd_check)
    sub.add_parser(
        "grid", help="list the suite's run records", **example("ssmbench grid --suite tiny")
    ).set_defaults(func=cmd_grid)


def cmd_check(args) -> int:
    from ssmbench.config import (
        check_suite_sources,
        job_spec,
        suite_datasets,
        suite_grid,
        suite_searches,
        tuned_path,
        validation_fallbacks,
    )
    from ssmbench.dvc_params import check_studies_tracked
    from ssmbench.resources import check_train_resources
    from ssmbench.series_lengths import check_model_lengths

    params = load(args)
    from ssmbench.config import ConfigError
    from ssmbench.path_roots import unwritable_problems

    if problems := unwritable_problems(params):
        raise ConfigError(f"{args.params}: " + "; ".join(problems))
    if getattr(args, "add_to_dvc", False):
        from ssmbench.dvc_params import add_missing_lines

        for line in add_missing_lines(args.params, params):
            print(f"dvc.yaml: added to {line}")
    # an edit to a study file or to a model of one's own must reach `dvc status`
    check_studies_tracked(args.params, params)
    check_train_resources(params)
    check_suite_sources(params)  # what the workflow checks before any job runs
    check_model_lengths(params)
    grid = suite_grid(params)
    for job in grid:  # a tuned file that does not fit its run stops here (SearchError)
        job_spec(params, job)
    searches = suite_searches(params)
    suite = params["suite"]
    description = params["suites"][suite].get("description")
    print(
        f"{args.params}: OK. suite {suite!r}"
        + (f" ({description})" if description else "")
        + f": {len(grid)} runs over {len(suite_datasets(params))} datasets"
        + (f", {len(searches)} hyperparameter searches first" if searches else "")
    )
    shown = 10
    for job in searches[:shown]:
        state = "tuned" if tuned_path(params, job).is_file() else "to tune"
        print(f"  search {job.benchmark}/{job.dataset}/{job.model} (fold {job.fold}): {state}")
    if len(searches) > shown:
        n_tuned = sum(tuned_path(params, job).is_file() for job in searches)
        print(f"  ... {len(searches) - shown} more searches ({n_tuned} of all {len(searches)} "
              "tuned)")  # fmt: skip
    for bench, dataset, fallback, why in validation_fallbacks(params):
        print(f"  {bench}/{dataset}: no stratified validation split ({why}): {fallback}")
    return 0


def cmd_grid(args) -> int:
    from ssmbench.config import suite_grid

    params = load(args)
    for job in suite_grid(params):
        print(job.record_path(params["paths"]["runs"]))
    return 0
