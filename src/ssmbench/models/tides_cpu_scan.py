"""The TIDES family's zero-order hold and linear recurrence fused in one CPU kernel (numba):

    h_t = a_t h_{t-1} + b_t,  a_t = exp(Λ_t Δ_t),  b_t = expm1(Λ_t Δ_t)/Λ_t · (B_t u_t)

over diagonal complex (or real) states, forwards, backwards (h_t = a_t h_{t+1} + b_t) or
both, from an initial state h0; forward and closed-form backward. ``zoh_scan`` computes
what ``tides_scan.zoh_elements`` followed by ``tides_scan.linear_scan`` computes (both
directions: the two scans of the same elements, concatenated); those stay the reference.

Sources
-------
* Smith, Warrington & Linderman (2023), "Simplified State Space Layers for Sequence
  Modeling" (S5), section 3 and appendix: the zero-order hold Λ̄ = exp(ΛΔ),
  B̄ = Λ^-1 (Λ̄ - I) B and the linear recurrence of the diagonal states.
* TIDES reference repository (TaylanSoydan/TIDES @4b51adc, MIT), ``tides/tides.py``:
  ``discretize_zoh`` (per-step, per-state Δ) and ``apply_ssm`` (the reverse direction of
  the bidirectional layer scans the same elements backwards), the facts as in
  ``tides_scan.py``'s docstring. The code is written here; so are the exp, expm1, sin and
  cos (Cody-Waite reduction, Taylor series; the constants of fdlibm's, which are IEEE
  facts).

Shapes (time first, as ``tides_ssm.TIDESSSM`` runs)
---------------------------------------------------
Re Λ, Im Λ (S,) static or (T, B, S) per step, Δ (T, B, S), Bu (T, B, S) complex (real
with real Λ: Im Λ None), h0 (B, S) -> h (T, B, S), or (T, B, 2S) for both directions
(forwards, then backwards). Complex numbers enter and leave the kernels as interleaved
(re, im) real arrays; float32 and float64 (float64 lets ``torch.autograd.gradcheck`` hold
the backward).

What the kernels do
-------------------
Each ``prange`` iteration takes a block of rows of the batch and advances them one step at
a time; per row and step, the S states at once (the loop LLVM vectorises), in float64:

* Forward: z = ΛΔ = x + iy, e = exp(x), s, c = sin(y/2), cos(y/2), a = e (1 - 2s²) +
  i e 2sc, expm1(z) = expm1(x) (1 - 2s²) - 2s² + i e 2sc (c10's complex expm1, as
  ``zoh_elements``), gain = expm1(z)/Λ, h = a h + gain (Bu). a and b exist in registers
  only; the states h are the output (the readout needs them all) and what the backward
  keeps (nothing else is saved but the inputs).
* Backward: the adjoint g_t = ∂l/∂h_t + conj(a_{t+1}) g_{t+1} runs against the scan, with
  a and the gain recomputed from Λ and Δ, carried as c_t = conj(a_t) g_t (c at the first
  step is ∂l/∂h0); ∂l/∂b_t = g_t, ∂l/∂a_t = g_t conj(h_{t-1}) from the saved states, and
  the closed forms of ``zoh_elements`` (∂a/∂z = a, ∂gain/∂z = a/Λ, ∂gain/∂Λ|_z =
  -gain/Λ) give ∂l/∂Re Λ, ∂l/∂Im Λ, ∂l/∂Δ and ∂l/∂(Bu). Both directions: a first pass
  runs the reverse direction's adjoint forwards in time into the buffer of ∂l/∂(Bu), the
  second the forward one and the rest. A static Λ's gradient is the sum of its per-step
  terms over steps and rows, in row order, in float64 (``_sum_steps``): the same bits for
  any thread count, as every other number (each state's arithmetic does not depend on the
  blocks).
* exp, expm1, sin and cos are polynomials here (``_exp_expm1``, ``_sincos``: within about
  1 ulp of float64, to float64 rounding for |Im Λ Δ| < 2^20 π): LLVM vectorises no call of
  libm's (numba has no vector math library, SVML, here), and one libm call per number
  costs several times the rest of a step.

Why numba
---------
The closest to the machine that the installed packages allow: LLVM compiles the kernels
at their first call (no compiler or build step at set-up) for the CPU it runs on (AVX-512
where there is one), the machine code is cached on disk (``cache=True``), the blocks of
rows run in parallel (``prange``). A C++ extension would need a compiler at installation
(or wheels per platform) and a vector math library (SLEEF, as PyTorch's) for the same
loop; it would add explicit SIMD control (float32 lanes, twice as many per instruction),
not a different algorithm. The first call compiles the four kernels (complex and real,
forward and backward) of a dtype: 17-20 s for float32 with an empty cache
(``benchmarks/bench_tides_step.py --compile`` measures it), once per machine and numba
version (and after an edit of this module); loading them from the cache takes 0.4 s. One
thread runs the forward kernel at about 196 M state updates per second, as fast as the
same arithmetic without the recurrence's dependency (192 M/s, ``--bound``: the states are
the vector lanes, the dependency runs across iterations of the loop over them); of the
5.2 ns of an update exp, expm1, sin and cos take about 3.9, the memory traffic and the
rest 1.3.

Threads: ``numba_runtime.kernel_threads`` (torch's intra-op count for the length of one
call, torch's own count set back after it), one block of rows per thread. Inputs the
kernel does not take (numba missing, a dtype other than float32 / float64, a device other
than the CPU, another layout) are named by ``unsupported``; the layer then runs the
reference and ``numba_runtime.fallback`` logs why.

Deviations
----------
* The same formulas as ``zoh_elements`` and ``linear_scan``, rounded differently: float64
  inside the kernel for float32 inputs too (the reference computes in the inputs' dtype),
  a sequential scan instead of the chunked one, the polynomials above instead of PyTorch's
  exp, expm1, sin and cos: equal to the reference within float32 rounding, and to float64
  rounding in float64 (tests/test_tides_cpu_scan.py). Δ = 0 still gives a = 1 and b = 0
  exactly.
* The bilinear discretisation is not fused (no configuration uses it; it keeps autograd
  through ``tides_scan.discretize``: a layer with it runs the reference path).
"""

