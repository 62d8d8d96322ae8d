"""The source table: params.yaml ``benchmarks.<b>.source`` name -> its `Source`
(``source_type.py``), as ``models/families.py`` is for model families. A new source is
its module (a ``SOURCE = Source(...)``) and one line here; the schema's ``source`` enum
lists the same names (tests/test_sources_registry.py holds them equal).
"""

from __future__ import annotations

from ssmbench.data.monster import source as source_monster
from ssmbench.data.physiome import source as source_physiome
from ssmbench.data.source_type import Source
from ssmbench.data.synthetic import source as source_synthetic
from ssmbench.data.uea import source as source_uea
from ssmbench.data.uea6 import source as source_uea6
from ssmbench.data.uea_drop import source as source_uea_drop

#: source name -> Source, in the order the schema's enum and error messages list them
SOURCES: dict[str, Source] = {
    "uea": source_uea.SOURCE,  # the UEA archive (uea*.py, ts_reader.py)
    "monster": source_monster.SOURCE,  # MONSTER on the Hugging Face Hub (monster*.py)
    "physiome": source_physiome.SOURCE,  # Physiome-ODE, generated or Zenodo (physiome/)
    "synthetic": source_synthetic.SOURCE,  # TIDES Fading Flash, generated (fading_flash.py)
    # derived from a prepared dataset of another benchmark (`derived_from`)
    "uea_drop": source_uea_drop.SOURCE,  # <Base>Drop: time steps dropped (drop_rate.py)
    "uea6": source_uea6.SOURCE,  # the Log-NCDE protocol's splits (uea6.py)
}
