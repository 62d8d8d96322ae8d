"""`ssmbench plan`: what a suite will cost before anything is submitted, and (--check) the
estimate beside the measured training time of existing records."""

from __future__ import annotations

import json
from pathlib import Path

from ssmbench.cli.common import example, load, log

#: where `plan` keeps the models' MMac between runs (in the project, beside its lock)
MMAC_CACHE = Path(".ssmbench") / "cache" / "mmac.json"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "plan",
        help="what the suite will cost: runs, jobs, CPU- and GPU-hours per size class and "
        "model, the runs over their runtime (from the calibration table; reads no dataset)",
        **example("ssmbench plan --suite uea-paper --epochs records"),
    )
    p.add_argument(
        "--epochs", choices=("max", "records"), default="max",
        help="max: every run to max_epochs (an upper bound; default); records: the median "
        "epochs of the suite's existing records of the same benchmark and model",
    )  # fmt: skip
    p.add_argument("--cpu-machine", help="the calibration table's CPU machine for CPU runs")
    p.add_argument("--gpu-machine", help="the calibration table's GPU machine for GPU runs")
    p.add_argument("--table", help="another calibration table (default: the package's and "
                   "the project's, params.yaml paths.calibration)")  # fmt: skip
    p.add_argument(
        "--resources", action="store_true",
        help="print, instead of the bill, params.yaml's resources.train.models with the "
        "runtime each (model, size class) of the suite needs, to review and apply "
        "(`> resources.yaml`, then snakemake --configfile resources.yaml; docs/plan.md)",
    )  # fmt: skip
    p.add_argument(
        "--check", nargs="?", const="", default=None, metavar="DIR",
        help="also the estimate beside the measured train_seconds of existing records: the "
        "suite's (no DIR) or every record under DIR",
    )  # fmt: skip
    p.set_defaults(func=cmd_plan)


def cmd_plan(args) -> int:
    """The bill of a suite before anything is submitted (ssmbench.plan): runs, jobs,
    CPU- and GPU-hours per size class and model, the runs over their runtime; --check:
    the estimate beside the measured training time of existing records."""
    from ssmbench.config import ConfigError
    from ssmbench.mmac_table import MMacTable
    from ssmbench.plan import estimate, format_bill, nothing_estimated
    from ssmbench.plan_check import estimate_error, format_error
    from ssmbench.step_costs import StepCosts, tables

    params = load(args)
    costs = StepCosts.load(*([args.table] if args.table else tables(params)))
    bill = estimate(params, costs, cpu_machine=args.cpu_machine, gpu_machine=args.gpu_machine,
                    epochs_from=args.epochs, mmac=MMacTable(MMAC_CACHE))  # fmt: skip
    if (problem := nothing_estimated(bill, params)) is not None:
        raise ConfigError(problem)
    if args.resources:
        from ssmbench.plan_resources import resources_block

        print(resources_block(bill, params), end="")
        return 0
    print(format_bill(bill, params))
    if args.check is not None:
        records = _plan_check_records(params, args.check)
        machine = bill.machines["cpu"]
        cpu = [r for r in records if r.get("device") != "cuda"]
        gpu = [r for r in records if r.get("device") == "cuda"]
        print()
        where = args.check or f"{params['paths']['runs']} (suite {params['suite']})"
        print(f"The estimate against {len(records)} records of {where}:")
        checks = estimate_error(cpu, costs, machine, params) if machine else []
        if gpu and bill.machines["cuda"]:
            checks += estimate_error(gpu, costs, bill.machines["cuda"], params)
        print(format_error(checks))
    return 0


def _plan_check_records(params: dict, folder: str) -> list[dict]:
    """The records to check the estimate against: the suite's under paths.runs (``""``),
    or every run record (``*.json`` with ``train_seconds``, its own or its provenance
    file's: ``provenance_file.with_provenance``) under ``folder``. A file that cannot be
    read as JSON is an error (ConfigError). A record whose fields the estimate
    reads are not what ``ssmbench train`` writes (``plan_check.record_problems``: a wrong type,
    a non-finite or out-of-range number, a missing name) is left out of the comparison
    with one warning line naming the file and its fields: the other records still give
    a comparison."""
    from ssmbench.config import ConfigError, suite_grid
    from ssmbench.plan_check import record_problems
    from ssmbench.provenance_file import is_provenance_file, with_provenance

    if folder:
        root = Path(folder)
        if not root.is_dir():
            raise ConfigError(f"plan --check {folder}: not a folder")
        paths = sorted(p for p in root.rglob("*.json") if not is_provenance_file(p))
    else:
        paths = [job.record_path(params["paths"]["runs"]) for job in suite_grid(params)]
    records = []
    for path in paths:
        if not path.is_file():
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: not a readable run record ({exc})") from None
        if isinstance(record, dict):
            record = with_provenance(path, record)
        if not isinstance(record, dict) or "train_seconds" not in record:
            continue
        problems = record_problems(record)
        if problems:
            log(f"warning: {path}: left out of the check: {'; '.join(problems)}")
            continue
        records.append(record)
    return records
