"""Tests for ssmbench.models.tides and tides_scan (TIDES, S5, MambaS): the parallel scan
against the step-by-step recurrence (values and gradients, float64, irregular steps with
Δ = 0), S5 as TIDES with every mode LTI, what a zero-initialised TIDES is, Δ = 0 carrying
the state, the Re Λ maps, bad names, parameter counts and MACs. (The model contract:
tests/test_model_contract.py.)"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
import torch

from ssmbench.complexity import count_params, mmac
from ssmbench.config import model_entry
from ssmbench.data.uea6.prepare import UEA6
from ssmbench.models import FAMILIES, build_model, validate_model_params
from ssmbench.models.tides import (
    RE_MAPS,
    TIDESSSM,
    MambaSClassifier,
    S5Classifier,
    TIDESClassifier,
    hippo_dplr,
    lambda_re_map,
)
from ssmbench.models.tides_scan import discretize, parallel_scan, recurrent_scan
from ssmbench.params_file import read_params

REPO = Path(__file__).resolve().parents[1]

F64 = torch.float64
ID = "input_dependent"

#: layer configurations covering every branch: modes, ranks, conj_sym, bidirectional,
#: real Λ, MambaS's step, bilinear
LAYERS = {
    "tides-lowrank-bidir": dict(lambda_re_mode=ID, bc_mode=ID, rank=3, bidirectional=True),
    "tides-all-id-conj": dict(
        lambda_re_mode=ID, lambda_im_mode=ID, bc_mode=ID, rank=0, conj_sym=True,
        lambda_re_map="stable", lambda_encoder_depth=1,
    ),
    "tides-diag-conj-bidir": dict(
        lambda_re_mode=ID, bc_mode=ID, rank=-1, conj_sym=True, bidirectional=True,
        lambda_re_map="exp", clip_eigs=True,
    ),
    "s5-conj-bidir": dict(conj_sym=True, bidirectional=True, lambda_re_map="softplus"),
    "s5-bilinear": dict(discretization="bilinear"),
    "mambas": dict(bc_mode=ID, rank=-1, step_mode=ID, proj_norm=False),
    "real-tides": dict(lambda_re_mode=ID, bc_mode=ID, rank=-1, real_lambda=True, proj_norm=False),
    "real-lowrank-bidir": dict(
        lambda_re_mode=ID, bc_mode=ID, rank=2, real_lambda=True, bidirectional=True
    ),
}  # fmt: skip


def _perturbed(module: torch.nn.Module, seed: int = 0, scale: float = 0.3) -> torch.nn.Module:
    """float64, every parameter moved off its initial value (zero-initialised projectors
    would otherwise hide what the input does)."""
    module = module.double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return module


def _layer(name: str, H: int = 5, P: int = 8, blocks: int = 2, seed: int = 0) -> TIDESSSM:
    torch.manual_seed(seed)
    return _perturbed(TIDESSSM(H, P, blocks, **LAYERS[name]), seed)


def _irregular_steps(batch: int, L: int, seed: int = 1) -> torch.Tensor:
    """Random positive steps with Δ = 0 at some positions (padding-like, at the end too)."""
    gen = torch.Generator().manual_seed(seed)
    steps = 2 * torch.rand(batch, L, generator=gen, dtype=F64)
    steps[:, [0, 3, 4, L - 1]] = 0.0
    steps[0, L // 2 :] = 0.0  # a padded tail
    return steps


def _grads(module, *tensors):
    return [p.grad.clone() for p in module.parameters()] + [t.grad.clone() for t in tensors]


# --- the scans ------------------------------------------------------------------------------


@pytest.mark.parametrize("L", [1, 2, 5, 16, 37])
@pytest.mark.parametrize("reverse", [False, True])
def test_parallel_scan_equals_the_loop(L, reverse):
    gen = torch.Generator().manual_seed(L)
    radius = torch.rand(3, L, 4, generator=gen, dtype=F64)  # |a| <= 1
    a = torch.polar(radius, torch.randn(3, L, 4, generator=gen, dtype=F64))
    b = torch.randn(3, L, 4, generator=gen, dtype=torch.complex128)
    h, ref = torch.zeros(3, 4, dtype=torch.complex128), [None] * L
    for t in reversed(range(L)) if reverse else range(L):
        h = a[:, t] * h + b[:, t]
        ref[t] = h
    ref = torch.stack(ref, dim=1)
    torch.testing.assert_close(parallel_scan(a, b, reverse=reverse), ref, rtol=1e-12, atol=1e-12)
    assert torch.equal(recurrent_scan(a, b, reverse=reverse), ref)


@pytest.mark.parametrize("method", ["zoh", "bilinear"])
def test_discretisation_at_zero_step_is_the_identity(method):
    lam = torch.complex(-torch.rand(7, dtype=F64) - 1e-3, torch.randn(7, dtype=F64))
    lam_bar, gain = discretize(lam, torch.zeros(7, dtype=F64), method)
    assert torch.equal(lam_bar, torch.ones_like(lam_bar))
    assert torch.equal(gain, torch.zeros_like(gain))
    # ZOH: exp(ΛΔ) and (exp(ΛΔ) - 1)/Λ; bilinear: (1 + ΛΔ/2)/(1 - ΛΔ/2) and Δ/(1 - ΛΔ/2)
    delta = torch.rand(7, dtype=F64)
    lam_bar, gain = discretize(lam, delta, method)
    if method == "zoh":
        want = torch.exp(lam * delta), (torch.exp(lam * delta) - 1) / lam
    else:
        want = (1 + lam * delta / 2) / (1 - lam * delta / 2), delta / (1 - lam * delta / 2)
    torch.testing.assert_close((lam_bar, gain), want, rtol=1e-12, atol=1e-14)


# --- parallel == recurrent --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_recurrent_equals_parallel_values_and_gradients(name):
    """float64, random irregular steps with Δ = 0: the step-by-step recurrence (each step's
    Λ, Δ, B, C from that step alone) gives the parallel scan's outputs and gradients."""
    layer = _layer(name)
    gen = torch.Generator().manual_seed(2)
    batch, L = 3, 19
    u0 = torch.randn(batch, L, 5, generator=gen, dtype=F64)
    steps0 = _irregular_steps(batch, L)
    weight = torch.randn(batch, L, 5, generator=gen, dtype=F64)
    results = []
    for recurrent in (False, True):
        layer.zero_grad()
        layer.recurrent = recurrent
        u, steps = u0.clone().requires_grad_(), steps0.clone().requires_grad_()
        y = layer(u, steps)
        (y * weight).sum().backward()
        results.append((y.detach(), _grads(layer, u, steps)))
    (y_par, g_par), (y_rec, g_rec) = results
    torch.testing.assert_close(y_rec, y_par, rtol=1e-10, atol=1e-12)
    for a, b in zip(g_rec, g_par, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", [n for n in sorted(LAYERS) if "bidir" not in n])
def test_step_method_equals_forward(name):
    """``step`` (one time step, a carried state) reproduces the layer's outputs."""
    layer = _layer(name)
    u = torch.randn(2, 11, 5, dtype=F64)
    steps = _irregular_steps(2, 11)
    with torch.no_grad():
        y = layer(u, steps)
        state, outs = None, []
        for t in range(11):
            y_t, state = layer.step(u[:, t], steps[:, t], state)
            outs.append(y_t)
    torch.testing.assert_close(torch.stack(outs, dim=1), y, rtol=1e-10, atol=1e-12)


def test_bidirectional_has_no_step_mode():
    with pytest.raises(ValueError, match="bidirectional"):
        _layer("s5-conj-bidir").step(torch.zeros(1, 5, dtype=F64), torch.ones(1, dtype=F64))


@pytest.mark.parametrize("name", ["tides-lowrank-bidir", "tides-all-id-conj", "real-lowrank-bidir"])
def test_chunked_projections_equal_one_chunk(name):
    """The projected B_t / C_t work done a few steps at a time (checkpointed) changes
    nothing, in the factored (parallel) and the materialised (recurrent) forms."""
    layer = _layer(name)
    u0, steps = torch.randn(2, 23, 5, dtype=F64), _irregular_steps(2, 23)
    for recurrent in (False, True):
        layer.recurrent, results = recurrent, []
        for chunk in (None, 4):
            layer.chunk_steps = chunk
            layer.zero_grad()
            u = u0.clone().requires_grad_()
            y = layer(u, steps)
            y.square().sum().backward()
            results.append((y.detach(), _grads(layer, u)))
        torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-12, atol=1e-13)
        for a, b in zip(results[1][1], results[0][1], strict=True):
            torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("family", ["tides", "s5", "mambas"])
