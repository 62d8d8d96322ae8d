"""The scans of the Mamba mixers (``mamba.py``): a parallel linear scan, Mamba1's selective
scan and Mamba2's chunked SSD, each with a step-by-step recurrence the tests compare it with,
and the optional fused mamba_ssm kernels.

Sources
-------
* Gu & Dao (2023), "Mamba: Linear-Time Sequence Modeling with Selective State Spaces" and
  Dao & Gu (2024), "Transformers are SSMs"; repository https://github.com/state-spaces/mamba:
  ``mamba_ssm/ops/selective_scan_interface.py`` (``selective_scan_ref``: the recurrence),
  ``mamba_ssm/modules/ssd_minimal.py`` (the chunked SSD algorithm, the paper's Listing 1),
  ``mamba_ssm/ops/triton/ssd_combined.py`` (``mamba_chunk_scan_combined``, the fused kernel
  used on CUDA). The facts were taken from these sources; the code is written here.
* Parallel prefix scan: Blelloch (1990), "Prefix sums and their applications" (CMU-CS-90-190):
  the linear recurrence h_t = a_t h_{t-1} + b_t is a scan under the associative operator
  (a1, b1) . (a2, b2) = (a2 a1, a2 b1 + b2), computed here by the work-efficient recursive
  odd-even form (``linear_scan``).

Choices
-------
* Pure PyTorch scans (``selective_scan``, ``ssd_scan``) are used on CPU, on the meta device
  and on CUDA when ``mamba_ssm`` is not importable; with ``mamba_ssm`` and CUDA tensors the
  fused ``selective_scan_fn`` / ``mamba_chunk_scan_combined`` replace only the scan (the
  projections, convolution and gated norm stay in PyTorch; the reference fuses them too,
  same arithmetic). Set ``use_fused = False`` on a mixer to force the pure path.
* ``selective_scan``, three methods; ``auto`` takes the fused one on the CPU and the
  parallel one elsewhere (on a GPU, L small kernels a layer cost more than log2(T) large
  ones).

  - ``fused``: numba kernels for the forward and the backward pass (``mamba_cpu_scan``):
    per (row, channel) a single pass over time with the N states in a local buffer, the
    D skip and the SiLU(z) gate within, the state kept every ``chunk_size`` steps and
    recomputed chunk by chunk in the backward, in the closed form of the stepwise method.
    Its forward and backward at (b 16, E 128, L 1,000, N 64) on one thread take about
    1/17 of the stepwise method's CPU time (``benchmarks/bench_scan_bound.py``). Inputs it
    does not take (numba not importable, a dtype other than float32 / float64, a tensor
    off the CPU, other shapes, a D or z that broadcasts) run the stepwise method instead,
    with one log line per reason (``numba_runtime.fallback``): the answer is the
    reference's, never an error of the kernel's.

  The two PyTorch methods, the references, go by chunks of ``chunk_size`` steps (default
  64) and time-first, (T, b, E, N), so that each step touches one contiguous block:

  - ``stepwise``: one in-place multiply-add per step over the whole (b, E, N) state, and a
    closed-form backward (an autograd Function): a chunk's states are recomputed from the
    state entering it (the only states kept), then the adjoint g_t = ∂l/∂h_t =
    dy_t C_t + exp(Δ_{t+1} A) g_{t+1} runs backwards through the chunk, and every gradient
    follows from g_t and h_{t-1} by a product or a sum over E or N. About 19 passes over
    a chunk's (T, b, E, N) numbers per forward and backward; with 1 thread of a CPU
    a training step is 3.8x faster than with the parallel method at (B 64, C 3, L 1,000)
    and 2.2x at Mamba1-logncde's MotorImagery shape (``benchmarks/bench_selective_step.py``).
  - ``parallel``: each chunk is one parallel scan (``linear_scan``: log2(T) levels of
    vectorised ops, O(T) work, every intermediate a product of decays <= 1, so no overflow)
    with the previous chunk's last state folded into its first element; chunks follow one
    another (L / T Python iterations, not L). When gradients are needed each chunk runs
    under ``torch.utils.checkpoint`` (recomputed in the backward pass), so memory holds one
    chunk's (T, b, E, N) states instead of the (b, E, L, N) of ``selective_scan_ref``.
* ``ssd_scan``: the SSD chunked algorithm of ``ssd_minimal.py`` for all chunks at once, with
  two changes: (a) within a chunk the decay exp(sum_{s<r<=t} a_r) is formed from the
  difference of cumulative sums, as the Triton kernel ``ssd_chunk_scan.py`` does (the
  minimal version's repeated masked cumsum needs a (T, T) copy per element; both are exact
  in exact arithmetic), and (b) the inter-chunk recurrence is the parallel ``linear_scan``
  over chunks instead of the (c+1) x (c+1) decay matrix (O(c) instead of O(c^2) work, which
  matters for AudioMNIST's 750 chunks). ``ngroups`` > 1 assigns heads to groups as the
  reference does (head i uses group i // (h / g)); the minimal version supports g = 1 only.
  The fused kernel uses the same ``chunk_size`` (default 64; the reference default is 256,
  the chunk size changes float rounding only).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from . import numba_runtime

#: ``selective_scan``'s methods (``auto``: fused on the CPU, parallel elsewhere)
SCAN_METHODS = ("auto", "fused", "stepwise", "parallel")
#: the fused CPU kernel's name in ``numba_runtime.fallback``'s log line
FUSED_CPU_KERNEL = "Mamba1's fused CPU scan (mamba_cpu_scan)"

__all__ = [
    "SCAN_METHODS",
    "fused_available",
    "fused_chunk_scan",
    "fused_selective_scan",
    "linear_scan",
    "resolve_method",
    "scan_method_for",
    "selective_scan",
    "selective_scan_recurrence",
    "ssd_recurrence",
    "ssd_scan",
]


@functools.cache
def fused_selective_scan():
    """mamba_ssm's CUDA ``selective_scan_fn``, or None when mamba_ssm is not importable."""
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except Exception:  # ImportError, or a broken CUDA extension
        return None
    return selective_scan_fn


