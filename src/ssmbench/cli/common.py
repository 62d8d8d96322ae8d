"""What the commands share: messages on stderr, params.yaml loaded after the name arguments
are checked, the checks of --benchmark/--dataset/--model against params.yaml, the roots a
command may write under, and a command's own --suite."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def log(message: str) -> None:
    """One message on stderr, flushed: a command's notices and errors; stdout is its output."""
    print(message, file=sys.stderr, flush=True)


def load(args, options: dict | None = None):
    """params.yaml (--params) with its suite (--suite), once the name arguments are checked;
    ``options``: the training settings the command's own options give (``train
    --max-epochs``: {"max_epochs": 3}), a place of their own over --set."""
    from ssmbench.config import ConfigError, load_params
    from ssmbench.precedence import command_line_settings

    check_names(args)
    try:
        command_line = command_line_settings(getattr(args, "settings", []) or [])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return load_params(
        args.params, suite=args.suite, command_line=command_line, command_options=options
    )


def check_names(args) -> None:
    """--benchmark, --dataset, --model and --suite become path components: each must be a
    plain name (ssmbench.data.names), checked before any file is read or written."""
    from ssmbench.config import ConfigError
    from ssmbench.data.names import name_problem

    for kind in ("benchmark", "dataset", "model", "suite"):
        value = getattr(args, kind, None)
        if value is not None and (problem := name_problem(kind, value)) is not None:
            raise ConfigError(f"--{kind}: {problem}")
    fold = getattr(args, "fold", 0)
    if fold < 0:
        raise ConfigError(f"--fold: {fold} is not a fold number (an integer >= 0)")
    from ssmbench.config import MAX_SEED

    if fold > MAX_SEED:
        raise ConfigError(
            f"--fold: {fold} is above {MAX_SEED}: a run's seed is seed_base + fold, and "
            "numpy takes seeds below 2**32"
        )


def check_known(args, params) -> None:
    """--benchmark, --dataset (and --model) name entries of params.yaml."""
    from ssmbench.config import ConfigError, unknown_name

    model = getattr(args, "model", None)
    unknown = unknown_name(params, args.benchmark, args.dataset, model, source=args.params)
    if unknown is not None:
        kind, why = unknown
        raise ConfigError(f"--{kind}: {why}")


def inside(path: Path, params: dict, root_key: str) -> Path:
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


#: What --benchmark, --dataset, --model and --fold name, for every command that takes them.
RUN_ARGUMENTS = {
    "benchmark": "a benchmark of params.yaml's `benchmarks` (uea, uea6, monster, physiome, ...)",
    "dataset": "a dataset of that benchmark (e.g. BasicMotions; `ssmbench datasets` lists them)",
    "model": "a model of params.yaml's `models` (e.g. MS4N, or a variant's name)",
    "fold": "the fold, 0 to the benchmark's folds - 1; the run's seed is seed_base + fold",
}

#: The options every command that reads params.yaml takes, before the verb or after it.
CONFIG_OPTIONS = ("params", "suite", "settings")


def add_config_arguments(parser: argparse.ArgumentParser, after: bool = False) -> None:
    """--params, --suite and --set: before the command (``after`` False: the main parser's,
    with their defaults) or after it (``after`` True: left out, the one before the command,
    or its default, stands; ``merge_config_arguments`` refuses two different values)."""
    suffix, default = ("_after", argparse.SUPPRESS) if after else ("", None)
    parser.add_argument(
        "--params", dest="params" + suffix, metavar="FILE",
        default=argparse.SUPPRESS if after else "params.yaml",
        help="the config file (default: params.yaml)",
    )  # fmt: skip
    parser.add_argument(
        "--suite", dest="suite" + suffix, default=default, metavar="NAME",
        help="a suite of params.yaml's studies (default: params.yaml's `suite`; `ssmbench "
        "suites` lists them)",
    )  # fmt: skip
    parser.add_argument(
        "--set", dest="settings" + suffix, action="append",
        default=argparse.SUPPRESS if after else [], metavar="KEY=VALUE",
        help="a training setting over every place of params.yaml, for this command "
        "(explain shows it as 'command line'); repeatable",
    )  # fmt: skip


def merge_config_arguments(args: argparse.Namespace) -> str | None:
    """Folds the config options given after the command into those before it; returns what
    is wrong (an option given on both sides with different values), else None. --set
    collects both sides' settings."""
    for name in CONFIG_OPTIONS:
        after = getattr(args, name + "_after", None)
        if after is None:
            continue
        delattr(args, name + "_after")
        if name == "settings":
            args.settings = [*args.settings, *after]
            continue
        before = getattr(args, name)
        default = "params.yaml" if name == "params" else None
        if before not in (default, after):
            return (
                f"--{name} is given twice, {before!r} before the command and {after!r} after "
                f"it; give it once"
            )
        setattr(args, name, after)
    return None


def example(command: str) -> dict:
    """A command's parser arguments for its --help to end with one example of its use."""
    return {
        "epilog": f"example:\n  {command}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def add_run_arguments(parser: argparse.ArgumentParser, *names: str, required: bool = True) -> None:
    """--benchmark, --dataset, --model, --fold (those of ``names``), with their help."""
    for name in names:
        if name == "fold":
            parser.add_argument(
                "--fold", type=int, required=required, default=None if required else 0,
                help=RUN_ARGUMENTS["fold"] + ("" if required else " (default 0)"),
            )  # fmt: skip
        else:
            parser.add_argument(f"--{name}", required=required, help=RUN_ARGUMENTS[name])


def thread_count(text: str) -> int:
    """--threads: 1 to this machine's CPU count (torch cannot use more; some builds crash
    on a count far above it)."""
    cpus = os.cpu_count() or 1
    n = _integer(text)
    if not 1 <= n <= cpus:
        raise argparse.ArgumentTypeError(f"{n}: give 1 to {cpus} (this machine's CPUs)")
    return n


def epoch_count(text: str) -> int:
    """--max-epochs: at least 1."""
    n = _integer(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give at least 1, or leave it out")
    return n


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def stoppable(command: str, body, args, when: str) -> int:
    """``body(args, stop)`` with the stop signals caught first thing (ssmbench.train.stop
    imports no torch): a signal during imports and set-up, ``when``, stops the job with
    the resumable exit status, and says so."""
    from ssmbench.train.stop import StopRequest, TrainingInterrupted

    stop = StopRequest(log, immediate=True, when=when)
    try:
        with stop:
            return body(args, stop)
    except TrainingInterrupted as stopped:
        log(f"ssmbench {command}: {stopped}")
        return stopped.code
