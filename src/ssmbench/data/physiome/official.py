"""The 50 datasets of the official Physiome-ODE benchmark (Zenodo record 11492058), named by
their leaderboard code (``DUP01``, ``HOD01``, ``DIF01``, ...) and mapped to their folder in
the archive's ``final/`` (``dupont_1991a``, ...).

The table is ``ssmbench/reference/physiome_top50_config.csv`` (its source in
``ssmbench/reference/README.md``): the rows of github
kloetergensc/Physiome-ODE @4829169 ``resources/Top50_final.csv`` (the model name as
``dataset``; horizon ``T``, ``N_t`` time points, the perturbations ``d_constants`` and
``d_states``, ``rand_start``, the JGD score as ``jgd``, the numbers of constants and
states), with the README leaderboard's short name as ``code`` (rows matched in order and
checked on the JGD column). ``domain`` is that file's
biological domain. Read once, on import, with the standard library alone.

Only mode ``"zenodo"`` has these datasets, with one exception: ``HOD01`` is also a
generated dataset (our transcription of its model, ``models.PHYSIOME_MODELS``). Two more
are models we generate under our own names (``HodgkinHuxley1952``,
``DiFrancescoNoble1985``, whose ``official`` counterpart is HOD01's and DIF01's folder).
"""

from __future__ import annotations

import csv
from importlib import resources

from ssmbench.data.physiome.models import PHYSIOME_MODELS

#: where the table ships inside the package
TABLE_FILE = "physiome_top50_config.csv"
_INT_COLUMNS = ("N_t", "n_constants", "n_states")
_FLOAT_COLUMNS = ("T", "d_constants", "d_states", "jgd")


def _read_table() -> dict[str, dict]:
    ref = resources.files("ssmbench").joinpath("reference", TABLE_FILE)
    with ref.open("r", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    table: dict[str, dict] = {}
    for row in rows:
        entry = {
            "code": row["code"],
            "dataset": row["dataset"],
            "domain": row["domain"],
            **{k: int(row[k]) for k in _INT_COLUMNS},
            **{k: float(row[k]) for k in _FLOAT_COLUMNS},
            "rand_start": row["rand_start"] == "True",
        }
        table[row["code"]] = entry
    # A broken copy of the table must not pass silently: 50 codes, 50 folders.
    if len(table) != 50 or len({e["dataset"] for e in table.values()}) != 50:
        raise RuntimeError(
            f"ssmbench/reference/{TABLE_FILE}: expected 50 distinct codes and archive folders, "
            f"found {len(table)} codes; reinstall ssmbench"
        )
    return table


#: leaderboard code -> {code, dataset (the archive's folder), domain, T, N_t, d_constants,
#: d_states, rand_start, jgd, n_constants, n_states}, in the table's order (JGD descending)
OFFICIAL_DATASETS: dict[str, dict] = _read_table()
#: the archive's folder -> leaderboard code
CODE_OF_FOLDER: dict[str, str] = {e["dataset"]: code for code, e in OFFICIAL_DATASETS.items()}


def is_official(name: str) -> bool:
    """Whether ``name`` is one of the 50 leaderboard codes."""
    return name in OFFICIAL_DATASETS


def archive_folder(name: str) -> str | None:
    """The archive's folder of dataset ``name``: an official code's own folder, or the
    official counterpart of one of our generated models; None when there is none."""
    if name in OFFICIAL_DATASETS:
        return OFFICIAL_DATASETS[name]["dataset"]
    entry = PHYSIOME_MODELS.get(name)
    return entry["official"] if entry else None


def official_row(folder: str) -> dict | None:
    """The table's row of an archive folder (e.g. ``dupont_1991a``), or None."""
    code = CODE_OF_FOLDER.get(folder)
    return dict(OFFICIAL_DATASETS[code]) if code else None