@functools.cache
def fused_chunk_scan():
    """mamba_ssm's Triton ``mamba_chunk_scan_combined``, or None when not importable."""
    try:
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except Exception:
        return None
    return mamba_chunk_scan_combined


def fused_available() -> bool:
    """Whether both fused mamba_ssm kernels can be imported (they also need CUDA tensors)."""
    return fused_selective_scan() is not None and fused_chunk_scan() is not None


def resolve_method(method: str, device: torch.device) -> str:
    """``selective_scan``'s method on ``device``: ``method``, or for ``auto`` fused on the
    CPU and parallel elsewhere (module docstring)."""
    if method not in SCAN_METHODS:
        raise ValueError(f"method must be one of {list(SCAN_METHODS)}, got {method!r}")
    if method == "auto":
        return "fused" if device.type == "cpu" else "parallel"
    return method


def _fused_refusal(*tensors: torch.Tensor | None) -> str | None:
    """Why the fused CPU kernel does not take ``selective_scan``'s tensors u, delta, A, B,
    C, D, z, delta_bias (None: not given); None when it does."""
    missing = numba_runtime.numba_missing()
    if missing is not None:
        return missing
    from . import mamba_cpu_scan  # imports numba: only once it is known to import

    return mamba_cpu_scan.refusal(*tensors)


def scan_method_for(
    method: str,
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
) -> str:
    """The method ``selective_scan`` runs for these inputs: ``resolve_method``'s, except
    that ``fused`` gives way to ``stepwise`` where the kernel does not take them (logged
    once per reason: ``numba_runtime.fallback``)."""
    method = resolve_method(method, u.device)
    if method == "fused":
        reason = _fused_refusal(u, delta, A, B, C, D, z, delta_bias)
        if reason is not None:
            numba_runtime.fallback(FUSED_CPU_KERNEL, reason)
            return "stepwise"
    return method


