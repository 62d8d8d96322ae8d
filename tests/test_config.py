"""params.yaml: schema, cross-checks, the suite grid and the batch-size rule."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from conftest import REPO

from ssmbench.config import (
    ConfigError,
    Job,
    benchmark_settings,
    check_params,
    check_suite_sources,
    job_spec,
    load_params,
    suite_grid,
    validate_schema,
)
from ssmbench.train.splits import batch_size_for


@pytest.fixture()
def params():
    return yaml.safe_load((REPO / "params.yaml").read_text())


def test_shipped_params_are_valid_and_default_grid_is_the_issue_grid(params):
    loaded = load_params(REPO / "params.yaml")
    grid = suite_grid(loaded)
    # default: 2 UEA datasets x MS4N, MS4, S4D x 2 seeded runs
    assert len(grid) == 12
    assert {j.model for j in grid} == {"MS4N", "MS4", "S4D"}
    assert {j.dataset for j in grid} == {"BasicMotions", "JapaneseVowels"}
    assert Job("uea", "BasicMotions", "MS4N", 0).record_path("results/runs").as_posix() == (
        "results/runs/uea/BasicMotions/MS4N/fold0.json"
    )


def test_unknown_model_in_suite_is_named(params):
    params["suites"]["default"]["models"].append("NoSuchModel")
    with pytest.raises(ConfigError, match="suites.default.models: unknown model 'NoSuchModel'"):
        check_params(params)


def test_unknown_dataset_in_suite_is_named(params):
    params["suites"]["default"]["benchmarks"]["uea"].append("BasicMotion")
    with pytest.raises(ConfigError, match="unknown dataset 'BasicMotion'"):
        check_params(params)


def test_unknown_suite_and_benchmark_are_named(params):
    params["suite"] = "nope"
    params["suites"]["tiny"]["benchmarks"]["monstr"] = ["X"]
    with pytest.raises(ConfigError) as info:
        check_params(params)
    assert "'nope' is not a suite" in str(info.value)
    assert "unknown benchmark 'monstr'" in str(info.value)


def test_bad_model_hyperparameter_is_named(params):
    params["models"]["MS4N"]["d_modle"] = 64
    with pytest.raises(ConfigError, match="models.MS4N.*d_modle"):
        check_params(params)


def test_schema_rejects_wrong_types(params):
    bad = copy.deepcopy(params)
    bad["protocol"]["lr"] = "fast"
    bad["suites"]["default"]["folds"] = [-1]
    with pytest.raises(ConfigError) as info:
        validate_schema(bad)
    assert "protocol.lr" in str(info.value) and "suites.default.folds.0" in str(info.value)


def test_suite_overrides_apply_last(params):
    settings = benchmark_settings(params, "uea", "tiny")
    assert settings["max_epochs"] == 2 and settings["lr"] == 1e-3
    assert benchmark_settings(params, "uea", "default")["max_epochs"] == 300
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 1), "tiny")
    assert spec["settings"]["max_epochs"] == 2
    assert spec["prepared_dir"].endswith("uea/BasicMotions")


@pytest.mark.parametrize(
    "n_train, expected", [(10, 4), (36, 4), (90, 8), (243, 16), (1000, 64), (30000, 64)]
)
def test_batch_size_is_4_to_64_by_size(params, n_train, expected):
    assert batch_size_for(params["benchmarks"]["uea"], n_train) == expected


def test_missing_archive_folder_fails_before_jobs(params, tmp_path):
    params["paths"]["raw"] = str(tmp_path / "raw")
    params["suites"]["default"]["overrides"] = {"archive_dir": str(tmp_path / "no-such-archive")}
    with pytest.raises(ConfigError, match="no-such-archive"):
        check_suite_sources(params)


def test_offline_dataset_not_shipped_fails_before_jobs(params, tmp_path):
    params["paths"]["raw"] = str(tmp_path / "raw")
    params["suites"]["default"]["benchmarks"]["uea"] = ["Libras"]
    params["suites"]["default"]["overrides"] = {"download": False}
    with pytest.raises(ConfigError, match="Libras is not available offline"):
        check_suite_sources(params)
    params["suites"]["default"]["overrides"] = {"download": True}
    check_suite_sources(params)  # downloadable: fine at parse time


def test_cli_bad_suite_exits_2_naming_it(capsys, monkeypatch):
    from ssmbench.cli import main

    monkeypatch.chdir(REPO)
    assert main(["--suite", "nope", "check"]) == 2
    assert "'nope' is not a suite" in capsys.readouterr().err
    assert main(["check"]) == 0
    assert "12 runs over 2 datasets" in capsys.readouterr().out


def test_settings_marker_dates_say_whether_a_record_is_current(params, tmp_path):
    import json
    import os

    from ssmbench.config import sync_settings_marker

    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0), "default")
    record, marker = tmp_path / "fold0.json", tmp_path / "marker.json"
    sync_settings_marker(record, marker, spec)  # no record yet: the job runs anyway
    assert marker.is_file()

    record.write_text(
        json.dumps(
            {
                "model_params": spec["model_params"],
                "protocol": spec["settings"],
                "code_digest": spec["code"],
            }
        )
    )
    os.utime(record, (1_000_000, 1_000_000))
    sync_settings_marker(record, marker, spec)
    assert marker.stat().st_mtime < record.stat().st_mtime  # current: not rerun

    changed = json.loads(json.dumps(spec))
    changed["settings"]["lr"] = 0.01
    sync_settings_marker(record, marker, changed)
    assert marker.stat().st_mtime > record.stat().st_mtime  # stale: rerun
    assert json.loads(marker.read_text())["settings"]["lr"] == 0.01


def test_dataset_overrides_sit_between_benchmark_and_suite(params):
    audio = job_spec(params, Job("monster", "AudioMNIST", "MS4N", 0), "default")
    other = job_spec(params, Job("monster", "Pedestrian", "MS4N", 0), "default")
    assert (audio["settings"]["batch_size"], other["settings"]["batch_size"]) == (64, 256)
    assert other["settings"]["max_epochs"] == 200
    params["benchmarks"]["monster"]["dataset_overrides"]["NoSuchSet"] = {"batch_size": 8}
    with pytest.raises(ConfigError, match="dataset_overrides: 'NoSuchSet'"):
        check_params(params)


def test_monster_suite_sources_checked_before_jobs(params, tmp_path):
    params["paths"]["raw"] = str(tmp_path / "raw")
    params["suites"]["default"]["benchmarks"] = {"monster": ["Pedestrian"]}
    check_suite_sources(params)  # online: the Hub can supply it
    params["suites"]["default"]["overrides"] = {"offline": True}
    with pytest.raises(ConfigError, match="Pedestrian is not fetched yet and offline"):
        check_suite_sources(params)
    params["suites"]["default"]["overrides"] = {"local_dir": str(tmp_path / "copy")}
    with pytest.raises(ConfigError, match="neither"):
        check_suite_sources(params)


def test_code_digest_is_per_family():
    """A run depends on its own family's code: adding or editing another family (a new
    baseline) must not make every existing run stale."""
    from ssmbench.config import _family_modules, training_code_digest

    assert [p.name for p in _family_modules("ms4")] == ["ms4.py", "s4d.py"]
    assert [p.name for p in _family_modules("mamba1")] == ["mamba.py"]
    assert training_code_digest("ms4") != training_code_digest("mamba1")
    assert training_code_digest("ms4") == training_code_digest("ms4")


def test_checkpoint_settings_never_make_a_record_stale(tmp_path):
    """How often a run checkpoints changes how it executes, not its result: editing it
    must not rerun the grid."""
    from ssmbench.config import EXECUTION_KEYS, record_is_stale, tracked_settings

    params = load_params(REPO / "params.yaml")
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0), "default")
    record = tmp_path / "fold0.json"
    record.write_text(
        json.dumps(
            {
                "model_params": spec["model_params"],
                "protocol": spec["settings"],
                "code_digest": spec["code"],
            }  # fmt: skip
        )
    )
    assert not record_is_stale(record, spec)
    changed = {**spec, "settings": {**spec["settings"], "checkpoint_every": 7}}
    assert set(EXECUTION_KEYS) <= set(spec["settings"])
    assert not record_is_stale(record, changed)
    assert tracked_settings(changed) == tracked_settings(spec)
    other = {**spec, "settings": {**spec["settings"], "lr": 0.5}}
    assert record_is_stale(record, other)
