"""The ``uea_drop`` source's catalog rows: UEA datasets with time steps dropped at random
(``prepare.py``), their figures those of the UEA row they are derived from."""

from __future__ import annotations

from ssmbench.data.catalog_entry import catalog_row
from ssmbench.data.uea.catalog import UEA_DATASETS, UEA_REF

_EIGENWORMS = UEA_DATASETS["EigenWorms"]
UEA_DROP_DATASETS: dict[str, dict] = {
    "EigenWormsDrop": catalog_row(
        _EIGENWORMS["domain"],
        "classification",
        C=_EIGENWORMS["C"],
        L=_EIGENWORMS["L"],
        classes=_EIGENWORMS["classes"],
        N=_EIGENWORMS["n_train"] + _EIGENWORMS["n_test"],
        source="derived from uea/EigenWorms",
        ref="TIDES paper: the random time-step-drop ablation; figures: " + UEA_REF,
        notes="UEA EigenWorms with time steps dropped at random; L is the full length "
        "before dropping, N = EigenWorms' n_train + n_test.",
    ),
    "BasicMotionsDrop": catalog_row(
        UEA_DATASETS["BasicMotions"]["domain"],
        "classification",
        C=UEA_DATASETS["BasicMotions"]["C"],
        L=UEA_DATASETS["BasicMotions"]["L"],
        classes=UEA_DATASETS["BasicMotions"]["classes"],
        N=UEA_DATASETS["BasicMotions"]["n_train"] + UEA_DATASETS["BasicMotions"]["n_test"],
        source="derived from uea/BasicMotions",
        ref="ssmbench: not in the TIDES paper; the drop-rate protocol on a small UEA set "
        "aeon ships, so it runs offline (tests, laptop checks)",
        notes="UEA BasicMotions with time steps dropped at random, as EigenWormsDrop.",
    ),
}

#: the rows by benchmark name
CATALOG = {"uea_drop": UEA_DROP_DATASETS}
