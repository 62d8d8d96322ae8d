"""The effect of each protocol choice the MS4N paper leaves open, on real UEA sets.

The default protocol follows the authors' code (docs/protocol.md). This script walks from
a simpler protocol (early stopping with patience 50, a validation split re-drawn
per seeded run with at least one row per class, no dropout, no gradient clipping) to the
authors' one choice at a time, and prints, per choice, ours with the choice at the simpler
and at the authors' value beside the published error, per dataset:

    python benchmarks/bench_protocol_choices.py                 # uea10's sets, 5 seeds
    python benchmarks/bench_protocol_choices.py --seeds 3 --datasets BasicMotions Libras

Runs are real training runs (``ssmbench.train.protocol.run_job``) of MS4N and MS4, one
thread each, ``--jobs`` at a time. Each is stored under ``--out`` by a key of everything
that decides its result (settings, model, seed and the split's rows), so a variant whose
runs are the same as an earlier one's (the split fallback changes nothing on a set where
a stratified split exists) reuses them, and an interrupted call resumes where it stopped.
The tables are printed and written to ``<out>/tables.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from ssmbench.config import Job, job_spec, load_params
from ssmbench.report.reference import load_published_errors
from ssmbench.train.provenance import with_provenance

ROOT = Path(__file__).resolve().parent.parent
SUITE = "uea10"
MODELS = ("MS4N", "MS4")

#: (name, what changes from the previous variant, protocol overrides, model dropout)
#: cumulative: each variant is the previous one with one choice moved to the authors'.
BEFORE = {
    "early_stopping_patience": 50,
    "val_split_seed": "run",
    "val_split_fallback": "per_class",
    "val_interval": 1,
    "grad_clip_norm": None,
}
VARIANTS = (
    (
        "before",
        "a simpler protocol: patience 50, per-run split, per-class fallback, "
        "dropout 0, no clipping",
        dict(BEFORE),
        0.0,
    ),
    (
        "no_early_stop",
        "stop rule: patience 50 -> none (all 300 epochs, best val loss)",
        {**BEFORE, "early_stopping_patience": None},
        0.0,
    ),
    (
        "fixed_split",
        "validation split seed: each run's seed -> the authors' 1234",
        {**BEFORE, "early_stopping_patience": None, "val_split_seed": 1234},
        0.0,
    ),
    (
        "shuffle_fallback",
        "too few rows for a stratified 10%: per-class draw -> unstratified 10%",
        {
            **BEFORE,
            "early_stopping_patience": None,
            "val_split_seed": 1234,
            "val_split_fallback": "shuffle",
        },
        0.0,
    ),
    (
        "dropout",
        "dropout 0 -> 0.01 (layer channel dropout, head dropout)",
        {
            **BEFORE,
            "early_stopping_patience": None,
            "val_split_seed": 1234,
            "val_split_fallback": "shuffle",
        },
        0.01,
    ),
    (
        "authors",
        "gradient clipping: none -> norm 4 (= params.yaml's protocol)",
        {
            **BEFORE,
            "early_stopping_patience": None,
            "val_split_seed": 1234,
            "val_split_fallback": "shuffle",
            "grad_clip_norm": 4.0,
        },
        0.01,
    ),
    (
        "val_interval_2",
        "validation every epoch -> every 2nd (the run script's "
        "val_interval, which the trainer does not read)",
        {
            **BEFORE,
            "early_stopping_patience": None,
            "val_split_seed": 1234,
            "val_split_fallback": "shuffle",
            "grad_clip_norm": 4.0,
            "val_interval": 2,
        },
        0.01,
    ),
)
#: settings that only change a result through the split's rows (keyed by the rows)
SPLIT_KEYS = ("val_split_seed", "val_split_fallback")
#: settings that never change a result
NOT_RESULT = ("checkpoint_every", "checkpoint_min_seconds")


def _params(overrides: dict, dropout: float) -> dict:
    params = load_params(ROOT / "params.yaml", suite=SUITE)
    suite = params["suites"][SUITE]
    suite["overrides"] = {**suite.get("overrides", {}), **overrides}
    for model in MODELS:
        params["models"][model]["dropout"] = dropout
    return params


def _check_authors_is_default() -> None:
    """The "authors" variant is params.yaml's protocol: say so loudly when they differ."""
    params = load_params(ROOT / "params.yaml", suite=SUITE)
    _, _, overrides, dropout = next(v for v in VARIANTS if v[0] == "authors")
    differs = [k for k, v in overrides.items() if params["protocol"][k] != v]
    differs += [f"models.{m}.dropout" for m in MODELS if params["models"][m]["dropout"] != dropout]
    if differs:
        print(f"WARNING: the 'authors' variant differs from params.yaml in {', '.join(differs)}",
              file=sys.stderr)  # fmt: skip


