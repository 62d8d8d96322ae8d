"""The Log-NCDE forward pass in its per-tangent arithmetic: the oracle that
tests/test_logncde.py holds ``ssmbench.models.logncde``'s fast path to (outputs and
gradients), and that benchmarks/bench_logncde_epoch.py times beside it.

The depth-2 term Σ_{a<b} ℓ^{ab} [f_a, f_b](h) in its per-tangent form, not the model's
Jacobian form (``VectorField.stage``): the d tangents f_a pushed through the hidden layers
(forward mode, d (H w + (vf_depth - 1) w²) MACs per row), the (d, d) area matrix Λᵀ applied
to them (d² w), then the last layer's blocks W_b (d H w); a plain Heun loop over the
model's schedule. Only the model's weights, schedule, time channel, log-signatures,
``initial`` and ``head`` are shared with the model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ssmbench.models.logncde import LogNCDEClassifier, VectorField
from ssmbench.models.logsignature import hall_pairs, windowed_logsignature

__all__ = ["oracle_area_matrices", "oracle_forward", "oracle_increment"]


def oracle_area_matrices(areas: torch.Tensor, d: int) -> torch.Tensor:
    """Λᵀ (..., d, d) of areas (..., d(d - 1)/2): (Λᵀ g)_b = Σ_a Λ_ab g_a."""
    a, b = hall_pairs(d)
    lam_t = areas.new_zeros(*areas.shape[:-1], d, d)
    lam_t[..., b, a] = areas
    lam_t[..., a, b] = -areas
    return lam_t


def oracle_increment(vf: VectorField, y, logsig, scale: float = 1.0) -> torch.Tensor:
    """scale (ℓ^1 · f(y) + Σ_{a<b} ℓ^{ab} [f_a, f_b](y)), (B, H) states, (B, D) log-sigs."""
    d, h = vf.n_paths, vf.hidden_dim
    depth2 = logsig.shape[-1] > d
    derivatives, a = [], y
    for layer in vf.hidden:
        z = F.linear(a, layer.weight, layer.bias)
        a = F.silu(z)
        if depth2:
            sig = torch.sigmoid(z)
            derivatives.append(sig * (1 + z * (1 - sig)))  # silu'(z)
    fields = torch.tanh(F.linear(a, vf.last.weight, vf.last.bias)).view(y.shape[0], d, h)
    out = torch.bmm(logsig[:, None, :d] * scale, fields).squeeze(1)  # Σ_i ℓ^i f_i  (B, H)
    if not depth2:
        return out
    g = fields  # the d tangents f_a, pushed forward through the hidden layers  (B, d, w)
    for layer, derivative in zip(vf.hidden, derivatives, strict=True):
        g = F.linear(g, layer.weight) * derivative[:, None, :]
    u = torch.bmm(oracle_area_matrices(logsig[:, d:], d), g) * scale  # Σ_a Λ_ab g_a
    v = torch.einsum("bjw,jhw->bjh", u, vf.last.weight.view(d, h, -1))  # W_b u_b  (B, d, H)
    return out + ((1 - fields.square()) * v).sum(dim=1)  # Σ_b tanh'_b ⊙ W_b u_b


def oracle_forward(
    model: LogNCDEClassifier, x: torch.Tensor, steps=None, logsig=None
) -> torch.Tensor:
    """``model(x, steps)`` with ``oracle_increment`` in a plain Heun loop: (B, K), or
    (B, L, K) per step. ``logsig``: the windows' log-signatures, if computed (else here,
    without the model's cache)."""
    length = x.shape[-1]
    path = model.input_path(x, steps if model.time_channel else None)
    if logsig is None:
        logsig = windowed_logsignature(path, model.depth, model.stepsize)
    logsig = logsig.to(x.dtype)
    plan = model.schedule(length)
    y = model.initial(path[:, 0])
    states = [y]
    for (k1, k2), (c1, c2) in zip(plan.stages, plan.coefficients, strict=True):
        d1 = oracle_increment(model.vf, y, logsig[:, k1], c1)
        d2 = oracle_increment(model.vf, y + d1, logsig[:, k2], c2)
        y = y + 0.5 * (d1 + d2)
        states.append(y)
    if not model.per_step:
        return model.head(y)
    return model.head(model._states_at_samples(states, plan, length))
