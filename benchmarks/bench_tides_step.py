"""TIDES's and S5's training step on the fused CPU kernel and on the reference path, side by
side, beside MS4N's step (goal: TIDES's step <= 3x MS4N's at B 64, C 3, L 1,000), and
TIDES's peak memory at EigenWorms' shape (goal: <= 2.9 GiB).

Models: params.yaml's ``TIDES``, ``S5`` and ``MS4N`` entries (TIDES and S5: width H 64,
state size P 64 in 8 blocks, 2 layers, dropout 0.05, encoder depth 1; TIDES: Re Λ and B/C
input-dependent, rank 8, RMSNorm on the projections), built by the registry as a run
builds them (``ssmbench.config.model_entry``, ``ssmbench.models.build_model``). "fused":
the layer's default on the CPU (``tides_cpu_scan.zoh_scan``: the zero-order hold and the
recurrence in one numba kernel); "ref": the same weights with ``use_fused = False``
(``tides_scan.zoh_elements`` and ``linear_scan``).

A training step is zero_grad, forward, cross-entropy, backward and Adam's step, on random
values with unit steps and K = 5 classes. Shapes (B, C, L): (256, 9, 256), (64, 3, 1,000)
and MotorImagery's (32, 64, 3,000). All five steps are interleaved after a warm-up step
each (drifts of a shared machine hit all alike); reported: the median wall-clock ms of
each, TIDES's over MS4N's (beside the goal 3 at (64, 3, 1,000)) and over S5's, and
``B/C mm``: the time of the matrix products TIDES's projected B_t, C_t need at that shape
(per layer and step: three for B_t u_t, three for Re(C_t h_t), each of (B L) x (H r) x
(S c) multiply-adds; timed on random matrices), which no scan makes shorter; then the same
of the median process CPU time, steadier than wall-clock time when other processes share
the cores (they stretch every step's wall time).

Peak memory: TIDES (fused and ref) runs two training steps at EigenWorms' shape (B 32, C 6,
L 17,984, K 5) in a fresh subprocess each, which reports its peak RSS (VmHWM,
``proc_status``), beside the goal 2.9 GiB (the fused path, the default).

``--bound``: the forward kernel's state updates per second on one thread (an update: one
(state, step) complex exp of ΛΔ, the gain and the multiply-add a h + b), at TIDES's shape
(per-step Re Λ, static Im Λ; T 1,000, B 64, S 64, float32), beside the bound: the same
arithmetic over the same numbers in a loop with the same numba settings where each update
reads its h from memory instead of the previous step (no dependency between steps), and
beside the same loop without the exp, sin, cos (the memory traffic's share), and forward
and backward through autograd. Goal: the kernel at >= half the bound.

``--compile``: the first call's compile time of the four float32 kernels (complex and real,
forward and backward), cold (a fresh subprocess with an empty ``NUMBA_CACHE_DIR``), and
their load from that cache in another.

Threads: 1 by default (``--threads``): on a machine whose cores other processes share, a
second thread makes every operation wait for a time slice.

Usage: .venv/bin/python benchmarks/bench_tides_step.py [--quick] [--steps 5] [--threads 1]
    [--shapes 256x9x256 64x3x1000 32x64x3000] [--peak-batch 32] [--no-peak] [--bound]
    [--compile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proc_status import memory_bytes

REPO = Path(__file__).resolve().parents[1]
#: the timed rows: (label, params.yaml entry, fused)
ROWS = (
    ("TIDES ref", "TIDES", False),
    ("TIDES fused", "TIDES", True),
    ("S5 ref", "S5", False),
    ("S5 fused", "S5", True),
    ("MS4N", "MS4N", True),
)
#: (B, C, L) of the time comparison: the goal's shape and two of the UEA sets'
SHAPES = ("256x9x256", "64x3x1000", "32x64x3000")
GOAL_SHAPE = (64, 3, 1000)
#: EigenWorms' shape at the Log-NCDE benchmark's batch, for the peak memory
EIGENWORMS = (32, 6, 17984)
K = 5
RATIO_GOAL = 3.0  # TIDES's step over MS4N's (fused: the CPU's default)
PEAK_GOAL_MIB = 2.9 * 1024
BOUND_SHAPE = (1000, 64, 64)  # T, B, S


def _shape(text: str) -> tuple[int, int, int]:
    B, C, L = (int(v) for v in text.lower().split("x"))
    return B, C, L


def _build(name: str, C: int, L: int, fused: bool = True):
    import torch

    from ssmbench.config import model_entry
    from ssmbench.models import build_model
    from ssmbench.models.tides import TIDESSSM
    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    torch.manual_seed(0)
    model = build_model(name, C, K, L, model_entry(params, name))
    for module in model.modules():
        if isinstance(module, TIDESSSM):
            module.use_fused = fused  # an instance attribute over the class default
    return model


def _step_fn(model, B: int, C: int, L: int):
    """A closure running one training step; returns (wall s, process CPU s)."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, L, generator=gen)
    extra = {"steps": torch.ones(B, L)} if "steps" in model.INPUTS else {}
    y = torch.randint(0, K, (B,), generator=gen)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x, **extra), y).backward()
        optimizer.step()
        return time.perf_counter() - wall, time.process_time() - cpu

    return step


