"""What ``ssmbench train`` shows while a run trains: on a terminal one progress bar (tqdm)
with the epoch, the last losses, the best epoch and the time left to ``max_epochs``;
anywhere else (a log file, a pipe, a SLURM job) the run's own lines, one per epoch.

The bar is a ``log`` function: the epoch loop (``ssmbench.train.protocol``) logs each epoch
as ``epoch {e}/{max} train_loss=... [val_loss=... val_acc=...] best_epoch=... (...s)``, and
the bar takes those lines into itself and prints every other message above itself
(``tqdm.write``), so a warning or the test result is never overwritten. The epoch loop is
result code (its digest decides whether a record is current: ``ssmbench.staleness``); the
display reads its lines instead of hooking into it, so that how progress looks never
makes a record stale. The time left counts every epoch to ``max_epochs`` at the mean pace
of the epochs seen (early stopping may end the run sooner).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TextIO

__all__ = ["EPOCH_LINE", "ProgressBar", "progress_log"]

#: an epoch's line as ``protocol._DeepTraining._next_epoch`` writes it
EPOCH_LINE = re.compile(
    r"^epoch\s+(?P<epoch>\d+)/(?P<max>\d+) (?P<scores>train_loss=\S+ .*?)\s*"
    r"best_epoch=(?P<best>\d+) \((?P<seconds>[\d.]+)s\)$"
)


class ProgressBar:
    """A ``log`` function that shows a run's epoch lines as one bar on ``stream``."""

    def __init__(self, stream: TextIO, name: str = ""):
        self.stream = stream
        self.name = name
        self.bar = None

    def __call__(self, message: str) -> None:
        match = EPOCH_LINE.match(message)
        if match is None:
            self._write(message)
            return
        epoch, most = int(match["epoch"]), int(match["max"])
        described = f"{self.name} epoch {epoch}/{most}".strip()
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=most, initial=epoch - 1, desc=described, file=self.stream,
                dynamic_ncols=True,
                bar_format="{desc} |{bar}| [{elapsed}<{remaining} to epoch {total}]{postfix}",
            )  # fmt: skip
        self.bar.set_description_str(described, refresh=False)
        scores = " ".join(match["scores"].split())
        self.bar.set_postfix_str(f"{scores} best_epoch={match['best']}", refresh=False)
        self.bar.update(epoch - self.bar.n)

    def _write(self, message: str) -> None:
        if self.bar is None:
            print(message, file=self.stream, flush=True)
        else:
            self.bar.write(message, file=self.stream)

    def close(self) -> None:
        """Leaves the bar as it ended; later messages go below it."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def progress_log(
    log: Callable[[str], None], name: str = "", stream: TextIO | None = None
) -> Callable[[str], None]:
    """``log`` itself, or, when ``stream`` (default: stderr, where ``ssmbench train`` logs)
    is a terminal, a ``ProgressBar`` over it (call its ``close`` at the end)."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return ProgressBar(stream, name) if isatty is not None and isatty() else log
