"""A stop signal is honoured within seconds however long a batch takes: the training batch
(forward or backward) or the validation pass in flight is abandoned, the state before it is
checkpointed, and the resumed run equals an uninterrupted one. SLURM gives a job 30 s
(KillWait) between SIGTERM and SIGKILL; a batch of a selective model on MotorImagery on a
CPU takes longer than that. Each batch here is made slow on purpose (30 s of sleep, in
small steps, as a Python-loop scan spends its time) right after the signal is sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from conftest import make_project, tool_env
from test_resume import JOB, assert_same_run, quiet

from ssmbench.config import Job, job_spec
from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.params_file import read_params
from ssmbench.train import checkpoint as ckpt
from ssmbench.train.checkpoint import RESUME_EXIT_CODE, TrainingInterrupted
from ssmbench.train.objective import Objective
from ssmbench.train.protocol import run_job
from ssmbench.train.provenance import record_provenance
from ssmbench.train.run_setup import FoldData

SLOW = 30.0  # seconds a slowed batch would take
PROMPT = 5.0  # seconds within which the stop must come


def _sleep_slowly() -> None:
    end = time.monotonic() + SLOW
    while time.monotonic() < end:
        time.sleep(0.05)


class _SlowBackward(torch.autograd.Function):
    """The identity, with a backward that sends the signal, then takes `SLOW` seconds."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        os.kill(os.getpid(), signal.SIGUSR1)
        _sleep_slowly()
        return grad


def slow_batch(monkeypatch, n: int, where: str) -> None:
    """Make the n-th training batch (1-based, over epochs; where "forward" or "backward")
    or the validation of epoch n ("validation") send SIGUSR1 and then take `SLOW` seconds."""
    real_sums, real_score = Objective.batch_sums, FoldData.score
    count = {"train": 0}

    def batch_sums(self, out, yb, mb):
        if torch.is_grad_enabled():
            count["train"] += 1
            if count["train"] == n and where == "forward":
                os.kill(os.getpid(), signal.SIGUSR1)
                _sleep_slowly()
            elif count["train"] == n and where == "backward":
                out = _SlowBackward.apply(out)
        return real_sums(self, out, yb, mb)

    def score(self, model, rows, batch_size, device, stage, with_mae=False):
        if where == "validation" and stage.endswith(f"validation, epoch {n}"):
            os.kill(os.getpid(), signal.SIGUSR1)
            _sleep_slowly()
        return real_score(self, model, rows, batch_size, device, stage, with_mae)

    monkeypatch.setattr(Objective, "batch_sums", batch_sums)
    monkeypatch.setattr(FoldData, "score", score)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("stop") / "proj")
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


#: model, its settings, 9 training batches an epoch (BasicMotions: 36 rows, batch 4).
#: MS4 with dropout draws from torch's generator in its forward; FCN's batch norms move
#: their running statistics: both are undone when a batch is abandoned.
CASES = {
    "forward": ("MS4", {"dropout": 0.3}),
    "backward": ("FCN", {}),
    "validation": ("MS4", {"dropout": 0.3}),
}


def _spec(project: Path, model: str) -> dict:
    spec = job_spec(read_params(project / "params.yaml"), Job("uea", "BasicMotions", model, 0))
    spec["settings"]["max_epochs"] = 5
    spec["prepared_dir"] = str(project / spec["prepared_dir"])
    return spec


@pytest.mark.parametrize("where", sorted(CASES))
def test_a_slow_batch_is_abandoned_and_the_resumed_run_is_exact(
    project, tmp_path, monkeypatch, where
):
    model, model_params = CASES[where]
    spec = _spec(project, model)
    spec["model_params"].update(model_params)
    reference = tmp_path / "reference" / "fold0.json"
    run_job(spec, reference, log=quiet)

    record, checkpoint = tmp_path / "fold0.json", tmp_path / "ckpt" / "fold0.pt"
    n = 2 if where == "validation" else 9 + 6  # the 2nd epoch's validation, its 6th batch
    slow_batch(monkeypatch, n, where)
    lines: list[str] = []
    started = time.monotonic()
    with pytest.raises(TrainingInterrupted) as stopped:
        run_job(spec, record, log=lines.append, checkpoint_path=checkpoint)
    took = time.monotonic() - started
    assert took < PROMPT + 10, (took, lines)  # the whole run: set-up, two epochs, the stop
    assert stopped.value.code == RESUME_EXIT_CODE
    state = torch.load(checkpoint, weights_only=True)
    if where == "validation":  # all 9 batches of epoch 2 done, its validation abandoned
        assert (state["epoch"], state["step"]) == (2, 9)
        assert any("epoch 2, batch 9/9, its validation abandoned" in line for line in lines)
    else:  # the 6th batch of epoch 2 abandoned: the checkpoint is after the 5th
        assert (state["epoch"], state["step"]) == (2, 5)
        assert any("epoch 2, batch 5/9, its batch in flight abandoned" in line for line in lines)
    assert not record.exists()

    monkeypatch.undo()
    run_job(spec, record, log=quiet, checkpoint_path=checkpoint)
    assert_same_run(record, reference)
    resumed = record_provenance(record, json.loads(record.read_text()))["resumed"]
    assert resumed == [
        {
            "epoch": state["epoch"],
            "step": state["step"],
            "checkpoint_sha256": state["content_sha256"],
        }
    ]
    assert record_provenance(reference, json.loads(reference.read_text()))["resumed"] == []


def test_sigterm_during_a_slow_batch_exits_within_seconds(project, tmp_path):
    """`ssmbench train` as a real process: SIGTERM during a batch that would take 30 s ends
    the job with the resumable status within `PROMPT` seconds, its checkpoint written."""
    hook = tmp_path / "hook"
    hook.mkdir()
    # sitecustomize runs at the start of the child interpreter: the 12th training batch
    # announces itself on stderr and then sleeps
    (hook / "sitecustomize.py").write_text(
        textwrap.dedent(
            f"""
            import sys, time
            import torch
            from ssmbench.train.objective import Objective

            real, count = Objective.batch_sums, [0]

            def batch_sums(self, out, yb, mb):
                if torch.is_grad_enabled():
                    count[0] += 1
                    if count[0] == 12:
                        print("SLOW BATCH", file=sys.stderr, flush=True)
                        end = time.monotonic() + {SLOW}
                        while time.monotonic() < end:
                            time.sleep(0.05)
                return real(self, out, yb, mb)

            Objective.batch_sums = batch_sums
            """
        )
    )
    env = tool_env(project)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    log = tmp_path / "train.log"
    with open(log, "w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ssmbench.cli", "train", "--benchmark", JOB.benchmark,
             "--dataset", JOB.dataset, "--model", JOB.model, "--fold", str(JOB.fold),
             "--max-epochs", "5"],
            cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=handle,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while "SLOW BATCH" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        rc = proc.wait(timeout=SLOW + 30)
        took = time.monotonic() - sent
    text = log.read_text()
    assert rc == RESUME_EXIT_CODE, text
    assert took < PROMPT, (took, text)
    assert "SIGTERM at epoch 2, batch 2/9, its batch in flight abandoned" in text, text
    checkpoint = ckpt.checkpoint_path(project / "checkpoints", JOB)
    assert torch.load(checkpoint, weights_only=True)["step"] == 2
    checkpoint.unlink()
