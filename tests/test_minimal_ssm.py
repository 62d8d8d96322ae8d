"""The Fading Flash models (models/minimal_ssm.py): the ZOH recurrence solves the task's
ODE exactly, input-dependent modes start as their LTI form, Δ = 0 carries the state, and
the four configurations have the reference's size."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import REPO

from ssmbench.complexity import count_params
from ssmbench.models import build_model
from ssmbench.models.minimal_ssm import MinimalSSMClassifier
from ssmbench.params_file import read_params

MODELS = read_params(REPO / "params.yaml")["models"]
FF = ("FF-S5", "FF-TIDES", "FF-TIDES-Lambda", "FF-MambaS")


def _model(**kwargs) -> MinimalSSMClassifier:
    torch.manual_seed(0)
    return MinimalSSMClassifier(4, 1, 40, per_step=True, **kwargs).double()


def test_an_lti_model_set_to_the_odes_rate_reproduces_the_fading_flash_target():
    """dh/dt = −λh + pixel, sampled at Δ: with Λ = −λ, the step Δ itself (log_step 0),
    B = C = 1, D = 0 and an encoder that reads the pixel, y is the exact glow."""
    m = _model(d_model=1, state_size=1, lambda_re_mode="lti", bc_mode="lti")
    lam, L = 1.5, 40
    with torch.no_grad():
        m.encoder.weight.copy_(torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
        m.encoder.bias.zero_()
        m.Lambda_re.fill_(-lam)
        m.log_step.zero_()
        m.B.fill_(1.0)
        m.C.fill_(1.0)
    x = torch.zeros(2, 4, L, dtype=torch.float64)
    x[0, 0, [3, 17, 30]] = 1.0
    x[1, 0, [0, 5]] = 1.0
    steps = torch.tensor([[0.7], [1.3]], dtype=torch.float64).expand(2, L)
    y = m(x, steps=steps)[..., 0]
    alpha = torch.exp(-lam * steps)
    beta = (1 - alpha) / lam
    h, expected = torch.zeros(2, dtype=torch.float64), []
    for t in range(L):
        h = alpha[:, t] * h + beta[:, t] * x[:, 0, t]
        expected.append(h)
    assert torch.allclose(y, torch.stack(expected, dim=1), atol=1e-12)


@pytest.mark.parametrize(
    "modes",
    [
        {"lambda_re_mode": "input_dependent", "bc_mode": "input_dependent"},  # TIDES
        {"lambda_re_mode": "input_dependent", "bc_mode": "lti"},  # TIDES (Λ-only)
    ],
)
def test_input_dependent_modes_start_as_their_lti_form(modes):
    lti = _model(d_model=5, lambda_re_mode="lti", bc_mode="lti")
    dep = _model(d_model=5, **modes)
    dep.load_state_dict(lti.state_dict(), strict=False)  # the shared parameters
    x = torch.randn(3, 4, 40, dtype=torch.float64)
    steps = torch.rand(3, 40, dtype=torch.float64) * 2
    assert torch.allclose(dep(x, steps=steps), lti(x, steps=steps), atol=1e-12)
    with torch.no_grad():  # and they are input-dependent once trained away from zero
        dep.lambda_re_proj.weight.normal_()
    assert not torch.allclose(dep(x, steps=steps), lti(x, steps=steps))


def test_mamba_s_takes_the_step_as_a_feature_starting_at_a_unit_step():
    m = _model(d_model=7, lambda_re_mode="lti", bc_mode="input_dependent",
               step_mode="input_dependent")  # fmt: skip
    x = torch.randn(2, 4, 40, dtype=torch.float64)
    slow = m(x, steps=torch.full((2, 40), 0.2, dtype=torch.float64))
    fast = m(x, steps=torch.full((2, 40), 1.8, dtype=torch.float64))
    assert torch.allclose(slow, fast)  # W = 0: Δ does not act yet; softplus(0.5413) ≈ 1
    assert math.isclose(torch.nn.functional.softplus(torch.tensor(0.5413)).item(), 1.0,
                        abs_tol=1e-4)  # fmt: skip
    with torch.no_grad():
        m.step_proj.weight[:, -1] = 1.0  # the Δ feature's weights
    slow = m(x, steps=torch.full((2, 40), 0.2, dtype=torch.float64))
    assert not torch.allclose(slow, fast)


# MambaS is left out: its step is softplus(W[x, Δ] + b) > 0, Δ = 0 only a feature
@pytest.mark.parametrize("name", ["FF-S5", "FF-TIDES", "FF-TIDES-Lambda"])
def test_a_zero_step_carries_the_state(name):
    entry = {k: v for k, v in MODELS[name].items() if k != "family"}
    m = _model(**entry)
    x = torch.zeros(1, 4, 40, dtype=torch.float64)
    x[0, 0, 2] = 1.0  # one flash, then no input: y − D u is C h
    steps = torch.ones(1, 40, dtype=torch.float64)
    steps[0, 10:20] = 0.0
    y = m(x, steps=steps)[0, :, 0] - (m.encoder(x.transpose(1, 2)) @ m.D.T)[0, :, 0]
    assert torch.allclose(y[10:20], y[9].expand(10), atol=1e-12)  # held through Δ = 0
    assert not torch.isclose(y[20], y[19])  # and it decays again after


@pytest.mark.parametrize("name", FF)
def test_the_four_configurations_have_the_references_size(name):
    """The reference sizes its models to about 150 parameters: S5 H = 15, TIDES H = 7,
    TIDES (Λ-only) H = 11, MambaS H = 7, P = 3: 144 each on the task's 4 inputs, less the
    3 of an unused LTI Λ in the two with an input-dependent Λ (a buffer here)."""
    model = build_model(name, 4, 1, 40, MODELS[name], per_step=True)
    assert count_params(model) == (141 if "TIDES" in name else 144)
    assert model.INPUTS == ("values", "steps")


@pytest.mark.parametrize(
    "bad, field",
    [({"lambda_re_mode": "dynamic"}, "lambda_re_mode"), ({"step_mode": "lti"}, "step_mode")],
)
def test_an_unknown_mode_is_refused_naming_the_allowed(bad, field):
    with pytest.raises(ValueError, match=f"{field} .* is not one of"):
        MinimalSSMClassifier(4, 1, 40, **bad)


def test_ssmbench_check_refuses_an_unknown_mode_before_any_job():
    from ssmbench.models import validate_model_params

    entry = dict(MODELS["FF-TIDES"], lambda_re_mode="dynamic")
    with pytest.raises(ValueError, match=r"'lambda_re_mode' must be one of \('lti', "):
        validate_model_params("FF-TIDES", entry)
