"""One order for a run's settings (ssmbench.precedence): each place of the table wins over
the ones before it, the origin of every value is the place that set it last, the docs'
table is the code's, and `ssmbench explain` prints it."""

from __future__ import annotations

import copy
import json
import re

import pytest
from conftest import REPO

from ssmbench.cli import main
from ssmbench.config import Job, job_spec, load_params
from ssmbench.precedence import (
    Tuned,
    resolve,
    resolve_settings,
    settings_places,
)
from ssmbench.setting_defaults import DEFAULT_ORIGIN
from ssmbench.staleness import tracked_settings

RUN = ("uea", "BasicMotions", "MS4N")
SUITE = "default"


@pytest.fixture(scope="module")
def real_params() -> dict:
    return load_params(REPO / "params.yaml")


def _with_lr_everywhere(params: dict) -> tuple[dict, list[str], list[dict]]:
    """params with lr set to a different value at each of the table's places for RUN;
    the places' names and their dicts in params."""
    p = copy.deepcopy(params)
    bench, dataset, model = RUN
    suite = p["suites"][SUITE]
    places = [
        (DEFAULT_ORIGIN, {}),  # the schema's lr: set here in its own file
        ("protocol", p["protocol"]),
        (f"benchmarks.{bench}", p["benchmarks"][bench]),
        (f"benchmarks.{bench}.dataset_overrides.{dataset}",
         p["benchmarks"][bench].setdefault("dataset_overrides", {}).setdefault(dataset, {})),
        (f"models.{model}.dataset_settings.{dataset}",
         p["models"][model].setdefault("dataset_settings", {}).setdefault(dataset, {})),
        (f"suites.{SUITE}.overrides", suite.setdefault("overrides", {})),
        (f"suites.{SUITE}.benchmark_overrides.{bench}",
         suite.setdefault("benchmark_overrides", {}).setdefault(bench, {})),
        (f"suites.{SUITE}.model_overrides.{model}",
         suite.setdefault("model_overrides", {}).setdefault(model, {})),
    ]  # fmt: skip
    for i, (_, place) in enumerate(places[1:], 1):
        place["lr"] = 10.0 ** -(i + 1)
    return p, [name for name, _ in places], [place for _, place in places]


def test_each_place_wins_over_the_ones_before_it(real_params):
    params, names, dicts = _with_lr_everywhere(real_params)
    bench, dataset, model = RUN
    found = [name for name, _ in settings_places(params, bench, dataset, model, SUITE)]
    assert found == names  # the table's order
    for i in reversed(range(1, len(names))):
        settings, origins = resolve_settings(params, bench, dataset, model, SUITE)
        assert origins["lr"] == names[i] and settings["lr"] == 10.0 ** -(i + 1)
        # take the last place's lr away: the one before it shows through
        dicts[i].pop("lr")
    # no place of params.yaml sets it: the schema's default, which says so
    settings, origins = resolve_settings(params, bench, dataset, model, SUITE)
    assert (settings["lr"], origins["lr"]) == (1.0e-3, DEFAULT_ORIGIN)


def test_a_tuned_file_goes_over_every_place(real_params):
    params, _, _ = _with_lr_everywhere(real_params)
    tuned = Tuned("results/tuned/uea/BasicMotions/MS4N.json", {"dropout": 0.3}, {"lr": 0.5})
    resolved = resolve(params, *RUN, SUITE, tuned)
    assert resolved.settings["lr"] == 0.5 and resolved.settings_origin["lr"] == tuned.file
    assert resolved.model_params["dropout"] == 0.3
    assert resolved.params_origin["dropout"] == tuned.file
    assert resolved.params_origin["d_model"] == "models.MS4N"


def test_a_dict_setting_is_merged_key_by_key_with_an_origin_per_key(real_params):
    params = copy.deepcopy(real_params)
    params["suites"][SUITE]["overrides"] = {"reading": {"block_mb": 1.0}}
    settings, origins = resolve_settings(params, *RUN, SUITE)
    assert settings["reading"]["block_mb"] == 1.0
    assert settings["reading"]["buffer_blocks"] == params["protocol"]["reading"]["buffer_blocks"]
    assert origins["reading.block_mb"] == f"suites.{SUITE}.overrides"
    assert origins["reading.buffer_blocks"] == "protocol"
    assert "reading" not in origins


def test_a_suite_setting_reaches_only_benchmarks_that_have_it(real_params):
    params = copy.deepcopy(real_params)
    params["suites"][SUITE]["overrides"] = {"generator": {"seed": 7}}  # synthetic's, not uea's
    settings, origins = resolve_settings(params, *RUN, SUITE)
    assert "generator" not in settings and not any(k.startswith("generator") for k in origins)
    synthetic, _ = resolve_settings(params, "synthetic", None, None, SUITE)
    assert synthetic["generator"]["seed"] == 7


def test_a_setting_no_place_sets_is_its_schema_default_and_says_so(real_params):
    params = copy.deepcopy(real_params)
    params["protocol"].pop("seed_base", None)
    settings, origins = resolve_settings(params, *RUN, SUITE)
    assert settings["seed_base"] == 0 and origins["seed_base"] == DEFAULT_ORIGIN
    # the lr schedule: set by no place for this run, read by the trainer all the same
    assert (settings["lr_schedule"], origins["lr_schedule"]) == ("constant", DEFAULT_ORIGIN)
    # a dict default is merged key by key under the places that set some of its keys
    params["protocol"]["reading"] = {"block_mb": 2.0}
    settings, origins = resolve_settings(params, *RUN, SUITE)
    assert settings["reading"] == {"in_memory_max_gb": 4.0, "block_mb": 2.0, "buffer_blocks": 32}
    assert origins["reading.block_mb"] == "protocol"
    assert origins["reading.buffer_blocks"] == DEFAULT_ORIGIN


