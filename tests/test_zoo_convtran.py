"""Tests for the ConvTran family (ssmbench.models.convtran): eRPE/tAPE, the construction
shape check, the parameter count and the MAC conventions. (The model contract:
tests/test_model_contract.py; Table 4: tests/test_table4.py.)"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ssmbench.complexity import count_params, mmac
from ssmbench.models.convtran import TAPE, ConvTranClassifier, ERPEAttention, pool_factor


def _build(C: int, K: int, L: int, seed: int = 0, **hp) -> ConvTranClassifier:
    torch.manual_seed(seed)
    return ConvTranClassifier(C, K, L, **hp)


def _reference_formula(C: int, K: int, L: int) -> int:
    """Parameter count of the MONSTER ConvTran (d 32, h 8, d_ff 256, kernel 15)."""
    Lp = L // pool_factor(L)
    return 22_336 + 4_096 * C + 8 * (2 * Lp - 1) + 33 * K


# --- construction ----------------------------------------------------------------------------


def test_wrong_length_or_channels_raises():
    model = _build(2, 3, 16)
    with pytest.raises(ValueError, match="built for"):
        model(torch.randn(1, 2, 17))
    with pytest.raises(ValueError, match="built for"):
        model(torch.randn(1, 3, 16))


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_hyperparams_declared():
    assert set(ConvTranClassifier.HYPERPARAMS) == {
        "d_model",
        "n_heads",
        "d_ff",
        "kernel_size",
        "pool",
        "pool_target",
        "dropout",
    }
    assert set(ConvTranClassifier.HYPERPARAMS.values()) <= {int, float, bool}
    original = _build(2, 3, 50, d_model=16, n_heads=8, d_ff=256, kernel_size=8, pool=False)
    assert original(torch.randn(2, 2, 50)).shape == (2, 3)
    with pytest.raises(ValueError):
        ConvTranClassifier(2, 3, 50, d_model=20, n_heads=8)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    model = _build(3, 5, 200).eval()
    x = torch.randn(4, 3, 200)
    with torch.no_grad():
        ref = model(x)
        out = model.cuda()(x.cuda()).cpu()
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


# --- layers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "L,m", [(8, 1), (128, 1), (255, 1), (256, 2), (600, 4), (4000, 16), (47_998, 256)]
)
def test_pool_factor(L, m):
    assert pool_factor(L) == m
    if L > 128:
        assert 128 <= L // m <= 255


def test_tape_values():
    d, L = 8, 10
    pe = TAPE(d, L).pe[0]
    pos, i = 3, 2  # position 3, frequency index 2 -> columns 4 (sin) and 5 (cos)
    angle = pos * 10_000 ** (-2 * i / d) * d / L
    assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
    assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_erpe_attention_matches_loop():
    torch.manual_seed(0)
    d, h, L, B = 8, 2, 5, 2
    att = ERPEAttention(d, h, L)
    with torch.no_grad():
        att.relative_bias_table.copy_(torch.randn(2 * L - 1, h))
    x = torch.randn(B, L, d)
    q, k, v = att.query(x), att.key(x), att.value(x)
    dh = d // h
    out = torch.zeros(B, L, d)
    for b in range(B):
        for head in range(h):
            s = slice(head * dh, (head + 1) * dh)
            scores = torch.softmax(q[b, :, s] @ k[b, :, s].T / math.sqrt(d), dim=-1)
            for i in range(L):
                for j in range(L):
                    w = att.relative_bias_table[i - j + L - 1, head]
                    out[b, i, s] += (scores[i, j] + w) * v[b, j, s]  # bias after softmax
    expected = F.layer_norm(out, (d,), att.to_out.weight, att.to_out.bias)
    torch.testing.assert_close(att(x), expected, rtol=1e-5, atol=1e-5)


# --- size and compute -------------------------------------------------------------------------


@pytest.mark.parametrize("C,K,L", [(1, 10, 47_998), (113, 5, 100), (14, 2, 256), (10, 34, 24)])
def test_param_count_formula(C, K, L):
    assert count_params(_build(C, K, L)) == _reference_formula(C, K, L)


def test_original_repository_param_count():
    # github.com/Navidfoumani/ConvTran defaults: emb 16, kernel 8, no pooling: the eRPE
    # table holds 8(2L - 1) scalars; 10,080 + 1,024C + 8(2L - 1) + 17K in all.
    C, K, L = 6, 4, 300
    model = _build(C, K, L, d_model=16, kernel_size=8, pool=False)
    assert count_params(model) == 10_080 + 1_024 * C + 8 * (2 * L - 1) + 17 * K


@pytest.mark.parametrize("C,K,L", [(1, 82, 24), (14, 2, 256), (3, 2, 540)])
def test_paper_convention_is_ptflops_functional_count(C, K, L):
    """The "paper" MMac equals plain ptflops with its default functional counting."""
    from ptflops import get_model_complexity_info

    model = _build(C, K, L)
    macs, _ = get_model_complexity_info(
        model,
        (C, L),
        as_strings=False,
        print_per_layer_stat=False,
        verbose=False,
        backend="pytorch",
        backend_specific_config={"count_functional": True},
    )
    assert mmac(model, C, L, device="meta") == pytest.approx(macs / 1e6, rel=1e-12)
    # "full" counts the attention products once, no double-counted activations
    Lp = L // pool_factor(L)
    attn = 2 * Lp * Lp * 32 + 3 * 8 * Lp * Lp
    base = mmac(model, C, L, device="meta") * 1e6 - (2 * Lp * Lp * 32 + 8 * Lp * Lp)
    double = 4 * 32 * C * L + 2 * 32 * L + 256 * Lp + 32 * Lp
    full = base - double + attn + 3 * Lp * 32
    assert mmac(model, C, L, device="meta", convention="full") * 1e6 == pytest.approx(full)


def test_registry_entry(monkeypatch):
    """The proposed params.yaml entry validates and builds once the family is registered."""
    from ssmbench.models import FAMILIES, build_model

    monkeypatch.setitem(FAMILIES, "convtran", ConvTranClassifier)
    entry = {
        "family": "convtran",
        "d_model": 32,
        "n_heads": 8,
        "d_ff": 256,
        "kernel_size": 15,
        "pool": True,
        "pool_target": 128,
        "dropout": 0.01,
    }
    model = build_model("ConvTran", 3, 4, 300, entry)
    assert model(torch.randn(2, 3, 300)).shape == (2, 4)
    assert count_params(model) == _reference_formula(3, 4, 300)
