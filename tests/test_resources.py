"""ssmbench.resources: a training run's resources from params.yaml resources.train, by the
dataset's size class and the model, scaled by the attempt; groups; bad entries."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import ConfigError, load_params
from ssmbench.params_file import read_params
from ssmbench.resources import TrainResources, check_train_resources


@pytest.fixture()
def params():
    params = load_params(REPO / "params.yaml", suite="tiny")
    train = params["resources"]["train"]
    for entry in (train["default"], *train["sizes"].values()):
        entry["mem_mb"] = 1000
    # BasicMotions (N*C*L = 48,000) stays small; JapaneseVowels (222,720) becomes large
    train["sizes"]["small"]["max_values"] = 1.0e5
    train["sizes"]["medium"]["max_values"] = 2.0e5
    train["sizes"]["large"].update(mem_mb=64000, runtime=2880, gpu=1, cpus_per_task=8)
    train["models"]["MS4"] = {"sizes": {"large": {"gpu_model": "a100", "mem_mb": 3000}}}
    return params


def test_resources_follow_dataset_size_and_model(params):
    resources = TrainResources(params)
    assert resources.size_class("uea", "BasicMotions") == "small"
    assert resources.size_class("uea", "JapaneseVowels") == "large"
    assert resources.of("uea", "BasicMotions", "MS4N") == resources.of("uea", "BasicMotions", "MS4")

    def four(dataset, model):
        return tuple(
            resources.value(key, "uea", dataset, model)
            for key in ("mem_mb", "runtime", "gpu", "cpus_per_task")
        )

    assert four("BasicMotions", "MS4N") == (1000, 30, 0, 1)
    assert four("JapaneseVowels", "MS4N") == (64000, 2880, 1, 8)
    assert resources.value("gpu_model", "uea", "JapaneseVowels", "MS4N") == ""
    # a model's own entry for one size class
    assert resources.value("mem_mb", "uea", "JapaneseVowels", "MS4") == 3000
    assert resources.value("gpu_model", "uea", "JapaneseVowels", "MS4") == "a100"
    assert resources.value("mem_mb", "uea", "BasicMotions", "MS4") == 1000
    # a model entry over its size class: the non-deep models take more threads, no GPU
    assert resources.value("threads", "uea", "BasicMotions", "Quant") == 4
    assert resources.value("cpus_per_task", "uea", "BasicMotions", "Quant") == 4


def test_a_retry_asks_for_attempt_times_memory_and_runtime(params):
    resources = TrainResources(params)
    at = {a: resources.value("mem_mb", "uea", "BasicMotions", "MS4N", a) for a in (1, 2, 3)}
    assert at == {1: 1000, 2: 2000, 3: 3000}
    assert resources.value("runtime", "uea", "BasicMotions", "MS4N", 2) == 60
    assert resources.value("gpu", "uea", "JapaneseVowels", "MS4N", 2) == 1
    assert resources.value("threads", "uea", "JapaneseVowels", "MS4N", 3) == 8


def test_only_group_classes_are_grouped(params):
    resources = TrainResources(params)
    assert resources.group("uea", "BasicMotions") == "train_small"
    assert resources.group("uea", "JapaneseVowels") is None


def test_a_dataset_of_unknown_size_takes_the_last_class(params):
    params["benchmarks"]["uea"]["datasets"].append("NotInTheCatalog")
    assert TrainResources(params).size_class("uea", "NotInTheCatalog") == "large"
    # a benchmark's datasets are looked up under its name, then its source: the catalog's
    # uea_drop entry (48,000 values, as its base) makes BasicMotionsDrop small, and the
    # official Physiome-ODE sets (catalog benchmark physiome_ode, source physiome) are known
    assert TrainResources(params).size_class("uea_drop", "BasicMotionsDrop") == "small"
    assert TrainResources(params).size_class("physiome_ode", "DUP01") == "large"  # 396,000
    assert TrainResources(params).size_class("physiome_ode", "NotInTheCatalog") == "large"
    params["resources"]["train"]["sizes"]["large"]["max_values"] = 4.0e5
    params["resources"]["train"]["sizes"]["xl"] = {"threads": 1}
    assert TrainResources(params).size_class("physiome_ode", "DUP01") == "large"
    assert TrainResources(params).size_class("physiome_ode", "NotInTheCatalog") == "xl"
    # another benchmark of a source without that dataset: unknown
    params["benchmarks"]["drop_copy"] = {**params["benchmarks"]["uea_drop"], "source": "uea"}
    assert TrainResources(params).size_class("drop_copy", "BasicMotionsDrop") == "xl"


def test_runs_on_larger_datasets_start_first(params):
    params["benchmarks"]["uea"]["datasets"].append("NotInTheCatalog")
    resources = TrainResources(params)
    # 10 log10 of 48,000 and 222,720 values; unknown: first, as the largest
    assert resources.priority("uea", "BasicMotions") == 47
    assert resources.priority("uea", "JapaneseVowels") == 53
    assert resources.priority("uea", "NotInTheCatalog") > resources.priority("monster", "S2Agri-17")


def test_string_resources_are_declared_only_when_an_entry_sets_them(params):
    resources = TrainResources(params)
    assert resources.sets("gpu_model") and not resources.sets("slurm_extra")
    del params["resources"]["train"]["models"]["MS4"]
    assert not TrainResources(params).sets("gpu_model")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t["models"].update(NoSuchModel={"gpu": 1}),
            "resources.train.models.NoSuchModel: no such model in params.yaml `models`",
        ),
        (
            lambda t: t["models"].update(MS4N={"sizes": {"huge": {"gpu": 1}}}),
            "resources.train.models.MS4N.sizes.huge: no such size class",
        ),
        (
            lambda t: t["sizes"]["medium"].pop("max_values"),
            "resources.train.sizes.medium: only the last size class may omit max_values",
        ),
    ],
)
def test_bad_entries_are_named(params, edit, message):
    edit(params["resources"]["train"])
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        check_train_resources(params)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        TrainResources(params)


def test_ssmbench_check_names_an_unknown_model_in_resources(tmp_path, capsys):
    params = read_params(REPO / "params.yaml")
    params["resources"]["train"]["models"]["NoSuchModel"] = {"gpu": 1}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    assert main(["--params", str(path), "check"]) == 2
    assert "resources.train.models.NoSuchModel" in capsys.readouterr().err
