"""Log-NCDE's training epoch on MotorImagery beside S5-logncde's, measured in one run.

What is timed: one epoch of the uea6 protocol at MotorImagery's shape (C = 64, L = 3,000,
2 classes; fold 0's split: 264 training rows, 57 validation rows, batch 32), per model:

* training: 9 batches (8 of 32 rows, 1 of 8), each zero_grad, forward, cross-entropy plus
  the model's ``regulariser()`` (Log-NCDE's Lip(2) penalty, as the training adds it:
  ``ssmbench.train.micro_batches.backward_batch``), backward, the protocol's gradient
  clipping (``grad_clip_norm``) and the optimiser's step (``build_optimizer``: Adam at the
  model's MotorImagery lr);
* validation: the 57 rows in eval mode without grad, in batches of 32.

Models, built through the registry from params.yaml (``untuned_spec`` of the uea6 job on
MotorImagery: each entry with its MotorImagery ``dataset_params``, as a run builds it):

* ``LogNCDE``: ``ssmbench.models.logncde`` (the Jacobian form of the depth-2 term, the
  windows' stage tables formed once per forward pass);
* ``S5-logncde``: the Log-NCDE benchmark's S5;
* ``per-tangent`` (``--oracle``): the same LogNCDE weights run through
  tests/logncde_oracle.py, the per-tangent arithmetic of the depth-2 term that the
  model's Jacobian form is tested against, with the model's log-signature cache;
* ``LogNCDE-compiled`` (``--compile``): LogNCDE with ``VectorField.stage`` under
  ``torch.compile`` (inductor, shapes dynamic after a first recompilation; the stage's
  coefficient applied outside, as a float inside would recompile per value); its first
  epoch holds the compilations.

The models take turns batch by batch (training batch i of each, then batch i + 1, then the
validation passes), so that the shared machine's drifts hit each alike. Epoch 1 is cold:
Log-NCDE's log-signature cache is empty (each row's windows are computed by pysiglib once
per run) and the allocator warms up; epochs 2.. are warm. Reported per model: epoch 1, the
median of the later epochs, the median training batch, the validation pass, and the
ratios to S5-logncde; and the log-signature computation for all the rows timed alone, i.e.
what the cache saves in every epoch after the first. ``--batches n`` times n training
batches per epoch and extrapolates the other 9 - n at the median batch time (the output
says so).

Data: random N(0, 17²) float32 series (MotorImagery's values have a std of ~17) and random
labels; ``--data DIR``: the prepared uea6 MotorImagery (``X.npy``, ``y.npy`` and fold 0's
``val_indices_fold_0.txt`` / ``test_indices_fold_0.txt`` if there). ``--quick``: a smoke
run (2 training batches of 4 rows, 4 validation rows, 2 epochs): not an epoch's figures.

    .venv/bin/python benchmarks/bench_logncde_epoch.py [--epochs 3] [--batches 9]
        [--threads 1] [--oracle] [--compile] [--data /tmp/mi/data/prepared/uea6/MotorImagery]
        [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASET, C, L, K = "MotorImagery", 64, 3000, 2
N_TRAIN, N_VAL, BATCH = 264, 57, 32
#: MotorImagery's values: std ~17
DATA_STD = 17.0
DEFAULT_DATA = Path("/tmp/mi/data/prepared/uea6/MotorImagery")
#: the goal: Log-NCDE's epoch at most this many S5-logncde epochs
GOAL = 4.0


def _load_data(args, n_train: int, n_val: int):
    """(x_train, y_train, x_val, y_val) float32 / int64 tensors and a description."""
    import numpy as np
    import torch

    if args.data is None:
        gen = torch.Generator().manual_seed(0)
        x = DATA_STD * torch.randn(n_train + n_val, C, L, generator=gen)
        y = torch.randint(0, K, (n_train + n_val,), generator=gen)
        return x[:n_train], y[:n_train], x[n_train:], y[n_train:], "random N(0, 17²)"
    X = np.load(args.data / "X.npy", mmap_mode="r")
    labels = np.load(args.data / "y.npy")
    if X.shape[1:] != (C, L):
        raise SystemExit(f"{args.data}: X is {X.shape}, expected (N, {C}, {L})")

    def indices(name):
        path = args.data / name
        return [int(v) for v in path.read_text().split()] if path.exists() else None

    val, test = indices("val_indices_fold_0.txt"), indices("test_indices_fold_0.txt")
    if val is None:
        val, test = list(range(n_train, n_train + n_val)), []
    held = set(val) | set(test or [])
    train = [i for i in range(len(X)) if i not in held][:n_train]
    val = val[:n_val]

    def rows(idx):
        return torch.from_numpy(np.ascontiguousarray(X[sorted(idx)], dtype=np.float32))

    def ys(idx):
        return torch.as_tensor(labels[sorted(idx)], dtype=torch.long)

    return rows(train), ys(train), rows(val), ys(val), f"{args.data} (fold 0)"


class Variant:
    """A model, its optimiser and how it is called on a batch."""

    def __init__(self, name, model, settings, forward=None):
        from ssmbench.train.optim import build_optimizer

        self.name, self.model = name, model
        self.optimizer = build_optimizer(model, settings)
        self.clip = settings.get("grad_clip_norm")
        self.forward = forward or model
        self.params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        self.batch_times: list[list[float]] = []  # per epoch
        self.val_times: list[float] = []

    def train_batch(self, xb, yb) -> float:
        import torch
        import torch.nn.functional as F

        start = time.perf_counter()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.forward(xb), yb)
        penalty = getattr(self.model, "regulariser", None)
        if callable(penalty):
            loss = loss + penalty()
        loss.backward()
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()
        return time.perf_counter() - start

    def validate(self, x, y, batch: int) -> float:
        import torch

        start = time.perf_counter()
        self.model.eval()
        with torch.no_grad():
            for i in range(0, len(y), batch):
                self.forward(x[i : i + batch]).argmax(-1)
        return time.perf_counter() - start


def _build(args, settings_out: dict):
    import torch

    from ssmbench.config import Job, read_params, untuned_spec
    from ssmbench.models import build_model

    params = read_params(ROOT / "params.yaml")
    variants = []
    specs = {name: untuned_spec(params, Job("uea6", DATASET, name, 0))
             for name in ("LogNCDE", "S5-logncde")}  # fmt: skip
    settings_out.update({n: s["settings"] for n, s in specs.items()})

    def logncde():
        torch.manual_seed(0)
        spec = specs["LogNCDE"]
        return build_model("LogNCDE", C, K, L, spec["model_params"]), spec["settings"]

    model, settings = logncde()
    variants.append(Variant("LogNCDE", model, settings))
    torch.manual_seed(0)
    spec = specs["S5-logncde"]
    s5 = build_model("S5-logncde", C, K, L, spec["model_params"])
    variants.append(Variant("S5-logncde", s5, spec["settings"]))
    if args.oracle:
        sys.path.insert(0, str(ROOT / "tests"))
        from logncde_oracle import oracle_forward

        model, settings = logncde()

        def per_tangent(x, model=model):
            logsig = model._cached_logsignature(model.input_path(x))
            return oracle_forward(model, x, logsig=logsig)

        variants.append(Variant("per-tangent", model, settings, per_tangent))
    if args.compile:
        model, settings = logncde()
        # the coefficient c multiplies outside: a Python float inside would recompile per value
        compiled = torch.compile(model.vf.stage)

        def stage(y, table, scale=1.0, blocks=None, compiled=compiled):
            return compiled(y, table, 1.0, blocks) * scale

        model.vf.stage = stage
        variants.append(Variant("LogNCDE-compiled", model, settings))
    return variants


def _logsig_seconds(model, x_all, batch: int) -> float:
    """The log-signatures of every row (what ``model``'s cache computes once per run)."""
    start = time.perf_counter()
    for i in range(0, len(x_all), batch):
        model.logsignature(x_all[i : i + batch])
    return time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3, help="epochs (the first one cold)")
    ap.add_argument("--batches", type=int, default=None,
                    help="training batches timed per epoch (default all; the rest "
                         "extrapolated at the median batch)")  # fmt: skip
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--oracle",
        action="store_true",
        help="also time the per-tangent arithmetic (tests/logncde_oracle.py)",
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="also time LogNCDE with VectorField.stage under torch.compile",
    )
    ap.add_argument(
        "--data",
        type=Path,
        nargs="?",
        const=DEFAULT_DATA,
        default=None,
        help=f"the prepared uea6 MotorImagery folder (default {DEFAULT_DATA})",
    )
    ap.add_argument("--quick", action="store_true", help="a smoke run, not an epoch")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    if args.data is not None and not (args.data / "X.npy").exists():
        raise SystemExit(f"--data: no X.npy in {args.data}")

    if args.compile:  # a cold compilation: a fresh inductor cache, not an earlier run's
        import tempfile

        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_logncde_")

    import platform

    import torch

    torch.set_num_threads(args.threads)
    n_train, n_val, batch = (8, 4, 4) if args.quick else (N_TRAIN, N_VAL, BATCH)
    epochs = 2 if args.quick else max(args.epochs, 2)
    x_train, y_train, x_val, y_val, source = _load_data(args, n_train, n_val)
    settings: dict = {}
    variants = _build(args, settings)
    starts = list(range(0, len(y_train), batch))
    timed = starts if args.batches is None else starts[: max(1, args.batches)]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()} {os.cpu_count()} CPUs, "
          f"{args.threads} torch thread(s), float32, CPU; data: {source}; "
          f"{len(y_train)} training rows in {len(starts)} batches of {batch}, "
          f"{len(y_val)} validation rows; {epochs} epochs")  # fmt: skip
    if args.quick:
        print("# --quick: a smoke run (small batches); the figures are not an epoch's")
    if len(timed) < len(starts):
        print(
            f"# {len(timed)} of {len(starts)} training batches timed per epoch; the epoch "
            f"figures extrapolate the other {len(starts) - len(timed)} at the median batch"
        )

    for epoch in range(epochs):
        for v in variants:
            v.batch_times.append([])
        for i in timed:
            xb, yb = x_train[i : i + batch], y_train[i : i + batch]
            for v in variants:
                v.batch_times[-1].append(v.train_batch(xb, yb))
        for v in variants:
            v.val_times.append(v.validate(x_val, y_val, batch))
        line = ", ".join(f"{v.name} {sum(v.batch_times[-1]) + v.val_times[-1]:.1f} s"
                         for v in variants)  # fmt: skip
        print(f"  epoch {epoch + 1}: {line}", flush=True)

    rows = []
    for v in variants:
        per_epoch = []
        for times, val in zip(v.batch_times, v.val_times, strict=True):
            extra = (len(starts) - len(times)) * statistics.median(times)
            per_epoch.append(sum(times) + extra + val)
        later_batches = [t for times in v.batch_times[1:] for t in times]
        rows.append({
            "model": v.name, "params": v.params, "epoch1_s": per_epoch[0],
            "epoch_s": statistics.median(per_epoch[1:]), "epochs_s": per_epoch,
            "batch_s": statistics.median(later_batches),
            "val_s": statistics.median(v.val_times[1:]),
        })  # fmt: skip
    s5 = next(r for r in rows if r["model"] == "S5-logncde")
    header = (f"{'model':<18}{'params':>8}{'epoch 1 (s)':>13}{'epoch (s)':>11}"
              f"{'batch (s)':>11}{'val (s)':>9}{'/ S5 ep. 1':>12}{'/ S5':>8}")  # fmt: skip
    print()
    print(header)
    print("-" * len(header))
    for r in rows:
        r["ratio1"] = r["epoch1_s"] / s5["epoch1_s"]
        r["ratio"] = r["epoch_s"] / s5["epoch_s"]
        print(f"{r['model']:<18}{r['params']:>8,}{r['epoch1_s']:>13.1f}{r['epoch_s']:>11.1f}"
              f"{r['batch_s']:>11.2f}{r['val_s']:>9.2f}{r['ratio1']:>11.2f}x"
              f"{r['ratio']:>7.2f}x")  # fmt: skip
    print(f"(epoch: the median of epochs 2..{epochs}; batch: the median training batch of "
          f"those epochs; val: the validation pass)")  # fmt: skip

    ours = next(r for r in rows if r["model"] == "LogNCDE")
    model = next(v.model for v in variants if v.name == "LogNCDE")
    logsig = _logsig_seconds(model, torch.cat([x_train, x_val]), batch)
    print(
        f"\nlog-signature cache: the {len(y_train) + len(y_val)} rows' windows (depth "
        f"{model.depth}, stepsize {model.stepsize}) take {logsig:.1f} s to compute, in epoch 1 "
        f"only; LogNCDE's epoch 1 "
        f"- later epochs: {ours['epoch1_s'] - ours['epoch_s']:+.1f} s "
        f"(S5-logncde's: {s5['epoch1_s'] - s5['epoch_s']:+.1f} s, its warm-up alone)"
    )
    verdict = "met" if ours["ratio"] <= GOAL else "NOT met"
    if args.quick:
        verdict = "not judged: --quick batches are not the protocol's"
    print(f"goal: LogNCDE epoch / S5-logncde epoch <= {GOAL:g}: {ours['ratio']:.2f} ({verdict})")
    for r in rows:
        if r["model"] == "per-tangent":
            print(
                f"per-tangent arithmetic / LogNCDE: {r['epoch_s'] / ours['epoch_s']:.2f}x "
                f"per epoch, {r['batch_s'] / ours['batch_s']:.2f}x per training batch"
            )
        if r["model"] == "LogNCDE-compiled":
            compile_s = r["epoch1_s"] - r["epoch_s"] - (ours["epoch1_s"] - ours["epoch_s"])
            saved = ours["epoch_s"] - r["epoch_s"]
            even = f"{compile_s / saved:.1f} epochs" if saved > 0 else "never (no saving)"
            print(
                f"torch.compile: ~{compile_s:.0f} s of compilation in epoch 1, "
                f"{saved:+.1f} s per later epoch; break-even after {even}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "logsig_s": logsig,
                                               "threads": args.threads, "data": source},
                                              indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
