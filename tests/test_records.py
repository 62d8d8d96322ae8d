"""Provenance in every run record (ssmbench.train.provenance.provenance)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from ssmbench.train import provenance as records
from ssmbench.train.provenance import ATTEMPT_ENV, provenance, slurm_info

SLURM_ENV = ("SLURM_JOB_ID", "SLURM_RESTART_COUNT", "SLURM_JOB_PARTITION", ATTEMPT_ENV)


@pytest.fixture()
def clean_env(monkeypatch):
    for var in (*SLURM_ENV, *records.SLURM_VARIABLES.values()):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_commit_and_dirty_flag_of_the_working_directory(tmp_path, clean_env):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    git(repo, "add", "code.py")
    git(repo, "commit", "-qm", "first")
    clean_env.chdir(repo)
    info = provenance()
    assert info["git_commit"] == git(repo, "rev-parse", "HEAD") and len(info["git_commit"]) == 40
    assert info["git_dirty"] is False
    (repo / "untracked.txt").write_text("not part of the code\n")  # untracked: still clean
    assert provenance()["git_dirty"] is False
    (repo / "code.py").write_text("x = 2\n")
    assert provenance()["git_dirty"] is True

    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    clean_env.chdir(outside)
    clean_env.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    info = provenance()
    assert info["git_commit"] is None and info["git_dirty"] is None


def test_versions_host_and_hardware(clean_env):
    info = provenance()
    versions = info["versions"]
    assert versions["torch"] == torch.__version__
    assert versions["numpy"] and versions["snakemake"] and versions["ssmbench"]
    assert versions["python"].count(".") == 2
    assert versions["cuda"] == torch.version.cuda
    assert info["hostname"] and info["cpu_count"] >= 1
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file() and "model name" in cpuinfo.read_text():
        model = next(
            line.split(":", 1)[1].strip()
            for line in cpuinfo.read_text().splitlines()
            if line.startswith("model name")
        )
        assert info["cpu"] == model  # the model, not just "x86_64"
    else:
        assert info["cpu"]
    if torch.cuda.is_available():
        assert info["gpu"] == torch.cuda.get_device_name() and info["gpu_count"] >= 1
    else:
        assert info["gpu"] is None and info["gpu_count"] == 0
    # a record is JSON
    assert json.loads(json.dumps(info)) == info


def test_outside_slurm_and_snakemake_the_job_fields_are_none(clean_env):
    info = provenance()
    assert info["slurm"] is None and info["slurm_job_id"] is None
    assert info["slurm_restart_count"] is None and info["attempt"] is None


def test_slurm_job_requeue_count_and_snakemake_attempt(clean_env):
    clean_env.setenv("SLURM_JOB_ID", "4242")
    clean_env.setenv("SLURM_JOB_PARTITION", "gpu")
    clean_env.setenv("SLURM_CPUS_PER_TASK", "4")
    clean_env.setenv(ATTEMPT_ENV, "3")
    info = provenance()
    assert info["slurm_job_id"] == "4242" and info["slurm"]["partition"] == "gpu"
    assert info["slurm"]["cpus_per_task"] == 4
    assert info["slurm_restart_count"] == 0  # SLURM sets it only once it has requeued
    assert info["attempt"] == 3
    clean_env.setenv("SLURM_RESTART_COUNT", "2")
    assert provenance()["slurm_restart_count"] == 2


def test_slurm_info_reads_only_what_is_set():
    assert slurm_info({}) is None
    info = slurm_info({"SLURM_JOB_ID": "7", "SLURM_MEM_PER_NODE": "oops"})
    assert info["job_id"] == "7" and info["mem_per_node_mb"] is None and info["gpus"] is None


def test_a_failing_probe_never_costs_the_record(clean_env, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(records, "cpu_model", broken)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", broken)
    monkeypatch.setattr(records.metadata, "version", broken)
    clean_env.setenv(ATTEMPT_ENV, "not-a-number")
    info = provenance()
    assert info["cpu"] is None and info["gpu"] is None and info["attempt"] is None
    assert info["versions"]["torch"] is None and info["hostname"]


def test_provenance_keys_are_the_listed_ones(clean_env):
    assert list(provenance()) == list(records.PROVENANCE_KEYS)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_dirty_ignores_what_the_pipeline_writes(tmp_path, clean_env):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "results").mkdir()
    (repo / "src" / "code.py").write_text("x = 1\n")
    (repo / "dvc.lock").write_text("schema: '2.0'\n")
    (repo / "results" / "metrics.csv").write_text("model,test_error\nMS4N,0.1\n")
    (repo / "results" / "summary.json").write_text("{}\n")
    (repo / "params.yaml").write_text("suite: default\n")
    (repo / "dvc.yaml").write_text(
        "stages:\n"
        "  report:\n"
        "    cmd: ssmbench report\n"
        "    outs:\n"
        "      - results/metrics.csv:\n"
        "          cache: false\n"
        "    metrics:\n"
        "      - results/summary.json:\n"
        "          cache: false\n"
    )
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    clean_env.chdir(repo)
    assert provenance()["git_dirty"] is False

    # What `dvc repro` rewrites on an unmodified clone: still clean.
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    (repo / "results" / "metrics.csv").write_text("model,test_error\nMS4N,0.2\n")
    (repo / "results" / "summary.json").write_text('{"uea": {}}\n')
    assert records.git_dirty() is False and provenance()["git_dirty"] is False

    # An edited source file or config: dirty, whatever the pipeline wrote besides.
    (repo / "src" / "code.py").write_text("x = 2\n")
    assert provenance()["git_dirty"] is True
    git(repo, "checkout", "-q", "--", "src/code.py")
    (repo / "params.yaml").write_text("suite: tiny\n")
    assert provenance()["git_dirty"] is True
    git(repo, "checkout", "-q", "--", "params.yaml")

    # Run from a subfolder of the project: the same answer.
    clean_env.chdir(repo / "src")
    assert records.git_dirty(repo) is False
    # dvc.yaml itself is the pipeline's definition, not its output.
    (repo / "dvc.yaml").write_text((repo / "dvc.yaml").read_text() + "# edited\n")
    assert records.git_dirty(repo) is True


def test_pipeline_written_paths_reads_every_declared_out(tmp_path):
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n"
        "  train:\n"
        "    wdir: sub\n"
        "    outs:\n"
        "      - runs:\n"
        "          persist: true\n"
        "  report:\n"
        "    outs: [figures, results/metrics.csv]\n"
        "    plots: [results/curves.csv]\n"
        "plots:\n"
        "  - figures\n"
    )
    root = tmp_path.resolve()
    assert set(records.pipeline_written_paths(tmp_path)) == {
        root / "dvc.lock",
        root / "sub" / "runs",
        root / "figures",
        root / "results" / "metrics.csv",
        root / "results" / "curves.csv",
    }
    (tmp_path / "dvc.yaml").write_text("stages: [not, a, mapping\n")  # unreadable: lock only
    assert records.pipeline_written_paths(tmp_path) == [root / "dvc.lock"]
