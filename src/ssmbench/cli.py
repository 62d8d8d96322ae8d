"""`ssmbench` command line: what the Snakemake rules and DVC stages call.

    ssmbench check                      validate params.yaml, print the suite's grid size
    ssmbench grid                       list the suite's jobs
    ssmbench fetch   --benchmark B --dataset D [--force]
    ssmbench prepare --benchmark B --dataset D
    ssmbench split   --benchmark B --dataset D --fold K [--out DIR]
    ssmbench train   --benchmark B --dataset D --model M --fold K
    ssmbench explain --benchmark B --dataset D --model M [--fold K] [--format table|json]
    ssmbench report  [--list-outputs | --show-tables | --published]
    ssmbench complexity --channels C --classes K --length L | --table4 [--csv F]
    ssmbench datasets [--benchmark B] [--domain D] [--format table|csv]
    ssmbench status  [--suite S] [--state STATE ...] [--format table|csv|json]
    ssmbench plan    [--suite S] [--epochs max|records] [--cpu-machine M] [--gpu-machine M]
                     [--check [DIR]]

Every command but `datasets` reads params.yaml (--params) and the suite (--suite, default:
params.yaml's `suite`); `datasets` prints the dataset catalog and reads no config.
Errors in the inputs exit with status 2 and one message naming what is wrong.
--benchmark, --dataset, --model and --suite are names, never paths (ssmbench.data.names),
and must be entries of params.yaml; `train --record` may only name the run's own record
under paths.runs; nothing is read or written before they are checked, and no command
writes outside the roots that params.yaml's `paths` name.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _params(args):
    from ssmbench.config import load_params

    _check_name_arguments(args)
    return load_params(args.params, suite=args.suite)


def _check_name_arguments(args) -> None:
    """--benchmark, --dataset, --model and --suite become path components: each must be a
    plain name (ssmbench.data.names), checked before any file is read or written."""
    from ssmbench.config import ConfigError
    from ssmbench.data.names import name_problem

    for kind in ("benchmark", "dataset", "model", "suite"):
        value = getattr(args, kind, None)
        if value is not None and (problem := name_problem(kind, value)) is not None:
            raise ConfigError(f"--{kind}: {problem}")
    if getattr(args, "fold", 0) < 0:
        raise ConfigError(f"--fold: {args.fold} is not a fold number (an integer >= 0)")


def _check_known(args, params) -> None:
    """--benchmark, --dataset (and --model) name entries of params.yaml."""
    from ssmbench.config import ConfigError, unknown_name

    model = getattr(args, "model", None)
    unknown = unknown_name(params, args.benchmark, args.dataset, model, source=args.params)
    if unknown is not None:
        kind, why = unknown
        raise ConfigError(f"--{kind}: {why}")


def _inside(path: Path, params: dict, root_key: str) -> Path:
    """`path`, refused if it resolves (symbolic links followed) outside paths.<root_key>:
    a command writes only under the configured roots."""
    from ssmbench.config import ConfigError

    root = Path(params["paths"][root_key]).resolve()
    if not path.resolve().is_relative_to(root):
        raise ConfigError(
            f"{path}: resolves to {path.resolve()}, outside paths.{root_key} ({root}); "
            f"a command writes only under the roots that params.yaml's paths name"
        )
    return path


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
    from ssmbench.resources import check_train_resources
    from ssmbench.series_lengths import check_model_lengths

    params = _params(args)
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

    params = _params(args)
    for job in suite_grid(params):
        print(job.record_path(params["paths"]["runs"]))
    return 0


def cmd_fetch(args) -> int:
    from ssmbench.config import benchmark_settings
    from ssmbench.data.sources import fetch

    params = _params(args)
    _check_known(args, params)
    settings = benchmark_settings(params, args.benchmark, dataset=args.dataset)
    raw_dir = Path(params["paths"]["raw"]) / args.benchmark
    _inside(raw_dir / args.dataset, params, "raw")
    info = fetch(args.dataset, raw_dir, settings, force=args.force)
    _log(f"fetched {args.benchmark}/{args.dataset} from {info.get('source')}: {json.dumps(info)}")
    return 0


def cmd_prepare(args) -> int:
    from ssmbench.config import benchmark_settings
    from ssmbench.data.sources import prepare

    params = _params(args)
    _check_known(args, params)
    settings = benchmark_settings(params, args.benchmark, dataset=args.dataset)
    raw_dir = Path(params["paths"]["raw"]) / args.benchmark
    out_dir = Path(params["paths"]["prepared"]) / args.benchmark
    _inside(out_dir / args.dataset, params, "prepared")
    path = prepare(args.dataset, raw_dir, out_dir, settings)
    meta = json.loads((path / "meta.json").read_text())
    _log(
        f"prepared {path}: N={meta['N']} C={meta['C']} L={meta['L']} classes={meta['n_classes']} "
        f"length_policy={meta.get('length_policy')!r}"
    )
    return 0


def cmd_split(args) -> int:
    """One fold's split of a dataset read in blocks, drawn once for all its training jobs
    (the split rule; ssmbench.train.fold_split.write_split): the training, validation
    and test rows as .npy files and a split.json, in ``split_path`` (or --out, under
    paths.splits). It is drawn with the benchmark's settings (``benchmark_settings``: what
    every model's run has unless it overrides them, which `untuned_spec` refuses for such
    a dataset), so a run's ``read_split`` check finds its own settings."""
    from ssmbench.config import benchmark_settings, split_dir_of, split_path
    from ssmbench.train.fold_split import write_split

    params = _params(args)
    _check_known(args, params)
    settings = benchmark_settings(params, args.benchmark, dataset=args.dataset)
    prepared = Path(params["paths"]["prepared"]) / args.benchmark / args.dataset
    own = split_path(params, args.benchmark, args.dataset, args.fold)
    out = _inside(Path(args.out) if args.out else own, params, "splits")
    if split_dir_of(params, (args.benchmark, args.dataset, args.fold)) is None:
        _log(f"note: {args.benchmark}/{args.dataset} fits protocol.reading.in_memory_max_gb: "
             "its runs draw their split themselves and do not read this one")  # fmt: skip
    summary = write_split(prepared, args.fold, settings, out)
    rows = summary["rows"]
    _log(f"wrote {out}: fold {args.fold} of {args.benchmark}/{args.dataset} "
         f"({summary['method']}): {rows['train']} train, {rows['val']} validation, "
         f"{rows['test']} test rows; drawn with {json.dumps(summary['settings'])}")  # fmt: skip
    return 0


