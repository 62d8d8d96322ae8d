"""Streaming inference of the S4D family (``step``): the recurrence with the kernel's own
discretisation gives the convolution's outputs within 1e-4 (float32) at L = 10,000 on
random inputs, per layer and for whole classifiers (every layer count and option tried
here), per step and for the pooled logits; its state does not grow with L."""

from __future__ import annotations

import pytest
import torch

from ssmbench.models.ms4 import MS4Classifier, S4DClassifier
from ssmbench.models.s4d import S4DLayer

L = 10_000
CONFIGS = {
    "1 layer": {"n_layers": 1},
    "2 layers, b_scales_step, no first residual (MS4N's)": {
        "n_layers": 2, "b_scales_step": True, "first_layer_residual": False},
    "3 layers, no LayerNorm (MS4), block projections": {
        "n_layers": 3, "layer_norm": False, "block_input_proj": True},
    "2 layers, B fixed at one, dropout (eval)": {
        "n_layers": 2, "learnable_b": False, "dropout": 0.1},
}  # fmt: skip


def _stream(model, x):
    state = model.initial_state(x.shape[0])
    outputs = []
    with torch.no_grad():
        for t in range(x.shape[-1]):
            out, state = model.step(x[..., t], state)
            outputs.append(out)
    return torch.stack(outputs, dim=1), state


@pytest.mark.parametrize("b_scales_step", [False, True])
def test_layer_step_equals_the_convolution(b_scales_step):
    torch.manual_seed(0)
    layer = S4DLayer(6, 16, b_scales_step=b_scales_step).eval()
    u = torch.randn(2, 6, L)
    state = layer.initial_state(2)
    coefficients = layer.step_coefficients()
    steps = []
    with torch.no_grad():
        for t in range(L):
            y, state = layer.step(u[..., t], state, coefficients)
            steps.append(y)
        torch.testing.assert_close(torch.stack(steps, -1), layer(u), rtol=1e-4, atol=1e-4)
    assert state.shape == (2, 6, 8)  # O(H N), whatever L


@pytest.mark.parametrize("options", list(CONFIGS.values()), ids=list(CONFIGS))
def test_ms4_stream_gives_the_batch_logits(options):
    torch.manual_seed(1)
    x = torch.randn(2, 3, L)
    model = MS4Classifier(3, 4, L, d_model=8, d_state=8, **options).eval()
    outputs, state = _stream(model, x)
    with torch.no_grad():
        torch.testing.assert_close(outputs[:, -1], model(x), rtol=1e-4, atol=1e-4)
    assert state["steps"] == L and all(g.shape == (2, 8, 4) for g in state["ssm"])


def test_per_step_outputs_and_s4d_stream():
    torch.manual_seed(2)
    x = torch.randn(2, 3, L)
    model = MS4Classifier(3, 3, L, d_model=8, d_state=8, n_layers=2, per_step=True).eval()
    outputs, _ = _stream(model, x)
    with torch.no_grad():
        torch.testing.assert_close(outputs, model(x), rtol=1e-4, atol=1e-4)  # every step
    plain = S4DClassifier(3, 4, L, d_state=8).eval()
    outputs, _ = _stream(plain, x)
    with torch.no_grad():
        torch.testing.assert_close(outputs[:, -1], plain(x), rtol=1e-4, atol=1e-4)


def test_step_refuses_training_mode_with_dropout():
    model = MS4Classifier(3, 4, 20, d_model=8, d_state=8, dropout=0.1)  # training mode
    with pytest.raises(RuntimeError, match="call .eval"):
        model.step(torch.randn(1, 3), model.initial_state(1))
