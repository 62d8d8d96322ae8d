"""Tests for the attention baselines (ssmbench.models.transformers): the model contract,
the ProbSparse attention, and the sizes against the MS4N paper's Table 4."""

from __future__ import annotations

import pytest
import torch

from ssmbench.complexity import count_params, domain_averages, mmac
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
# Small widths for the contract tests (speed); the sizes test uses the defaults.
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


# --- contract -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.parametrize("C, K, L", [(1, 2, 8), (1345, 82, 8), (3, 82, 2500), (1, 2, 2500)])
def test_builds_and_output_shape(name, C, K, L):
    torch.manual_seed(0)
    model = _small(name, C, K, L).eval()
    with torch.no_grad():
        out = model(torch.randn(2, C, L))
    assert out.shape == (2, K)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_default_widths_build_for_extreme_shapes(name):
    """The published widths (d_ff = 2048) build for C = 1345, K = 82 and run one sample."""
    torch.manual_seed(0)
    model = CLASSES[name](1345, 82, 64).eval()
    with torch.no_grad():
        out = model(torch.randn(1, 1345, 64))
    assert out.shape == (1, 82)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_one_step_lowers_loss(name):
    torch.manual_seed(0)
    model = _small(name, 3, 4, 16)
    x, y = torch.randn(8, 3, 16), torch.arange(8) % 4
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loss() -> torch.Tensor:
        torch.manual_seed(1)  # the same ProbSparse key samples before and after the step
        return torch.nn.functional.cross_entropy(model(x), y)

    before = loss()
    opt.zero_grad()
    before.backward()
    opt.step()
    with torch.no_grad():
        after = loss()
    assert after.item() < before.item()


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_same_seed_same_output(name):
    def run(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        model = _small(name, 5, 3, 40, dropout=0.1)
        x = torch.randn(4, 5, 40)
        return model(x)  # training mode: dropout and sampling draw from the seed too

    a, b, c = run(0), run(0), run(1)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.parametrize("value", [0.0, 3.5])
def test_constant_input_no_nan(name, value):
    torch.manual_seed(0)
    model = _small(name, 4, 3, 32)
    x = torch.full((3, 4, 32), value)
    out = model(x)
    out.sum().backward()
    assert torch.isfinite(out).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_batch_size_one(name):
    torch.manual_seed(0)
    model = _small(name, 2, 3, 24, distil=True) if name == "Informer" else _small(name, 2, 3, 24)
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


def test_table4_sizes_within_5_percent():
    """Per MONSTER domain, parameters and paper-convention MMac within 5% of Table 4."""
    from ssmbench.report.reference import load_published_domains_monster

    published = {
        (r.domain, r.metric, r.model): r.value
        for r in load_published_domains_monster().itertuples()
    }
    for name, cls in CLASSES.items():
        ours = domain_averages(name, None, builder=lambda C, K, L, cls=cls: cls(C, K, L))
        assert len(ours) == 6
        for domain, got in ours.items():
            for key, metric in (("params", "Param"), ("mmac", "FLOPs")):
                want = published[(domain, metric, name)]
                assert got[key] == pytest.approx(want, rel=0.05), (name, domain, metric)


def test_parameter_formulas():
    """Transformer/Informer: 285,440 + 192 C + 65 K; iTransformer: 87,360 + 64 L + 65 K."""
    for C, K, L in [(1, 2, 24), (14, 2, 256), (113, 82, 100)]:
        assert count_params(TransformerClassifier(C, K, L)) == 285_440 + 192 * C + 65 * K
        assert count_params(InformerClassifier(C, K, L)) == 285_440 + 192 * C + 65 * K
        assert count_params(ITransformerClassifier(C, K, L)) == 87_360 + 64 * L + 65 * K