def cmd_train(args) -> int:
    """One run. SIGTERM/SIGUSR1 are caught first thing (ssmbench.train.stop imports no
    torch): one during the seconds of imports and set-up stops the job with the resumable
    exit status too, and says so."""
    from ssmbench.train.stop import StopRequest, TrainingInterrupted

    stop = StopRequest(_log, immediate=True, when="before training started")
    try:
        with stop:
            return _train(args, stop)
    except TrainingInterrupted as stopped:
        _log(f"ssmbench train: {stopped}")
        return stopped.code


def _train(args, stop) -> int:
    from ssmbench.train import restart_with_malloc_env

    _check_name_arguments(args)
    if args.fast_malloc:  # before torch is imported: the re-executed process pays it once
        restart_with_malloc_env(["-m", "ssmbench.cli", *sys.argv[1:]])
    from ssmbench.config import Job, job_spec
    from ssmbench.staleness import record_state
    from ssmbench.train.checkpoint import checkpoint_path
    from ssmbench.train.protocol import run_job
    from ssmbench.train.record import RecordWriteError

    params = _params(args)
    _check_known(args, params)
    job = Job(args.benchmark, args.dataset, args.model, args.fold)
    spec = job_spec(params, job)
    if (spec.get("tuned") or {}).get("missing"):
        from ssmbench.config import ConfigError

        raise ConfigError(
            f"{spec['tuned']['file']}: {args.model} is tuned on {args.benchmark} "
            f"(params.yaml tuning.searches) but has no tuned parameters yet; run the tune "
            f"stage first: `ssmbench tune --benchmark {args.benchmark} --dataset "
            f"{args.dataset} --model {args.model}`"
        )
    if args.max_epochs:
        spec["settings"]["max_epochs"] = args.max_epochs
    record = _record_path(args, params, job)
    if not args.force and record_state(record, spec).current:
        # a retried group job or a workflow-code change runs a finished run again
        _log(f"{datetime.now().astimezone().isoformat(timespec='seconds')} {record} is current: "
             "kept, not trained again")  # fmt: skip
        return 0
    # The run's checkpoint (resume after SIGTERM/SIGUSR1, a time limit or a hard kill) is
    # paths.checkpoints/{benchmark}/{dataset}/{model}/fold{k}.pt: no rule passes it.
    checkpoint = _inside(
        checkpoint_path(params["paths"]["checkpoints"], job), params, "checkpoints"
    )
    try:
        result = run_job(
            spec, record, threads=args.threads, log=_log, checkpoint_path=checkpoint, stop=stop
        )
    except RecordWriteError as exc:  # a full disk: the previous record is kept
        kept = f"; checkpoint {checkpoint} kept, a retry only tests" if checkpoint.is_file() else ""
        _log(f"ssmbench train: error: {exc}{kept}")
        return 1
    _log(f"wrote {record}: test_error={result['test_error']:.4f} best_epoch={result['best_epoch']}")
    return 0


