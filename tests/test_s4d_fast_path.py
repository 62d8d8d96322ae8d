"""The S4D layer's fast path (`CausalFFTConv` with D folded into the kernel) gives the
plain autograd path's outputs and gradients within float32 tolerance, and so does a whole
MS4N training step run in micro-batches."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ssmbench.models import MS4Classifier
from ssmbench.models.s4d import CausalFFTConv, S4DKernel, S4DLayer
from ssmbench.train.micro_batches import backward_batch
from ssmbench.train.objective import Objective


def _outputs_and_grads(layer, fn, u, g):
    layer.zero_grad(set_to_none=True)
    u = u.detach().requires_grad_(True)
    y = fn(u)
    y.backward(g)
    return y.detach(), u.grad, {n: p.grad for n, p in layer.named_parameters()}


@pytest.mark.parametrize("L", [1, 7, 1000])
@pytest.mark.parametrize("b_scales_step", [False, True])
def test_fast_ssm_equals_the_plain_path(L, b_scales_step):
    torch.manual_seed(L)
    layer = S4DLayer(8, 16, b_scales_step=b_scales_step)
    u, g = torch.randn(3, 8, L), torch.randn(3, 8, L)
    y_fast, du_fast, grads_fast = _outputs_and_grads(layer, layer.ssm, u, g)
    y_plain, du_plain, grads_plain = _outputs_and_grads(layer, layer.ssm_plain, u, g)
    torch.testing.assert_close(y_fast, y_plain, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(du_fast, du_plain, rtol=1e-4, atol=1e-5)
    assert set(grads_fast) == set(grads_plain)
    for name in grads_plain:
        scale = grads_plain[name].abs().max()
        torch.testing.assert_close(grads_fast[name] / scale, grads_plain[name] / scale,
                                   rtol=1e-4, atol=1e-5, msg=name)  # fmt: skip


def test_causal_conv_gradients_are_exact_in_float64():
    torch.manual_seed(0)
    u = torch.randn(2, 3, 12, dtype=torch.float64, requires_grad=True)
    k = torch.randn(3, 12, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(CausalFFTConv.apply, (u, k))
    # and it is the causal convolution: y[t] = sum_{s <= t} k[s] u[t - s]
    y = CausalFFTConv.apply(u, k)
    direct = torch.stack(
        [(k[:, : t + 1].flip(-1) * u[..., : t + 1]).sum(-1) for t in range(12)], -1
    )
    torch.testing.assert_close(y, direct)


def test_the_fast_step_is_the_plain_step():
    """One MS4N training step: the fast path in micro-batches of 3 rows against the plain
    path on the whole batch (same weights): same loss, same gradient."""
    torch.manual_seed(0)
    params = dict(
        d_model=16, d_state=16, n_layers=2, b_scales_step=True, first_layer_residual=False
    )
    fast = MS4Classifier(3, 5, 300, **params)
    plain = MS4Classifier(3, 5, 300, **params)
    plain.load_state_dict(fast.state_dict())
    for layer in plain.ssm_layers:
        layer.plain = True
    x, y = torch.randn(8, 3, 300), torch.randint(0, 5, (8,))
    F.cross_entropy(plain(x), y).backward()
    objective = Objective({"task": "classification", "L": 300, "n_classes": 5}, (8,))
    backward_batch(fast, objective, x, y, None, {}, 3, lambda loss, inputs: None)
    for (name, p_fast), p_plain in zip(fast.named_parameters(), plain.parameters(), strict=True):
        scale = p_plain.grad.abs().max()
        torch.testing.assert_close(p_fast.grad / scale, p_plain.grad / scale,
                                   rtol=1e-4, atol=1e-5, msg=name)  # fmt: skip


def test_micro_batches_compute_each_kernel_once(monkeypatch):
    torch.manual_seed(1)
    model = MS4Classifier(3, 5, 64, d_model=8, d_state=8, n_layers=2)
    calls = []
    factorised = S4DKernel.factorised
    monkeypatch.setattr(
        S4DKernel, "factorised", lambda self, L: calls.append(L) or factorised(self, L)
    )
    objective = Objective({"task": "classification", "L": 64, "n_classes": 5}, (9,))
    x, y = torch.randn(9, 3, 64), torch.randint(0, 5, (9,))
    backward_batch(model, objective, x, y, None, {}, 2, lambda loss, inputs: None)
    assert calls == [64, 64]  # one per layer for the 5 parts
    assert all(k._shared is None for k in model.modules() if isinstance(k, S4DKernel))
    assert all(p.grad is not None for p in model.parameters())
    with torch.no_grad():  # outside it (and in evaluation) K is computed per call
        model(x)
    assert len(calls) == 4


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_channels_last_layer_is_the_layer_on_the_transposed_input(dropout):
    """The same weights on (B, L, H) and (B, H, L): same outputs, gradients and (in
    training, same seed) the same channel-dropout masks; and the plain path in both."""
    torch.manual_seed(3)
    first = S4DLayer(6, 8, dropout=dropout).train()
    last = S4DLayer(6, 8, dropout=dropout, channels_last=True).train()
    last.load_state_dict(first.state_dict())
    u, g = torch.randn(4, 6, 50), torch.randn(4, 6, 50)
    for plain in (False, True):
        first.plain = last.plain = plain
        torch.manual_seed(7)
        y1, du1, grads1 = _outputs_and_grads(first, first, u, g)
        torch.manual_seed(7)
        y2, du2, grads2 = _outputs_and_grads(
            last, lambda v: last(v.transpose(1, 2)).transpose(1, 2), u, g
        )
        torch.testing.assert_close(y2, y1)
        torch.testing.assert_close(du2, du1)
        for name in grads1:
            torch.testing.assert_close(grads2[name], grads1[name], msg=name)