from __future__ import annotations

import numpy as np
import torch

from .numba_runtime import kernel_threads, numba_missing

__all__ = ["JIT_OPTIONS", "unsupported", "zoh_scan"]

#: the numba settings of every kernel here (and of the bound in bench_tides_step.py)
JIT_OPTIONS = dict(cache=True, parallel=True, nogil=True, fastmath=False, error_model="numpy")

_DTYPES = (torch.float32, torch.float64)

if numba_missing() is None:
    from numba import njit, prange
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def _float64_from_bits(typingctx, bits):
        """The float64 whose IEEE bits are the int64 ``bits`` (an LLVM bitcast)."""

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(types.float64))

        return types.float64(types.int64), codegen

else:  # never called (``unsupported`` says why): plain Python stand-ins so that this imports

    def njit(*args, **kwargs):
        return lambda fn: fn

    prange = range

    def _float64_from_bits(bits):
        return float(np.int64(bits).view(np.float64))


# --- exp, expm1, sin, cos in float64 arithmetic, vectorisable ---------------------------------
# Polynomials and selects only (LLVM vectorises no call of libm's here), float64 throughout
# (float32 inputs' results then round to float32's nearest).

_U1 = np.uint64(1)
_U2 = np.uint64(2)
_ROUND = 6755399441055744.0  # 1.5 * 2**52: (v + _ROUND) - _ROUND rounds v to an integer
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (fdlibm): k ln2_hi exact
_LN2_LO = 1.90821492927058770002e-10
_INV_PIO2 = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e00  # π/2 in four parts (fdlibm's rem_pio2): q π/2_i exact
_PIO2_2 = 6.07710050630396597660e-11  # for |q| < 2^20
_PIO2_3 = 2.02226624871116645580e-21
_PIO2_3T = 8.47842766036889956997e-32


