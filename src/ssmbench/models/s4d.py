"""The S4D layer: a diagonal state space model computed as a long convolution.

Sources
-------
* Gu, Gupta, Goel, Ré (2022), "On the Parameterization and Initialization of Diagonal
  State Space Models" (S4D). The S4D-Lin initialisation and the ZOH-discretised
  Vandermonde kernel used here follow that paper.
* Reference implementation: state-spaces/s4, ``models/s4/s4d.py`` (the "minimal S4D").
  This module was written from the facts of that file (initialisations, shapes, the FFT
  convolution), not copied from it.

Notation (shapes in comments): B batch, H channels (``d_model``), N state size
(``d_state``; N/2 complex conjugate-pair modes are stored), L sequence length.

Continuous SSM per channel h and mode n (diagonal):  x'(t) = Λ x(t) + B u(t),
y(t) = 2 Re(C x(t)) (+ D u(t)). Zero-order hold with step Δ = exp(log_dt):

    Ā = exp(Λ Δ),   B̄ = (exp(Λ Δ) − 1) / Λ · B
    h_k = Ā h_{k−1} + B̄ u_k,   y_k = 2 Re(Σ_n C_n h_{k,n})

which unrolls into the convolution y = K * u with kernel

    K[h, l] = 2 Re( Σ_n C_n B̄_n Ā_n^l ).

Choices and deviations from the reference ``s4d.py``
---------------------------------------------------
* ``B`` (``b_scales_step=False``) is a learnable complex input matrix of shape (H, N/2)
  initialised to ones (the reference folds B into C and has no B).
  ``b_scales_step=True`` follows the MS4N authors' code instead
  (https://github.com/h-saadatmand/MS4N, ``model/MS4N.py``, ``MS4NKernel``): B is real,
  (H, N/2), ones, and multiplies the step, ΛΔ -> ΛΔB, with B̄ = (exp(ΛΔB) − 1)/Λ; the
  parameter count is the same (H·N/2). It is stored as a complex-dtype
  ``nn.Parameter`` so that ``p.numel()`` counts it as H·N/2 — the convention of the MS4N
  paper's parameter counts. ``C`` is stored as ``view_as_real`` (H, N/2, 2), so it counts
  H·N. Optimisers in torch handle complex parameters (Adam/AdamW treat them as pairs of
  reals).
* Λ is S4D-Lin: Re Λ = −0.5 (stored as ``log_A_real = log 0.5``, Re Λ = −exp(log_A_real)),
  Im Λ = π n for n = 0..N/2−1; both are learnable. C ~ complex normal (variance 0.5 per
  part, i.e. ``torch.randn(..., dtype=cfloat)``), D ~ N(0, 1), log Δ ~ U[log 1e-3, log 1e-1].
* The SSM parameters (log_dt, log_A_real, A_imag, B, C) carry the reference's
  ``_optim = {"weight_decay": 0.0}`` hint; nothing here enforces it, a trainer may use it.
  No per-parameter learning rate is set.
* Dropout after the GELU drops whole channels: one mask per (sample, channel), the same at
  every step (``ChannelDropout``), as both references do (state-spaces' ``DropoutNd`` with
  ``tie=True``; the MS4N authors' ``DropoutNd`` on their channels-last layout).
* The layer does not contain the GLU output mixing of the reference ``S4D`` module: the
  MS4 classifier (``ms4.py``) adds it itself, and the plain "S4D" model has none.
* The kernel is computed with a factorised Vandermonde matrix, Ā^{m i + j} = Ā^{m i} Ā^j
  with m ≈ sqrt(L) (see ``S4DKernel.forward``), instead of exponentiating the full
  (H, N/2, L) matrix; the plain form is kept as ``S4DKernel.vandermonde`` and the tests
  check that both agree with the step-by-step recurrence. Arithmetic is float32 (as the
  reference); for very long L the phase ``Im(ΛΔ)·l`` loses some float32 precision in
  either form.
* Same arithmetic, other order: D u is added as the kernel's first tap (K + D δ, one
  convolution) and the FFT convolution has its backward written out (``CausalFFTConv``)
  instead of autograd's through rfft/irfft, and the layer can take and give MS4's
  channels-last layout (B, L, H) directly; the reference's composition is kept as
  ``S4DLayer.ssm_plain`` (``plain = True``), and tests/test_s4d_fast_path.py holds the
  two to float32 tolerance (outputs and every gradient).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn as nn

__all__ = [
    "CausalFFTConv",
    "ChannelDropout",
    "S4DKernel",
    "S4DLayer",
    "kernels_once_per_batch",
]

_NO_WEIGHT_DECAY = {"weight_decay": 0.0}


class S4DKernel(nn.Module):
    """Generates the (H, L) convolution kernel of H independent diagonal SSMs."""

    def __init__(
        self,
        d_model: int,
        d_state: int = 64,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        b_scales_step: bool = False,
    ) -> None:
        super().__init__()
        if d_state < 2 or d_state % 2:
            raise ValueError(f"d_state must be an even integer >= 2, got {d_state}")
        H, N2 = d_model, d_state // 2
        self.d_model = H
        self.d_state = d_state
        # False: B is the complex input matrix, B̄ = (exp(ΛΔ) - 1)/Λ · B.
        # True (the MS4N authors' code): B is real and scales each mode's step,
        # ΛΔ -> ΛΔB, B̄ = (exp(ΛΔB) - 1)/Λ. Both have H·N/2 parameters in B.
        self.b_scales_step = b_scales_step

        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # (H)
        log_A_real = torch.full((H, N2), math.log(0.5))  # (H, N/2): Re Λ = -0.5
        A_imag = math.pi * torch.arange(N2, dtype=torch.float32).repeat(H, 1)  # (H, N/2)
        # (H, N/2): complex input matrix, or real per-mode step scales
        B = torch.ones(H, N2, dtype=torch.float32 if b_scales_step else torch.cfloat)
        C = torch.randn(H, N2, dtype=torch.cfloat)  # (H, N/2) complex, var 0.5 per part

        self.log_dt = nn.Parameter(log_dt)
        self.log_A_real = nn.Parameter(log_A_real)
        self.A_imag = nn.Parameter(A_imag)
        self.B = nn.Parameter(B)
        self.C = nn.Parameter(torch.view_as_real(C))  # (H, N/2, 2)
        for p in (self.log_dt, self.log_A_real, self.A_imag, self.B, self.C):
            p._optim = dict(_NO_WEIGHT_DECAY)
        # L -> (K, its leaf) while `kernels_once_per_batch` is active; None otherwise
        self._shared: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None

    def _apply(self, fn, recurse=True):
        # nn.Module.to(real dtype) would cast the complex B to a real tensor and silently
        # drop its imaginary part. Convert B through its real view instead, so that
        # .to(torch.float64) gives complex128, .to(device) keeps complex64, etc.
        def keep_complex(t: torch.Tensor) -> torch.Tensor:
            if not t.is_complex():
                return fn(t)
            out = fn(torch.view_as_real(t))
            if out.is_complex():  # fn converts to a complex dtype: apply it to B directly
                return fn(t)
            return torch.view_as_complex(out.contiguous())

        return super()._apply(keep_complex, recurse)

    def discretize(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns (dtA, A, W, C): dtA = ΛΔ (H, N/2); Λ (H, N/2); W = C·B̄ (H, N/2); C."""
        dt = torch.exp(self.log_dt)  # (H)
        A = torch.complex(-torch.exp(self.log_A_real), self.A_imag)  # (H, N/2)
        C = torch.view_as_complex(self.C)  # (H, N/2)
        dtA = A * dt.unsqueeze(-1)  # (H, N/2)
        if self.b_scales_step:
            dtA = dtA * self.B  # per-mode step Δ·B
            B_bar = (torch.exp(dtA) - 1.0) / A  # (H, N/2)
        else:
            B_bar = (torch.exp(dtA) - 1.0) / A * self.B  # (H, N/2)
        return dtA, A, C * B_bar, C

    def vandermonde(self, L: int) -> torch.Tensor:
        """Kernel K (H, L) from the plain Vandermonde matrix exp(ΛΔ·l), l = 0..L-1.

        The textbook form (as in the reference s4d.py); it evaluates H·N/2·L complex
        exponentials. ``forward`` computes the same numbers faster.
        """
        dtA, _, W, _ = self.discretize()  # (H, N/2), (H, N/2)
        pos = torch.arange(L, device=dtA.device, dtype=dtA.real.dtype)  # (L)
        vander = torch.exp(dtA.unsqueeze(-1) * pos)  # (H, N/2, L) = Ā^l
        return 2 * torch.einsum("hn,hnl->hl", W, vander).real  # (H, L)

    def forward(self, L: int) -> torch.Tensor:
        """Kernel K (H, L) (``factorised``); inside `kernels_once_per_batch` computed once
        per length and reused, its uses' gradients gathered on one leaf."""
        if self._shared is not None and torch.is_grad_enabled():
            if L not in self._shared:
                k = self.factorised(L)
                self._shared[L] = (k, k.detach().requires_grad_(True))
            return self._shared[L][1]
        return self.factorised(L)

    def factorised(self, L: int) -> torch.Tensor:
        """Kernel K (H, L) via a factorised Vandermonde matrix (no loop over L).

        Write l = m·i + j with m = ceil(sqrt(L)), 0 <= j < m, 0 <= i < q = ceil(L/m). Then
        Ā^l = Ā^{m i} Ā^j and K[h, m i + j] = 2 Re Σ_n (W_n Ā_n^{m i}) Ā_n^j, a batched
        (q x N/2) @ (N/2 x m) product per channel. Only H·N/2·(m + q) ≈ 2 H·N/2·sqrt(L)
        exponentials are needed instead of H·N/2·L, and the contraction is one real batched
        matmul, using Re(x y) = Re x Re y − Im x Im y. The exponentials are taken in polar
        form, e^{a + ib} = e^a (cos b + i sin b) (``torch.polar``): PyTorch's complex exp is
        not vectorised on CPU (4-5x slower for the same numbers, up to float rounding).
        Equal to ``vandermonde`` up to float rounding; 10-60x faster forward+backward on
        CPU for L = 1e3..1e4.
        """
        dtA, _, W, _ = self.discretize()  # (H, N/2), (H, N/2)
        H = dtA.size(0)
        m = math.isqrt(L - 1) + 1 if L > 1 else 1  # ceil(sqrt(L))
        q = -(-L // m)  # ceil(L / m), so m*q >= L
        real = dtA.real.dtype
        j = torch.arange(m, device=dtA.device, dtype=real)  # (m)
        i = m * torch.arange(q, device=dtA.device, dtype=real)  # (q)
        rate, turn = dtA.real.unsqueeze(-1), dtA.imag.unsqueeze(-1)  # (H, N/2, 1)
        lo = torch.polar(torch.exp(rate * j), turn * j)  # (H, N/2, m)  Ā^j
        hi = W.unsqueeze(-1) * torch.polar(torch.exp(rate * i), turn * i)  # (H, N/2, q)  W Ā^{m i}
        hi = hi.transpose(-1, -2)  # (H, q, N/2)
        x = torch.cat([hi.real, -hi.imag], dim=-1)  # (H, q, N)
        y = torch.cat([lo.real, lo.imag], dim=-2)  # (H, N, m)
        k = 2 * torch.matmul(x, y)  # (H, q, m): K[h, m i + j]
        return k.reshape(H, q * m)[:, :L]  # (H, L)


class CausalFFTConv(torch.autograd.Function):
    """y = K * u, causal: y[b, h, t] = Σ_{s <= t} K[h, s] u[b, h, t − s], through FFTs of
    length 2L (zero padding makes the circular convolution a linear one).

    Autograd's own backward of rfft → product → irfft transforms the zero-padded inputs
    back with full complex FFTs and pads and slices in between; the gradients are two
    more causal correlations, so they are written out here (same transforms, same
    rounding class):  with G = rfft(g, 2L), U = rfft(u, 2L), K̂ = rfft(K, 2L),

        ∂u = irfft(G · conj K̂)[:L],   ∂K = irfft(Σ_b G · conj U)[:L]

    (the wrapped-around half lands in the zero padding, so both are exact). The batch
    sum of ∂K is taken before its inverse FFT: one (H, 2L) transform, not B. Saves U and
    K̂, as autograd's product would. u (B, H, L), K (H, L) -> y (B, H, L); with
    ``channels_last`` u, y and their gradients are (B, L, H), contiguous: the copy that
    takes the first L of the 2L-long inverse transform makes the layout at no extra cost,
    and every elementwise op after it (GELU's backward ~8x slower on a strided tensor on
    CPU) and the GLU's matmul read contiguous memory.
    """

    @staticmethod
    def forward(ctx, u: torch.Tensor, k: torch.Tensor, channels_last: bool = False):
        L = k.size(-1)
        u_f = torch.fft.rfft(u.transpose(1, 2) if channels_last else u, n=2 * L)  # (B, H, L+1)
        k_f = torch.fft.rfft(k, n=2 * L)  # (H, L+1)
        ctx.save_for_backward(u_f, k_f)
        ctx.channels_last = channels_last
        return _first_half(torch.fft.irfft(u_f * k_f, n=2 * L), L, channels_last)

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        u_f, k_f = ctx.saved_tensors
        L = k_f.size(-1) - 1
        g_f = torch.fft.rfft(g.transpose(1, 2) if ctx.channels_last else g, n=2 * L)
        grad_u = grad_k = None
        if ctx.needs_input_grad[0]:
            grad_u = _first_half(torch.fft.irfft(g_f * k_f.conj(), n=2 * L), L, ctx.channels_last)
        if ctx.needs_input_grad[1]:
            cross = (g_f * u_f.conj()).sum(0)  # (H, L+1): Σ_b G conj U (an einsum copies here)
            grad_k = torch.fft.irfft(cross, n=2 * L)[..., :L]  # (H, L)
        return grad_u, grad_k, None


def _first_half(y: torch.Tensor, L: int, channels_last: bool) -> torch.Tensor:
    """The first L steps of a (B, H, 2L) result, contiguous as (B, L, H) or (B, H, L)."""
    y = y[..., :L]
    return (y.transpose(1, 2) if channels_last else y).contiguous()


@contextlib.contextmanager
def kernels_once_per_batch(model: nn.Module) -> Iterator[None]:
    """While active, each `S4DKernel` of ``model`` computes K once per length for all the
    forward passes (a batch's micro-batches, ``ssmbench.train.micro_batches``): they read
    one leaf tensor, their gradients add up on it, and on leaving, the kernel's own
    backward runs once with that sum. The same gradient as K computed per pass, without
    repeating its work; a no-op for a model without S4D kernels."""
    kernels = [m for m in model.modules() if isinstance(m, S4DKernel)]
    for kernel in kernels:
        kernel._shared = {}
    try:
        yield
        roots, grads = [], []
        for kernel in kernels:
            for k, leaf in kernel._shared.values():
                if leaf.grad is not None:
                    roots.append(k)
                    grads.append(leaf.grad)
        if roots:
            torch.autograd.backward(roots, grads)
    finally:
        for kernel in kernels:
            kernel._shared = None


class ChannelDropout(nn.Module):
    """Dropout of whole channels of a (B, H, L) tensor: each (sample, channel) is kept with
    probability 1 − p at every step or zeroed at every step; kept ones are scaled by
    1 / (1 − p). The identity in eval mode."""

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: torch.Tensor, channels_last: bool = False) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        # (B, H, 1), or (B, 1, H) for a (B, L, H) tensor: the same draws either way
        keep = torch.empty(x.shape[0], x.shape[2 if channels_last else 1], 1,
                           device=x.device, dtype=x.dtype).bernoulli_(1.0 - self.p)  # fmt: skip
        keep = keep.transpose(1, 2) if channels_last else keep
        return x * keep / (1.0 - self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class S4DLayer(nn.Module):
    """One S4D block: y = GELU(K * u + D u), then channel dropout. Input and output
    (B, H, L), or (B, L, H) with ``channels_last`` (MS4's residual stream's layout).

    ``plain = True`` (an attribute, for tests and benchmarks) computes it as the
    reference composes it: ``ssm_plain`` on the (B, H, L) layout."""

    def __init__(
        self,
        d_model: int,
        d_state: int = 64,
        dropout: float = 0.0,
        b_scales_step: bool = False,
        channels_last: bool = False,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.d_state = d_state
        self.channels_last = channels_last
        self.plain = False
        self.kernel = S4DKernel(d_model, d_state, b_scales_step=b_scales_step)
        self.D = nn.Parameter(torch.randn(d_model))  # (H) skip connection
        self.activation = nn.GELU()
        self.dropout = ChannelDropout(dropout) if dropout > 0 else nn.Identity()

    def ssm(self, u: torch.Tensor, channels_last: bool = False) -> torch.Tensor:
        """The linear part: causal convolution with K plus D u. (B, H, L) -> (B, H, L), or
        (B, L, H) -> (B, L, H) with ``channels_last``.

        D u is the convolution with D·δ, so it is folded into the kernel's first tap and
        the convolution runs as `CausalFFTConv` (its backward written out: see there).
        ``ssm_plain`` is the same arithmetic step by step through autograd."""
        L = u.size(1 if channels_last else -1)
        k = self.kernel(L)  # (H, L)
        k = torch.cat([k[:, :1] + self.D.unsqueeze(-1), k[:, 1:]], dim=-1)  # K + D δ
        return CausalFFTConv.apply(u, k, channels_last)

    def ssm_plain(self, u: torch.Tensor) -> torch.Tensor:
        """``ssm`` as autograd composes it (FFT, product, inverse FFT, then + D u): the
        reference the tests hold ``ssm`` to, and bench_kernel's anchors' path."""
        L = u.size(-1)
        k = self.kernel(L)  # (H, L)
        k_f = torch.fft.rfft(k, n=2 * L)  # (H, L+1); zero padding to 2L = linear conv
        u_f = torch.fft.rfft(u, n=2 * L)  # (B, H, L+1)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]  # (B, H, L)
        return y + u * self.D.unsqueeze(-1)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        if self.plain:  # the reference's composition, on its (B, H, L) layout
            cl = self.channels_last
            y = self._dropout(
                self.activation(self.ssm_plain(u.transpose(1, 2) if cl else u)), False
            )
            return y.transpose(1, 2) if cl else y
        return self._dropout(self.activation(self.ssm(u, self.channels_last)), self.channels_last)

    def _dropout(self, y: torch.Tensor, channels_last: bool) -> torch.Tensor:
        if isinstance(self.dropout, nn.Identity):
            return y
        return self.dropout(y, channels_last)

    # --- streaming (inference): the same discretisation as the kernel, one step at a time
    def step_coefficients(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(Ā, W) (H, N/2) of ``discretize``: K[h, l] = 2 Re Σ_n W_n Ā_n^l, so the state
        g_k = Ā g_{k-1} + u_k gives y_k = 2 Re Σ_n W_n g_{k,n} = (K * u)_k exactly."""
        dtA, _, W, _ = self.kernel.discretize()
        return torch.exp(dtA), W

    def initial_state(self, batch: int, device=None) -> torch.Tensor:
        """g_{-1} = 0: (B, H, N/2) complex, O(H·N) per row whatever the length."""
        A_bar, _ = self.step_coefficients()
        return torch.zeros(batch, *A_bar.shape, dtype=A_bar.dtype, device=device or A_bar.device)

    def step(
        self,
        u_t: torch.Tensor,
        state: torch.Tensor,
        coefficients: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of ``forward`` in evaluation mode: u_t (B, H) -> (y_t (B, H), state),
        y_t = GELU(2 Re Σ_n W_n g_{t,n} + D u_t), g_t = Ā g_{t-1} + u_t. ``coefficients``:
        ``step_coefficients()`` computed once for a stream (the weights do not change)."""
        if self.training and not isinstance(self.dropout, nn.Identity):
            raise RuntimeError("S4DLayer.step is for inference: call .eval() first (dropout)")
        A_bar, W = coefficients if coefficients is not None else self.step_coefficients()
        state = A_bar * state + u_t.unsqueeze(-1)  # (B, H, N/2)
        y = 2 * (W * state).sum(-1).real + self.D * u_t  # (B, H)
        return self.activation(y), state