def _bc_matmul_s(model, B: int, L: int, repeats: int = 3) -> float:
    """Seconds of the projected B_t / C_t matrix products of one step (all layers): per layer
    (N, H r) @ (H r, S c), (N, S c) @ (S c, H r) and their two backward products each."""
    import torch

    N = B * L
    total = 0.0
    for block in model.blocks:
        ssm = block.ssm
        if not (ssm.bc_mode == "input_dependent" and ssm.rank >= 0):
            continue
        r = ssm.rank if ssm.rank > 0 else ssm.d_model
        wide, narrow = ssm.d_model * r, ssm.dirs * ssm.S * ssm.c
        a, w = torch.randn(N, wide), torch.randn(wide, narrow)
        g, v = torch.randn(N, narrow), torch.randn(narrow, wide)
        products = [(a, w), (g, w.T), (a.T, g), (g, v), (a, v.T), (g.T, a)]
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for left, right in products:
                left @ right
            best = min(best, time.perf_counter() - start)
        total += best
    return total


def peak(name: str, B: int, C: int, L: int, threads: int, fused: bool) -> dict:
    """Two training steps of ``name`` in this process: its peak RSS (MiB)."""
    import torch

    torch.set_num_threads(threads)
    model = _build(name, C, L, fused)
    step = _step_fn(model, B, C, L)
    build_mib = memory_bytes("VmRSS") / 2**20
    times = [step()[0] for _ in range(2)]
    return {"peak_mib": memory_bytes("VmHWM") / 2**20, "build_mib": build_mib, "step_s": times[-1]}