def test_classifier_recurrent_mode(family):
    torch.manual_seed(0)
    cls = FAMILIES[family]
    model = _perturbed(cls(3, 4, 16, **cls.TEST_PARAMS, bidirectional=True, per_step=True)).eval()
    x, steps = torch.randn(2, 3, 16, dtype=F64), _irregular_steps(2, 16)
    with torch.no_grad():
        parallel = model(x, steps)
        recurrent = model.set_recurrent(True)(x, steps)
        model.set_recurrent(False)
    torch.testing.assert_close(recurrent, parallel, rtol=1e-10, atol=1e-12)
    assert parallel.shape == (2, 16, 4)


# --- S5 is TIDES with every mode LTI -----------------------------------------------------------


@pytest.mark.parametrize(
    "options", [{}, {"conj_sym": True, "bidirectional": True}, {"real_lambda": True}]
)
def test_lti_tides_is_s5(options):
    lti = {"lambda_re_mode": "lti", "lambda_im_mode": "lti", "bc_mode": "lti"}
    torch.manual_seed(3)
    tides = TIDESClassifier(4, 3, 30, d_model=8, ssm_size=8, ssm_blocks=2, **lti, **options)
    torch.manual_seed(3)
    s5 = S5Classifier(4, 3, 30, d_model=8, ssm_size=8, ssm_blocks=2, **options)
    # the same modules, drawn in the same order: the same initial weights
    a, b = tides.state_dict(), s5.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    _perturbed(tides, seed=4)
    s5.load_state_dict(tides.state_dict())
    x, steps = torch.randn(5, 4, 30), _irregular_steps(5, 30).float()
    for model in (tides, s5):
        model.float().eval()
    with torch.no_grad():
        assert torch.equal(tides(x, steps), s5(x, steps))
    assert count_params(tides) == count_params(s5)