@njit(inline="always", error_model="numpy")
def _exp_expm1(x):
    """(exp(x), expm1(x)): x = k ln2 + r, |r| <= ln2/2, expm1(r) by its Taylor series to
    r^13 (relative error < 2^-60), exp(x) = 2^k (1 + expm1(r)), expm1(x) = (2^k - 1) +
    2^k expm1(r) (exact at k = 0, no cancellation else). x outside [-746, 710] gives 0 / -1
    and inf / inf as exp does; NaN gives NaN."""
    xc = -746.0 if x < -746.0 else x
    xc = 710.0 if xc > 710.0 else xc
    k = (xc * _LOG2E + _ROUND) - _ROUND
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = r * (1.0 / 6227020800.0)
    p = r * (1.0 / 479001600.0 + p)
    p = r * (1.0 / 39916800.0 + p)
    p = r * (1.0 / 3628800.0 + p)
    p = r * (1.0 / 362880.0 + p)
    p = r * (1.0 / 40320.0 + p)
    p = r * (1.0 / 5040.0 + p)
    p = r * (1.0 / 720.0 + p)
    p = r * (1.0 / 120.0 + p)
    p = r * (1.0 / 24.0 + p)
    p = r * (1.0 / 6.0 + p)
    p = r * (0.5 + p)
    p = r + r * p  # expm1(r)
    ki = np.int64(k)
    k1 = ki >> 1  # 2^k as 2^k1 2^(k - k1): each factor a normal number for |k| <= 1077
    scale = _float64_from_bits((k1 + 1023) << 52) * _float64_from_bits((ki - k1 + 1023) << 52)
    return scale + scale * p, (scale - 1.0) + scale * p


@njit(inline="always", error_model="numpy")
def _sincos(y):
    """(sin y, cos y): y = q π/2 + r, |r| <= π/4, Taylor series of sin to r^17 and cos to
    r^16 (error < 2^-60), then the quadrant q mod 4. Accurate to float64's rounding for
    |y| < 2^20 π/2 (q π/2 then leaves no rounding), within about 2^-53 |y| above."""
    q = (y * _INV_PIO2 + _ROUND) - _ROUND
    r = ((y - q * _PIO2_1) - q * _PIO2_2) - q * _PIO2_3
    r = r - q * _PIO2_3T
    r2 = r * r
    ps = 1.0 / 355687428096000.0
    ps = -1.0 / 1307674368000.0 + r2 * ps
    ps = 1.0 / 6227020800.0 + r2 * ps
    ps = -1.0 / 39916800.0 + r2 * ps
    ps = 1.0 / 362880.0 + r2 * ps
    ps = -1.0 / 5040.0 + r2 * ps
    ps = 1.0 / 120.0 + r2 * ps
    ps = -1.0 / 6.0 + r2 * ps
    s = r + r * (r2 * ps)
    pc = 1.0 / 20922789888000.0
    pc = -1.0 / 87178291200.0 + r2 * pc
    pc = 1.0 / 479001600.0 + r2 * pc
    pc = -1.0 / 3628800.0 + r2 * pc
    pc = 1.0 / 40320.0 + r2 * pc
    pc = -1.0 / 720.0 + r2 * pc
    pc = 1.0 / 24.0 + r2 * pc
    pc = -0.5 + r2 * pc
    c = 1.0 + r2 * pc
    n = q - 4.0 * ((q * 0.25 + _ROUND) - _ROUND)  # q mod 4, in {-2, ..., 2}
    n = n + 4.0 if n < 0.0 else n
    sin = s if n == 0.0 else (c if n == 1.0 else (-s if n == 2.0 else -c))
    cos = c if n == 0.0 else (-s if n == 1.0 else (-c if n == 2.0 else s))
    return sin, cos


@njit(inline="always", error_model="numpy")
def _zoh(lr, li, dt):
    """z = ΛΔ = x + iy, Λ = lr + i li: (a, expm1(z), 1/Λ) as real and imaginary parts, by
    ``zoh_elements``' formulas: a = e^x (1 - 2 sin²(y/2)) + i e^x sin y, expm1(z) =
    expm1(x) (1 - 2 sin²(y/2)) - 2 sin²(y/2) + i e^x sin y."""
    lr, li, dt = np.float64(lr), np.float64(li), np.float64(dt)
    e, em1 = _exp_expm1(lr * dt)
    s, c = _sincos(li * dt * 0.5)
    s2 = 2.0 * s * s  # 1 - cos y without cancellation
    a_im = e * (2.0 * s * c)  # e^x sin y
    a_re = e - e * s2
    m_re = em1 - em1 * s2 - s2
    inv = 1.0 / (lr * lr + li * li)
    return a_re, a_im, m_re, a_im, lr * inv, -li * inv


