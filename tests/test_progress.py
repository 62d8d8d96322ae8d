"""What `ssmbench train` shows while it trains: on a terminal one progress bar (the epoch,
the losses, the best epoch, the time left), in a log or a pipe one line per epoch
(ssmbench.train.progress). Real: `ssmbench train` on BasicMotions under a pseudo-terminal
and under a pipe."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest
from conftest import make_project, tool_env

from ssmbench.train.progress import EPOCH_LINE, ProgressBar, progress_log


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal_and_the_log_itself_elsewhere():
    lines: list[str] = []
    assert progress_log(lines.append, stream=io.StringIO()) == lines.append
    shown = progress_log(lines.append, "MS4N uea/BasicMotions fold 0", stream=_Terminal())
    assert isinstance(shown, ProgressBar)


def test_the_bar_takes_the_epoch_lines_and_prints_the_others():
    out = _Terminal()
    bar = ProgressBar(out, "MS4N uea/BasicMotions fold 0")
    bar("[MS4N] scan: none")  # before the first epoch: printed as it is
    bar("epoch    1/3 train_loss=1.2000 train_acc=0.400 val_loss=1.1000 val_acc=0.500 "
        "best_epoch=1 (0.50s)")  # fmt: skip
    bar("warning: something to see")
    bar("epoch    2/3 train_loss=0.9000 train_acc=0.600 best_epoch=1 (0.40s)")  # no validation
    bar.close()
    bar("test (best epoch 1): loss=1.0000 error=0.2500")
    text = out.getvalue()
    assert "[MS4N] scan: none\n" in text and "warning: something to see\n" in text
    assert "test (best epoch 1): loss=1.0000 error=0.2500\n" in text
    assert "MS4N uea/BasicMotions fold 0 epoch 2/3" in text
    assert "train_loss=0.9000 train_acc=0.600 best_epoch=1" in text
    assert "val_loss=1.1000 val_acc=0.500" in text
    assert "to epoch 3]" in text and "<" in text  # elapsed < time left
    assert "epoch    1/3" not in text  # the plain line is the bar's, not printed


def _train(project, env, stderr) -> None:
    return subprocess.Popen(
        [sys.executable, "-m", "ssmbench", "train", "--benchmark", "uea", "--dataset",
         "BasicMotions", "--model", "MS4N", "--fold", "0", "--max-epochs", "3", "--force"],
        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
    )  # fmt: skip


@pytest.mark.integration
def test_train_shows_a_bar_on_a_terminal_and_lines_in_a_pipe(tmp_path):
    project = make_project(tmp_path / "proj", lambda p: p.update(suite="tiny"))
    env = tool_env(project)
    for step in (["fetch"], ["prepare"]):
        subprocess.run([sys.executable, "-m", "ssmbench", *step, "--benchmark", "uea",
                        "--dataset", "BasicMotions"], cwd=project, env=env, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
    piped = _train(project, env, subprocess.PIPE)
    lines = piped.communicate(timeout=600)[1].decode().splitlines()
    assert piped.returncode == 0
    epochs = [line for line in lines if line.startswith("epoch")]
    assert len(epochs) == 3 and all(EPOCH_LINE.match(line) for line in epochs), epochs

    leader, follower = pty.openpty()  # a terminal of 160 columns
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))
    proc = _train(project, env, follower)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 600)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=600) == 0
    os.close(leader)
    shown = b"".join(chunks).decode(errors="replace")
    assert "MS4N uea/BasicMotions fold 0 epoch 3/3" in shown
    assert "to epoch 3]" in shown and "best_epoch=" in shown and "val_loss=" in shown
    assert not any(line.lstrip("\r").startswith("epoch ") for line in shown.splitlines())
    assert "wrote " in shown  # the messages after the bar
