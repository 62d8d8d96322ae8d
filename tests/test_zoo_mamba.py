"""Tests for ssmbench.models.mamba and mamba_scan: the parallel scans against step-by-step
recurrences, the mixers, the classifiers' sizes and MAC conventions, the fused kernels. (The
model contract: tests/test_model_contract.py; Table 4: tests/test_table4.py.)"""

from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO

from ssmbench.complexity import count_params, mmac
from ssmbench.config import model_entry
from ssmbench.models import _check_value
from ssmbench.models.mamba import (
    Mamba1Classifier,
    Mamba1Mixer,
    Mamba2Classifier,
    Mamba2Mixer,
)
from ssmbench.models.mamba_scan import (
    fused_available,
    linear_scan,
    selective_scan,
    selective_scan_recurrence,
    ssd_recurrence,
    ssd_scan,
)
from ssmbench.params_file import read_params

CLASSES = {"Mamba1": Mamba1Classifier, "Mamba2": Mamba2Classifier}
F64 = torch.float64
#: params.yaml itself, read by the project's own reader (the entries that reproduce Table 4)
PARAMS = read_params(REPO / "params.yaml")


def _hyper(name: str) -> dict:
    """params.yaml's entry for ``name`` (as a run builds it), less its family."""
    return {k: v for k, v in model_entry(PARAMS, name).items() if k != "family"}


def _build(name: str, C: int, K: int, L: int, seed: int = 0, **override):
    torch.manual_seed(seed)
    return CLASSES[name](C, K, L, **{**_hyper(name), **override})


# --- scans -----------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3, 5, 8, 13, 64])
def test_linear_scan_equals_loop(T):
    gen = torch.Generator().manual_seed(T)
    a = torch.rand(T, 3, 4, generator=gen, dtype=F64)
    b = torch.randn(T, 3, 4, generator=gen, dtype=F64)
    h, ref = torch.zeros(3, 4, dtype=F64), []
    for t in range(T):
        h = a[t] * h + b[t]
        ref.append(h)
    torch.testing.assert_close(linear_scan(a, b), torch.stack(ref), rtol=1e-12, atol=1e-12)
    # any axis, and a broadcasting against b
    a1 = a[:, :1]  # (T, 1, 4)
    h, ref = torch.zeros(3, 4, dtype=F64), []
    for t in range(T):
        h = a1[t] * h + b[t]
        ref.append(h)
    out = linear_scan(a1.movedim(0, -1), b.movedim(0, -1), dim=-1).movedim(-1, 0)
    torch.testing.assert_close(out, torch.stack(ref), rtol=1e-12, atol=1e-12)


