"""Discretisation and scans of the TIDES family's diagonal linear recurrence (``tides.py``):

    h_t = a_t * h_{t-1} + b_t,   h_{-1} = h0 (0),   a_t = exp(Λ_t Δ_t),  b_t = gain_t * (B_t u_t)

with Λ_t, h_t complex (or real) and diagonal, one Δ_t per state.

Sources
-------
* Smith, Warrington & Linderman (2023), "Simplified State Space Layers for Sequence
  Modeling" (S5), section 3 and appendix: zero-order hold Λ̄ = exp(ΛΔ),
  B̄ = Λ^-1 (Λ̄ - I) B, bilinear Λ̄ = (I - ΔΛ/2)^-1 (I + ΔΛ/2), B̄ = (I - ΔΛ/2)^-1 Δ B, and
  the scan of the recurrence under (a1, b1) . (a2, b2) = (a2 a1, a2 b1 + b2).
* TIDES reference repository (TaylanSoydan/TIDES @4b51adc, MIT), ``tides/tides.py``:
  ``discretize_zoh`` / ``discretize_bilinear`` (lines 197-235, the formulas above with a
  per-step, per-state Δ) and ``apply_ssm`` (lines 242-304: the reverse direction of the
  bidirectional layer scans the same elements backwards, h_t = a_t h_{t+1} + b_t).
  Only the formulas were taken; the reference's associative scan (derived from
  s5-pytorch) is not used.

Implementation
--------------
* ``linear_scan`` (time first, (L, ...)): an autograd Function. Forward, by chunks of T ≈
  sqrt(L/2) steps: (1) every chunk's scan from zero and the product of its a's, all chunks
  at once, one step of the chunks per Python iteration; (2) the state entering each chunk,
  chunk after chunk; (3) every step again from its chunk's entering state, written in
  place. 2 sqrt(2L) iterations of whole-tensor ops, no autograd graph, about five passes
  over a and b, every product of a's formed by multiplication (|a| <= 1 never overflows).
  Backward: the adjoint recurrence, g_t = ∂l/∂h_t + conj(a_{t+1}) g_{t+1}, is the same scan
  run the other way; then ∂l/∂b_t = g_t, ∂l/∂a_t = g_t conj(h_{t-1}). It keeps a and h
  only (an autograd graph of a recursive or log-space scan keeps several copies of the
  sequence and allocates a zero-filled one for each strided slice it takes in backward).
* ``zoh_elements``: (a, b) = (exp(ΛΔ), expm1(ΛΔ)/Λ · Bu) as an autograd Function: the
  forward in real arithmetic, expm1(x + iy) = expm1(x) cos y - 2 sin²(y/2) + i e^x sin y
  (the formula of c10's complex expm1), from vectorised real exp, expm1, sin and cos
  (PyTorch's complex exp and expm1 on CPU are scalar code, several times slower); the
  backward by the closed forms ∂a/∂z = a, ∂g/∂z = a/Λ, ∂g/∂Λ|_z = -g/Λ, z = ΛΔ, from the
  saved a, g and 1/Λ, in the conjugate convention (G = conj(∂l/∂·): the chain rule of
  holomorphic maps then takes no conjugate copies but at its ends). Bilinear keeps autograd
  through ``discretize``.
* ``recurrent_scan`` and ``discretize`` are the step-by-step reference (the recurrent,
  step and streaming modes use them; tests/test_tides_fast_scan.py holds the fast path to
  a reference recurrence written from the layer's parameters).
* On the CPU the layer runs ``zoh_elements`` and ``linear_scan`` as one fused numba kernel
  (``tides_cpu_scan.zoh_scan``: a and b never formed, the same formulas);
  ``zoh_elements`` and ``linear_scan`` are its reference (tests/test_tides_cpu_scan.py)
  and run off the CPU, with the bilinear discretisation, and where the kernel cannot take
  the inputs.

Deviations
----------
* ZOH's gain is ``expm1(ΛΔ) / Λ`` instead of the reference's ``(exp(ΛΔ) - 1) / Λ``: the
  same value, without the cancellation for small |ΛΔ|. Δ = 0 gives a = 1 and gain = 0
  exactly under both methods, so a zero step carries the state unchanged (padding steps).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "DISCRETIZATIONS",
    "discretize",
    "linear_scan",
    "parallel_scan",
    "recurrent_scan",
    "zoh_elements",
]

DISCRETIZATIONS = ("zoh", "bilinear")


def discretize(
    Lambda: torch.Tensor, delta: torch.Tensor, method: str = "zoh"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Λ (..., S) complex or real, Δ (..., S) real, broadcasting -> (Λ̄, gain), B̄ = gain·B.

    ``zoh``: Λ̄ = exp(ΛΔ), gain = (Λ̄ - 1)/Λ; ``bilinear``: Λ̄ = (1 + ΛΔ/2)/(1 - ΛΔ/2),
    gain = Δ/(1 - ΛΔ/2).
    """
    if method == "zoh":
        z = Lambda * delta
        return torch.exp(z), torch.expm1(z) / Lambda
    if method == "bilinear":
        half = Lambda * (delta / 2)
        inverse = 1 / (1 - half)
        return inverse * (1 + half), inverse * delta
    raise ValueError(f"discretization must be one of {list(DISCRETIZATIONS)}, got {method!r}")


