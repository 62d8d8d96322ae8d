"""Mamba1's selective scan as one fused CPU kernel (numba): the ``fused`` method of
``mamba_scan.selective_scan``, the CPU's choice.

What it computes
----------------
u, Δ (b, E, L); A (E, N); B, C (b, L, N); D (E) and z (b, E, L), each optional ->
y (b, E, L), and in the backward pass the gradients of all seven:

    h_t = exp(Δ_t A) ⊙ h_{t-1} + Δ_t u_t B_t,   h_{-1} = 0        (state (b, E, N))
    y_t = (<C_t, h_t> + D u_t) · SiLU(z_t)

Δ is taken after its bias and softplus, which stay in ``mamba_scan.selective_scan`` as
PyTorch ops (vectorised there; a scalar log1p per step here would cost more than the
pass it saves).

Sources
-------
Gu & Dao (2023), "Mamba: Linear-Time Sequence Modeling with Selective State Spaces",
arXiv:2312.00752, and https://github.com/state-spaces/mamba,
``mamba_ssm/ops/selective_scan_interface.py`` (``selective_scan_ref``: the recurrence and
its layouts). The facts were taken from these; the code is written here. The exponential
is Cephes' ``expf`` (S. L. Moshier, Cephes Math Library: Cody-Waite reduction by ln 2 and
a degree-5 polynomial), written here for vectors.

Kernels
-------
* Forward (``_forward``): one pass per (row b, channel e), ``prange`` over the b·E pairs,
  the N states in a local buffer; per step one loop over N (contiguous: vectorised) forms
  exp(Δ_t A_e), the update and the dot with C_t; then the D skip and the gate along the
  row (vectorised over t). With gradients it writes the state entering every chunk of
  ``chunk`` steps, (b, E, L / chunk, N): the only states kept, and with z the gate's
  input (b, E, L).
* Gate (``_gate_backward``): per row, the gradient through SiLU(z) and the D skip:
  ∂l/∂z_t = dy_t y'_t SiLU'(z_t), the gradient reaching the scan dy_t SiLU(z_t), and
  Σ_t of it times u_t per (b, e) for ∂l/∂D.
* Backward (``_backward``): per row b and group of channels (``prange`` over them), chunks
  from last to first; per channel, the chunk's states are recomputed from the kept one
  into a (chunk + 1, N) buffer with their decays, then the adjoint
  g_t = ∂l/∂h_t = dy_t C_t + exp(Δ_{t+1} A) g_{t+1} runs backwards through the chunk and
  every gradient follows from g_t and h_{t-1}: ∂l/∂C_t = Σ_e dy_t h_t,
  ∂l/∂B_t = Σ_e Δ_t u_t g_t, s_t = <g_t, B_t>, ∂l/∂u_t = Δ_t s_t + D dy_t, with
  q_t = g_t ⊙ h_{t-1} ⊙ exp(Δ_t A): ∂l/∂A = Σ_{b,t} Δ_t q_t, ∂l/∂Δ_t = <q_t, A> + u_t s_t.
  The carried g (times the decay) goes from one chunk to the one before it.
* Deterministic: no sum depends on the threads. ∂l/∂B and ∂l/∂C (sums over E) are summed
  channel after channel within a group into the group's own (b, L, N) partial, the
  groups' partials then in group order; ∂l/∂A and ∂l/∂D (sums over b) are kept per
  (b, e) and summed over b in order. The number of groups follows b and E only (about 32 tasks when
  b < 32, one group otherwise), so a result is bitwise the same for every call and every
  thread count on one machine.
* float32 and float64, one compile each (float64 holds ``torch.autograd.gradcheck``).

Precision
---------
``fastmath`` is limited to ``reassoc`` and ``contract`` in the kernels: the sums over N
(<C_t, h_t>, <g_t, B_t>, <q_t, A>) are then summed in vector lanes (another order than a
loop's; a fixed one for a compiled kernel) and a multiply-add may be one FMA: float32
rounding, no change of what is computed (no ``nnan``/``ninf``: NaN and inf propagate).
The float32 exponential (``_exp32``) has no ``reassoc`` (the Cody-Waite reduction needs
its order): a relative error of at most 6.0e-8 (about one float32 ulp) wherever exp(x) is
a normal float32, measured on 2·10^7 points of [-110, 90] against float64 (glibc's
``expf``: the same maximum); subnormal results are kept, exp(x) = 0 below -103.97 (as
float32 rounds it), inf above 88.72, NaN for NaN. float64 calls ``math.exp``. The
outputs and gradients are within float32 tolerance of the stepwise reference scan's
(tests/test_mamba_cpu_scan.py).

Why numba
---------
It is the closest to the machine among what the project installs: numba is a dependency
(aeon needs it), there is no compiler step at set-up, compiled code is cached
(``cache=True``), and ``prange`` runs the b·E passes on its thread pool. The first call
of a dtype compiles its kernels: 8.5-12.4 s with an empty cache for float32 (forward
2.9-3.5 s, backward 5.6-8.9 s; float64 as much again, at its first call), measured in a
fresh process with ``NUMBA_CACHE_DIR`` an empty folder; a process that finds the cache
imports numba and loads the kernels in 0.7-1.0 s.
A C++ extension (torch.utils.cpp_extension) would add a C++ toolchain at install time or
a compile at first import, and a per-platform build; it would allow explicit SIMD
intrinsics, but LLVM already vectorises the N loop here (the exponential included), so
little speed would be gained.

Threads and cache
-----------------
``numba_runtime.kernel_threads``: for one kernel call numba uses torch's intra-op thread
count (``torch.set_num_threads``), capped by numba's pool; torch's count is put back after
the call (``numba_runtime.kernel_threads``): numba's OpenMP layer starts its pool, at its first
parallel loop in a process, with omp_set_num_threads(pool size), and torch's OpenMP takes
that for its own count (torch.get_num_threads() 1 -> 2 after the first kernel call), so
every later torch op would run on numba's pool size. The pools take turns; each parallel
loop costs its start (tens of µs on idle cores, milliseconds when other processes hold
them), which only very small shapes notice. Compiled code is cached beside this module,
or in numba's per-user cache directory when the package is read-only (``numba_runtime``;
tests/test_mamba_cpu_scan.py runs a read-only copy).

Deviations
----------
* The exponential in float32 is the vectorised one above, not libm's ``expf``: the same
  error bound, different roundings in the last bit.
* Gradients are summed in other orders than the stepwise reference's, and the D skip's
  multiply-add may be one FMA (float rounding).
* Non-contiguous inputs are copied to contiguous ones; inputs of mixed float dtypes are
  cast to their common one (as PyTorch's type promotion does in the reference) and y to
  the stepwise reference's dtype (u's, promoted with D's and z's). Whatever the kernel
  does not take (``refusal``: D or z that broadcast, among others) runs the stepwise
  reference scan (``mamba_scan``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload
from torch.autograd.function import once_differentiable

from . import numba_runtime

__all__ = ["refusal", "selective_scan"]

#: the backward's number of parallel tasks aimed at: rows b times channel groups
_TASKS = 32
_FLOATS = (torch.float32, torch.float64)
#: the kernels' fastmath flags (module docstring, Precision)
_FASTMATH = {"reassoc", "contract"}

# --- the float32 exponential (Cephes expf, for vectors) ---------------------------------------

_F = np.float32
_LOG2E = _F(1.4426950408889634)
_LN2_HI = _F(0.693359375)  # ln 2 = _LN2_HI + _LN2_LO, _LN2_HI exact in 9 bits
_LN2_LO = _F(-2.12194440e-4)
_P0, _P1, _P2 = _F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3)
_P3, _P4, _P5 = _F(4.1665795894e-2), _F(1.6666665459e-1), _F(5.0000001201e-1)
# exp(-104) rounds to 0 in float32 and exp(88.8) overflows: clamping there keeps both ends
_X_MIN, _X_MAX = _F(-104.0), _F(88.8)


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the low 32 bits of the integer ``bits``."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = args[0]
        if bits.bitwidth != 32:
            value = builder.trunc(value, ir.IntType(32))
        return builder.bitcast(value, ir.FloatType())

    return types.float32(bits), codegen


@njit(cache=True, fastmath={"contract"})
def _exp32(x):
    """exp(x) for a float32 x, branch-free (vectorisable): x = k ln 2 + r, |r| <= ln 2 / 2,
    exp(r) by Cephes' polynomial, times 2^k as two powers of two (each a normal float32
    for every k in [-150, 128], so subnormal results and overflow to inf come out of the
    last product). Written ``x = lo if x < lo else x`` so that NaN passes through."""
    x = _X_MIN if x < _X_MIN else x
    x = _X_MAX if x > _X_MAX else x
    k = np.floor(x * _LOG2E + _F(0.5))
    r = x - k * _LN2_HI
    r = r - k * _LN2_LO
    p = (((((_P0 * r + _P1) * r + _P2) * r + _P3) * r + _P4) * r + _P5) * (r * r) + r + _F(1.0)
    n = np.int32(k)
    n1 = n >> 1
    n2 = n - n1
    return p * _float32_from_bits((n1 + 127) << 23) * _float32_from_bits((n2 + 127) << 23)


def _exp(x):
    """exp(x) in the kernels: ``_exp32`` for float32, ``math.exp`` for float64."""
    raise NotImplementedError("compiled code only")


@overload(_exp)
def _exp_overload(x):
    if x == types.float32:
        return lambda x: _exp32(x)
    if x == types.float64:
        return lambda x: math.exp(x)
    return None


# --- kernels ---------------------------------------------------------------------------------


@njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _forward(u, delta, A, B, C, D, z, chunk, save, y, h_saved, y_pre):
    """y (b, E, L) from u, delta (b, E, L), A (E, N), B, C (b, L, N), and with D (E) and
    z (b, E, L) when they have entries (else (0) and (0, 0, 0)): y_t = <C_t, h_t> + D u_t,
    times SiLU(z_t). With ``save`` the state entering each chunk of ``chunk`` steps goes
    into h_saved (b, E, ceil(L / chunk), N), and with z the gate's input into y_pre
    (b, E, L)."""
    bsz, E, L = u.shape
    N = A.shape[1]
    has_D, has_z = D.shape[0] > 0, z.shape[0] > 0
    zero = np.float32(0.0)  # unifies with float64 in the float64 kernel
    one = np.float32(1.0)
    for task in prange(bsz * E):
        bi = task // E
        e = task - bi * E
        a = A[e]  # (N)
        h = np.zeros(N, dtype=A.dtype)  # (N)
        for t in range(L):
            if save and t % chunk == 0:
                h_saved[bi, e, t // chunk, :] = h
            d = delta[bi, e, t]
            du = d * u[bi, e, t]
            b_t = B[bi, t]  # (N)
            c_t = C[bi, t]  # (N)
            acc = zero
            for n in range(N):
                h_n = _exp(d * a[n]) * h[n] + du * b_t[n]
                h[n] = h_n
                acc += h_n * c_t[n]
            y[bi, e, t] = acc
        # the D skip and the gate, along the row (vectorised over t)
        y_row, u_row = y[bi, e], u[bi, e]
        if has_D:
            D_e = D[e]
            for t in range(L):
                y_row[t] += D_e * u_row[t]
        if has_z:
            z_row = z[bi, e]
            if save:
                y_pre[bi, e, :] = y_row
            for t in range(L):
                y_row[t] *= z_row[t] / (one + _exp(-z_row[t]))


@njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _gate_backward(u, D, z, y_pre, grad_out, grad_y, grad_z, grad_D_rows):
    """Through the gate and the D skip, per row (b, e): grad_y (b, E, L), the gradient
    reaching <C_t, h_t> + D u_t, is grad_out SiLU(z) (grad_out without z); with z, grad_z
    = grad_out y_pre SiLU'(z); with D, grad_D_rows (b, E) = Σ_t grad_y u_t. D and z as in
    ``_forward``."""
    bsz, E, L = u.shape
    has_D, has_z = D.shape[0] > 0, z.shape[0] > 0
    zero = np.float32(0.0)
    one = np.float32(1.0)
    for task in prange(bsz * E):
        bi = task // E
        e = task - bi * E
        g_out, g_y = grad_out[bi, e], grad_y[bi, e]
        if has_z:
            z_row, pre, g_z = z[bi, e], y_pre[bi, e], grad_z[bi, e]
            for t in range(L):
                sig = one / (one + _exp(-z_row[t]))
                g_z[t] = g_out[t] * pre[t] * (sig * (one + z_row[t] * (one - sig)))
                g_y[t] = g_out[t] * (z_row[t] * sig)
        else:
            g_y[:] = g_out
        if has_D:
            u_row = u[bi, e]
            acc = zero
            for t in range(L):
                acc += g_y[t] * u_row[t]
            grad_D_rows[bi, e] = acc


@njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _backward(u, delta, A, B, C, D, grad_y, h_saved, chunk, per_group,
              grad_u, grad_delta, grad_A_rows, grad_B_groups, grad_C_groups):  # fmt: skip
    """The gradients, from the forward's inputs, grad_y (b, E, L) (the gradient reaching
    <C_t, h_t> + D u_t: ``_gate_backward``) and the kept states h_saved
    (b, E, n_chunks, N), by groups of ``per_group`` channels: grad_u (with the D skip's
    part when D has entries), grad_delta (b, E, L); grad_A_rows (b, E, N), per row b;
    grad_B_groups, grad_C_groups (G, b, L, N), per group, zero on entry."""
    bsz, E, L = u.shape
    N = A.shape[1]
    has_D = D.shape[0] > 0
    n_chunks = h_saved.shape[2]
    groups = grad_B_groups.shape[0]
    zero = np.float32(0.0)
    for task in prange(bsz * groups):
        bi = task // groups
        group = task - bi * groups
        e0 = group * per_group
        n_e = min(E, e0 + per_group) - e0
        # per channel, g and exp(Δ A) at the first step of the later chunk (0 after the end)
        g_first = np.zeros((n_e, N), dtype=A.dtype)
        decay_first = np.zeros((n_e, N), dtype=A.dtype)
        grad_a = np.zeros((n_e, N), dtype=A.dtype)  # Σ_t Δ_t q_t per channel
        h = np.empty((chunk + 1, N), dtype=A.dtype)  # h_{t0-1}, ..., h_{t0+T-1}
        decay = np.empty((chunk + 1, N), dtype=A.dtype)  # exp(Δ_t A), t0 <= t <= t0 + T
        g = np.empty((chunk + 1, N), dtype=A.dtype)  # g_t, t0 <= t <= t0 + T
        grad_B = grad_B_groups[group, bi]  # (L, N)
        grad_C = grad_C_groups[group, bi]  # (L, N)
        for k in range(n_chunks - 1, -1, -1):
            t0 = k * chunk
            T = min(chunk, L - t0)
            for j in range(n_e):
                e = e0 + j
                a = A[e]  # (N)
                D_e = D[e] if has_D else zero
                # the chunk's states and decays again, from the state entering it
                h[0, :] = h_saved[bi, e, k, :]
                for s in range(T):
                    d = delta[bi, e, t0 + s]
                    du = d * u[bi, e, t0 + s]
                    b_t = B[bi, t0 + s]
                    h_prev, h_s, dA = h[s], h[s + 1], decay[s]
                    for n in range(N):
                        x = _exp(d * a[n])
                        dA[n] = x
                        h_s[n] = x * h_prev[n] + du * b_t[n]
                g[T, :] = g_first[j]
                decay[T, :] = decay_first[j]
                # the adjoint, backwards: g_t = dy_t C_t + exp(Δ_{t+1} A) g_{t+1}
                for s in range(T - 1, -1, -1):
                    t = t0 + s
                    d = delta[bi, e, t]
                    u_t = u[bi, e, t]
                    dy = grad_y[bi, e, t]
                    b_t, c_t = B[bi, t], C[bi, t]
                    g_s, g_next, dA, dA_next, h_prev = g[s], g[s + 1], decay[s], decay[s + 1], h[s]
                    s_gb = zero  # <g_t, B_t>
                    s_qa = zero  # <q_t, A>, q_t = g_t h_{t-1} exp(Δ_t A)
                    for n in range(N):
                        g_n = dy * c_t[n] + dA_next[n] * g_next[n]
                        g_s[n] = g_n
                        s_gb += g_n * b_t[n]
                        s_qa += g_n * h_prev[n] * dA[n] * a[n]
                    grad_u[bi, e, t] = s_gb * d + D_e * dy
                    grad_delta[bi, e, t] = s_qa + s_gb * u_t
                g_first[j, :] = g[0]
                decay_first[j, :] = decay[0]
                # the sums over channels and steps, from the chunk's g, h and decays
                ga = grad_a[j]
                for s in range(T):
                    t = t0 + s
                    d = delta[bi, e, t]
                    du = d * u[bi, e, t]
                    dy = grad_y[bi, e, t]
                    gb, gc, g_s, h_s = grad_B[t], grad_C[t], g[s], h[s + 1]
                    for n in range(N):
                        gb[n] += du * g_s[n]
                        gc[n] += dy * h_s[n]
                    h_prev, dA = h[s], decay[s]
                    for n in range(N):
                        ga[n] += d * (g_s[n] * h_prev[n] * dA[n])
        for j in range(n_e):
            grad_A_rows[bi, e0 + j, :] = grad_a[j]


@njit(cache=True)
def _sum_rows(parts, out):
    """out (M) = parts (R, M) summed over R, row after row (one thread: a pass over memory,
    not worth a parallel loop's start)."""
    R, M = parts.shape
    for i in range(M):
        acc = parts[0, i]
        for r in range(1, R):
            acc += parts[r, i]
        out[i] = acc


# --- PyTorch side --------------------------------------------------------------------------


def _array(t: torch.Tensor) -> np.ndarray:
    """The numpy view of a contiguous CPU tensor (no copy)."""
    return t.detach().numpy()


def _groups(bsz: int, E: int) -> tuple[int, int]:
    """(groups, channels per group) of the backward: about _TASKS tasks over b rows, from
    the shapes only (the sums' order must not depend on the machine's threads)."""
    wanted = max(1, min(E, -(-_TASKS // max(bsz, 1))))
    per_group = max(1, -(-E // wanted))
    return max(1, -(-E // per_group)), per_group


def _sum_over_first(parts: torch.Tensor) -> torch.Tensor:
    """parts (R, ...) summed over R in order (``_sum_rows``)."""
    if parts.size(0) <= 1:
        return parts[0] if parts.size(0) else parts.new_zeros(parts.shape[1:])
    out = parts.new_empty(parts.shape[1:])
    _sum_rows(_array(parts.reshape(parts.size(0), out.numel())), _array(out.view(-1)))
    return out


def _run_forward(u, delta, A, B, C, D, z, chunk: int, save: bool):
    """The forward kernel on contiguous tensors of one dtype (D, z: tensors with no
    entries when absent) -> (y, h_saved, y_pre)."""
    bsz, E, L = u.shape
    N = A.size(1)
    y = torch.empty_like(u)
    shape = (bsz, E, -(-L // chunk), N) if save else (0, 0, 0, N)
    h_saved = u.new_empty(shape)
    y_pre = torch.empty_like(u) if save and z.numel() else u.new_empty(0, 0, 0)
    arrays = map(_array, (u, delta, A, B, C, D, z))
    with numba_runtime.kernel_threads():
        _forward(*arrays, chunk, save, _array(y), _array(h_saved), _array(y_pre))
    return y, h_saved, y_pre


class _FusedSelectiveScan(torch.autograd.Function):
    """u, Δ (b, E, L); A (E, N); B, C (b, L, N); D (E) and z (b, E, L), or tensors with no
    entries when absent; contiguous, one float dtype -> y (b, E, L) (module docstring).
    Keeps the inputs, the state entering each chunk and, with z, the gate's input."""

    @staticmethod
    def forward(ctx, u, delta, A, B, C, D, z, chunk):
        y, h_saved, y_pre = _run_forward(u, delta, A, B, C, D, z, chunk, save=True)
        ctx.chunk = chunk
        ctx.save_for_backward(u, delta, A, B, C, D, z, h_saved, y_pre)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        u, delta, A, B, C, D, z, h_saved, y_pre = ctx.saved_tensors
        grad_out = grad_out.to(u.dtype).contiguous()
        bsz, E, L = u.shape
        N = A.size(1)
        grad_z, grad_D = torch.empty_like(z), torch.empty_like(D)
        if D.numel() or z.numel():  # through the gate and the D skip first
            grad_y, grad_D_rows = torch.empty_like(u), u.new_empty(bsz, E if D.numel() else 0)
            arrays = map(_array, (u, D, z, y_pre, grad_out, grad_y, grad_z, grad_D_rows))
            with numba_runtime.kernel_threads():
                _gate_backward(*arrays)
            if D.numel():
                grad_D = _sum_over_first(grad_D_rows)
        else:
            grad_y = grad_out
        groups, per_group = _groups(bsz, E)
        grad_u, grad_delta = torch.empty_like(u), torch.empty_like(delta)
        grad_A_rows = u.new_empty(bsz, E, N)
        grad_B_groups = u.new_zeros(groups, bsz, L, N)
        grad_C_groups = u.new_zeros(groups, bsz, L, N)
        arrays = (u, delta, A, B, C, D, grad_y, h_saved)
        outputs = (grad_u, grad_delta, grad_A_rows, grad_B_groups, grad_C_groups)
        with numba_runtime.kernel_threads():
            _backward(*map(_array, arrays), ctx.chunk, per_group, *map(_array, outputs))
        grad_A = _sum_over_first(grad_A_rows)
        grad_B = _sum_over_first(grad_B_groups)
        grad_C = _sum_over_first(grad_C_groups)
        return grad_u, grad_delta, grad_A, grad_B, grad_C, grad_D, grad_z, None


def refusal(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
) -> str | None:
    """Why the kernel does not take ``mamba_scan.selective_scan``'s tensors (delta_bias
    counts for the dtype only: it is added before the kernel); None when it does."""
    given = [t for t in (u, delta, A, B, C, D, z, delta_bias) if t is not None]
    devices = sorted({t.device.type for t in given})
    if devices != ["cpu"]:
        return f"tensors on {', '.join(devices)} (the kernel runs on the CPU)"
    dtype = u.dtype
    for t in given:
        dtype = torch.promote_types(dtype, t.dtype)
    if dtype not in _FLOATS:
        return f"dtype {dtype} (the kernel takes float32 and float64)"
    shapes = "shapes other than u, delta, z (b, E, L), A (E, N), B, C (b, N, L), D (E)"
    if u.dim() != 3 or A.dim() != 2:
        return shapes
    (bsz, E, L), N = u.shape, A.size(1)
    if (
        delta.shape != u.shape
        or A.shape != (E, N)
        or not B.shape == C.shape == (bsz, N, L)
        or (D is not None and D.shape != (E,))
        or (z is not None and z.shape != u.shape)
    ):
        return shapes
    return None


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> torch.Tensor:
    """y (b, E, L) with y_t = <C_t, h_t> + D u_t, times SiLU(z_t) when z is given, where
    h_t = exp(Δ_t A) h_{t-1} + Δ_t u_t B_t, by the fused kernel. u, delta (b, E, L) (delta
    after its bias and softplus); A (E, N); B, C (b, N, L); D (E); z (b, E, L)
    (``mamba_scan``'s layouts); inputs ``refusal`` passes. The state is kept every
    ``chunk_size`` steps when gradients are needed. y has the dtype of ``mamba_scan``'s
    stepwise method: u's, promoted with D's and z's."""
    given = [t for t in (u, delta, A, B, C, D, z) if t is not None]
    dtype = out_dtype = u.dtype
    for t in given:
        dtype = torch.promote_types(dtype, t.dtype)
    for t in (D, z):
        if t is not None:
            out_dtype = torch.promote_types(out_dtype, t.dtype)
    u_, delta_, A_ = (t.to(dtype).contiguous() for t in (u, delta, A))
    # B, C time-major (b, L, N): each step reads N contiguous numbers
    B_, C_ = (t.to(dtype).transpose(1, 2).contiguous() for t in (B, C))
    D_ = u_.new_empty(0) if D is None else D.to(dtype).contiguous()
    z_ = u_.new_empty(0, 0, 0) if z is None else z.to(dtype).contiguous()
    chunk = max(1, min(int(chunk_size), u.size(-1)))
    if torch.is_grad_enabled() and any(t.requires_grad for t in given):
        y = _FusedSelectiveScan.apply(u_, delta_, A_, B_, C_, D_, z_, chunk)
    else:
        y = _run_forward(u_, delta_, A_, B_, C_, D_, z_, chunk, save=False)[0]
    return y.to(out_dtype)
