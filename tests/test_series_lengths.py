"""A model entry that cannot read its datasets' series (Log-NCDE's log-signature window,
RFormer's window count longer than the series) is named by ``ssmbench check`` and by the
workflow's parse, before any job runs (ssmbench.series_lengths)."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import REPO, make_project, tool_env

from ssmbench.config import ConfigError, load_params
from ssmbench.series_lengths import check_model_lengths, known_length, length_problems


@pytest.fixture
def params():
    return load_params(REPO / "params.yaml")


def test_the_shipped_suites_fit_their_series(params):
    for suite in params["suites"]:
        assert length_problems(params, suite) == [], suite


def test_a_window_longer_than_the_series_is_named(params):
    params["models"]["LogNCDE"]["stepsize"] = 101  # BasicMotions: L = 100
    params["models"]["RFormer"]["n_windows"] = 150
    with pytest.raises(ConfigError) as caught:
        check_model_lengths(params, "tides-bench-preview")
    message = str(caught.value)
    assert "models.LogNCDE on uea6/BasicMotions (L = 100)" in message
    assert "'stepsize' = 101 is longer than the series" in message
    assert "models.RFormer on uea6/BasicMotions (L = 100): n_windows (150)" in message
    params["models"]["LogNCDE"]["stepsize"] = 100  # the whole series in one window: fine
    params["models"]["RFormer"]["n_windows"] = 100
    check_model_lengths(params, "tides-bench-preview")


def test_a_dataset_configuration_is_named_by_its_key(params):
    params["models"]["LogNCDE"]["dataset_params"]["Heartbeat"]["stepsize"] = 406
    (problem,) = length_problems(params, "uea6-paper")
    assert problem.startswith("models.LogNCDE.dataset_params.Heartbeat on uea6/Heartbeat (L = 405)")


def test_the_prepared_length_comes_before_the_catalog(params, tmp_path):
    params["paths"]["prepared"] = str(tmp_path)
    assert known_length(params, "uea6", "BasicMotions") == 100  # the catalog's
    folder = tmp_path / "uea6" / "BasicMotions"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"L": 40}))
    assert known_length(params, "uea6", "BasicMotions") == 40
    params["models"]["LogNCDE"]["stepsize"] = 50
    assert "(L = 40)" in length_problems(params, "tides-bench-preview")[0]
    assert known_length(params, "uea6", "NoSuchSet") is None


def test_check_and_the_workflow_stop_before_any_job(tmp_path):
    def bad(params):
        params["suite"] = "tides-bench-preview"
        params["models"]["LogNCDE"]["stepsize"] = 200

    project = make_project(tmp_path / "proj", bad)
    env = tool_env(project)
    check = subprocess.run(["ssmbench", "check"], cwd=project, env=env, capture_output=True,
                           text=True)  # fmt: skip
    assert check.returncode == 2
    assert "models.LogNCDE on uea6/BasicMotions (L = 100)" in check.stderr
    dry = subprocess.run(["snakemake", "-n", "--cores", "1"], cwd=project, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert dry.returncode != 0
    assert "models.LogNCDE on uea6/BasicMotions (L = 100)" in dry.stdout + dry.stderr
    assert not (project / "results" / "runs").exists()
