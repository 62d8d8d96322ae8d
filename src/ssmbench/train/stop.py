"""The signals that ask a run to stop, and the exception that stops it.

SLURM sends SIGTERM when a job reaches its time limit or is preempted (and SIGKILL a grace
period later), and can send a chosen signal some time before the limit (``sbatch
--signal``). A run catches SIGTERM and SIGUSR1 (`StopRequest`) and exits with
`RESUME_EXIT_CODE`, checkpointed where it has state worth keeping
(``ssmbench.train.checkpoint``); the retried or requeued job resumes from there.

This module imports no torch: ``ssmbench train`` installs the handlers first thing, before
the seconds its imports and set-up take, so a signal then is a resumable stop too.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Exit status of a run stopped by SIGTERM/SIGUSR1 (sysexits' EX_TEMPFAIL, "try again
#: later"): its checkpoint is written and the next attempt resumes from it. Snakemake
#: retries any failed job (``--retries``); the status tells a stopped run from a crash.
RESUME_EXIT_CODE = 75

#: The signals a run turns into "checkpoint and exit".
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class TrainingInterrupted(SystemExit):
    """A run stopped on a signal. It exits the process with `RESUME_EXIT_CODE` (it is a
    SystemExit) unless a caller catches it (``ssmbench train`` logs it first). `when`
    says at which stage it stopped, when that is not training itself."""

    def __init__(self, signum: int, checkpoint: Path | None = None, when: str = ""):
        super().__init__(RESUME_EXIT_CODE)
        self.signum = int(signum)
        self.checkpoint = checkpoint
        self.when = when

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    def __str__(self) -> str:
        where = f"checkpoint {self.checkpoint}" if self.checkpoint else "no checkpoint"
        when = f" {self.when}" if self.when else ""
        return f"stopped by {self.signal_name}{when} ({where}); exit status {RESUME_EXIT_CODE}"


class StopRequest:
    """Catches `STOP_SIGNALS` while active (a context manager) and restores the previous
    handlers after. By default the handler only records the first signal (``signum``);
    the training loop looks at it between batches. With ``immediate=True`` (no state worth
    saving yet) it raises `TrainingInterrupted` at once, saying `when`, until `disarm`
    is called.

    Entering also unblocks the signals: a process started with them blocked (a wrapper
    that masks them across its fork) would otherwise never see its time limit coming.
    Signal handlers can only be installed from the main thread; elsewhere the signals are
    left to their current handlers (logged)."""

    def __init__(self, log: Callable[[str], None] = print, immediate: bool = False, when: str = ""):
        self.log = log
        self.immediate = immediate
        self.when = when
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    def disarm(self) -> None:
        """From now on only record signals (the record is being written: never fail now)."""
        self.immediate = False

    def _handle(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum
        if self.immediate:
            raise TrainingInterrupted(signum, when=self.when)

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is not threading.main_thread():
            self.log("not in the main thread: SIGTERM/SIGUSR1 will not checkpoint this run")
            return self
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        try:  # a signal pending while blocked arrives here, in our handler
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
