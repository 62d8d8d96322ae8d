"""Streaming inference of the TIDES family (``_TimeAwareSSMClassifier.step``): one time step
at a time, with TIDESSSM.step's discretisation, gives the parallel scan's outputs within
1e-4 (float32) on random inputs with random irregular steps, for TIDES, S5 and MambaS
(one configuration of each at L = 10,000, the options that change the stream path at
L = 1,000), per step and for the pooled logits; its state does not grow with L; training
mode, bidirectional layers and a time channel without a length refuse."""

from __future__ import annotations

import pytest
import torch

from ssmbench.models.tides import MambaSClassifier, S5Classifier, TIDESClassifier

ID, LTI = "input_dependent", "lti"
C, K = 3, 4
# Re Λ input-dependent uses the "exp" map (Re Λ < 0 whatever the input): under "standard"
# the perturbed projector gives Re Λ > 0 on some steps, and 10,000 of them overflow.
CONFIGS = {
    "TIDES 2 layers, Re Λ and B/C input-dependent (rank 2), dropout (eval)": (
        TIDESClassifier, 10_000,
        {"n_layers": 2, "lambda_re_mode": ID, "bc_mode": ID, "lambda_re_map": "exp",
         "dropout": 0.1}),
    "S5 1 layer, conj_sym, time channel": (
        S5Classifier, 10_000, {"n_layers": 1, "conj_sym": True, "time_channel": True}),
    "MambaS 1 layer, time channel": (
        MambaSClassifier, 10_000, {"n_layers": 1, "time_channel": True}),
    "TIDES 1 layer, every mode LTI": (
        TIDESClassifier, 1_000,
        {"n_layers": 1, "lambda_re_mode": LTI, "lambda_im_mode": LTI, "bc_mode": LTI}),
    "TIDES 2 layers, everything input-dependent (rank 0), conj_sym, Λ encoder depth 1": (
        TIDESClassifier, 1_000,
        {"n_layers": 2, "lambda_re_mode": ID, "lambda_im_mode": ID, "bc_mode": ID, "rank": 0,
         "conj_sym": True, "lambda_re_map": "exp", "lambda_encoder_depth": 1}),
    "TIDES 1 layer, B/C modulated (rank -1), mask channels, encoder depth 1": (
        TIDESClassifier, 1_000,
        {"n_layers": 1, "lambda_re_mode": LTI, "bc_mode": ID, "rank": -1,
         "mask_channels": True, "encoder_depth": 1}),
    "TIDES 2 layers, real Λ, Re Λ input-dependent, no norms, bilinear": (
        TIDESClassifier, 1_000,
        {"n_layers": 2, "lambda_re_mode": ID, "bc_mode": ID, "rank": -1, "real_lambda": True,
         "proj_norm": False, "lambda_re_map": "exp", "discretization": "bilinear"}),
    "S5 2 layers, plain block GLU, real Λ, dropout (eval)": (
        S5Classifier, 1_000,
        {"n_layers": 2, "block_glu": "plain", "real_lambda": True, "dropout": 0.1}),
    "MambaS 2 layers, conj_sym, time channel": (
        MambaSClassifier, 1_000, {"n_layers": 2, "conj_sym": True, "time_channel": True}),
}  # fmt: skip


def _model(cls, L, options, seed=0, **extra):
    """Evaluation mode, every parameter and BatchNorm's running statistics moved off their
    initial values (zero-initialised projectors and mean 0 / variance 1 would hide what the
    input and the normalisation do)."""
    torch.manual_seed(seed)
    model = cls(C, K, L, **{**cls.TEST_PARAMS, **options, **extra}).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen))
        for block in model.blocks:
            block.norm.running_mean.normal_(0.0, 0.5, generator=gen)
            block.norm.running_var.uniform_(0.5, 2.0, generator=gen)
    return model