def _run_key(spec: dict) -> str:
    """What decides a run's result: its settings (the split's by its rows), model, seed."""
    from ssmbench.data.store import open_fold
    from ssmbench.data.validation_split import validation_seed
    from ssmbench.train.fold_split import split_indices

    settings = spec["settings"]
    seed = int(settings.get("seed_base", 0)) + int(spec["fold"])
    dataset = open_fold(spec["prepared_dir"], int(spec["fold"]))
    train, val, _ = split_indices(
        dataset, int(spec["fold"]), settings["val_fraction"], validation_seed(settings, seed),
        settings["val_split_fallback"],
    )  # fmt: skip
    kept = {k: v for k, v in settings.items() if k not in SPLIT_KEYS + NOT_RESULT}
    blob = json.dumps(
        [spec["dataset"], spec["model"], spec["fold"], spec["model_params"], kept,
         train.tolist(), val.tolist()],
        sort_keys=True, default=str,
    )  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _train(spec: dict, record: str, log_path: str) -> tuple[str, float]:
    from ssmbench.train.protocol import run_job

    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        run_job(spec, record, threads=1, log=lambda line: print(line, file=log, flush=True))
    return record, time.perf_counter() - start


def _mean_std(values) -> str:
    return f"{np.mean(values):.3f} ± {np.std(values):.3f}" if values else "—"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--variants", nargs="*", default=None, help="names of VARIANTS to run")
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-epochs", type=int, default=None, help="cap epochs (smoke tests)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "protocol_choices"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    variants = [v for v in VARIANTS if args.variants is None or v[0] in args.variants]
    _check_authors_is_default()

    # Plan: every (variant, dataset, model, seed) -> run key; identical runs share one.
    plan: dict[tuple, str] = {}
    specs: dict[str, dict] = {}
    for name, _, overrides, dropout in variants:
        params = _params(overrides, dropout)
        if args.max_epochs:
            params["suites"][SUITE]["overrides"]["max_epochs"] = args.max_epochs
        datasets = args.datasets or params["suites"][SUITE]["benchmarks"]["uea"]
        for dataset in datasets:
            for model in args.models:
                for fold in range(args.seeds):
                    spec = job_spec(params, Job("uea", dataset, model, fold), SUITE)
                    key = _run_key(spec)
                    plan[(name, dataset, model, fold)] = key
                    specs.setdefault(key, spec)
    todo = [k for k in dict.fromkeys(plan.values()) if not (out / "runs" / f"{k}.json").is_file()]
    print(f"{len(plan)} runs in {len(variants)} variants: {len(set(plan.values()))} distinct, "
          f"{len(todo)} to train", flush=True)  # fmt: skip
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            pool.submit(_train, specs[k], str(out / "runs" / f"{k}.json"),
                        str(out / "logs" / f"{k}.log")): k
            for k in todo
        }  # fmt: skip
        for i, done in enumerate(as_completed(futures), 1):
            key = futures[done]
            _, seconds[key] = done.result()
            s = specs[key]
            print(f"[{i}/{len(todo)}] {s['dataset']} {s['model']} seed {s['fold']}: "
                  f"{seconds[key]:.1f}s", flush=True)  # fmt: skip
    print(f"trained {len(todo)} runs in {time.perf_counter() - started:.0f}s wall", flush=True)

    # each record with its provenance file's train_seconds (ssmbench.train.provenance)
    records = {
        k: with_provenance(path, json.loads(path.read_text()))
        for k in set(plan.values())
        for path in [out / "runs" / f"{k}.json"]
    }
    # The key leaves the code digest out (a comment edit would retrain everything): say
    # when a stored run was trained by other code than this checkout's.
    other = sum(records[k]["code_digest"] != specs[k]["code"] for k in records)
    if other:
        print(
            f"WARNING: {other} of {len(records)} runs were trained with other training code "
            f"than this checkout's (delete {out / 'runs'} to retrain them)",
            file=sys.stderr,
        )
    published = load_published_errors()
    published = published[published["benchmark"] == "uea"].set_index(["dataset", "model"])
    text = _tables(variants, plan, records, published, args.seeds, args.models)
    print(text)
    (out / "tables.md").write_text(text, encoding="utf-8")
    return 0


