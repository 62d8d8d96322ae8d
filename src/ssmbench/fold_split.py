"""What a fold's validation split is drawn with: its seed (`validation_seed`) and the
settings a split drawn once by the split rule records and is checked against
(`split_settings`; ``ssmbench.train.split_files``). Part of every run's code digest: a
change here changes which rows a run trains on.
"""

from __future__ import annotations


def validation_seed(settings: dict, run_seed: int) -> int:
    """The seed of a run's validation split: ``val_split_seed`` from params.yaml (the MS4N
    authors' 1234: one split for every run of a fold) or, with ``run``, the run's own seed
    (a split re-drawn per seeded run)."""
    chosen = settings.get("val_split_seed", "run")
    return int(run_seed) if chosen == "run" else int(chosen)


def split_settings(settings: dict, fold: int) -> dict:
    """What a fold's split is drawn with: the fold, the validation fraction, the split's
    seed (``protocol.val_split_seed``, or the run's seed) and the fallback."""
    run_seed = int(settings.get("seed_base", 0)) + int(fold)
    return {
        "fold": int(fold),
        "val_fraction": float(settings["val_fraction"]),
        "seed": validation_seed(settings, run_seed),
        "fallback": settings.get("val_split_fallback", "per_class"),
    }