def cmd_tune(args) -> int:
    """One search: an Optuna study of one (benchmark, dataset, model) on its search's fold,
    validation metric only, then its tuned file. Resumes the study it finds; several
    workers may run it at once on one study. SIGTERM/SIGUSR1: the trial in progress is
    queued again and the exit status says resume."""
    from ssmbench.train.stop import StopRequest, TrainingInterrupted

    stop = StopRequest(_log, immediate=True, when="before tuning started")
    try:
        with stop:
            return _tune(args, stop)
    except TrainingInterrupted as stopped:
        _log(f"ssmbench tune: {stopped}")
        return stopped.code


def _tune(args, stop) -> int:
    from ssmbench.config import TRAINING_KEYS, ConfigError, Job, tuned_path, untuned_spec
    from ssmbench.search_space import search_of, tuned_is_current
    from ssmbench.train.tune import run_search

    params = _params(args)
    _check_known(args, params)
    search = search_of(params, args.benchmark, args.model)
    if search is None:
        raise ConfigError(
            f"--model {args.model}: not tuned on benchmark {args.benchmark!r}; add it to "
            f"tuning.searches.{args.model}.benchmarks in {args.params}"
        )
    job = Job(args.benchmark, args.dataset, args.model, int(search["fold"]))
    base = untuned_spec(params, job)
    tuned = _inside(tuned_path(params, job), params, "tuned")
    if not args.force and tuned_is_current(tuned, search, base):
        _log(f"{tuned} is current (same search and run): kept, not tuned again")
        return 0
    tuning = params["tuning"]
    journal = _inside(
        Path(params["paths"]["tuning"]) / args.benchmark / args.dataset / f"{args.model}.journal",
        params, "tuning",
    )  # fmt: skip
    result = run_search(
        base, search, training_keys=TRAINING_KEYS, storage=tuning["storage"],
        journal_path=journal, tuned_path=tuned, stale_after_s=float(tuning["stale_after_s"]),
        threads=args.threads, log=_log, stop=stop,
    )  # fmt: skip
    _log(f"tuned {args.benchmark}/{args.dataset}/{args.model}: {result['metric']} "
         f"{result['best_value']:.6g} after {result['n_complete']} complete trials")  # fmt: skip
    return 0