def _errors(plan, records, variant, dataset, model, seeds):
    return [records[plan[(variant, dataset, model, f)]]["test_error"] for f in range(seeds)]


def _tables(variants, plan, records, published, seeds, models) -> str:
    datasets = list(dict.fromkeys(d for (_, d, _, _) in plan))
    lines = []
    # Wall time and selection summary per variant.
    lines += ["## Variants", "",
              "| variant | change | train s (sum, MS4N+MS4) | epochs run (mean) | "
              "runs whose best epoch is <= 2 |", "|---|---|---:|---:|---:|"]  # fmt: skip
    for name, change, _, _ in variants:
        recs = [records[k] for (v, _, _, _), k in plan.items() if v == name]
        train_s = sum(r["train_seconds"] for r in recs)
        epochs = np.mean([r["epochs_run"] for r in recs])
        early = sum(r["best_epoch"] <= 2 for r in recs)
        lines.append(f"| {name} | {change} | {train_s:.0f} | {epochs:.0f} | {early}/{len(recs)} |")
    steps = list(zip(variants, variants[1:], strict=False))
    names = [v[0] for v in variants]
    if "before" in names and "authors" in names and len(steps) > 1:
        # every choice at once: the simpler protocol against the authors'
        steps.append((variants[names.index("before")],
                      ("authors", "all choices at once: the simpler protocol -> the authors'",
                       None, None)))  # fmt: skip
    order = [v[0] for v in VARIANTS]
    for (prev, _, _, _), (name, change, _, _) in steps:
        if order.index(name) - order.index(prev) > 1 and "at once" not in change:
            change = f"every choice from {prev} to {name}"
        lines += ["", f"## {change}", "", f"{prev} -> {name}, test error, mean ± std over "
                  f"{seeds} seeds; paper: the MS4N paper's Table 5", ""]  # fmt: skip
        for model in models:
            lines += [f"**{model}**", "", f"| dataset | paper | {prev} | {name} | change |",
                      "|---|---:|---:|---:|---:|"]  # fmt: skip
            diffs = {prev: [], name: []}
            for ds in datasets:
                a = _errors(plan, records, prev, ds, model, seeds)
                b = _errors(plan, records, name, ds, model, seeds)
                paper = published["error_mean"].get((ds, model), np.nan)
                ref = published["error_std"].get((ds, model), np.nan)
                for v, errs in ((prev, a), (name, b)):
                    if not np.isnan(paper):
                        diffs[v].append(np.mean(errs) - paper)
                lines.append(f"| {ds} | {paper:.3f} ± {ref:.3f} | {_mean_std(a)} | "
                             f"{_mean_std(b)} | {np.mean(b) - np.mean(a):+.3f} |")  # fmt: skip
            for v in (prev, name):
                d = np.asarray(diffs[v])
                lines.append(f"| *{v}: above the paper on* | | {int((d > 0).sum())}/{d.size} sets, "
                             f"mean signed difference {d.mean():+.4f} | | |")  # fmt: skip
            lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
