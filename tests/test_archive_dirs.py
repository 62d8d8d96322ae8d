"""``archive_dir`` as a list of folders searched in order, or one dataset's own
(``dataset_overrides.<Name>.archive_dir``): the first folder holding ``<Name>/`` is read,
recorded in ``provenance.json``, and is the dataset's content key, so a folder added to
the list that does not hold it changes nothing of it; bad values are named, with the key
that set them, before any job runs.

Real data: aeon's BasicMotions and JapaneseVowels copied into two folders; the real
archive folder (the ``shared_uea`` fixture: Libras) and its compressed sibling ``uea-xz``
(MotorImagery) for a suite that reads two archive folders.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, write_params

from ssmbench.cli import main
from ssmbench.config import benchmark_settings, check_suite_sources, load_params
from ssmbench.data import sources
from ssmbench.data.errors import DataError
from ssmbench.params_file import ConfigError, validate_schema
from ssmbench.precedence import resolve_settings

UEA = {"source": "uea", "download": False, "normalise": "per_channel_train_zscore"}


def _bundled(name: str) -> Path:
    import aeon.datasets

    return Path(aeon.datasets.__file__).resolve().parent / "data" / name


def _archive(root: Path, *names: str) -> Path:
    """An archive folder holding a copy of each of aeon's bundled ``names``."""
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copytree(_bundled(name), root / name)
    return root


def _settings(archive_dir) -> dict:
    return {**UEA, "archive_dir": archive_dir}


@pytest.fixture(scope="module")
def params() -> dict:
    return load_params(REPO / "params.yaml")


def _suite(params: dict, archive_dir, datasets=("BasicMotions", "JapaneseVowels")) -> dict:
    p = copy.deepcopy(params)
    p["suites"]["mine"] = {
        "benchmarks": {"uea": list(datasets)},
        "models": ["MS4N"],
        "folds": [0],
        "overrides": {"archive_dir": archive_dir},
    }
    return p


def test_a_list_is_searched_in_order_and_the_folder_read_is_recorded(tmp_path):
    a = _archive(tmp_path / "a", "BasicMotions")
    b = _archive(tmp_path / "b", "JapaneseVowels", "BasicMotions")
    raw, out = tmp_path / "raw", tmp_path / "prepared"
    settings = _settings([str(a), str(b)])
    for name, folder in (("BasicMotions", a), ("JapaneseVowels", b)):
        prov = sources.fetch(name, raw, settings)
        assert prov["source"] == "archive_dir"
        assert prov["archive_dir"] == str(folder)  # the folder of the list it came from
        assert prov["source_url"] == str((folder / name).resolve())
        assert sources.source_files(name, settings) == [
            folder / name / f"{name}_{split}.ts" for split in ("TRAIN", "TEST")
        ]
        meta = json.loads((sources.prepare(name, raw, out, settings) / "meta.json").read_text())
        assert meta["source_url"] == prov["source_url"]


def test_the_content_key_is_the_folder_read_not_the_list(tmp_path):
    """A string and a list whose first folder holding the dataset is that string give the
    same recipe; a folder added that does not hold it changes nothing; one added before it
    that holds it does (the data would come from there)."""
    a = _archive(tmp_path / "a", "BasicMotions")
    empty = _archive(tmp_path / "empty")
    other = _archive(tmp_path / "other", "BasicMotions")
    name = "BasicMotions"
    one = sources.data_settings(_settings(str(a)), name)
    assert sources.data_settings(_settings([str(a)]), name) == one
    assert sources.data_settings(_settings([str(empty), str(a)]), name) == one
    assert sources.data_settings(_settings([str(a), str(other)]), name) == one
    assert sources.data_settings(_settings([str(other), str(a)]), name) != one

    raw = tmp_path / "raw"
    sources.fetch(name, raw, _settings(str(a)))
    assert sources.raw_copy_problem(name, raw, _settings([str(empty), str(a)])) is None
    why = sources.raw_copy_problem(name, raw, _settings([str(other), str(a)]))
    assert why is not None and str((other / name).resolve()) in why
    prov = sources.fetch(name, raw, _settings([str(other), str(a)]))
    assert prov["archive_dir"] == str(other) and "archive_dir" in prov["fetched_because"]


def test_a_copy_stands_when_no_folder_of_the_list_holds_it_any_more(tmp_path):
    a = _archive(tmp_path / "a", "BasicMotions")
    empty = _archive(tmp_path / "empty")
    raw = tmp_path / "raw"
    sources.fetch("BasicMotions", raw, _settings([str(empty), str(a)]))
    shutil.rmtree(a / "BasicMotions")  # the source is gone: the copy is all there is
    assert sources.raw_copy_problem("BasicMotions", raw, _settings([str(empty), str(a)])) is None
    why = sources.raw_copy_problem("BasicMotions", raw, _settings([str(empty)]))
    assert "came from archive_dir" in why