def test_every_value_has_an_origin_in_every_suite(real_params):
    from ssmbench.config import suite_grid

    for suite in real_params["suites"]:
        for job in suite_grid(real_params, suite)[:50]:
            spec = job_spec(real_params, job, suite)
            pairs = (
                (spec["settings"], spec["origins"]["settings"]),
                (spec["model_params"], spec["origins"]["model_params"]),
            )
            for values, origins in pairs:
                covered = {name.partition(".")[0] for name in origins}
                assert covered == set(values), (suite, job)


def test_where_a_value_comes_from_never_makes_a_record_stale(real_params):
    job = Job(*RUN, 0)
    spec = job_spec(real_params, job, SUITE)
    moved = copy.deepcopy(spec)
    moved["origins"]["settings"]["lr"] = "somewhere else"
    assert tracked_settings(moved) == tracked_settings(spec)


def test_the_docs_table_is_the_code_s_order(real_params):
    text = (REPO / "docs/protocol.md").read_text()
    section = text.split("### Where a run's settings come from", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| (\d) \| `([^`]+)`", section, flags=re.M)
    params, _, _ = _with_lr_everywhere(real_params)
    code = [name for name, _ in settings_places(params, *RUN, SUITE)]
    generic = [
        name.replace(f"suites.{SUITE}", "suites.S").replace("uea", "B")
        .replace("BasicMotions", "D").replace("MS4N", "M")
        for name in code
    ]  # fmt: skip
    assert [place for _, place in rows[: len(generic)]] == generic
    assert len(rows) == len(generic)
    assert re.search(rf"^\| {len(generic)} \| the tuned file", section, flags=re.M)


def test_explain_prints_each_value_with_its_place(capsys):
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "uea6-paper", "explain",
            "--benchmark", "uea6", "--dataset", "MotorImagery", "--model", "TIDES"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    tides, shared = re.escape(str(REPO / "params/tides.yaml")), re.escape(str(REPO / "params.yaml"))
    lr = rf"^  lr +0\.000652 +{tides}: models\.TIDES\.dataset_settings\.MotorImagery$"
    assert re.search(lr, out, re.M)
    assert re.search(rf"^  optimizer +\"adam\" +{shared}: protocol$", out, re.M)
    d_model = rf"^  d_model +32 +{tides}: models\.TIDES\.dataset_params\.MotorImagery$"
    assert re.search(d_model, out, re.M)
    assert "tuned file" in out and "not written yet" in out  # uea6-paper tunes TIDES
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["origins"]["settings"]["lr"] == "models.TIDES.dataset_settings.MotorImagery"
    assert data["settings"]["lr"] == 0.000652 and data["suite"] == "uea6-paper"


def test_explain_names_an_unknown_model(capsys):
    argv = ["--params", str(REPO / "params.yaml"), "explain", "--benchmark", "uea",
            "--dataset", "BasicMotions", "--model", "NoSuchModel"]  # fmt: skip
    assert main(argv) == 2
    assert "--model" in capsys.readouterr().err


def test_explain_says_when_the_run_is_not_in_the_suite(capsys):
    """A fold the suite does not run is resolved all the same, with a note: the settings
    shown are what that run would take, not one of the suite's runs."""
    argv = ["--params", str(REPO / "params.yaml"), "--suite", "default", "explain",
            "--benchmark", "uea", "--dataset", "BasicMotions", "--model", "MS4"]  # fmt: skip
    assert main([*argv, "--fold", "1"]) == 0
    assert "not a run of suite" not in capsys.readouterr().err
    assert main([*argv, "--fold", "99"]) == 0
    err = capsys.readouterr().err
    assert (
        "note: uea/BasicMotions/MS4/fold99 is not a run of suite default (not in its grid: "
        "`ssmbench grid`); shown as the suite would resolve it; no suite of params.yaml runs it"
    ) in err
    other = ["--params", str(REPO / "params.yaml"), "--suite", "default", "explain",
             "--benchmark", "uea", "--dataset", "Cricket", "--model", "Mamba1"]  # fmt: skip
    assert main(other) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith(
        "; the suites that run it: uea-paper (--suite NAME for its settings there)\n"
    )


def test_explain_shows_every_value_the_run_reads_defaults_included(capsys):
    """A setting no place of params.yaml sets (the lr schedule of a UEA run) and a
    hyperparameter its model entry leaves to the constructor (MS4N's learnable_b) are
    shown with the default they take and where that default is."""
    argv = ["--params", str(REPO / "params.yaml"), "explain", "--benchmark", "uea",
            "--dataset", "BasicMotions", "--model", "MS4N"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  lr_schedule +\"constant\" +default \(params\.schema\.yaml\)$", out, re.M)
    assert re.search(r"^  warmup_epochs +0 +default \(params\.schema\.yaml\)$", out, re.M)
    learnable = r"^  learnable_b +true +default \(ssmbench\.models\.ms4:MS4Classifier\)$"
    assert re.search(learnable, out, re.M)
    assert re.search(r"^  d_model +64 +.*params/ms4\.yaml: models\.MS4N$", out, re.M)
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["origins"]["settings"]["param_groups"] == "default (params.schema.yaml)"
    assert data["model_defaults"]["learnable_b"] == {
        "value": True,
        "origin": "default (ssmbench.models.ms4:MS4Classifier)",
    }
    assert "learnable_b" not in data["model_params"]  # the spec, and a record, as resolved
