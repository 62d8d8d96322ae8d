"""The model table of Physiome-ODE: our dataset name -> its model file(s) (shipped in myokit's
package, or written by us and shipped in ours), the per-model settings (horizon,
perturbations), their origin, and the sha256 of each file as shipped by the pinned myokit
or by ssmbench.

The state variables of the model are the channels (``C`` = number of states).

**Models** (``PHYSIOME_MODELS``): real published models that myokit ships in its
package (copied into the raw folder, sha256 recorded and checked against the copy of
myokit 1.39.2):

* ``HodgkinHuxley1952``: BioModels BIOMD0000000020 (SBML, myokit's
  ``tests/data/formats/sbml/HodgkinHuxley.xml``), read with myokit's SBML importer. It
  keeps the 1952 paper's conventions (V is the depolarisation from rest, sign reversed)
  and has no stimulus: excitation comes from the perturbed constants (V0 = 0 stays 0).
  The reference's ``hodgkin_huxley_1952_variant01`` (HOD01) is the same equations in
  another parametrisation (kloetergensc/Physiome-ODE
  ``models/electrophysiology/hodgkin_huxley_1952_variant01/model.py``): 8 constants
  (E_R = 0, Cm, g_Na, g_K, g_L and E_Na, E_K, E_L relative to rest, perturbed
  independently, l.46-56), initial m, h, n = 0.05, 0.6, 0.325, and a stimulus of
  -20 uA/cm2 for 10 <= t <= 10.5 ms (l.73). Ours perturbs 10 constants (E_Na, E_K, E_L
  absolute, E_R = -75 entering every driving force, the applied current I = 0 and the
  SBML compartment size, both inert). Its settings are HOD01's: horizon 30 ms,
  ``d_states`` 0.5, ``d_constants`` 0.3 (Top50_final.csv), 100 points with a random window
  start (generate_benchmark.py l.26, l.29). (Hodgkin-Huxley *is* shipped as a model file,
  so no model of ours was written.)
* ``DiFrancescoNoble1985``: ``tests/data/dn-1985-normalised.mmt`` (CellML-derived, time
  in ms). The reference's ``difrancesco_noble_1985`` row: T = 10 s -> horizon 10000 ms,
  ``d_states`` 0.1, ``d_constants`` 0.1 (its ``Time Unit`` column says seconds); 100
  points with a random window start (generate_benchmark.py l.26, l.29).
  Self-oscillating Purkinje fibre; the file's protocol has level 0 (no stimulus).
* ``Noble1962`` (``tests/data/noble-1962.mmt``, pacemaker, protocol level 0),
  ``BeelerReuter1977`` (``tests/data/beeler-1977-model.mmt`` paced by
  ``tests/data/beeler-1977-protocol.mmt``: 2 ms pulses every 1000 ms from 100 ms) and
  ``LuoRudy1991`` (``tests/data/lr-1991.mmt`` with its own protocol: 0.5 ms pulses every
  1000 ms from 1 ms) are *not* among the reference's 50 datasets (``Top50_final.csv``),
  so their settings are our choice: horizon 2000 ms (the window of
  ~1000 ms then holds one paced beat or about two Noble-1962 pacemaker beats, period
  ~565 ms) and ``d_states = d_constants = 0.1`` (the setting the reference chose for its
  other cardiac model of this family, DiFrancesco-Noble 1985).

**Model of ours** (``package: "ssmbench"``, the file in ``ssmbench/data/physiome/model_files/``,
its sha256 pinned in ``PINNED_SHA256`` like myokit's):

* ``HOD01``: the reference's own ``hodgkin_huxley_1952_variant01``, transcribed into myokit's
  .mmt syntax from kloetergensc/Physiome-ODE @4829169
  ``models/electrophysiology/hodgkin_huxley_1952_variant01/model.py`` (the file's header
  names what it took from where): its 4 states (V0 = 0, m, h, n = 0.05, 0.6, 0.325; l.45-52),
  its 8 constants, which are exactly what the reference's ``data_creation/generate.py``
  perturbs (every entry of ``initConsts()``'s constants array, l.39-47: E_R = 0, Cm, g_Na,
  g_K, g_L, and E_Na, E_K, E_L computed from E_R before the draw and drawn on their own,
  so literals here; l.46-56), its rates (l.61-74) and its stimulus of -20 uA/cm2 for
  10 <= t <= 10.5 ms (l.73: literals inside ``computeRates``, never perturbed). The pulse is
  a myokit protocol in the file (CVODES stops at its edges; an in-model piecewise pulse of
  0.5 ms can be stepped over), its amplitude a literal, so no stimulus parameter is
  perturbed, as in the reference. Settings: the HOD01 row of ``Top50_final.csv`` (T = 30 ms,
  ``d_states`` 0.5, ``d_constants`` 0.3) and generate_benchmark.py's window (100 points,
  random start, l.26, l.29). Left different: the solver (CVODES, no ``max_step``; the
  reference: LSODA, ``max_step=1``), our random streams, and a draw is redrawn on a solver
  failure only (the reference: on any warning too, ``warnings.filterwarnings("error")``).

Pacing: the cardiac models are paced with the protocol shipped with them (myokit's
event-based pacing, compiled with the model); the protocol is not perturbed (in the
reference, a CellML model's stimulus parameters are constants and are perturbed with the
rest). Perturbed constants are all literal constants of the model (``is_literal()``, not
bound to an external value), sorted by name; zero values stay zero, as in the reference.
"""