def _record_path(args, params, job) -> Path:
    """The run's record: the contract's path under paths.runs. --record (what the train
    rule passes) must name that same file: status, the report and the staleness check
    read a run's record there, and nowhere else."""
    from ssmbench.config import ConfigError

    own = _inside(job.record_path(params["paths"]["runs"]), params, "runs")
    if args.record is None:
        return own
    if Path(args.record).resolve() != own.resolve():
        raise ConfigError(
            f"--record: {args.record} is not the record of {job.benchmark}/{job.dataset}/"
            f"{job.model}/fold{job.fold}, which is {own} (paths.runs in {args.params}); "
            "leave --record out or pass that path"
        )
    return Path(args.record)


def cmd_report(args) -> int:
    from ssmbench.config import model_entry, suite_grid, suite_models
    from ssmbench.report.outputs import report_outputs

    params = _params(args)
    paths = params["paths"]
    _log_to_stderr()
    if args.published:
        from ssmbench.report.build import build_published

        for name, path in build_published(paths["results"], params["report"]).items():
            print(f"{name}: {path}")
        return 0
    suite = params["suites"][params["suite"]]
    grid = suite_grid(params)
    if args.list_outputs or args.show_tables:
        outputs = report_outputs(paths["results"], paths["figures"], {j.benchmark for j in grid})
        for output in outputs:
            if args.list_outputs:
                print(f"{output.name}: {output.path}")
            elif output.kind == "table" and output.path.suffix == ".md":
                if not output.path.is_file():
                    raise FileNotFoundError(f"{output.path}: not written yet (ssmbench report)")
                print(f"{output.path}:\n\n{output.path.read_text(encoding='utf-8')}")
        return 0
    # pandas and matplotlib (4 s): only for building
    from ssmbench.report.build import build_report

    written = build_report(
        runs_dir=paths["runs"],
        results_dir=paths["results"],
        figures_dir=paths["figures"],
        report_params=params["report"],
        benchmark_models={b: suite_models(params, b) for b in suite["benchmarks"]},
        grid=[(j.benchmark, j.dataset, j.model, j.fold) for j in grid],
        benchmarks=sorted({j.benchmark for j in grid}),
        model_entries={m: model_entry(params, m) for m in sorted({j.model for j in grid})},
    )
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0


def _log_to_stderr() -> None:
    """The report's notices (what it skipped and why) on stderr, one line each: the
    Snakemake rule keeps them in logs/report.log."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")


def cmd_complexity(args) -> int:
    from ssmbench.complexity import count_params, mmac
    from ssmbench.config import ConfigError, model_entry
    from ssmbench.models import build_model, is_estimator

    params = _params(args)
    for name in args.models or []:
        if name not in params["models"]:
            raise ConfigError(
                f"--models: unknown model {name!r} (known: {', '.join(params['models'])})"
            )
    if args.table4:
        return _complexity_table4(params, args)
    if None in (args.channels, args.classes, args.length):
        raise ConfigError("complexity: give --channels, --classes and --length, or --table4")
    names = args.models or list(params["models"])
    shape = f"C={args.channels}, K={args.classes}, L={args.length}"
    width = max(14, *(len(n) + 2 for n in names))
    print(f"{'model':<{width}}{'params':>12}{'MMac':>12}   ({shape})")
    for name in names:
        entry = model_entry(params, name)
        model = build_model(name, args.channels, args.classes, args.length, entry)
        if is_estimator(model):
            print(f"{name:<{width}}{'n/a':>12}{'n/a':>12}")
            continue
        n_params, macs = count_params(model), mmac(model, args.channels, args.length)
        print(f"{name:<{width}}{n_params:>12,}{macs:>12.3f}")
    return 0


def _complexity_table4(params, args) -> int:
    """Per model and MONSTER domain: ours beside the MS4N paper's Table 4."""
    from ssmbench.config import model_entry
    from ssmbench.io import atomic_write
    from ssmbench.report.table4 import declared_gaps, table4_comparison

    df = table4_comparison({m: model_entry(params, m) for m in params["models"]}, args.models)

    def num(v, fmt):
        return "n/a" if v is None or v != v else format(v, fmt)

    def pct(v):
        return "" if v is None or v != v else f"{v:+.1f}%"

    print(
        f"{'model':<13}{'domain':<10}{'params':>10}{'paper':>10}{'diff':>8}"
        f"{'MMac':>11}{'paper':>11}{'diff':>8}"
    )
    for r in df.itertuples(index=False):
        print(
            f"{r.model:<13}{r.domain:<10}{num(r.params, ',.0f'):>10}"
            f"{num(r.params_paper, ',.0f'):>10}{pct(r.params_diff_pct):>8}"
            f"{num(r.mmac, ',.2f'):>11}{num(r.mmac_paper, ',.2f'):>11}"
            f"{pct(r.mmac_diff_pct):>8}"
        )
    for name in dict.fromkeys(df["model"]):
        for (key, domain), why in declared_gaps(params["models"][name]["family"]).items():
            where = "every domain" if domain == "*" else domain
            print(f"\n{name} {key} ({where}) is not matched: {why}")
    if args.csv:
        atomic_write(args.csv, lambda p: df.to_csv(p, index=False, lineterminator="\n"))
        _log(f"wrote {args.csv}")
    return 0


