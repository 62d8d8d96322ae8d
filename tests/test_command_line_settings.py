"""A training setting on the command line (`ssmbench --set KEY=VALUE`, `snakemake --config
KEY=VALUE`): the last places of the one precedence, shown as "command line" by `explain`
and in the records, passed to the jobs, announced; a command's own option (`train
--max-epochs`) a place of its own over them, "command line option --max-epochs"; a bad key
or value is one error naming the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, make_project, tool_env

from ssmbench.cli import main
from ssmbench.config import Job, job_spec, load_params
from ssmbench.precedence import (
    COMMAND_LINE,
    Tuned,
    command_line_settings,
    option_origin,
    resolve_settings,
)


def test_pairs_are_read_as_yaml_numbers_included():
    found = command_line_settings(
        ["max_epochs=5", "lr=3e-4", "deterministic=false", "early_stopping_patience=null",
         "optimizer=adamw", "reading={block_mb: 8}"]
    )  # fmt: skip
    assert found == {"max_epochs": 5, "lr": 3e-4, "deterministic": False,
                     "early_stopping_patience": None, "optimizer": "adamw",
                     "reading": {"block_mb": 8}}  # fmt: skip
    assert isinstance(found["lr"], float)


@pytest.mark.parametrize(
    "pair, expected",
    [("max_epochs", "write it as KEY=VALUE"), ("=5", "write it as KEY=VALUE"),
     ("max_epoch=5", "'max_epoch' is not a training setting (allowed: "),
     ("d_model=32", "a model's hyperparameters change under a name of their own")],
)  # fmt: skip
def test_a_bad_pair_is_named(pair, expected):
    with pytest.raises(ValueError, match=expected.replace("(", r"\(")):
        command_line_settings([pair])


def test_the_command_line_goes_over_every_place_and_says_so():
    params = load_params(REPO / "params.yaml", suite="tiny", command_line={"max_epochs": 7})
    tuned = Tuned("results/tuned/x.json", training_settings={"max_epochs": 9, "lr": 0.01})
    settings, origins = resolve_settings(params, "uea", "BasicMotions", "MS4N", "tiny", tuned)
    assert settings["max_epochs"] == 7 and origins["max_epochs"] == COMMAND_LINE
    assert settings["lr"] == 0.01 and origins["lr"] == "results/tuned/x.json"
    plain = load_params(REPO / "params.yaml", suite="tiny")
    spec = job_spec(plain, Job("uea", "BasicMotions", "MS4N", 0))
    assert spec["origins"]["settings"]["max_epochs"] == "suites.tiny.overrides"


def test_explain_shows_the_command_line_and_check_names_a_bad_value(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    args = ["--suite", "tiny", "--set", "max_epochs=3", "explain", "--benchmark", "uea",
            "--dataset", "BasicMotions", "--model", "MS4N"]  # fmt: skip
    assert main(args) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "max_epochs" in x)
    assert line.split()[1] == "3" and "command line (ssmbench --set" in line
    assert main(["--set", "max_epochs=three", "check"]) == 2
    err = capsys.readouterr().err
    assert "command_line.max_epochs: 'three' is not of type 'integer' (in the command line" in err


def test_snakemake_config_setting_reaches_the_jobs_and_is_announced(tmp_path):
    project = make_project(tmp_path / "proj", lambda p: p.update(suite="tiny"))
    snakemake = str(Path(sys.executable).parent / "snakemake")
    proc = subprocess.run(
        [snakemake, "-n", "-p", "--cores", "1", "--config", "max_epochs=1", "lr=3e-4"],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "the command line sets max_epochs=1, lr=0.0003 for every run" in out
    train = [line for line in out.splitlines() if " train --benchmark" in line]
    assert train and all("--set max_epochs=1 --set lr=0.0003 train" in line for line in train)
    fetch = [line for line in out.splitlines() if " fetch --benchmark" in line]
    assert fetch and not any("--set" in line for line in fetch)  # data rules: not their setting
    bad = subprocess.run(
        [snakemake, "-n", "--cores", "1", "--config", "max_epochs=many"],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "command_line.max_epochs: 'many' is not of type 'integer'" in bad.stderr + bad.stdout
    unknown = subprocess.run(
        [snakemake, "-n", "--cores", "1", "--config", "max_epoch=5"],
        cwd=project, env=tool_env(project), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert unknown.returncode != 0
    assert ("snakemake --config max_epoch=...: 'max_epoch' is neither a training setting"
            in unknown.stderr + unknown.stdout)  # fmt: skip


@pytest.mark.integration
def test_train_max_epochs_is_recorded_as_the_command_lines(tmp_path):
    project = make_project(tmp_path / "proj", lambda p: p.update(suite="tiny"))
    env = tool_env(project)
    for step in (["fetch"], ["prepare"]):
        subprocess.run([sys.executable, "-m", "ssmbench", *step, "--benchmark", "uea",
                        "--dataset", "BasicMotions"], cwd=project, env=env, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "ssmbench", "train", "--benchmark", "uea", "--dataset",
         "BasicMotions", "--model", "MS4", "--fold", "0", "--max-epochs", "1"],
        cwd=project, env=env, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    record = json.loads((project / "results/runs/uea/BasicMotions/MS4/fold0.json").read_text())
    assert record["epochs_run"] == 1
    assert record["origins"]["settings"]["max_epochs"] == option_origin("max_epochs")
    assert record["origins"]["settings"]["max_epochs"] == "command line option --max-epochs"
    # --threads left out: the command's default, which the record names
    assert record["origins"]["threads"] == "default (ssmbench train --threads 1)"


def test_a_command_s_option_is_a_place_over_the_command_line():
    params = load_params(REPO / "params.yaml", suite="tiny", command_line={"max_epochs": 7},
                         command_options={"max_epochs": 3})  # fmt: skip
    settings, origins = resolve_settings(params, "uea", "BasicMotions", "MS4N")
    assert settings["max_epochs"] == 3 and origins["max_epochs"] == option_origin("max_epochs")
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0))
    assert spec["origins"]["settings"]["max_epochs"] != COMMAND_LINE