# --- the kernels ------------------------------------------------------------------------------
# Every array is flat (numpy views of contiguous tensors), complex ones interleaved (re, im).
# prange runs ``chunks`` blocks of rows; a block advances all its rows one step at a time
# (each step's rows are contiguous in memory), its states (adjoints) in local float64
# buffers. The innermost loops, over the S states of a row, are what LLVM vectorises: they
# index with uint64 (numba's wrap-around of negative int64 indices would keep it from
# that), store interleaved numbers through a second loop, and store into few arrays (each
# pair of arrays stored costs the vectoriser a run-time overlap check; past its limit it
# gives up): hence the adjoint carried as one number, c = conj(a_t) g_t, and a static Λ's
# per-step terms summed after the kernel.


@njit(**JIT_OPTIONS)
def _forward_complex(re, im, delta, bu, h0, out, re_rows, im_rows, fwd, rev, T, B, S, chunks):
    # re, im (R S,): R = T B per step (re_rows 1) or 1 static (re_rows 0), uint64 flags;
    # delta (T B S,); bu (T B S 2,); h0 (B S 2,), (0,) for zeros; out (T B D S 2,), D the
    # number of directions (fwd, rev), the forward one's S columns first
    D = (1 if fwd else 0) + (1 if rev else 0)
    S_ = np.uint64(S)
    for c in prange(chunks):
        b0 = c * B // chunks
        b1 = (c + 1) * B // chunks
        hr2 = np.zeros((b1 - b0, S), np.float64)
        hi2 = np.zeros((b1 - b0, S), np.float64)
        for d in range(2):
            if (d == 0 and not fwd) or (d == 1 and not rev):
                continue
            col = S if (d == 1 and fwd) else 0
            for bb in range(b0, b1):
                for s in range(S):
                    hr2[bb - b0, s] = h0[2 * (bb * S + s)] if h0.size else 0.0
                    hi2[bb - b0, s] = h0[2 * (bb * S + s) + 1] if h0.size else 0.0
            for i in range(T):
                t = i if d == 0 else T - 1 - i
                for bb in range(b0, b1):
                    hr, hi = hr2[bb - b0], hi2[bb - b0]
                    o = np.uint64((t * B + bb) * S)
                    rr, ri = o * re_rows, o * im_rows
                    for s in range(S_):
                        a_re, a_im, m_re, m_im, il_re, il_im = _zoh(
                            re[rr + s], im[ri + s], delta[o + s]
                        )
                        g_re = m_re * il_re - m_im * il_im  # gain = expm1(z) / Λ
                        g_im = m_re * il_im + m_im * il_re
                        j = _U2 * (o + s)
                        u_re, u_im = np.float64(bu[j]), np.float64(bu[j + _U1])
                        x_re = a_re * hr[s] - a_im * hi[s] + (g_re * u_re - g_im * u_im)
                        x_im = a_re * hi[s] + a_im * hr[s] + (g_re * u_im + g_im * u_re)
                        hr[s] = x_re
                        hi[s] = x_im
                    w = np.uint64((t * B + bb) * D * S + col)
                    for s in range(S_):
                        out[_U2 * (w + s)] = hr[s]
                        out[_U2 * (w + s) + _U1] = hi[s]


