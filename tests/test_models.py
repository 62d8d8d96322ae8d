"""Tests for ssmbench.models (S4D kernel, MS4/MS4N/S4D classifiers, registry) and complexity.

The contract every family meets is tests/test_model_contract.py; Table 4 is
tests/test_table4.py."""

from __future__ import annotations

import math

import pytest
import torch
from s4d_oracles import complex_power_kernel, naive_kernel, recurrence

from ssmbench.complexity import AUTO_CPU_MAX_LENGTH, count_params, mmac
from ssmbench.models import (
    FAMILIES,
    MS4Classifier,
    S4DClassifier,
    build_model,
    is_estimator,
    validate_model_params,
)
from ssmbench.models.s4d import S4DKernel, S4DLayer

# Mirrors the params.yaml `models:` entries (the file itself is checked separately).
MODELS = {
    "MS4N": {
        "family": "ms4",
        "d_model": 64,
        "d_state": 64,
        "n_layers": 1,
        "layer_norm": True,
        "dropout": 0.0,
    },
    "MS4": {
        "family": "ms4",
        "d_model": 64,
        "d_state": 64,
        "n_layers": 1,
        "layer_norm": False,
        "dropout": 0.0,
    },
    "MS4-2Layer": {
        "family": "ms4",
        "d_model": 64,
        "d_state": 64,
        "n_layers": 2,
        "layer_norm": False,
        "dropout": 0.0,
        "block_input_proj": True,  # Table 2's counts (tests/test_table2_counts.py)
        "learnable_b": False,
    },
    "MS4-H128": {
        "family": "ms4",
        "d_model": 128,
        "d_state": 128,
        "n_layers": 1,
        "layer_norm": False,
        "dropout": 0.0,
        "learnable_b": False,
    },
    "S4D": {"family": "s4d", "d_state": 64, "dropout": 0.0},
}


def _random_layer(H: int, N: int, seed: int = 0) -> S4DLayer:
    """An S4D layer in float64 with non-trivial B and larger steps than the default init."""
    torch.manual_seed(seed)
    layer = S4DLayer(H, N).to(torch.float64)
    with torch.no_grad():
        k = layer.kernel
        k.B.add_(0.5 * torch.randn_like(k.B))
        k.log_dt.copy_(torch.empty_like(k.log_dt).uniform_(-4.0, -0.5))
        k.log_A_real.add_(0.3 * torch.randn_like(k.log_A_real))
    return layer


