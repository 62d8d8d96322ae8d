"""`ssmbench` command line: what the Snakemake rules and DVC stages call.

    ssmbench check                      validate params.yaml, print the suite's grid size
    ssmbench check-model FAMILY [--set KEY=VALUE ...]
                                        the model contract on a family (package.module:Class)
    ssmbench grid                       list the suite's jobs
    ssmbench suites                     list the suites (file, runs, searches, description)
    ssmbench fetch   --benchmark B --dataset D [--force]
    ssmbench prepare --benchmark B --dataset D
    ssmbench split   --benchmark B --dataset D --fold K [--out DIR]
    ssmbench train   --benchmark B --dataset D --model M --fold K
    ssmbench explain --benchmark B --dataset D --model M [--fold K] [--format table|json]
    ssmbench report  [--list-outputs | --show-tables | --published]
    ssmbench complexity --channels C --classes K --length L | --table4 [--csv F]
    ssmbench datasets [--benchmark B] [--domain D] [--format table|csv]
    ssmbench status  [--state STATE ...] [--format table|csv|json]
    ssmbench plan    [--epochs max|records] [--cpu-machine M] [--gpu-machine M]
                     [--check [DIR]]
    ssmbench offline pack --out FILE [--no-wheels] [--without PACKAGE ...]
    ssmbench offline unpack BUNDLE [--site DIR | --venv DIR] [--no-prepare]
    ssmbench offline records --out FILE [--all]
    ssmbench offline merge ARCHIVE [--dry-run]

Every command but `datasets`, `check-model` and `locked` reads params.yaml (--params), the
suite (--suite, default: params.yaml's `suite`) and training settings over both (--set),
each given before the command or after it (`ssmbench --suite S check` or `ssmbench check
--suite S`; two different values are refused); `datasets` prints the dataset catalog,
`check-model` runs the model contract on a class and `locked` runs a command under the
project lock; `offline` takes them after its step (`ssmbench offline pack --suite S`), and
its `unpack` passes them to the fetch and prepare it runs. Each command's --help ends with
an example.
Errors in the inputs exit with status 2 and one message naming what is wrong; a file
operation the machine refuses (a full disk, a read-only folder, a folder where a file
should be: ssmbench.os_errors) exits with status 1 and one line naming the file.
--benchmark, --dataset, --model and --suite are names, never paths (ssmbench.data.names),
and must be entries of params.yaml; `train --record` may only name the run's own record
under paths.runs; nothing is read or written before they are checked, and no command
writes outside the roots that params.yaml's `paths` name.

Each command's parser (``add_parser``) and body live in the module named for it: `ssmbench
plan` in ssmbench/cli/plan.py; fetch, prepare and split in data.py, check and grid in
check.py; common.py holds what they share.
"""

from __future__ import annotations

import argparse
import os
import sys

from ssmbench.cli import (
    check,
    check_model,
    complexity,
    data,
    datasets,
    explain,
    locked,
    offline,
    plan,
    report,
    status,
    suites,
    train,
    tune,
)
from ssmbench.cli.common import add_config_arguments, log, merge_config_arguments

__all__ = ["build_parser", "main"]

#: The command modules, in the order `ssmbench --help` lists their commands. Each one's
#: ``add_parser(sub)`` adds its commands' parsers, whose ``func`` is the command.
COMMANDS = (
    check, check_model, suites, data, train, tune, report, complexity, datasets, explain, status,
    plan, offline, locked,
)  # fmt: skip


#: The commands that read no params.yaml: no --params, --suite or --set after them.
READS_NO_CONFIG = frozenset({"check-model", "datasets", "locked"})
#: The commands made of steps (`ssmbench offline pack`): each step takes --params, --suite
#: and --set after it, the command itself none.
HAS_STEPS = frozenset({"offline"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ssmbench", description=__doc__.split("\n\n")[0])
    add_config_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    for name, command in sub.choices.items():
        if name not in READS_NO_CONFIG | HAS_STEPS:  # --params, --suite, --set after the verb too
            add_config_arguments(command, after=True)
    return parser


#: The commands that stop on SIGTERM, SIGUSR1, SIGINT and SIGHUP through
#: ssmbench.train.stop (checkpointed where there is state, exit status 75, no traceback):
#: a signal recorded while the command line started is theirs to take up.
STOPS_CLEANLY = frozenset({"train", "tune"})


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: sys.argv's arguments when None). The stop signals are
    recorded from its first step (ssmbench.train.stop.catch_early). As the program
    (``argv`` None) it ignores them once it returns: the process is exiting with the status
    its log names, and a signal while the interpreter shuts down (Python's own handlers
    are gone by then) changes nothing; called with ``argv`` (in-process) it gives them
    back to their handlers."""
    from ssmbench.train.stop import catch_early, ignore_stop_signals, release_early

    catch_early()
    try:
        return _main(argv)
    finally:
        if argv is None:
            ignore_stop_signals()
        else:
            release_early(deliver=False)


def _config_error() -> type[Exception]:
    """params.yaml's error (ssmbench.params_file.ConfigError); where its reader cannot be
    imported (no PyYAML: `ssmbench offline unpack` before the project's packages are
    installed), a class no command raises, as none can read params.yaml there."""
    try:
        from ssmbench.params_file import ConfigError
    except ImportError:

        class ConfigError(Exception):
            pass

    return ConfigError


def _main(argv: list[str] | None) -> int:
    from ssmbench.train.stop import release_early

    parser = build_parser()
    args = parser.parse_args(argv)
    if (problem := merge_config_arguments(args)) is not None:
        parser.error(problem)
    ConfigError = _config_error()
    from ssmbench.data.errors import DataError
    from ssmbench.report.errors import RecordError
    from ssmbench.search_space import SearchError

    try:
        if args.command not in STOPS_CLEANLY:
            release_early()  # its own handlers; a signal that came meanwhile, delivered
        return args.func(args)
    except KeyboardInterrupt:
        # Ctrl-C in a command that has nothing to checkpoint: one line, no traceback (what
        # it was writing is written whole or not at all: ssmbench.io)
        log(f"ssmbench {args.command}: interrupted")
        return 130
    except (ConfigError, DataError, RecordError, SearchError, FileNotFoundError) as exc:
        # Bad input: one message naming the file or field. Anything else is a bug and
        # keeps its traceback.
        log(f"ssmbench {args.command}: error: {exc}")
        return 2
    except BrokenPipeError:
        # The reader stopped early (`ssmbench complexity --table4 | head`): no traceback,
        # and nothing more for Python to flush into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        # A full disk, a read-only or forbidden folder, a folder where a file should be:
        # the machine's state, not a bug. One line naming the file and what to do.
        from ssmbench.os_errors import is_refusal, one_line

        if not is_refusal(exc):
            raise
        log(f"ssmbench {args.command}: error: {one_line(exc)}")
        return 1
    except Exception as exc:
        # A run that diverged (non-finite loss) is neither bad input nor a bug: one line,
        # exit 1. Only a run that imported the checks can raise it, so torch is not loaded
        # here for other commands.
        checks = sys.modules.get("ssmbench.train.checks")
        if checks is None or not isinstance(exc, checks.DivergedError):
            raise
        log(f"ssmbench {args.command}: error: {exc}")
        return 1
