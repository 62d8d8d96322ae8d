"""`ssmbench explain`'s block of what a run gets: the batch size it trains with and its job's
resources, each with its origin (ssmbench.run_allocation), and the SLURM profile's
partition and account."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import Job, job_spec, load_params
from ssmbench.run_allocation import allocation

PARAMS = str(REPO / "params.yaml")


def _gets(params, job: Job) -> dict[str, tuple[str, str]]:
    return {k: (v, o) for k, v, o in allocation(params, job_spec(params, job))}


@pytest.fixture(autouse=True)
def no_profile(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr("ssmbench.run_allocation.Path.home", lambda: tmp_path / "home")


def test_the_batch_size_is_the_one_the_run_trains_with():
    from ssmbench.train.batch_order import batch_size_for

    params = load_params(PARAMS, suite="uea10")
    # Libras: 180 TRAIN rows, 10 % for validation -> 162; 0.1 x 162 -> 16
    gets = _gets(params, Job("uea", "Libras", "MS4N", 0))
    settings = job_spec(params, Job("uea", "Libras", "MS4N", 0))["settings"]
    assert gets["batch size"][0] == str(batch_size_for(settings, 162)) == "16"
    assert "x 162 training rows" in gets["batch size"][1]
    assert "batch_fraction 0.1 (benchmarks.uea)" in gets["batch size"][1]
    # a fixed batch size says where it is set
    monster = load_params(PARAMS, suite="monster-paper")
    fixed = _gets(monster, Job("monster", "WISDM", "MS4N", 0))["batch size"]
    assert fixed == ("256", "batch_size (benchmarks.monster)")


def test_each_resource_names_the_place_that_set_it():
    params = load_params(PARAMS, suite="uea-paper")
    params["resources"]["train"]["models"]["MS4N"] = {
        "mem_mb": 9000,
        "sizes": {"small": {"runtime": 45}},
    }
    gets = _gets(params, Job("uea", "BasicMotions", "MS4N", 0))
    assert gets["size class"][0] == "small"
    assert "N x C x L = 48,000 <= max_values 2e+07" in gets["size class"][1]
    assert gets["threads"] == ("1", "resources.train.sizes.small")
    assert gets["cpus_per_task"][1].endswith("threads (cpus_per_task unset)")
    assert gets["mem_mb"][0] == "9000"
    assert gets["mem_mb"][1].startswith("resources.train.models.MS4N;")
    assert gets["runtime"][0] == "45 min"
    assert gets["runtime"][1].startswith("resources.train.models.MS4N.sizes.small;")
    assert gets["gpu"] == ("0", "resources.train.sizes.small")
    assert gets["group"][0] == "train_small"
    quant = _gets(params, Job("uea", "BasicMotions", "Quant", 0))
    assert quant["threads"] == ("4", "resources.train.models.Quant")
    assert "no SLURM profile installed" in quant["partition"][1]


def test_the_profiles_partition_and_account(tmp_path):
    profile = tmp_path / "config" / "snakemake" / "slurm" / "config.yaml"
    profile.parent.mkdir(parents=True)
    profile.write_text("default-resources:\n  slurm_partition: gpu\n  mem_mb: 2000\n")
    params = load_params(PARAMS)
    gets = _gets(params, Job("uea", "BasicMotions", "MS4N", 0))
    assert gets["partition"] == ("gpu", f"{profile}: default-resources.slurm_partition")
    assert gets["account"][0] == "-"
    assert f"{profile} sets no default-resources.slurm_account" in gets["account"][1]


def test_explain_prints_and_writes_the_block(capsys):
    argv = ["--params", PARAMS, "explain", "--benchmark", "uea", "--dataset", "BasicMotions",
            "--model", "MS4N"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    block = out.split("what the run gets")[1]
    for name in ("batch size", "size class", "cpus_per_task", "mem_mb", "runtime", "gpu",
                 "group", "partition", "account"):  # fmt: skip
        assert f"\n  {name} " in block, name
    assert main([*argv, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)["allocation"]
    assert shown["batch size"]["value"] == "4" and shown["runtime"]["value"] == "30 min"
