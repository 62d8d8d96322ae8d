"""The model contract (ssmbench.model_contract, which `ssmbench check-model` runs on a
researcher's class) on every built-in family, at extreme shapes besides the contract's
own: C = 1 and 1345, L = 1 to 2500, K = 2 and 82. Every params.yaml model builds at its
real width, also for the extreme shape. Each check fails for a model that breaks it."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO

from ssmbench import model_contract as contract
from ssmbench.models import FAMILIES, build_model, is_estimator, validate_model_params
from ssmbench.params_file import read_params

#: (C, L, K): C = 1 and 1345 (DuckDuckGeese), L = 1, 8 and 2500, K = 2 and 82 (Pedestrian).
SHAPES = [(1, 1, 2), (1, 8, 2), (1345, 8, 82), (1, 2500, 82), (1345, 64, 2), (3, 50, 5),
          (1345, 2500, 2)]  # fmt: skip
#: (1345, 2500) is left out for ConvTran: its temporal convolution alone would hold
#: 2 x 32 x 1345 x 2500 floats (0.9 GB) at the contract width (3.4 GB at its real width).
TOO_LARGE = {("convtran", (1345, 2500, 2))}
#: RFormer's level-2 signature of a 1,346-dimensional path has 1.8 million features per
#: token (a block of ~10^13 weights): its constructor refuses a block over 10^9.
TOO_LARGE |= {("rformer", shape) for shape in SHAPES if shape[0] == 1345}
#: Log-NCDE's depth-2 vector field at C = 1345 has 1346 paths x 905,185 log-signature
#: coordinates per window, LinODEnet's filter and ODE C x C matrices (H = N = C) and a
#: matrix exponential per step: at L = 2500 each is minutes on a CPU for one contract check.
TOO_LARGE |= {("logncde", (1345, 2500, 2)), ("linodenet", (1345, 2500, 2))}


def _cannot_exist(entry: dict, C: int, L: int) -> bool:
    """A params.yaml entry that cannot be built at (C, L) by construction: RFormer with
    more windows than steps, or with C = 1345 (see TOO_LARGE)."""
    return entry["family"] == "rformer" and (entry.get("n_windows", 100) > L or C > 64)


#: (family, C) whose params.yaml entries are built but not run there: Log-NCDE at its real
#: widths and C = 1345 spends ~8 s per forward pass (the contract's own shapes run it).
BUILD_ONLY = {("logncde", 1345)}


DEEP = sorted(f for f, cls in FAMILIES.items() if not is_estimator(cls))
PER_STEP = sorted(f for f in DEEP if getattr(FAMILIES[f], "SUPPORTS_PER_STEP", False))
ESTIMATORS = sorted(set(FAMILIES) - set(DEEP))
PARAMS_MODELS = read_params(REPO / "params.yaml")["models"]


def _contract(family: str, shapes=()) -> dict[str, contract.Check]:
    return {check.name: check for check in contract.checks(family, shapes)}


def _meets(family: str, check: contract.Check) -> None:
    problem = contract.run_check(check, family, contract.contract_params(family))
    assert problem is None, problem


@pytest.mark.parametrize("family", DEEP)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "C{}-L{}-K{}".format(*s))
def test_builds_and_maps_to_logits(family, shape):
    if (family, shape) in TOO_LARGE:
        pytest.skip("too large for this family (see TOO_LARGE)")
    _meets(family, contract.checks(family, [shape])[0])  # the shape's check comes first


#: the contract's checks beyond the shapes, by name (ssmbench.model_contract.checks)
PER_STEP_CHECK = "one output per step (B, L, K)"
DEEP_CHECKS = [n for n in _contract("ms4") if not n.startswith("maps ") and n != PER_STEP_CHECK]


@pytest.mark.parametrize("family", DEEP)
@pytest.mark.parametrize("check", DEEP_CHECKS)
def test_deep_contract(family, check):
    _meets(family, _contract(family)[check])


@pytest.mark.parametrize("family", PER_STEP)
def test_per_step_output(family):
    _meets(family, _contract(family)[PER_STEP_CHECK])


class Frozen(torch.nn.Module):
    """Breaks the contract three ways: its parameters are not drawn from the seed, it
    cannot learn (its output is multiplied by 0), and a training batch changes a buffer."""

    def __init__(self, n_channels: int, n_classes: int, length: int):
        super().__init__()
        self.head = torch.nn.Linear(n_channels, n_classes)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return self.head(x.mean(-1)) * 0.0


def test_each_check_fails_for_a_model_that_breaks_it():
    family = f"{__name__}:Frozen"
    checks = _contract(family, [(3, 50, 5)])
    maps = checks["maps (B, C, L) to logits (B, K), C3 L50 K5"]
    assert contract.run_check(maps, family, {}) is None
    for name in ("one step lowers the loss; every parameter gets a gradient",
                 "a training batch changes only what a rewind restores",
                 "the same seed gives the same model and output"):  # fmt: skip
        assert contract.run_check(checks[name], family, {}) is not None, name


@pytest.mark.parametrize("name", sorted(PARAMS_MODELS))
def test_params_yaml_models_validate_and_build(name):
    """Every params.yaml model at its real width (and at each dataset's own
    ``dataset_params``), for a small and an extreme (C, K)."""
    from ssmbench.config import model_entry

    params = {"models": PARAMS_MODELS}
    for dataset in [None, *(PARAMS_MODELS[name].get("dataset_params") or {})]:
        entry = model_entry(params, name, dataset)
        validate_model_params(name, entry)
        for C, L, K in [(2, 20, 3), (1345, 64, 82), (2, 600, 3)]:
            if _cannot_exist(entry, C, L):
                continue
            model = build_model(name, C, K, L, entry)
            if is_estimator(model):
                return  # fit/predict: test_estimator_fits_and_predicts
            if (entry["family"], C) in BUILD_ONLY:
                continue
            with torch.no_grad():
                assert model(torch.randn(1, C, L)).shape == (1, K)


# ----------------------------------------------------------------------------- estimators
@pytest.mark.parametrize("family", ESTIMATORS)
@pytest.mark.parametrize("check", [c.name for c in contract.checks("quant")])
def test_estimator_contract(family, check):
    _meets(family, _contract(family)[check])