def _subprocess(args: list[str], threads: int, env: dict | None = None) -> dict:
    cmd = [sys.executable, __file__, *args, "--threads", str(threads)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:] or f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def timing(shapes: list[tuple[int, int, int]], n_steps: int) -> bool:
    """The step tables; True when the goal holds at GOAL_SHAPE (or it was not timed)."""
    header = (f"{'B':>4} {'C':>3} {'L':>6} | {'TIDES ms: ref':>13} {'fused':>6} | "
              f"{'S5 ms: ref':>10} {'fused':>6} | {'MS4N ms':>7} | {'TIDES/MS4N: ref':>15} "
              f"{'fused':>6} {'goal':>4} | {'TIDES/S5: ref':>13} {'fused':>6} | "
              f"{'B/C mm ms':>9}")  # fmt: skip
    print(header)
    print("-" * len(header))
    ok, cpu_rows = True, []
    for B, C, L in shapes:
        models = {label: _build(name, C, L, fused) for label, name, fused in ROWS}
        steps = {label: _step_fn(model, B, C, L) for label, model in models.items()}
        for step in steps.values():  # warm-up (and the kernels' load or compile)
            step()
        wall = {label: [] for label in steps}
        cpu = {label: [] for label in steps}
        for _ in range(n_steps):  # interleaved
            for label, step in steps.items():
                w, c = step()
                wall[label].append(w)
                cpu[label].append(c)
        t = {label: statistics.median(v) * 1e3 for label, v in wall.items()}
        c = {label: statistics.median(v) * 1e3 for label, v in cpu.items()}
        cpu_rows.append(((B, C, L), c))
        mm = _bc_matmul_s(models["TIDES fused"], B, L) * 1e3
        goal = (B, C, L) == GOAL_SHAPE
        ratio = t["TIDES fused"] / t["MS4N"]
        ok &= ratio <= RATIO_GOAL or not goal
        print(f"{B:>4} {C:>3} {L:>6} | {t['TIDES ref']:>13.0f} {t['TIDES fused']:>6.0f} | "
              f"{t['S5 ref']:>10.0f} {t['S5 fused']:>6.0f} | {t['MS4N']:>7.0f} | "
              f"{t['TIDES ref'] / t['MS4N']:>15.2f} {ratio:>6.2f} "
              f"{(f'{RATIO_GOAL:g}' if goal else '-'):>4} | "
              f"{t['TIDES ref'] / t['S5 ref']:>13.2f} {t['TIDES fused'] / t['S5 fused']:>6.2f} | "
              f"{mm:>9.0f}", flush=True)  # fmt: skip
        del models, steps
    print(f"\nthe same, process CPU ms (cpu)\n{header[: header.rindex('|')]}")
    print("-" * header.rindex("|"))
    for (B, C, L), c in cpu_rows:
        goal = f"{RATIO_GOAL:g}" if (B, C, L) == GOAL_SHAPE else "-"
        print(f"{B:>4} {C:>3} {L:>6} | {c['TIDES ref']:>13.0f} {c['TIDES fused']:>6.0f} | "
              f"{c['S5 ref']:>10.0f} {c['S5 fused']:>6.0f} | {c['MS4N']:>7.0f} | "
              f"{c['TIDES ref'] / c['MS4N']:>15.2f} {c['TIDES fused'] / c['MS4N']:>6.2f} "
              f"{goal:>4} | {c['TIDES ref'] / c['S5 ref']:>13.2f} "
              f"{c['TIDES fused'] / c['S5 fused']:>6.2f} |")  # fmt: skip
    return ok


def peaks(shape: tuple[int, int, int], threads: int) -> bool:
    print(
        f"\npeak RSS (VmHWM) of two TIDES training steps at B={shape[0]}, C={shape[1]}, "
        f"L={shape[2]:,}, each in a fresh process; goal {PEAK_GOAL_MIB:,.0f} MiB (fused)"
    )
    print(f"{'path':<12} {'peak MiB':>9} {'built MiB':>10} {'step s':>7} {'goal MiB':>9}")
    ok = True
    for label, fused in (("TIDES fused", True), ("TIDES ref", False)):
        args = ["--peak", "TIDES", *map(str, shape)] + ([] if fused else ["--reference"])
        r = _subprocess(args, threads)
        if "error" in r:
            print(f"{label:<12} failed: {r['error']}")
            ok = False
            continue
        goal = f"{PEAK_GOAL_MIB:>9,.0f}" if fused else f"{'-':>9}"
        ok &= r["peak_mib"] <= PEAK_GOAL_MIB or not fused
        print(f"{label:<12} {r['peak_mib']:>9,.0f} {r['build_mib']:>10,.0f} "
              f"{r['step_s']:>7.1f} {goal}", flush=True)  # fmt: skip
    return ok


# --- the bound -------------------------------------------------------------------------------