# --- scans -----------------------------------------------------------------------------------


def _scan_dim0(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``linear_scan`` along dim 0 (odd-even recursion; see ``linear_scan``)."""
    T = b.size(0)
    if T == 1:
        return b
    m = T // 2
    a_even, a_odd = a[0 : 2 * m : 2], a[1 : 2 * m : 2]
    # steps 2k and 2k+1 composed: h_{2k+1} = (a_{2k+1} a_{2k}) h_{2k-1}
    #                                         + (a_{2k+1} b_{2k} + b_{2k+1})
    h_odd = _scan_dim0(a_odd * a_even, torch.addcmul(b[1 : 2 * m : 2], a_odd, b[0 : 2 * m : 2]))
    # h_0 = b_0 and h_{2k} = a_{2k} h_{2k-1} + b_{2k}
    h_even = torch.cat([b[:1], torch.addcmul(b[2::2], a[2::2], h_odd[: (T - 1) // 2])])
    pairs = torch.stack([h_even[:m], h_odd], dim=1).flatten(0, 1)  # h_0, h_1, ..., h_{2m-1}
    return pairs if T % 2 == 0 else torch.cat([pairs, h_even[m:]])


def linear_scan(a: torch.Tensor, b: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """All states of h_t = a_t h_{t-1} + b_t, h_{-1} = 0, along axis ``dim`` (a parallel scan).

    ``a`` broadcasts against ``b`` except on the scanned axis, where both have T entries.
    Work-efficient scan in the recursive odd-even form of Blelloch's algorithm: compose
    neighbouring steps pairwise, (a1, b1) . (a2, b2) = (a2 a1, a2 b1 + b2), scan the
    half-length sequence recursively (its results are the states at odd positions), then
    fill in the even positions with one more step. log2(T) levels of vectorised ops and
    O(T) work (a Hillis-Steele scan does O(T log T) and ran ~10x slower on CPU). Every
    product of ``a`` factors is formed by multiplication, so decays in [0, 1] never
    overflow. Exact up to float rounding (the tests compare it with the loop).
    """
    if dim in (0, -b.dim()):
        return _scan_dim0(a, b)
    return _scan_dim0(a.movedim(dim, 0), b.movedim(dim, 0)).movedim(0, dim)


def _selective_scan_chunk(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    h0: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk of the selective scan, time first: u, delta (T, b, E); A (E, N);
    B, C (T, b, N); h0 (b, E, N) the state before the chunk. Returns y (T, b, E) and the
    state after the chunk's last step."""
    dA = torch.exp(delta.unsqueeze(-1) * A)  # (T, b, E, N)
    dBu = (delta * u).unsqueeze(-1) * B.unsqueeze(2)  # (T, b, E, N)
    first = torch.addcmul(dBu[:1], dA[:1], h0)  # fold h0 into step 0
    h = linear_scan(dA, torch.cat([first, dBu[1:]]), dim=0)  # (T, b, E, N)
    y = torch.matmul(h, C.unsqueeze(-1)).squeeze(-1)  # (T, b, E): <C_t, h_t>
    return y, h[-1]


class _StepwiseSelectiveScan(torch.autograd.Function):
    """y_t = <C_t, h_t>, h_t = exp(Δ_t A) h_{t-1} + Δ_t u_t B_t, time first: u, Δ (L, b, E);
    A (E, N); B, C (L, b, N) -> y (L, b, E). By chunks of ``steps`` steps, each step one
    in-place op on a contiguous (b, E, N) block; keeps only the inputs and the state entering
    each chunk, and recomputes a chunk's states in the backward (module docstring)."""

    @staticmethod
    def _states(u, delta, A, B, h_in):
        # a chunk's decays (T, b, E, N) and states, from the state before it h_in (b, E, N)
        dA = torch.exp(delta.unsqueeze(-1) * A)
        h = (delta * u).unsqueeze(-1) * B.unsqueeze(2)  # Δ u B, scanned in place into h
        h[0].addcmul_(dA[0], h_in)
        for t in range(1, h.size(0)):
            h[t].addcmul_(dA[t], h[t - 1])
        return dA, h

    @staticmethod
    def forward(ctx, u, delta, A, B, C, steps):
        L, b, E = u.shape
        chunks = [slice(s, min(s + steps, L)) for s in range(0, L, steps)]
        entering = u.new_empty(len(chunks), b, E, A.size(-1))  # (n, b, E, N)
        y = u.new_empty(L, b, E)
        h_in = u.new_zeros(b, E, A.size(-1))
        for k, c in enumerate(chunks):
            entering[k] = h_in
            _, h = _StepwiseSelectiveScan._states(u[c], delta[c], A, B[c], h_in)
            y[c] = torch.matmul(h, C[c].unsqueeze(-1)).squeeze(-1)  # <C_t, h_t>
            h_in = h[-1]
        ctx.chunks = chunks
        ctx.save_for_backward(u, delta, A, B, C, entering)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        # g_t = ∂l/∂h_t = dy_t C_t + exp(Δ_{t+1} A) g_{t+1}; then ∂l/∂(Δu B)_t = g_t and
        # ∂l/∂exp(Δ_t A) = g_t h_{t-1}, whence Δ, A, u, B; ∂l/∂C_t = Σ_E dy_t h_t
        u, delta, A, B, C, entering = ctx.saved_tensors
        grad_y = grad_y.contiguous()
        grad_u, grad_delta = torch.empty_like(u), torch.empty_like(delta)
        grad_B, grad_C, grad_A = torch.empty_like(B), torch.empty_like(C), torch.zeros_like(A)
        carry = None  # exp(Δ A) g at the first step of the later chunk
        for k in range(len(ctx.chunks) - 1, -1, -1):
            c, h_in = ctx.chunks[k], entering[k]
            dA, h = _StepwiseSelectiveScan._states(u[c], delta[c], A, B[c], h_in)
            dy = grad_y[c]
            grad_C[c] = torch.matmul(dy.unsqueeze(-2), h).squeeze(-2)  # (T, b, N)
            g = dy.unsqueeze(-1) * C[c].unsqueeze(2)  # (T, b, E, N)
            if carry is not None:
                g[-1] += carry
            for t in range(g.size(0) - 2, -1, -1):
                g[t].addcmul_(dA[t + 1], g[t + 1])
            carry = dA[0] * g[0]
            du = delta[c] * u[c]
            grad_du = torch.matmul(g, B[c].unsqueeze(-1)).squeeze(-1)  # (T, b, E)
            grad_B[c] = torch.matmul(du.unsqueeze(-2), g).squeeze(-2)  # (T, b, N)
            # q = g_t h_{t-1} exp(Δ_t A), in dA's memory: ∂l/∂(Δ_t A)
            q = dA
            q[1:].mul_(h[:-1])
            q[0].mul_(h_in)
            q.mul_(g)
            grad_A += torch.einsum("tben,tbe->en", q, delta[c])
            grad_delta[c] = q.mul_(A).sum(-1) + grad_du * u[c]
            grad_u[c] = grad_du * delta[c]
        return grad_u, grad_delta, grad_A, grad_B, grad_C, None


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
    chunk_size: int = 64,
    method: str = "auto",
) -> torch.Tensor:
    """Mamba1's selective scan (the semantics of mamba_ssm's ``selective_scan_ref``).

    u, delta: (b, E, L); A: (E, N); B, C: (b, N, L); D: (E); z: (b, E, L); delta_bias: (E).
    Returns (b, E, L): y_t = <C_t, h_t> + D u_t, times SiLU(z_t) when z is given, where
    h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t. ``method``: ``fused`` (the numba
    kernel of ``mamba_cpu_scan``, the state kept every ``chunk_size`` steps; the stepwise
    method where it does not take the inputs), ``stepwise`` (chunks of ``chunk_size``
    steps, one in-place op per step, a closed-form backward), ``parallel`` (a parallel
    scan per chunk, checkpointed) or ``auto``: fused on the CPU, parallel elsewhere
    (module docstring).
    """
    method = scan_method_for(method, u, delta, A, B, C, D, z, delta_bias)
    if delta_bias is not None:
        delta = delta + delta_bias.unsqueeze(-1)
    if delta_softplus:
        delta = F.softplus(delta)
    if method == "fused":  # the D skip and the gate within the kernel
        from . import mamba_cpu_scan

        return mamba_cpu_scan.selective_scan(u, delta, A, B, C, D, z, chunk_size)
    # time-first copies (L, b, .) so that every step of the scan is one contiguous block
    u_t, delta_t = u.permute(2, 0, 1).contiguous(), delta.permute(2, 0, 1).contiguous()
    B_t, C_t = B.permute(2, 0, 1).contiguous(), C.permute(2, 0, 1).contiguous()
    if method == "stepwise":
        y = _StepwiseSelectiveScan.apply(u_t, delta_t, A.contiguous(), B_t, C_t, chunk_size)
    else:
        y = _parallel_selective_scan(u_t, delta_t, A, B_t, C_t, chunk_size)
    y = y.permute(1, 2, 0)  # (b, E, L)
    if D is not None:
        y = y + u * D.unsqueeze(-1)
    if z is not None:
        y = y * F.silu(z)
    return y


