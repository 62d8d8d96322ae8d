"""RFormer (models/rformer.py): its signatures against a direct computation, the global
and local views as the reference (AlvaroArroyo/RFormer at 27d59ea, src/UEA/sig_utils.py)
defines them, shapes, training, its errors and its parameter counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("pysiglib")

from ssmbench.complexity import count_params  # noqa: E402
from ssmbench.models.rformer import (  # noqa: E402
    RFormerClassifier,
    SignatureViews,
    signature_length,
    window_ends,
)


def direct_signature(path: np.ndarray, level: int = 2) -> np.ndarray:
    """Levels 1 and 2 of a piecewise-linear path (P, d) from its increments Δ_k:
    S_i = Σ_k Δ_k,i and S_ij = Σ_{k<m} Δ_k,i Δ_m,j + ½ Σ_m Δ_m,i Δ_m,j (the iterated
    integral ∫∫_{s<t} dx_i(s) dx_j(t), one linear piece at a time), flattened i d + j."""
    assert level in (1, 2)
    inc = np.diff(path, axis=0)  # (P - 1, d)
    d = path.shape[1]
    level1 = inc.sum(axis=0)
    if level == 1:
        return level1
    level2 = np.zeros((d, d))
    for m in range(len(inc)):
        for k in range(m):
            level2 += np.outer(inc[k], inc[m])
        level2 += 0.5 * np.outer(inc[m], inc[m])
    return np.concatenate([level1, level2.reshape(-1)])


def reference_ends(kept: list[int], full_length: int, n_windows: int) -> list[int]:
    """The reference's window indices: x = linspace(0, L, L) at the kept steps, step =
    max(x) / n, e_i the last j with x_j < step i, then e_n -= 1."""
    x = np.linspace(0, full_length, full_length)[kept]
    step = max(x) / n_windows
    ends = [int(np.where(x < step * i)[0][-1]) for i in range(1, n_windows + 1)]
    ends[-1] -= 1
    return ends


def test_level2_signature_of_a_piecewise_linear_path():
    path = np.array([[0.0, 1.0, -0.5], [0.7, 0.2, 0.1], [1.1, -0.4, 0.9], [0.3, 0.5, 1.5],
                     [-0.2, 1.3, 0.4], [0.6, 0.8, -0.3]])  # fmt: skip
    views = SignatureViews(3, 1, 2, True, False, False, False)
    ours = views._signatures(torch.tensor(path[None]))[0].numpy()
    assert ours.shape == (signature_length(3, 2),) == (12,)
    np.testing.assert_allclose(ours, direct_signature(path), rtol=1e-12, atol=1e-12)
    # the increment alone at level 1, and a single point has the zero signature
    np.testing.assert_allclose(ours[:3], path[-1] - path[0], atol=1e-12)
    assert not views._signatures(torch.tensor(path[None, :1])).any()


@pytest.mark.parametrize("n_windows", [1, 4, 7])
@pytest.mark.parametrize("dropped", [False, True])
def test_views_are_the_references_windows(n_windows, dropped):
    """Token i: global Sig(path_0..path_{e_i + 1}) (the streamed signature at e_i), local
    Sig(path_{e_{i-1}}..path_{e_i - 1}) (the slice e_{i-1}:e_i), the path [t, x] with t
    linspace(0, 1, L) of the full grid at the kept steps (as the drop-rate reference)."""
    rng = np.random.default_rng(n_windows)
    full, channels = 41, 2
    values = rng.normal(size=(full, channels)).cumsum(axis=0)
    kept = list(range(full))
    if dropped:  # index 0 and the last kept, the rest a random half
        kept = sorted({0, full - 1, *rng.choice(np.arange(1, full - 1), 18, replace=False)})
    t = np.linspace(0, 1, full)[:, None]
    path = np.concatenate([t, values], axis=1)[kept]  # (P, 1 + C)
    ends = reference_ends(kept, full, n_windows)
    starts = [0, *ends[:-1]]
    want_global = [direct_signature(path[: e + 2]) for e in ends]
    want_local = [direct_signature(path[a:b]) if b - a > 1 else np.zeros(12)
                  for a, b in zip(starts, ends, strict=True)]  # fmt: skip
    k = torch.tensor(kept, dtype=torch.float64)
    steps = torch.cat([k[:1] + 1, k.diff()])[None]  # [T_0 + 1, diff(T)], the drop variants'
    model = RFormerClassifier(channels, 3, len(kept), n_windows=n_windows, global_view=True,
                              local_view=True, pos_dim=2, n_heads=1)  # fmt: skip
    x = torch.tensor(values[kept].T[None])  # (1, C, P)
    got = model.features(x, steps)[0].numpy()  # (n, 2 S), float64 in, float64 out
    assert got.shape == (n_windows, 24)
    np.testing.assert_allclose(got[:, :12], np.stack(want_global), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[:, 12:], np.stack(want_local), rtol=1e-10, atol=1e-10)
    assert window_ends(steps.cumsum(1) - steps[:, :1], n_windows)[0].tolist() == ends


def test_window_ties_fall_as_in_the_reference():
    """SelfRegulationSCP1's grid (L = 896, 100 windows) has boundaries exactly on a step
    (n j = i (L - 1) for i = 20, 40, 60, 80): the reference's float64 rounding decides."""
    for length, n in [(896, 100), (1152, 50), (405, 30), (17984, 10), (101, 10)]:
        s = torch.arange(length, dtype=torch.float64)[None]
        assert window_ends(s, n)[0].tolist() == reference_ends(list(range(length)), length, n)


