"""The row-index memory of a block-shuffled run, per row: what a run holds that grows with
N even when X is read from disk a window at a time.

It writes a prepared dataset of S2Agri's shape (MONSTER's format: five given folds;
``--rows`` rows of 10 channels x 24 steps, X a sparse file of zeros, so that it takes no
disk and the row indices are what is measured; ``--classes`` labels drawn with unequal
class sizes) and, each in its own process, measures from a baseline taken after the
imports:

* ``ours``: what ``ssmbench train`` holds in block mode when it draws the split itself (a
  dataset whose size the catalog does not know): ``run_setup.set_up`` (the fold's rows,
  the authors' validation split drawn by ``ssmbench.data.validation_split``, the checks,
  an MS4N), then one epoch's block-shuffled order (`plan_order`), the training
  ``BlockReader``, the validation and test readers (labels read with the blocks), one
  batch read through each; then the batches of the epoch's first `TRAIN_WINDOWS` windows
  read (the reader's cache at its size) and `TRAIN_STEPS` of them trained on (MS4N,
  Adam): the whole run's peak;
* ``split_step``: the split rule's job (``ssmbench.train.fold_split.write_split``: the
  checks, the same draw, the rows written as .npy files);
* ``ours_files``: the same as ``ours`` reading the split step's files
  (``spec["split_dir"]``: what a block-read dataset's training jobs do): the rows stay on
  disk (``RowFile``), read a block at a time;
* ``anchor``: the same rows the way scikit-learn draws them, as ssmbench did before: the
  index file parsed with ``str.split``, int64 pool and labels, ``StratifiedShuffleSplit``
  (test_size 0.1, random_state 1234), an int64 copy of the training rows for the order
  and one for the reader.

Both are run at ``--rows`` (default S2Agri's 59,268,823) and at a quarter of it, and it
prints the RSS kept (VmRSS) and the peak (VmHWM) above the baseline, after the split and
after the rest, in MiB and per row, and the slope between the two sizes (bytes per added
row). The validation rows of all four are checked to be the same. The set-up's checks read
all of X (sparse: about 2 minutes at S2Agri's size here).

Usage: python benchmarks/bench_row_indices.py [--rows 59268823] [--classes 17] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from proc_status import memory_bytes

ROOT = Path(__file__).resolve().parents[1]
S2AGRI_ROWS, C, L = 59_268_823, 10, 24
#: windows of block-shuffled batches read, and steps trained on, after the set-up
TRAIN_WINDOWS, TRAIN_STEPS = 2.2, 20
N_FOLDS = 5
MIB = 1 << 20
#: measured in this order at each size (split_step writes the files ours_files reads)
KINDS = ("anchor", "ours", "split_step", "ours_files")


def make(folder: Path, n: int, n_classes: int) -> None:
    """A prepared given_folds dataset of n rows of S2Agri's shape, X sparse zeros."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    X = np.lib.format.open_memmap(folder / "X.npy", "w+", np.float32, (n, C, L))
    del X  # the file is sized by a truncate: nothing written, no disk used
    weights = 1.0 / np.arange(1, n_classes + 1)  # unequal classes, the largest ~30%
    np.save(folder / "y.npy", rng.choice(n_classes, n, p=weights / weights.sum()))
    folds = rng.permutation(n) % N_FOLDS
    for k in range(N_FOLDS):
        rows = np.flatnonzero(folds == k)
        (folder / f"test_indices_fold_{k}.txt").write_text("\n".join(map(str, rows)) + "\n")
    meta = {"name": "RowIndices", "benchmark": "monster", "task": "classification",
            "N": n, "C": C, "L": L, "n_classes": n_classes, "fold_scheme": "given_folds",
            "n_folds": N_FOLDS}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))