def _parallel_selective_scan(u_t, delta_t, A, B_t, C_t, chunk_size: int) -> torch.Tensor:
    """``selective_scan``'s parallel method on time-first inputs -> y (L, b, E)."""
    L, bsz, d_inner = u_t.shape
    h = u_t.new_zeros(bsz, d_inner, A.size(-1))  # (b, E, N)
    save_memory = torch.is_grad_enabled() and any(
        t.requires_grad for t in (u_t, delta_t, A, B_t, C_t)
    )
    # On the meta device (shapes only, e.g. complexity.mmac) one chunk costs no memory.
    step = L if u_t.device.type == "meta" else chunk_size
    ys = []
    for start in range(0, L, step):
        stop = min(start + step, L)
        args = (u_t[start:stop], delta_t[start:stop], A, B_t[start:stop], C_t[start:stop], h)
        if save_memory:
            y, h = checkpoint(_selective_scan_chunk, *args, use_reentrant=False)
        else:
            y, h = _selective_scan_chunk(*args)
        ys.append(y)
    return torch.cat(ys) if len(ys) > 1 else ys[0]


def selective_scan_recurrence(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
) -> torch.Tensor:
    """Step-by-step (Python loop over time) evaluation of ``selective_scan``: the tests'
    independent reference. Same arguments and shapes."""
    if delta_bias is not None:
        delta = delta + delta_bias.unsqueeze(-1)
    if delta_softplus:
        delta = F.softplus(delta)
    bsz, d_inner, L = u.shape
    h = u.new_zeros(bsz, d_inner, A.size(-1))  # (b, E, N)
    ys = []
    for t in range(L):
        dA = torch.exp(delta[..., t, None] * A)  # (b, E, N)
        h = dA * h + (delta[..., t] * u[..., t]).unsqueeze(-1) * B[:, None, :, t]
        ys.append((h * C[:, None, :, t]).sum(-1))  # (b, E)
    y = torch.stack(ys, dim=-1)
    if D is not None:
        y = y + u * D.unsqueeze(-1)
    if z is not None:
        y = y * F.silu(z)
    return y


