"""A run's row counts, (n_train, n_val, n_test), from a dataset's size before any data are
read: the split rules the sources' ``split_rows`` (``source_type.Source``) and
``ssmbench.plan.row_counts`` share. Validation rows are ``val_fraction`` of the rows left
for training, at least one."""

from __future__ import annotations


def official_split(n_train: int, n_test: int, val_fraction: float) -> tuple[int, int, int]:
    """A given TRAIN/TEST split (UEA's): ``val_fraction`` of TRAIN for validation."""
    n_val = max(1, round(val_fraction * n_train))
    return n_train - n_val, n_val, n_test


def held_out(N: int, n_test: int, val_fraction: float) -> tuple[int, int, int]:
    """``n_test`` of ``N`` rows tested, ``val_fraction`` of the rest for validation."""
    n_val = max(1, round(val_fraction * (N - n_test)))
    return N - n_test - n_val, n_val, n_test