PAPER_URL = "https://arxiv.org/abs/2502.07489"
CODE_URL = "https://github.com/kloetergensc/Physiome-ODE"
GENERATE_CODE_URL = "https://github.com/lannguyen0910/Physiome-ODE (data_creation/generate.py)"
MYOKIT_PINNED = "1.39.2"
BENCHMARK = "physiome"
DOMAIN = "Physiome"


#: the window settings of every final dataset of the reference: ``N_t: 100`` and
#: ``rand_start: True`` (generate_benchmark.py l.26, l.29; the Top50_final.csv columns
#: ``rand_start: False`` and ``total_samples: 100`` are the tuning runs', evaluate.py l.70-75)
REFERENCE_WINDOW = {"n_time_points": 100, "random_start": True}


def _m(
    files,
    fmt,
    horizon,
    d_states,
    d_constants,
    official,
    settings_from,
    reference,
    notes,
    window=None,
    package="myokit",
    source_url=None,
):
    defaults = {"horizon": horizon, "d_states": d_states, "d_constants": d_constants}
    return {
        "files": files,  # role -> path inside the installed package named by "package"
        "package": package,  # "myokit" (its shipped files) or "ssmbench" (ours)
        "source_url": source_url,  # for the provenance; None: myokit's PyPI release
        "format": fmt,
        # settings.resolve_settings: over DEFAULTS, under params.yaml
        "defaults": {**defaults, **(window or {})},
        "time_unit": "ms",
        "official": official,  # the reference's dataset of the same model, if any
        "settings_from": settings_from,
        "reference": reference,
        "notes": notes,
    }


#: where our own model files lie inside the ssmbench package (package-data)
OWN_MODEL_DIR = "data/physiome/model_files"
#: the reference's model that HOD01 transcribes (for the provenance)
HOD01_SOURCE_URL = (
    "https://github.com/kloetergensc/Physiome-ODE/blob/4829169d44e432da40c6d2903425809d9989802a/"
    "models/electrophysiology/hodgkin_huxley_1952_variant01/model.py"
)