# --- kernel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("L", [1, 2, 37, 300])
def test_convolution_equals_recurrence_float64(L):
    layer = _random_layer(H=4, N=8)
    u = torch.randn(2, 4, L, dtype=torch.float64)
    with torch.no_grad():
        y_conv = layer.ssm(u)
        y_rec = recurrence(layer, u)
    assert y_conv.dtype == torch.float64
    torch.testing.assert_close(y_conv, y_rec, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("L", [1, 5, 99, 100, 101, 1000])
def test_kernel_forms_agree_float64(L):
    kernel = _random_layer(H=3, N=16, seed=1).kernel
    with torch.no_grad():
        fast = kernel(L)
        plain = kernel.vandermonde(L)
        naive = naive_kernel(kernel, L)
        authors = complex_power_kernel(kernel, L)
    assert fast.shape == (3, L)
    torch.testing.assert_close(fast, plain, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(fast, naive, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(fast, authors, rtol=1e-10, atol=1e-10)


def test_b_as_a_step_scale_follows_the_authors_kernel():
    """b_scales_step (the MS4N authors' MS4NKernel): a real B multiplies each mode's step.
    With B = 1 it is the standard kernel; B = 2 everywhere equals doubling Δ."""
    torch.manual_seed(3)
    scaled = S4DLayer(4, 8, b_scales_step=True).double()
    torch.manual_seed(3)
    plain = S4DLayer(4, 8).double()
    assert not scaled.kernel.B.is_complex() and scaled.kernel.B.numel() == plain.kernel.B.numel()
    with torch.no_grad():
        torch.testing.assert_close(scaled.kernel(50), plain.kernel(50))
        scaled.kernel.B.fill_(2.0)
        plain.kernel.log_dt += math.log(2.0)
        # the standard B̄ = (e^{ΛΔ} - 1)/Λ · B with B = 1 is the authors' B̄ at the new step
        torch.testing.assert_close(scaled.kernel(50), plain.kernel(50))
        scaled.kernel.B.uniform_(0.5, 1.5)  # per-mode scales: convolution = recurrence
        u = torch.randn(2, 4, 40, dtype=torch.float64)
        torch.testing.assert_close(scaled.ssm(u), recurrence(scaled, u), rtol=1e-10, atol=1e-10)


def test_convolution_equals_recurrence_float32_default_init():
    torch.manual_seed(0)
    layer = S4DLayer(8, 64)
    u = torch.randn(3, 8, 500)
    with torch.no_grad():
        torch.testing.assert_close(layer.ssm(u), recurrence(layer, u), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(
            layer.kernel(500), naive_kernel(layer.kernel, 500), rtol=1e-4, atol=1e-4
        )
        torch.testing.assert_close(
            layer.kernel(500), complex_power_kernel(layer.kernel, 500), rtol=1e-4, atol=1e-4
        )


def test_s4d_lin_initialisation():
    torch.manual_seed(0)
    k = S4DKernel(16, 64)
    assert k.B.is_complex() and k.B.shape == (16, 32)
    assert torch.equal(k.B, torch.ones(16, 32, dtype=torch.cfloat))
    assert k.C.shape == (16, 32, 2) and not k.C.is_complex()
    torch.testing.assert_close(-torch.exp(k.log_A_real), torch.full((16, 32), -0.5))
    torch.testing.assert_close(k.A_imag[3], torch.pi * torch.arange(32, dtype=torch.float32))
    dt = torch.exp(k.log_dt)
    assert dt.min() >= 1e-3 - 1e-9 and dt.max() <= 1e-1 + 1e-9


def test_to_float64_keeps_complex_b():
    layer = S4DLayer(4, 8)
    with torch.no_grad():
        layer.kernel.B.add_(0.25j)
    b = layer.kernel.B.detach().clone()
    layer64 = layer.to(torch.float64)
    assert layer64.kernel.B.dtype == torch.complex128
    torch.testing.assert_close(layer64.kernel.B.detach(), b.to(torch.complex128))
    assert layer64.kernel.log_dt.dtype == torch.float64


# --- classifiers ----------------------------------------------------------------------------


@pytest.mark.parametrize("C,K", [(1, 2), (3, 4), (6, 4), (12, 9), (963, 2)])
def test_parameter_counts(C, K):
    ms4n = build_model("MS4N", C, K, 100, MODELS["MS4N"])
    ms4 = build_model("MS4", C, K, 100, MODELS["MS4"])
    assert count_params(ms4n) == 23_040 + 64 * C + 65 * K
    assert count_params(ms4) == 23_040 + 64 * C + 65 * K - 128


def test_parameter_count_breakdown():
    model = build_model("MS4N", 3, 5, 100, MODELS["MS4N"])
    kernel = model.ssm_layers[0].kernel
    sizes = {n: p.numel() for n, p in kernel.named_parameters()}
    assert sizes == {"log_dt": 64, "log_A_real": 2048, "A_imag": 2048, "B": 2048, "C": 4096}
    assert sum(p.numel() for p in model.mixers.parameters()) == 8320


def test_variants_build():
    m2 = build_model("MS4-2Layer", 3, 4, 100, MODELS["MS4-2Layer"])
    assert isinstance(m2, MS4Classifier) and len(m2.ssm_layers) == 2 and len(m2.norms) == 0
    assert len(m2.block_projs) == 1 and m2.block_projs[0].in_features == 64
    h128 = build_model("MS4-H128", 3, 4, 100, MODELS["MS4-H128"])
    assert h128.ssm_layers[0].kernel.d_model == 128
    assert h128.ssm_layers[0].kernel.d_state == 128
    for model in (m2, h128):  # the plain S4D kernel: B is a constant, not a parameter
        for layer in model.ssm_layers:
            assert "B" not in dict(layer.kernel.named_parameters())
            assert torch.all(layer.kernel.B == 1)
    s4d = build_model("S4D", 3, 4, 100, MODELS["S4D"])
    assert isinstance(s4d, S4DClassifier)
    # S4D on C channels: kernel (5 per mode-row: log_A_real, A_imag, B, 2x C) + log_dt + D,
    # head Linear(C, 64) + Linear(64, K)
    C, K, N2 = 3, 4, 32
    assert count_params(s4d) == C * N2 * 5 + 2 * C + (C * 64 + 64) + (64 * K + K)


# --- registry -------------------------------------------------------------------------------


def test_families():
    assert {"ms4", "s4d", "quant", "hydra", "extratrees"} <= set(FAMILIES)
    for family, cls in FAMILIES.items():
        assert isinstance(cls.HYPERPARAMS, dict), family
        assert is_estimator(cls) or issubclass(cls, torch.nn.Module)


def test_unknown_family():
    with pytest.raises(ValueError, match="MyModel") as info:
        build_model("MyModel", 3, 2, 10, {"family": "nosuchfamily"})
    assert "nosuchfamily" in str(info.value) and "ms4" in str(info.value)


def test_missing_family():
    with pytest.raises(ValueError, match="NoFam"):
        validate_model_params("NoFam", {"d_model": 64})


def test_unknown_key():
    bad = dict(MODELS["MS4N"], d_modle=64)
    with pytest.raises(ValueError, match="MS4N") as info:
        build_model("MS4N", 3, 2, 10, bad)
    msg = str(info.value)
    assert "d_modle" in msg and "d_model" in msg and "layer_norm" in msg


def test_s4d_rejects_ms4_keys():
    with pytest.raises(ValueError, match="n_layers"):
        validate_model_params("S4D", {"family": "s4d", "n_layers": 2})


@pytest.mark.parametrize(
    "key,value",
    [
        ("d_model", 64.0),
        ("d_state", 63),
        ("n_layers", True),
        ("layer_norm", 1),
        ("dropout", "0.1"),
        ("dropout", 1.5),
    ],
)
def test_bad_values(key, value):
    with pytest.raises(ValueError, match=key):
        validate_model_params("MS4N", dict(MODELS["MS4N"], **{key: value}))


def test_validate_does_not_build_and_returns_hyperparameters():
    assert validate_model_params("MS4", MODELS["MS4"]) == {
        k: v for k, v in MODELS["MS4"].items() if k != "family"
    }


# --- complexity -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_mmac_positive_and_grows_with_length(name):
    model = build_model(name, 3, 4, 100, MODELS[name])
    small, large = mmac(model, 3, 100), mmac(model, 3, 1000)
    assert 0 < small < large
    assert large > 5 * small


def test_mmac_prints_nothing_and_leaves_model_alone(capsys):
    model = build_model("MS4N", 3, 4, 100, MODELS["MS4N"])
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    value = mmac(model, 3, 100)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert value > 0 and model.training
    assert not any(hasattr(m, "__flops__") for m in model.modules())
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])


@pytest.mark.parametrize("length", [100, AUTO_CPU_MAX_LENGTH + 1])
def test_mmac_auto_device_counts_as_meta_and_keeps_the_random_state(length):
    """ "auto" (the CPU up to AUTO_CPU_MAX_LENGTH, else meta) gives the meta pass's count;
    a run's random stream is the same with or without the count before it."""
    model = build_model("MS4N", 3, 4, length, {**MODELS["MS4N"], "dropout": 0.1})
    for convention in ("paper", "full"):
        state = torch.get_rng_state()
        auto = mmac(model, 3, length, convention=convention)
        assert torch.equal(torch.get_rng_state(), state)
        assert auto == mmac(model, 3, length, device="meta", convention=convention)
        assert auto == mmac(model, 3, length, device="cpu", convention=convention)


def test_mmac_value_ms4n():
    # input projection + S4D layer + GLU mixing + LayerNorm + head, convention of complexity.py
    import math

    C, K, L, H, N = 3, 5, 1000, 64, 64
    model = build_model("MS4N", C, K, L, MODELS["MS4N"])
    n = 2 * L
    expected = (
        L * (C * H + H)  # input projection
        + 4 * H * (N // 2) * L
        + 3 * H * n * math.log2(n)
        + 4 * H * (L + 1)
        + 2 * H * L  # S4D
        + L * (2 * H * H + 2 * H)
        + L * H  # GLU mixing
        + L * H  # LayerNorm (ptflops counts one MAC per element)
        + (H * H + H)
        + H
        + (H * K + K)  # head: Linear, GELU, Linear
    )
    assert mmac(model, C, L, convention="full") == pytest.approx(expected / 1e6, rel=1e-6)
    assert mmac(model, C, L, device="meta", convention="full") == mmac(
        model, C, L, convention="full"
    )
    # the paper's convention: the S4D layer's kernel and FFT convolution are not counted
    s4d_convolution = 4 * H * (N // 2) * L + 3 * H * n * math.log2(n) + 4 * H * (L + 1)
    paper = expected - s4d_convolution + H * L  # D skip as multiply + add, GELU: 3 H L
    assert mmac(model, C, L) == pytest.approx(paper / 1e6, rel=1e-6)


def test_a_module_can_count_its_own_macs():
    """complexity.mmac picks up a module's count_macs (work ptflops' hooks cannot see),
    per convention, and still counts its child modules with their own hooks."""

    class Squares(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(3, 4)  # counted by ptflops: L * (3*4 + 4)

        def forward(self, x):  # (B, C=3, L)
            h = self.proj(x.transpose(1, 2))  # (B, L, 4)
            return (h @ h.transpose(1, 2)).mean(dim=(1, 2)).unsqueeze(-1)  # (B, 1)

        def count_macs(self, inputs, output, convention):
            B, _, L = inputs[0].shape
            return B * L * L * 4 if convention == "full" else 0  # the Gram product

    L = 10
    linear = L * (3 * 4 + 4)
    assert mmac(Squares(), 3, L, convention="paper") * 1e6 == pytest.approx(linear)
    assert mmac(Squares(), 3, L, convention="full") * 1e6 == pytest.approx(linear + L * L * 4)
    assert mmac(Squares(), 3, L, device="meta", convention="full") * 1e6 == pytest.approx(
        linear + L * L * 4
    )
