"""params.yaml and its study files (params.yaml ``studies``) read as one mapping:
ssmbench.params_file.read_params. Where an entry comes from, what a study file may hold,
`all` as a suite's dataset list."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ssmbench.config import load_params
from ssmbench.params_file import ConfigError, read_params, read_params_and_files

#: what every run shares; the studies' models, suites and searches are in their own files
SHARED_LINES_AT_MOST = 400


def _studies() -> list[str]:
    return yaml.safe_load((REPO / "params.yaml").read_text())["studies"]


def _copy(tmp_path: Path) -> Path:
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(REPO / "params", tmp_path / "params")
    return tmp_path / "params.yaml"


def test_params_yaml_holds_what_runs_share_and_the_studies_the_rest():
    lines = len((REPO / "params.yaml").read_text().splitlines())
    assert lines <= SHARED_LINES_AT_MOST, f"params.yaml has {lines} lines"
    shared = yaml.safe_load((REPO / "params.yaml").read_text())
    assert "models" not in shared and "suites" not in shared
    assert "searches" not in shared["tuning"]
    params, files = read_params_and_files(REPO / "params.yaml")
    assert set(files.values()) == set(_studies())
    # every model, suite and search is in exactly one study file
    assert {k for k in files if k.startswith("models.")} == {
        f"models.{m}" for m in params["models"]
    }
    assert {k for k in files if k.startswith("suites.")} == {
        f"suites.{s}" for s in params["suites"]
    }
    assert files["models.MS4N"] == "params/ms4.yaml"
    assert files["models.TIDES"] == files["tuning.searches.TIDES"] == "params/tides.yaml"
    assert files["suites.default"] == "params/ms4.yaml"
    load_params(REPO / "params.yaml")  # the one mapping passes the schema and the checks


def test_a_suite_names_all_datasets_of_a_benchmark_with_all():
    params = read_params(REPO / "params.yaml")
    assert (
        params["suites"]["uea-paper"]["benchmarks"]["uea"]
        == params["benchmarks"]["uea"]["datasets"]
    )
    assert len(params["suites"]["monster-paper"]["benchmarks"]["monster"]) == 29
    physiome = params["suites"]["physiome-paper"]["benchmarks"]["physiome_ode"]
    assert physiome == params["benchmarks"]["physiome_ode"]["datasets"]


def test_all_for_a_benchmark_without_a_dataset_list_is_named(tmp_path):
    path = _copy(tmp_path)
    ms4 = tmp_path / "params/ms4.yaml"
    study = yaml.safe_load(ms4.read_text())
    study["suites"]["tiny"]["benchmarks"] = {"nosuch": "all"}
    ms4.write_text(yaml.safe_dump(study, sort_keys=False))
    with pytest.raises(ConfigError, match=r"suites.tiny.benchmarks.nosuch: all, but "
                       r"benchmarks.nosuch lists no datasets"):  # fmt: skip
        read_params(path)


def test_an_entry_given_in_two_files_names_both(tmp_path):
    path = _copy(tmp_path)
    tides = tmp_path / "params/tides.yaml"
    study = yaml.safe_load(tides.read_text())
    study["models"]["MS4N"] = {"family": "ms4"}
    tides.write_text(yaml.safe_dump(study, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        read_params(path)
    assert str(info.value) == (
        "params/tides.yaml: models.MS4N is also given in params/ms4.yaml; keep one"
    )
    # and one given in params.yaml itself and in a study file
    shared = yaml.safe_load(path.read_text())
    shared["suites"] = {"default": {"benchmarks": {"uea": ["BasicMotions"]}, "models": ["MS4N"],
                                    "folds": [0]}}  # fmt: skip
    tides.write_text((REPO / "params/tides.yaml").read_text())
    path.write_text(yaml.safe_dump(shared, sort_keys=False))
    with pytest.raises(ConfigError, match=r"params/ms4.yaml: suites.default is also given in "):
        read_params(path)


@pytest.mark.parametrize(
    "study, message",
    [
        (
            {"protocol": {"lr": 1.0}},
            "x.yaml: protocol: a study file holds only models, suites, tuning; put protocol in",
        ),  # fmt: skip
        (
            {"tuning": {"storage": "journal"}},
            "x.yaml: tuning.storage: a study file's tuning holds only searches",
        ),  # fmt: skip
        ({"models": ["MS4N"]}, "x.yaml: models: expected a mapping"),
        (
            [1, 2],
            "x.yaml:1: the file holds a list, not a mapping; expected a mapping with keys "
            "among models, suites, tuning",
        ),  # fmt: skip
    ],
)
def test_a_study_file_holds_entries_of_three_sections_only(tmp_path, study, message):
    path = _copy(tmp_path)
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(study))
    shared = yaml.safe_load(path.read_text())
    shared["studies"] = [*shared["studies"], "x.yaml"]
    path.write_text(yaml.safe_dump(shared, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        read_params(path)
    assert message in str(info.value).replace(str(tmp_path) + "/", "")


def test_a_missing_study_file_is_named_with_the_file_that_names_it(tmp_path):
    path = _copy(tmp_path)
    (tmp_path / "params/tides.yaml").unlink()
    with pytest.raises(ConfigError) as info:
        read_params(path)
    assert str(info.value) == (
        f"{tmp_path / 'params/tides.yaml'}: no such file (named in {path} studies)"
    )


def test_a_study_file_that_is_a_folder_is_named_as_one(tmp_path):
    path = _copy(tmp_path)
    study = tmp_path / "params/tides.yaml"
    study.unlink()
    study.mkdir()
    with pytest.raises(ConfigError) as info:
        read_params(path)
    assert str(info.value) == f"{study}: a folder, not a YAML file; name the file in it instead"


@pytest.mark.parametrize(
    "extra, message",
    [
        ("params.yaml", "'params.yaml' is {path} itself; a study file holds entries "
         "params.yaml does not, so remove it from the list"),
        ("params/tides.yaml", "'params/tides.yaml' is listed twice; list each study file once"),
        ("./params/../params/tides.yaml", "'./params/../params/tides.yaml' is listed twice (as "
         "'params/tides.yaml'); list each study file once"),
    ],
)  # fmt: skip
def test_params_yaml_or_a_study_file_listed_twice_is_said(tmp_path, extra, message):
    path = _copy(tmp_path)
    params = yaml.safe_load(path.read_text())
    params["studies"].append(extra)
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        read_params(path)
    assert str(info.value) == f"{path}: studies: " + message.format(path=path)


def test_one_file_holding_everything_reads_the_same():
    """The one mapping written back as a single params.yaml (no studies) is the same
    configuration: tests and users may keep one file."""
    params = read_params(REPO / "params.yaml")
    assert "studies" not in params
    text = yaml.safe_dump(params, sort_keys=False)
    assert yaml.safe_load(text) == params