@njit(**JIT_OPTIONS)
def _backward_complex(
    re, im, delta, bu, h0, h, grad, re_rows, im_rows, fwd, rev, T, B, S, chunks,
    grad_re, grad_im, grad_delta, grad_bu, grad_h0,
):  # fmt: skip
    # As _forward_complex; h (T B D S 2,) its output, grad (T B D S 2,) ∂l/∂h (torch's
    # convention: ∂l/∂Re + i ∂l/∂Im). Out: grad_re, grad_im (T B S,) each step's term of
    # Λ's gradient, grad_delta (T B S,), grad_bu (T B S 2,), grad_h0 (B S 2,) or (0,).
    D = (1 if fwd else 0) + (1 if rev else 0)
    S_ = np.uint64(S)
    both = fwd and rev
    for c in prange(chunks):
        b0 = c * B // chunks
        b1 = (c + 1) * B // chunks
        cr2 = np.zeros((b1 - b0, S), np.float64)  # the carry conj(a_t) g_t
        ci2 = np.zeros((b1 - b0, S), np.float64)
        pr = np.zeros(S, np.float64)  # the state entering the step
        pi = np.zeros(S, np.float64)
        yr = np.zeros(S, np.float64)  # both: the reverse direction's adjoint g'_t
        yi = np.zeros(S, np.float64)
        qr = np.zeros(S, np.float64)  # both: the reverse direction's state h'_{t+1}
        qi = np.zeros(S, np.float64)
        wr = np.zeros(S, np.float64)  # the step's ∂l/∂(Bu) (first pass: g'), then stored
        wi = np.zeros(S, np.float64)
        if both:
            # the reverse direction's adjoint, forwards in time (g'_t = ∂l/∂h'_t +
            # conj(a_{t-1}) g'_{t-1}), into grad_bu: read and replaced by the last pass
            for t in range(T):
                for bb in range(b0, b1):
                    cr, ci = cr2[bb - b0], ci2[bb - b0]
                    o = np.uint64((t * B + bb) * S)
                    rr, ri = o * re_rows, o * im_rows
                    k = np.uint64((t * B + bb) * D * S + S)
                    for s in range(S_):
                        j = _U2 * (k + s)
                        x_re = np.float64(grad[j]) + cr[s]
                        x_im = np.float64(grad[j + _U1]) + ci[s]
                        a_re, a_im, _, _, _, _ = _zoh(re[rr + s], im[ri + s], delta[o + s])
                        cr[s] = a_re * x_re + a_im * x_im
                        ci[s] = a_re * x_im - a_im * x_re
                        wr[s] = x_re
                        wi[s] = x_im
                    for s in range(S_):
                        grad_bu[_U2 * (o + s)] = wr[s]
                        grad_bu[_U2 * (o + s) + _U1] = wi[s]
            cr2[:] = 0.0
            ci2[:] = 0.0
        # the last pass: the first direction's adjoint against its scan (backwards in time
        # for the forward direction), and every gradient
        for i in range(T):
            t = T - 1 - i if fwd else i
            before = t - 1 if fwd else t + 1  # the step whose state enters step t
            for bb in range(b0, b1):
                cr, ci = cr2[bb - b0], ci2[bb - b0]
                o = np.uint64((t * B + bb) * S)
                rr, ri = o * re_rows, o * im_rows
                k = np.uint64((t * B + bb) * D * S)
                if 0 <= before < T:
                    kb = (before * B + bb) * D * S
                    for s in range(S):
                        pr[s] = h[2 * (kb + s)]
                        pi[s] = h[2 * (kb + s) + 1]
                elif h0.size:
                    for s in range(S):
                        pr[s] = h0[2 * (bb * S + s)]
                        pi[s] = h0[2 * (bb * S + s) + 1]
                else:
                    pr[:] = 0.0
                    pi[:] = 0.0
                if both:
                    for s in range(S):
                        yr[s] = grad_bu[2 * ((t * B + bb) * S + s)]
                        yi[s] = grad_bu[2 * ((t * B + bb) * S + s) + 1]
                    kq = ((t + 1) * B + bb) * D * S + S
                    for s in range(S):
                        qr[s] = h[2 * (kq + s)] if t + 1 < T else 0.0
                        qi[s] = h[2 * (kq + s) + 1] if t + 1 < T else 0.0
                for s in range(S_):
                    lr, li = np.float64(re[rr + s]), np.float64(im[ri + s])
                    dt = np.float64(delta[o + s])
                    a_re, a_im, m_re, m_im, il_re, il_im = _zoh(lr, li, dt)
                    j = _U2 * (k + s)
                    x_re = np.float64(grad[j]) + cr[s]  # the adjoint g_t
                    x_im = np.float64(grad[j + _U1]) + ci[s]
                    cr[s] = a_re * x_re + a_im * x_im  # conj(a_t) g_t
                    ci[s] = a_re * x_im - a_im * x_re
                    # ∂l/∂a = g conj(h_before) (+ the reverse direction's g' conj(h'_{t+1}))
                    da_re = x_re * pr[s] + x_im * pi[s] + (yr[s] * qr[s] + yi[s] * qi[s])
                    da_im = x_im * pr[s] - x_re * pi[s] + (yi[s] * qr[s] - yr[s] * qi[s])
                    db_re = x_re + yr[s]  # ∂l/∂b = g (+ g')
                    db_im = x_im + yi[s]
                    # zoh_elements' backward, in G = conj(∂l/∂·)
                    g_re = m_re * il_re - m_im * il_im  # gain
                    g_im = m_re * il_im + m_im * il_re
                    wr[s] = db_re * g_re + db_im * g_im  # ∂l/∂(Bu) = ∂l/∂b conj(gain)
                    wi[s] = db_im * g_re - db_re * g_im
                    j = _U2 * (o + s)
                    u_re, u_im = np.float64(bu[j]), np.float64(bu[j + _U1])
                    v_re = db_re * u_re + db_im * u_im  # G_b Bu
                    v_im = db_re * u_im - db_im * u_re
                    t_re = v_re * il_re - v_im * il_im  # G_t = G_b Bu / Λ
                    t_im = v_re * il_im + v_im * il_re
                    n_re = da_re + t_re  # G_a + G_t
                    n_im = t_im - da_im
                    z_re = n_re * a_re - n_im * a_im  # G_z = (G_a + G_t) a
                    z_im = n_re * a_im + n_im * a_re
                    l_re = z_re * dt - (t_re * g_re - t_im * g_im)  # G_Λ = G_z Δ - G_t gain
                    l_im = z_im * dt - (t_re * g_im + t_im * g_re)
                    grad_delta[o + s] = z_re * lr - z_im * li  # Re(G_z Λ)
                    grad_re[o + s] = l_re  # ∂l/∂Re Λ = Re G_Λ
                    grad_im[o + s] = -l_im  # ∂l/∂Im Λ = -Im G_Λ
                for s in range(S_):
                    grad_bu[_U2 * (o + s)] = wr[s]
                    grad_bu[_U2 * (o + s) + _U1] = wi[s]
        if grad_h0.size:  # ∂l/∂h0 = conj(a_first) g_first, the last carry
            for bb in range(b0, b1):
                for s in range(S):
                    grad_h0[2 * (bb * S + s)] = cr2[bb - b0, s]
                    grad_h0[2 * (bb * S + s) + 1] = ci2[bb - b0, s]


