"""The signals that ask a run to stop, and the exception that stops it.

SLURM sends SIGTERM when a job reaches its time limit or is preempted (and SIGKILL a grace
period later), and can send a chosen signal some time before the limit (``sbatch
--signal``); a terminal sends SIGINT (Ctrl-C) and, when it closes, SIGHUP. A run catches
all four (`STOP_SIGNALS`, `StopRequest`) and exits with `RESUME_EXIT_CODE`, checkpointed
where it has state worth keeping (``ssmbench.train.checkpoint``), with no traceback; the
retried or requeued job resumes from there.

This module imports no torch. The command line records the stop signals from its first
line on (`catch_early`), before its imports and parsing, so a signal then is a resumable
stop of ``ssmbench train`` too (``StopRequest`` takes the recorded one up when it starts);
a command that does not stop this way gets the handlers it started with back, and a
signal recorded meanwhile delivered then (`release_early`). A second signal while a run
stops is recorded and changes nothing: the exit status stays the one the log names. Only
the interpreter's own start (before the command line's first line runs) is not covered.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Exit status of a run stopped by SIGTERM/SIGUSR1 (sysexits' EX_TEMPFAIL, "try again
#: later"): its checkpoint is written and the next attempt resumes from it. Snakemake
#: retries any failed job (``--retries``); the status tells a stopped run from a crash.
RESUME_EXIT_CODE = 75

#: The signals a run turns into "checkpoint and exit".
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)

#: The stop signals that arrived between `catch_early` and the `StopRequest` (or
#: `release_early`) that takes them up; and the handlers `catch_early` replaced.
_early: list[int] = []
_before_early: dict[int, Any] = {}


#: of STOP_SIGNALS, those a process started ignoring keep being ignored (``nohup`` ignores
#: SIGHUP, a shell ignores SIGINT in a background job): such a run asked not to be stopped
#: by them
_IGNORABLE = (signal.SIGINT, signal.SIGHUP)


def _catches(sig: int) -> bool:
    return not (sig in _IGNORABLE and signal.getsignal(sig) is signal.SIG_IGN)


def _record_early(signum, frame) -> None:
    _early.append(signum)


def catch_early() -> None:
    """Record the stop signals from now on (the command line's first step), until a
    `StopRequest` or `release_early` takes them up. Only in the main thread."""
    if threading.current_thread() is not threading.main_thread() or _before_early:
        return
    for sig in filter(_catches, STOP_SIGNALS):
        _before_early[sig] = signal.signal(sig, _record_early)


def ignore_stop_signals() -> None:
    """Ignore the stop signals from now on: for a process that is exiting (the interpreter
    drops Python-level handlers as it shuts down; an ignored signal stays ignored)."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def release_early(deliver: bool = True) -> None:
    """The handlers `catch_early` replaced, back; with ``deliver``, a stop signal
    recorded meanwhile is raised now, as if it had just come (a command that does not stop
    through `StopRequest` then ends as that signal ends it)."""
    for sig, handler in _before_early.items():
        signal.signal(sig, handler)
    _before_early.clear()
    pending = _early[:1]
    _early.clear()
    if deliver and pending:
        signal.raise_signal(pending[0])


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


class BatchAbandoned(BaseException):
    """Raised by the signal handler inside `StopRequest.abandoning`: the work in flight
    there (a training batch before its optimizer step, a validation pass) is thrown away,
    so that a stop never waits for it. A BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = int(signum)


class StopRequest:
    """Catches `STOP_SIGNALS` while active (a context manager) and restores the previous
    handlers after. By default the handler only records the first signal (``signum``);
    the training loop looks at it between batches. With ``immediate=True`` (no state worth
    saving yet) it raises `TrainingInterrupted` at once, saying `when`, until `disarm`
    is called. Inside `abandoning()` a signal raises `BatchAbandoned` at once: the
    training loop throws the batch in flight away and saves the state before it, so a
    stop takes seconds however long a batch is (SLURM's KillWait between SIGTERM and
    SIGKILL is 30 s by default).

    A process that started with SIGINT or SIGHUP ignored (``nohup``, a background job)
    keeps ignoring it. Entering also unblocks the signals: a process started with them
    blocked (a wrapper that masks them across its fork) would otherwise never see its time
    limit coming.
    Signal handlers can only be installed from the main thread; elsewhere the signals are
    left to their current handlers (logged)."""

    def __init__(self, log: Callable[[str], None] = print, immediate: bool = False, when: str = ""):
        self.log = log
        self.immediate = immediate
        self.when = when
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._abandon = False

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    def disarm(self) -> None:
        """From now on only record signals (the record is being written: never fail now)."""
        self.immediate = False

    @contextmanager
    def abandoning(self) -> Iterator[None]:
        """Work that a stop signal may interrupt at once (`BatchAbandoned`); a signal that
        came before raises it on entry. The caller undoes what the work changed.

        Python runs a signal handler between bytecodes of the main thread: a single long
        C++ operation (one kernel, or a backward pass the autograd engine runs outside the
        main thread, as on CUDA) still finishes first; a scan written as a Python loop,
        forward or backward, is interrupted within one step."""
        if self.signum is not None:
            raise BatchAbandoned(self.signum)
        self._abandon = True
        try:
            yield
        finally:
            self._abandon = False

    def _handle(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum
        if self.immediate:
            raise TrainingInterrupted(signum, when=self.when)
        if self._abandon:
            self._abandon = False
            raise BatchAbandoned(signum)

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is not threading.main_thread():
            self.log("not in the main thread: SIGTERM/SIGUSR1 will not checkpoint this run")
            return self
        for sig in filter(_catches, STOP_SIGNALS):
            self._previous[sig] = signal.signal(sig, self._handle)
        try:  # a signal pending while blocked arrives here, in our handler
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            if _early:  # one that came before this request: as if it came now
                signum = _early[0]
                _early.clear()
                self._handle(signum, None)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
