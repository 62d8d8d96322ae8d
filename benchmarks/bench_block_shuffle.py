"""Does block shuffling change results? MS4N on PenDigits, full shuffle vs block shuffle.

PenDigits (UEA, 10,992 rows: 7,494 official training rows, 2 channels, length 8) from a
copy of the UEA archive (``--archive``, else params.yaml's ``paths.uea_archive`` or the
environment variable ``SSMBENCH_UEA_ARCHIVE``) is fetched and prepared with the project's
code into a temporary folder, and trained by the protocol itself
(``ssmbench.train.protocol.run_job`` on ``ssmbench.config.job_spec`` of params.yaml's
``uea`` benchmark and ``MS4N`` entry), once per mode and seed (UEA: fold k = seed k):

* ``full``: ``protocol.reading`` as params.yaml has it (PenDigits fits the memory
  budget: read into memory, full shuffle, the default suite's order);
* ``block``: ``in_memory_max_gb: 0`` forces block mode: blocks of ``--block-rows``
  consecutive training rows (64: 4 KB), rows shuffled within windows of
  ``--buffer-blocks`` blocks (8: 512 rows, 8 batches of 64), read through BlockReader.

The stored PenDigits rows are not sorted by class (their labels interleave), which is
the easy case for block shuffling; so both modes also run on a class-sorted copy (rows,
labels and the test split permuted together: the same data, the training rows and the
test rows each sorted by label), the
hard case: there a window of 8 blocks holds at most ~8 runs of one class each.

Prints each run's test error and, per (data order, mode), the mean +- std over seeds.

Usage: python benchmarks/bench_block_shuffle.py [--epochs 40] [--seeds 0 1 2] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
NAME = "PenDigits"
ROW_BYTES = 2 * 8 * 4  # C x L float32


def prepare(work: Path, archive: Path) -> dict[str, Path]:
    """The prepared PenDigits folder as stored, and a class-sorted copy of it."""
    from ssmbench.data import fetch_uea, prepare_uea

    fetch_uea(NAME, work / "raw", archive_dir=archive, download=False)
    stored = prepare_uea(NAME, work / "raw", work / "prepared")
    sorted_dir = work / "prepared_sorted" / NAME
    shutil.copytree(stored, sorted_dir)
    X = np.load(stored / "X.npy")
    y = np.load(stored / "y.npy")
    # sorted by label within the official training rows and within the test rows (the
    # prepared folder keeps the training rows first): new row i is old row perm[i]
    test = np.array((stored / "test_indices_fold_0.txt").read_text().split(), dtype=np.int64)
    train = np.setdiff1d(np.arange(len(y)), test)
    perm = np.concatenate([train[np.argsort(y[train], kind="stable")],
                           test[np.argsort(y[test], kind="stable")]])  # fmt: skip
    new_of_old = np.empty_like(perm)
    new_of_old[perm] = np.arange(len(perm))
    np.save(sorted_dir / "X.npy", X[perm])
    np.save(sorted_dir / "y.npy", y[perm])
    for f in stored.glob("*indices*.txt"):
        old = np.array(f.read_text().split(), dtype=np.int64)
        (sorted_dir / f.name).write_text("\n".join(map(str, np.sort(new_of_old[old]))) + "\n")
    return {"stored": stored, "class-sorted": sorted_dir}


def run_one(args: tuple) -> dict:
    data_order, prepared, mode, seed, epochs, block_rows, buffer_blocks, out = args
    import torch

    from ssmbench.config import Job, job_spec
    from ssmbench.params_file import read_params
    from ssmbench.train.protocol import run_job

    torch.set_num_threads(1)
    params = read_params(ROOT / "params.yaml")
    spec = job_spec(params, Job("uea", NAME, "MS4N", seed))
    spec["prepared_dir"] = str(prepared)
    spec["settings"]["max_epochs"] = epochs
    if mode == "block":
        spec["settings"]["reading"] = {"in_memory_max_gb": 0,
                                       "block_mb": block_rows * ROW_BYTES / (1 << 20),
                                       "buffer_blocks": buffer_blocks}  # fmt: skip
    lines: list[str] = []
    t0 = time.perf_counter()
    record = run_job(spec, Path(out) / data_order / mode / f"fold{seed}.json", log=lines.append)
    return {
        "data": data_order, "mode": mode, "seed": seed, "test_error": record["test_error"],
        "best_epoch": record["best_epoch"], "reading": record["reading"],
        "seconds": time.perf_counter() - t0,
        "log": next(line for line in lines if "reading:" in line),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--block-rows", type=int, default=64)
    ap.add_argument("--buffer-blocks", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    ap.add_argument(
        "--archive",
        type=Path,
        default=None,
        help="a copy of the UEA archive (default: paths.uea_archive, or SSMBENCH_UEA_ARCHIVE)",
    )
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    if args.archive is None:
        from ssmbench.params_file import read_params

        archive = read_params(ROOT / "params.yaml")["paths"].get("uea_archive")
        if not archive:
            ap.error("no UEA archive: pass --archive, or set paths.uea_archive in params.yaml "
                     "or SSMBENCH_UEA_ARCHIVE in the environment")  # fmt: skip
        args.archive = Path(archive)

    work = Path(tempfile.mkdtemp(prefix="ssmbench-block-shuffle-", dir=args.workdir))
    try:
        folders = prepare(work, args.archive)
        y = np.load(folders["stored"] / "y.npy")
        changes = int(np.count_nonzero(np.diff(y)))
        print(
            f"PenDigits as stored: {len(y)} rows, label changes between consecutive rows: "
            f"{changes} of {len(y) - 1} ({'not ' if changes > len(y) / 2 else ''}sorted "
            "by class); class-sorted copy: training and test rows each sorted by label"
        )
        tasks = [
            (order, str(folder), mode, seed, args.epochs, args.block_rows, args.buffer_blocks,
             str(work / "runs"))
            for order, folder in folders.items()
            for mode in ("full", "block")
            for seed in args.seeds
        ]  # fmt: skip
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_one, tasks))
        for r in results:
            print(
                f"{r['data']:>12} {r['mode']:>5} seed {r['seed']}: test error "
                f"{r['test_error']:.4f} (best epoch {r['best_epoch']}, {r['seconds']:.0f} s)"
            )
        for order in folders:
            for mode in ("full", "block"):
                print(f"  reading ({order}, {mode}): "
                      + next(r["log"] for r in results if (r["data"], r["mode"]) == (order, mode))
                      .split("] ", 1)[-1])  # fmt: skip
        print(
            f"\nMS4N on PenDigits, {args.epochs} epochs, seeds {args.seeds}; block: "
            f"{args.block_rows} rows x {args.buffer_blocks} blocks a window"
        )
        summary = {}
        for order in folders:
            for mode in ("full", "block"):
                errs = [r["test_error"] for r in results if (r["data"], r["mode"]) == (order, mode)]
                mean, std = statistics.mean(errs), statistics.pstdev(errs)
                summary[f"{order}/{mode}"] = {"mean": mean, "std": std, "errors": errs}
                print(
                    f"  {order:>12} {mode:>5} shuffle: test error {mean:.4f} +- {std:.4f} "
                    f"(std over {len(errs)} seeds)"
                )
        print(json.dumps(summary))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
