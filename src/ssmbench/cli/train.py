"""`ssmbench train`: one run, one model on one fold of one dataset, into its record."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from ssmbench.cli.common import (
    add_run_arguments,
    check_known,
    check_names,
    epoch_count,
    example,
    inside,
    load,
    log,
    stoppable,
    thread_count,
)

#: torch threads of a run whose command line gives no --threads
DEFAULT_THREADS = 1


def add_parser(sub) -> None:
    p = sub.add_parser(
        "train", help="one run: one model on one fold of one dataset",
        **example("ssmbench train --benchmark uea --dataset BasicMotions --model MS4N --fold 0"),
    )  # fmt: skip
    add_run_arguments(p, "benchmark", "dataset", "model", "fold")
    p.add_argument("--record", help="record path (default: the contract's path under paths.runs)")
    p.add_argument(
        "--threads", type=thread_count, default=None,
        help=f"torch threads (1 to the CPUs; default {DEFAULT_THREADS})",
    )  # fmt: skip
    p.add_argument(
        "--max-epochs", type=epoch_count, default=None, help="cap epochs (smoke tests only)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="train even if the record is current (made with these settings and code)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace a record another suite made with other settings (refused otherwise)",
    )
    p.add_argument(
        "--fast-malloc",
        action="store_true",
        help="keep large freed buffers in the heap: faster long sequences, higher peak memory "
        "(see ssmbench.train.MALLOC_ENV)",
    )
    p.set_defaults(func=cmd_train)


def cmd_train(args) -> int:
    """One run. The stop signals (ssmbench.train.stop.STOP_SIGNALS) are caught from the
    command line's first step (ssmbench.train.stop imports no torch): one during the
    seconds of imports and set-up stops the job with the resumable exit status too, and
    says so."""
    return stoppable("train", _train, args, "before training started")


def _train(args, stop) -> int:
    from ssmbench.train import restart_with_malloc_env

    check_names(args)
    if args.fast_malloc:  # before torch is imported: the re-executed process pays it once
        restart_with_malloc_env(["-m", "ssmbench.cli", *sys.argv[1:]])
    from ssmbench.config import Job, job_spec, source_changed
    from ssmbench.precedence import option_origin
    from ssmbench.project_lock import ProjectLockError
    from ssmbench.run_lock import RunBusy, acquire_run
    from ssmbench.staleness import other_suites_record, record_state
    from ssmbench.train.checkpoint import checkpoint_path
    from ssmbench.train.progress import ProgressBar, progress_log
    from ssmbench.train.protocol import run_job
    from ssmbench.train.record import RecordWriteError

    # an option's value is a place of its own (origin "command line option --max-epochs"),
    # in the run's settings and its record
    options = {"max_epochs": args.max_epochs} if args.max_epochs is not None else None
    params = load(args, options)
    check_known(args, params)
    job = Job(args.benchmark, args.dataset, args.model, args.fold)
    spec = job_spec(params, job)
    # --threads is how the run executes, not a setting: its origin goes with the record's
    spec["origins"]["threads"] = (
        option_origin("threads") if args.threads is not None
        else f"default (ssmbench train --threads {DEFAULT_THREADS})"
    )  # fmt: skip
    threads = DEFAULT_THREADS if args.threads is None else args.threads
    if (spec.get("tuned") or {}).get("missing"):
        from ssmbench.config import ConfigError

        raise ConfigError(
            f"{spec['tuned']['file']}: {args.model} is tuned on {args.benchmark} "
            f"(params.yaml tuning.searches) but has no tuned parameters yet; run the tune "
            f"stage first: `ssmbench tune --benchmark {args.benchmark} --dataset "
            f"{args.dataset} --model {args.model}`"
        )
    record = _record_path(args, params, job)
    # The run's checkpoint (resume after a stop signal, a time limit or a hard kill) is
    # paths.checkpoints/{benchmark}/{dataset}/{model}/fold{k}.pt: no rule passes it. Its
    # run lock beside it: one trainer per run (ssmbench.run_lock).
    checkpoint = inside(checkpoint_path(params["paths"]["checkpoints"], job), params, "checkpoints")
    try:
        acquire_run(checkpoint, f"{job.benchmark}/{job.dataset}/{job.model}/fold{job.fold}")
    except (RunBusy, ProjectLockError) as exc:
        log(f"ssmbench train: error: {exc}")
        return 1
    changed = source_changed(params, args.benchmark, args.dataset)
    if changed:
        log(
            f"warning: {args.benchmark}/{args.dataset}: its raw copy no longer stands for "
            f"its source: {changed}. `ssmbench train` reads (and judges a record current "
            f"against) the prepared copy of what was fetched; fetch and prepare it again "
            f"(`ssmbench fetch --benchmark {args.benchmark} --dataset {args.dataset}`, then "
            f"`ssmbench prepare`, or rerun the workflow) to train on the source as it is"
        )
    other = None if args.replace else other_suites_record(record, spec, params["suite"])
    if other:
        from ssmbench.config import ConfigError
        from ssmbench.staleness import KEEP_BOTH

        raise ConfigError(
            f"{other}: not replaced; "
            + KEEP_BOTH.format(model=args.model, replace="ssmbench train --replace")
        )
    if not args.force and record_state(record, spec).current:
        # a retried group job or a workflow-code change runs a finished run again
        log(f"{datetime.now().astimezone().isoformat(timespec='seconds')} {record} is current: "
            "kept, not trained again")  # fmt: skip
        return 0
    # on a terminal, a progress bar (epoch, losses, time left); in a log, a line per epoch
    shown = progress_log(log, f"{job.model} {job.benchmark}/{job.dataset} fold {job.fold}")
    try:
        result = run_job(
            spec, record, threads=threads, log=shown, checkpoint_path=checkpoint, stop=stop
        )
    except RecordWriteError as exc:  # a full disk: the previous record is kept
        kept = f"; checkpoint {checkpoint} kept, a retry only tests" if checkpoint.is_file() else ""
        log(f"ssmbench train: error: {exc}{kept}")
        return 1
    finally:
        if isinstance(shown, ProgressBar):
            shown.close()
    log(f"wrote {record}: test_error={result['test_error']:.4f} best_epoch={result['best_epoch']}")
    return 0


def _record_path(args, params, job) -> Path:
    """The run's record: the contract's path under paths.runs. --record (what the train
    rule passes) must name that same file: status, the report and the staleness check
    read a run's record there, and nowhere else."""
    from ssmbench.config import ConfigError

    own = inside(job.record_path(params["paths"]["runs"]), params, "runs")
    if args.record is None:
        return own
    if Path(args.record).resolve() != own.resolve():
        raise ConfigError(
            f"--record: {args.record} is not the record of {job.benchmark}/{job.dataset}/"
            f"{job.model}/fold{job.fold}, which is {own} (paths.runs in {args.params}); "
            "leave --record out or pass that path"
        )
    return Path(args.record)
