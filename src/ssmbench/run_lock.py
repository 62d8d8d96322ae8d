"""One trainer per run: the run lock.

``ssmbench train`` holds an exclusive ``fcntl.flock`` on ``<checkpoint>.lock`` (beside the
run's checkpoint, ``paths.checkpoints/{benchmark}/{dataset}/{model}/fold{k}.lock``) for as
long as it runs. A second trainer of the same run (one started by hand while Snakemake
trains it, or a new Snakemake's job beside the orphaned trainer of a killed one) is
refused with a message naming the first: two trainers of one run would write one
checkpoint and one record over each other.

The lock is the project lock's kind (ssmbench.project_lock): it goes with its process
however that ends, is never handed to a child, and its file, never followed through a
symbolic link, holds the description of its last holder.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ssmbench.project_lock import Holder, ProjectBusy, describe, holder_at, open_lock, try_lock

__all__ = ["RunBusy", "acquire_run", "run_lock_path"]

#: lock files this process holds, by path (released when the process exits)
_HELD: dict[Path, int] = {}


class RunBusy(ProjectBusy):
    """Another process trains the run; the message names it and says what to do."""


def run_lock_path(checkpoint: str | os.PathLike) -> Path:
    """The run lock beside the run's checkpoint ``checkpoint`` (``fold0.pt`` ->
    ``fold0.lock``)."""
    return Path(checkpoint).with_suffix(".lock")


def acquire_run(checkpoint: str | os.PathLike, run: str) -> Path:
    """Take the run lock of the run ``run`` whose checkpoint is ``checkpoint``, until this
    process exits; a second call for the same run is a no-op. Raises RunBusy naming the
    holder, or ssmbench.project_lock.ProjectLockError where the file cannot be locked."""
    path = run_lock_path(checkpoint)
    if path in _HELD:
        return path
    fd = open_lock(path)
    if not try_lock(fd, path, fcntl.LOCK_EX):
        os.close(fd)
        found = holder_at(path)
        who = f"pid {found.pid}" if isinstance(found, Holder) else "that process"
        stop = f"kill {found.pid}" if isinstance(found, Holder) else "kill it"
        raise RunBusy(
            f"{run} is being trained by another process, which holds its run lock {path}\n"
            f"{describe(found)}\n"
            "  (two trainers of one run would write its checkpoint and record over each "
            "other)\n"
            f"What to do: wait for {who} to finish (its record is then current, and this "
            f"command keeps it), or, if it is no longer wanted, stop it ({stop}: it "
            "checkpoints and exits) and run this again.",
            found,
        )
    os.set_inheritable(fd, False)
    text = Holder.of_this_process().to_text().encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)
    _HELD[path] = fd
    return path
