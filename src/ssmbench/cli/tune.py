"""`ssmbench tune`: one hyperparameter search (Optuna, validation only) and its tuned
file."""

from __future__ import annotations

from pathlib import Path

from ssmbench.cli.common import (
    add_run_arguments,
    check_known,
    example,
    inside,
    load,
    log,
    stoppable,
    thread_count,
)  # fmt: skip


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="one hyperparameter search (Optuna, validation only) -> its tuned file",
        **example("ssmbench tune --benchmark uea6 --dataset Heartbeat --model TIDES"),
    )
    add_run_arguments(p, "benchmark", "dataset", "model")
    p.add_argument("--threads", type=thread_count, default=1, help="torch threads (1 to the CPUs)")
    p.add_argument(
        "--force", action="store_true", help="search again even if the tuned file is current"
    )
    p.set_defaults(func=cmd_tune)


def cmd_tune(args) -> int:
    """One search: an Optuna study of one (benchmark, dataset, model) on its search's fold,
    validation metric only, then its tuned file. Resumes the study it finds; several
    workers may run it at once on one study. SIGTERM/SIGUSR1: the trial in progress is
    queued again and the exit status says resume."""
    return stoppable("tune", _tune, args, "before tuning started")


def _tune(args, stop) -> int:
    from ssmbench.config import TRAINING_KEYS, ConfigError, Job, tuned_path, untuned_spec
    from ssmbench.os_errors import write_target_problem
    from ssmbench.search_space import SearchError, check_journal, search_of, tuned_is_current
    from ssmbench.train.tune import run_search

    params = load(args)
    check_known(args, params)
    search = search_of(params, args.benchmark, args.model)
    if search is None:
        raise ConfigError(
            f"--model {args.model}: not tuned on benchmark {args.benchmark!r}; add it to "
            f"tuning.searches.{args.model}.benchmarks in {args.params}"
        )
    job = Job(args.benchmark, args.dataset, args.model, int(search["fold"]))
    base = untuned_spec(params, job)
    tuned = inside(tuned_path(params, job), params, "tuned")
    if (problem := write_target_problem(tuned, "the tuned file")) is not None:
        raise SearchError(problem)  # found now, not after the whole search
    if not args.force and tuned_is_current(tuned, search, base):
        log(f"{tuned} is current (same search and run): kept, not tuned again")
        return 0
    tuning = params["tuning"]
    journal = inside(
        Path(params["paths"]["tuning"]) / args.benchmark / args.dataset / f"{args.model}.journal",
        params, "tuning",
    )  # fmt: skip
    check_journal(journal)
    try:
        result = run_search(
            base, search, training_keys=TRAINING_KEYS, storage=tuning["storage"],
            journal_path=journal, tuned_path=tuned, stale_after_s=float(tuning["stale_after_s"]),
            threads=args.threads, log=log, stop=stop,
        )  # fmt: skip
    except OSError as exc:
        if exc.filename is None and _in_journal_backend(exc):
            exc.filename = str(journal)  # Optuna's journal writes name no file
        raise
    log(f"tuned {args.benchmark}/{args.dataset}/{args.model}: {result['metric']} "
        f"{result['best_value']:.6g} after {result['n_complete']} complete trials")  # fmt: skip
    return 0


def _in_journal_backend(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside Optuna's journal file backend (its appends to the
    journal, its lock beside it)."""
    import traceback

    return any(
        Path(frame.f_code.co_filename).parts[-3:-1] == ("storages", "journal")
        for frame, _ in traceback.walk_tb(exc.__traceback__)
    )
