"""`ssmbench locked -- COMMAND ...`: run a command holding the project lock
(ssmbench.project_lock), as the DVC stages that run no Snakemake do; refused, with the
holder named, while another run holds the project. A command it runs that takes the lock
itself (`snakemake`, another `ssmbench locked`) runs under this one's
(ssmbench.project_lock: a lock its ancestor holds)."""

from __future__ import annotations

import argparse
import signal
import subprocess

from ssmbench.cli.common import example, log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "locked",
        help="run COMMAND holding the project lock (.ssmbench/project.lock in the working "
        "directory); refused while another snakemake or DVC stage holds it",
        **example("ssmbench locked -- ssmbench report"),
    )
    p.add_argument(
        "cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
        help="the command and its arguments, after --",
    )  # fmt: skip
    p.set_defaults(func=cmd_locked)


def cmd_locked(args) -> int:
    """Take the lock, run the command, return its exit status (128 + N when signal N ended
    it). The command does not inherit the lock: it is this process's, released when this
    process exits; SIGTERM is passed on to the command, and an interrupt (Ctrl-C reaches
    the command too) waits for it to end."""
    from ssmbench.project_lock import ProjectBusy, ProjectLockError, acquire

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        log("ssmbench locked: error: no command given (ssmbench locked -- COMMAND ...)")
        return 2
    try:
        acquire()
    except (ProjectBusy, ProjectLockError) as exc:
        log(f"ssmbench locked: error: {exc}")
        return 1
    proc = subprocess.Popen(command)
    signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signum))
    while True:
        try:
            status = proc.wait()
            break
        except KeyboardInterrupt:
            continue
    return status if status >= 0 else 128 - status
