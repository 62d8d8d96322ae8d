"""The selective models' training step beside MS4N's, each Mamba1 scan method side by side
(goals: Mamba1's step <= 3x MS4N's and TIDES's <= 3x, at B 64, C 3, L 1,000; at
MotorImagery's shape, Mamba1-logncde's step with the fused scan <= 1/8 of the stepwise
one's).

Models: params.yaml's ``MS4N``, ``Mamba1``, ``TIDES`` and ``S5`` entries, built by the
registry as a run builds them (``ssmbench.config.model_entry``,
``ssmbench.models.build_model``). Mamba1 runs once per scan method of
``mamba_scan.selective_scan`` (``fused``: the numba kernel of ``mamba_cpu_scan``, the
default on the CPU (``auto``); ``stepwise``: one in-place op per step, a closed-form
backward; ``parallel``: a parallel scan per chunk, checkpointed) and, for reference, with
the step-by-step recurrence ``selective_scan_recurrence`` under autograd
(``--recurrence``: the tests' reference, slow and memory-hungry). ``--motor-imagery``
adds Mamba1-logncde at its MotorImagery configuration and shape (B 32, C 64, L 3,000;
2 layers, d_model 128, d_state 64) with the fused and the stepwise scan
(``--mi-parallel``: the parallel one too).

A training step is zero_grad, forward, cross-entropy, backward and Adam's step, on random
values with unit steps and K = 5 classes (2 at MotorImagery's shape). The models' steps
are interleaved after a warm-up step each (drifts of a shared machine hit all alike; the
warm-up also loads or compiles the fused kernels); reported: the median wall-clock ms,
the median process CPU ms, and the wall time over MS4N's beside the goal (at
MotorImagery's shape, over the stepwise scan's). Beside them, "its scan alone": the fused
scan's forward and backward at the shapes Mamba1's mixer gives it, with no model around
it: the part of Mamba1's step no change outside the kernel makes shorter.

``--peak``: Mamba1-logncde's peak memory at MotorImagery's shape, per scan method (fused
and stepwise): two training steps in a fresh subprocess each, which reports its peak RSS
(VmHWM, ``proc_status``) and the RSS after building the model.

Threads: 1 by default (``--threads``).

Usage: .venv/bin/python benchmarks/bench_selective_step.py [--steps 3] [--threads 1]
    [--shape 64x3x1000] [--recurrence] [--motor-imagery [--mi-parallel]] [--peak]
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
GOAL = 3.0  # the step over MS4N's, for Mamba1 and TIDES
GOAL_MODELS = ("Mamba1", "TIDES")
MOTOR_IMAGERY = (32, 64, 3000)
MI_GOAL = 1 / 8  # Mamba1-logncde's fused step over its stepwise one at MotorImagery's shape
AUTO = "fused"  # the scan method auto takes on the CPU, where this runs


def _build(name: str, C: int, K: int, L: int, dataset: str | None = None, method=None):
    import torch

    from ssmbench.config import model_entry
    from ssmbench.models import build_model
    from ssmbench.models.mamba import Mamba1Mixer
    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    torch.manual_seed(0)
    model = build_model(name, C, K, L, model_entry(params, name, dataset))
    for module in model.modules():
        if isinstance(module, Mamba1Mixer) and method is not None:
            module.scan_method = method  # an instance attribute over the class default
    return model


def _step_fn(model, B: int, C: int, L: int, K: int, recurrence: bool = False):
    """A closure running one training step; returns (wall s, process CPU s)."""
    import torch
    import torch.nn.functional as F

    from ssmbench.models import mamba, mamba_scan

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, L, generator=gen)
    extra = {"steps": torch.ones(B, L)} if "steps" in model.INPUTS else {}
    y = torch.randint(0, K, (B,), generator=gen)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def recurrent(*args, chunk_size=None, method=None, **kwargs):
        return mamba_scan.selective_scan_recurrence(*args, **kwargs)

    def step() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        scan = mamba.selective_scan
        if recurrence:
            mamba.selective_scan = recurrent
        try:
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(x, **extra), y).backward()
            optimizer.step()
        finally:
            mamba.selective_scan = scan
        return time.perf_counter() - wall, time.process_time() - cpu

    return step


def _scan_step_fn(model, B: int, L: int):
    """A closure running the fused scan alone, forward and backward, on random inputs of the
    shapes the model's first mixer gives it (u, Δ, z: (B, E, L); B_t, C_t: (B, N, L)), its
    A, D and Δ bias; returns (wall s, process CPU s). What a training step of the model
    cannot do in less time than (the floor the rest of the step adds to)."""
    import torch

    from ssmbench.models.mamba import Mamba1Mixer
    from ssmbench.models.mamba_scan import selective_scan

    mixer = next(m for m in model.modules() if isinstance(m, Mamba1Mixer))
    E, N = mixer.d_inner, mixer.d_state
    gen = torch.Generator().manual_seed(2)
    u, z, delta = (torch.randn(B, E, L, generator=gen).requires_grad_() for _ in range(3))
    Bt, Ct = (torch.randn(B, N, L, generator=gen).requires_grad_() for _ in range(2))
    A = -torch.exp(mixer.A_log.detach().float()).requires_grad_()
    D, bias = (p.detach().clone().requires_grad_() for p in (mixer.D, mixer.dt_proj.bias))
    options = {"delta_bias": bias, "delta_softplus": True, "chunk_size": mixer.chunk_size}
    grad = torch.randn(B, E, L, generator=gen)

    def step() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        selective_scan(u, delta, A, Bt, Ct, D, z=z, method=AUTO, **options).backward(grad)
        return time.perf_counter() - wall, time.process_time() - cpu

    return step


def _compare(rows: dict, B: int, C: int, L: int, K: int, n_steps: int) -> dict:
    """rows: label -> (model, recurrence), or (model, "scan"): the scan alone
    (``_scan_step_fn``). Interleaved steps; label -> (wall s, cpu s)."""
    steps = {
        label: _scan_step_fn(m, B, L) if rec == "scan" else _step_fn(m, B, C, L, K, rec)
        for label, (m, rec) in rows.items()
    }
    for step in steps.values():  # warm-up
        step()
    wall = {label: [] for label in steps}
    cpu = {label: [] for label in steps}
    for _ in range(n_steps):
        for label, step in steps.items():
            w, c = step()
            wall[label].append(w)
            cpu[label].append(c)
    return {
        label: (statistics.median(wall[label]), statistics.median(cpu[label])) for label in steps
    }


def peak(method: str, threads: int) -> dict:
    """Two training steps of Mamba1-logncde at MotorImagery's shape in this process, with
    the scan ``method``: its peak RSS and its RSS after building the model (MiB)."""
    import torch

    torch.set_num_threads(threads)
    B, C, L = MOTOR_IMAGERY
    model = _build("Mamba1-logncde", C, 2, L, "MotorImagery", method)
    step = _step_fn(model, B, C, L, 2)
    build_mib = memory_bytes("VmRSS") / 2**20
    times = [step()[0] for _ in range(2)]
    return {"peak_mib": memory_bytes("VmHWM") / 2**20, "build_mib": build_mib, "step_s": times[-1]}


def peaks(threads: int) -> None:
    """``peak`` of each method in a fresh subprocess (a process's peak is its own)."""
    B, C, L = MOTOR_IMAGERY
    print(f"\npeak memory, Mamba1-logncde at MotorImagery's shape (B {B}, C {C}, L {L:,}), "
          f"two training steps in a fresh process each")  # fmt: skip
    print(f"{'scan':<10} {'peak MiB':>9} {'after build MiB':>16} {'step s':>7}")
    for method in (AUTO, "stepwise"):
        cmd = [sys.executable, __file__, "--peak-once", method, "--threads", str(threads)]
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"{method:<10} failed: {proc.stderr.strip()[-300:] or proc.returncode}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{method:<10} {r['peak_mib']:>9.0f} {r['build_mib']:>16.0f} {r['step_s']:>7.1f}",
              flush=True)  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3, help="timed steps per model")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--shape", default="64x3x1000", help="BxCxL of the comparison with MS4N")
    ap.add_argument("--recurrence", action="store_true",
                    help="also Mamba1 with the step-by-step recurrence (slow)")  # fmt: skip
    ap.add_argument("--motor-imagery", action="store_true",
                    help="also Mamba1-logncde at MotorImagery's shape")  # fmt: skip
    ap.add_argument("--mi-parallel", action="store_true",
                    help="at MotorImagery's shape, the parallel scan too (slow)")  # fmt: skip
    ap.add_argument("--peak", action="store_true",
                    help="only Mamba1-logncde's peak memory at MotorImagery's shape")  # fmt: skip
    ap.add_argument("--peak-once", metavar="METHOD", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peak_once:
        print(json.dumps(peak(args.peak_once, args.threads)))
        return 0
    if args.peak:
        peaks(args.threads)
        return 0

    import platform

    import torch

    torch.set_num_threads(args.threads)
    B, C, L = (int(v) for v in args.shape.lower().split("x"))
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), float32, "
          f"{args.steps} timed steps after 1 warm-up")  # fmt: skip
    K = 5
    rows = {
        "MS4N": (_build("MS4N", C, K, L), False),
        "Mamba1 (fused)": (_build("Mamba1", C, K, L, method="fused"), False),
        "Mamba1 (stepwise)": (_build("Mamba1", C, K, L, method="stepwise"), False),
        "Mamba1 (parallel)": (_build("Mamba1", C, K, L, method="parallel"), False),
        "  its scan alone": (_build("Mamba1", C, K, L), "scan"),
        "TIDES": (_build("TIDES", C, K, L), False),
        "S5": (_build("S5", C, K, L), False),
    }
    if args.recurrence:
        rows["Mamba1 (recurrence)"] = (_build("Mamba1", C, K, L), True)
    result = _compare(rows, B, C, L, K, args.steps)
    base = result["MS4N"][0]
    print(f"\nB {B}, C {C}, L {L:,}, K {K}; goal: Mamba1's and TIDES's step <= {GOAL:g}x MS4N's")
    print(f"{'model':<22} {'step ms':>9} {'cpu ms':>9} {'/ MS4N':>7} {'goal':>5}")
    auto = AUTO
    ok = True
    for label, (wall, cpu) in result.items():
        goal = ""
        family = label.split()[0]
        if family in GOAL_MODELS and ("(" not in label or auto in label):
            goal = f"{GOAL:g}"
            ok &= wall / base <= GOAL
        print(f"{label:<22} {wall * 1e3:>9.0f} {cpu * 1e3:>9.0f} {wall / base:>7.2f} {goal:>5}",
              flush=True)  # fmt: skip
    print(f"(goal rows: the CPU's defaults, Mamba1 {auto}; 'its scan alone': the {auto} scan's "
          f"forward and backward at the Mamba1 mixer's shapes, the step's floor)")  # fmt: skip
    if args.motor_imagery:
        B, C, L = MOTOR_IMAGERY
        methods = (AUTO, "stepwise", "parallel") if args.mi_parallel else (AUTO, "stepwise")
        mi = {
            f"Mamba1-logncde ({m})": (_build("Mamba1-logncde", C, 2, L, "MotorImagery", m), False)
            for m in methods
        }
        mi_result = _compare(mi, B, C, L, 2, max(1, min(args.steps, 2)))
        base = mi_result["Mamba1-logncde (stepwise)"][0]
        print(f"\nMotorImagery's shape: B {B}, C {C}, L {L:,}, K 2 (Mamba1-logncde's entry); "
              f"goal: the {AUTO} scan's step <= 1/{1 / MI_GOAL:g} of the stepwise one")  # fmt: skip
        print(f"{'model':<28} {'step s':>8} {'cpu s':>8} {'/ stepwise':>11} {'goal':>6}")
        for label, (wall, cpu) in mi_result.items():
            goal = ""
            if label.endswith(f"({AUTO})"):
                goal = f"1/{1 / MI_GOAL:g}"
                ok &= wall / base <= MI_GOAL
            print(f"{label:<28} {wall:>8.2f} {cpu:>8.2f} {wall / base:>11.3f} {goal:>6}",
                  flush=True)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
