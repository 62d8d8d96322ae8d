"""Every stop signal a run can get ends it the same clean way: SIGTERM (a time limit),
SIGINT (Ctrl-C) and SIGHUP (the terminal closing) at any moment of `ssmbench train`: the
checkpoint kept, no traceback, exit status 75, no staging file left; a second signal while
it stops changes nothing; a signal while the command line is still starting is a
resumable stop too. A command with nothing to checkpoint ends on Ctrl-C with one line.

The subprocess tests run the real `ssmbench train` of a project copy (tests/test_resume.py)
and send it real signals."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import make_project, tool_env
from test_resume import EPOCHS, JOB, Train, paths

from ssmbench.data import fetch_uea, prepare_uea
from ssmbench.train.checkpoint import RESUME_EXIT_CODE


@pytest.fixture(autouse=True)
def signals_at_their_defaults():
    """SIGINT and SIGHUP at their defaults while a test starts its processes: a test
    worker (pytest-xdist's) may ignore them, and a child inherits an ignored signal, which
    a run then rightly keeps ignoring (as under nohup)."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the project with BasicMotions prepared; checkpoints after every epoch."""

    def edit(params):
        params["protocol"]["checkpoint_min_seconds"] = 0

    root = make_project(tmp_path_factory.mktemp("signals") / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    return root


def _no_record(project: Path) -> None:
    """The run as if never trained (a test before may have left its record or checkpoint)."""
    for path in paths(project):
        path.unlink(missing_ok=True)


def _clean_stop(project: Path, rc: int, log: str, name: str) -> None:
    record, checkpoint = paths(project)
    assert rc == RESUME_EXIT_CODE, log
    assert f"stopped by {name}" in log or f"{name} at epoch" in log, log
    assert f"exit status {RESUME_EXIT_CODE}" in log and "Traceback" not in log, log
    assert not record.exists() and checkpoint.is_file()
    assert torch.load(checkpoint, weights_only=True)["run"] == "uea/BasicMotions/MS4/fold0"
    left = [p.name for p in checkpoint.parent.iterdir() if p.name.endswith(".tmp")]
    assert not left, left
    checkpoint.unlink()


@pytest.mark.parametrize("name", ["SIGINT", "SIGHUP"])
def test_sigint_and_sighup_mid_training_stop_as_sigterm_does(project, name):
    _no_record(project)
    run = Train(project)
    run.wait_for("epoch    2/")
    run.proc.send_signal(signal.Signals[name])
    rc, log = run.finish()
    _clean_stop(project, rc, log, name)


def test_a_second_sigterm_while_stopping_changes_nothing(project):
    _no_record(project)
    run = Train(project)
    run.wait_for("epoch    2/")
    run.proc.send_signal(signal.SIGTERM)
    for _ in range(5):  # while it checkpoints, and after
        time.sleep(0.05)
        if run.proc.poll() is None:
            run.proc.send_signal(signal.SIGTERM)
    rc, log = run.finish()
    _clean_stop(project, rc, log, "SIGTERM")


#: sitecustomize of a child interpreter: the signal argv names is sent to the process
#: while its command line builds its parser (before any command runs)
SIGNAL_AT_START = """
import os, signal, sys
import ssmbench.cli as cli

real = cli.build_parser


def build_parser():
    os.kill(os.getpid(), signal.Signals[os.environ["SIGNAL_AT_START"]])
    return real()


cli.build_parser = build_parser
"""


def _run_signalled_at_start(project: Path, tmp_path: Path, name: str, *command: str):
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(SIGNAL_AT_START)
    env = tool_env(project)
    env["PYTHONPATH"] = f"{hook}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(hook)
    env["SIGNAL_AT_START"] = name
    return subprocess.run(
        [sys.executable, "-m", "ssmbench.cli", *command],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_while_the_command_line_starts_is_a_resumable_stop(project, tmp_path, name):
    _no_record(project)
    done = _run_signalled_at_start(
        project, tmp_path, name, "train", "--benchmark", JOB.benchmark, "--dataset",
        JOB.dataset, "--model", JOB.model, "--fold", str(JOB.fold), "--max-epochs", str(EPOCHS),
    )  # fmt: skip
    assert done.returncode == RESUME_EXIT_CODE, done.stderr
    assert f"stopped by {name} before training started" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    record, checkpoint = paths(project)
    assert not record.exists()


def test_other_commands_end_as_the_signal_ends_them(project, tmp_path):
    """A command that has nothing to checkpoint: SIGTERM during start-up ends it as SIGTERM
    does (status -15); Ctrl-C is one line, status 130, no traceback."""
    done = _run_signalled_at_start(project, tmp_path, "SIGTERM", "suites")
    assert done.returncode == -signal.SIGTERM and done.stdout == "", done
    done = _run_signalled_at_start(project, tmp_path, "SIGINT", "suites")
    assert done.returncode == 130 and done.stdout == "", done
    assert done.stderr.strip() == "ssmbench suites: interrupted"


@pytest.mark.integration
def test_sigterm_to_snakemake_alone_finishes_the_running_job_and_counts_the_runs(tmp_path):
    """A SIGTERM to Snakemake alone starts no new job and lets the running one finish:
    its record is written, the next run is not started, and after Snakemake's own "did
    not complete" (which follows) the workflow counts the suite's runs by state."""

    def edit(params):
        params["suites"]["stop"] = {
            "description": "a SIGTERM to Snakemake: two runs of a few seconds each",
            "benchmarks": {"uea": ["BasicMotions"]},
            "models": ["MS4"],
            "folds": [0, 1],
            "overrides": {"max_epochs": 150, "early_stopping_patience": 1000},
        }
        params["suite"] = "stop"

    root = make_project(tmp_path / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", "runs"],
        cwd=root, env=tool_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    logs = root / "logs/train/uea/BasicMotions/MS4"
    deadline = time.monotonic() + 240
    while not any("epoch    2/" in p.read_text() for p in logs.glob("fold*.log")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # Snakemake's process only, not its job's
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0, out
    assert "Will exit after finishing currently running jobs" in out, out
    records = list((root / "results/runs/uea/BasicMotions/MS4").glob("fold?.json"))
    assert len(records) == 1, (records, out)  # the running job finished, no other began
    lines = out.splitlines()
    counted = [i for i, line in enumerate(lines) if line.startswith("ssmbench: suite 'stop'")]
    assert len(counted) == 1, out
    assert lines[counted[0]].startswith("ssmbench: suite 'stop': 2 runs: 1 done, "), out
    assert "and also a SIGTERM to Snakemake" in lines[counted[0]], out
    assert lines.index("At least one job did not complete successfully.") > counted[0], out
