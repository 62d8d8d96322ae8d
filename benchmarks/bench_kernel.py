"""MS4N training-step time: Vandermonde/FFT S4D kernel vs a naive power-by-power kernel.

Both variants are the same MS4N network (H = N = 64, one layer, C = 3, K = 5, B = 64)
with the same weights and the same FFT convolution; only the kernel generation differs:

* ours:  ``S4DKernel.forward`` — exp(ΛΔ·l) for all l at once (Vandermonde, no loop over L)
* naive: ``ssmbench.models.s4d.naive_kernel`` — a Python loop over k = 0..L-1 that builds
  every Ā^k explicitly by repeated multiplication (the step-by-step style of the
  authors' code), one autograd node chain per step.

A training step is zero_grad, forward, cross-entropy, backward, Adam step (the protocol's
optimizer). The kernel alone (forward + backward of K, no network) is timed too, since
at B=64 the step is dominated by parts both variants share (FFT convolution, GLU). Reported: the
median wall-clock time per step after warmup steps; both variants run in the same process
with their steps interleaved.

Usage: python benchmarks/bench_kernel.py [--quick] [--threads T]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from ssmbench.models import MS4Classifier
from ssmbench.models.s4d import S4DKernel, naive_kernel
from ssmbench.train import restart_with_malloc_env

BATCH, C, K, H, N = 64, 3, 5, 64, 64


def _make_step(model: torch.nn.Module, L: int):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, C, L, generator=gen)
    y = torch.randint(0, K, (BATCH,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> float:
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return time.perf_counter() - t0

    return step


def _kernel_seconds(make_kernel, kernel: S4DKernel, L: int, repeats: int) -> float:
    """Median seconds of one forward + backward of the kernel K (H, L) alone."""
    times = []
    for _ in range(repeats + 1):  # the first call is a warmup
        t0 = time.perf_counter()
        k = make_kernel(L)
        k.square().sum().backward()
        times.append(time.perf_counter() - t0)
        kernel.zero_grad(set_to_none=True)
    return statistics.median(times[1:])


def _use_naive_kernel(model: torch.nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, S4DKernel):
            m.forward = lambda L, _k=m: naive_kernel(_k, L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only L=1000, fewer steps")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    ap.add_argument(
        "--fast-malloc",
        action="store_true",
        help="run under ssmbench.train.MALLOC_ENV (as `ssmbench train --fast-malloc`)",
    )
    args = ap.parse_args()
    if args.fast_malloc:
        restart_with_malloc_env(sys.argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    # L -> (warmup steps, timed steps)
    plan = {1000: (1, 5)} if args.quick else {1000: (2, 9), 10000: (1, 2)}
    print(
        f"MS4N train step, B={BATCH} C={C} K={K} H={H} N={N}, "
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, "
        f"malloc={'MALLOC_ENV (--fast-malloc)' if args.fast_malloc else 'glibc default'}"
    )
    print(
        f"{'L':>6} {'ours s/step':>12} {'naive s/step':>13} {'ours/naive':>11}"
        f" {'kernel ours s':>14} {'kernel naive s':>15} {'kernel ratio':>13}"
    )
    ratios = []
    for L, (warmup, steps) in plan.items():
        torch.manual_seed(0)
        ours_model = MS4Classifier(C, K, L, d_model=H, d_state=N, layer_norm=True)
        naive_model = MS4Classifier(C, K, L, d_model=H, d_state=N, layer_norm=True)
        naive_model.load_state_dict(ours_model.state_dict())
        _use_naive_kernel(naive_model)
        ours_step, naive_step = _make_step(ours_model, L), _make_step(naive_model, L)
        for _ in range(warmup):
            ours_step()
            naive_step()
        ours_t, naive_t = [], []
        for _ in range(steps):  # alternate the variants so that drifts hit both alike
            ours_t.append(ours_step())
            naive_t.append(naive_step())
        ours, naive = statistics.median(ours_t), statistics.median(naive_t)
        ratios.append(ours / naive)
        kernel = next(m for m in ours_model.modules() if isinstance(m, S4DKernel))
        k_ours = _kernel_seconds(kernel, kernel, L, repeats=steps)
        naive_of = functools.partial(naive_kernel, kernel)
        k_naive = _kernel_seconds(naive_of, kernel, L, repeats=max(1, steps // 2))
        # The reference s4d.py form: exp(ΛΔ·l) for every l as one (H, N/2, L) tensor.
        k_vander = _kernel_seconds(kernel.vandermonde, kernel, L, repeats=max(1, steps // 2))
        print(
            f"{L:>6} {ours:>12.4f} {naive:>13.4f} {ours / naive:>11.3f}"
            f" {k_ours:>14.4f} {k_naive:>15.4f} {k_ours / k_naive:>13.3f}"
            f"   (plain Vandermonde kernel {k_vander:.4f} s)",
            flush=True,
        )
    verdict = "met" if max(ratios) <= 0.5 else "NOT met"
    print(f"target step ours/naive <= 0.5: {verdict} (worst step ratio {max(ratios):.3f})")


if __name__ == "__main__":
    main()
