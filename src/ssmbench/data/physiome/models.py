"""The model table of Physiome-ODE: our dataset name -> the model file(s) myokit ships in its
package, the per-model settings (horizon, perturbations), their origin, and the sha256 of
each file as shipped by the pinned myokit.

The state variables of the model are the channels (``C`` = number of states).

**Models** (``PHYSIOME_MODELS``): real published models that myokit ships in its
package (copied into the raw folder, sha256 recorded and checked against the copy of
myokit 1.39.2):

* ``HodgkinHuxley1952``: BioModels BIOMD0000000020 (SBML, myokit's
  ``tests/data/formats/sbml/HodgkinHuxley.xml``), read with myokit's SBML importer. It
  keeps the 1952 paper's conventions (V is the depolarisation from rest, sign reversed)
  and has no stimulus: excitation comes from the perturbed constants and states, as in
  the reference, whose ``hodgkin_huxley_1952_variant01`` (a CellML variant we cannot
  read offline) is one of its 50 datasets. Its settings are that row's of
  ``Top50_final.csv``: horizon 30 ms, ``d_states`` 0.5, ``d_constants`` 0.3.
  (Hodgkin-Huxley *is* shipped as a model file, so no model of ours was written.)
* ``DiFrancescoNoble1985``: ``tests/data/dn-1985-normalised.mmt`` (CellML-derived, time
  in ms). The reference's ``difrancesco_noble_1985`` row: T = 10 s -> horizon 10000 ms,
  ``d_states`` 0.1, ``d_constants`` 0.1 (its ``Time Unit`` column says seconds).
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


def _m(files, fmt, horizon, d_states, d_constants, official, settings_from, reference, notes):
    return {
        "files": files,  # role -> path inside the installed myokit package
        "format": fmt,
        "defaults": {"horizon": horizon, "d_states": d_states, "d_constants": d_constants},
        "time_unit": "ms",
        "official": official,  # the reference's dataset of the same model, if any
        "settings_from": settings_from,
        "reference": reference,
        "notes": notes,
    }


#: our dataset name -> where its model file(s) come from (paths inside the myokit
#: package), the per-model settings and their origin. ``sha256`` of each file as shipped
#: by myokit 1.39.2 (checked on fetch).
PHYSIOME_MODELS: dict[str, dict] = {
    "HodgkinHuxley1952": _m(
        {"model": "tests/data/formats/sbml/HodgkinHuxley.xml"},
        "sbml",
        30.0,
        0.5,
        0.3,
        "hodgkin_huxley_1952_variant01",
        "Top50_final.csv row hodgkin_huxley_1952_variant01 (T=30, ds=0.5, dc=0.3)",
        "Hodgkin & Huxley 1952, J Physiol 117:500-544; BioModels BIOMD0000000020",
        "1952 conventions (V = depolarisation from rest, sign reversed); no stimulus",
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
        "Top50_final.csv row difrancesco_noble_1985 (T=10 s, ds=0.1, dc=0.1)",
        "DiFrancesco & Noble 1985, Phil Trans R Soc B 307:353-398 (CellML, C. Lloyd)",
        "Purkinje pacemaker (period ~1.85 s); protocol level 0 (no stimulus); time in ms",
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
}

#: sha256 of each model file as shipped in myokit 1.39.2
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
}
