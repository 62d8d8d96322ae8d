"""Training-step time and peak memory of the TIDES study's irregular-time baselines
(Log-NCDE, RFormer, LinODEnet) beside TIDES and MS4N, on an EigenWorms-sized and a
Physiome-sized input, measured in one run.

Inputs (random values; the models' params.yaml entries as a run builds them):

* ``eigenworms``: B = 32, C = 6, L = 17,984, 5 classes, unit steps: EigenWorms' shape
  (Bagnall et al. 2018), at the Log-NCDE benchmark's batch. Log-NCDE and RFormer with
  their EigenWorms configurations (``dataset_params``), the others as their entries.
* ``physiome``: B = 32, C = 4, L = 99, each row's times L of a grid of 2L points (so the
  steps Δ are a few multiples of the grid step, as on the archive's time grid: LinODEnet
  computes one matrix exponential per distinct Δ of a batch), 30 % of the values observed
  (mask), a per-step regression (K = C, masked MSE): the official Physiome-ODE folds'
  largest length (50 observed + 49 forecast steps) at LinODEnet's leaderboard batch.
  RFormer has no per-step output: it is timed with a pooled head (K = C) and RFormer-drop's 10
  windows (its base entry's 100 windows exceed L).

A training step is zero_grad, forward, loss (+ Log-NCDE's Lip(2) penalty), backward and
Adam's step. Each (input, model) runs in its own subprocess so that each peak memory is
its own: ``rss_build`` is the process's RSS with the model and the batch built, ``peak``
getrusage's ru_maxrss after the steps, ``step_mem`` their difference (what the steps
added). The time is the median over the measured steps after one warm-up step; a model
whose steps are slow stops measuring after ``--budget`` seconds (at least one step), and
the table says how many steps were measured.

    .venv/bin/python benchmarks/bench_irregular.py [--inputs eigenworms physiome]
        [--models LogNCDE RFormer LinODEnet TIDES MS4N] [--steps 3] [--budget 120]
        [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from proc_status import memory_bytes

REPO = Path(__file__).resolve().parents[1]
MODELS = ("LogNCDE", "RFormer", "LinODEnet", "TIDES", "MS4N")
#: input name -> (B, C, L, K, per-step regression)
INPUTS = {"eigenworms": (32, 6, 17984, 5, False), "physiome": (32, 4, 99, 4, True)}
#: (input, model) -> (the params.yaml entry it builds, the dataset whose dataset_params apply)
ENTRY_OF = {
    ("eigenworms", "LogNCDE"): ("LogNCDE", "EigenWorms"),
    ("eigenworms", "RFormer"): ("RFormer", "EigenWorms"),
    ("physiome", "RFormer"): ("RFormer-drop", None),
    ("physiome", "TIDES"): ("TIDES-physio", None),
}


def measure(input_name: str, model_name: str, steps: int, budget: float, threads: int) -> dict:
    """One (input, model): build, one warm-up step, then timed steps. Runs in a child."""
    import torch
    import torch.nn.functional as F

    from ssmbench.config import model_entry
    from ssmbench.models import build_model, supports_per_step
    from ssmbench.models.registry import model_inputs
    from ssmbench.params_file import read_params

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, C, L, K, per_step = INPUTS[input_name]
    params = read_params(REPO / "params.yaml")
    entry_name, dataset = ENTRY_OF.get((input_name, model_name), (model_name, None))
    entry = model_entry(params, entry_name, dataset)
    per_step = per_step and supports_per_step(entry)
    model = build_model(entry_name, C, K, L, entry, per_step=per_step)
    x = torch.randn(B, C, L)
    extra = {}
    wants = model_inputs(model)
    if input_name == "physiome":
        observed = torch.rand(B, C, L) < 0.3
        if "steps" in wants:  # each row's times: L of a grid of 2L points, as the archive's
            grid = torch.rand(B, 2 * L).argsort(dim=1)[:, :L].sort(dim=1).values
            extra["steps"] = torch.diff(grid, dim=1, prepend=torch.zeros(B, 1)).float() / (2 * L)
        if "mask" in wants:
            extra["mask"] = observed
        target = torch.randn(B, L, K) if per_step else torch.randn(B, K)
    else:
        if "steps" in wants:
            extra["steps"] = torch.ones(B, L)
        if "mask" in wants:
            extra["mask"] = torch.ones(B, C, L, dtype=torch.bool)
        target = torch.randint(0, K, (B,))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    penalty = getattr(model, "regulariser", None)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    rss_build = memory_bytes("VmRSS")

    def step() -> float:
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = model(x, **extra)
        if target.dtype == torch.long:
            loss = F.cross_entropy(out, target)
        elif per_step:
            m = observed.transpose(1, 2)[..., :K]
            loss = ((out - target) ** 2)[m].mean()
        else:
            loss = F.mse_loss(out, target)
        if callable(penalty):
            loss = loss + penalty()
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start

    warmup = step()
    times, spent = [], 0.0
    while len(times) < steps and (not times or spent < budget):
        times.append(step())
        spent += times[-1]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "input": input_name, "model": model_name, "entry": entry_name, "dataset": dataset,
        "shape": [B, C, L], "per_step": per_step, "params": n_params,
        "warmup_s": warmup, "step_s": statistics.median(times), "steps": len(times),
        "rss_build": rss_build, "peak": peak, "step_mem": max(peak - rss_build, 0),
        "threads": threads,
    }  # fmt: skip


def _child(args, input_name: str, model: str) -> dict:
    cmd = [sys.executable, __file__, "--one", input_name, model, "--steps", str(args.steps),
           "--budget", str(args.budget), "--threads", str(args.threads)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"input": input_name, "model": model, "error": proc.stderr.strip()[-400:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", nargs="*", default=list(INPUTS), choices=list(INPUTS))
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up")
    ap.add_argument(
        "--budget",
        type=float,
        default=120.0,
        help="stop timing a model after this many seconds (one step at least)",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--one", nargs=2, metavar=("INPUT", "MODEL"), help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(*args.one, args.steps, args.budget, args.threads)))
        return 0

    import platform

    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()} {os.cpu_count()} CPUs, "
          f"{args.threads} torch threads, float32, CPU")  # fmt: skip
    header = (
        f"{'input':<11}{'model':<11}{'entry':<14}{'params':>9}{'step_s':>9}{'steps':>6}"
        f"{'warmup_s':>9}{'step/MS4N':>10}{'rss_build':>10}{'peak':>8}{'step_mem':>9}"
    )
    print(header + "  (memory in MiB)")
    print("-" * len(header))
    rows = []
    for input_name in args.inputs:
        group = [_child(args, input_name, model) for model in args.models]
        rows += group
        anchor = next((r["step_s"] for r in group if r["model"] == "MS4N" and "error" not in r),
                      None)  # fmt: skip
        for r in group:
            if "error" in r:
                print(f"{input_name:<11}{r['model']:<11}failed: {r['error']}")
                continue
            ratio = f"{r['step_s'] / anchor:.1f}x" if anchor else "-"
            print(
                f"{input_name:<11}{r['model']:<11}{r['entry']:<14}{r['params']:>9,}"
                f"{r['step_s']:>9.3f}{r['steps']:>6}{r['warmup_s']:>9.2f}{ratio:>10}"
                f"{_mib(r['rss_build']):>10}{_mib(r['peak']):>8}{_mib(r['step_mem']):>9}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