def cmd_datasets(args) -> int:
    # The catalog only: no params.yaml, so it works before the config is written or valid.
    from collections import Counter

    from ssmbench.data.catalog import BENCHMARKS, catalog

    entries = catalog(benchmark=args.benchmark, domain=args.domain)
    header = ["name", "benchmark", "domain", "task", "N", "C", "L", "classes", "source"]
    rows = [
        [e.name, e.benchmark, e.domain, e.task, e.N, e.C, e.L, e.n_classes, e.source]
        for e in entries
    ]
    counts = Counter(e.benchmark for e in entries)
    summary = ", ".join(f"{b}: {counts[b]}" for b in BENCHMARKS if counts[b])
    summary = f"{summary} ({len(entries)} datasets)" if entries else "no datasets match"
    if args.format == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([["" if v is None else v for v in row] for row in rows])
        _log(summary)  # stderr: stdout stays a plain CSV
    else:
        from tabulate import tabulate

        print(tabulate(rows, headers=header, missingval="-", intfmt=","))
        print(summary)
    return 0


def cmd_explain(args) -> int:
    """One run's resolved training settings and hyperparameters, each with the params.yaml
    key (or tuned file) it came from (ssmbench.precedence): `git config --show-origin`
    for a run."""
    from ssmbench.config import Job, job_spec
    from ssmbench.precedence import format_origins

    params = _params(args)
    _check_known(args, params)
    spec = job_spec(params, Job(args.benchmark, args.dataset, args.model, args.fold))
    if args.format == "json":
        keys = ("benchmark", "dataset", "model", "fold", "settings", "model_params", "origins")
        print(json.dumps({"suite": params["suite"], **{k: spec[k] for k in keys},
                          "tuned": spec.get("tuned")}, indent=1))  # fmt: skip
    else:
        sys.stdout.write(format_origins(spec, params["suite"]))
    return 0


def cmd_status(args) -> int:
    """Every run of the suite: done / stale / failed / incomplete / missing (see
    ssmbench.status), with counts and each failed run's last error line."""
    from ssmbench.status import format_csv, format_json, format_table, suite_status, summary_line

    params = _params(args)
    statuses = suite_status(params)
    shown = [s for s in statuses if not args.state or s.state in args.state]
    summary = summary_line(params["suite"], statuses)
    if args.format == "json":
        sys.stdout.write(format_json(params["suite"], statuses, shown))
    elif args.format == "csv":
        sys.stdout.write(format_csv(shown))
        _log(summary)  # stderr: stdout stays a plain CSV
    else:
        if shown:
            print(format_table(shown))
        print(summary)
    return 0