#: our dataset name -> where its model file(s) come from (paths inside the myokit
#: package, or inside ours for ``package: "ssmbench"``), the per-model settings and their
#: origin. ``sha256`` of each file as shipped (checked on fetch): ``PINNED_SHA256``.
PHYSIOME_MODELS: dict[str, dict] = {
    "HodgkinHuxley1952": _m(
        {"model": "tests/data/formats/sbml/HodgkinHuxley.xml"},
        "sbml",
        30.0,
        0.5,
        0.3,
        "hodgkin_huxley_1952_variant01",
        "Top50_final.csv row hodgkin_huxley_1952_variant01 (T=30, ds=0.5, dc=0.3); "
        "generate_benchmark.py (N_t=100, rand_start=True)",
        "Hodgkin & Huxley 1952, J Physiol 117:500-544; BioModels BIOMD0000000020",
        "1952 conventions (V = depolarisation from rest, sign reversed); no stimulus "
        "(HOD01's variant01 has a -20 uA/cm2 pulse at 10-10.5 ms); 10 perturbed constants "
        "(HOD01: 8)",
        REFERENCE_WINDOW,
    ),
    "Noble1962": _m(
        {"model": "tests/data/noble-1962.mmt"},
        "mmt",
        2000.0,
        0.1,
        0.1,
        None,
        "ours (not among the reference's 50): horizon 2000 ms, ds=dc=0.1",
        "Noble 1962, J Physiol 160:317-352 (CellML, C. Lloyd)",
        "Purkinje pacemaker (period ~565 ms); protocol level 0 (no stimulus)",
    ),
    "BeelerReuter1977": _m(
        {
            "model": "tests/data/beeler-1977-model.mmt",
            "protocol": "tests/data/beeler-1977-protocol.mmt",
        },
        "mmt",
        2000.0,
        0.1,
        0.1,
        None,
        "ours (not among the reference's 50): horizon 2000 ms, ds=dc=0.1",
        "Beeler & Reuter 1977, J Physiol 268:177-210",
        "paced: 2 ms pulses every 1000 ms from t = 100 ms (beeler-1977-protocol.mmt)",
    ),
    "DiFrancescoNoble1985": _m(
        {"model": "tests/data/dn-1985-normalised.mmt"},
        "mmt",
        10000.0,
        0.1,
        0.1,
        "difrancesco_noble_1985",
        "Top50_final.csv row difrancesco_noble_1985 (T=10 s, ds=0.1, dc=0.1); "
        "generate_benchmark.py (N_t=100, rand_start=True)",
        "DiFrancesco & Noble 1985, Phil Trans R Soc B 307:353-398 (CellML, C. Lloyd)",
        "Purkinje pacemaker (period ~1.85 s); protocol level 0 (no stimulus); time in ms",
        REFERENCE_WINDOW,
    ),
    "LuoRudy1991": _m(
        {"model": "tests/data/lr-1991.mmt"},
        "mmt",
        2000.0,
        0.1,
        0.1,
        None,
        "ours (not among the reference's 50): horizon 2000 ms, ds=dc=0.1",
        "Luo & Rudy 1991, Circ Res 68:1501-1526",
        "paced: 0.5 ms pulses every 1000 ms from t = 1 ms (the file's own protocol)",
    ),
    "HOD01": _m(
        {"model": f"{OWN_MODEL_DIR}/hodgkin_huxley_1952_variant01.mmt"},
        "mmt",
        30.0,
        0.5,
        0.3,
        "hodgkin_huxley_1952_variant01",
        "Top50_final.csv row hodgkin_huxley_1952_variant01 (T=30, ds=0.5, dc=0.3); "
        "generate_benchmark.py (N_t=100, rand_start=True)",
        "Hodgkin & Huxley 1952, J Physiol 117:500-544; Physiome-ODE "
        "models/electrophysiology/hodgkin_huxley_1952_variant01/model.py @4829169 (CellML "
        "export), transcribed by ssmbench",
        "the reference's HOD01 model: 1952 conventions with E_R = 0 and E_Na, E_K, E_L "
        "relative to rest; its 8 perturbed constants; -20 uA/cm2 for 0.5 ms at t = 10 ms as "
        "a myokit protocol (not perturbed, as in the reference); solver CVODES (reference: "
        "LSODA, max_step 1)",
        REFERENCE_WINDOW,
        package="ssmbench",
        source_url=HOD01_SOURCE_URL,
    ),
}

#: sha256 of each model file, keyed by its path inside its package: as shipped in myokit
#: 1.39.2, and (``OWN_MODEL_DIR``) as shipped in ssmbench. A change to one of our files
#: must come with its new sha256 here (fetch refuses the file otherwise).
PINNED_SHA256 = {
    "tests/data/formats/sbml/HodgkinHuxley.xml": (
        "d2a8ef81d27111f138e0778c70f820a4ee17508758ad86a8b9e1b569c3e949f4"
    ),
    "tests/data/noble-1962.mmt": "afc7dde4afa7d9c0737d6443c1496579cc6b5378c70b2863e9cf7b5439a146ad",
    "tests/data/beeler-1977-model.mmt": (
        "d04bd2733c9a2cd1bf4d6d073215b6951f7b305dca5d5e0e81b8cf69ced31eec"
    ),
    "tests/data/beeler-1977-protocol.mmt": (
        "07877bf50c6c15a22aabb23a7bca3f6a544d580a31bc364c2240dd556cf48468"
    ),
    "tests/data/dn-1985-normalised.mmt": (
        "29f34aa1e9b3cb6e6f53002811d055b9ce30d6ece5bfbe7c281c7ed6a3c4a4b0"
    ),
    "tests/data/lr-1991.mmt": "51096a0b6fc0118aabdfe94e186aefe56d2ffecf53949e3f628caa349b40d728",
    f"{OWN_MODEL_DIR}/hodgkin_huxley_1952_variant01.mmt": (
        "4001a77eccdcd8bdac269d8e33304d5b936390f6a816c138c24cf741f08ffa7e"
    ),
}
