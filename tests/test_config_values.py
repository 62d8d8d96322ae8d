"""params.yaml's values, not only its keys: suite overrides held to the types and ranges of
the settings they override, the bounds of every numeric setting, duplicate keys, YAML
syntax errors and empty files, each with the same message from `ssmbench check`
(load_params) and from `snakemake -n`."""

from __future__ import annotations

import copy
import subprocess

import pytest
import yaml
from conftest import REPO, make_project, tool_env, write_params

from ssmbench.config import ConfigError, load_params
from ssmbench.params_file import read_params, validate_schema

SHIPPED = read_params(REPO / "params.yaml")


@pytest.fixture()
def params():
    return copy.deepcopy(SHIPPED)


def _write(tmp_path, params, name="params.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _load_error(tmp_path, params) -> str:
    with pytest.raises(ConfigError) as info:
        load_params(_write(tmp_path, params))
    return str(info.value)


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("max_epochs", "ten", "'ten' is not of type 'integer'"),
        ("max_epochs", 0, "0 is less than the minimum of 1"),
        ("lr", -1, "-1 is less than or equal to the minimum of 0"),
        ("batch_size", -5, "-5 is less than the minimum of 1"),
        ("val_fraction", 0.9, "0.9 is greater than or equal to the maximum of 0.5"),
        ("early_stopping_patience", 0, "0 is less than the minimum of 1"),
        ("weight_decay", -0.1, "-0.1 is less than the minimum of 0"),
        ("grad_clip_norm", 0, "0 is less than or equal to the minimum of 0"),
        ("batch_fraction", 1.5, "1.5 is greater than the maximum of 1"),
        ("optimizer", "sgd", "'sgd' is not one of ['adam', 'adamw']"),
        ("deterministic", "yes please", "'yes please' is not of type 'boolean'"),
    ],
)
def test_a_bad_suite_override_value_is_named_by_its_path(tmp_path, params, key, value, problem):
    params["suites"]["tiny"]["overrides"][key] = value
    message = _load_error(tmp_path, params)
    assert f"  suites.tiny.overrides.{key}: {problem}" in message, message


def test_a_bad_benchmark_override_value_is_named_by_its_path(tmp_path, params):
    overrides = params["suites"]["tides-data"]["benchmark_overrides"]["synthetic"]
    overrides.update(max_epochs="ten", drop={"train_rate": 1.5})
    message = _load_error(tmp_path, params)
    where = "suites.tides-data.benchmark_overrides.synthetic"
    assert f"  {where}.max_epochs: 'ten' is not of type 'integer'" in message, message
    assert f"  {where}.drop.train_rate: 1.5 is greater than or equal to the maximum" in message


def test_null_grad_clip_norm_in_an_override_means_no_clipping(tmp_path, params):
    params["suites"]["tiny"]["overrides"]["grad_clip_norm"] = None
    load_params(_write(tmp_path, params))


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda p: p["protocol"].update(checkpoint_every=-1), "protocol.checkpoint_every"),
        (lambda p: p["protocol"].update(seed_base=-1), "protocol.seed_base"),
        (
            lambda p: p["protocol"].update(checkpoint_min_seconds=-1),
            "protocol.checkpoint_min_seconds",
        ),
        (
            lambda p: p["benchmarks"]["uea"].update(batch_fraction=2),
            "benchmarks.uea.batch_fraction",
        ),
        (lambda p: p["benchmarks"]["uea"].update(batch_min=0), "benchmarks.uea.batch_min"),
        (lambda p: p["benchmarks"]["synthetic"].update(lr=0), "benchmarks.synthetic.lr"),
        (
            lambda p: p["benchmarks"]["monster"]["dataset_overrides"]["AudioMNIST"].update(
                batch_size=0
            ),
            "benchmarks.monster.dataset_overrides.AudioMNIST.batch_size",
        ),
        (
            lambda p: p["report"]["convergence_thresholds"].update(val_accuracy=1.5),
            "report.convergence_thresholds.val_accuracy",
        ),
        (
            lambda p: p["report"]["convergence_thresholds"].update(val_loss=-1),
            "report.convergence_thresholds.val_loss",
        ),
    ],
)
def test_every_bounded_setting_has_its_bounds(params, edit, where):
    edit(params)
    with pytest.raises(ConfigError, match=f"  {where}: "):
        validate_schema(params)


def test_batch_min_above_batch_max_is_named(tmp_path, params):
    params["suites"]["tiny"]["overrides"]["batch_min"] = 128
    message = _load_error(tmp_path, params)
    assert "suites.tiny: benchmark uea's batch_min 128 is above its batch_max 64" in message
    params = copy.deepcopy(SHIPPED)
    params["benchmarks"]["uea"]["batch_min"] = 100
    message = _load_error(tmp_path, params)
    assert "benchmarks.uea: batch_min 100 is above batch_max 64" in message


def test_a_duplicated_key_names_its_path_and_both_lines(tmp_path):
    text = (REPO / "params.yaml").read_text()
    lines = text.splitlines()
    first = lines.index("  lr: 1.0e-3") + 1
    path = tmp_path / "params.yaml"
    path.write_text(text.replace("  lr: 1.0e-3\n", "  lr: 1.0e-3\n  lr: 0.5\n", 1))  # protocol.lr
    with pytest.raises(ConfigError) as info:
        load_params(path)
    assert str(info.value) == (
        f"{path}:{first + 1}: duplicate key 'protocol.lr': it is also given at line {first}; "
        "keep one"
    )