def _bound_kernels():
    """The loops of ``--bound``, compiled with the kernels' numba settings: the forward
    kernel's arithmetic, each update's h read from ``hin`` instead of the previous step;
    with ``math`` False, without exp, sin, cos (a, gain from the inputs by a product)."""
    import numpy as np
    from numba import njit, prange

    from ssmbench.models.tides_cpu_scan import _U1, _U2, JIT_OPTIONS, _zoh

    options = {**JIT_OPTIONS, "cache": False}

    def make(math: bool):
        @njit(**options)
        def loop(re, im, delta, bu, hin, out, T, B, S, chunks):
            S_ = np.uint64(S)
            for c in prange(chunks):
                b0 = c * B // chunks
                b1 = (c + 1) * B // chunks
                hr = np.zeros(S, np.float64)
                hi = np.zeros(S, np.float64)
                for t in range(T):
                    for bb in range(b0, b1):
                        o = np.uint64((t * B + bb) * S)
                        for s in range(S_):
                            lr, li, dt = re[o + s], im[s], delta[o + s]
                            if math:
                                a_re, a_im, m_re, m_im, il_re, il_im = _zoh(lr, li, dt)
                            else:
                                a_re, a_im = np.float64(lr) * dt, np.float64(li) * dt
                                m_re, m_im, il_re, il_im = a_re, a_im, np.float64(lr), -li
                            g_re = m_re * il_re - m_im * il_im
                            g_im = m_re * il_im + m_im * il_re
                            j = _U2 * (o + s)
                            u_re, u_im = np.float64(bu[j]), np.float64(bu[j + _U1])
                            p_re, p_im = np.float64(hin[j]), np.float64(hin[j + _U1])
                            hr[s] = a_re * p_re - a_im * p_im + (g_re * u_re - g_im * u_im)
                            hi[s] = a_re * p_im + a_im * p_re + (g_re * u_im + g_im * u_re)
                        for s in range(S_):
                            out[_U2 * (o + s)] = hr[s]
                            out[_U2 * (o + s) + _U1] = hi[s]

        return loop

    return make(True), make(False)


def bound(repeats: int = 7) -> None:
    import numba
    import numpy as np
    import torch

    from ssmbench.models import tides_cpu_scan
    from ssmbench.models.tides_cpu_scan import zoh_scan

    torch.set_num_threads(1)
    numba.set_num_threads(1)
    T, B, S = BOUND_SHAPE
    gen = torch.Generator().manual_seed(0)
    re = (-torch.rand(T, B, S, generator=gen) - 0.1).requires_grad_()
    im = (3 * torch.randn(S, generator=gen)).requires_grad_()
    delta = (0.1 * torch.rand(T, B, S, generator=gen)).requires_grad_()
    bu = torch.randn(T, B, S, generator=gen, dtype=torch.complex64).requires_grad_()
    grad = torch.randn(T, B, S, generator=gen, dtype=torch.complex64)
    flat = tides_cpu_scan._flat
    h = zoh_scan(re, im, delta, bu)
    hin, out = flat(torch.randn_like(bu)), flat(torch.empty_like(bu))
    args = (flat(re), flat(im), flat(delta), flat(bu), hin, out, T, B, S, 1)
    # as zoh_scan calls it (the flags uint64: int64 ones would compile another, slower
    # specialisation, whose index arithmetic is signed)
    fwd_args = (flat(re), flat(im), flat(delta), flat(bu), flat(bu.new_empty(0)), flat(h),
                np.uint64(1), np.uint64(0), True, False, T, B, S, 1)  # fmt: skip
    bound_math, bound_memory = _bound_kernels()
    n = T * B * S

    def best(fn) -> float:
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    def backward():
        h = zoh_scan(re, im, delta, bu)
        h.backward(grad)

    kernel = best(lambda: tides_cpu_scan._forward_complex(*fwd_args))
    without_dependency = best(lambda: bound_math(*args))
    memory_only = best(lambda: bound_memory(*args))
    fwd_bwd = best(backward)
    print(f"\nstate updates per second, 1 thread (T {T:,}, B {B}, S {S}, float32; per-step "
          f"Re Λ, static Im Λ; the best of {repeats})")  # fmt: skip
    print(f"{'loop':<52} {'M updates/s':>12} {'ns/update':>10} {'/ bound':>8}")
    rows = (
        ("forward kernel (the recurrence)", kernel),
        ("bound: same arithmetic, h read, no dependency", without_dependency),
        ("  the same without exp, sin, cos (memory's share)", memory_only),
        ("forward + backward (zoh_scan, autograd)", fwd_bwd),
    )
    for label, seconds in rows:
        print(f"{label:<52} {n / seconds / 1e6:>12.0f} {seconds / n * 1e9:>10.2f} "
              f"{without_dependency / seconds:>8.2f}")  # fmt: skip
    print(f"goal: the forward kernel at >= 0.5 of the bound: "
          f"{'met' if without_dependency / kernel >= 0.5 else 'not met'}")  # fmt: skip


