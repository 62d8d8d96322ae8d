"""The ``monster`` source's catalog rows: the 29 MONSTER datasets of the MS4N study, grouped
by domain as the MS4N paper's Table 4 groups them (its "SI" column is ``"Satellite"`` here).
``N`` (examples), ``C``, ``L`` and ``classes`` are those of the MONSTER paper, Dempster et al.,
"MONSTER: Monash Scalable Time Series Evaluation Repository", arXiv:2502.15122v1, Table 1
(read from a verbatim copy of the arXiv HTML table); the Hub dataset cards of AudioMNIST,
LakeIce and TimeSen2Crop were read as well and agree, except where ``notes`` says otherwise.
``aliases`` are the other spellings met in the MONSTER paper and in the MONSTER
benchmark repository's results workbook (github Navidfoumani/monster, per-fold results:
S2Agri-19/44 for the Hub's -17/-34, Tiselac2 for Tiselac, DreamerA/V and Crowdsourced
spelled two ways).

Preparing a dataset compares :data:`CHECKED_FIELDS` with its row
(``ssmbench.data.catalog_entry.compare_with_row``); a difference is a recorded warning,
not an error (X's header gives N, C and L: it is the file as fetched).
"""

from __future__ import annotations

MONSTER_HUB = "https://huggingface.co/datasets/monster-monash/{}"
MONSTER_REF = "https://arxiv.org/html/2502.15122v1#S3.T1 (MONSTER paper v1, Table 1)"
MONSTER_CARD = "https://huggingface.co/datasets/monster-monash/{}/blob/main/README.md"


def _m(domain, N, C, L, classes, aliases=(), notes=""):
    return {
        "domain": domain,
        "N": N,
        "C": C,
        "L": L,
        "classes": classes,
        "ref": MONSTER_REF,
        "aliases": tuple(aliases),
        "notes": notes,
    }


_CARD_AGREES = "The Hub card ({}) gives the same N, C, L and classes."

MONSTER_DATASETS: dict[str, dict] = {
    # Audio (7)
    "AudioMNIST": _m(
        "Audio", 30000, 1, 47998, 10, notes=_CARD_AGREES.format(MONSTER_CARD.format("AudioMNIST"))
    ),
    "AudioMNIST-DS": _m(
        "Audio",
        30000,
        1,
        4000,
        10,
        notes="AudioMNIST downsampled to length 4,000 (the AudioMNIST Hub card says the same).",
    ),
    "CornellWhaleChallenge": _m("Audio", 30000, 1, 4000, 2),
    "FruitFlies": _m("Audio", 34518, 1, 5000, 3),
    "InsectSound": _m("Audio", 50000, 1, 600, 10),
    "MosquitoSound": _m("Audio", 279566, 1, 3750, 6),
    "WhaleSounds": _m("Audio", 105163, 1, 2500, 8),
    # Satellite (7): the MS4N paper's "SI" (satellite image time series)
    "LakeIce": _m(
        "Satellite", 129280, 1, 161, 3, notes=_CARD_AGREES.format(MONSTER_CARD.format("LakeIce"))
    ),
    "S2Agri-17": _m(
        "Satellite",
        59268823,
        10,
        24,
        17,
        aliases=("S2Agri-19",),
        notes="Table 1 has one S2Agri row (classes '17 / 34'): the -17 and -34 sets share "
        "their series and differ in the label set. 'S2Agri-19' in the MONSTER repo's results.",
    ),
    "S2Agri-34": _m(
        "Satellite",
        59268823,
        10,
        24,
        34,
        aliases=("S2Agri-44",),
        notes="Same series as S2Agri-17 (Table 1's one S2Agri row, classes '17 / 34'). "
        "'S2Agri-44' in the MONSTER repo's results.",
    ),
    "S2Agri-10pc-17": _m(
        "Satellite",
        5850881,
        10,
        24,
        17,
        aliases=("S2Agri-10pc-19",),
        notes="Table 1's one S2Agri-10pc row (classes '17 / 29'). "
        "'S2Agri-10pc-19' in the MONSTER repo's results.",
    ),
    "S2Agri-10pc-34": _m(
        "Satellite",
        5850881,
        10,
        24,
        29,
        aliases=("S2Agri-10pc-44",),
        notes="Table 1 gives 29 classes (row S2Agri-10pc, '17 / 29'), not the 34 the name "
        "suggests: the 34-class label set, of which the 10% subset holds 29. The MS4N paper's "
        "Table 4 SI parameter average (24,740) is reproduced with 29. "
        "'S2Agri-10pc-44' in the MONSTER repo's results.",
    ),
    "Tiselac": _m(
        "Satellite",
        99687,
        10,
        23,
        9,
        aliases=("Tiselac2",),
        notes="'Tiselac2' in the MONSTER repo's results.",
    ),
    "TimeSen2Crop": _m(
        "Satellite",
        1135511,
        9,
        365,
        15,
        notes="classes: Table 1 and the Hub card's summary table say 16 (the original land "
        "cover classes); the card's text says the processed data has 15 (the 'other crops' "
        "class removed), and the MS4N paper's Table 4 SI parameter average (24,740) is "
        "reproduced with 15. N, C, L: Table 1 and the card "
        f"({MONSTER_CARD.format('TimeSen2Crop')}) agree. The card also says TimeSen2Crop has "
        "since been removed from the MONSTER benchmark.",
    ),
    # HAR (7)
    "Opportunity": _m("HAR", 17386, 113, 100, 5),
    "PAMAP2": _m("HAR", 38856, 52, 100, 12),
    "Skoda": _m("HAR", 14117, 60, 100, 11),
    "UCIActivity": _m("HAR", 10299, 9, 128, 6),
    "USCActivity": _m("HAR", 56228, 6, 100, 12),
    "WISDM": _m("HAR", 17166, 3, 100, 6),
    "WISDM2": _m("HAR", 149034, 3, 100, 6),
    # EEG (4)
    "CrowdSourced": _m(
        "EEG",
        12289,
        14,
        256,
        2,
        aliases=("Crowdsourced",),
        notes="'Crowdsourced' in part of the MONSTER repo's results.",
    ),
    "DREAMERA": _m(
        "EEG",
        170246,
        14,
        256,
        2,
        aliases=("DreamerA",),
        notes="'DreamerA' in Table 1 and in part of the MONSTER repo's results.",
    ),
    "DREAMERV": _m(
        "EEG",
        170246,
        14,
        256,
        2,
        aliases=("DreamerV",),
        notes="'DreamerV' in Table 1 and in part of the MONSTER repo's results.",
    ),
    "STEW": _m("EEG", 28512, 14, 256, 2),
    # Counts (2)
    "Pedestrian": _m("Counts", 189621, 1, 24, 82),
    "Traffic": _m("Counts", 1460968, 1, 24, 7),
    # Other (2)
    "FordChallenge": _m("Other", 36257, 30, 40, 2),
    "LenDB": _m("Other", 1244942, 3, 540, 2),
}

for _name, _info in MONSTER_DATASETS.items():
    _info["source"] = MONSTER_HUB.format(_name)

#: the fields of a row that a preparation compares with what it read
CHECKED_FIELDS = ("N", "C", "L", "classes")

#: the rows by benchmark name
CATALOG = {"monster": MONSTER_DATASETS}
