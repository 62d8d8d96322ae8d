"""Tests for ssmbench.models.linodenet (LinODEnet): the ODE step against scipy's expm, the
skew-symmetric kernel initialisation and the other zero starts, Δ = 0, the shared matrix
exponentials and the checkpointed chunks against the plain per-step computation, shapes,
what an unobserved step does, Δ_0, learning a masked MSE, parameter counts, MACs and bad
hyperparameters. (The shared contract: tests/test_model_contract.py.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import torch
from conftest import REPO

import ssmbench.models.linodenet as linodenet
from ssmbench.complexity import count_params, mmac
from ssmbench.models.hyperparams import hyperparams_of
from ssmbench.models.linodenet import (
    LinearFilter,
    LinODECell,
    LinODEnetModel,
    NonLinearFilter,
    SequentialFilter,
    _Propagators,
    kernel_initialization,
)
from ssmbench.params_file import read_params

F64 = torch.float64
#: params.yaml's LinODEnet entry: the leaderboard's configuration
ENTRY = read_params(REPO / "params.yaml")["models"]["LinODEnet"]
SMALL = {"hidden_size": 8, "latent_size": 12, "n_blocks": 2}


def _perturb(model: torch.nn.Module, seed: int = 0, scale: float = 0.2) -> torch.nn.Module:
    """float64, and every zero-initialised scalar (γ, ReZero, the filters' ε) moved off zero,
    so that no part of the model is the identity."""
    model = model.double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 0:
                p.copy_(scale * (1 + torch.rand((), generator=gen, dtype=F64)))
    return model


def _physiome_batch(B=4, C=3, L=14, n_obs=8, seed=0, dtype=F64):
    """A Physiome-like batch: irregular Δ (with repeats), observed steps then forecast steps
    (no observation), padding at the end of one row (Δ = 0, nothing observed)."""
    gen = torch.Generator().manual_seed(seed)
    grid = torch.randint(1, 4, (B, L), generator=gen).to(dtype) * 0.02  # multiples of h
    grid[0, -3:] = 0.0  # row 0 is padded
    x = torch.randn(B, C, L, generator=gen, dtype=dtype)
    mask = torch.rand(B, C, L, generator=gen) < 0.4
    mask[..., n_obs:] = False
    x = torch.where(mask, x, torch.zeros_like(x))
    target_mask = torch.rand(B, C, L, generator=gen) < 0.5
    target_mask[..., :n_obs] = False
    target_mask[0, :, -3:] = False
    y = torch.randn(B, C, L, generator=gen, dtype=dtype)
    return x, grid, mask, y, target_mask


# ----------------------------------------------------------------------------- the ODE
def test_ode_step_is_the_matrix_exponential():
    torch.manual_seed(0)
    cell = LinODECell(6, "skew-symmetric").double()
    with torch.no_grad():
        cell.scalar.fill_(0.8)
        cell.weight.add_(0.3 * torch.randn(6, 6, dtype=F64))  # a general A, not skew
    dt = torch.tensor([0.0, 0.1, 0.5, 2.0], dtype=F64)
    x = torch.randn(4, 6, dtype=F64)
    with torch.no_grad():
        out = cell(dt, x)
    A = (cell.scalar * cell.weight).detach().numpy()
    for b in range(4):
        expected = scipy.linalg.expm(A * dt[b].item()) @ x[b].numpy()
        np.testing.assert_allclose(out[b].numpy(), expected, rtol=1e-12, atol=1e-12)


def test_zero_step_leaves_the_state_unchanged():
    torch.manual_seed(1)
    cell = LinODECell(5).double()
    with torch.no_grad():
        cell.scalar.fill_(1.5)
    x = torch.randn(3, 5, dtype=F64)
    assert torch.equal(cell(torch.zeros(3, dtype=F64), x), x)
    props = _Propagators(cell.kernel(), torch.zeros(3, 4, dtype=F64))
    for t in range(4):
        assert torch.equal(props.apply(t, x), x)


def test_shared_exponentials_one_per_distinct_step():
    kernel = torch.randn(4, 4, dtype=F64)
    dt = torch.tensor([[0.0, 0.1, 0.2, 0.1], [0.0, 0.1, 0.3, 0.2], [0.0, 0.1, 0.2, 0.3]], dtype=F64)
    props = _Propagators(kernel, dt)
    assert props.bank.shape == (4, 4, 4)  # Δ in {0, 0.1, 0.2, 0.3}
    assert props.uniform == [True, True, False, False]  # steps whose rows share one Δ
    x = torch.randn(3, 4, dtype=F64)
    for t in range(4):
        expected = torch.stack(
            [torch.linalg.matrix_exp(kernel * dt[b, t]) @ x[b] for b in range(3)]
        )
        torch.testing.assert_close(props.apply(t, x), expected, rtol=1e-12, atol=1e-12)


def test_kernel_initialisation_skew_symmetric_and_gamma_zero():
    torch.manual_seed(2)
    W = kernel_initialization("skew-symmetric", 128)
    assert torch.equal(W, -W.T)  # A = −Aᵀ exactly, so a zero diagonal
    # (G − Gᵀ)/√2 with G_ij ~ N(0, 1/n): off-diagonal entries ~ N(0, 1/n)
    off = W[~torch.eye(128, dtype=torch.bool)]
    assert abs(off.std().item() * math.sqrt(128) - 1.0) < 0.05
    sym = kernel_initialization("symmetric", 16)
    assert torch.equal(sym, sym.T)
    model = LinODEnetModel(3, 2, 10, **SMALL)
    W = model.system.weight
    assert torch.equal(W, -W.T)
    assert model.system.scalar.item() == 0.0  # γ = 0: A = γ W = 0 at the start
    assert torch.equal(model.system.kernel(), torch.zeros_like(W))


def test_zero_starts_encoder_decoder_identity_and_last_value_filter():
    """ReZero 0: encoder and decoder are the identity; ε = 0 and α = 1: the filter replaces
    the observed channels by the observation and leaves the rest."""
    torch.manual_seed(3)
    model = LinODEnetModel(3, 2, 10, **SMALL)
    z = torch.randn(4, model.latent_size)
    assert torch.equal(model.encoder(z), z) and torch.equal(model.decoder(z), z)
    x = torch.randn(4, 8)
    y = torch.randn(4, 8)
    m = torch.rand(4, 8) < 0.5
    out = model.filter(y, m, x)
    torch.testing.assert_close(out, torch.where(m, y, x))  # x − (x − y), rounded
    assert torch.equal(out[~m], x[~m])


# ----------------------------------------------------------------------------- the filter
@pytest.mark.parametrize("make", [LinearFilter, NonLinearFilter, SequentialFilter])
def test_unobserved_step_leaves_the_filter_state_unchanged(make):
    torch.manual_seed(4)
    filt = _perturb(make(6))
    x = torch.randn(5, 6, dtype=F64)
    y = torch.full((5, 6), float("nan"), dtype=F64)  # whatever sits where nothing is observed
    m = torch.zeros(5, 6, dtype=torch.bool)
    assert torch.equal(filt(y, m, x), x)
    # a partial observation changes the state, and the unobserved values do not matter
    m[:, :2] = True
    y2 = torch.where(m, torch.randn(5, 6, dtype=F64), y)
    out = filt(y2, m, x)
    assert not torch.equal(out, x) and torch.isfinite(out).all()
    y3 = torch.where(m, y2, torch.zeros_like(y2))
    assert torch.equal(filt(y3, m, x), out)


def test_forecast_steps_are_prediction_only():
    """At a step without observations x̂⁺ = x̂⁻ = dec(exp(AΔ) ẑ⁺_prev)[:H]; the values under
    mask False (also NaN) do not change the output; the output is causal."""
    torch.manual_seed(5)
    model = _perturb(LinODEnetModel(3, 3, 14, **SMALL, per_step=True))
    x, steps, mask, _, _ = _physiome_batch()
    with torch.no_grad():
        out = model(x, steps=steps, mask=mask)
        noisy = torch.where(mask, x, torch.full_like(x, float("nan")))
        assert torch.equal(model(noisy, steps=steps, mask=mask), out)
        # replay by hand: the filter is the identity at every step without observations
        z = model.z0.expand(4, -1)
        props = _Propagators(model.system.kernel(), torch.cat([0 * steps[:, :1], steps[:, 1:]], 1))
        for t in range(14):
            x_pre = model.decoder(props.apply(t, z))[:, : model.hidden_size]
            m = torch.zeros(4, model.hidden_size, dtype=torch.bool)
            m[:, :3] = mask[..., t]
            y = torch.zeros(4, model.hidden_size, dtype=F64)
            y[:, :3] = x[..., t]
            x_post = model.filter(y, m, x_pre)
            if not m.any():
                assert torch.equal(x_post, x_pre)
            torch.testing.assert_close(out[:, t], x_post[:, :3], rtol=1e-12, atol=1e-12)
            z = model.encoder(torch.cat([x_post, model.embedding_padding.expand(4, -1)], -1))
        # causal: changing a later step leaves earlier outputs alone
        later = x.clone()
        later[..., 7] += 1.0
        assert torch.equal(model(later, steps=steps, mask=mask)[:, :7], out[:, :7])


# ----------------------------------------------------------------------------- forward
def test_shared_exponentials_and_chunks_match_the_per_step_computation(monkeypatch):
    torch.manual_seed(6)
    model = _perturb(LinODEnetModel(3, 3, 14, **SMALL, per_step=True))
    x, steps, mask, y, tm = _physiome_batch()
    steps[:, 5] = 0.04  # a step all rows share

    def run():
        model.zero_grad()
        out = model(x, steps=steps, mask=mask)
        ((out.transpose(1, 2) - y)[tm] ** 2).mean().backward()
        return out.detach(), [p.grad.clone() for p in model.parameters()]

    ref_out, ref_grads = run()
    model.share_propagators = False  # one exponential per row and step (the reference's)
    out, grads = run()
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    model.share_propagators = True
    monkeypatch.setattr(linodenet, "CHUNK_STEPS", 4)  # checkpointed chunks of 4 steps
    out, grads = run()
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(linodenet, "BANK_ELEMENTS", 1)  # too many distinct Δ for a bank
    out, _ = run()
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)


def test_forward_shapes():
    torch.manual_seed(7)
    x = torch.randn(2, 3, 9)
    steps = torch.rand(2, 9)
    clf = LinODEnetModel(3, 5, 9, **SMALL)
    assert clf(x, steps=steps).shape == (2, 5)
    assert clf(x).shape == (2, 5)  # no steps: Δ = 1, no mask: every finite value observed
    forecast = LinODEnetModel(3, 3, 9, **SMALL, per_step=True)  # K = C: the reference's x̂⁺[:C]
    out = forecast(x, steps=steps, mask=torch.rand(2, 3, 9) < 0.5)
    assert out.shape == (2, 9, 3) and out.dtype == torch.float32
    assert not any(n.startswith("head") for n, _ in forecast.named_parameters())
    other = LinODEnetModel(3, 4, 9, **SMALL, per_step=True)  # K ≠ C: a Linear(H, K) head
    assert other(x, steps=steps).shape == (2, 9, 4)
    with pytest.raises(ValueError, match="steps must be"):
        clf(x, steps=torch.rand(2, 8))
    with pytest.raises(ValueError, match="mask must be"):
        clf(x, mask=torch.ones(2, 3, 8, dtype=torch.bool))
    with pytest.raises(ValueError, match="channels"):
        clf(torch.randn(2, 4, 9))


def test_first_step():
    """Δ_0 is 0 (the reference: z0 at the row's first time) unless propagate_first_step."""
    torch.manual_seed(8)
    x, steps, mask, _, _ = _physiome_batch()
    for propagate in (False, True):
        torch.manual_seed(8)
        model = _perturb(LinODEnetModel(3, 3, 14, **SMALL, per_step=True,
                                        propagate_first_step=propagate))  # fmt: skip
        shifted = steps.clone()
        shifted[:, 0] += 0.3
        with torch.no_grad():
            same = torch.equal(model(x, steps=steps, mask=mask), model(x, steps=shifted, mask=mask))
        assert same is not propagate


def test_wide_input_falls_back_to_hidden_equal_channels():
    model = LinODEnetModel(20, 2, 5, hidden_size=8, latent_size=12)
    assert (model.hidden_size, model.latent_size) == (20, 20)  # H = C, N = max(N, H)
    assert model(torch.randn(1, 20, 5)).shape == (1, 2)


def test_meta_device_and_macs():
    """The meta device's forward (all steps at once, shapes only) gives ptflops the counts
    of the step-by-step loop on the CPU."""
    model = LinODEnetModel(3, 4, 30, **SMALL)
    with torch.no_grad():
        out = model.to("meta")(torch.empty(2, 3, 30, device="meta"))
    assert out.shape == (2, 4)
    for per_step in (False, True):
        model = LinODEnetModel(3, 4, 30, **SMALL, per_step=per_step)
        for convention in ("paper", "full"):
            on_meta = mmac(model, 3, 30, device="meta", convention=convention)
            assert on_meta == mmac(model, 3, 30, device="cpu", convention=convention)
    paper, full = mmac(model, 3, 30, device="meta"), mmac(model, 3, 30, "meta", "full")
    H, N = 8, 12
    extra = 30 * (N * N + 2 * H * H + 6 * H + 2 * (2 * H * H + 4 * H)) / 1e6
    assert paper > 0 and full == pytest.approx(paper + extra)
    # the Linears ptflops sees per step: 2 × n_blocks × 2 ReverseDense (N, with bias) and 2 ×
    # 2 in the filter (H, no bias), their ReLUs, and the per-step head Linear(H, K)
    per_step = 2 * 2 * 2 * (N * N + N + N) + 2 * 2 * (H * H + H) + (H * 4 + 4)
    assert paper == pytest.approx(30 * per_step / 1e6)


# ----------------------------------------------------------------------------- learning
def test_one_step_lowers_a_masked_mse():
    torch.manual_seed(9)
    model = LinODEnetModel(3, 3, 14, **SMALL, per_step=True).double()
    x, steps, mask, y, tm = _physiome_batch()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-3)

    def loss():
        pred = model(x, steps=steps, mask=mask).transpose(1, 2)  # (B, C, L)
        return ((pred - y)[tm] ** 2).mean()

    before = loss()
    optimizer.zero_grad()
    before.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing, missing
    optimizer.step()
    with torch.no_grad():
        assert loss().item() < before.item()


# ----------------------------------------------------------------------------- sizes
def test_parameter_count_of_the_leaderboard_configuration():
    """510,607 trainable parameters at H = N = 128, as the reference's (module docstring):
    filter 163,844, encoder and decoder 165,125 each, system 16,385, z0 128."""
    entry = {k: v for k, v in ENTRY.items() if k != "family"}
    model = LinODEnetModel(4, 4, 60, per_step=True, **entry)
    assert count_params(model) == 510_607
    assert count_params(model.filter) == 163_844
    assert count_params(model.encoder) == count_params(model.decoder) == 165_125
    assert count_params(model.system) == 16_385
    assert count_params(LinODEnetModel(4, 4, 60, per_step=True)) == 510_607  # the defaults
    assert count_params(LinODEnetModel(4, 7, 60, **entry)) == 510_607 + 128 * 7 + 7
    assert count_params(LinODEnetModel(3, 3, 9, hidden_size=8, latent_size=12, per_step=True)) == (
        12 + 4 + 2 * 5 * (2 * (144 + 12) + 1) + 145 + (2 * 64 + 2) + 2 * (4 * 64 + 1)
    )


def test_hyperparameters_and_bad_values():
    hyper = hyperparams_of(LinODEnetModel)
    assert hyper["hidden_size"] is int and hyper["kernel_init"] is str
    assert hyper["kernel_scalar"] is float and hyper["propagate_first_step"] is bool
    assert set(ENTRY) - {"family"} <= set(hyper)
    with pytest.raises(ValueError, match="must not exceed latent_size"):
        LinODEnetModel(3, 2, hidden_size=64, latent_size=32)
    with pytest.raises(ValueError, match="kernel_init must be one of"):
        LinODEnetModel(3, 2, kernel_init="orthogonal")
    with pytest.raises(ValueError, match="filter_alpha must be one of"):
        LinODEnetModel(3, 2, filter_alpha="median")
    with pytest.raises(ValueError, match="n_blocks must be an integer >= 0"):
        LinODEnetModel(3, 2, n_blocks=-1)
    with pytest.raises(ValueError, match="block_depth must be an integer >= 1"):
        LinODEnetModel(3, 2, block_depth=0)
    with pytest.raises(ValueError, match="hidden_size must be an integer"):
        LinODEnetModel(3, 2, hidden_size=12.5)
    with pytest.raises(ValueError, match="kernel_scalar must be finite"):
        LinODEnetModel(3, 2, kernel_scalar=float("nan"))
    with pytest.raises(ValueError, match="kernel_init must be one of"):
        kernel_initialization("low_rank", 4)
    # zero blocks and zero non-linear filters are allowed (INT_MINIMUM)
    assert LinODEnetModel(2, 2, 5, n_blocks=0, n_nonlinear_filters=0, **{
        "hidden_size": 4, "latent_size": 4})(torch.randn(1, 2, 5)).shape == (1, 2)  # fmt: skip