# --- the compile time ------------------------------------------------------------------------


def compile_once() -> dict:
    """The four float32 kernels' first call (forward and backward, complex and real)."""
    import torch

    start = time.perf_counter()
    from ssmbench.models.tides_cpu_scan import zoh_scan

    imported = time.perf_counter()
    T, B, S = 3, 2, 4
    for real in (False, True):
        field = torch.float32 if real else torch.complex64
        parts = [-torch.rand(S), None if real else torch.randn(S), torch.rand(T, B, S),
                 torch.randn(T, B, S, dtype=field)]  # fmt: skip
        parts = [None if p is None else p.requires_grad_() for p in parts]
        zoh_scan(*parts).abs().sum().backward()
    return {"import_s": imported - start, "first_call_s": time.perf_counter() - imported}


def compile_times(threads: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = {"NUMBA_CACHE_DIR": cache}
        cold = _subprocess(["--compile-once"], threads, env)
        warm = _subprocess(["--compile-once"], threads, env)
    print("\nfirst call of the four float32 kernels (forward, backward; complex, real)")
    for label, r in (("cold (empty cache)", cold), ("from the cache", warm)):
        if "error" in r:
            print(f"{label:<20} failed: {r['error']}")
        else:
            print(f"{label:<20} {r['first_call_s']:>6.1f} s (import {r['import_s']:.1f} s)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the goal's shape only, 2 timed steps, no peak")  # fmt: skip
    ap.add_argument("--steps", type=int, default=5, help="timed steps per model and shape")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES), help="BxCxL of the timing")
    ap.add_argument("--peak-batch", type=int, default=EIGENWORMS[0],
                    help="B of the peak-memory run (EigenWorms: 32)")  # fmt: skip
    ap.add_argument("--no-peak", action="store_true", help="leave the peak memory out")
    ap.add_argument("--bound", action="store_true",
                    help="the kernel's updates per second beside its bound, only")  # fmt: skip
    ap.add_argument("--compile", action="store_true", help="the cold compile time, only")
    ap.add_argument("--peak", nargs=4, metavar=("MODEL", "B", "C", "L"), help=argparse.SUPPRESS)
    ap.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compile-once", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peak:
        name, *dims = args.peak
        print(json.dumps(peak(name, *map(int, dims), args.threads, not args.reference)))
        return 0
    if args.compile_once:
        print(json.dumps(compile_once()))
        return 0

    import platform

    import torch

    torch.set_num_threads(args.threads)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), float32, "
          f"K = {K}")  # fmt: skip
    if args.bound:
        bound()
        return 0
    if args.compile:
        compile_times(args.threads)
        return 0
    shapes = [GOAL_SHAPE] if args.quick else [_shape(s) for s in args.shapes]
    n_steps = 2 if args.quick else args.steps
    print(f"training steps: median wall ms of {n_steps} after 1 warm-up, the rows interleaved")
    ok = timing(shapes, n_steps)
    if not (args.no_peak or args.quick):
        ok &= peaks((args.peak_batch, *EIGENWORMS[1:]), args.threads)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
