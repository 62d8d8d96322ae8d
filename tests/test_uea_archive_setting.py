"""The user's copy of the UEA archive is a setting, ``paths.uea_archive`` (or the
environment variable SSMBENCH_UEA_ARCHIVE, which wins), that the suites reading it name as
``archive_dir: ${paths.uea_archive}``; left unset, those suites refuse to start naming it.
Where the copy lies is no part of a run: a record made from another folder with the same
data is current, the committed records of ``benchmarks/records/uea10_zoo_cpu`` included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from ssmbench.config import ConfigError, Job, check_suite_sources, job_spec, load_params
from ssmbench.data.errors import DataError
from ssmbench.data.uea.fetch import archive_dirs, locate_uea
from ssmbench.params_file import INPUT_PATHS, read_params
from ssmbench.path_roots import system_root_problems, unwritable_problems
from ssmbench.staleness import (
    location_keys,
    record_state,
    sealed,
    settings_changes,
    tracked_settings,
)

PARAMS = REPO / "params.yaml"
ENV = INPUT_PATHS["uea_archive"]
#: the suites that train on UEA sets aeon does not ship, from the user's copy
ARCHIVE_SUITES = ("uea10", "uea10-zoo", "preview-uea10")
ZOO_RECORDS = REPO / "benchmarks/records/uea10_zoo_cpu"


@pytest.fixture(autouse=True)
def no_archive_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


def _project(tmp_path: Path, archive: str | None) -> Path:
    """params.yaml and the study files in ``tmp_path``, paths.uea_archive set to
    ``archive``."""
    for name in ("params",):
        (tmp_path / name).mkdir()
        for study in (REPO / name).iterdir():
            (tmp_path / name / study.name).write_text(study.read_text())
    text = PARAMS.read_text()
    assert "  uea_archive: null\n" in text
    value = "null" if archive is None else json.dumps(archive)
    (tmp_path / "params.yaml").write_text(text.replace("  uea_archive: null\n",
                                                       f"  uea_archive: {value}\n"))  # fmt: skip
    return tmp_path / "params.yaml"


def test_the_archive_suites_name_the_setting_and_no_folder_of_their_own():
    raw = (REPO / "params/ms4.yaml").read_text()
    assert "shared/" not in raw  # no folder of a development tree
    for suite in ARCHIVE_SUITES:
        # as params.yaml is read with the setting unset: the reference, as written
        overrides = read_params(PARAMS)["suites"][suite]["overrides"]
        assert overrides["archive_dir"] == "${paths.uea_archive}"
        assert "paths.uea_archive" in read_params(PARAMS)["suites"][suite]["description"]


def test_params_yaml_then_the_environment_set_it(tmp_path, monkeypatch):
    path = _project(tmp_path, "/data/uea")
    params = read_params(path)
    assert params["paths"]["uea_archive"] == "/data/uea"
    assert params["suites"]["uea10"]["overrides"]["archive_dir"] == "/data/uea"
    monkeypatch.setenv(ENV, "/elsewhere/uea")
    params = read_params(path)
    assert params["paths"]["uea_archive"] == "/elsewhere/uea"
    assert params["suites"]["uea10-zoo"]["overrides"]["archive_dir"] == "/elsewhere/uea"
    # an empty variable is not a folder: params.yaml's value stands
    monkeypatch.setenv(ENV, "")
    assert read_params(path)["paths"]["uea_archive"] == "/data/uea"


def test_a_run_says_where_its_archive_came_from(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path))
    params = load_params(PARAMS, suite="uea10")
    spec = job_spec(params, Job("uea", "Libras", "MS4N", 0), "uea10")
    assert spec["settings"]["archive_dir"] == str(tmp_path)
    assert spec["origins"]["settings"]["archive_dir"] == "suites.uea10.overrides"
    # the suites that use aeon's copies are untouched by it
    default = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0), "default")
    assert default["settings"]["archive_dir"] is None


@pytest.mark.parametrize("suite", ARCHIVE_SUITES)
def test_unset_a_suite_that_reads_it_refuses_to_start_naming_it(suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing fetched here
    params = load_params(PARAMS, suite=suite)
    with pytest.raises(ConfigError) as err:
        check_suite_sources(params, suite)
    text = str(err.value)
    assert text.startswith(f"suite {suite!r} cannot get its data:\n")
    assert "archive_dir is ${paths.uea_archive}, and paths.uea_archive is not set" in text
    assert "paths: uea_archive: /path/to/uea" in text and f"{ENV}=/path/to/uea" in text
    assert f"(set by suites.{suite}.overrides.archive_dir)" in text
    assert len(text.splitlines()) == 2  # ten datasets, one setting: said once


def test_a_fetch_outside_the_workflow_names_it_too():
    with pytest.raises(DataError, match=r"paths\.uea_archive is not set: set it"):
        locate_uea("NATOPS", "${paths.uea_archive}", download=True)
    with pytest.raises(DataError, match=ENV):
        archive_dirs(["/data/uea", "${paths.uea_archive}"])
    assert archive_dirs("/data/uea") == [Path("/data/uea")]


def test_set_a_suite_reads_the_folder_it_names(tmp_path, monkeypatch):
    archive = tmp_path / "uea"
    for split in ("TRAIN", "TEST"):
        (archive / "NATOPS").mkdir(parents=True, exist_ok=True)
        (archive / "NATOPS" / f"NATOPS_{split}.ts").write_text("@data\n")
    monkeypatch.setenv(ENV, str(archive))
    params = load_params(PARAMS, suite="uea10")
    settings = job_spec(params, Job("uea", "NATOPS", "MS4N", 0), "uea10")["settings"]
    assert locate_uea("NATOPS", settings["archive_dir"], settings["download"]) == (
        "archive_dir",
        archive / "NATOPS",
    )


def test_it_is_read_not_written_so_no_write_check_holds_it():
    params = {"paths": {"runs": "results/runs", "uea_archive": "/"}}
    assert not system_root_problems(params)
    assert not any("uea_archive" in p for p in unwritable_problems(params))
    assert system_root_problems({"paths": {"runs": "/"}})  # a root written under still is


def _record(path: Path, spec: dict, **changes) -> Path:
    record = {
        **{key: spec[key] for key in ("benchmark", "dataset", "model", "fold")},
        "model_params": spec["model_params"],
        "protocol": spec["settings"],
        "code_digest": spec["code"],
        **changes,
    }
    path.write_text(json.dumps(sealed(record)))
    return path


def test_where_the_data_lie_makes_no_record_stale(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "/data/uea")
    params = load_params(PARAMS, suite="uea10")
    spec = job_spec(params, Job("uea", "Libras", "MS4N", 0), "uea10")
    spec = {**spec, "prepared_dir": None}
    made_there = {**spec["settings"], "archive_dir": "../elsewhere/uea"}
    record = _record(tmp_path / "fold0.json", spec, protocol=made_there)
    assert record_state(record, spec).current
    assert "archive_dir" not in tracked_settings(spec)["settings"]
    assert set(location_keys()) == {"archive_dir", "local_dir"}
    # what the data are still counts: another setting of the data is another run
    other = {**made_there, "normalise": "none"}
    stale = record_state(_record(tmp_path / "fold1.json", spec, protocol=other), spec)
    assert not stale.current and "normalise" in stale.why


def test_the_committed_zoo_records_ask_for_no_setting_the_suite_does_not(monkeypatch, tmp_path):
    """The records of benchmarks/records/uea10_zoo_cpu were made from an archive in another
    folder than any user's: with paths.uea_archive anywhere, none differs from the suite's
    settings (whatever else `ssmbench status` finds of them: their code, their seal)."""
    monkeypatch.setenv(ENV, str(tmp_path / "a" / "copy" / "of" / "uea"))
    params = load_params(PARAMS, suite="uea10-zoo")
    records = sorted(ZOO_RECORDS.glob("*/*/fold*.json"))
    assert len(records) == 340
    made_from = set()
    for path in records:
        record = json.loads(path.read_text())
        made_from.add(record["protocol"]["archive_dir"])
        job = Job("uea", record["dataset"], record["model"], record["fold"])
        assert settings_changes(record, job_spec(params, job, "uea10-zoo")) == [], path
    assert len(made_from) == 1 and str(tmp_path) not in made_from.pop()  # another folder