def test_a_dataset_takes_its_own_archive_dir_and_explain_says_where_from(tmp_path, params, capsys):
    a = _archive(tmp_path / "a", "BasicMotions")
    b = _archive(tmp_path / "b", "JapaneseVowels")
    p = _suite(params, str(a))
    del p["suites"]["mine"]["overrides"]["archive_dir"]  # the suite's would win over it
    p["benchmarks"]["uea"]["archive_dir"] = str(a)
    p["benchmarks"]["uea"]["dataset_overrides"] = {"JapaneseVowels": {"archive_dir": str(b)}}
    validate_schema(p)
    check_suite_sources(p, "mine")
    settings, origins = resolve_settings(p, "uea", "JapaneseVowels", "MS4N", "mine")
    assert settings["archive_dir"] == str(b)
    assert origins["archive_dir"] == "benchmarks.uea.dataset_overrides.JapaneseVowels"
    assert benchmark_settings(p, "uea", "mine", "BasicMotions")["archive_dir"] == str(a)

    write_params(tmp_path, p)
    params_file = tmp_path / "params.yaml"
    argv = ["--params", str(params_file), "--suite", "mine", "explain", "--benchmark", "uea",
            "--dataset", "JapaneseVowels", "--model", "MS4N"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("archive_dir"))
    assert str(b) in line and "benchmarks.uea.dataset_overrides.JapaneseVowels" in line


def test_the_schema_takes_a_list_of_folders_and_refuses_other_shapes(params):
    p = copy.deepcopy(params)
    p["benchmarks"]["uea"]["archive_dir"] = ["../data/uea", "../data/uea-xz"]
    validate_schema(p)
    for bad in ([], ["../data/uea", 3], [None], {"a": 1}, ["x", "x"]):
        p["benchmarks"]["uea"]["archive_dir"] = bad
        with pytest.raises(ConfigError, match=r"benchmarks\.uea\.archive_dir"):
            validate_schema(p)
    p = _suite(params, ["../data/uea", 7])
    with pytest.raises(ConfigError, match=r"suites\.mine\.overrides\.archive_dir"):
        validate_schema(p)


def test_bad_folders_are_named_with_the_key_before_any_job(tmp_path, params):
    a = _archive(tmp_path / "a", "BasicMotions")
    missing = tmp_path / "no-such-folder"
    with pytest.raises(ConfigError) as err:
        check_suite_sources(_suite(params, [str(a), str(missing)], ["BasicMotions"]), "mine")
    text = str(err.value)
    assert "UEA dataset BasicMotions" in text and f"names {missing}, which is not a folder" in text
    assert "set by suites.mine.overrides.archive_dir" in text

    empty = _archive(tmp_path / "empty")
    with pytest.raises(ConfigError) as err:
        check_suite_sources(_suite(params, [str(empty), str(a)], ["JapaneseVowels"]), "mine")
    text = str(err.value)
    assert f"no folder of archive_dir [{empty}, {a}] holds JapaneseVowels/" in text
    assert "dataset_overrides.JapaneseVowels.archive_dir" in text
    assert "set by suites.mine.overrides.archive_dir" in text

    with pytest.raises(DataError, match=r"archive_dir is \['x', 3\]: give a folder"):
        sources.fetch("BasicMotions", tmp_path / "raw", _settings(["x", 3]))


def test_libras_and_motor_imagery_from_two_folders_in_one_suite(shared_uea, params, tmp_path):
    """The user's case: Libras from the plain archive folder, MotorImagery from the
    compressed one, one suite. Checked without fetching MotorImagery (415 MB of .ts)."""
    uea_xz = shared_uea.parent / "uea-xz"
    if not (uea_xz / "MotorImagery").is_dir():
        pytest.skip(f"no {uea_xz}/MotorImagery")
    folders = [str(shared_uea), str(uea_xz)]
    p = _suite(params, folders, ["Libras", "MotorImagery"])
    validate_schema(p)
    check_suite_sources(p, "mine")

    def folder(name: str) -> str:
        recipe = sources.data_settings(benchmark_settings(p, "uea", "mine", name), name)
        return json.loads(recipe)["archive_dir"]

    recipes = {name: folder(name) for name in ("Libras", "MotorImagery")}
    assert recipes == {"Libras": str(shared_uea), "MotorImagery": str(uea_xz)}
    prov = sources.fetch("Libras", tmp_path / "raw", _settings(folders[::-1]))
    assert prov["archive_dir"] == str(shared_uea)
    assert prov["verified_against"].endswith("SHA256SUMS")
