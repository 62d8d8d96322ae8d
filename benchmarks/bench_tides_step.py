"""TIDES's training step against S5's at the same input shape, and TIDES's peak memory at
EigenWorms' shape (issue 32, item 4: goals TIDES's step <= 2x S5's, peak <= 4 GiB).

Models: params.yaml's ``TIDES`` and ``S5`` entries (same width H 64, state size P 64 in 8
blocks, 2 layers, dropout 0.05, encoder depth 1; TIDES: Re Λ and B/C input-dependent, rank
8, RMSNorm on the projections), built by the registry as a run builds them
(``ssmbench.config.model_entry``, ``ssmbench.models.build_model``).

A training step is zero_grad, forward, cross-entropy, backward and Adam's step, on random
values with unit steps and K = 5 classes. Shapes (B, C, L): (256, 9, 256), (64, 3, 1,000)
and MotorImagery's (32, 64, 3,000). The two models' steps are interleaved after a warm-up
step each (drifts of a shared machine hit both alike); reported: median wall-clock ms of
each, the ratio TIDES / S5 (and the same ratio of process CPU time, steadier when other
processes share the cores) beside the goal 2, and ``B/C mm``: the time of the matrix
products the projected B_t, C_t need at that shape (per layer and step: three for B_t u_t,
three for Re(C_t h_t), each of (B L) x (H r) x (S c) multiply-adds; timed on random
matrices), with ``floor`` = (S5 + B/C mm) / S5, the ratio TIDES would have if these
products were all it added to S5.

Peak memory: each model runs two training steps at EigenWorms' shape (B 32, C 6, L 17,984,
K 5) in a fresh subprocess, which reports its peak RSS (VmHWM, ``proc_status``), beside
the goal 4 GiB (for TIDES; S5's for comparison).

Threads: 1 by default (``--threads``): on a machine whose cores other processes share, a
second thread makes every operation wait for a time slice.

Usage: .venv/bin/python benchmarks/bench_tides_step.py [--quick] [--steps 5] [--threads 1]
    [--shapes 256x9x256 64x3x1000 32x64x3000] [--peak-batch 32] [--no-peak]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from proc_status import memory_bytes

REPO = Path(__file__).resolve().parents[1]
MODELS = ("TIDES", "S5")
#: (B, C, L) of the time comparison: the issue's two shapes and MotorImagery's
SHAPES = ("256x9x256", "64x3x1000", "32x64x3000")
#: EigenWorms' shape at the Log-NCDE benchmark's batch, for the peak memory
EIGENWORMS = (32, 6, 17984)
K = 5
RATIO_GOAL = 2.0
PEAK_GOAL_MIB = 4096


def _shape(text: str) -> tuple[int, int, int]:
    B, C, L = (int(v) for v in text.lower().split("x"))
    return B, C, L


def _build(name: str, C: int, L: int):
    import torch

    from ssmbench.config import model_entry
    from ssmbench.models import build_model
    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    torch.manual_seed(0)
    return build_model(name, C, K, L, model_entry(params, name))


def _step_fn(model, B: int, C: int, L: int):
    """A closure running one training step; returns (wall s, process CPU s)."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, L, generator=gen)
    steps = torch.ones(B, L)
    y = torch.randint(0, K, (B,), generator=gen)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x, steps), y).backward()
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


def peak(name: str, B: int, C: int, L: int, threads: int) -> dict:
    """Two training steps of ``name`` in this process: its peak RSS (MiB)."""
    import torch

    torch.set_num_threads(threads)
    model = _build(name, C, L)
    step = _step_fn(model, B, C, L)
    build_mib = memory_bytes("VmRSS") / 2**20
    times = [step()[0] for _ in range(2)]
    return {"peak_mib": memory_bytes("VmHWM") / 2**20, "build_mib": build_mib, "step_s": times[-1]}