# --- a zero-initialised TIDES ---------------------------------------------------------------


def _s5_like(tides: TIDESClassifier, values: dict) -> S5Classifier:
    """An S5 with the TIDES model's shared weights and the given static Λ, B, C per layer."""
    ssm = tides.blocks[0].ssm
    s5 = S5Classifier(
        tides.n_channels, tides.n_classes, None, d_model=ssm.d_model, ssm_size=ssm.ssm_size,
        ssm_blocks=2, n_layers=len(tides.blocks), encoder_depth=1, per_step=True,
    ).double()  # fmt: skip
    state = {k: v for k, v in tides.state_dict().items() if k in s5.state_dict()}
    for i in range(len(tides.blocks)):
        for key, value in values[i].items():
            state[f"blocks.{i}.ssm.{key}"] = value
    s5.load_state_dict(state)
    return s5.eval()


def _tides_at_init(proj_norm: bool, rank: int) -> TIDESClassifier:
    torch.manual_seed(5)
    model = TIDESClassifier(
        3, 2, None, d_model=6, ssm_size=8, ssm_blocks=2, n_layers=2, rank=rank,
        lambda_im_mode=ID, proj_norm=proj_norm, per_step=True,
    )  # fmt: skip
    return model.double().eval()


def _bias(head, *shape):
    return head.last.bias.detach().reshape(*shape)


