"""MS4N kernel and training-step time: our kernel and step against the two formulations
the references use, the kernel alone and the whole training step, in one run.

Variants (same MS4N network and weights; ``ssmbench.models.s4d``):

* ours:       ``S4DKernel.forward`` (Ā^{m i + j} = Ā^{m i} Ā^j, m ≈ sqrt(L): one real
  batched matmul), the layer's fast path (``CausalFFTConv``, D folded into the kernel,
  MS4's channels-last layout in and out, the kernel computed once per batch) and
  the batch in micro-batches (``micro_batch_rows``: the largest power of two of rows whose
  (rows, H, 2L) float32 FFT buffer fits 12 MiB, well under glibc's 32 MiB mmap threshold);
* ours-whole: the same on the whole batch at once (what the micro-batches add);
* ours-plain: our kernel on the plain path (``S4DLayer.plain``: ``ssm_plain``, autograd
  through rfft/irfft, + D u, on the (B, H, L) layout; the whole batch): the network
  before this optimisation;
* authors:    the MS4N authors' ``MS4NKernel`` (github h-saadatmand/MS4N, ``model/MS4N.py``):
  Ā.unsqueeze(-1) ** arange(L), then an einsum (``complex_power_kernel``), on the plain path;
* s4d.py:     state-spaces' ``s4d.py``, exp(ΛΔ · arange(L)) then an einsum
  (``S4DKernel.vandermonde``), on the plain path;
* loop:       ``naive_kernel``, a Python loop over the L powers, on the plain path (up to
  L = 10,000, where its L autograd nodes alone take minutes).

B = 64, H = N = 64, one layer, C = 3, K = 5. A training step is zero_grad, forward,
cross-entropy, backward, Adam step. The kernel alone is the forward + backward of K (H, L).
Reported: medians after warm-up, the variants' steps interleaved so that drifts hit each
alike; ratios ours / each. Peak memory: each of ours, ours-whole and ours-plain runs two
steps in its own process (``--peak``), which reports its peak RSS less the RSS before the
first step (VmHWM less VmRSS).

Usage: python benchmarks/bench_kernel.py [--quick] [--lengths 1000 10000 50000] [--threads T]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from proc_status import memory_bytes

from ssmbench.models import MS4Classifier
from ssmbench.models.s4d import S4DKernel, S4DLayer
from ssmbench.train import restart_with_malloc_env
from ssmbench.train.micro_batches import backward_batch
from ssmbench.train.objective import Objective

# the authors' and the loop's kernels are test oracles: tests/s4d_oracles.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from s4d_oracles import complex_power_kernel, naive_kernel  # noqa: E402

BATCH, C, K, H, N = 64, 3, 5, 64, 64
#: the FFT buffer of a micro-batch stays under this (glibc's mmap threshold is 32 MiB)
MICRO_BATCH_BYTES = 12 * 2**20

#: variant -> (kernel (kernel, L) -> K (H, L), layer path, micro-batched)
VARIANTS = {
    "ours": (lambda kernel, L: S4DKernel.forward(kernel, L), "fast", True),
    "ours-whole": (lambda kernel, L: S4DKernel.forward(kernel, L), "fast", False),
    "ours-plain": (lambda kernel, L: S4DKernel.forward(kernel, L), "plain", False),
    "authors": (complex_power_kernel, "plain", False),
    "s4d.py": (lambda kernel, L: kernel.vandermonde(L), "plain", False),
    "loop": (naive_kernel, "plain", False),
}
#: the variants whose peak memory is measured, each in its own process
PEAK_VARIANTS = ("ours", "ours-whole", "ours-plain")
#: the loop's L autograd nodes: beyond this L it is left out
LOOP_MAX_L = 10_000
#: L -> (warm-up steps, timed steps)
PLAN = {1000: (2, 7), 10000: (1, 3), 50000: (1, 1)}


def micro_batch_rows(L: int) -> int:
    """The largest power of two of rows whose (rows, H, 2L) float32 buffer fits
    MICRO_BATCH_BYTES (at least one row, at most the batch)."""
    rows = 1
    while rows * 2 <= BATCH and rows * 2 * H * 2 * L * 4 <= MICRO_BATCH_BYTES:
        rows *= 2
    return rows


def build(variant: str, L: int) -> MS4Classifier:
    """params.yaml's MS4N shape (one layer, LayerNorm) with the variant's kernel and path."""
    torch.manual_seed(0)
    model = MS4Classifier(C, K, L, d_model=H, d_state=N, layer_norm=True)
    kernel_fn, path, _ = VARIANTS[variant]
    for m in model.modules():
        if isinstance(m, S4DKernel):
            m.forward = lambda L, _k=m: kernel_fn(_k, L)
        if isinstance(m, S4DLayer):
            m.plain = path == "plain"
    return model


def make_step(variant: str, model: torch.nn.Module, L: int):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, C, L, generator=gen)
    y = torch.randint(0, K, (BATCH,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    objective = Objective({"task": "classification", "L": L, "n_classes": K}, (BATCH,))
    rows = micro_batch_rows(L) if VARIANTS[variant][2] else None

    def step() -> float:
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        backward_batch(model, objective, x, y, None, {}, rows, lambda loss, inputs: None)
        opt.step()
        return time.perf_counter() - t0

    return step


def peak(variant: str, L: int) -> dict:
    """Two training steps of ``variant`` in this process: its peak RSS less the RSS with
    the model and batch built (MiB)."""
    step = make_step(variant, build(variant, L), L)
    before = memory_bytes("VmRSS")
    for _ in range(2):
        step()
    hwm = memory_bytes("VmHWM")
    return {"added_mib": (hwm - before) / 2**20, "peak_mib": hwm / 2**20}


def _peak_in_subprocess(variant: str, L: int, args) -> dict:
    cmd = [sys.executable, __file__, "--peak", variant, str(L)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _kernel_seconds(kernel_fn, kernel: S4DKernel, L: int, repeats: int) -> float:
    """Median seconds of one forward + backward of the kernel K (H, L) alone."""
    times = []
    for _ in range(repeats + 1):  # the first call is a warm-up
        t0 = time.perf_counter()
        kernel_fn(kernel, L).square().sum().backward()
        times.append(time.perf_counter() - t0)
        kernel.zero_grad(set_to_none=True)
    return statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only L=1000, fewer steps")
    ap.add_argument("--lengths", type=int, nargs="*", default=list(PLAN))
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    ap.add_argument("--peak", nargs=2, metavar=("VARIANT", "L"), help=argparse.SUPPRESS)
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
    if args.peak:
        print(json.dumps(peak(args.peak[0], int(args.peak[1]))))
        return
    plan = {1000: (1, 3)} if args.quick else {L: PLAN.get(L, (1, 1)) for L in args.lengths}
    print(
        f"MS4N, B={BATCH} C={C} K={K} H={H} N={N}, torch {torch.__version__}, "
        f"threads={torch.get_num_threads()}, "
        f"malloc={'MALLOC_ENV (--fast-malloc)' if args.fast_malloc else 'glibc default'}"
    )
    print(f"{'L':>6} {'variant':<10} {'rows':>4} {'kernel s':>10} {'step s':>9} "
          f"{'ours/this kernel':>17} {'ours/this step':>15} {'peak added MiB':>15}")  # fmt: skip
    for L, (warmup, steps) in plan.items():
        variants = [v for v in VARIANTS if v != "loop" or L <= LOOP_MAX_L]
        models = {v: build(v, L) for v in variants}
        step_fns = {v: make_step(v, models[v], L) for v in variants}
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
            kernel_s[v] = _kernel_seconds(VARIANTS[v][0], kernel, L, repeats)
        del models, step_fns
        peaks = {v: _peak_in_subprocess(v, L, args) for v in PEAK_VARIANTS}
        for v in variants:
            rows = micro_batch_rows(L) if VARIANTS[v][2] else BATCH
            added = f"{peaks[v]['added_mib']:>15.0f}" if v in peaks else f"{'':>15}"
            print(f"{L:>6} {v:<10} {rows:>4} {kernel_s[v]:>10.4f} {step_s[v]:>9.3f} "
                  f"{kernel_s['ours'] / kernel_s[v]:>17.3f} {step_s['ours'] / step_s[v]:>15.3f}"
                  f"{added}", flush=True)  # fmt: skip
        if L > LOOP_MAX_L:
            print(f"{L:>6} loop       left out (L > {LOOP_MAX_L:,})")
        print(
            f"{L:>6} peak: ours / ours-plain "
            f"{peaks['ours']['added_mib'] / peaks['ours-plain']['added_mib']:.2f}, "
            f"ours-whole / ours-plain "
            f"{peaks['ours-whole']['added_mib'] / peaks['ours-plain']['added_mib']:.2f}"
        )


if __name__ == "__main__":
    main()