def measure(kind: str, folder: Path) -> dict:
    import torch

    from ssmbench.config import Job, job_spec, load_params
    from ssmbench.data.store import PreparedDataset
    from ssmbench.reading_plan import plan_reading
    from ssmbench.train.batch_order import epoch_order, iterate_batches, plan_order
    from ssmbench.train.run_setup import set_up

    if kind == "anchor":
        from sklearn.model_selection import StratifiedShuffleSplit
    else:
        import ssmbench.models  # noqa: F401 - imported before the baseline, as sklearn is
    base = memory_bytes("VmRSS")
    if kind in ("ours", "ours_files", "split_step"):
        job = Job("monster", "Pedestrian", "MS4N", 0)
        spec = job_spec(load_params(ROOT / "params.yaml"), job)
        spec["prepared_dir"] = str(folder)
        reading = spec["settings"].get("reading") or {}
        spec["settings"]["reading"] = {**reading, "in_memory_max_gb": 0}  # block mode
        spec["settings"]["val_split_seed"] = 1234
    if kind == "split_step":  # the split rule's job: checks, the draw, the files written
        from ssmbench.data.row_file import RowFile
        from ssmbench.train.fold_split import write_split

        write_split(folder, 0, spec["settings"], folder / "split")
        split = rest = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
        val, n_train, order = RowFile(folder / "split" / "val.npy"), None, ()
    elif kind in ("ours", "ours_files"):
        if kind == "ours_files":  # the rows the split step wrote, read from disk
            spec["split_dir"] = str(folder / "split")
        run = set_up(spec, 1)
        data = run.data
        split = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
        order = plan_order(data.reading, data.train_idx, torch.Generator().manual_seed(0))
        for rows, full in ((order, None), (data.val_idx, data.val_idx),
                           (data.test_idx, data.test_idx)):  # fmt: skip
            X = data.train_X() if full is None else data.rows_X(full)
            next(iterate_batches(X, data.y, rows[:256], 256))
        rest = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
        # then training: the first TRAIN_WINDOWS windows' batches read (the reader's cache
        # full), TRAIN_STEPS of them trained on (forward, backward, Adam)
        window_rows = data.reading.block_rows * data.reading.buffer_blocks
        n_batches = math.ceil(TRAIN_WINDOWS * window_rows / run.batch_size)
        optimizer = torch.optim.Adam(run.model.parameters(), lr=1e-3)
        batches = iterate_batches(data.train_X(), data.y, order, run.batch_size)
        for step, (xb, yb) in enumerate(itertools.islice(batches, n_batches)):
            if step < TRAIN_STEPS:
                optimizer.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(run.model(xb), yb).backward()
                optimizer.step()
        val, n_train = data.val_idx, len(data.train_idx)
    else:
        ds = PreparedDataset(folder)
        text = (folder / "test_indices_fold_0.txt").read_text()
        test = np.sort(np.array(text.split(), np.int64))
        del text
        keep = np.ones(ds.meta["N"], bool)
        keep[test] = False
        pool = np.flatnonzero(keep).astype(np.int64)
        y_pool = np.asarray(ds.y[pool])
        split = StratifiedShuffleSplit(n_splits=1, test_size=0.1, random_state=1234)
        tr, va = next(split.split(np.zeros(len(pool)), y_pool))
        train, val = pool[np.sort(tr)], pool[np.sort(va)]
        split = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
        reading = load_params(ROOT / "params.yaml")["protocol"].get("reading") or {}
        plan = plan_reading({"reading": {**reading, "in_memory_max_gb": 0}}, ds.X.shape)
        order = epoch_order(np.sort(train.astype(np.int64)), torch.Generator().manual_seed(0),
                            plan.block_rows, plan.buffer_blocks)  # fmt: skip
        reader_rows = np.sort(train)  # what a BlockReader over the training rows kept
        n_train = len(reader_rows)
        del tr, va, y_pool
        rest = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
    kept, peak = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
    val_sha = hashlib.sha256()  # a chunk at a time: the rows on disk stay there
    for start in range(0, len(val), 1 << 20):
        val_sha.update(np.asarray(val[start : start + (1 << 20)], np.int64))
    return {"split_kept": split[0], "split_peak": split[1], "rest_kept": rest[0],
            "rest_peak": rest[1], "kept": kept, "peak": peak, "vmhwm": memory_bytes("VmHWM"),
            "n_train": n_train, "order": len(order), "val_sha": val_sha.hexdigest()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=S2AGRI_ROWS)
    parser.add_argument("--classes", type=int, default=17)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)  # kind folder
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return

    workdir = Path(tempfile.mkdtemp(prefix="bench_rows_", dir=args.workdir))
    try:
        results = {}
        sizes = (args.rows // 4, args.rows)
        for n in sizes:
            folder = workdir / f"n{n}"
            make(folder, n, args.classes)
            for kind in KINDS:
                out = subprocess.run(
                    [sys.executable, __file__, "--measure", kind, str(folder)],
                    check=True, capture_output=True, text=True,
                )  # fmt: skip
                results[kind, n] = json.loads(out.stdout.strip().splitlines()[-1])
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    small, large = sizes
    print(f"S2Agri's rows ({C} x {L} float32), {args.classes} classes, fold 0 of {N_FOLDS} "
          f"given folds, validation 0.1 (seed 1234), params.yaml's block sizes; RSS above "
          f"the imports:")  # fmt: skip
    for kind, what in (
        ("anchor", "scikit-learn split, int64 rows + copies (before)"),
        ("ours", "ssmbench set_up drawing the split in the training job (a dataset of "
                 "unknown size) + block order + readers + labels"),
        ("split_step", "the split rule's job (ssmbench split): checks, draw, files written"),
        ("ours_files", "ssmbench set_up reading the split step's files (block-read "
                       "datasets) + block order + readers + labels"),
    ):  # fmt: skip
        print(f"  {kind}: {what}")
        stages = [("split", "split_kept", "split_peak")]
        if kind != "split_step":
            stages.append(("+ order, readers", "rest_kept", "rest_peak"))
        if kind in ("ours", "ours_files"):
            stages.append((f"+ {TRAIN_STEPS} steps", "kept", "peak"))
        for stage, kept, peak in stages:
            for n in sizes:
                r = results[kind, n]
                print(f"    {stage:<16} N {n:>11,}: kept {r[kept] / MIB:6.0f} MiB "
                      f"({r[kept] / n:5.1f} B/row), peak {r[peak] / MIB:6.0f} MiB "
                      f"({r[peak] / n:5.1f} B/row)")  # fmt: skip
            lo, hi = results[kind, small], results[kind, large]
            slope_kept = (hi[kept] - lo[kept]) / (large - small)
            slope_peak = (hi[peak] - lo[peak]) / (large - small)
            print(f"    {stage:<16} slope: kept {slope_kept:.1f} B/row, peak {slope_peak:.1f} "
                  f"B/row; at S2Agri ({S2AGRI_ROWS:,} rows) kept "
                  f"{slope_kept * S2AGRI_ROWS / MIB:,.0f} MiB, peak "
                  f"{slope_peak * S2AGRI_ROWS / MIB:,.0f} MiB")  # fmt: skip
    for n in sizes:
        same = all(results["anchor", n]["val_sha"] == results[kind, n]["val_sha"]
                   for kind in KINDS)  # fmt: skip
        print(f"  N {n:,}: validation rows of all four {'the same' if same else 'DIFFER'} "
              f"({results['ours', n]['n_train']:,} training rows)")  # fmt: skip
        if not same:
            raise SystemExit("the validation rows differ from scikit-learn's")
    for kind in ("ours", "ours_files"):
        ratio = results[kind, large]["rest_peak"] / results["anchor", large]["rest_peak"]
        print(f"  peak of the split, order and readers, {kind} / anchor at N {large:,}: "
              f"{ratio:.3f}")  # fmt: skip
    for kind in ("ours", "split_step", "ours_files"):
        print(f"  {kind}, the whole process's peak (VmHWM, imports included): " + ", ".join(
            f"{results[kind, n]['vmhwm'] / MIB:,.0f} MiB at N {n:,}" for n in sizes))  # fmt: skip


if __name__ == "__main__":
    main()