@njit(**JIT_OPTIONS)
def _forward_real(re, delta, bu, h0, out, re_rows, fwd, rev, T, B, S, chunks):
    # real Λ: as _forward_complex without Im Λ, real numbers (not interleaved)
    D = (1 if fwd else 0) + (1 if rev else 0)
    S_ = np.uint64(S)
    for c in prange(chunks):
        b0 = c * B // chunks
        b1 = (c + 1) * B // chunks
        hr2 = np.zeros((b1 - b0, S), np.float64)
        for d in range(2):
            if (d == 0 and not fwd) or (d == 1 and not rev):
                continue
            col = S if (d == 1 and fwd) else 0
            for bb in range(b0, b1):
                for s in range(S):
                    hr2[bb - b0, s] = h0[bb * S + s] if h0.size else 0.0
            for i in range(T):
                t = i if d == 0 else T - 1 - i
                for bb in range(b0, b1):
                    hr = hr2[bb - b0]
                    o = np.uint64((t * B + bb) * S)
                    rr = o * re_rows
                    w = np.uint64((t * B + bb) * D * S + col)
                    for s in range(S_):
                        lr = np.float64(re[rr + s])
                        e, em1 = _exp_expm1(lr * delta[o + s])
                        v = e * hr[s] + em1 * (1.0 / lr) * bu[o + s]
                        hr[s] = v
                        out[w + s] = v