@pytest.mark.parametrize(
    "views, univariate, width",
    [((True, False), False, 4 + 16), ((False, True), False, 4 + 16),
     ((True, True), False, 2 * (4 + 16)), ((True, False), True, 3 * 6),
     ((True, True), True, 2 * 3 * 6)],
)  # fmt: skip
def test_view_shapes_are_the_references(views, univariate, width):
    """(B, n, F): siglength(C + 1, N) per view (utils.py ComputeModelParams), C siglength(2, N)
    with ``univariate``; C = 3, N = 2."""
    model = RFormerClassifier(3, 2, 30, n_windows=6, global_view=views[0], local_view=views[1],
                              univariate=univariate, pos_dim=2, n_heads=1)  # fmt: skip
    tokens = model.features(torch.randn(5, 3, 30))
    assert tokens.shape == (5, 6, width) and tokens.dtype == torch.float32
    assert model.width == width + 2


def test_univariate_is_each_channels_time_path():
    x = torch.randn(2, 3, 25, dtype=torch.float64)
    uni = RFormerClassifier(3, 2, 25, n_windows=5, univariate=True, pos_dim=2, n_heads=1)
    tokens = uni.features(x)  # (2, 5, 3 * 6)
    for c in range(3):
        one = RFormerClassifier(1, 2, 25, n_windows=5, pos_dim=2, n_heads=1)
        torch.testing.assert_close(tokens[..., 6 * c : 6 * (c + 1)], one.features(x[:, c : c + 1]))


def test_forward_shape_and_steps():
    torch.manual_seed(0)
    model = RFormerClassifier(4, 3, 64, n_windows=8, sig_level=3, local_view=True).eval()
    x = torch.randn(6, 4, 64)
    with torch.no_grad():
        out = model(x)
        assert out.shape == (6, 3) and torch.isfinite(out).all()
        assert torch.equal(out, model(x, torch.ones(6, 64)))  # None means unit steps
        assert not torch.equal(out, model(x, torch.rand(6, 64) + 0.5))
    with pytest.raises(ValueError, match="steps must be"):
        model(x, torch.ones(6, 63))


def test_padding_adds_nothing():
    """Padding as the drop-rate variants pad (X = 0, Δ = 0 at the end) leaves the tokens."""
    x = torch.randn(1, 2, 30, dtype=torch.float64)
    steps = torch.randint(1, 4, (1, 30)).double()
    model = RFormerClassifier(2, 2, 40, n_windows=5, local_view=True, pos_dim=2, n_heads=1)
    padded_x = torch.cat([x, torch.zeros(1, 2, 10, dtype=torch.float64)], dim=2)
    padded_steps = torch.cat([steps, torch.zeros(1, 10, dtype=torch.float64)], dim=1)
    torch.testing.assert_close(model.features(padded_x, padded_steps), model.features(x, steps))


def test_one_step_lowers_the_loss():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(8, 3, 48, generator=gen).cumsum(-1), torch.arange(8) % 4
    model = RFormerClassifier(3, 4, 48, n_windows=6, local_view=True, dropout=0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=6.73e-3)

    def loss() -> torch.Tensor:
        return F.cross_entropy(model(x), y)

    before = loss()
    optimizer.zero_grad()
    before.backward()
    assert all(p.grad is not None for p in model.parameters())
    optimizer.step()
    with torch.no_grad():
        assert loss().item() < before.item()


