"""Variants: a model entry that derives from another (``base: <model>``) with changed
hyperparameters, and a suite's own ``variants``; each is a model of its own name (its own
records, its own column), its values' origins shown by ``explain``; a missing base, a
cycle or a variant named like a model is one error naming the entry."""

from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import REPO

from ssmbench.config import ConfigError, Job, check_params, job_spec, model_entry, suite_grid
from ssmbench.params_file import read_params, read_params_and_files
from ssmbench.precedence import resolve_model_params


def _project(tmp_path, models: dict, suite_variants: dict | None = None) -> tuple[dict, dict]:
    """params.yaml of the repository with a study file adding ``models`` and a suite
    ``mine`` (MS4N and the variants on BasicMotions)."""
    main = yaml.safe_load((REPO / "params.yaml").read_text())
    shutil.copytree(REPO / "params", tmp_path / "params")
    main["studies"] += ["mine.yaml"]
    main["suite"] = "mine"
    suite = {"benchmarks": {"uea": ["BasicMotions"]}, "models": ["MS4N", *models], "folds": [0]}
    if suite_variants is not None:
        suite["variants"] = suite_variants
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(main))
    study = {"models": models, "suites": {"mine": suite}}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(study))
    return read_params_and_files(tmp_path / "params.yaml")


def test_a_variant_is_its_base_with_its_own_values_over_it(tmp_path):
    params, files = _project(tmp_path, {
        "MS4N-d32": {"base": "MS4N", "d_model": 32},
        "MS4N-d32-deep": {"base": "MS4N-d32", "n_layers": 2,
                          "dataset_params": {"BasicMotions": {"d_state": 16}}},
    })  # fmt: skip
    check_params(params)
    base = model_entry(params, "MS4N")
    entry = model_entry(params, "MS4N-d32-deep", "BasicMotions")
    assert entry == {**base, "d_model": 32, "n_layers": 2, "d_state": 16}
    _, origins = resolve_model_params(params, "MS4N-d32-deep", "BasicMotions")
    assert origins["d_model"] == "models.MS4N-d32"
    assert origins["n_layers"] == "models.MS4N-d32-deep"
    assert origins["d_state"] == "models.MS4N-d32-deep.dataset_params.BasicMotions"
    assert origins["layer_norm"] == origins["family"] == "models.MS4N"
    assert files["models.MS4N-d32"] == "mine.yaml" and files["models.MS4N"] == "params/ms4.yaml"


def test_variants_have_their_own_records_and_never_share_a_path(tmp_path):
    params, _ = _project(tmp_path, {"MS4N-d32": {"base": "MS4N", "d_model": 32}},
                         {"MS4N-h": {"base": "MS4N", "d_state": 16}})  # fmt: skip
    check_params(params)
    grid = suite_grid(params)
    assert [job.model for job in grid] == ["MS4N", "MS4N-d32", "MS4N-h"]
    paths = {job.record_path("results/runs") for job in grid}
    assert len(paths) == 3
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N-h", 0))
    assert spec["model_params"]["d_state"] == 16 and "base" not in spec["model_params"]
    mine = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0))["model_params"]
    assert mine == model_entry(read_params(REPO / "params.yaml"), "MS4N")  # the base untouched


@pytest.mark.parametrize(
    "models, variants, expected",
    [
        ({"V": {"base": "MS4M", "d_model": 32}}, None,
         "mine.yaml: models.V.base: 'MS4M' is not a model (known: "),
        ({"A": {"base": "B"}, "B": {"base": "A"}}, None,
         "models.B.base: the bases form a cycle (A -> B -> A); one of them must name a family"),
        ({}, {"MS4N": {"base": "MS4", "d_model": 32}},
         "mine.yaml: suites.mine.variants.MS4N: a model of that name exists (in "
         "params/ms4.yaml); give the variant its own name"),
        ({}, {"V": {"d_model": 32}}, "expected a mapping with base: <model>"),
    ],
)  # fmt: skip
def test_a_bad_variant_is_one_error_naming_it(tmp_path, models, variants, expected):
    with pytest.raises(ConfigError) as err:
        params, _ = _project(tmp_path, models, variants)
        check_params(params)
    assert expected in str(err.value), str(err.value)


def test_a_variant_with_a_bad_value_is_named_by_check(tmp_path):
    params, _ = _project(tmp_path, {"V": {"base": "MS4N", "d_modle": 32}})
    with pytest.raises(ConfigError) as err:
        check_params(params)
    assert "models.V: model 'V' (family 'ms4'): unknown hyperparameter 'd_modle'" in str(err.value)
