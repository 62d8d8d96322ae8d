"""How close Mamba1's fused CPU scan (``ssmbench.models.mamba_cpu_scan``) comes to the
machine: its state updates per second on one core beside a bound measured on the same
core (goal: the kernel's forward at least half of the bound), its backward, and the
forward and backward of ``selective_scan``'s fused method beside its stepwise one.

An update is one (b, e, n, t) element of the recurrence: exp(Δ_t A_en), the multiply-add
h = exp(.) h + Δ_t u_t B_tn and the multiply-add of the dot <C_t, h_t>. The bound does the
same per element, with the same exponential (``mamba_cpu_scan._exp``) and the same numba
settings (``parallel=True``, the kernels' fastmath flags), one thread, over as many
elements, without the recurrence's dependency: the state read is not the one written, so
nothing waits for the previous step. Two forms:

* ``bound``: one loop over a block of 1,024 elements (in L1, reused), one Δ per pass, the
  dot summed across the block: what the arithmetic costs when it vectorises freely;
* ``bound, kernel's loops``: the kernel's loop nest (N innermost, the dot summed at every
  step into y_t, Δ_t and u_t read per step), the state still not carried: the kernel's
  shape without its dependency.

The kernel's shortfall from ``bound`` then splits into what its loop shape costs (a sum
across the vector lanes per step, the short inner loop's set-up for N = 64, the per-step
loads of Δ_t, u_t, B_t, C_t and the store of y_t) and what the dependency through h costs
(the next step's multiply-add waits for the last one's).

Shapes: (b 16, E 128, L 1,000, N 64) by default (``--shape bxExLxN``), float32. Timings:
the least process CPU time of ``--repeats`` runs after a warm-up (which compiles, or loads
the cache): one thread, so the time it held a core. The fused and stepwise methods run
through ``mamba_scan.selective_scan`` with gradients (forward and backward of the scan
alone); ``--no-stepwise`` skips the stepwise one (several seconds a run at the default
shape).

Usage: .venv/bin/python benchmarks/bench_scan_bound.py [--shape 16x128x1000x64]
    [--repeats 5] [--no-stepwise]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit, prange

from ssmbench.models.mamba_cpu_scan import _FASTMATH, _exp

GOAL = 0.5  # the kernel's forward over the bound
BLOCK = 1024  # elements of the bound's block: a, h, B, C and the output, 20 KiB in L1


@njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _bound(delta, a, h, b, c, out, passes):
    """passes x a.size updates: exp, the update's and the dot's multiply-adds per element,
    the state read (h) not the one written (out)."""
    M = a.size
    total = np.float32(0.0)
    for p in prange(passes):
        d = delta[p % delta.size]
        du = d * np.float32(0.5)
        acc = np.float32(0.0)
        for i in range(M):
            x = _exp(d * a[i]) * h[i] + du * b[i]
            out[i] = x
            acc += x * c[i]
        total += acc
    return total


@njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _bound_kernel_loops(u, delta, A, B, C, y, h):
    """The forward kernel's loops over u, delta, y (b, E, L), A (E, N), B, C (b, L, N), the
    state read from h (N) and written to a scratch row: no step waits for the previous."""
    bsz, E, L = u.shape
    N = A.shape[1]
    for task in prange(bsz * E):
        bi = task // E
        e = task - bi * E
        a = A[e]
        out = np.empty(N, dtype=A.dtype)
        for t in range(L):
            d = delta[bi, e, t]
            du = d * u[bi, e, t]
            b_t, c_t = B[bi, t], C[bi, t]
            acc = np.float32(0.0)
            for n in range(N):
                x = _exp(d * a[n]) * h[n] + du * b_t[n]
                out[n] = x
                acc += x * c_t[n]
            y[bi, e, t] = acc


def _best(fn, repeats: int) -> float:
    """The least process CPU time of ``repeats`` calls after a warm-up (one thread: the
    time it held a core, steadier than wall time when other processes share the cores)."""
    fn()  # warm-up: compiles or loads the cache
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="16x128x1000x64", help="b x E x L x N")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-stepwise", action="store_true", help="skip the stepwise method")
    args = ap.parse_args(argv)

    import platform

    import numba
    import torch

    from ssmbench.models import mamba_cpu_scan
    from ssmbench.models.mamba_scan import selective_scan

    torch.set_num_threads(1)
    numba.set_num_threads(1)
    bsz, E, L, N = (int(v) for v in args.shape.lower().split("x"))
    updates = bsz * E * L * N
    rng = np.random.default_rng(0)
    f32 = np.float32
    u = rng.standard_normal((bsz, E, L), f32)
    delta = np.log1p(np.exp(rng.standard_normal((bsz, E, L), f32) - 4)).astype(f32)  # softplus
    A = -np.tile(np.arange(1, N + 1, dtype=f32), (E, 1))  # Mamba1's initial A
    B = rng.standard_normal((bsz, L, N), f32)
    C = rng.standard_normal((bsz, L, N), f32)
    y = np.empty_like(u)
    chunk = min(64, L)

    no_states = np.empty((0, 0, 0, N), f32)
    states = np.empty((bsz, E, -(-L // chunk), N), f32)
    no_D, no_z = np.empty(0, f32), np.empty((0, 0, 0), f32)  # the scan alone
    groups, per_group = mamba_cpu_scan._groups(bsz, E)
    grad_y = rng.standard_normal((bsz, E, L), f32)

    def backward():
        outs = (np.empty_like(u), np.empty_like(u), np.empty((bsz, E, N), f32),
                np.zeros((groups, bsz, L, N), f32), np.zeros((groups, bsz, L, N), f32))  # fmt: skip
        mamba_cpu_scan._backward(u, delta, A, B, C, no_D, grad_y, states, chunk, per_group,
                                 *outs)  # fmt: skip

    block = [rng.standard_normal(BLOCK, f32) for _ in range(4)]
    block[0] = -np.abs(block[0]) * N / 2  # a: decay rates like A's
    passes = max(1, updates // BLOCK)
    kernel_h = rng.standard_normal(N, f32)
    times = {
        "forward (kernel)": _best(
            lambda: mamba_cpu_scan._forward(u, delta, A, B, C, no_D, no_z, chunk, False, y,
                                            no_states, no_z),
            args.repeats,
        ),
        "forward, keeping states": _best(
            lambda: mamba_cpu_scan._forward(u, delta, A, B, C, no_D, no_z, chunk, True, y,
                                            states, no_z),
            args.repeats,
        ),
        "backward (kernel)": _best(backward, args.repeats),
        "bound": _best(
            lambda: _bound(delta[0, 0], *block, np.empty(BLOCK, f32), passes), args.repeats
        ) * updates / (passes * BLOCK),
        "bound, kernel's loops": _best(
            lambda: _bound_kernel_loops(u, delta, A, B, C, y, kernel_h), args.repeats
        ),
    }  # fmt: skip

    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()}, "
          f"numba {numba.__version__} ({numba.threading_layer()}), 1 thread, float32")  # fmt: skip
    print(f"b {bsz}, E {E}, L {L:,}, N {N}: {updates:,} updates per pass; chunk {chunk}")
    print(f"{'':<26} {'cpu s':>8} {'G updates/s':>12} {'/ bound':>8}")
    bound = times["bound"]
    for label, seconds in times.items():
        print(f"{label:<26} {seconds:>8.3f} {updates / seconds / 1e9:>12.2f} "
              f"{bound / seconds:>8.2f}")  # fmt: skip
    ratio = bound / times["forward (kernel)"]
    print(f"kernel forward / bound: {ratio:.2f} (goal >= {GOAL:g}: "
          f"{'met' if ratio >= GOAL else 'NOT met'})")  # fmt: skip

    t = {k: torch.from_numpy(v) for k, v in dict(u=u, delta=delta, A=A).items()}
    t["B"], t["C"] = (torch.from_numpy(v).transpose(1, 2) for v in (B, C))  # (b, N, L)
    weight = torch.from_numpy(grad_y)

    def scan(method: str):
        def run():
            inputs = {k: v.clone().requires_grad_() for k, v in t.items()}
            out = selective_scan(**inputs, chunk_size=chunk, method=method)
            torch.autograd.grad((out * weight).sum(), list(inputs.values()))

        return run

    methods = ("fused",) if args.no_stepwise else ("fused", "stepwise")
    scans = {m: _best(scan(m), 1 if m == "stepwise" else args.repeats) for m in methods}
    print("\nselective_scan, forward and backward (1 thread, process CPU time):")
    for method, seconds in scans.items():
        print(f"  {method:<9} {seconds:>8.3f} s")
    if "stepwise" in scans:
        print(f"  stepwise / fused: {scans['stepwise'] / scans['fused']:.1f}x")
    return 0 if ratio >= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
