"""Streaming inference (``step``) against the batch forward pass: per-step latency and peak
memory at L = 1,000, 10,000 and 100,000, measured in one run, for MS4N
(``MS4Classifier.step`` against the convolution) or TIDES (``TIDESClassifier.step``
against the parallel scan; ``--model TIDES``).

Each (mode, L) runs in its own process so that each peak RSS (getrusage ru_maxrss) is its
own; ``added`` is the peak less the RSS with the model and the input built. The model is
params.yaml's entry (MS4N: H = N = 64; TIDES: H = P = 64, 2 layers), C = 3, K = 5, in
evaluation mode, one row (B = 1), no gradients; TIDES gets random irregular steps Δt ~
U[0.5, 1.5) (``steps`` / ``dt_t``). ``stream``: one ``step`` per sample (the logits of the
stream so far each time); ``conv`` (MS4N) / ``scan`` (TIDES): ``forward`` on the whole
series once (its time over L is the per-step figure). The goal: the stream's peak flat in L
(100k / 1k ≤ 1.1) where the batch pass's grows.

    .venv/bin/python benchmarks/bench_stream.py [--model MS4N|TIDES]
        [--lengths 1000 10000 100000] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from proc_status import memory_bytes

REPO = Path(__file__).resolve().parents[1]
C, K = 3, 5
MODELS = ("MS4N", "TIDES")
#: the name of each model's batch (whole-series) forward pass
BATCH_MODE = {"MS4N": "conv", "TIDES": "scan"}


def measure(name: str, mode: str, L: int, threads: int) -> dict:
    import torch

    from ssmbench.config import model_entry
    from ssmbench.models import build_model
    from ssmbench.params_file import read_params

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    params = read_params(REPO / "params.yaml")
    model = build_model(name, C, K, L, model_entry(params, name)).eval()
    x = torch.randn(1, C, L)
    time_aware = "steps" in model.INPUTS
    steps = 0.5 + torch.rand(1, L) if time_aware else None  # irregular Δt (TIDES)
    base = memory_bytes("VmRSS")
    with torch.no_grad():
        start = time.perf_counter()
        if mode == "stream" and time_aware:
            state = model.initial_state(1)
            for t in range(L):
                logits, state = model.step(x[:, :, t], state, steps[:, t])
        elif mode == "stream":
            state = model.initial_state(1)
            for t in range(L):
                logits, state = model.step(x[:, :, t], state)
        else:
            logits = model(x, steps) if time_aware else model(x)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"mode": mode, "L": L, "per_step_us": 1e6 * seconds / L, "seconds": seconds,
            "peak": peak, "added": max(peak - base, 0), "logit0": float(logits[0, 0])}  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=MODELS, default="MS4N")
    ap.add_argument("--lengths", type=int, nargs="*", default=[1000, 10000, 100000])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.model, args.one[0], int(args.one[1]), args.threads)))
        return 0
    batch_mode = BATCH_MODE[args.model]
    print(f"{args.model} (params.yaml), B=1 C={C} K={K}, {args.threads} thread(s), eval, no grad")
    print(f"{'mode':<7}{'L':>8}{'us/step':>10}{'total s':>9}{'peak MiB':>10}{'added MiB':>10}"
          f"{'logit[0]':>11}")  # fmt: skip
    rows = {}
    for mode in ("stream", batch_mode):
        for L in args.lengths:
            cmd = [sys.executable, __file__, "--one", mode, str(L), "--threads", str(args.threads),
                   "--model", args.model]  # fmt: skip
            env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows[mode, L] = r
            print(f"{mode:<7}{L:>8,}{r['per_step_us']:>10.1f}{r['seconds']:>9.2f}"
                  f"{r['peak'] / 2**20:>10,.0f}{r['added'] / 2**20:>10,.1f}{r['logit0']:>11.5f}",
                  flush=True)  # fmt: skip
    lo, hi = min(args.lengths), max(args.lengths)
    for mode in ("stream", batch_mode):
        ratio = rows[mode, hi]["peak"] / rows[mode, lo]["peak"]
        print(f"{mode}: peak at L = {hi:,} / at L = {lo:,}: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
