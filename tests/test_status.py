"""`ssmbench status` and failure isolation.

Unit tests build records and logs by hand; the integration test runs the real Snakemake
on real UEA data with one corrupt prepared dataset and one model that raises, and checks
that the other runs finish, each failure is in its log, and `ssmbench status` says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO, make_project, tool_env, write_params

from ssmbench.cli import main
from ssmbench.config import Job, job_spec, load_params, suite_grid
from ssmbench.params_file import read_params
from ssmbench.staleness import sealed
from ssmbench.status import (
    LOG_TAIL_BYTES,
    last_error_line,
    run_status,
    suite_status,
    train_log_path,
)
from ssmbench.train.provenance import with_provenance

TRACEBACK = """\
[uea/BasicMotions/Broken/fold0] seed=0 device=cpu
Traceback (most recent call last):
  File "/x/ssmbench/cli.py", line 12, in main
    return args.func(args)
           ^^^^^^^^^^^^^^^
  File "/x/ssmbench/models/transformers.py", line 400, in _build_encoder
    raise ValueError(f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})")
ValueError: d_model (16) must be a multiple of n_heads (3)
"""


@pytest.fixture()
def params():
    return load_params(REPO / "params.yaml", suite="tiny")


def write_record(params, job: Job, root: Path, **changes) -> Path:
    """A record as `ssmbench train` writes it, with what matters for staleness."""
    spec = job_spec(params, job)
    record = {
        "benchmark": job.benchmark,
        "dataset": job.dataset,
        "model": job.model,
        "fold": job.fold,
        "model_params": spec["model_params"],
        "protocol": spec["settings"],
        "code_digest": spec["code"],
        "test_error": 0.1,
        **changes,
    }
    path = job.record_path(root / params["paths"]["runs"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sealed(record)))
    # its prepared folder present (empty unless a test prepares it: nothing to compare)
    (root / spec["prepared_dir"]).mkdir(parents=True, exist_ok=True)
    return path


def write_log(params, job: Job, root: Path, text: str, mtime: float | None = None) -> Path:
    path = train_log_path(root / params["paths"]["logs"], job)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# --- the last error line of a log ------------------------------------------------------


def test_traceback_gives_its_exception_line(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(TRACEBACK)
    assert last_error_line(log) == "ValueError: d_model (16) must be a multiple of n_heads (3)"


def test_chained_traceback_gives_the_last_exception(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(
        TRACEBACK
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        + 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert last_error_line(log) == (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )


def test_cli_error_line_with_its_indented_continuation(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(
        "epoch 1/2 train_loss=0.5 error=0.1\n"
        "ssmbench train: error: suite 'x' cannot get its data:\n"
        "  uea/Foo: no archive folder\n"
        "  uea/Bar: no archive folder\n"
    )
    assert last_error_line(log) == (
        "ssmbench train: error: suite 'x' cannot get its data: uea/Foo: no archive folder; "
        "uea/Bar: no archive folder"
    )


def test_slurm_time_limit_line_and_the_nearest_error_wins(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(
        TRACEBACK + "slurmstepd: error: *** JOB 42 ON node1 CANCELLED AT 2026-01-01T00:00:00 "
        "DUE TO TIME LIMIT ***\n"
    )
    assert "DUE TO TIME LIMIT" in last_error_line(log)


def test_progress_lines_are_not_errors(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(
        "epoch    1/300 train_loss=0.6 val_loss=0.5 best_epoch=1 (0.1s)\n"
        "test set dt0.1: loss=0.1 error=0.0200\n"
        "test (best epoch 1): loss=0.1 error=0.0200\n"
    )
    assert last_error_line(log) is None
    empty = tmp_path / "b.log"
    empty.write_text("")
    assert last_error_line(empty) is None


def test_only_the_tail_of_a_long_log_is_read(tmp_path):
    log = tmp_path / "a.log"
    progress = "epoch    1/300 train_loss=0.6 val_loss=0.5 best_epoch=1 (0.1s)\n"
    log.write_text(progress * (3 * LOG_TAIL_BYTES // len(progress)) + TRACEBACK)
    assert log.stat().st_size > 2 * LOG_TAIL_BYTES
    assert last_error_line(log).startswith("ValueError: d_model (16)")


# --- the state of each run ------------------------------------------------------------


def test_each_state(params, tmp_path):
    done, stale, failed, incomplete = suite_grid(params)  # tiny: 4 runs
    missing = Job("uea", "BasicMotions", "MS4N", 7)
    write_record(params, done, tmp_path)
    write_record(params, stale, tmp_path, protocol={"lr": 1.0})
    write_log(params, failed, tmp_path, TRACEBACK)
    write_log(params, incomplete, tmp_path, "epoch    3/2 train_loss=0.6 best_epoch=1 (0.1s)\n")
    states = {job: run_status(params, job, tmp_path) for job in (done, stale, failed, incomplete)}
    assert states[done].state == "done" and states[done].detail == ""
    assert states[stale].state == "stale"
    assert states[stale].detail.startswith(  # the keys that differ, the first three named
        "changed since the record: protocol settings (lr: 1.0 -> 0.001, batch_fraction: "
        "absent -> 0.1, "
    ) and states[stale].detail.endswith(" more)")
    assert "archive_dir" not in states[stale].detail  # where the data lie: no setting of a run
    assert states[failed].state == "failed"
    assert states[failed].detail == "ValueError: d_model (16) must be a multiple of n_heads (3)"
    assert states[failed].log == str(train_log_path(tmp_path / "logs", failed))
    assert states[incomplete].state == "incomplete"
    assert states[incomplete].detail.startswith("epoch    3/2")
    assert run_status(params, missing, tmp_path).state == "missing"


def test_run_stopped_for_preemption_is_incomplete_with_its_checkpoint(params, tmp_path):
    params["paths"]["checkpoints"] = "checkpoints"
    job = suite_grid(params)[0]
    write_log(
        params, job, tmp_path,
        "epoch    3/300 train_loss=0.6 val_loss=0.5 best_epoch=3 (0.1s)\n"
        "SIGTERM at epoch 4, batch 2/9: checkpoint written to checkpoints/uea/x.pt, the next "
        "attempt resumes from it; exiting with status 75\n",
    )  # fmt: skip
    status = run_status(params, job, tmp_path)
    assert status.state == "incomplete" and status.detail.startswith("SIGTERM at epoch 4")
    assert status.checkpoint == ""
    checkpoint = tmp_path / "checkpoints" / job.benchmark / job.dataset / job.model / "fold0.pt"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"not read")
    assert run_status(params, job, tmp_path).checkpoint == str(checkpoint)
    write_record(params, job, tmp_path)  # a done run shows no checkpoint
    assert run_status(params, job, tmp_path).checkpoint == ""


def test_stale_record_whose_rerun_failed_is_failed(params, tmp_path):
    job = suite_grid(params)[0]
    record = write_record(params, job, tmp_path, code_digest="0" * 16)
    old = record.stat().st_mtime
    # an error from before the record is not the rerun's
    write_log(params, job, tmp_path, TRACEBACK, mtime=old - 100)
    status = run_status(params, job, tmp_path)
    assert status.state == "stale" and "training code (0000000000000000 ->" in status.detail
    write_log(params, job, tmp_path, TRACEBACK, mtime=old + 100)
    status = run_status(params, job, tmp_path)
    assert status.state == "failed" and status.detail.startswith("ValueError: d_model")


def test_unreadable_record_is_stale_and_says_why(params, tmp_path):
    job = suite_grid(params)[0]
    path = job.record_path(tmp_path / "results" / "runs")
    path.parent.mkdir(parents=True)
    path.write_text('{"benchmark": "uea", ')  # cut short
    status = run_status(params, job, tmp_path)
    assert status.state == "stale" and status.detail.startswith(
        "record unreadable (JSONDecodeError"
    )


def test_changed_model_hyperparameters_make_the_record_stale(params, tmp_path):
    job = Job("uea", "BasicMotions", "MS4", 0)
    write_record(params, job, tmp_path)
    assert run_status(params, job, tmp_path).state == "done"
    params["models"]["MS4"]["dropout"] = 0.1
    status = run_status(params, job, tmp_path)
    assert status.state == "stale" and status.detail == (
        "changed since the record: model hyperparameters (dropout: 0.01 -> 0.1)"
    )


def test_status_opens_records_and_logs_only(params, tmp_path):
    """No dataset file is opened: of a prepared folder only its meta.json (the digests of
    the files it was made from and of its own files, which a current record holds; its
    files are only stat'ed)."""
    from ssmbench.data.prepared_files import seal_prepared

    grid = suite_grid(params)
    for job in grid[:2]:
        write_record(params, job, tmp_path)
    write_log(params, grid[2], tmp_path, TRACEBACK)
    prepared = tmp_path / "data" / "prepared" / "uea" / "BasicMotions"
    prepared.mkdir(parents=True, exist_ok=True)
    np.save(prepared / "X.npy", np.zeros((2, 1, 3), np.float32))
    (prepared / "meta.json").write_text("{}")
    seal_prepared(prepared)  # meta.json records X.npy, written after it
    opened = _record_opens(lambda: suite_status(params, root=tmp_path))
    assert str(grid[0].record_path(tmp_path / "results" / "runs")) in opened  # the hook sees
    assert str(train_log_path(tmp_path / "logs", grid[2])) in opened
    under_root = {Path(p).relative_to(tmp_path).parts[0] for p in opened if str(tmp_path) in p}
    assert under_root <= {"results", "logs", "data"}, opened
    assert {str(prepared / "meta.json")} >= {p for p in opened if "prepared" in p}, opened


_OPENS: list[str] | None = None


def _audit(event, args):
    if _OPENS is not None and event == "open" and isinstance(args[0], str | os.PathLike):
        _OPENS.append(os.fspath(args[0]))


def _record_opens(func) -> list[str]:
    """The files `func` opens (Python's audit hook; hooks cannot be removed, so one guarded
    hook serves every call)."""
    global _OPENS
    if not getattr(_record_opens, "installed", False):
        sys.addaudithook(_audit)
        _record_opens.installed = True
    _OPENS = []
    try:
        func()
        return list(_OPENS)
    finally:
        _OPENS = None


def test_cli_formats_and_filter(params, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    grid = suite_grid(params)
    write_record(params, grid[0], tmp_path)
    write_log(params, grid[1], tmp_path, TRACEBACK)
    argv = ["--params", str(REPO / "params.yaml"), "status", "--suite", "tiny"]

    assert main([*argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["suite"] == "tiny" and out["n_runs"] == len(grid) == 4
    assert out["counts"] == {"done": 1, "stale": 0, "failed": 1, "incomplete": 0, "missing": 2}
    assert [r["state"] for r in out["runs"]] == ["done", "failed", "missing", "missing"]

    assert main([*argv, "--format", "csv", "--state", "failed"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "benchmark,dataset,model,fold,state,detail,record,log,checkpoint"
    assert len(lines) == 2 and ",failed," in lines[1] and "n_heads (3)" in lines[1]
    assert "4 runs: 1 done, 0 stale, 1 failed, 0 incomplete, 2 missing" in captured.err

    assert main([*argv]) == 0
    table = capsys.readouterr().out
    assert "ValueError: d_model (16) must be a multiple of n_heads (3)" in table
    assert table.rstrip().endswith("4 runs: 1 done, 0 stale, 1 failed, 0 incomplete, 2 missing")


# --- failure isolation through the real Snakemake ----------------------------------------


def run(cmd, cwd, env, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.integration
def test_crashing_jobs_do_not_stop_the_others_and_status_names_them(tmp_path):
    def crash_suite(params):
        params["suite"] = "crash"
        # a model whose hyperparameters pass validation but cannot be built
        params["models"]["Broken"] = {**params["models"]["Transformer"], "d_model": 16,
                                      "n_heads": 3, "d_ff": 16}  # fmt: skip
        params["suites"]["crash"] = {
            "description": "failure isolation test",
            "benchmarks": {"uea": ["BasicMotions", "JapaneseVowels"]},
            "models": ["MS4N", "MS4", "Broken"],
            "folds": [0],
            "overrides": {"max_epochs": 1},
        }

    project = make_project(tmp_path / "proj", crash_suite)
    env = tool_env(project)
    ssmbench = [sys.executable, "-m", "ssmbench.cli"]

    def status():
        code, out = run([*ssmbench, "status", "--format", "json"], project, env)
        assert code == 0, out
        return json.loads(out)

    before = status()
    assert before["counts"]["missing"] == 6 and before["n_runs"] == 6

    code, out = run(["snakemake", "--cores", "2", "prepared"], project, env)
    assert code == 0, out
    # Corrupt one prepared dataset in place (as a bad disk or copy would): X.npy cut short.
    x_path = project / "data" / "prepared" / "uea" / "JapaneseVowels" / "X.npy"
    with open(x_path, "r+b") as handle:
        handle.truncate(x_path.stat().st_size // 2)

    # One core, the failing runs first (-P): without keep-going (profiles/default sets it;
    # nothing is passed here) Snakemake would stop at the first failure.
    started = time.time()
    failing = [f"results/runs/uea/JapaneseVowels/{m}/fold0.json" for m in ("MS4N", "MS4", "Broken")]
    code, out = run(["snakemake", "--cores", "1", "runs", "-P", *failing], project, env)
    assert code != 0, out  # a job failed, so Snakemake reports failure...
    runs = project / "results" / "runs" / "uea"
    done = [runs / "BasicMotions" / m / "fold0.json" for m in ("MS4N", "MS4")]
    for path in done:  # ...but ran everything else
        assert path.is_file(), out
        record = with_provenance(path, json.loads(path.read_text()))
        assert record["epochs_run"] == 1
        # provenance of a real run (its provenance file)
        assert record["hostname"] and record["cpu"] and record["versions"]["torch"]
        assert record["slurm_job_id"] is None
        assert record["gpu"] == (
            torch.cuda.get_device_name() if torch.cuda.is_available() else None
        )
    assert sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*.json")) == [
        "BasicMotions/MS4/fold0.json",
        "BasicMotions/MS4/fold0.provenance.json",
        "BasicMotions/MS4N/fold0.json",
        "BasicMotions/MS4N/fold0.provenance.json",
    ]
    logs = project / "logs" / "train" / "uea"
    corrupt_log = (logs / "JapaneseVowels" / "MS4N" / "fold0.log").read_text()
    broken_log = (logs / "BasicMotions" / "Broken" / "fold0.log").read_text()
    # the failures ran first, and the successful runs after them
    first_failure = min((logs / "JapaneseVowels").rglob("*.log"), key=lambda p: p.stat().st_mtime)
    assert started < first_failure.stat().st_mtime < min(p.stat().st_mtime for p in done)

    after = status()
    assert after["counts"] == {"done": 2, "stale": 0, "failed": 4, "incomplete": 0, "missing": 0}
    by_run = {(r["dataset"], r["model"], r["fold"]): r for r in after["runs"]}
    # The error is the log's: the corrupt dataset's message names the file, the broken
    # model's traceback ends in its exception.
    corrupt = by_run[("JapaneseVowels", "MS4N", 0)]
    assert corrupt["state"] == "failed" and "X.npy" in corrupt["detail"], corrupt
    assert corrupt["detail"] in corrupt_log
    broken = by_run[("BasicMotions", "Broken", 0)]
    assert broken["state"] == "failed"
    assert broken["detail"] == "ValueError: d_model (16) must be a multiple of n_heads (3)"
    assert "Traceback (most recent call last):" in broken_log and broken["detail"] in broken_log
    assert by_run[("BasicMotions", "MS4", 0)]["state"] == "done"

    code, table = run([*ssmbench, "status"], project, env)
    assert code == 0 and "2 done, 0 stale, 4 failed, 0 incomplete, 0 missing" in table, table
    assert "ValueError: d_model (16) must be a multiple of n_heads (3)" in table

    # A changed setting makes the finished runs stale (and Snakemake would rerun them).
    params = read_params(project / "params.yaml")
    params["protocol"]["lr"] = 2.0e-3
    write_params(project, params)
    assert status()["counts"] == {
        "done": 0, "stale": 2, "failed": 4, "incomplete": 0, "missing": 0
    }  # fmt: skip


def test_a_run_whose_dataset_failed_to_prepare_is_failed(params, tmp_path):
    job = suite_grid(params)[0]
    error = (
        f"ssmbench prepare: error: data/raw/{job.benchmark}/{job.dataset}/"
        f"{job.dataset}_TRAIN.ts: line 12 (case 3): 2 channels, expected 6. The raw copy is "
        f"marked bad: the next fetch fetches it again"
    )
    prepare_log = tmp_path / "logs" / "prepare" / job.benchmark / f"{job.dataset}.log"
    prepare_log.parent.mkdir(parents=True)
    prepare_log.write_text(f"{error}\n")
    got = run_status(params, job, tmp_path)
    assert got.state == "failed"
    assert got.detail == f"prepare: {error}"
    assert got.log == str(prepare_log)
    # a train log newer than the prepare failure (the dataset prepared since) decides
    write_log(params, job, tmp_path, "epoch    1/2 train_loss=0.6 (0.1s)\n")
    os.utime(prepare_log, (time.time() - 60, time.time() - 60))
    assert run_status(params, job, tmp_path).state == "incomplete"


def test_a_fetch_failure_is_failed_too(params, tmp_path):
    job = suite_grid(params)[0]
    fetch_log = tmp_path / "logs" / "fetch" / job.benchmark / f"{job.dataset}.log"
    fetch_log.parent.mkdir(parents=True)
    fetch_log.write_text("ssmbench fetch: error: UEA dataset X: download failed\n")
    got = run_status(params, job, tmp_path)
    assert (got.state, got.detail) == (
        "failed",
        "fetch: ssmbench fetch: error: UEA dataset X: download failed",
    )


def test_logs_that_cannot_be_read_are_said_not_a_traceback(params, tmp_path):
    """A log path that is a folder is the run's error, named; a file where the logs folder
    should be is no log at all; a fetch log that is a folder is the data's error."""
    job = suite_grid(params)[0]
    log = train_log_path(tmp_path / "logs", job)
    log.mkdir(parents=True)
    got = run_status(params, job, tmp_path)
    assert (got.state, got.detail) == (
        "failed",
        f"the log {log} cannot be read (Is a directory); remove it, and the job writes it "
        f"again when it runs",
    )
    log.rmdir()
    fetch_log = tmp_path / "logs" / "fetch" / job.benchmark / f"{job.dataset}.log"
    fetch_log.mkdir(parents=True)
    got = run_status(params, job, tmp_path)
    assert got.state == "failed" and got.detail.startswith(f"fetch: the log {fetch_log} cannot")
    for path in sorted((tmp_path / "logs").rglob("*"), reverse=True):
        path.rmdir()
    (tmp_path / "logs").rmdir()
    (tmp_path / "logs").write_text("a file where the logs folder goes\n")
    assert run_status(params, job, tmp_path).state == "missing"
    assert len(suite_status(params, root=tmp_path)) == len(suite_grid(params))


def test_a_log_ending_in_one_line_longer_than_the_tail_shows_its_end(params, tmp_path):
    job = suite_grid(params)[0]
    log = train_log_path(tmp_path / "logs", job)
    log.parent.mkdir(parents=True)
    log.write_text("epoch    1/2 " + "x" * (2 * LOG_TAIL_BYTES) + " tail\n")
    got = run_status(params, job, tmp_path)
    assert got.state == "incomplete" and got.detail.startswith("...xxx")
    assert got.detail.endswith("x tail")


def test_a_binary_log_is_said_not_printed(params, tmp_path, monkeypatch, capsys):
    """A log of bytes (a core dump, a wrong file) or of terminal escapes: the table shows a
    safe line, never the bytes, which would reach the terminal as commands."""
    binary, escapes = suite_grid(params)[:2]
    log = train_log_path(tmp_path / "logs", binary)
    log.parent.mkdir(parents=True)
    log.write_bytes(bytes(range(256)) * 8)
    write_log(params, escapes, tmp_path, "epoch 1\n\x1b]0;title\x07\x1b[2J\x1b[31mred\n")
    got = run_status(params, binary, tmp_path)
    assert (got.state, got.detail) == (
        "incomplete",
        f"(not text: {log} holds binary data; open it with a viewer of its kind)",
    )
    assert run_status(params, escapes, tmp_path).detail == "\\x1b]0;title\\x07\\x1b[2J\\x1b[31mred"
    monkeypatch.chdir(tmp_path)
    assert main(["--params", str(REPO / "params.yaml"), "status", "--suite", "tiny"]) == 0
    out = capsys.readouterr().out
    assert not [c for c in out if ord(c) < 0x20 and c != "\n"], out


def test_a_file_where_the_records_folder_should_be_is_one_line(params, tmp_path, capsys):
    job = suite_grid(params)[0]
    (tmp_path / "results").mkdir()
    for blocker in (tmp_path / "results/runs", tmp_path / "results/runs" / job.benchmark):
        blocker.parent.mkdir(parents=True, exist_ok=True)
        blocker.write_text("")
        os.chdir(tmp_path)
        try:
            rc = main(["--params", str(REPO / "params.yaml"), "status", "--suite", "tiny"])
        finally:
            os.chdir(REPO)
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err
        assert err.strip() == (
            f"ssmbench status: error: {blocker.relative_to(tmp_path)}: a file, where a folder "
            "of the run records (paths.runs: results/runs) should be; move the file aside, "
            "and status reads the records beneath that folder"
        )
        blocker.unlink()


def test_a_run_whose_tuned_file_was_deleted_names_the_file(tmp_path, monkeypatch):
    """Its record was made with the tuned settings; without the file its settings fall back
    to params.yaml's, and status names the file, not the settings that changed for it."""
    from ssmbench.data import fetch_uea, prepare_uea

    def edit(p):
        p["suites"]["tiny"].update(models=["MS4"], overrides={"max_epochs": 1}, tuning={})
        p["tuning"]["searches"] = {
            "MS4": {
                "benchmarks": ["uea"], "fold": 0, "n_trials": 1, "n_startup_trials": 1,
                "sampler_seed": 0, "settings": {"max_epochs": 1},
                "space": {"lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}},
            }
        }  # fmt: skip
        p["suite"] = "tiny"

    root = make_project(tmp_path / "proj", edit)
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    monkeypatch.chdir(root)
    assert main(["tune", "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]) == 0
    params = load_params(root / "params.yaml")
    job = Job("uea", "BasicMotions", "MS4", 0)
    meta = json.loads(Path("data/prepared/uea/BasicMotions/meta.json").read_text())
    from ssmbench.data.prepared_files import prepared_sha256

    write_record(
        params, job, root, dataset_sha256=meta["raw_files"], prepared_sha256=prepared_sha256(meta)
    )
    assert run_status(params, job, root).state == "done"
    tuned = Path("results/tuned/uea/BasicMotions/MS4.json")
    tuned.unlink()
    got = run_status(params, job, root)
    assert (got.state, got.detail) == (
        "stale",
        f"its tuned file {tuned} is gone (the run's tuned settings come from it); restore "
        "it, or run the search again: ssmbench tune --benchmark uea --dataset BasicMotions "
        "--model MS4",
    )
