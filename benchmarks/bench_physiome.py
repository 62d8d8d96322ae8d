"""Generate the Physiome-ODE datasets (the six of ssmbench.data.physiome) with the default
(published) settings and print, per model, the seconds taken (compile, simulate, total),
instances kept / dropped / failed and the prepared N, C, L.

    .venv/bin/python benchmarks/bench_physiome.py [--n-instances N] [--models A B ...]
                                                  [--out DIR] [--seed S]

Defaults: every model, ``n_instances`` 2000 (the reference's figure), seed 0, output in a
temporary folder that is deleted afterwards (``--out`` keeps it). Runs on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from ssmbench.data.physiome import (  # noqa: E402
    DEFAULTS,
    PHYSIOME_MODELS,
    fetch_physiome,
    prepare_physiome,
    resolve_settings,
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-instances", type=int, default=DEFAULTS["n_instances"])
    ap.add_argument("--models", nargs="*", default=list(PHYSIOME_MODELS))
    ap.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    ap.add_argument("--out", default=None, help="keep raw/ and prepared/ here")
    args = ap.parse_args(argv)

    settings = {"generator": {"n_instances": args.n_instances, "seed": args.seed}}
    with tempfile.TemporaryDirectory(prefix="bench_physiome_") as tmp:
        root = Path(args.out) if args.out else Path(tmp)
        raw, prepared = root / "raw", root / "prepared" / "physiome"
        header = (
            f"{'model':<22}{'horizon':>9}{'ds':>5}{'dc':>5}{'compile_s':>10}{'sim_s':>8}"
            f"{'ms/inst':>8}{'total_s':>8}{'sim':>6}{'fail':>5}{'drop':>5}"
            f"{'N':>6}{'C':>4}{'L':>4}"
        )
        print(header)
        print("-" * len(header))
        grand = time.perf_counter()
        for name in args.models:
            cfg = resolve_settings(name, settings)
            fetch_physiome(name, raw, settings)
            folder = prepare_physiome(name, raw, prepared, settings)
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            if meta["fold_scheme"] == "per_fold":  # folds: reference; N, L the largest fold's
                fold0 = json.loads((folder / "fold0" / "meta.json").read_text(encoding="utf-8"))
                meta["n_dropped"] = fold0["n_dropped"]  # fold 0's
            t = meta["timings"]
            t.setdefault("total_s", t.get("generate_s", float("nan")))
            print(
                f"{name:<22}{cfg['horizon']:>9g}{cfg['d_states']:>5g}{cfg['d_constants']:>5g}"
                f"{t['compile_s']:>10.2f}{t['simulate_s']:>8.1f}{t['per_instance_ms']:>8.2f}"
                f"{t['total_s']:>8.1f}{meta['n_simulated']:>6}{meta['n_failed']:>5}{meta['n_dropped']:>5}"
                f"{meta['N']:>6}{meta['C']:>4}{meta['L']:>4}",
                flush=True,
            )
        print(
            f"n_instances={args.n_instances} seed={args.seed}; all models in "
            f"{time.perf_counter() - grand:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