@njit(**JIT_OPTIONS)
def _backward_real(
    re, delta, bu, h0, h, grad, re_rows, fwd, rev, T, B, S, chunks,
    grad_re, grad_delta, grad_bu, grad_h0,
):  # fmt: skip
    # As _backward_complex, real numbers (not interleaved), no Im Λ.
    D = (1 if fwd else 0) + (1 if rev else 0)
    S_ = np.uint64(S)
    both = fwd and rev
    for c in prange(chunks):
        b0 = c * B // chunks
        b1 = (c + 1) * B // chunks
        cr2 = np.zeros((b1 - b0, S), np.float64)
        pr = np.zeros(S, np.float64)
        yr = np.zeros(S, np.float64)
        qr = np.zeros(S, np.float64)
        if both:
            for t in range(T):
                for bb in range(b0, b1):
                    cr = cr2[bb - b0]
                    o = np.uint64((t * B + bb) * S)
                    rr = o * re_rows
                    k = np.uint64((t * B + bb) * D * S + S)
                    for s in range(S_):
                        x = np.float64(grad[k + s]) + cr[s]
                        a, _ = _exp_expm1(np.float64(re[rr + s]) * delta[o + s])
                        cr[s] = a * x
                        grad_bu[o + s] = x
            cr2[:] = 0.0
        for i in range(T):
            t = T - 1 - i if fwd else i
            before = t - 1 if fwd else t + 1
            for bb in range(b0, b1):
                cr = cr2[bb - b0]
                o = np.uint64((t * B + bb) * S)
                rr = o * re_rows
                k = np.uint64((t * B + bb) * D * S)
                if 0 <= before < T:
                    for s in range(S):
                        pr[s] = h[(before * B + bb) * D * S + s]
                elif h0.size:
                    for s in range(S):
                        pr[s] = h0[bb * S + s]
                else:
                    pr[:] = 0.0
                if both:
                    for s in range(S):
                        yr[s] = grad_bu[(t * B + bb) * S + s]
                        qr[s] = h[((t + 1) * B + bb) * D * S + S + s] if t + 1 < T else 0.0
                for s in range(S_):
                    lr, dt = np.float64(re[rr + s]), np.float64(delta[o + s])
                    a, em1 = _exp_expm1(lr * dt)
                    inv = 1.0 / lr
                    gain = em1 * inv
                    x = np.float64(grad[k + s]) + cr[s]
                    cr[s] = a * x
                    da = x * pr[s] + yr[s] * qr[s]
                    db = x + yr[s]
                    grad_bu[o + s] = db * gain
                    g_t = db * np.float64(bu[o + s]) * inv
                    g_z = (da + g_t) * a
                    grad_delta[o + s] = g_z * lr
                    grad_re[o + s] = g_z * dt - g_t * gain
        if grad_h0.size:
            for bb in range(b0, b1):
                for s in range(S):
                    grad_h0[bb * S + s] = cr2[bb - b0, s]


