"""The source table: params.yaml ``benchmarks.<b>.source`` name -> its `Source`
(``source_type.py``), as ``models/families.py`` is for model families. A source is a folder
of its own, ``data/<name>/``, whose ``source.py`` holds its ``SOURCE = Source(...)`` beside
its fetch, preparation, catalog rows (``catalog.py``) and settings (``params.schema.yaml``);
registering it is its import and its line here. The params schema's ``source`` enum, the
catalog, the settings a benchmark may hold and who reads them are taken from this table.
"""

from __future__ import annotations

from ssmbench.data.monster import source as monster
from ssmbench.data.physiome import source as physiome
from ssmbench.data.source_type import Source
from ssmbench.data.synthetic import source as synthetic
from ssmbench.data.uea import source as uea
from ssmbench.data.uea6 import source as uea6
from ssmbench.data.uea_drop import source as uea_drop

#: source name -> Source, in the order the schema's enum, the catalog and error messages
#: list them
SOURCES: dict[str, Source] = {
    "uea": uea.SOURCE,  # the UEA archive
    "monster": monster.SOURCE,  # MONSTER on the Hugging Face Hub
    "physiome": physiome.SOURCE,  # Physiome-ODE, generated or the official archive
    "synthetic": synthetic.SOURCE,  # TIDES Fading Flash, generated
    # derived from a prepared dataset of another benchmark (`derived_from`)
    "uea_drop": uea_drop.SOURCE,  # <Base>Drop: time steps dropped
    "uea6": uea6.SOURCE,  # the Log-NCDE protocol's splits
}
