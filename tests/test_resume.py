"""Preemption and time limits: a run stopped by SIGTERM/SIGUSR1, or killed with SIGKILL
after a periodic checkpoint, resumes and writes the record an uninterrupted run writes.

The subprocess tests run the real `ssmbench train` of a copy of the project and send it
real signals once its log shows it is training; the in-process tests send the signal to
this process at a chosen batch, so the stop lands exactly mid-epoch or after the best
epoch (early-stopping state)."""

from __future__ import annotations

import csv
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from conftest import make_project, signal_at_training_batch, tool_env

from ssmbench.config import Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params
from ssmbench.train import checkpoint as ckpt
from ssmbench.train import protocol
from ssmbench.train.checkpoint import RESUME_EXIT_CODE, TrainingInterrupted
from ssmbench.train.protocol import run_job

JOB = Job("uea", "BasicMotions", "MS4", 0)
EPOCHS = 40  # lr 1e-3 on BasicMotions: no early stop, ~0.06 s an epoch on one core
RESULT_KEYS = (
    "test_error", "test_loss", "test_accuracy", "best_val_loss", "best_val_accuracy",
    "best_epoch", "epochs_run", "stopped_early", "params", "n_train", "n_val",
)  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the project with BasicMotions prepared; checkpoints after every epoch."""

    def edit(params):
        params["protocol"]["checkpoint_min_seconds"] = 0

    root = make_project(tmp_path_factory.mktemp("resume") / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def spec_of(project: Path, max_epochs=EPOCHS, **settings) -> dict:
    params = read_params(project / "params.yaml")
    spec = job_spec(params, JOB)
    spec["settings"].update(max_epochs=max_epochs, **settings)
    spec["prepared_dir"] = str(project / spec["prepared_dir"])
    return spec


def quiet(_):
    pass


def curve_rows(record_path: Path) -> list[dict]:
    with open(record_path.with_name(record_path.stem + ".curve.csv")) as handle:
        return list(csv.DictReader(handle))


def assert_same_run(resumed: Path, reference: Path) -> None:
    got, want = json.loads(resumed.read_text()), json.loads(reference.read_text())
    for key in RESULT_KEYS:
        assert got[key] == want[key], (key, got[key], want[key])
    assert curve_rows(resumed) == curve_rows(reference)


@pytest.fixture(scope="module")
def reference(project, tmp_path_factory) -> Path:
    """The uninterrupted run (no checkpoint at all) that every resumed run must equal."""
    path = tmp_path_factory.mktemp("reference") / "fold0.json"
    run_job(spec_of(project), path, log=quiet)
    return path


class Train:
    """`ssmbench train` of the project copy as a real subprocess; its log read line by line."""

    def __init__(self, project: Path):
        self.project = project
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", JOB.benchmark,
             "--dataset", JOB.dataset, "--model", JOB.model, "--fold", str(JOB.fold),
             "--max-epochs", str(EPOCHS)],
            cwd=project, env=tool_env(project), text=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout=120) -> None:
        while True:
            line = self._queue.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"exited before {text!r}:\n{''.join(self.lines)}")
            self.lines.append(line)
            if text in line:
                return

    def finish(self, timeout=300) -> tuple[int, str]:
        rc = self.proc.wait(timeout=timeout)
        while (line := self._queue.get(timeout=30)) is not None:
            self.lines.append(line)
        return rc, "".join(self.lines)


def paths(project: Path) -> tuple[Path, Path]:
    return JOB.record_path(project / "results/runs"), ckpt.checkpoint_path(
        project / "checkpoints", JOB
    )


@pytest.mark.slow
def test_sigterm_mid_training_then_rerun_equals_uninterrupted(project, reference):
    record, checkpoint = paths(project)
    run = Train(project)
    run.wait_for("epoch    2/")
    run.proc.send_signal(signal.SIGTERM)  # SIGUSR1: the in-process tests below
    rc, log = run.finish()
    assert rc == RESUME_EXIT_CODE, log
    assert "SIGTERM at epoch" in log and "checkpoint written to" in log, log
    assert f"exit status {RESUME_EXIT_CODE}" in log, log
    assert not record.exists() and checkpoint.is_file()
    state = torch.load(checkpoint, weights_only=True)
    assert 2 <= len(state["curve"]) < EPOCHS and state["run"] == "uea/BasicMotions/MS4/fold0"
    assert set(state["rng"]) == {"python", "numpy", "torch", "cuda", "shuffle"}
    assert state["early_stopping"]["best_epoch"] >= 2 and state["early_stopping"]["best_state"]

    again = Train(project)
    rc, log = again.finish()
    assert rc == 0, log
    assert f"resumed from {checkpoint.relative_to(project)}: epoch {state['epoch']}" in log, log
    assert_same_run(record, reference)
    assert not checkpoint.exists()  # deleted once the record is written
    record.unlink()


@pytest.mark.slow
def test_sigkill_after_periodic_checkpoint_resumes(project, reference):
    record, checkpoint = paths(project)
    run = Train(project)
    run.wait_for("epoch    4/")  # epoch 3's checkpoint is written before epoch 4 starts
    run.proc.kill()
    rc, log = run.finish()
    assert rc == -signal.SIGKILL and not record.exists()
    state = torch.load(checkpoint, weights_only=True)
    assert state["step"] == 0 and state["epoch"] >= 4  # a periodic one: at an epoch's start

    rc, log = Train(project).finish()
    assert rc == 0, log
    assert f"epoch {state['epoch']}, batch 0/" in log and "resumed from" in log, log
    assert_same_run(record, reference)
    assert not checkpoint.exists()
    record.unlink()


# ------------------------------------------------------------------ in-process, exact spot
# lr 1e-2, patience 3: BasicMotions' MS4 run peaks at epoch 8 and stops early after 11
EARLY_STOP = {"lr": 0.01, "early_stopping_patience": 3}


@pytest.fixture(scope="module")
def early_stop_reference(project, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("early") / "fold0.json"
    record = run_job(spec_of(project, 30, **EARLY_STOP), path, log=quiet)
    assert record["stopped_early"] and record["best_epoch"] + 3 == record["epochs_run"]
    return path


def test_stop_mid_epoch_after_the_best_epoch_resumes_exactly(
    project, early_stop_reference, tmp_path, monkeypatch
):
    best = json.loads(early_stop_reference.read_text())["best_epoch"]
    spec = spec_of(project, 30, **EARLY_STOP)
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    # BasicMotions: 36 training rows, batch 4: 9 batches an epoch; stop in epoch best + 2,
    # during its 5th batch (abandoned: the checkpoint is after the 4th): since_best is 1,
    # the best weights are 1 epoch old
    signal_at_training_batch(monkeypatch, 9 * (best + 1) + 5)
    handlers = {s: signal.getsignal(s) for s in ckpt.STOP_SIGNALS}
    with pytest.raises(TrainingInterrupted) as stopped:
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    assert stopped.value.code == RESUME_EXIT_CODE and stopped.value.signal_name == "SIGUSR1"
    assert {s: signal.getsignal(s) for s in ckpt.STOP_SIGNALS} == handlers  # restored
    state = torch.load(checkpoint, weights_only=True)
    assert (state["epoch"], state["step"]) == (best + 2, 4)
    assert state["early_stopping"]["since_best"] == 1
    assert state["early_stopping"]["best_epoch"] == best and not record.exists()

    monkeypatch.undo()
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    assert any(f"epoch {best + 2}, batch 4/9" in line for line in lines), lines
    assert_same_run(record, early_stop_reference)
    assert not checkpoint.exists()


def test_random_state_of_dropout_is_restored(project, tmp_path, monkeypatch):
    """With dropout the model draws from torch's generator on every batch: a resumed run
    matches only if that state is restored too."""
    spec = spec_of(project, 6)
    spec["model_params"]["dropout"] = 0.3
    reference = tmp_path / "reference" / "fold0.json"
    run_job(spec, reference, log=quiet)
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    signal_at_training_batch(monkeypatch, 9 * 2 + 5)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    monkeypatch.undo()
    run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    assert_same_run(record, reference)


def test_checkpoint_of_other_settings_is_discarded(
    project, early_stop_reference, tmp_path, monkeypatch
):
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    signal_at_training_batch(monkeypatch, 30, signal.SIGTERM)
    with pytest.raises(TrainingInterrupted):  # a checkpoint made with lr 0.02
        run_job(spec_of(project, 30, **{**EARLY_STOP, "lr": 0.02}), record, log=quiet,
                checkpoint_path=checkpoint)  # fmt: skip
    assert checkpoint.is_file()
    monkeypatch.undo()
    lines = []
    run_job(
        spec_of(project, 30, **EARLY_STOP), record, log=lines.append, checkpoint_path=checkpoint
    )
    assert any("made with other settings or code" in line and "discarded" in line for line in lines)
    assert not any(line.startswith("resumed") for line in lines)
    assert_same_run(record, early_stop_reference)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


def _not_a_checkpoint(path: Path) -> None:
    torch.save({"format": ckpt.FORMAT, "epoch": 3}, path)


@pytest.mark.parametrize("damage", [_truncated, _garbage, _not_a_checkpoint])
def test_unreadable_checkpoint_is_logged_and_the_run_starts_afresh(
    project, early_stop_reference, tmp_path, monkeypatch, damage
):
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    spec = spec_of(project, 30, **EARLY_STOP)
    signal_at_training_batch(monkeypatch, 20, signal.SIGTERM)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    monkeypatch.undo()
    damage(checkpoint)
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    unreadable = [line for line in lines if "is unreadable" in line]
    assert unreadable and str(checkpoint) in unreadable[0], lines
    assert "starting from epoch 1" in unreadable[0]
    assert not any(line.startswith("resumed") for line in lines)
    assert_same_run(record, early_stop_reference)
    assert not checkpoint.exists()


def test_estimator_exits_with_the_retry_status_and_no_checkpoint(project, tmp_path, monkeypatch):
    from ssmbench.models.estimators import ExtraTreesModel

    real_fit = ExtraTreesModel.fit

    def fit(self, X, y):  # SIGTERM arrives while the forest is being fitted
        os.kill(os.getpid(), signal.SIGTERM)
        return real_fit(self, X, y)

    monkeypatch.setattr(ExtraTreesModel, "fit", fit)
    params = read_params(project / "params.yaml")
    spec = job_spec(params, Job("uea", "BasicMotions", "ET", 0))
    spec["prepared_dir"] = str(project / spec["prepared_dir"])
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    with pytest.raises(TrainingInterrupted) as stopped:
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    assert stopped.value.code == RESUME_EXIT_CODE and stopped.value.checkpoint is None
    assert not record.exists() and not checkpoint.exists()
    assert not record.with_name("fold0.curve.csv").exists()


def _signal_before(monkeypatch, name: str, signum) -> None:
    """Send `signum` to this process as protocol.<name> starts."""
    real = getattr(protocol, name)

    def wrapped(*args, **kwargs):
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(protocol, name, wrapped)


def test_stop_while_testing_resumes_with_training_done(
    project, early_stop_reference, tmp_path, monkeypatch
):
    want = json.loads(early_stop_reference.read_text())
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    spec = spec_of(project, 30, **EARLY_STOP)
    _signal_before(monkeypatch, "score_test_sets", signal.SIGTERM)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    state = torch.load(checkpoint, weights_only=True)
    assert state["early_stopping"]["stopped_early"] and len(state["curve"]) == want["epochs_run"]
    assert not record.exists()

    monkeypatch.undo()
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    assert not any(line.startswith("epoch ") for line in lines), lines  # nothing retrained
    assert_same_run(record, early_stop_reference)
    assert not checkpoint.exists()


def test_stop_while_the_record_is_written_keeps_the_checkpoint(
    project, early_stop_reference, tmp_path, monkeypatch
):
    """The record is finished (never failed on a signal), but the job's shell got the
    signal too: Snakemake reports the job failed and removes its outputs. The retry then
    resumes from the finished training instead of starting over."""
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    spec = spec_of(project, 30, **EARLY_STOP)
    _signal_before(monkeypatch, "write_run", signal.SIGUSR1)
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    assert_same_run(record, early_stop_reference)
    assert checkpoint.is_file() and any("kept, so a retry" in line for line in lines), lines

    monkeypatch.undo()
    record.unlink()  # what Snakemake does with the outputs of a failed job
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    assert any(line.startswith("resumed from") for line in lines)
    assert not any(line.startswith("epoch ") for line in lines), lines
    assert_same_run(record, early_stop_reference)
    assert not checkpoint.exists()


def test_adamw_with_parameter_groups_resumes_exactly(project, tmp_path, monkeypatch):
    """AdamW over the _optim-hint groups (weight decay on the ordinary weights only): the
    checkpoint holds each group's state, and the resumed run equals the uninterrupted one."""
    spec = spec_of(project, 4, optimizer="adamw", weight_decay=0.05)
    reference = tmp_path / "reference" / "fold0.json"
    run_job(spec, reference, log=quiet)
    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    signal_at_training_batch(monkeypatch, 9 + 4)
    with pytest.raises(TrainingInterrupted):
        run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    groups = torch.load(checkpoint, weights_only=True)["optimizer"]["param_groups"]
    assert sorted(g["weight_decay"] for g in groups) == [0.0, 0.05]
    monkeypatch.undo()
    lines = []
    run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    assert any(line.startswith("resumed from") for line in lines), lines
    assert_same_run(record, reference)
