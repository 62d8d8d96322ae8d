"""The TIDES family's options as one object (ssmbench.models.tides_config.TIDESConfig):
the classifiers built from keywords or from a config are the same model, what a family
fixes cannot be set, and the numbers are those of the code before the options became one
object (every case of tests/tides_numbers.py: state_dict, outputs, gradients, bit for
bit; the constructors' hyperparameters, types and defaults as they were)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch
from conftest import REPO

from ssmbench.models import build_model, validate_model_params
from ssmbench.models.tides import MambaSClassifier, S5Classifier, TIDESClassifier
from ssmbench.models.tides_config import TIDESConfig

#: the commit whose TIDES family the numbers are held to: the last with the options
#: repeated in each constructor (SSMBENCH_NUMBERS_REF names another)
REFERENCE = os.environ.get("SSMBENCH_NUMBERS_REF", "7ac53e6")
NUMBERS = Path(__file__).with_name("tides_numbers.py")


def _numbers(src: Path, out: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(NUMBERS), str(out)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return out


def _reference_src(dest: Path) -> Path:
    """The package as commit REFERENCE has it (git archive), or skip where this checkout
    does not have that commit (a shallow clone)."""
    dest.mkdir(parents=True)
    archive = dest / "src.tar"
    with archive.open("wb") as f:
        proc = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", REFERENCE, "src/ssmbench"],
            stdout=f,
            stderr=subprocess.PIPE,
        )
    if proc.returncode != 0:
        pytest.skip(f"no commit {REFERENCE} in this checkout: {proc.stderr.decode()[-300:]}")
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tides-numbers")
    before = _numbers(_reference_src(root / "reference"), root / "before")
    now = _numbers(REPO / "src", root / "now")
    return before, now


@pytest.mark.slow
def test_the_numbers_are_those_of_the_reference_commit(both):
    before, now = both
    cases = sorted(p.name for p in before.glob("*.pt"))
    assert cases == sorted(p.name for p in now.glob("*.pt")) and len(cases) > 10
    for case in cases:
        old, new = torch.load(before / case), torch.load(now / case)
        for part in ("state", "grad"):
            assert list(old[part]) == list(new[part]), (case, part)  # the same names, in order
            for name, value in old[part].items():
                assert value.dtype == new[part][name].dtype, (case, part, name)
                assert torch.equal(value, new[part][name]), (case, part, name)
        for part in ("eval", "train"):
            assert torch.equal(old[part], new[part]), (case, part)


@pytest.mark.slow
def test_the_constructors_take_the_hyperparameters_they_took(both):
    before, now = both
    old = json.loads((before / "interface.json").read_text())
    assert json.loads((now / "interface.json").read_text()) == old


def test_keywords_and_a_config_build_the_same_model():
    options = {"d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "rank": 2, "conj_sym": True}
    torch.manual_seed(0)
    by_keywords = TIDESClassifier(3, 2, 10, **options)
    torch.manual_seed(0)
    by_config = TIDESClassifier(3, 2, 10, config=TIDESConfig(**options))
    assert by_keywords.config == by_config.config == TIDESConfig(**options)
    for (name, a), (_, b) in zip(
        by_keywords.state_dict().items(), by_config.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_a_family_fixes_what_it_is():
    """S5 is TIDES with every mode LTI, MambaS has LTI Λ and B/C and the step from the
    input: their configs say so, and neither takes those options."""
    s5 = S5Classifier(3, 2, None, d_model=8, ssm_size=8, ssm_blocks=2).config
    assert (s5.lambda_re_mode, s5.lambda_im_mode, s5.bc_mode) == ("lti", "lti", "lti")
    mambas = MambaSClassifier(3, 2, None, d_model=8, ssm_size=8, ssm_blocks=2).config
    assert (mambas.bc_mode, mambas.step_mode, mambas.rank) == ("input_dependent",) * 2 + (-1,)
    assert mambas.proj_norm is False and TIDESConfig().proj_norm is True  # MambaS' default
    with pytest.raises(TypeError, match="S5Classifier.*lambda_re_mode"):
        S5Classifier(3, 2, None, lambda_re_mode="input_dependent")
    with pytest.raises(ValueError, match="MambaSClassifier.*rank -1"):
        MambaSClassifier(3, 2, None, config=TIDESConfig(rank=2))
    with pytest.raises(TypeError, match="not both"):
        TIDESClassifier(3, 2, None, config=TIDESConfig(), d_model=8)


def test_the_config_is_frozen_and_its_choices_are_the_classes():
    config = TIDESConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 8  # type: ignore[misc]
    assert TIDESClassifier.CHOICES["bc_mode"] == TIDESConfig.choices()["bc_mode"]
    assert "bc_mode" not in S5Classifier.CHOICES and "block_glu" in S5Classifier.CHOICES


def test_the_registry_builds_from_params_yaml_keywords():
    entry = {"family": "s5", "d_model": 8, "ssm_size": 8, "ssm_blocks": 2, "block_glu": "plain"}
    model = build_model("S5-small", 3, 2, 10, entry)
    assert model.config.block_glu == "plain" and model.config.d_model == 8
    with pytest.raises(ValueError, match="unknown hyperparameter 'rank'"):
        validate_model_params("S5-rank", {"family": "s5", "rank": 2})
    with pytest.raises(ValueError, match="must be one of"):
        validate_model_params("TIDES-x", {"family": "tides", "bc_mode": "sometimes"})