@pytest.mark.parametrize("rank", [8, 0, -1])
def test_zero_initialised_tides_without_norm_is_its_hippo_s5(rank):
    """Projector weights 0 and biases the HiPPO values: at initialisation TIDES is exactly
    the S5 with those values (time-invariant, whatever the input)."""
    tides = _tides_at_init(proj_norm=False, rank=rank)
    values = []
    for block in tides.blocks:
        ssm = block.ssm
        layer = {
            "Lambda_re": _bias(ssm.lambda_re_proj, -1),  # standard map: the raw value
            "Lambda_im": _bias(ssm.lambda_im_proj, -1),
        }
        if rank >= 0:
            layer["B"] = _bias(ssm.b_proj, 8, 6, 2)
            layer["C"] = _bias(ssm.c_proj, 6, 8, 2)
        else:  # scale 1 + 0i on the static B, C
            assert torch.equal(_bias(ssm.b_proj, -1, 2), torch.tensor([[1.0, 0.0]] * 8, dtype=F64))
        values.append(layer)
    s5 = _s5_like(tides, values)
    x, steps = torch.randn(4, 3, 25, dtype=F64), _irregular_steps(4, 25)
    with torch.no_grad():
        torch.testing.assert_close(tides(x, steps), s5(x, steps), rtol=1e-12, atol=1e-12)


