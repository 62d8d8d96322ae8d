"""Tests for the attention baselines (ssmbench.models.transformers): Informer's distilling
and ProbSparse attention, the positional table, the MAC conventions and the parameter
formulas. (The model contract: tests/test_model_contract.py; Table 4: tests/test_table4.py.)"""

from __future__ import annotations

import pytest
import torch

from ssmbench.complexity import count_params, mmac
from ssmbench.models.transformers import (
    FullAttention,
    InformerClassifier,
    ITransformerClassifier,
    ProbSparseAttention,
    TransformerClassifier,
    sinusoidal_table,
)

CLASSES = {
    "Transformer": TransformerClassifier,
    "Informer": InformerClassifier,
    "iTransformer": ITransformerClassifier,
}
# Small widths (speed); the parameter formulas use the defaults.
SMALL = {"d_model": 16, "n_heads": 4, "e_layers": 2, "d_ff": 32, "dropout": 0.0}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models: one intra-op thread is faster than two (and much faster on a busy
    machine, where spinning threads wait on each other)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _small(name: str, C: int, K: int, L: int, **extra):
    return CLASSES[name](C, K, L, **{**SMALL, **extra})


# --- construction ---------------------------------------------------------------------------


def test_informer_distilling_with_a_batch_of_one():
    """distil=True with two encoder layers puts a DistilConv (BatchNorm) between them."""
    torch.manual_seed(0)
    model = _small("Informer", 2, 3, 24, distil=True)
    assert len(model.distil_layers) == 1
    x = torch.randn(1, 2, 24)
    out = model.train()(x)
    out.sum().backward()
    assert out.shape == (1, 3)
    with torch.no_grad():
        assert model.eval()(x).shape == (1, 3)


def test_hyperparameter_types_are_registry_types():
    for cls in CLASSES.values():
        assert set(cls.HYPERPARAMS.values()) <= {int, float, bool}
        assert {"d_model", "n_heads", "e_layers", "d_ff", "dropout"} <= set(cls.HYPERPARAMS)
    assert InformerClassifier.HYPERPARAMS["factor"] is int


def test_bad_head_count_and_itransformer_length():
    with pytest.raises(ValueError, match="multiple of n_heads"):
        TransformerClassifier(3, 2, 10, d_model=10, n_heads=3)
    model = ITransformerClassifier(3, 2, 10, **SMALL)
    with pytest.raises(ValueError, match="built for length 10"):
        model(torch.randn(1, 3, 11))


def test_transformer_input_longer_than_length():
    torch.manual_seed(0)
    model = _small("Transformer", 2, 3, 8).eval()
    assert model(torch.randn(2, 2, 20)).shape == (2, 3)


def test_sinusoidal_table():
    t = sinusoidal_table(50, 6)
    pos, i = 7, 2  # feature pair i: sin at 2i, cos at 2i + 1
    angle = pos / 10000 ** (2 * i / 6)
    assert t[pos, 2 * i].item() == pytest.approx(torch.tensor(angle).sin().item(), abs=1e-6)
    assert t[pos, 2 * i + 1].item() == pytest.approx(torch.tensor(angle).cos().item(), abs=1e-6)
    assert sinusoidal_table(5, 7).shape == (5, 7)


# --- ProbSparse attention ---------------------------------------------------------------------


def test_probsparse_equals_full_attention_when_all_queries_active():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 8, 4) for _ in range(3))
    prob = ProbSparseAttention(factor=5)
    assert prob.n_samples(8) == 8  # 5 * ceil(ln 8) = 15 > 8: every query is active
    torch.testing.assert_close(prob(q, k, v), FullAttention()(q, k, v))


def test_probsparse_lazy_queries_output_mean_of_values():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 200, 4) for _ in range(3))
    prob = ProbSparseAttention(factor=1)
    u = prob.n_samples(200)
    assert u == 6  # ceil(ln 200)
    out = prob(q, k, v)
    lazy = torch.isclose(out, v.mean(dim=2, keepdim=True).expand_as(out)).all(dim=-1)
    assert (~lazy).sum(dim=-1).le(u).all()  # at most u active queries per head
    assert lazy.sum(dim=-1).ge(200 - u).all()


def test_probsparse_gradient_reaches_all_projections():
    torch.manual_seed(0)
    model = _small("Informer", 2, 3, 64)
    model(torch.randn(4, 2, 64)).sum().backward()
    attn = model.layers[0].attention
    for lin in (attn.query, attn.key, attn.value, attn.out):
        assert lin.weight.grad is not None and lin.weight.grad.abs().sum() > 0


# --- complexity -------------------------------------------------------------------------------


def test_meta_device_long_input_and_conventions():
    """AudioMNIST's L = 47,998 on the meta device; the attention counts by convention."""
    L = 47_998
    full_attention = 2 * 64 * L * L + 8 * L * L  # QK^T, AV (d = 64), softmax (8 heads)
    t = TransformerClassifier(1, 10, L)
    paper, full = mmac(t, 1, L, device="meta"), mmac(t, 1, L, device="meta", convention="full")
    gelu = L * 2048
    assert (full - paper) * 1e6 == pytest.approx(full_attention + gelu, rel=1e-9)
    inf = InformerClassifier(1, 10, L)
    U = 5 * 11  # 5 * ceil(ln 47,998)
    products = 64 * (L * U + 2 * U * L)
    assert (mmac(inf, 1, L, device="meta") - paper) * 1e6 == pytest.approx(products, rel=1e-9)


def test_parameter_formulas():
    """Transformer/Informer: 285,440 + 192 C + 65 K; iTransformer: 87,360 + 64 L + 65 K."""
    for C, K, L in [(1, 2, 24), (14, 2, 256), (113, 82, 100)]:
        assert count_params(TransformerClassifier(C, K, L)) == 285_440 + 192 * C + 65 * K
        assert count_params(InformerClassifier(C, K, L)) == 285_440 + 192 * C + 65 * K
        assert count_params(ITransformerClassifier(C, K, L)) == 87_360 + 64 * L + 65 * K
