"""The ``uea6`` source's catalog rows: UEA datasets under the Log-NCDE protocol
(``prepare.py``), their figures those of the UEA row they are derived from but ``N``, the
rows once duplicates are removed."""

from __future__ import annotations

from ssmbench.data.catalog_entry import catalog_row
from ssmbench.data.uea.catalog import UEA_DATASETS

#: The Log-NCDE benchmark's row counts after duplicates are removed
#: (log-neural-cdes run_experiment.py: EigenWorms loses 23 of 259; the others none).
_UEA6_ROWS = {
    "EigenWorms": 236,
    "EthanolConcentration": 524,
    "Heartbeat": 409,
    "MotorImagery": 378,
    "SelfRegulationSCP1": 561,
    "SelfRegulationSCP2": 380,
}
UEA6_DATASETS: dict[str, dict] = {
    name: catalog_row(
        UEA_DATASETS[name]["domain"],
        "classification",
        C=UEA_DATASETS[name]["C"],
        L=UEA_DATASETS[name]["L"],
        classes=UEA_DATASETS[name]["classes"],
        N=n,
        source=f"derived from uea/{name}",
        ref="Log-NCDE benchmark (Walker et al. 2024), as the TIDES paper's UEA table",
        notes="TRAIN and TEST pooled, exact duplicates removed, one 70/15/15 split per "
        "Log-NCDE seed (ssmbench.data.uea6.prepare).",
    )
    for name, n in _UEA6_ROWS.items()
}
UEA6_DATASETS["BasicMotions"] = {
    **UEA6_DATASETS["EigenWorms"],
    **{k: UEA_DATASETS["BasicMotions"][k] for k in ("domain", "C", "L", "classes")},
    "N": 80,
    "source": "derived from uea/BasicMotions",
    "ref": "ssmbench: not in the TIDES paper; the UEA-6 protocol on a set aeon ships, so it "
    "runs offline (tests, laptop checks)",
    "notes": "UEA BasicMotions under the UEA-6 protocol: 80 rows, no duplicates.",
}

#: the rows by benchmark name
CATALOG = {"uea6": UEA6_DATASETS}
