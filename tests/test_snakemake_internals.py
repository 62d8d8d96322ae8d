"""ssmbench.snakemake_internals against the installed Snakemake: each access of Snakemake's
own workflow object runs in a real Snakemake process here, so an upgrade that moves one
fails in this file, and the version they were checked on is the one installed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from conftest import REPO, make_project, tool_env

from ssmbench import snakemake_internals

pytestmark = pytest.mark.integration

SRC = Path(snakemake_internals.__file__).resolve().parents[1]

#: srun's stand-in for the SLURM job step: it drops srun's options and runs the command
SRUN = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
exec sh -c "$*"
"""


def snakemake(args, cwd, path=None, should_fail=False):
    """Run this venv's snakemake in ``cwd`` (a project copy imports its own package, any
    other folder this checkout's); its output."""
    env = tool_env()
    own = cwd / "src"
    env["PYTHONPATH"] = str(own if (own / "ssmbench").is_dir() else SRC)
    if path is not None:
        env["PATH"] = f"{path}:{env['PATH']}"
    snakemake_bin = str(Path(sys.executable).parent / "snakemake")
    proc = subprocess.run(
        [snakemake_bin, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    output = proc.stdout + proc.stderr
    assert (proc.returncode != 0) == should_fail, output[-6000:]
    return output


def test_checked_on_the_installed_and_pinned_snakemake():
    """An upgrade of Snakemake fails here: check each access of the module again, then
    move CHECKED_ON."""
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"snakemake=={snakemake_internals.CHECKED_ON}" in pins
    assert metadata.version("snakemake") == snakemake_internals.CHECKED_ON


GROUP_SNAKEFILE = """
from ssmbench.snakemake_internals import keep_going_in_group_job


def group_of(wildcards):
    if config.get("keep_going"):
        keep_going_in_group_job(workflow)
    return "pair"


rule fails:
    output: "fails.txt"
    group: group_of
    priority: 10
    shell: "exit 1"


rule succeeds:
    output: "succeeds.txt"
    group: group_of
    shell: "touch {output}"
"""


@pytest.mark.parametrize("keep_going", [False, True])
def test_a_group_job_goes_on_past_a_failing_job(tmp_path, keep_going):
    """What the SLURM plugin's job step runs inside a group job: `snakemake --mode remote
    --executor slurm-jobstep` with the group's jobs as targets (srun stood in for). Without
    keep_going_in_group_job the job after the failing one never runs; with it, it does."""
    (tmp_path / "Snakefile").write_text(GROUP_SNAKEFILE)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "srun").chmod(0o755)
    args = ["--mode", "remote", "--executor", "slurm-jobstep", "--jobs", "1"]
    args += ["--config", f"keep_going={keep_going}", "--", "fails.txt", "succeeds.txt"]
    output = snakemake(args, tmp_path, path=bin_dir, should_fail=True)
    assert "Error in rule fails" in output
    assert not (tmp_path / "fails.txt").exists()
    assert (tmp_path / "succeeds.txt").exists() == keep_going, output[-6000:]


LAYOUT_SNAKEFILE = """
import json

from ssmbench.snakemake_internals import group_components, runs_group_job, submits_to_cluster


def group_of(wildcards):
    with open("layout.json", "w") as f:
        json.dump({"cluster": submits_to_cluster(workflow), "components":
                   group_components(workflow, "pair"), "remote": runs_group_job(workflow),
                   "cores": workflow.cores}, f)
    return "pair"


rule one:
    output: "one.txt"
    group: group_of
    shell: "touch {output}"
"""


@pytest.mark.parametrize(
    "args, layout",
    [
        (["--cores", "3"], {"cluster": False, "components": 1, "cores": 3}),
        (
            ["--executor", "slurm", "--jobs", "5", "--cores", "3", "--group-components", "pair=4"],
            {"cluster": True, "components": 4, "cores": 3},
        ),
    ],
)
def test_what_a_dry_run_reads_of_the_group_layout(tmp_path, args, layout):
    """A local dry run and a dry run of a SLURM submission: whether it submits to a
    cluster, how many jobs go into one group job, and that it is the submitting process."""
    (tmp_path / "Snakefile").write_text(LAYOUT_SNAKEFILE)
    snakemake(["-n", *args, "--", "one.txt"], tmp_path)
    read = json.loads((tmp_path / "layout.json").read_text())
    assert read == {**layout, "remote": False}


def tiny(params):
    params["suite"] = "tiny"


@pytest.mark.parametrize("cores, warned", [(2, True), (1, False)])
def test_the_workflow_warns_of_group_jobs_planned_side_by_side(tmp_path, cores, warned):
    """The tiny suite's runs are grouped (train_small): submitting them to SLURM with
    --cores 2 plans two runs of a group job side by side, which run one after another."""
    project = make_project(tmp_path / "proj", tiny)
    args = ["-n", "--executor", "slurm", "--jobs", "5", "--cores", str(cores)]
    output = snakemake([*args, "--group-components", "train_small=2"], project)
    assert bool(re.search(r"group train_small bundles 2 runs per SLURM job", output)) == warned
