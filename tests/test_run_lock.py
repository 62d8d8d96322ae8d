"""One trainer per run (ssmbench.run_lock): a second `ssmbench train` of a run that is
being trained is refused with one message naming the first, and the first runs on to its
record; the lock goes with its process; a link in the lock file's place is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_project, tool_env
from test_resume import EPOCHS, JOB, Train, paths

from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.project_lock import ProjectLockError
from ssmbench.run_lock import RunBusy, acquire_run, run_lock_path


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("runlock") / "proj")
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def _train(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", JOB.benchmark,
         "--dataset", JOB.dataset, "--model", JOB.model, "--fold", str(JOB.fold),
         "--max-epochs", str(EPOCHS)],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_second_trainer_of_a_run_is_refused_and_the_first_finishes(project):
    record, checkpoint = paths(project)
    first = Train(project)
    first.wait_for("epoch    2/")
    second = _train(project)
    rc, log = first.finish()
    assert second.returncode == 1, second.stderr
    message = second.stderr
    assert message.startswith(
        "ssmbench train: error: uea/BasicMotions/MS4/fold0 is being trained by another "
        f"process, which holds its run lock {run_lock_path(checkpoint).relative_to(project)}"
    ), message
    assert f"pid      {first.proc.pid} on host" in message and "Traceback" not in message
    assert f"What to do: wait for pid {first.proc.pid} to finish" in message
    assert rc == 0 and record.is_file(), log
    # the lock went with the first process: the run trains again without a word
    record.unlink()
    again = _train(project)
    assert again.returncode == 0, again.stderr
    record.unlink()


def test_the_run_lock_is_taken_once_per_process_and_refuses_links(tmp_path):
    checkpoint = tmp_path / "uea" / "BasicMotions" / "MS4" / "fold0.pt"
    checkpoint.parent.mkdir(parents=True)
    assert acquire_run(checkpoint, "run") == run_lock_path(checkpoint)
    assert acquire_run(checkpoint, "run") == run_lock_path(checkpoint)  # a no-op
    other = tmp_path / "other.pt"
    run_lock_path(other).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ProjectLockError, match="is a symbolic link"):
        acquire_run(other, "run")
    assert not (tmp_path / "elsewhere").exists()
    assert issubclass(RunBusy, Exception)