def _selective_inputs(b=2, E=5, N=3, L=37, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return dict(
        u=torch.randn(b, E, L, generator=gen, dtype=F64),
        delta=torch.randn(b, E, L, generator=gen, dtype=F64),
        A=-3 * torch.rand(E, N, generator=gen, dtype=F64),
        B=torch.randn(b, N, L, generator=gen, dtype=F64),
        C=torch.randn(b, N, L, generator=gen, dtype=F64),
        D=torch.randn(E, generator=gen, dtype=F64),
        z=torch.randn(b, E, L, generator=gen, dtype=F64),
        delta_bias=torch.randn(E, generator=gen, dtype=F64),
    )


@pytest.mark.parametrize("method", ["stepwise", "parallel"])
@pytest.mark.parametrize("L,chunk", [(1, 64), (37, 64), (37, 8), (37, 1), (70, 16)])
def test_selective_scan_equals_recurrence(L, chunk, method):
    inp = _selective_inputs(L=L)
    y = selective_scan(**inp, delta_softplus=True, chunk_size=chunk, method=method)
    ref = selective_scan_recurrence(**inp, delta_softplus=True)
    torch.testing.assert_close(y, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("method,chunk", [("stepwise", 4), ("stepwise", 1),
                                          ("stepwise", 64), ("parallel", 4)])  # fmt: skip
def test_selective_scan_gradients_equal_recurrence(method, chunk):
    """The stepwise method's closed-form backward (a chunk's states recomputed from the
    state entering it) and the parallel method's checkpointed chunks: the loop's gradients,
    for every input."""
    inp = {k: v.requires_grad_() for k, v in _selective_inputs(L=21).items()}
    names = list(inp)
    w = torch.randn(2, 5, 21, dtype=F64)
    y = selective_scan(**inp, delta_softplus=True, chunk_size=chunk, method=method)
    g1 = torch.autograd.grad((y * w).sum(), list(inp.values()))
    g2 = torch.autograd.grad(
        (selective_scan_recurrence(**inp, delta_softplus=True) * w).sum(), list(inp.values())
    )
    for name, a, b in zip(names, g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9, msg=name)


def test_selective_scan_refuses_an_unknown_method():
    with pytest.raises(ValueError, match="method must be one of"):
        selective_scan(**_selective_inputs(L=3), method="fast")


def test_selective_scan_picks_the_fused_method_on_the_cpu(monkeypatch):
    from ssmbench.models import mamba_scan

    called = []
    monkeypatch.setattr(mamba_scan, "_parallel_selective_scan", lambda *a: called.append(a))
    monkeypatch.setattr(mamba_scan._StepwiseSelectiveScan, "apply", lambda *a: called.append(a))
    selective_scan(**_selective_inputs(L=5))
    assert called == []


def _ssd_inputs(b=2, L=37, h=4, P=3, g=2, N=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return dict(
        x=torch.randn(b, L, h, P, generator=gen, dtype=F64),
        dt=F.softplus(torch.randn(b, L, h, generator=gen, dtype=F64)),
        A=-4 * torch.rand(h, generator=gen, dtype=F64),
        B=torch.randn(b, L, g, N, generator=gen, dtype=F64),
        C=torch.randn(b, L, g, N, generator=gen, dtype=F64),
        D=torch.randn(h, generator=gen, dtype=F64),
    )


@pytest.mark.parametrize(
    "L,chunk,g", [(1, 64, 1), (37, 64, 1), (37, 8, 2), (37, 1, 4), (64, 16, 1), (70, 16, 2)]
)
def test_ssd_scan_equals_recurrence(L, chunk, g):
    inp = _ssd_inputs(L=L, g=g)
    torch.testing.assert_close(
        ssd_scan(**inp, chunk_size=chunk), ssd_recurrence(**inp), rtol=1e-10, atol=1e-10
    )


def test_ssd_scan_gradients_equal_recurrence():
    inp = {k: v.requires_grad_() for k, v in _ssd_inputs(L=19, g=2).items()}
    w = torch.randn(2, 19, 4, 3, dtype=F64)
    g1 = torch.autograd.grad((ssd_scan(**inp, chunk_size=4) * w).sum(), list(inp.values()))
    g2 = torch.autograd.grad((ssd_recurrence(**inp) * w).sum(), list(inp.values()))
    for name, a, b in zip(inp, g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9, msg=name)


@pytest.mark.parametrize("method", ["stepwise", "parallel"])
def test_scans_stable_with_strong_decay(method):
    """Large delta * |A| (decays ~ exp(-1000)) gives finite outputs and finite gradients."""
    inp = _selective_inputs(L=50)
    inp["delta"] = (inp["delta"].abs() * 50).requires_grad_()
    y = selective_scan(**{k: v.float() for k, v in inp.items()}, chunk_size=16, method=method)
    y.sum().backward()
    assert torch.isfinite(y).all() and torch.isfinite(inp["delta"].grad).all()
    s = _ssd_inputs(L=50)
    s["dt"] = (s["dt"] * 100).requires_grad_()
    y = ssd_scan(**{k: v.float() for k, v in s.items()}, chunk_size=16)
    y.sum().backward()
    assert torch.isfinite(y).all() and torch.isfinite(s["dt"].grad).all()


# --- mixers ----------------------------------------------------------------------------------


def test_mixers_are_causal():
    """Changing the input at step t leaves the outputs before t unchanged."""
    torch.manual_seed(0)
    for mixer in (Mamba1Mixer(8, 4), Mamba2Mixer(8, 4, headdim=4, chunk_size=4)):
        x = torch.randn(2, 13, 8, dtype=F64)
        mixer = mixer.to(F64)
        x2 = x.clone()
        x2[:, 7:] += 1.0
        with torch.no_grad():
            y, y2 = mixer(x), mixer(x2)
        torch.testing.assert_close(y[:, :7], y2[:, :7])
        assert not torch.allclose(y[:, 7:], y2[:, 7:])


def test_mixer_reference_initialisation():
    torch.manual_seed(0)
    m1 = Mamba1Mixer(64, 64)
    assert m1.dt_rank == 4 and m1.d_inner == 128
    torch.testing.assert_close(-torch.exp(m1.A_log[3]), -torch.arange(1.0, 65.0))
    dt = F.softplus(m1.dt_proj.bias)
    assert dt.min() >= 1e-4 - 1e-7 and dt.max() <= 0.1 + 1e-6
    assert torch.equal(m1.D, torch.ones(128))
    m2 = Mamba2Mixer(64, 64, headdim=8)
    assert m2.nheads == 16 and m2.in_proj.out_features == 400
    A = torch.exp(m2.A_log)
    assert A.min() >= 1.0 and A.max() <= 16.0
    assert torch.equal(m2.D, torch.ones(16))


# --- classifiers -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_params_yaml_entry_is_valid(name):
    entry = model_entry(PARAMS, name)
    cls = CLASSES[name]
    for key, value in _hyper(name).items():
        assert key in cls.HYPERPARAMS
        _check_value(name, key, value, cls.HYPERPARAMS[key])
    # the entry's values are the class defaults
    assert count_params(cls(3, 4, 10)) == count_params(cls(3, 4, 10, **_hyper(name)))
    assert entry["family"] == name.lower()
    assert cls.SUPPORTS_PER_STEP  # per-step outputs: tests/test_model_contract.py


# --- sizes and MAC conventions -----------------------------------------------------------------


def test_parameter_formula():
    for C, K in [(1, 2), (14, 2), (1345, 82)]:
        assert count_params(_build("Mamba1", C, K, 8)) == 55_296 + 64 * C + 65 * K
        assert count_params(_build("Mamba2", C, K, 8)) == 39_472 + 64 * C + 65 * K


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_full_convention_counts_the_mixer(name):
    model = _build(name, 3, 4, 300)
    paper = mmac(model, 3, 300, device="meta")
    full = mmac(model, 3, 300, device="meta", convention="full")
    per_step_paper = 64 * 3 + 192 + (25_600 if name == "Mamba2" else 0)
    assert paper == pytest.approx((300 * per_step_paper + 4_160 + 64 + 65 * 4) / 1e6)
    assert full > 2 * paper
    assert mmac(model, 3, 300, device="cpu", convention="full") == pytest.approx(full)


# --- fused kernels ---------------------------------------------------------------------------

_HAS_MAMBA_SSM = importlib.util.find_spec("mamba_ssm") is not None


@pytest.mark.skipif(
    not torch.cuda.is_available() or not _HAS_MAMBA_SSM,
    reason="needs CUDA and mamba_ssm (fused kernels)",
)
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_fused_and_pure_paths_agree(name):
    assert fused_available()
    model = _build(name, 6, 5, 300).cuda()
    x = torch.randn(4, 6, 300, device="cuda")
    mixer_cls = Mamba1Mixer if name == "Mamba1" else Mamba2Mixer
    out_fused = model(x)
    grads_fused = torch.autograd.grad(out_fused.square().sum(), list(model.parameters()))
    try:
        mixer_cls.use_fused = False
        out_pure = model(x)
        grads_pure = torch.autograd.grad(out_pure.square().sum(), list(model.parameters()))
    finally:
        mixer_cls.use_fused = True
    torch.testing.assert_close(out_fused, out_pure, rtol=2e-3, atol=2e-3)
    for a, b in zip(grads_fused, grads_pure, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-2, atol=1e-2)


# --------------------------------------------------------- the Log-NCDE benchmark's block
def _logncde_mamba(**kw):
    from ssmbench.models.mamba import Mamba1Classifier

    torch.manual_seed(0)
    params = dict(d_model=8, d_state=4, d_conv=3, expand=1, n_layers=2, dropout=0.1)
    return Mamba1Classifier(3, 2, 40, **{**params, "block": "logncde", **kw})


def test_logncde_block_has_the_reference_layers_and_counts():
    """torch_experiments/train.py: Linear encoder, per block LayerNorm + mixer + GLU
    Linear(d, 2d), Linear decoder; no MLP head. Parameters: encoder 3·8 + 8, per block
    LayerNorm 16 + mixer + GLU 8·16 + 16, decoder 8·2 + 2."""
    from ssmbench.models.mamba import Mamba1Mixer

    model = _logncde_mamba()
    mixer = sum(p.numel() for p in Mamba1Mixer(8, 4, 3, 1).parameters())
    assert count_params(model) == (3 * 8 + 8) + 2 * (16 + mixer + 8 * 16 + 16) + (8 * 2 + 2)
    assert isinstance(model.head, torch.nn.Linear)
    assert [type(n).__name__ for n in model.norms] == ["LayerNorm", "LayerNorm"]


def test_logncde_block_is_a_pre_norm_residual_block():
    """With the GLU's output weights zeroed, every block adds nothing: the features are the
    encoder's, so the block is x + f(LayerNorm(x)) (a residual around a normalised mixer)."""
    model = _logncde_mamba(dropout=0.0).eval()
    with torch.no_grad():
        for glu in model.glus:
            glu.weight.zero_()
            glu.bias.zero_()
        x = torch.randn(2, 3, 40) * 50  # raw-scale values
        feats = model.input_proj(x.transpose(1, 2)).mean(dim=1)
        assert torch.allclose(model(x), model.head(feats), atol=1e-5)


def test_softmax_output_gives_probabilities_with_the_same_argmax():
    x = torch.randn(4, 3, 40)
    probs = _logncde_mamba(softmax_output=True).eval()(x)
    logits = _logncde_mamba(softmax_output=False).eval()(x)
    assert torch.allclose(probs.sum(dim=-1), torch.ones(4))
    assert torch.equal(probs.argmax(dim=-1), logits.argmax(dim=-1))
    # the protocol's cross-entropy on them is the reference's cross_entropy(softmax(z), y)
    y = torch.tensor([0, 1, 1, 0])
    assert torch.allclose(F.cross_entropy(probs, y), F.cross_entropy(torch.softmax(logits, -1), y))


def test_an_unknown_block_or_a_residual_logncde_block_is_refused():
    with pytest.raises(ValueError, match="block must be one of"):
        _logncde_mamba(block="other")
    with pytest.raises(ValueError, match="has its own residual"):
        _logncde_mamba(residual=True)