def test_a_duplicated_top_level_key_and_one_in_a_list_are_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("suite: a\nx: [{k: 1, k: 2}]\nsuite: b\n")
    with pytest.raises(ConfigError, match=r"p.yaml:2: duplicate key 'x\[0\].k': .* line 2"):
        read_params(path)
    path.write_text("suite: a\nx: 1\nsuite: b\n")
    with pytest.raises(ConfigError, match="p.yaml:3: duplicate key 'suite': .* at line 1;"):
        read_params(path)


def test_anchors_aliases_and_merge_keys_are_not_duplicates(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("a: &base {k: 1, j: 2}\nb:\n  <<: *base\n  k: 3\nc: *base\n")
    assert read_params(path) == {
        "a": {"k": 1, "j": 2},
        "b": {"k": 3, "j": 2},
        "c": {"k": 1, "j": 2},
    }
    assert read_params(REPO / "params.yaml") == SHIPPED  # its anchors and aliases


def _syntax_error(tmp_path):
    """params.yaml with a YAML syntax error on the protocol's lr line; that line's number."""
    text = (REPO / "params.yaml").read_text()
    line = text.splitlines().index("  lr: 1.0e-3") + 1
    path = tmp_path / "params.yaml"
    path.write_text(text.replace("  lr: 1.0e-3\n", "  lr: 1.0e-3: 2\n"))
    return path, line


def test_a_yaml_syntax_error_names_file_line_and_the_line(tmp_path):
    path, line = _syntax_error(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_params(path)
    assert str(info.value) == (
        f"{path}:{line}:13: not valid YAML: mapping values are not allowed here\n"
        f"    {line} |   lr: 1.0e-3: 2"
    )


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "empty"),
        ("# nothing but a comment\n", "empty"),
        ("- suite\n- paths\n", "1: the file holds a list, not a mapping"),
        ("just words\n", "1: the file holds a str, not a mapping"),
    ],
)
def test_an_empty_or_non_mapping_file_is_a_clear_error(tmp_path, text, problem):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_params(path)
    assert str(info.value) == (
        f"{path}:{problem}; expected a mapping with keys suite, paths, protocol, "
        "benchmarks, models, suites, resources, report"
    ).replace(f"{path}:empty", f"{path}: empty")


def test_ssmbench_check_reports_a_syntax_error_and_exits_2(tmp_path, capsys):
    from ssmbench.cli import main

    path, line = _syntax_error(tmp_path)
    assert main(["--params", str(path), "check"]) == 2
    err = capsys.readouterr().err
    assert f"ssmbench check: error: {path}:{line}:13: not valid YAML: mapping values" in err


def _snakemake_dry_run(project, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["snakemake", "-n", "--cores", "1", *args],
        cwd=project,
        env=tool_env(project),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _tiny(params):
    params["suite"] = "tiny"


@pytest.mark.integration
def test_snakemake_gives_the_check_message_for_a_syntax_error_and_a_bad_value(tmp_path):
    """The real `snakemake -n`: params.yaml goes through ssmbench.config, so a syntax error
    and an override of the wrong type fail before any job with the words of load_params."""
    project = make_project(tmp_path / "proj", _tiny)
    good = (project / "params.yaml").read_text()
    path, line = _syntax_error(project)  # the shipped text, broken at its lr line
    dry = _snakemake_dry_run(project)
    assert dry.returncode != 0
    with pytest.raises(ConfigError) as info:
        load_params(path)
    assert str(info.value).replace(str(path), "params.yaml") in dry.stdout + dry.stderr

    (project / "params.yaml").write_text(good)
    params = read_params(project / "params.yaml")
    params["suites"]["tiny"]["overrides"]["max_epochs"] = "ten"
    write_params(project, params)
    dry = _snakemake_dry_run(project)
    assert dry.returncode != 0
    output = dry.stdout + dry.stderr
    assert "  suites.tiny.overrides.max_epochs: 'ten' is not of type 'integer'" in output
    assert not (project / "results").exists() and not (project / "data").exists()


@pytest.mark.integration
def test_snakemake_config_on_the_command_line_overrides_params_yaml(tmp_path):
    """`--config suite=...` still wins over the file, and a bad value given there is
    checked like one in the file."""
    project = make_project(tmp_path / "proj", _tiny)
    dry = _snakemake_dry_run(project)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "S4D" not in dry.stdout  # tiny: MS4N and MS4
    dry = _snakemake_dry_run(project, "--config", "suite=default")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "fold1" in dry.stdout and "S4D" in dry.stdout
    dry = _snakemake_dry_run(project, "--config", "suite=../x")
    assert dry.returncode != 0
    assert "suite: '../x' does not match" in dry.stdout + dry.stderr


@pytest.mark.parametrize(
    "generator, problem",
    [
        ({"n_train": -1}, "n_train must be an integer >= 0, got -1"),
        ({"n_train": "x"}, "n_train must be an integer >= 0, got 'x'"),
        ({"n_test_per_dt": 0}, "n_test_per_dt must be > 0"),
        ({"test_dts": []}, "test_dts must name at least one value"),
        ({"dt_range": [1.5, 0.5]}, "dt_range must be (low, high) with low <= high"),
        ({"dt_range": [0.5]}, "dt_range must be (low, high)"),
        ({"dt_per_step": "yes"}, "dt_per_step must be true or false"),
    ],
)
def test_a_bad_fading_flash_generator_value_fails_ssmbench_check(
    tmp_path, params, generator, problem, capsys, monkeypatch
):
    """Generated data is checked before any job runs, like every other value."""
    from ssmbench.cli import main

    params["suite"] = "tides-data"
    params["suites"]["tides-data"]["benchmark_overrides"]["synthetic"]["generator"].update(
        generator
    )
    path = _write(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    assert main(["--params", str(path), "check"]) == 2
    err = capsys.readouterr().err
    assert "FadingFlash: bad generator settings" in err and problem in err, err