def test_meta_device_forward_and_macs():
    """No signature kernel runs on the meta device: the tokens are an empty tensor there."""
    model = RFormerClassifier(3, 4, 1000, n_windows=10).to("meta")
    with torch.no_grad():
        out = model(torch.empty(2, 3, 1000, device="meta"))
    assert out.shape == (2, 4) and out.device.type == "meta"
    pytest.importorskip("ptflops")
    from ssmbench.complexity import mmac

    cpu = RFormerClassifier(3, 4, 1000, n_windows=10)
    paper, full = (mmac(cpu, 3, 1000, device="meta", convention=c) for c in ("paper", "full"))
    assert 0 < paper < full
    assert mmac(cpu, 3, 1000, device="cpu") == pytest.approx(paper)


@pytest.mark.parametrize("level", [0, -1, 1.5, True])
def test_bad_sig_level(level):
    with pytest.raises(ValueError, match="sig_level"):
        RFormerClassifier(3, 2, 50, sig_level=level)


def test_more_windows_than_steps():
    with pytest.raises(ValueError, match=r"n_windows \(51\).*length \(50\)"):
        RFormerClassifier(3, 2, 50, n_windows=51)
    model = RFormerClassifier(3, 2, None, n_windows=20)  # length unknown: checked in forward
    with pytest.raises(ValueError, match=r"n_windows \(20\).*length \(19\)"):
        model(torch.randn(1, 3, 19))


def test_too_wide_tokens_are_refused():
    """C = 1345 (DuckDuckGeese) at level 2: 1,346 + 1,346² features a token."""
    with pytest.raises(ValueError, match="sig_level"):
        RFormerClassifier(1345, 2, 64, n_windows=4)
    assert RFormerClassifier(1345, 2, 64, n_windows=4, sig_level=1, pos_dim=2, n_heads=1)


def test_other_bad_hyperparameters():
    with pytest.raises(ValueError, match="global_view and local_view"):
        RFormerClassifier(3, 2, 200, global_view=False, local_view=False)
    with pytest.raises(ValueError, match="time_channel"):
        RFormerClassifier(3, 2, 200, univariate=True, time_channel=False)
    with pytest.raises(ValueError, match="n_heads"):
        RFormerClassifier(1, 2, 200, sig_level=1, time_channel=False, pos_dim=1, n_heads=3)


def test_parameter_counts():
    # the TIDES drop-rate configuration (uea/droprate.py): EigenWorms C = 6, K = 5, 10 local
    # windows, level 2, time channel, n_embd 20, 1 head, 2 separate blocks, scaled attention
    drop = RFormerClassifier(6, 5, 8992, n_windows=10, sig_level=2, global_view=False,
                             local_view=True, pos_dim=20, n_heads=1, n_layers=2, dropout=0.0,
                             scaled_attention=True, tied_layers=False)  # fmt: skip
    assert drop.width == 7 + 49 + 20
    assert count_params(drop) == 140_881  # the reference: + 30 for its unused Linear(K, K)
    # the TIDES timing ablation's 94,368 (uea/ablations/train_time_memory.py): n_embd 32, 2
    # heads, 4 separate blocks, one raw channel as L = 1000 one-feature tokens, K = 5
    timing = RFormerClassifier(1, 5, 1000, n_windows=1000, sig_level=1, global_view=False,
                               local_view=True, time_channel=False, pos_dim=32, n_heads=2,
                               n_layers=4, dropout=0.0, scaled_attention=True,
                               tied_layers=False)  # fmt: skip
    assert count_params(timing) + 5 * 5 + 5 == 94_368
    # the RFormer repository shares one block between its layers
    tied = RFormerClassifier(6, 5, 8992, n_windows=10, global_view=False, local_view=True,
                             pos_dim=20, n_heads=1, n_layers=2)  # fmt: skip
    assert count_params(drop) - count_params(tied) == 70_148  # one block


def test_same_seed_same_model():
    x = torch.randn(2, 3, 40)
    torch.manual_seed(5)
    a = RFormerClassifier(3, 2, 40, n_windows=4).eval()
    torch.manual_seed(5)
    b = RFormerClassifier(3, 2, 40, n_windows=4).eval()
    with torch.no_grad():
        assert torch.equal(a(x), b(x))
