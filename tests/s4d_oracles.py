"""Test oracles for ``ssmbench.models.s4d``: the S4D kernel and layer computed the slow,
independent ways that tests/test_models.py holds ``S4DKernel.forward`` and ``S4DLayer.ssm`` to
(the MS4N authors' complex-power kernel, the explicit power loop, the step-by-step
recurrence). Imported by the tests (pytest puts tests/ on ``sys.path``) and by
benchmarks/bench_kernel.py (which adds tests/ itself); not part of the package.
"""

from __future__ import annotations

import torch

from ssmbench.models.s4d import S4DKernel, S4DLayer

__all__ = ["complex_power_kernel", "naive_kernel", "recurrence"]


def complex_power_kernel(kernel: S4DKernel, L: int) -> torch.Tensor:
    """The same kernel in the MS4N authors' formulation (github h-saadatmand/MS4N,
    ``model/MS4N.py``, ``MS4NKernel.forward``): the powers Ā^l as one complex power of
    Ā (H, N/2, 1) to arange(L), then an einsum with C·B̄. ``benchmarks/bench_kernel.py``
    times it as the authors' anchor; the tests check it against ``forward``."""
    dtA, _, W, _ = kernel.discretize()  # (H, N/2)
    powers = torch.exp(dtA).unsqueeze(-1) ** torch.arange(L, device=dtA.device)  # (H, N/2, L)
    return 2 * torch.einsum("hn,hnl->hl", W, powers).real  # (H, L)


def naive_kernel(kernel: S4DKernel, L: int) -> torch.Tensor:
    """Same kernel as ``S4DKernel.forward`` but materialising every power Ā^k explicitly.

    A Python loop over k = 0..L-1 multiplies the running power by Ā once per step and
    reads off K[:, k] = 2 Re(Σ_n W_n Ā_n^k). Slow by design: used by the tests as an
    independent check and by ``benchmarks/bench_kernel.py`` as the baseline.
    """
    dtA, _, W, _ = kernel.discretize()  # (H, N/2)
    A_bar = torch.exp(dtA)  # (H, N/2)
    power = torch.ones_like(A_bar)  # Ā^0
    columns = []
    for _ in range(L):
        columns.append(2 * (W * power).sum(-1).real)  # (H)
        power = power * A_bar  # Ā^{k+1}
    return torch.stack(columns, dim=-1)  # (H, L)


def recurrence(layer: S4DLayer, u: torch.Tensor) -> torch.Tensor:
    """Step-by-step recurrent evaluation of ``layer.ssm(u)``. (B, H, L) -> (B, H, L).

    h_k = Ā h_{k-1} + B̄ u_k,  y_k = 2 Re(Σ_n C_n h_{k,n}) + D u_k, with h_{-1} = 0.
    """
    dtA, A, _, C = layer.kernel.discretize()  # (H, N/2); dtA includes B when it scales Δ
    A_bar = torch.exp(dtA)  # (H, N/2)
    B_bar = (torch.exp(dtA) - 1.0) / A  # (H, N/2)
    if not layer.kernel.b_scales_step:
        B_bar = B_bar * layer.kernel.B
    Bsz, H, L = u.shape
    h = torch.zeros(Bsz, H, A_bar.size(-1), dtype=A_bar.dtype, device=u.device)  # (B, H, N/2)
    ys = []
    for k in range(L):
        h = A_bar * h + B_bar * u[..., k, None]  # (B, H, N/2)
        ys.append(2 * (C * h).sum(-1).real)  # (B, H)
    y = torch.stack(ys, dim=-1)  # (B, H, L)
    return y + u * layer.D.unsqueeze(-1)
