"""The row-index memory of a block-shuffled run, per training row: what grows with N even
when X is read from disk a window at a time.

It draws the authors' validation split (scikit-learn's ``StratifiedShuffleSplit``,
test_size 0.1, random_state 1234, as ``ssmbench.train.splits``) on N random labels, then one
epoch's block-shuffled order (``ssmbench.train.batch_order.epoch_order``) and the sorted
row list a ``BlockReader`` keeps, and prints the RSS they keep and the peak (VmHWM) they
reach, in MiB and in bytes per row split (a fold's non-test rows), with what that comes to
at S2Agri's size (MONSTER, 59,268,823 rows, 4/5 of them outside a fold's test rows).

Usage: python benchmarks/bench_row_indices.py [--rows 5000000] [--classes 17]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from proc_status import memory_bytes
from sklearn.model_selection import StratifiedShuffleSplit

from ssmbench.train.batch_order import epoch_order

#: S2Agri's rows outside one fold's test rows (MONSTER's 5 folds)
S2AGRI_SPLIT_ROWS = 59_268_823 * 4 // 5
MIB = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--classes", type=int, default=17)
    args = parser.parse_args()

    y = np.random.default_rng(0).integers(0, args.classes, args.rows).astype(np.int64)
    base = memory_bytes("VmRSS")
    split = StratifiedShuffleSplit(n_splits=1, test_size=0.1, random_state=1234)
    train_idx, val_idx = next(split.split(np.zeros((args.rows, 1)), y))
    split_kept, split_peak = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
    order = epoch_order(train_idx, torch.Generator().manual_seed(0), 4096, 32)
    reader_rows = np.sort(train_idx)  # what a BlockReader over the training rows keeps
    kept, peak = memory_bytes("VmRSS") - base, memory_bytes("VmHWM") - base
    n_train = len(train_idx)
    assert len(order) == len(reader_rows) == n_train

    print(f"{args.rows:,} rows split ({n_train:,} training), {args.classes} classes; "
          f"y itself {y.nbytes / MIB:.0f} MiB")  # fmt: skip
    for what, k, p in (("after the split", split_kept, split_peak),
                       ("+ order, reader rows", kept, peak)):  # fmt: skip
        print(f"  {what:<21} kept {k / MIB:6.0f} MiB, peak {p / MIB:6.0f} MiB")
    per_kept, per_peak = kept / args.rows, peak / args.rows
    print(f"  per row split: kept {per_kept:.1f} B, peak {per_peak:.1f} B")
    print(f"  at S2Agri ({S2AGRI_SPLIT_ROWS:,} rows split): kept "
          f"{per_kept * S2AGRI_SPLIT_ROWS / 1e9:.1f} GB, peak "
          f"{per_peak * S2AGRI_SPLIT_ROWS / 1e9:.1f} GB")  # fmt: skip


if __name__ == "__main__":
    main()
