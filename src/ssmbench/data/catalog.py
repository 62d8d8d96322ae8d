"""What is known about each dataset before it is fetched.

``UEA_DATASETS`` holds the 30 datasets of the UEA multivariate archive with the figures of
Bagnall et al., "The UEA multivariate time series classification archive, 2018"
(arXiv:1811.00075), Table 1: domain ("type" there; EEG/MEG written "EEG", audio spectra
"Audio"), channels ``C``, series length ``L`` (the maximum for the unequal-length sets),
``classes``, ``n_train``, ``n_test``. A field we are not sure of is left out rather than
guessed (InsectWingbeat's length and split sizes differ between archive releases).
The prepared ``meta.json`` holds the values actually read from the files; these are for
planning (batch sizes, resources), the report's domain grouping, and a check of what
was read (:func:`compare_with_catalog`).

**Checked against the data.** Preparing a UEA or MONSTER dataset compares what its files
hold with its entry (:data:`CHECKED_FIELDS`): for UEA a difference is an error (a ``.ts``
file cut short at a line end reads as fewer rows and raises nothing else), for MONSTER a
recorded warning. A difference that is known and accepted is written into the entry as
``expected_differences``: ``{field: {"data": the value the files hold, "reason": why}}``;
the value is pinned, so another value is still a difference. No entry lists one: the UEA
sets checked against the archive's files agree with their entries in every field.

``MONSTER_DATASETS`` holds the 29 MONSTER datasets of the MS4N study, grouped by domain as
the MS4N paper's Table 4 groups them (its "SI" column is ``"Satellite"`` here). ``N``
(examples), ``C``, ``L`` and ``classes`` are those of the MONSTER paper, Dempster et al.,
"MONSTER: Monash Scalable Time Series Evaluation Repository", arXiv:2502.15122v1, Table 1
(read from a verbatim copy of the arXiv HTML table); the Hub dataset cards of AudioMNIST,
LakeIce and TimeSen2Crop were read as well and agree, except where ``notes`` says otherwise.
``aliases`` are the other spellings met in the MONSTER paper and in the MONSTER
benchmark repository's results workbook (github Navidfoumani/monster, per-fold results:
S2Agri-19/44 for the Hub's -17/-34, Tiselac2 for Tiselac, DreamerA/V and Crowdsourced
spelled two ways).

The TIDES study's datasets (``PHYSIOME_DATASETS``, ``SYNTHETIC_DATASETS``,
``UEA_DROP_DATASETS``) carry the figures their generators and sources fix before any data
exist; a figure that only the prepared data give is ``None``. ``PHYSIOME_ODE_DATASETS``
are the official Physiome-ODE archive's 50 datasets by leaderboard code
(``ssmbench.data.physiome.official``): ``C`` is the model's number of states
(Top50_final.csv); ``N`` and ``L`` are upper bounds before download (2000 simulated
instances before the |z| > 10 drop; at most 50 observed + 49 forecast steps),
each fold's own are in its prepared ``meta.json``.

:func:`catalog` returns every dataset of both studies as :class:`CatalogEntry` rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.models import HOD01_SOURCE_URL, OWN_MODEL_DIR
from ssmbench.data.physiome.official import OFFICIAL_DATASETS


def _d(domain, C, L, classes, n_train, n_test):
    return {
        "domain": domain,
        "C": C,
        "L": L,
        "classes": classes,
        "n_train": n_train,
        "n_test": n_test,
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
    "InsectWingbeat": {"domain": "Audio", "C": 200, "classes": 10},
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


UEA_SOURCE = "https://www.timeseriesclassification.com/"
UEA_REF = "https://arxiv.org/abs/1811.00075 (Table 1)"

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

PHYSIOME_SOURCE = "https://zenodo.org/records/11492058"


def _t(domain, task, C=None, L=None, classes=None, N=None, source=None, ref=None, notes=""):
    return {
        "domain": domain,
        "task": task,
        "N": N,
        "C": C,
        "L": L,
        "classes": classes,
        "source": source,
        "ref": ref,
        "aliases": (),
        "notes": notes,
    }


# Physiome-ODE regression (TIDES): one entry per model we generate (ssmbench.data.physiome):
# the myokit-shipped ones and our own (_PHYSIOME_OWN: the model file ships with ssmbench,
# its ref is the reference model it transcribes). C = the model's state variables; N and L
# are what the default
# settings give (2000 instances simulated, seed 0; N = 2000 minus the instances dropped for
# |z| > 10; L = the longest row once the steps with nothing observed are removed, out of
# 50 observed + 49 forecast grid steps), as printed by benchmarks/bench_physiome.py.
_PHYSIOME_NOTES = (
    "generated by ssmbench.data.physiome from {file}: {what}; perturbed initial "
    "states and constants, first half observed, second half forecast, z-scored, 80 % of "
    "values hidden, noise 0.05, 5 folds of 70/20/10 (Physiome-ODE protocol). {settings}"
)
_PHYSIOME_ROWS = {
    # name: (N, C, L, model file, what, settings)
    "HodgkinHuxley1952": (
        2000,
        4,
        74,
        "BioModels SBML BIOMD0000000020 (tests/data/formats/sbml/HodgkinHuxley.xml)",
        "squid axon, 1952 conventions, no stimulus",
        "Horizon 30 ms, d_states 0.5, d_constants 0.3 (the reference's "
        "hodgkin_huxley_1952_variant01).",
    ),
    "Noble1962": (
        2000,
        4,
        74,
        "noble-1962.mmt",
        "Purkinje pacemaker",
        "Horizon 2000 ms, d_states = d_constants = 0.1 (ours: not in the reference's 50).",
    ),
    "BeelerReuter1977": (
        2000,
        8,
        92,
        "beeler-1977-model.mmt + beeler-1977-protocol.mmt",
        "ventricular myocyte paced at 1 Hz",
        "Horizon 2000 ms, d_states = d_constants = 0.1 (ours: not in the reference's 50).",
    ),
    "DiFrancescoNoble1985": (
        1990,
        16,
        99,
        "dn-1985-normalised.mmt",
        "Purkinje pacemaker with ionic concentrations",
        "Horizon 10000 ms, d_states = d_constants = 0.1 (the reference's "
        "difrancesco_noble_1985); every state is a target (the reference scores its top 10).",
    ),
    "LuoRudy1991": (
        2000,
        8,
        94,
        "lr-1991.mmt",
        "ventricular myocyte paced at 1 Hz",
        "Horizon 2000 ms, d_states = d_constants = 0.1 (ours: not in the reference's 50).",
    ),
    "HOD01": (
        2000,
        4,
        63,
        f"{OWN_MODEL_DIR}/hodgkin_huxley_1952_variant01.mmt",
        "the reference's hodgkin_huxley_1952_variant01 model (Physiome-ODE @4829169) "
        "transcribed to myokit: squid axon, 1952 conventions, E_R = 0, its 8 perturbed "
        "constants, a -20 uA/cm2 pulse for 0.5 ms at t = 10 ms",
        "Horizon 30 ms, d_states 0.5, d_constants 0.3, 100 points from a random start "
        "(the reference's HOD01 row and generate_benchmark.py); our own draws and solver "
        "(CVODES), so not the leaderboard's test set.",
    ),
}
#: the models whose file is ours (ssmbench's package-data), with the reference it follows
_PHYSIOME_OWN = {"HOD01": HOD01_SOURCE_URL}
PHYSIOME_DATASETS: dict[str, dict] = {
    name: _t(
        "Physiome",
        "regression",
        C=C,
        L=L,
        N=N,
        source=PHYSIOME_SOURCE,
        ref=_PHYSIOME_OWN.get(name, PHYSIOME_SOURCE),
        notes=_PHYSIOME_NOTES.format(
            file=f"ssmbench's {file}" if name in _PHYSIOME_OWN else f"myokit's {file}",
            what=what,
            settings=settings,
        ),
    )
    for name, (N, C, L, file, what, settings) in _PHYSIOME_ROWS.items()
}

# The official archive's 50 datasets (mode zenodo): N and L are upper bounds, not counts.
_PHYSIOME_ODE_N, _PHYSIOME_ODE_L = 2000, 99
PHYSIOME_ODE_DATASETS: dict[str, dict] = {
    code: _t(
        "Physiome",
        "regression",
        C=row["n_states"],
        L=_PHYSIOME_ODE_L,
        N=_PHYSIOME_ODE_N,
        source=PHYSIOME_SOURCE,
        ref="https://github.com/kloetergensc/Physiome-ODE (resources/Top50_final.csv, README "
        "leaderboard)",
        notes=f"the official archive's final/{row['dataset']}/ ({row['domain']}; JGD "
        f"{row['jgd']:.4g}), 5 independent 70/20/10 folds, each prepared on its own; N "
        f"(2000 before the |z| > 10 drop) and L (50 + 49 steps) are upper bounds before "
        f"download.",
    )
    for code, row in OFFICIAL_DATASETS.items()
}

SYNTHETIC_DATASETS: dict[str, dict] = {
    "FadingFlash": _t(
        "Synthetic",
        "regression",
        C=4,
        L=40,
        N=120_000,
        source="generated",
        ref="TIDES paper: the Fading Flash task (github.com/TaylanSoydan/TIDES fading_flash/)",
        notes="generated by ssmbench; N at the generator's defaults (100,000 training rows "
        "and 2,000 per each of the 10 test Δ).",
    ),
    "FadingFlashNoisy": _t(
        "Synthetic",
        "regression",
        C=4,
        L=40,
        N=120_000,
        source="generated",
        ref="TIDES paper: the Fading Flash task, trained on noisy rows (fading_flash/)",
        notes="generated by ssmbench: training inputs + N(0, 0.2²), targets + N(0, 0.05²), "
        "test sets clean; N at the generator's defaults.",
    ),
}

_EIGENWORMS = UEA_DATASETS["EigenWorms"]
UEA_DROP_DATASETS: dict[str, dict] = {
    "EigenWormsDrop": _t(
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
    "BasicMotionsDrop": _t(
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
    name: _t(
        UEA_DATASETS[name]["domain"],
        "classification",
        C=UEA_DATASETS[name]["C"],
        L=UEA_DATASETS[name]["L"],
        classes=UEA_DATASETS[name]["classes"],
        N=n,
        source=f"derived from uea/{name}",
        ref="Log-NCDE benchmark (Walker et al. 2024), as the TIDES paper's UEA table",
        notes="TRAIN and TEST pooled, exact duplicates removed, one 70/15/15 split per "
        "Log-NCDE seed (ssmbench.data.uea6).",
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

#: The fields of an entry that a preparation compares with what it read, per benchmark.
CHECKED_FIELDS: dict[str, tuple[str, ...]] = {
    "uea": ("n_train", "n_test", "C", "L", "classes"),
    "monster": ("N", "C", "L", "classes"),
}

_CATALOGS = {
    "uea": UEA_DATASETS,
    "monster": MONSTER_DATASETS,
    "physiome": PHYSIOME_DATASETS,
    "synthetic": SYNTHETIC_DATASETS,
    "uea_drop": UEA_DROP_DATASETS,
    "uea6": UEA6_DATASETS,
    "physiome_ode": PHYSIOME_ODE_DATASETS,
}
BENCHMARKS: tuple[str, ...] = tuple(_CATALOGS)


@dataclass(frozen=True)
class CatalogEntry:
    """One dataset of either study, as known before it is fetched (``None``: not known)."""

    name: str
    benchmark: str
    domain: str
    task: str
    N: int | None
    C: int | None
    L: int | None
    n_classes: int | None
    source: str | None
    ref: str | None
    aliases: tuple[str, ...] = ()
    notes: str = ""


def _entry(benchmark: str, name: str, info: dict) -> CatalogEntry:
    if benchmark == "uea":
        n_train, n_test = info.get("n_train"), info.get("n_test")
        return CatalogEntry(
            name=name,
            benchmark=benchmark,
            domain=info["domain"],
            task="classification",
            N=n_train + n_test if n_train is not None and n_test is not None else None,
            C=info.get("C"),
            L=info.get("L"),
            n_classes=info.get("classes"),
            source=UEA_SOURCE,
            ref=UEA_REF,
            notes="" if "L" in info else "L and split sizes differ between archive releases.",
        )
    return CatalogEntry(
        name=name,
        benchmark=benchmark,
        domain=info["domain"],
        task=info.get("task", "classification"),
        N=info.get("N"),
        C=info.get("C"),
        L=info.get("L"),
        n_classes=info.get("classes"),
        source=info.get("source"),
        ref=info.get("ref"),
        aliases=tuple(info.get("aliases", ())),
        notes=info.get("notes", ""),
    )


def _match(kind: str, value: str, known: list[str]) -> str:
    for k in known:
        if k.lower() == value.lower():
            return k
    raise DataError(f"unknown {kind} {value!r}; known {kind}s: {', '.join(known)}")


def catalog(benchmark: str | None = None, domain: str | None = None) -> list[CatalogEntry]:
    """Every dataset of both studies (UEA, MONSTER, the TIDES tasks), in benchmark order.

    ``benchmark`` and ``domain`` filter (case-insensitive); an unknown value raises
    :class:`DataError` naming the known ones.
    """
    entries = [
        _entry(bench, name, info)
        for bench, table in _CATALOGS.items()
        for name, info in table.items()
    ]
    if benchmark is not None:
        benchmark = _match("benchmark", benchmark, list(BENCHMARKS))
        entries = [e for e in entries if e.benchmark == benchmark]
    if domain is not None:
        domains = sorted({info["domain"] for t in _CATALOGS.values() for info in t.values()})
        domain = _match("domain", domain, domains)
        entries = [e for e in entries if e.domain == domain]
    return entries


def known_datasets(benchmark: str) -> list[str]:
    """Names of the datasets of ``benchmark`` that the catalog describes, sorted."""
    try:
        return sorted(_CATALOGS[benchmark])
    except KeyError:
        raise DataError(
            f"benchmark {benchmark!r}: no dataset catalog for it; known benchmarks: "
            f"{sorted(_CATALOGS)}. Check the benchmark name in params.yaml."
        ) from None


def domain_of(benchmark: str, name: str, default: str = "Other") -> str:
    """The catalog's domain of a dataset (or of one of its aliases), ``default`` when the
    catalog lacks it."""
    table = _CATALOGS.get(benchmark, {})
    if name not in table:
        name = next((k for k, v in table.items() if name in v.get("aliases", ())), name)
    return table.get(name, {}).get("domain", default)


def compare_with_catalog(benchmark: str, name: str, read: dict[str, int]) -> dict:
    """What was read from a dataset's files (``read``: a value per field of
    :data:`CHECKED_FIELDS`) against its catalog entry.

    Returns ``{"entry": "<benchmark>/<name>" (None when the catalog has no such entry),
    "compared": [the fields the entry gives], "differences": [{"field", "catalog", "data",
    "reason"}]}``; ``reason`` is the entry's ``expected_differences`` reason where it
    expects exactly that value, else None (an unexpected difference). A field the entry
    leaves out (not known, e.g. InsectWingbeat's L) is not compared.
    """
    info = _CATALOGS.get(benchmark, {}).get(name)
    if info is None:
        return {"entry": None, "compared": [], "differences": []}
    expected = info.get("expected_differences") or {}
    compared, differences = [], []
    for field in CHECKED_FIELDS.get(benchmark, ()):
        want, got = info.get(field), read.get(field)
        if want is None or got is None:
            continue
        compared.append(field)
        if want != got:
            known = expected.get(field) or {}
            reason = known.get("reason") if known.get("data") == got else None
            differences.append({"field": field, "catalog": want, "data": got, "reason": reason})
    return {"entry": f"{benchmark}/{name}", "compared": compared, "differences": differences}
