"""MS4N kernel and training-step time: our factorised Vandermonde kernel against the two
formulations the references use, the kernel alone and the whole training step, in one run.

Anchors (each dropped into the same MS4N network, same weights, same FFT convolution; only
the kernel generation differs; ``ssmbench.models.s4d``):

* ours:    ``S4DKernel.forward``: Ā^{m i + j} = Ā^{m i} Ā^j with m ≈ sqrt(L), one real
  batched matmul (≈ 2 H·N/2·sqrt(L) complex exponentials);
* authors: ``complex_power_kernel``: the MS4N authors' ``MS4NKernel`` (github
  h-saadatmand/MS4N, ``model/MS4N.py``): Ā.unsqueeze(-1) ** arange(L), then an einsum;
* s4d.py:  ``S4DKernel.vandermonde``: state-spaces' ``s4d.py``, exp(ΛΔ · arange(L)) as one
  (H, N/2, L) tensor, then an einsum;
* loop:    ``naive_kernel``: a Python loop over the L powers (a third line; not at
  L = 50,000, where its L autograd nodes alone take minutes).

B = 64, H = N = 64, one layer, C = 3, K = 5 (the classifier's constructor defaults but
LayerNorm). A training step is zero_grad, forward, cross-entropy, backward, Adam step. The
kernel alone is the forward + backward of K (H, L). Reported: medians after warm-up, the
variants' steps interleaved so that drifts hit each alike; the ratios are ours / theirs.

Usage: python benchmarks/bench_kernel.py [--quick] [--lengths 1000 10000 50000] [--threads T]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from ssmbench.models import MS4Classifier
from ssmbench.models.s4d import S4DKernel, complex_power_kernel, naive_kernel
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


#: variant -> the kernel function (kernel, L) -> K (H, L)
VARIANTS = {
    "ours": lambda kernel, L: S4DKernel.forward(kernel, L),
    "authors": complex_power_kernel,
    "s4d.py": lambda kernel, L: kernel.vandermonde(L),
    "loop": naive_kernel,
}
#: the loop's L autograd nodes: beyond this L it is left out
LOOP_MAX_L = 10_000
#: L -> (warm-up steps, timed steps)
PLAN = {1000: (2, 7), 10000: (1, 3), 50000: (1, 1)}


def _kernel_seconds(kernel_fn, kernel: S4DKernel, L: int, repeats: int) -> float:
    """Median seconds of one forward + backward of the kernel K (H, L) alone."""
    times = []
    for _ in range(repeats + 1):  # the first call is a warm-up
        t0 = time.perf_counter()
        kernel_fn(kernel, L).square().sum().backward()
        times.append(time.perf_counter() - t0)
        kernel.zero_grad(set_to_none=True)
    return statistics.median(times[1:])


def _with_kernel(model: torch.nn.Module, kernel_fn) -> None:
    for m in model.modules():
        if isinstance(m, S4DKernel):
            m.forward = lambda L, _k=m: kernel_fn(_k, L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only L=1000, fewer steps")
    ap.add_argument("--lengths", type=int, nargs="*", default=list(PLAN))
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
    plan = {1000: (1, 3)} if args.quick else {L: PLAN.get(L, (1, 1)) for L in args.lengths}
    print(
        f"MS4N, B={BATCH} C={C} K={K} H={H} N={N}, torch {torch.__version__}, "
        f"threads={torch.get_num_threads()}, "
        f"malloc={'MALLOC_ENV (--fast-malloc)' if args.fast_malloc else 'glibc default'}"
    )
    print(f"{'L':>6} {'variant':<8} {'kernel s':>10} {'step s':>9} "
          f"{'ours/this kernel':>17} {'ours/this step':>15}")  # fmt: skip
    for L, (warmup, steps) in plan.items():
        variants = [v for v in VARIANTS if v != "loop" or L <= LOOP_MAX_L]
        torch.manual_seed(0)
        models = {v: MS4Classifier(C, K, L, d_model=H, d_state=N, layer_norm=True) for v in variants}
        for v in variants[1:]:
            models[v].load_state_dict(models["ours"].state_dict())
        for v in variants:
            _with_kernel(models[v], VARIANTS[v])
        step_fns = {v: _make_step(models[v], L) for v in variants}
        for _ in range(warmup):
            for v in variants:
                step_fns[v]()
        times = {v: [] for v in variants}
        for _ in range(steps):  # interleaved
            for v in variants:
                times[v].append(step_fns[v]())
        step_s = {v: statistics.median(t) for v, t in times.items()}
        kernel_s = {}
        for v in variants:
            kernel = next(m for m in models[v].modules() if isinstance(m, S4DKernel))
            repeats = max(steps, 3) if v != "loop" else 1
            kernel_s[v] = _kernel_seconds(VARIANTS[v], kernel, L, repeats)
        for v in variants:
            print(f"{L:>6} {v:<8} {kernel_s[v]:>10.4f} {step_s[v]:>9.3f} "
                  f"{kernel_s['ours'] / kernel_s[v]:>17.3f} {step_s['ours'] / step_s[v]:>15.3f}",
                  flush=True)  # fmt: skip
        if L > LOOP_MAX_L:
            print(f"{L:>6} loop     left out (L > {LOOP_MAX_L:,})")


if __name__ == "__main__":
    main()
