"""A record and its curve are one unit; optional work never costs a finished run; a
checkpoint is trusted only as it was written.

* a failed record write (a full disk, simulated by an fsync that fails with ENOSPC on the
  record's file) leaves the previous record and the curve that matches it, and
  `ssmbench status`, the report and the staleness check all see that previous run;
* a curve that is not its record's (a run killed between publishing its curve and its
  record) is not trusted by any reader, and an orphan curve (no record) is ignored and
  replaced by the next run;
* a checkpoint that cannot be written (a full or read-only tmpfs as root; torch.save
  failing elsewhere) is a warning in the log and the record is written;
* a SIGTERM before training starts exits with the resumable status 75 and says so;
* an edited checkpoint (one tensor value changed, still loadable) is discarded, logged.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import make_project, signal_at_training_batch, tool_env

from ssmbench.config import Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params
from ssmbench.report.figures import load_curves
from ssmbench.staleness import record_state
from ssmbench.status import run_status
from ssmbench.train import checkpoint as ckpt
from ssmbench.train.checkpoint import RESUME_EXIT_CODE, TrainingInterrupted
from ssmbench.train.protocol import run_job

JOB = Job("uea", "BasicMotions", "MS4", 0)
EPOCHS = 3  # params.yaml of the project copy: the current run has 3 epochs


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    def edit(params):
        params["benchmarks"]["uea"]["max_epochs"] = EPOCHS
        params["protocol"]["checkpoint_min_seconds"] = 0

    root = make_project(tmp_path_factory.mktemp("integrity") / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def params_of(project: Path) -> dict:
    return read_params(project / "params.yaml")


def spec_of(project: Path, **settings) -> dict:
    spec = job_spec(params_of(project), JOB)
    spec["settings"].update(settings)
    spec["prepared_dir"] = str(project / spec["prepared_dir"])
    return spec


@pytest.fixture
def record(project) -> Path:
    """The run's record path in the project copy, emptied of earlier tests' files."""
    folder = JOB.record_path(project / "results/runs").parent
    shutil.rmtree(project / "results/runs", ignore_errors=True)
    shutil.rmtree(project / "checkpoints", ignore_errors=True)
    shutil.rmtree(project / "logs", ignore_errors=True)
    folder.mkdir(parents=True)
    return JOB.record_path(project / "results/runs")


def curve_epochs(path: Path) -> int:
    with open(path) as handle:
        return len(list(csv.DictReader(handle)))


def fail_record_fsync(monkeypatch, record_name: str) -> None:
    """A full disk when the record's bytes reach it: fsync of any file whose name holds
    `record_name` (its temporary or staged file) fails with ENOSPC."""
    real = os.fsync

    def fsync(fd):
        if record_name in os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def quiet(_):
    pass


# ------------------------------------------------------------- the record and its curve
def test_failed_record_write_keeps_the_previous_record_and_its_curve(project, record, monkeypatch):
    run_job(spec_of(project), record, log=quiet)  # the previous, current run: 3 epochs
    curve = record.with_name("fold0.curve.csv")
    before = (record.read_bytes(), curve.read_bytes())
    fail_record_fsync(monkeypatch, "fold0.json")
    with pytest.raises(OSError) as failed:
        run_job(spec_of(project, max_epochs=2), record, log=quiet)  # a new run, 2 epochs
    monkeypatch.undo()
    message = str(failed.value)
    assert str(record) in message and "previous record fold0.json" in message, message
    assert "kept" in message and "No space left on device" in message, message
    assert (record.read_bytes(), curve.read_bytes()) == before  # the old pair, untouched
    assert curve_epochs(curve) == EPOCHS
    assert not [p.name for p in record.parent.iterdir() if p.name.startswith(".")]

    assert record_state(record, job_spec(params_of(project), JOB), project).current
    assert run_status(params_of(project), JOB, project).state == "done"
    curves = load_curves(project / "results/runs")
    assert len(curves) == EPOCHS and set(curves["fold"]) == {0}


def test_full_disk_on_a_first_record_leaves_no_orphan_curve(project, record, monkeypatch):
    fail_record_fsync(monkeypatch, "fold0.json")
    with pytest.raises(OSError) as failed:
        run_job(spec_of(project), record, log=quiet)
    monkeypatch.undo()
    assert str(record) in str(failed.value) and "no record or curve was published" in str(
        failed.value
    )
    assert list(record.parent.iterdir()) == []  # no curve, no temporary file


def test_full_disk_on_the_record_is_a_clear_error_of_ssmbench_train(
    project, record, monkeypatch, capsys
):
    from ssmbench.cli import main

    monkeypatch.chdir(project)
    assert main(["train", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4",
                 "--fold", "0"]) == 0  # fmt: skip
    fail_record_fsync(monkeypatch, "fold0.json")
    rc = main(["train", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4",
               "--fold", "0", "--force", "--max-epochs", "2"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1, err
    line = [x for x in err.splitlines() if x.startswith("ssmbench train: error:")]
    assert line and "could not write results/runs/uea/BasicMotions/MS4/fold0.json" in line[0]
    assert "No space left on device (ENOSPC)" in line[0], line
    assert "the previous record fold0.json and its curve were kept" in line[0], line
    assert "checkpoints/uea/BasicMotions/MS4/fold0.pt kept, a retry only tests" in line[0]
    assert json.loads(record.read_text())["epochs_run"] == EPOCHS


def test_a_curve_that_is_not_its_records_is_not_trusted(project, record, caplog):
    """A run killed between publishing its curve and its record: the new curve lies beside
    the previous record."""
    run_job(spec_of(project), record, log=quiet)
    curve = record.with_name("fold0.curve.csv")
    lines = curve.read_text().splitlines()
    curve.write_text("\n".join(lines[:-1]) + "\n")  # another run's curve: one epoch fewer
    state = record_state(record, job_spec(params_of(project), JOB), project)
    assert not state.current
    assert "its curve file fold0.curve.csv is not the one written with it" in state.why
    status = run_status(params_of(project), JOB, project)
    assert status.state == "edited" and "not the one written with it" in status.detail
    with caplog.at_level("WARNING", logger="ssmbench.report"):
        curves = load_curves(project / "results/runs")
    assert curves.empty
    (line,) = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert line == (
        f"curve {curve} left out: it is not the curve of the record beside it, fold0.json "
        f"(its curve file fold0.curve.csv is not the one written with it)"
    )


def test_an_orphan_curve_is_ignored_and_replaced(project, record):
    curve = record.with_name("fold0.curve.csv")
    curve.write_text("epoch,train_loss\n1,0.5\n")  # a curve without a record
    assert load_curves(project / "results/runs").empty
    assert run_status(params_of(project), JOB, project).state == "missing"
    written = run_job(spec_of(project), record, log=quiet)
    assert curve_epochs(curve) == EPOCHS and written["curve_sha256"]
    assert record_state(record, job_spec(params_of(project), JOB), project).current
    assert len(load_curves(project / "results/runs")) == EPOCHS


# --------------------------------------------------- checkpoints are optional work
def _mount_tmpfs(folder: Path, options: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the torch.save test covers the rest)")
    folder.mkdir(parents=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.mark.parametrize(
    "options, cause",
    [("size=16k", "No space left on device"), ("ro,size=16k", "Read-only file system")],
    ids=["full", "read-only"],
)
def test_a_checkpoint_folder_that_refuses_writes_costs_no_record(
    project, record, tmp_path, options, cause
):
    folder = tmp_path / "ckpt"
    _mount_tmpfs(folder, options)
    try:
        lines = []
        result = run_job(spec_of(project), record, log=lines.append,
                         checkpoint_path=folder / "fold0.pt")  # fmt: skip
    finally:  # lazily if still busy: a test never leaves a mount behind
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)
    warnings = [line for line in lines if line.startswith("warning: checkpoint")]
    assert warnings and str(folder / "fold0.pt") in warnings[0], lines
    assert "could not be written" in warnings[0] and "training goes on" in warnings[0]
    assert any(cause in line or "enforce fail" in line for line in warnings), warnings
    assert result["epochs_run"] == EPOCHS and record.is_file()


def test_torch_save_failing_is_a_warning_and_the_record_is_written(
    project, record, tmp_path, monkeypatch
):
    def save(*args, **kwargs):  # what torch's zip writer raises on a full disk
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64")

    monkeypatch.setattr(torch, "save", save)
    lines = []
    checkpoint = tmp_path / "ckpt" / "fold0.pt"
    result = run_job(spec_of(project), record, log=lines.append, checkpoint_path=checkpoint)
    warnings = [line for line in lines if line.startswith("warning: checkpoint")]
    assert len(warnings) == EPOCHS, lines  # one a periodic checkpoint
    assert f"checkpoint {checkpoint} could not be written: [enforce fail" in warnings[0]
    assert result["epochs_run"] == EPOCHS and record.is_file() and not checkpoint.exists()


def test_a_stop_whose_checkpoint_cannot_be_written_says_so(project, record, tmp_path, monkeypatch):
    def save(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", save)
    signal_at_training_batch(monkeypatch, 12)
    lines = []
    checkpoint = tmp_path / "ckpt" / "fold0.pt"
    with pytest.raises(TrainingInterrupted) as stopped:
        run_job(spec_of(project), record, log=lines.append, checkpoint_path=checkpoint)
    assert stopped.value.code == RESUME_EXIT_CODE and stopped.value.checkpoint is None
    stop_line = [line for line in lines if line.startswith("SIGUSR1 at epoch 2")]
    assert stop_line and "could not be written" in stop_line[0], lines
    assert "the next attempt starts over" in stop_line[0]


# --------------------------------------------------------- SIGTERM before training
def _train_command(project: Path) -> list[str]:
    return [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", JOB.benchmark,
            "--dataset", JOB.dataset, "--model", JOB.model, "--fold", str(JOB.fold)]  # fmt: skip


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (/proc's SigCgt mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def test_sigterm_during_start_up_exits_resumable_and_says_so(project, record):
    proc = subprocess.Popen(
        _train_command(project), cwd=project, env=tool_env(project), text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not _catches_sigterm(proc.pid) and proc.poll() is None:
        assert time.monotonic() < deadline, "no SIGTERM handler after 60 s"
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)  # the process is still importing and setting up
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == RESUME_EXIT_CODE, err
    assert "ssmbench train: stopped by SIGTERM before training started (no checkpoint); " \
        f"exit status {RESUME_EXIT_CODE}" in err, err  # fmt: skip
    assert not record.exists()


def test_sigterm_pending_at_start_is_a_resumable_stop(project, record):
    """SIGTERM sent at once to a job started with it blocked (as by a wrapper that masks
    it across its fork): the run unblocks it first thing and stops, never trains on."""
    proc = subprocess.Popen(
        _train_command(project), cwd=project, env=tool_env(project), text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}),
    )  # fmt: skip
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == RESUME_EXIT_CODE, err
    assert "stopped by SIGTERM before training started" in err, err
    assert not record.exists()


# ------------------------------------------------------------ checkpoint integrity
def test_an_edited_checkpoint_is_discarded_with_a_log_line(project, record, tmp_path, monkeypatch):
    checkpoint = tmp_path / "ckpt" / "fold0.pt"
    spec = spec_of(project)
    signal_at_training_batch(monkeypatch, 12)  # in epoch 2 (9 batches an epoch)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    monkeypatch.undo()
    state = torch.load(checkpoint, weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name].view(-1)[0] += 1.0  # one value changed; the file still loads
    torch.save(state, checkpoint)
    assert ckpt._malformed(torch.load(checkpoint, weights_only=True)) is None

    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    changed = [line for line in lines if "was changed after it was written" in line]
    assert changed and str(checkpoint) in changed[0], lines
    assert "discarded, starting from epoch 1" in changed[0]
    assert not any(line.startswith("resumed") for line in lines)
    assert json.loads(record.read_text())["epochs_run"] == EPOCHS


def test_an_untouched_checkpoint_still_resumes(project, record, tmp_path, monkeypatch):
    checkpoint = tmp_path / "ckpt" / "fold0.pt"
    spec = spec_of(project)
    signal_at_training_batch(monkeypatch, 12)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    monkeypatch.undo()
    state = torch.load(checkpoint, weights_only=True)
    assert state["content_sha256"] == ckpt.content_digest(state)
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    assert any(line.startswith("resumed from") for line in lines), lines
