"""Measure this machine for `ssmbench plan`: seconds per training step of each model family
at a few batch shapes, written into the project's calibration table (params.yaml
``paths.calibration``, read by ``ssmbench plan`` beside the package's;
``ssmbench.step_costs``). ``--table src/ssmbench/calibration/step_seconds.csv`` updates
the table the package ships (its developers' machines).

Each family is timed through one params.yaml entry (``--models``, default: the first
entry of each family), built by the registry as a run builds it. A training step is
zero_grad, forward, loss (cross-entropy over K = 4 classes; MSE for a family that only
outputs per step), reading the loss, backward, the gradient clipping and the optimiser
of params.yaml's ``protocol`` (``train.optim.build_optimizer``: its parameter groups), on
random values with unit time steps; an eval is a forward pass under ``torch.no_grad`` in
eval mode. After one warm-up step each, the median of ``--steps`` timed steps (and as many
evals) is kept, with the entry's forward MMac per row
(``complexity.mmac(convention="full")``). Fitted families (QUANT, Hydra, ExtraTrees) are
timed by one fit of B rows and one prediction of B rows.

The machine's earlier rows (same ``--machine``) of the families measured are replaced;
every other row is kept (``--models FCN-MONSTER`` adds one family to a machine).
``--dry-run`` prints the rows without writing.

Usage:
    .venv/bin/python benchmarks/calibrate.py --machine dev-cpu-2core [--threads 1]
        [--shapes 8x3x128,16x3x256,32x9x1000] [--fit-shapes 100x3x256,1000x9x256]
        [--models MS4N,TIDES] [--steps 3] [--dry-run]
On a GPU node: ``--device cuda --machine <name>`` (shapes as large as the runs' there,
e.g. ``256x9x256,64x3x1000``).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

DEFAULT_SHAPES = "8x3x128,16x3x256,32x9x1000"
#: fitted families: B is the number of rows fitted (their cost is per row, not per batch)
DEFAULT_FIT_SHAPES = "100x3x256,1000x9x256"
K = 4


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_torch(name, entry, protocol, B: int, C: int, L: int, steps: int, device):
    """(median step s, median eval s, forward MMac per row) of one entry at (B, C, L);
    the step as the protocol runs it (``protocol``: params.yaml's, for its optimiser, weight
    decay and gradient clipping)."""
    import torch
    import torch.nn.functional as F

    from ssmbench.complexity import mmac
    from ssmbench.models import build_model, model_inputs, supports_per_step
    from ssmbench.train.optim import build_optimizer

    torch.manual_seed(0)
    per_step = False
    try:
        model = build_model(name, C, K, L, entry)
    except (ValueError, TypeError):
        if not supports_per_step(entry):
            raise
        model, per_step = build_model(name, C, K, L, entry, per_step=True), True
    macs = mmac(model, C, L, device="meta", convention="full")
    model = model.to(device)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, L, generator=gen).to(device)
    extra = {}
    inputs = model_inputs(model)
    if "steps" in inputs:
        extra["steps"] = torch.ones(B, L, device=device)
    if "mask" in inputs:
        extra["mask"] = torch.ones(B, C, L, dtype=torch.bool, device=device)
    if per_step:
        y = torch.randn(B, L, K, generator=gen).to(device)
        loss_fn = F.mse_loss
    else:
        y = torch.randint(0, K, (B,), generator=gen).to(device)
        loss_fn = F.cross_entropy
    optimizer = build_optimizer(model, protocol)
    clip = protocol.get("grad_clip_norm")

    def step() -> float:
        model.train()
        _sync(device)
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x, **extra), y)
        float(loss.detach())  # the protocol reads every batch's loss (its finiteness check)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        _sync(device)
        return time.perf_counter() - start

    def evaluate() -> float:
        model.eval()
        _sync(device)
        start = time.perf_counter()
        with torch.no_grad():
            model(x, **extra)
        _sync(device)
        return time.perf_counter() - start

    step(), evaluate()  # warm-up
    steps_s = [step() for _ in range(steps)]
    evals_s = [evaluate() for _ in range(steps)]
    return statistics.median(steps_s), statistics.median(evals_s), macs


def _time_estimator(name: str, entry: dict, B: int, C: int, L: int, threads: int):
    """(fit s, predict s) of a fitted family on B random rows."""
    import numpy as np

    from ssmbench.models import build_model

    model = build_model(name, C, K, L, entry)
    if hasattr(model, "n_jobs"):
        model.n_jobs = threads
    rng = np.random.default_rng(0)
    X = rng.standard_normal((B, C, L)).astype(np.float32)
    y = np.arange(B) % K
    start = time.perf_counter()
    model.fit(X, y)
    fit = time.perf_counter() - start
    start = time.perf_counter()
    model.predict_proba(X)
    return fit, time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", required=True, help="this machine's name in the table")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="BxCxL,... (default %(default)s)")
    ap.add_argument("--fit-shapes", default=DEFAULT_FIT_SHAPES,
                    help="rows x C x L of the fitted families (default %(default)s)")  # fmt: skip
    ap.add_argument("--models", default=None, help="entries to time (default: one per family)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per shape")
    ap.add_argument("--params", default=str(REPO / "params.yaml"))
    ap.add_argument("--table", default=None, help="the table to update (default: the "
                    "project's, params.yaml paths.calibration)")  # fmt: skip
    ap.add_argument("--dry-run", action="store_true", help="print the rows, write nothing")
    args = ap.parse_args(argv)

    import torch

    from ssmbench.config import model_entry
    from ssmbench.models import family_is_estimator
    from ssmbench.params_file import read_params
    from ssmbench.setting_defaults import setting_defaults
    from ssmbench.step_costs import TABLE, Point, read_table, write_table

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("calibrate.py: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    params = read_params(args.params)
    # the protocol as a run reads it: params.yaml's over the schema's defaults
    protocol = {**setting_defaults(), **params["protocol"]}
    if args.models:
        names = args.models.split(",")
        unknown = [n for n in names if n not in params["models"]]
        if unknown:
            print(f"calibrate.py: unknown model(s) {unknown} in {args.params}", file=sys.stderr)
            return 2
    else:
        first: dict[str, str] = {}
        for name, entry in params["models"].items():
            first.setdefault(entry["family"], name)
        names = list(first.values())

    def parse(text: str) -> list[tuple[int, ...]]:
        return [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",")]

    shapes, fit_shapes = parse(args.shapes), parse(args.fit_shapes)
    today = datetime.date.today().isoformat()
    from ssmbench.train.provenance import cpu_model

    cpu = cpu_model() or platform.machine()
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else f"{cpu}, {args.threads} thread(s)")  # fmt: skip
    source = f"benchmarks/calibrate.py, torch {torch.__version__}, {where}"
    print(f"# {args.machine} ({args.device}): {source}")
    print(
        f"{'model':<16}{'family':<13}{'B x C x L':>16}{'MMac/row':>11}{'step s':>10}{'eval s':>10}"
    )
    rows = []
    for name in names:
        entry = model_entry(params, name)
        family = entry["family"]
        for B, C, L in fit_shapes if family_is_estimator(family) else shapes:
            try:
                if family_is_estimator(family):
                    if device.type == "cuda":
                        continue  # fitted on the CPU wherever a run goes
                    step_s, eval_s = _time_estimator(name, entry, B, C, L, args.threads)
                    macs = None
                else:
                    step_s, eval_s, macs = _time_torch(
                        name, entry, protocol, B, C, L, args.steps, device
                    )
            except Exception as exc:  # say which entry and shape, keep measuring the rest
                print(f"{name:<16}{family:<13}{f'{B}x{C}x{L}':>16}  failed: {exc}", flush=True)
                continue
            shown = "" if macs is None else f"{macs:.2f}"
            print(f"{name:<16}{family:<13}{f'{B}x{C}x{L}':>16}{shown:>11}{step_s:>10.4f}"
                  f"{eval_s:>10.4f}", flush=True)  # fmt: skip
            rows.append(Point(args.machine, args.device, args.threads, family, name, B, C, L,
                              macs, step_s, eval_s, today, source))  # fmt: skip
    if args.dry_run:
        return 0
    own = params["paths"].get("calibration") or "calibration/step_seconds.csv"
    table = Path(args.table) if args.table else Path(args.params).parent / own
    table.parent.mkdir(parents=True, exist_ok=True)
    measured = {(p.machine, p.family) for p in rows}
    kept = (
        [p for p in read_table(table) if (p.machine, p.family) not in measured]
        if table.exists()
        else []
    )
    header = (
        table.read_text().splitlines()
        if table.exists()
        else [
            "# Seconds per training step measured on this project's machines by",
            "# benchmarks/calibrate.py; `ssmbench plan` reads it beside the package's table",
            f"# ({TABLE.relative_to(REPO) if TABLE.is_relative_to(REPO) else TABLE.name}).",
        ]
    )
    comments = "\n".join(line[2:] for line in header if line.startswith("# "))
    write_table(kept + rows, table, header=comments)
    print(f"wrote {len(rows)} rows for {args.machine} to {table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
