"""The ``uea`` source's catalog rows: the 30 datasets of the UEA multivariate archive with the
figures of Bagnall et al., "The UEA multivariate time series classification archive, 2018"
(arXiv:1811.00075), Table 1: domain ("type" there; EEG/MEG written "EEG", audio spectra
"Audio"), channels ``C``, series length ``L`` (the maximum for the unequal-length sets),
``classes``, ``n_train``, ``n_test`` (``N`` is their sum). A field we are not sure of is left
out rather than guessed (InsectWingbeat's length and split sizes differ between archive
releases). The prepared ``meta.json`` holds the values actually read from the files; these
are for planning (batch sizes, resources), the report's domain grouping, and a check of
what was read: preparing a dataset compares :data:`CHECKED_FIELDS` with its row
(``ssmbench.data.catalog_entry.compare_with_row``), and a difference is an error (a
``.ts`` file cut short at a line end reads as fewer rows and raises nothing else). No row
lists an ``expected_differences``: the sets checked against the archive's files agree with
their rows in every field.
"""

from __future__ import annotations

UEA_SOURCE = "https://www.timeseriesclassification.com/"
UEA_REF = "https://arxiv.org/abs/1811.00075 (Table 1)"


def _d(domain, C, L, classes, n_train, n_test):
    return {
        "domain": domain,
        "C": C,
        "L": L,
        "classes": classes,
        "n_train": n_train,
        "n_test": n_test,
        "source": UEA_SOURCE,
        "ref": UEA_REF,
    }


UEA_DATASETS: dict[str, dict] = {
    "ArticularyWordRecognition": _d("Motion", 9, 144, 25, 275, 300),
    "AtrialFibrillation": _d("ECG", 2, 640, 3, 15, 15),
    "BasicMotions": _d("HAR", 6, 100, 4, 40, 40),
    "CharacterTrajectories": _d("Motion", 3, 182, 20, 1422, 1436),
    "Cricket": _d("HAR", 6, 1197, 12, 108, 72),
    "DuckDuckGeese": _d("Audio", 1345, 270, 5, 50, 50),
    "EigenWorms": _d("Motion", 6, 17984, 5, 128, 131),
    "Epilepsy": _d("HAR", 3, 206, 4, 137, 138),
    "EthanolConcentration": _d("Other", 3, 1751, 4, 261, 263),
    "ERing": _d("HAR", 4, 65, 6, 30, 270),
    "FaceDetection": _d("EEG", 144, 62, 2, 5890, 3524),
    "FingerMovements": _d("EEG", 28, 50, 2, 316, 100),
    "HandMovementDirection": _d("EEG", 10, 400, 4, 160, 74),
    "Handwriting": _d("HAR", 3, 152, 26, 150, 850),
    "Heartbeat": _d("Audio", 61, 405, 2, 204, 205),
    "InsectWingbeat": {
        "domain": "Audio",
        "C": 200,
        "classes": 10,
        "source": UEA_SOURCE,
        "ref": UEA_REF,
        "notes": "L and split sizes differ between archive releases.",
    },
    "JapaneseVowels": _d("Audio", 12, 29, 9, 270, 370),
    "LSST": _d("Other", 6, 36, 14, 2459, 2466),
    "Libras": _d("HAR", 2, 45, 15, 180, 180),
    "MotorImagery": _d("EEG", 64, 3000, 2, 278, 100),
    "NATOPS": _d("HAR", 24, 51, 6, 180, 180),
    "PEMS-SF": _d("Other", 963, 144, 7, 267, 173),
    "PenDigits": _d("Motion", 2, 8, 10, 7494, 3498),
    "PhonemeSpectra": _d("Audio", 11, 217, 39, 3315, 3353),
    "RacketSports": _d("HAR", 6, 30, 4, 151, 152),
    "SelfRegulationSCP1": _d("EEG", 6, 896, 2, 268, 293),
    "SelfRegulationSCP2": _d("EEG", 7, 1152, 2, 200, 180),
    "SpokenArabicDigits": _d("Audio", 13, 93, 10, 6599, 2199),
    "StandWalkJump": _d("ECG", 4, 2500, 3, 12, 15),
    "UWaveGestureLibrary": _d("HAR", 3, 315, 8, 120, 320),
}

#: the fields of a row that a preparation compares with what it read
CHECKED_FIELDS = ("n_train", "n_test", "C", "L", "classes")

#: the rows by benchmark name
CATALOG = {"uea": UEA_DATASETS}