@njit(cache=True, nogil=True, error_model="numpy")
def _sum_steps(terms, out, S):
    """A static Λ's gradient: out (S,) = the sum of terms (N S,) over its N rows, in row
    order, in float64 (the same bits for any thread count)."""
    total = np.zeros(S, np.float64)
    S_ = np.uint64(S)
    for n in range(terms.size // S):
        o = np.uint64(n * S)
        for s in range(S_):
            total[s] += terms[o + s]
    for s in range(S):
        out[s] = total[s]


# --- the autograd Function ------------------------------------------------------------------


def unsupported(
    re: torch.Tensor,
    im: torch.Tensor | None,
    delta: torch.Tensor,
    bu: torch.Tensor,
    h0: torch.Tensor | None = None,
    both: bool = False,
) -> str | None:
    """Why ``zoh_scan`` cannot take these inputs (None when it can): numba, the device, the
    dtypes, the shapes (module docstring)."""
    reason = numba_missing()
    if reason is not None:
        return reason
    tensors = [t for t in (re, im, delta, bu, h0) if t is not None]
    devices = sorted({t.device.type for t in tensors})
    if devices != ["cpu"]:
        return f"tensors on {', '.join(devices)}, not the CPU"
    if delta.dtype not in _DTYPES:
        return f"dtype {delta.dtype} (float32 and float64 are compiled)"
    field = delta.dtype if im is None else delta.dtype.to_complex()
    parts = [t for t in (re, im) if t is not None]
    if any(t.dtype != delta.dtype for t in parts) or bu.dtype != field:
        dtypes = ", ".join(str(t.dtype) for t in tensors)
        return f"mixed dtypes ({dtypes}): Λ and Δ real, Bu and h0 of one field"
    if h0 is not None and h0.dtype != field:
        return f"h0's dtype {h0.dtype} is not Bu's {bu.dtype}"
    if delta.dim() != 3 or bu.shape != delta.shape or delta.numel() == 0:
        return f"Δ {tuple(delta.shape)}, Bu {tuple(bu.shape)}: not (T, B, S), T, B, S >= 1"
    T, B, S = delta.shape
    for t in parts:
        if t.shape != (S,) and t.shape != delta.shape:
            return f"Λ's part of shape {tuple(t.shape)}: neither (S,) nor Δ's {tuple(delta.shape)}"
    if h0 is not None and (both or h0.shape != (B, S)):
        return f"h0 {tuple(h0.shape)}: one direction's (B, S) = {(B, S)} only"
    return None


def _flat(t: torch.Tensor) -> np.ndarray:
    """A tensor's numbers as a flat numpy array (complex: interleaved re, im): a view of the
    tensor when it is contiguous (the kernels' outputs are: ``_empty``), else of a copy."""
    t = t.detach().resolve_conj().resolve_neg().contiguous()
    return (torch.view_as_real(t) if t.is_complex() else t).numpy().reshape(-1)


def _empty(like: torch.Tensor, *shape: int) -> torch.Tensor:
    """A new contiguous tensor of ``like``'s dtype and ``shape`` (default: like's); not
    ``empty_like``, which keeps a non-contiguous tensor's strides."""
    return torch.empty(shape or like.shape, dtype=like.dtype)


def _chunks(B: int, threads: int) -> int:
    """Blocks of rows for prange: one per thread (fewer rows: one per row)."""
    return max(1, min(B, threads))


class _ZOHScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, re, im, delta, bu, h0, fwd, rev):
        T, B, S = delta.shape
        h = _empty(bu, T, B, (fwd + rev) * S)
        h0_np = _flat(h0 if h0 is not None else _empty(bu, 0))
        re_rows = np.uint64(re.dim() > 1)
        with kernel_threads() as threads:
            if im is None:
                _forward_real(
                    _flat(re), _flat(delta), _flat(bu), h0_np, _flat(h), re_rows, fwd, rev,
                    T, B, S, _chunks(B, threads),
                )  # fmt: skip
            else:
                _forward_complex(
                    _flat(re), _flat(im), _flat(delta), _flat(bu), h0_np, _flat(h), re_rows,
                    np.uint64(im.dim() > 1), fwd, rev, T, B, S, _chunks(B, threads),
                )  # fmt: skip
        ctx.fwd, ctx.rev = fwd, rev
        ctx.save_for_backward(re, im, delta, bu, h0, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        re, im, delta, bu, h0, h = ctx.saved_tensors
        T, B, S = delta.shape
        # each step's terms of Λ's gradient (a static Λ's are summed after)
        grads = [_empty(delta) for _ in range(1 if im is None else 2)]
        grad_delta, grad_bu = _empty(delta), _empty(bu)
        grad_h0 = _empty(h0) if h0 is not None else _empty(bu, 0)
        h0_np = _flat(h0 if h0 is not None else grad_h0)
        inputs = (_flat(delta), _flat(bu), h0_np, _flat(h), _flat(grad_h))
        outputs = (_flat(grad_delta), _flat(grad_bu), _flat(grad_h0))
        re_rows = np.uint64(re.dim() > 1)
        with kernel_threads() as threads:
            shape = (ctx.fwd, ctx.rev, T, B, S, _chunks(B, threads))
            if im is None:
                _backward_real(_flat(re), *inputs, re_rows, *shape, _flat(grads[0]), *outputs)
            else:
                _backward_complex(
                    _flat(re), _flat(im), *inputs, re_rows, np.uint64(im.dim() > 1), *shape,
                    _flat(grads[0]), _flat(grads[1]), *outputs,
                )  # fmt: skip
        for n, part in enumerate((re, im)[: len(grads)]):
            if part.dim() == 1:  # static: the sum over steps and rows
                total = _empty(part, S)
                _sum_steps(_flat(grads[n]), _flat(total), S)
                grads[n] = total
        grad_im = grads[1] if im is not None else None
        grad_h0 = grad_h0 if h0 is not None else None
        return grads[0], grad_im, grad_delta, grad_bu, grad_h0, None, None


def zoh_scan(
    re: torch.Tensor,
    im: torch.Tensor | None,
    delta: torch.Tensor,
    bu: torch.Tensor,
    h0: torch.Tensor | None = None,
    reverse: bool = False,
    both: bool = False,
) -> torch.Tensor:
    """The states of h_t = a_t h_{t-1} + b_t (``reverse``: h_t = a_t h_{t+1} + b_t; ``both``:
    both directions, concatenated on the last axis), (a_t, b_t) = (exp(ΛΔ), expm1(ΛΔ)/Λ · Bu),
    Λ = re + i im (im None: real Λ), time first: re, im (S,) or (T, B, S), delta (T, B, S),
    bu (T, B, S), h0 (B, S) the state before the first step (None: zeros; one direction
    only) -> (T, B, S) or (T, B, 2S). Differentiable in all of them. Inputs for which
    ``unsupported`` gives a reason are not taken (the caller runs the reference)."""
    reason = unsupported(re, im, delta, bu, h0, both)
    if reason is not None:
        raise ValueError(f"zoh_scan cannot take these inputs: {reason}")
    fwd, rev = (True, True) if both else (not reverse, reverse)
    return _ZOHScan.apply(re, im, delta, bu, h0, fwd, rev)