# --- ZOH elements -----------------------------------------------------------------------------


class _ZOHElements(torch.autograd.Function):
    """(a, b) = (exp(ΛΔ), expm1(ΛΔ)/Λ · bu), Λ = re + i im (re alone: real Λ)."""

    @staticmethod
    def forward(ctx, re, im, delta, bu):
        # re, im real, broadcasting to delta (..., S) real; bu (..., S) complex (real)
        x = re * delta
        e, em1 = torch.exp(x), torch.expm1(x)
        if im is None:  # real Λ
            inv_lam = 1 / re
            a, g = e, em1 * inv_lam
        else:
            half = im * delta * 0.5
            s, c = torch.sin(half), torch.cos(half)
            s2 = 2 * s * s  # 1 - cos y, without cancellation (y = Im Λ Δ)
            a_im = e * (2 * s * c)  # e^x sin y
            a = torch.complex(e - e * s2, a_im)  # e^x (cos y + i sin y)
            # expm1(z) = expm1(x) cos y - 2 sin²(y/2) + i e^x sin y, and 1/Λ = conj(Λ)/|Λ|²
            m = torch.complex(em1 - em1 * s2 - s2, a_im)
            inv = 1 / (re * re + im * im)
            inv_lam = torch.complex(*torch.broadcast_tensors(re * inv, -im * inv))
            g = m * inv_lam
        b = g * bu
        ctx.save_for_backward(re, im, delta, bu, a, g, inv_lam)
        return a, b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        # In the conjugate convention G = conj(grad) the chain rule of these holomorphic
        # maps takes no conjugates: G_z = a (G_a + G_b bu/Λ) (∂a/∂z = a, ∂g/∂z = a/Λ),
        # G_Λ = G_z Δ - G_b bu g/Λ (∂g/∂Λ at fixed z = -g/Λ), G_bu = G_b g; then
        # ∂l/∂Re Λ = Re G_Λ, ∂l/∂Im Λ = -Im G_Λ, ∂l/∂Δ = Re(G_z Λ).
        re, im, delta, bu, a, g, inv_lam = ctx.saved_tensors
        G_b = None if grad_b is None else grad_b.conj_physical()
        G_z = None if grad_a is None else grad_a.conj_physical()
        grad_bu, G_lam = None, 0
        if G_b is not None:
            grad_bu = (G_b * g).conj_physical()
            G_t = G_b * bu * inv_lam
            G_z = G_t if G_z is None else G_z + G_t
            G_lam = -G_t * g
        G_z = G_z * a
        G_lam = G_lam + G_z * delta
        if im is None:
            grad_re, grad_im, grad_delta = G_lam, None, G_z * re
        else:
            grad_re, grad_im = G_lam.real, G_lam.imag
            grad_delta = G_z.real * re - G_z.imag * im
            grad_im = -grad_im.sum_to_size(im.shape) if ctx.needs_input_grad[1] else None
        grad_re = grad_re.sum_to_size(re.shape) if ctx.needs_input_grad[0] else None
        grad_delta = grad_delta.sum_to_size(delta.shape) if ctx.needs_input_grad[2] else None
        return grad_re, grad_im, grad_delta, grad_bu


