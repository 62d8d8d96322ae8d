"""The workflow by the Snakemake workflow catalog's rules: `snakemake --lint` finds
nothing, and the conda environment every rule names (workflow/envs/ssmbench.yaml) holds
what environment.yml holds and installs this project, from where Snakemake hands it to
conda; with --use-conda the rules run that environment's Python."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_project, tool_env

ENV_FILE = REPO / "workflow" / "envs" / "ssmbench.yaml"
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")

#: conda as a dry run of `snakemake --use-conda` asks it (Snakemake 9.27.1): where it
#: lives, its version, its channel priority; nothing is created in a dry run
CONDA = """#!/bin/sh
case "$*" in
  "info --json") echo '{"conda_prefix": "/nonexistent", "platform": "linux-64"}';;
  "--version") echo "conda 24.7.1";;
  "config --get channel_priority --json") echo '{"get": {"channel_priority": "strict"}}';;
  *) echo "conda stand-in: not answered: $*" >&2; exit 1;;
esac
"""


def tiny(params):
    params["suite"] = "tiny"


def run(cmd, cwd, env):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    return output


@pytest.mark.integration
def test_snakemake_lint_finds_nothing(tmp_path):
    project = make_project(tmp_path / "proj", tiny)
    output = run([SNAKEMAKE, "--lint"], project, tool_env(project))
    assert "Congratulations, your workflow is in a good condition!" in output
    assert "Lints for" not in output


def _conda_and_pip(path: Path) -> tuple[list[str], list[str]]:
    dependencies = yaml.safe_load(path.read_text())["dependencies"]
    conda = [d for d in dependencies if isinstance(d, str)]
    pip = [entry for d in dependencies if isinstance(d, dict) for entry in d["pip"]]
    return conda, pip


def test_the_rules_environment_has_the_conda_packages_of_environment_yml():
    """The same channels and conda packages (Python, SUNDIALS and a C compiler for
    myokit); only what pip installs differs (environment.yml adds the test tools)."""
    env, root = (
        yaml.safe_load(ENV_FILE.read_text()),
        yaml.safe_load((REPO / "environment.yml").read_text()),
    )
    assert env["channels"] == root["channels"]
    assert _conda_and_pip(ENV_FILE)[0] == _conda_and_pip(REPO / "environment.yml")[0]
    assert _conda_and_pip(ENV_FILE)[1] == ["-e ../.."]


def _pip_would_install(requirements: list[str], folder: Path) -> list[tuple[str, str]]:
    """What `pip install -r` of ``requirements`` run in ``folder`` would install (name,
    where from): the step conda takes for an environment file's pip section, in the
    folder of the file it was given."""
    req = folder / "requirements.txt"
    req.write_text("\n".join(requirements) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
         "--no-build-isolation", "--quiet", "--report", "-", "-r", str(req)],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout)
    return [(i["metadata"]["name"], i["download_info"]["url"]) for i in report["install"]]


@pytest.mark.slow
@pytest.mark.parametrize("where", [".snakemake/conda", "workflow/envs"])
def test_the_rules_environment_installs_this_project(tmp_path, where):
    """Its pip section names the project folder both from the copy Snakemake hands to
    conda (.snakemake/conda/<hash>.yaml under the working directory) and from
    workflow/envs itself (`conda env create -f workflow/envs/ssmbench.yaml`)."""
    project = make_project(tmp_path / "proj", tiny)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, project / name)
    folder = project / where
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "0123abcd.yaml"
    shutil.copy2(ENV_FILE, copy)
    installed = _pip_would_install(_conda_and_pip(copy)[1], folder)
    assert installed == [("ssmbench", project.resolve().as_uri())]


@pytest.mark.integration
def test_with_use_conda_every_job_runs_the_environments_python(tmp_path):
    """A dry run of `snakemake --use-conda` (conda stood in for): the jobs run `python -m
    ssmbench` of their environment, not the Python that runs Snakemake."""
    project = make_project(tmp_path / "proj", tiny)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "conda").write_text(CONDA)
    (bin_dir / "conda").chmod(0o755)
    env = tool_env(project)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    output = run([SNAKEMAKE, "-n", "-p", "--cores", "2", "--use-conda"], project, env)
    assert "Conda environment workflow/envs/ssmbench.yaml will be created." in output
    commands = [line for line in output.splitlines() if " -m ssmbench " in line]
    assert {c.split(":", 1)[0].strip() for c in commands} == {"Shell command"}
    ran = {c.split(" --suite ")[1].split()[1] for c in commands}
    assert ran == {"fetch", "prepare", "train", "report"}
    assert all(" python -m ssmbench --suite tiny " in c for c in commands), commands
    assert sys.executable not in output