def ssd_scan(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> torch.Tensor:
    """Mamba2's SSD by chunks (the semantics of mamba_ssm's ``mamba_chunk_scan_combined`` with
    dt already positive, i.e. after softplus(dt + dt_bias)).

    x: (b, L, h, P); dt: (b, L, h); A: (h) (negative); B, C: (b, L, g, N); D: (h).
    Returns y (b, L, h, P): per head H_t = exp(dt_t A) H_{t-1} + dt_t x_t B_t^T,
    y_t = H_t C_t + D x_t.
    """
    b, L, h, P = x.shape
    g, N = B.shape[-2:]
    r = h // g  # heads per group
    T = min(chunk_size, L)
    c = -(-L // T)
    pad = c * T - L
    xs, dts, Bs, Cs = x, dt, B, C
    if pad:  # dt = 0 and x = 0 on the padding: no decay, no input; outputs sliced off
        xs, dts, Bs, Cs = (F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) for t in (x, dt, B, C))
    xc = xs.reshape(b, c, T, g, r, P)
    dtc = dts.reshape(b, c, T, g, r)
    Bc = Bs.reshape(b, c, T, g, N)
    Cc = Cs.reshape(b, c, T, g, N)

    a = (dtc * A.reshape(g, r)).permute(0, 3, 4, 1, 2)  # (b, g, r, c, T) log-decay per step
    a_cs = torch.cumsum(a, dim=-1)  # (b, g, r, c, T)
    xdt = xc * dtc.unsqueeze(-1)  # (b, c, T, g, r, P)

    # 1. within chunks: y_t += sum_{s<=t} (C_t . B_s) exp(a_cs[t] - a_cs[s]) dt_s x_s
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    seg = (a_cs.unsqueeze(-1) - a_cs.unsqueeze(-2)).masked_fill(~causal, -math.inf)
    decay = torch.exp(seg)  # (b, g, r, c, T(t), T(s)), zero above the diagonal
    CB = torch.einsum("bctgn,bcsgn->bgcts", Cc, Bc)  # (b, g, c, T, T)
    scores = decay * CB.unsqueeze(2)  # (b, g, r, c, T, T)
    y_diag = torch.einsum("bgrcts,bcsgrp->bctgrp", scores, xdt)

    # 2. each chunk's contribution to the state at its end
    decay_to_end = torch.exp(a_cs[..., -1:] - a_cs)  # (b, g, r, c, T)
    states = torch.einsum("bctgn,bgrct,bctgrp->bgrpnc", Bc, decay_to_end, xdt)

    # 3. state passing across chunks: H_end[c] = exp(a_total[c]) H_end[c-1] + states[c]
    chunk_decay = torch.exp(a_cs[..., -1])[:, :, :, None, None, :]  # (b, g, r, 1, 1, c)
    h_end = linear_scan(chunk_decay, states, dim=-1)  # (b, g, r, P, N, c)
    h_start = torch.cat([torch.zeros_like(h_end[..., :1]), h_end[..., :-1]], dim=-1)

    # 4. state at the chunk start -> outputs: y_t += exp(a_cs[t]) C_t . H_start
    y_off = torch.einsum("bctgn,bgrpnc,bgrct->bctgrp", Cc, h_start, torch.exp(a_cs))

    y = (y_diag + y_off).reshape(b, c * T, h, P)[:, :L]
    if D is not None:
        y = y + x * D.reshape(h, 1)
    return y


def ssd_recurrence(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
) -> torch.Tensor:
    """Step-by-step evaluation of ``ssd_scan`` (the tests' reference). Same shapes."""
    b, L, h, P = x.shape
    g, N = B.shape[-2:]
    Bh = B.repeat_interleave(h // g, dim=2)  # (b, L, h, N)
    Ch = C.repeat_interleave(h // g, dim=2)
    H = x.new_zeros(b, h, P, N)
    ys = []
    for t in range(L):
        dA = torch.exp(dt[:, t] * A)[..., None, None]  # (b, h, 1, 1)
        H = dA * H + (dt[:, t, :, None] * x[:, t]).unsqueeze(-1) * Bh[:, t, :, None, :]
        ys.append((H * Ch[:, t, :, None, :]).sum(-1))  # (b, h, P)
    y = torch.stack(ys, dim=1)
    if D is not None:
        y = y + x * D.reshape(h, 1)
    return y