def cmd_plan(args) -> int:
    """The bill of a suite before anything is submitted (ssmbench.plan): runs, jobs,
    CPU- and GPU-hours per size class and model, the runs over their runtime; --check:
    the estimate beside the measured training time of existing records."""
    from ssmbench.plan import estimate, estimate_error, format_bill, format_error
    from ssmbench.step_costs import TABLE, StepCosts

    params = _params(args)
    costs = StepCosts.load(args.table or TABLE)
    bill = estimate(params, costs, cpu_machine=args.cpu_machine, gpu_machine=args.gpu_machine,
                    epochs_from=args.epochs)  # fmt: skip
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
    or every run record (``*.json`` with ``train_seconds``) under ``folder``."""
    from ssmbench.config import ConfigError, suite_grid

    if folder:
        root = Path(folder)
        if not root.is_dir():
            raise ConfigError(f"plan --check {folder}: not a folder")
        paths = sorted(root.rglob("*.json"))
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
        if isinstance(record, dict) and "train_seconds" in record:
            records.append(record)
    return records


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ssmbench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--params", default="params.yaml", help="the config file (default: %(default)s)"
    )
    parser.add_argument("--suite", default=None, help="suite name (default: params.yaml's `suite`)")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("check", help="validate params.yaml").set_defaults(func=cmd_check)
    sub.add_parser("grid", help="list the suite's run records").set_defaults(func=cmd_grid)
    for name, func in (("fetch", cmd_fetch), ("prepare", cmd_prepare)):
        p = sub.add_parser(name, help=f"{name} one dataset")
        p.add_argument("--benchmark", required=True)
        p.add_argument("--dataset", required=True)
        if name == "fetch":
            p.add_argument(
                "--force",
                action="store_true",
                help="fetch again even if the raw copy matches its provenance",
            )
        p.set_defaults(func=func)
    p = sub.add_parser(
        "split",
        help="one fold's train/validation/test rows of a dataset read in blocks, drawn once "
        "for its training jobs (the split rule)",
    )
    p.add_argument("--benchmark", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--fold", required=True, type=int)
    p.add_argument(
        "--out",
        help="the split's folder, under paths.splits (default: "
        "{paths.splits}/{benchmark}/{dataset}/fold{fold}, where its training jobs read it)",
    )
    p.set_defaults(func=cmd_split)
    p = sub.add_parser("train", help="one run: one model on one fold of one dataset")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--fold", required=True, type=int)
    p.add_argument("--record", help="record path (default: the contract's path under paths.runs)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-epochs", type=int, default=None, help="cap epochs (smoke tests only)")
    p.add_argument(
        "--force",
        action="store_true",
        help="train even if the record is current (made with these settings and code)",
    )
    p.add_argument(
        "--fast-malloc",
        action="store_true",
        help="keep large freed buffers in the heap: faster long sequences, higher peak memory "
        "(see ssmbench.train.MALLOC_ENV)",
    )
    p.set_defaults(func=cmd_train)
    p = sub.add_parser(
        "tune", help="one hyperparameter search (Optuna, validation only) -> its tuned file"
    )
    p.add_argument("--benchmark", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--force", action="store_true", help="search again even if the tuned file is current"
    )
    p.set_defaults(func=cmd_tune)
    p = sub.add_parser("report", help="metrics.csv, summary.json, tables, figures")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--list-outputs",
        action="store_true",
        help="print every file the report writes for the suite (name: path); write nothing",
    )
    which.add_argument(
        "--show-tables",
        action="store_true",
        help="print the suite's Markdown tables as last written; write nothing",
    )
    which.add_argument(
        "--published",
        action="store_true",
        help="render every table and figure of the MS4N paper from its published numbers "
        "alone, into {results}/published (no run record is read)",
    )
    p.set_defaults(func=cmd_report)
    p = sub.add_parser(
        "complexity",
        help="params and MMac of models for one input shape, or beside the paper's Table 4",
    )
    p.add_argument("--channels", type=int)
    p.add_argument("--classes", type=int)
    p.add_argument("--length", type=int)
    p.add_argument("--models", nargs="*")
    p.add_argument(
        "--table4",
        action="store_true",
        help="per MONSTER domain: our average params and MMac beside the MS4N paper's Table 4",
    )
    p.add_argument("--csv", help="with --table4: also write the comparison to this CSV")
    p.set_defaults(func=cmd_complexity)
    p = sub.add_parser("datasets", help="list the datasets of both studies (reads no config)")
    p.add_argument("--benchmark", help="only this benchmark (uea, monster, physiome, ...)")
    p.add_argument("--domain", help="only this domain (Audio, EEG, HAR, Satellite, ...)")
    p.add_argument("--format", choices=("table", "csv"), default="table")
    p.set_defaults(func=cmd_datasets)
    p = sub.add_parser(
        "explain",
        help="one run's training settings and model hyperparameters, each with the "
        "params.yaml key (or tuned file) it came from",
    )
    p.add_argument(
        "--suite", default=argparse.SUPPRESS, help="suite name (default: params.yaml's `suite`)"
    )
    p.add_argument("--benchmark", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--fold", type=int, default=0, help="fold (default 0)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=cmd_explain)
    p = sub.add_parser(
        "status",
        help="each run of the suite: done / stale / failed / incomplete / missing, with the "
        "last error line of each failed run (reads records and logs, no dataset)",
    )
    p.add_argument(
        "--suite", default=argparse.SUPPRESS, help="suite name (default: params.yaml's `suite`)"
    )
    p.add_argument(
        "--state",
        nargs="+",
        choices=("done", "stale", "failed", "incomplete", "missing"),
        help="list only runs in these states (the counts still cover every run)",
    )
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser(
        "plan",
        help="what the suite will cost: runs, jobs, CPU- and GPU-hours per size class and "
        "model, the runs over their runtime (from the calibration table; reads no dataset)",
    )
    p.add_argument(
        "--suite", default=argparse.SUPPRESS, help="suite name (default: params.yaml's `suite`)"
    )
    p.add_argument(
        "--epochs", choices=("max", "records"), default="max",
        help="max: every run to max_epochs (an upper bound; default); records: the median "
        "epochs of the suite's existing records of the same benchmark and model",
    )  # fmt: skip
    p.add_argument("--cpu-machine", help="the calibration table's CPU machine for CPU runs")
    p.add_argument("--gpu-machine", help="the calibration table's GPU machine for GPU runs")
    p.add_argument("--table", help="another calibration table (default: the package's)")
    p.add_argument(
        "--check", nargs="?", const="", default=None, metavar="DIR",
        help="also the estimate beside the measured train_seconds of existing records: the "
        "suite's (no DIR) or every record under DIR",
    )  # fmt: skip
    p.set_defaults(func=cmd_plan)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ssmbench.config import ConfigError
    from ssmbench.data.errors import DataError
    from ssmbench.report.errors import RecordError
    from ssmbench.search_space import SearchError

    try:
        return args.func(args)
    except (ConfigError, DataError, RecordError, SearchError, FileNotFoundError) as exc:
        # Bad input: one message naming the file or field. Anything else is a bug and
        # keeps its traceback.
        _log(f"ssmbench {args.command}: error: {exc}")
        return 2
    except BrokenPipeError:
        # The reader stopped early (`ssmbench complexity --table4 | head`): no traceback,
        # and nothing more for Python to flush into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        # A run that diverged (non-finite loss) is neither bad input nor a bug: one line,
        # exit 1. Only a run that imported the checks can raise it, so torch is not loaded
        # here for other commands.
        checks = sys.modules.get("ssmbench.train.checks")
        if checks is None or not isinstance(exc, checks.DivergedError):
            raise
        _log(f"ssmbench {args.command}: error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
