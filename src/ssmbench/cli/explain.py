"""`ssmbench explain`: one run's training settings and model hyperparameters (its family's
constructor defaults among them), and what it gets (batch size, its job's resources), each
with the place it came from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ssmbench.cli.common import add_run_arguments, check_known, example, load, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "explain",
        help="one run's training settings, model hyperparameters, batch size and job "
        "resources, each with the params.yaml key (or tuned file) it came from",
        **example("ssmbench explain --benchmark uea --dataset BasicMotions --model MS4N"),
    )
    add_run_arguments(p, "benchmark", "dataset", "model")
    add_run_arguments(p, "fold", required=False)
    p.add_argument(
        "--format", choices=("table", "json"), default="table", help="output (default: table)"
    )
    p.set_defaults(func=cmd_explain)


def cmd_explain(args) -> int:
    """One run's resolved training settings and hyperparameters, each with the params.yaml
    key (or tuned file, command line, default) it came from (ssmbench.precedence): `git
    config --show-origin` for a run."""
    from ssmbench.config import Job, job_spec, suite_grid, suites_of
    from ssmbench.models import constructor_defaults
    from ssmbench.params_file import read_params_and_files
    from ssmbench.precedence import format_origins
    from ssmbench.run_allocation import allocation

    params = load(args)
    check_known(args, params)
    folder = Path(args.params).parent  # the study files are named relative to it
    files = {k: str(folder / f) for k, f in read_params_and_files(args.params)[1].items()}
    job = Job(args.benchmark, args.dataset, args.model, args.fold)
    if job not in suite_grid(params):  # resolved all the same: what it would train with
        others = suites_of(params, job)
        where = (
            f"the suites that run it: {', '.join(others)} (--suite NAME for its settings there)"
            if others
            else "no suite of params.yaml runs it"
        )
        log(f"note: {args.benchmark}/{args.dataset}/{args.model}/fold{args.fold} is not a run "
            f"of suite {params['suite']} (not in its grid: `ssmbench grid`); shown as the "
            f"suite would resolve it; {where}")  # fmt: skip
    spec = job_spec(params, job)
    gets = allocation(params, spec)
    # the hyperparameters no place sets: what the family's constructor takes by default
    defaults = constructor_defaults(spec["model_params"])
    if args.format == "json":
        keys = ("benchmark", "dataset", "model", "fold", "settings", "model_params", "origins")
        print(json.dumps({"suite": params["suite"], **{k: spec[k] for k in keys},
                          "model_defaults": {k: {"value": v, "origin": o}
                                             for k, (v, o) in defaults.items()},
                          "tuned": spec.get("tuned"),
                          "allocation": {k: {"value": v, "origin": o} for k, v, o in gets}},
                         indent=1))  # fmt: skip
    else:
        sys.stdout.write(format_origins(spec, params["suite"], files, str(args.params), defaults))
        width_key = max(len(k) for k, _, _ in gets)
        width_value = max(len(v) for _, v, _ in gets)
        print("\nwhat the run gets (batch size; its job's resources: params.yaml resources)")
        for key, value, origin in gets:
            print(f"  {key:<{width_key}}  {value:<{width_value}}  {origin}")
    return 0