def zoh_elements(
    re: torch.Tensor, im: torch.Tensor | None, delta: torch.Tensor, bu: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """ZOH's (Λ̄, B̄u) = (exp(ΛΔ), expm1(ΛΔ)/Λ · bu) with Λ = re + i im (im None: real Λ).

    re, im (..., S) or (S,) real, delta (..., S) real, bu (..., S) complex (real) ->
    a, b (..., S): ``discretize(complex(re, im), delta)`` and gain · bu, by real arithmetic
    and a closed-form backward (module docstring).
    """
    return _ZOHElements.apply(re, im, delta, bu)


# --- the scan ----------------------------------------------------------------------------------


def _chunk_steps(L: int) -> int:
    """Steps per chunk: 2T + L/T iterations are fewest at T = sqrt(L/2)."""
    return max(1, round(math.sqrt(L / 2)))


def _scan_into(
    out: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    h0: torch.Tensor | None,
    reverse: bool,
) -> torch.Tensor:
    """out[t] = a[t] out[t-1] + b[t] (reverse: a[t] out[t+1] + b[t]), the state before the
    first step h0 (None: 0); a, b, out (L, ...) time first, out written in place, no
    autograd. Chunked as in the module docstring."""
    L = b.size(0)
    T = _chunk_steps(L)
    n = L // T if L >= 2 * T else 0  # whole chunks; short sequences go step by step
    # whole chunks cover [lo, lo + nT); the rest of the steps, [0, lo) when reversed and
    # [nT, L) else, follows them one step at a time
    lo = L - n * T if reverse else 0
    prev = h0
    if n:
        av = a[lo : lo + n * T].unflatten(0, (n, T))  # (n, T, ...)
        bv = b[lo : lo + n * T].unflatten(0, (n, T))
        ov = out[lo : lo + n * T].unflatten(0, (n, T))
        order = range(T - 1, -1, -1) if reverse else range(T)
        first = order[0]
        # 1. each chunk from zero: its end state and the product of its a's
        end, prod = bv[:, first].clone(), av[:, first].clone()  # (n, ...)
        for t in order[1:]:
            end.mul_(av[:, t]).add_(bv[:, t])
            prod.mul_(av[:, t])
        # 2. the state entering each chunk, chunk after chunk (written to prod, now read)
        entering = prod
        for k in range(n - 1, -1, -1) if reverse else range(n):
            state = prev
            prev = end[k] if prev is None else torch.addcmul(end[k], prod[k], prev)
            if state is None:
                entering[k].zero_()
            else:
                entering[k].copy_(state)
        # 3. every step from its chunk's entering state
        torch.addcmul(bv[:, first], av[:, first], entering, out=ov[:, first])
        for i, t in enumerate(order[1:]):
            torch.mul(av[:, t], ov[:, order[i]], out=ov[:, t]).add_(bv[:, t])
    rest = range(lo - 1, -1, -1) if reverse else range(n * T, L)
    for t in rest:
        if prev is None:
            out[t].copy_(b[t])
        else:
            torch.mul(a[t], prev, out=out[t]).add_(b[t])
        prev = out[t]
    return out


class _LinearScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, h0, reverse):
        a, b = a.contiguous(), b.contiguous()
        h = _scan_into(torch.empty_like(b), a, b, h0, reverse)
        ctx.reverse = reverse
        ctx.save_for_backward(a, h, h0)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        a, h, h0 = ctx.saved_tensors
        grad_h = grad_h.contiguous()
        g = torch.empty_like(grad_h)  # ∂l/∂h_t through every later step: ∂l/∂b_t
        grad_a = torch.empty_like(a) if ctx.needs_input_grad[0] else None
        if not ctx.reverse:  # g_t = grad_h_t + conj(a_{t+1}) g_{t+1}, g_{L-1} = grad_h_{L-1}
            g[-1] = grad_h[-1]
            _scan_into(g[:-1], a[1:].conj(), grad_h[:-1], g[-1], reverse=True)
            first, later, before = 0, slice(1, None), slice(None, -1)
        else:  # g_t = grad_h_t + conj(a_{t-1}) g_{t-1}, g_0 = grad_h_0
            g[0] = grad_h[0]
            _scan_into(g[1:], a[:-1].conj(), grad_h[1:], g[0], reverse=False)
            first, later, before = -1, slice(None, -1), slice(1, None)
        if grad_a is not None:  # ∂l/∂a_t = g_t conj(h_{t-1}) (reverse: conj(h_{t+1}))
            torch.mul(g[later], h[before].conj(), out=grad_a[later])
            if h0 is None:
                grad_a[first].zero_()
            else:
                torch.mul(g[first], h0.conj(), out=grad_a[first])
        grad_h0 = a[first].conj() * g[first] if h0 is not None and ctx.needs_input_grad[2] else None
        return grad_a, g, grad_h0, None


def linear_scan(
    a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None, reverse: bool = False
) -> torch.Tensor:
    """All states of h_t = a_t h_{t-1} + b_t (``reverse``: h_t = a_t h_{t+1} + b_t), time
    first: a, b (L, ...) (a broadcasting to b), h0 (...) the state before the first step
    (None: zeros) -> h (L, ...). Chunked scan with a closed-form backward (module
    docstring); differentiable in a, b and h0."""
    if a.shape != b.shape:
        a = a.expand_as(b)
    if h0 is not None:
        h0 = h0.contiguous()
    return _LinearScan.apply(a, b, h0, reverse)


def parallel_scan(a: torch.Tensor, b: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """``linear_scan`` over dim 1: a, b (B, L, S) -> h (B, L, S)."""
    a, b = torch.broadcast_tensors(a, b)
    return linear_scan(a.transpose(0, 1), b.transpose(0, 1), reverse=reverse).transpose(0, 1)


def recurrent_scan(
    a: torch.Tensor, b: torch.Tensor, reverse: bool = False, h0: torch.Tensor | None = None
) -> torch.Tensor:
    """The same states one step at a time (the reference for ``parallel_scan``); ``h0``
    (B, S) is the state before the first step (zeros when None)."""
    a, b = torch.broadcast_tensors(a, b)
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    order = range(b.size(1) - 1, -1, -1) if reverse else range(b.size(1))
    states = [None] * b.size(1)
    for t in order:
        h = a[:, t] * h + b[:, t]
        states[t] = h
    return torch.stack(states, dim=1)  # (B, L, S)