def _inputs(L, seed=1):
    """Values (2, C, L), random positive irregular steps (2, L) with a padded tail on row 0
    (Δ = 0 carries the state), a random observation mask (2, C, L)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, C, L, generator=gen)
    steps = 0.05 + 1.5 * torch.rand(2, L, generator=gen)
    steps[0, -L // 10 :] = 0.0
    mask = (torch.rand(2, C, L, generator=gen) > 0.3).float()
    return x, steps, mask


def _numel(state: dict) -> int:
    return sum(h.numel() for h in state["ssm"]) + state["sum"].numel() + state["time"].numel()


def _stream(model, x, steps, mask=None):
    """Every step's output with ``per_step``; the last step read pooled (the head on the
    running mean), so one stream checks both readouts."""
    L = x.shape[-1]
    state = model.initial_state(x.shape[0])
    outputs = []
    with torch.no_grad():
        for t in range(L):
            model.per_step = t < L - 1
            m_t = None if mask is None else mask[..., t]
            out, state = model.step(x[..., t], state, steps[:, t], m_t)
            outputs.append(out)
            if t == 0:
                early = _numel(state)
    return torch.stack(outputs[:-1], dim=1), outputs[-1], state, early


@pytest.mark.parametrize("spec", list(CONFIGS.values()), ids=list(CONFIGS))
def test_stream_equals_the_parallel_scan(spec):
    cls, L, options = spec
    model = _model(cls, L, options, per_step=True)
    x, steps, mask = _inputs(L)
    mask = mask if model.mask_channels else None
    per_step, pooled, state, early = _stream(model, x, steps, mask)
    with torch.no_grad():
        model.per_step = True
        expected = model(x, steps, mask)  # (2, L, K)
        model.per_step = False
        logits = model(x, steps, mask)  # (2, K)
    assert torch.isfinite(expected).all() and expected.abs().max() < 1e3
    torch.testing.assert_close(per_step, expected[:, :-1], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(pooled, logits, rtol=1e-4, atol=1e-4)
    # O(layers · S + H) per row: the same after one step as after L
    assert state["steps"] == L and _numel(state) == early
    assert [tuple(h.shape) for h in state["ssm"]] == [(2, b.ssm.S) for b in model.blocks]


def test_defaults_unit_steps_and_all_observed():
    """dt_t None is steps=None (all 1), mask_t None is mask=None (all observed)."""
    model = _model(TIDESClassifier, 50, {"mask_channels": True, "lambda_re_map": "exp"})
    x = torch.randn(2, C, 50)
    state = model.initial_state(2)
    with torch.no_grad():
        for t in range(50):
            out, state = model.step(x[..., t], state)
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)


def test_training_mode_refuses():
    model = TIDESClassifier(C, K, 20, **TIDESClassifier.TEST_PARAMS)  # training mode
    with pytest.raises(RuntimeError, match=r"call \.eval\(\) first \(BatchNorm and dropout"):
        model.initial_state(1)
    state = model.eval().initial_state(1)
    model.train()
    with pytest.raises(RuntimeError, match=r"call \.eval\(\)"):
        model.step(torch.randn(1, C), state)


@pytest.mark.parametrize("cls", [TIDESClassifier, S5Classifier, MambaSClassifier])
def test_bidirectional_refuses(cls):
    model = cls(C, K, 20, **cls.TEST_PARAMS, bidirectional=True).eval()
    with pytest.raises(ValueError, match="bidirectional layer has no step mode"):
        model.initial_state(1)


def test_time_channel_needs_the_length():
    model = S5Classifier(C, K, None, **S5Classifier.TEST_PARAMS, time_channel=True).eval()
    with pytest.raises(ValueError, match="time_channel needs the model's length"):
        model.initial_state(1)
    with pytest.raises(ValueError, match=r"dt_t must be \(B,\)"):
        S5Classifier(C, K, 5, **S5Classifier.TEST_PARAMS).eval().step(
            torch.randn(2, C), {"time": torch.zeros(2)}, torch.ones(2, 1)
        )
