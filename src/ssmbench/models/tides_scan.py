"""Discretisation and scans of the TIDES family's diagonal linear recurrence (``tides.py``):

    h_t = a_t * h_{t-1} + b_t,   h_{-1} = 0,   a_t = exp(Λ_t Δ_t),  b_t = gain_t * (B_t u_t)

with Λ_t, h_t complex (or real) and diagonal, one Δ_t per state.

Sources
-------
* Smith, Warrington & Linderman (2023), "Simplified State Space Layers for Sequence
  Modeling" (S5), section 3 and appendix: zero-order hold Λ̄ = exp(ΛΔ),
  B̄ = Λ^-1 (Λ̄ - I) B, bilinear Λ̄ = (I - ΔΛ/2)^-1 (I + ΔΛ/2), B̄ = (I - ΔΛ/2)^-1 Δ B, and
  the parallel scan of the recurrence under (a1, b1) . (a2, b2) = (a2 a1, a2 b1 + b2).
* TIDES reference repository (TaylanSoydan/TIDES @4b51adc, MIT), ``tides/tides.py``:
  ``discretize_zoh`` / ``discretize_bilinear`` (lines 197-235, the formulas above with a
  per-step, per-state Δ) and ``apply_ssm`` (lines 242-304: the reverse direction of the
  bidirectional layer scans the same elements backwards, h_t = a_t h_{t+1} + b_t).
  Only the formulas were taken; the reference's associative scan (derived from
  s5-pytorch) is not used.
* The parallel scan is the project's own ``mamba_scan.linear_scan`` (Blelloch's odd-even
  recursion: log2(L) levels, O(L) work, every product of ``a`` formed by multiplication,
  so |a| <= 1 never overflows), run time-first.

Deviations
----------
* ZOH's gain is ``expm1(ΛΔ) / Λ`` instead of the reference's ``(exp(ΛΔ) - 1) / Λ``: the
  same value, without the cancellation for small |ΛΔ|. Δ = 0 gives a = 1 and gain = 0
  exactly under both methods, so a zero step carries the state unchanged (padding steps).
"""

from __future__ import annotations

import torch

from .mamba_scan import linear_scan

__all__ = ["DISCRETIZATIONS", "discretize", "parallel_scan", "recurrent_scan"]

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


def parallel_scan(a: torch.Tensor, b: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """All states of h_t = a_t h_{t-1} + b_t (or h_t = a_t h_{t+1} + b_t with ``reverse``),
    a, b (B, L, S) -> h (B, L, S), by a parallel scan over L."""
    a, b = torch.broadcast_tensors(a, b)
    # time first and contiguous: each level of the scan then slices whole (B, S) blocks
    a, b = a.transpose(0, 1), b.transpose(0, 1)  # (L, B, S)
    if reverse:
        a, b = a.flip(0), b.flip(0)
    h = linear_scan(a.contiguous(), b.contiguous())  # (L, B, S)
    if reverse:
        h = h.flip(0)
    return h.transpose(0, 1)  # (B, L, S)


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
