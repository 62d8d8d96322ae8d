"""Numbers given on the command line or in params.yaml are range-checked before anything
runs: thread and epoch counts, folds (a run's seed is seed_base + fold, and numpy takes
seeds below 2**32). Each is one message naming the argument or key, exit status 2."""

from __future__ import annotations

import os

import pytest
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import MAX_SEED, ConfigError, load_params
from ssmbench.params_file import read_params

TRAIN = ["--params", str(REPO / "params.yaml"), "train", "--benchmark", "uea",
         "--dataset", "BasicMotions", "--model", "MS4N"]  # fmt: skip
CPUS = os.cpu_count() or 1


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--fold", "0", "--threads", "0"], "argument --threads: 0: give 1 to"),
        (["--fold", "0", "--threads", "-1"], "argument --threads: -1: give 1 to"),
        (["--fold", "0", "--threads", "99999"], f"99999: give 1 to {CPUS} (this machine's CPUs)"),
        (["--fold", "0", "--threads", "two"], "argument --threads: 'two' is not an integer"),
        (["--fold", "0", "--max-epochs", "0"], "argument --max-epochs: 0: give at least 1"),
        (["--fold", "0", "--max-epochs", "-2"], "argument --max-epochs: -2: give at least 1"),
    ],
)
def test_thread_and_epoch_counts_out_of_range_are_refused(extra, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*TRAIN, *extra])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_fold_whose_seed_numpy_cannot_take_is_refused(capsys):
    assert main([*TRAIN, "--fold", str(MAX_SEED + 1)]) == 2
    err = capsys.readouterr().err
    assert f"--fold: {MAX_SEED + 1} is above {MAX_SEED}" in err


def test_folds_and_seed_base_beyond_numpys_seeds_are_named_in_params(tmp_path, capsys):
    import yaml

    params = read_params(REPO / "params.yaml")
    params["suites"]["default"]["folds"] = [4294967296]
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(ConfigError, match=r"suites.default.folds.0: 4294967296 is greater than "
                       r"the maximum of 4294967295"):  # fmt: skip
        load_params(path)
    # each below the bound, their sum above: the run's own check names the run and the key
    params["suites"]["default"]["folds"] = [MAX_SEED]
    params["protocol"]["seed_base"] = 1
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    assert main(["--params", str(path), "check"]) == 2
    err = capsys.readouterr().err
    assert f"fold{MAX_SEED} in suite default: its seed, seed_base (protocol) + fold, is " in err
    assert f"{MAX_SEED + 1}, above {MAX_SEED}" in err


def test_a_schema_problem_in_a_study_file_names_that_file(tmp_path):
    """params.yaml names its study files (studies:); a value out of range in one of them
    is named with the file that holds it, not only params.yaml."""
    import shutil

    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(REPO / "params", tmp_path / "params")
    study = tmp_path / "params/ms4.yaml"
    text = study.read_text()
    assert text.count("    folds: [0, 1]\n") >= 1
    study.write_text(text.replace("    folds: [0, 1]\n", "    folds: [4294967296]\n", 1))
    with pytest.raises(ConfigError) as err:
        load_params(tmp_path / "params.yaml")
    assert (
        "  suites.default.folds.0: 4294967296 is greater than the maximum of 4294967295 "
        "(in params/ms4.yaml)"
    ) in str(err.value)


def test_the_largest_fold_numpy_takes_is_accepted(tmp_path, capsys):
    import yaml

    params = read_params(REPO / "params.yaml")
    params["suites"]["default"]["folds"] = [MAX_SEED]
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    assert main(["--params", str(path), "check"]) == 0, capsys.readouterr().err