def _real(z: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(z.contiguous())


def _rms(z: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.sqrt(z.abs().square().mean(dim=dim, keepdim=True) + 1e-6)


def test_zero_initialised_tides_with_rmsnorm_is_a_normalised_s5():
    """What is true with the reference's RMSNorm on the projections (its UEA setting): the
    model starts time-invariant (weights 0: every step gets the same Λ, B, C), but the norm
    acts on the HiPPO biases too, so it starts as the S5 whose Re Λ, Im Λ are divided by their
    RMS over the states (HiPPO's Re Λ = -1/2 becomes -1), B's columns and C's rows scaled to
    RMS 1: not as the HiPPO S5."""
    tides = _tides_at_init(proj_norm=True, rank=8)
    normalised, hippo = [], []
    for block in tides.blocks:
        ssm = block.ssm
        re, im = _bias(ssm.lambda_re_proj, -1), _bias(ssm.lambda_im_proj, -1)
        B = torch.view_as_complex(_bias(ssm.b_proj, 8, 6, 2).contiguous())  # (S, H)
        C = torch.view_as_complex(_bias(ssm.c_proj, 6, 8, 2).contiguous())  # (H, S)
        torch.testing.assert_close(re, torch.full_like(re, -0.5))  # HiPPO-LegS: Re Λ = -1/2
        hippo.append({"Lambda_re": re, "Lambda_im": im, "B": _real(B), "C": _real(C)})
        normalised.append(
            {
                "Lambda_re": re / _rms(re, 0),
                "Lambda_im": im / _rms(im, 0),
                "B": _real(B / _rms(B, 0)),  # each input column over the states
                "C": _real(C / _rms(C, 1)),  # each output row over the states
            }
        )
    x, steps = torch.randn(4, 3, 25, dtype=F64), _irregular_steps(4, 25)
    with torch.no_grad():
        out = tides(x, steps)
        want = _s5_like(tides, normalised)(x, steps)
        torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
        assert not torch.allclose(out, _s5_like(tides, hippo)(x, steps), atol=1e-3)
        # time-invariant: every step's Λ is the same, whatever the input
        u = torch.randn(2, 25, 6, dtype=F64)
        lam = tides.blocks[0].ssm._lambda(u)
        torch.testing.assert_close(lam, lam[:1, :1].expand_as(lam), rtol=0, atol=0)
        minus_one = torch.full((8,), -1.0, dtype=F64)  # -0.5 / sqrt(0.25 + 1e-6)
        torch.testing.assert_close(lam.real[0, 0], minus_one, rtol=1e-5, atol=0)


# --- Δ = 0 carries the state ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["tides-lowrank-bidir", "tides-all-id-conj", "s5-bilinear", "real-tides"]
)
def test_zero_step_carries_the_state(name):
    layer = _layer(name)
    gen = torch.Generator().manual_seed(6)
    u = torch.randn(2, 12, 5, generator=gen, dtype=F64)
    steps = 0.2 + torch.rand(2, 12, generator=gen, dtype=F64)
    k, extra = 7, torch.randn(2, 1, 5, generator=gen, dtype=F64)
    # insert a step of Δ = 0 with an arbitrary input at position k
    u_ins = torch.cat([u[:, :k], extra, u[:, k:]], dim=1)
    steps_ins = torch.cat([steps[:, :k], torch.zeros(2, 1, dtype=F64), steps[:, k:]], dim=1)
    with torch.no_grad():
        y, y_ins = layer(u, steps), layer(u_ins, steps_ins)
        # every other step's output is unchanged (both directions pass the state through)
        others = torch.cat([y_ins[:, :k], y_ins[:, k + 1 :]], dim=1)
        torch.testing.assert_close(others, y, rtol=1e-12, atol=1e-12)
        if not layer.bidirectional:
            # the state after the Δ = 0 step is exactly the state before it, and its output
            # is that state read out with this step's C_k and D u_k
            state = None
            for t in range(k):
                _, state = layer.step(u[:, t], steps[:, t], state)
            y_k, carried = layer.step(extra[:, 0], torch.zeros(2, dtype=F64), state)
            assert torch.equal(carried, state)
            torch.testing.assert_close(y_k, y_ins[:, k], rtol=1e-12, atol=1e-12)


def test_zero_step_carries_the_state_through_the_classifier():
    """Per step, in evaluation (BatchNorm's running statistics): inserting a Δ = 0 step
    leaves every other step's output unchanged; MambaS's step is not the physical one."""
    torch.manual_seed(7)
    x, steps = torch.randn(2, 3, 15, dtype=F64), 0.5 + torch.rand(2, 15, dtype=F64)
    x_ins = torch.cat([x[..., :6], torch.randn(2, 3, 1, dtype=F64), x[..., 6:]], dim=-1)
    steps_ins = torch.cat([steps[:, :6], torch.zeros(2, 1, dtype=F64), steps[:, 6:]], dim=1)
    for cls in (TIDESClassifier, S5Classifier):
        model = _perturbed(cls(3, 2, None, **cls.TEST_PARAMS, per_step=True)).eval()
        with torch.no_grad():
            y, y_ins = model(x, steps), model(x_ins, steps_ins)
        others = torch.cat([y_ins[:, :6], y_ins[:, 7:]], dim=1)
        torch.testing.assert_close(others, y, rtol=1e-11, atol=1e-12)


# --- MambaS ---------------------------------------------------------------------------------


def test_mambas_step_is_learnt_from_the_input_and_dt():
    torch.manual_seed(8)
    model = MambaSClassifier(3, 2, None, **MambaSClassifier.TEST_PARAMS).eval()
    ssm = model.blocks[0].ssm
    assert not hasattr(ssm, "log_step") and ssm.step_proj.in_features == ssm.d_model + 1
    u, dt = torch.randn(2, 9, ssm.d_model), torch.rand(2, 9)
    torch.testing.assert_close(ssm._delta(u, dt), torch.ones(2, 9, ssm.S), rtol=1e-4, atol=0)
    x = torch.randn(2, 3, 9)
    with torch.no_grad():
        # at the start (W = 0) Δt changes nothing; once W is not 0 it is a feature of Δ
        assert torch.equal(model(x, dt), model(x, 2 * dt))
        for block in model.blocks:
            block.ssm.step_proj.weight.normal_()
        assert not torch.allclose(model(x, dt), model(x, 2 * dt))
    tides = TIDESClassifier(3, 2, None, **TIDESClassifier.TEST_PARAMS).eval()
    with torch.no_grad():  # TIDES: Δt is the step
        assert not torch.allclose(tides(x, dt), tides(x, 2 * dt))


# --- Re Λ maps, initialisation, bad names ----------------------------------------------------


@pytest.mark.parametrize("name", RE_MAPS)
def test_re_lambda_maps(name):
    raw = torch.linspace(-30, 30, 601, dtype=F64)
    re = lambda_re_map(raw, name)
    if name == "standard":  # the identity: negative only where the raw value is (or clipped)
        assert torch.equal(re, raw)
    else:
        assert (re < 0).all()
    assert (lambda_re_map(raw, name, clip=True) <= -1e-4).all()
    # at initialisation every layer's Re Λ is negative, LTI or input-dependent
    for mode in ("lti", ID):
        torch.manual_seed(0)
        layer = TIDESSSM(4, 8, 2, lambda_re_mode=mode, lambda_re_map=name).double()
        lam = layer._lambda(torch.randn(2, 5, 4, dtype=F64))
        assert (lam.real < 0).all(), (name, mode)
    with pytest.raises(ValueError, match="lambda_re_map"):
        lambda_re_map(raw, "linear")


def test_hippo_initialisation():
    lam, V = hippo_dplr(8)
    torch.testing.assert_close(torch.as_tensor(lam.real), torch.full((8,), -0.5, dtype=F64))
    q = torch.sqrt(1 + 2 * torch.arange(8, dtype=F64))
    A = -(torch.tril(q[:, None] * q[None, :]) - torch.diag(torch.arange(8, dtype=F64)))
    p = torch.sqrt(torch.arange(8, dtype=F64) + 0.5)
    V = torch.as_tensor(V)
    normal = V @ torch.diag(torch.as_tensor(lam)) @ V.conj().T  # A + p p^T
    torch.testing.assert_close(normal, (A + p[:, None] * p[None, :]).to(normal.dtype))
    # conj_sym keeps half of each block's modes; the static parts then have n = P/2 modes
    layer = TIDESSSM(4, 16, 2, conj_sym=True)
    assert layer.Lambda_im.shape == (8,) and layer.B.shape == (8, 4, 2) and layer.out_scale == 2
    layer = TIDESSSM(4, 16, 2, conj_sym=True, bc_mode=ID)  # expanded: 16 explicit states
    assert layer.S == 16 and layer.out_scale == 1 and layer.b_proj.up.out_features == 16 * 4 * 2


@pytest.mark.parametrize(
    "key,value",
    [("lambda_re_mode", "dynamic"), ("lambda_im_mode", "LTI"), ("bc_mode", "input-dependent"),
     ("lambda_re_map", "linear"), ("discretization", "euler"), ("proj_init", "ones")],
)  # fmt: skip
def test_unknown_names_raise_at_construction(key, value):
    with pytest.raises(ValueError, match=key) as info:
        TIDESClassifier(3, 2, None, **{key: value})
    message = str(info.value)
    assert repr(value) in message
    allowed = TIDESClassifier.CHOICES[key]
    assert all(v in message for v in allowed), message
    # and params.yaml's check, before any model is built
    with pytest.raises(ValueError, match=key):
        validate_model_params("bad", {"family": "tides", key: value})


def test_registry_accepts_zero_and_negative_integers_where_they_mean_something():
    validate_model_params("t", {"family": "tides", "rank": -1, "encoder_depth": 0})
    validate_model_params("t", {"family": "tides", "rank": 0, "lambda_encoder_depth": 0})
    for bad in ({"encoder_depth": -1}, {"n_layers": 0}, {"ssm_size": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            validate_model_params("t", {"family": "tides", **bad})
    with pytest.raises(ValueError, match="multiple"):
        TIDESClassifier(3, 2, None, ssm_size=10, ssm_blocks=3)
    with pytest.raises(ValueError, match="real_lambda"):
        TIDESClassifier(3, 2, None, real_lambda=True, conj_sym=True)


def test_steps_shape_is_checked_and_optional():
    model = S5Classifier(3, 2, None, **S5Classifier.TEST_PARAMS).eval()
    x = torch.randn(2, 3, 10)
    with torch.no_grad():
        assert torch.equal(model(x), model(x, torch.ones(2, 10)))  # None: regular data
    with pytest.raises(ValueError, match="steps"):
        model(x, torch.ones(2, 9))
    assert all(FAMILIES[f].INPUTS == ("values", "steps") for f in ("tides", "s5", "mambas"))


# --- sizes --------------------------------------------------------------------------------------


#: params.yaml itself (the reference's UEA settings), read by the project's own reader
PARAMS = read_params(REPO / "params.yaml")
#: the TIDES family's params.yaml entries that the tests below size
STUDY_MODELS = ("TIDES", "S5", "MambaS")

#: Test sizes, not study entries (params.yaml has none of them; its Fading Flash models are
#: minimal_ssm.py's): the widths of the reference's Fading Flash toy models
#: (fading_flash/tides_toy_paper_figures.py:227-244; tides.py's docstring), one layer of
#: real Λ with P = 3, in this classifier (encoder Linear(C, H) and head).
_TOY = {
    "ssm_size": 3,
    "ssm_blocks": 1,
    "n_layers": 1,
    "dropout": 0.0,
    "encoder_depth": 0,
    "real_lambda": True,
}
TOY_MODELS = {
    "S5-FF": {"family": "s5", "d_model": 15, **_TOY, "dt_min": 0.1, "dt_max": 1.0},
    "TIDES-FF": {
        "family": "tides",
        "d_model": 7,
        **_TOY,
        "lambda_re_mode": "input_dependent",
        "bc_mode": "input_dependent",
        "rank": -1,
        "proj_norm": False,
        "dt_min": 0.1,
        "dt_max": 1.0,
    },
    "TIDES-Lambda-FF": {
        "family": "tides",
        "d_model": 11,
        **_TOY,
        "lambda_re_mode": "input_dependent",
        "bc_mode": "lti",
        "proj_norm": False,
        "dt_min": 0.1,
        "dt_max": 1.0,
    },
    "MambaS-FF": {"family": "mambas", "d_model": 7, **_TOY, "proj_norm": False},
}


def _entry(name: str) -> dict:
    """params.yaml's entry for ``name`` (as a run builds it), or the toy test size."""
    return TOY_MODELS[name] if name in TOY_MODELS else model_entry(PARAMS, name)


@pytest.mark.parametrize("name", [*STUDY_MODELS, *sorted(TOY_MODELS)])
def test_entries_validate_and_build(name):
    """params.yaml's entries and the toy sizes, at their real width, also per step (the
    contract test builds every params.yaml entry, not per step)."""
    entry = _entry(name)
    validate_model_params(name, entry)
    for C, L, K in [(2, 20, 3), (1345, 64, 82)]:
        with torch.no_grad():
            assert build_model(name, C, K, L, entry)(torch.randn(1, C, L)).shape == (1, K)
    per_step = build_model(name, 4, 1, 40, entry, per_step=True)
    assert per_step(torch.randn(2, 4, 40)).shape == (2, 40, 1)


#: the reference's UEA settings (uea/main.py train_trial), closed forms in C and K:
#: encoder 2(C² + C) + 64C + 64, head 65K, and per layer (H = P = 64, r = 8)
#: TIDES: Im Λ 64, Re Λ projector 4,160 + norm 64, B and C heads 2 x (520 + 73,728) + norms
#: 128, D 64, log_step 64, GLU 12,480 = 165,520; S5: Λ 128, B 8,192, C 8,192, D 64, log_step
#: 64, GLU 12,480 = 29,120; MambaS: Λ 128, B, C 16,384, D 64, GLU 12,480, modulation heads
#: 2 x 8,320, step head 4,224 = 49,920. (The reference's own TIDES count is 32,896 higher:
#: its untrained static Re Λ, B and C, 16,448 per layer.)
COUNTS = {
    "TIDES": lambda C, K: 2 * C * C + 66 * C + 65 * K + 64 + 2 * 165_520,
    "S5": lambda C, K: 2 * C * C + 66 * C + 65 * K + 64 + 2 * 29_120,
    "MambaS": lambda C, K: 2 * C * C + 66 * C + 65 * K + 64 + 2 * 49_920,
    # the toy test sizes (TOY_MODELS): one layer, encoder Linear(C, H), real Λ, P = 3
    "S5-FF": lambda C, K: 15 * C + 15 + (3 + 45 + 45 + 15 + 3 + 720) + 16 * K,
    "TIDES-FF": lambda C, K: 7 * C + 7 + (24 + 21 + 21 + 7 + 3 + 24 + 24 + 168) + 8 * K,
    "TIDES-Lambda-FF": lambda C, K: 11 * C + 11 + (36 + 33 + 33 + 11 + 3 + 396) + 12 * K,
    "MambaS-FF": lambda C, K: 7 * C + 7 + (3 + 21 + 21 + 7 + 24 + 24 + 27 + 168) + 8 * K,
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_parameter_counts(name):
    for C, K in [(4, 3), (6, 5), (1, 1)]:
        model = build_model(name, C, K, 40, _entry(name))
        assert count_params(model) == COUNTS[name](C, K), (name, C, K)


@pytest.mark.parametrize("name", ["TIDES", "S5", "MambaS", "TIDES-FF"])
def test_macs(name):
    """``paper``: what ptflops' module hooks count when the projections are called as modules
    (as the reference and the recurrent mode call them; the factored parallel form adds
    their count itself); ``full`` adds each layer's own work; the meta device counts the same."""
    model = build_model(name, 4, 3, 40, _entry(name))
    paper, full = mmac(model, 4, 40), mmac(model, 4, 40, convention="full")
    assert mmac(copy.deepcopy(model).set_recurrent(True), 4, 40) == pytest.approx(paper, rel=1e-12)
    u = (torch.empty(1, 40, model.blocks[0].ssm.d_model),)
    own = {
        kind: sum(block.ssm.count_macs(u, None, kind) for block in model.blocks)
        for kind in ("paper", "full")
    }
    assert paper > 0 and full == pytest.approx(paper + (own["full"] - own["paper"]) / 1e6)
    assert mmac(model, 4, 40, device="meta") == pytest.approx(paper)
    # an EigenWorms-sized input on the meta device (shapes only)
    long = build_model(name, 6, 5, 17984, _entry(name))
    assert mmac(long, 6, 17984, device="meta") == pytest.approx(
        mmac(long, 6, 40, device="meta") * 17984 / 40, rel=1e-2
    )  # per step but for the head


def test_every_parameter_is_trained():
    """No parameter of the reference's that its mode leaves unused (static Λ, B, C of an
    input-dependent part, MambaS's log_step) exists here."""
    for cls, extra in itertools.product(
        (TIDESClassifier, S5Classifier, MambaSClassifier), ({}, {"bidirectional": True})
    ):
        model = cls(3, 2, None, **cls.TEST_PARAMS, **extra)
        model(torch.randn(4, 3, 12), torch.rand(4, 12)).square().sum().backward()
        assert all(p.grad is not None for p in model.parameters()), cls
    copy.deepcopy(model)  # deep-copyable (ptflops works on a copy)


# ------------------------------------------------ the UEA-6 configurations keep Re Λ < 0
def _max_re_lambda(model_params: dict, monkeypatch) -> float:
    """The largest Re Λ a TIDES model of ``model_params`` produces on raw-scale input
    after its weights have been scrambled far from their initialisation (as a diverging
    run's are)."""
    import ssmbench.models.tides_ssm as tides_ssm
    from ssmbench import models

    seen: list[float] = []
    real = tides_ssm.lambda_re_map

    def spy(raw, name, clip=False):
        out = real(raw, name, clip)
        seen.append(float(out.detach().max()))
        return out

    monkeypatch.setattr(tides_ssm, "lambda_re_map", spy)
    torch.manual_seed(0)
    model = models.build_model("TIDES", 4, 2, 50, model_params).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 3.0)
        model(torch.randn(3, 4, 50) * 20.0, steps=torch.ones(3, 50))
    return max(seen)


def test_every_uea6_tides_configuration_keeps_re_lambda_negative(monkeypatch):
    """params.yaml TIDES's per-dataset configurations (the paper's appendix table) bound
    Re Λ below 0 whatever the weights: exp, stable, or standard with clip_eigs. The entry's
    defaults (standard, no clipping) do not, which let MotorImagery's 3,000-step states
    overflow (models/tides.py)."""
    entry = read_params(REPO / "params.yaml")["models"]["TIDES"]
    base = {k: v for k, v in entry.items() if k not in ("dataset_params", "dataset_settings")}
    assert sorted(entry["dataset_params"]) == sorted(UEA6)
    for name, overrides in entry["dataset_params"].items():
        params = {**base, **overrides}
        assert _max_re_lambda(params, monkeypatch) < 0, name
        assert entry["dataset_settings"][name]["grad_clip_norm"] is None  # as uea/main.py
    assert _max_re_lambda(base, monkeypatch) > 0  # the unbounded defaults