def _peak_in_subprocess(name: str, shape: tuple[int, int, int], threads: int) -> dict:
    cmd = [sys.executable, __file__, "--peak", name, *map(str, shape), "--threads", str(threads)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:] or f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the first shape only, 2 timed steps, TIDES's peak only")  # fmt: skip
    ap.add_argument("--steps", type=int, default=5, help="timed steps per model and shape")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES), help="BxCxL of the timing")
    ap.add_argument("--peak-batch", type=int, default=EIGENWORMS[0],
                    help="B of the peak-memory run (EigenWorms: 32)")  # fmt: skip
    ap.add_argument("--no-peak", action="store_true", help="leave the peak memory out")
    ap.add_argument("--peak", nargs=4, metavar=("MODEL", "B", "C", "L"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peak:
        name, *dims = args.peak
        print(json.dumps(peak(name, *map(int, dims), args.threads)))
        return 0

    import platform

    import torch

    torch.set_num_threads(args.threads)
    shapes = [_shape(s) for s in (args.shapes[:1] if args.quick else args.shapes)]
    n_steps = 2 if args.quick else args.steps
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), float32, "
          f"{n_steps} timed steps after 1 warm-up, K = {K}")  # fmt: skip
    header = (f"{'B':>4} {'C':>3} {'L':>6} {'TIDES ms':>9} {'S5 ms':>8} {'ratio':>6} "
              f"{'cpu ratio':>9} {'goal':>5} {'B/C mm ms':>10} {'floor':>6}")  # fmt: skip
    print(header)
    print("-" * len(header))
    ok = True
    for B, C, L in shapes:
        models = {name: _build(name, C, L) for name in MODELS}
        steps = {name: _step_fn(model, B, C, L) for name, model in models.items()}
        for step in steps.values():  # warm-up
            step()
        wall = {name: [] for name in MODELS}
        cpu = {name: [] for name in MODELS}
        for _ in range(n_steps):  # interleaved
            for name, step in steps.items():
                w, c = step()
                wall[name].append(w)
                cpu[name].append(c)
        t = {name: statistics.median(v) for name, v in wall.items()}
        c = {name: statistics.median(v) for name, v in cpu.items()}
        mm = _bc_matmul_s(models["TIDES"], B, L)
        ratio = t["TIDES"] / t["S5"]
        ok &= ratio <= RATIO_GOAL
        print(f"{B:>4} {C:>3} {L:>6} {t['TIDES'] * 1e3:>9.0f} {t['S5'] * 1e3:>8.0f} "
              f"{ratio:>6.2f} {c['TIDES'] / c['S5']:>9.2f} {RATIO_GOAL:>5.0f} "
              f"{mm * 1e3:>10.0f} {(t['S5'] + mm) / t['S5']:>6.2f}", flush=True)  # fmt: skip
        del models, steps
    if args.no_peak:
        return 0 if ok else 1
    shape = (args.peak_batch, *EIGENWORMS[1:])
    print(
        f"\npeak RSS (VmHWM) of two training steps at B={shape[0]}, C={shape[1]}, "
        f"L={shape[2]:,}, each model in a fresh process; goal {PEAK_GOAL_MIB:,} MiB (TIDES)"
    )
    print(f"{'model':<6} {'peak MiB':>9} {'built MiB':>10} {'step s':>7} {'goal MiB':>9}")
    for name in MODELS[:1] if args.quick else MODELS:
        r = _peak_in_subprocess(name, shape, args.threads)
        if "error" in r:
            print(f"{name:<6} failed: {r['error']}")
            ok = False
            continue
        goal = f"{PEAK_GOAL_MIB:>9,}" if name == "TIDES" else f"{'-':>9}"
        if name == "TIDES":
            ok &= r["peak_mib"] <= PEAK_GOAL_MIB
        print(f"{name:<6} {r['peak_mib']:>9,.0f} {r['build_mib']:>10,.0f} {r['step_s']:>7.1f} "
              f"{goal}", flush=True)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
