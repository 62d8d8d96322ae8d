"""HOD01: our generated twin of the Physiome-ODE leaderboard's hodgkin_huxley_1952_variant01,
from ssmbench's own myokit file (``ssmbench/data/physiome/model_files/``), transcribed from
github kloetergensc/Physiome-ODE @4829169
``models/electrophysiology/hodgkin_huxley_1952_variant01/model.py``.

The facts checked here come from that file and the reference's generator: 4 states with
initial values 0, 0.05, 0.6, 0.325 (model.py l.45-52); 8 constants, every entry of
``initConsts()``'s constants array, each drawn in ``x (1 +- d_constants)`` by
``data_creation/generate.py`` l.44-47 (E_R, Cm, g_Na, g_K, g_L, E_Na, E_K, E_L; l.46-56);
the stimulus -20 uA/cm2 for 10 <= t <= 10.5 ms written with literals in ``computeRates``
(l.73), so never perturbed; settings: the HOD01 row of Top50_final.csv and
``generate_benchmark.py``'s window (N_t 100, rand_start True, l.26, l.29)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from ssmbench.data.checksums import sha256_file
from ssmbench.data.errors import DataError
from ssmbench.data.physiome import (
    PHYSIOME_MODELS,
    PINNED_SHA256,
    fetch_physiome,
    load_model_files,
    locate_physiome,
    myokit_models,
    prepare_physiome,
    resolve_settings,
)
from ssmbench.data.physiome.catalog import PHYSIOME_DATASETS
from ssmbench.data.physiome.myokit_models import import_myokit, package_file, perturbable_constants
from ssmbench.data.physiome.zenodo import zenodo_dataset
from ssmbench.data.provenance import PROVENANCE
from ssmbench.data.store import open_fold

NAME = "HOD01"
ENTRY = PHYSIOME_MODELS[NAME]
REL = ENTRY["files"]["model"]
#: the reference's 4 states (model.py l.15, l.24-25, l.32) and initial values (l.45-52)
STATES = {
    "membrane.V": 0.0,
    "sodium_channel_m_gate.m": 0.05,
    "sodium_channel_h_gate.h": 0.6,
    "potassium_channel_n_gate.n": 0.325,
}
#: the 8 constants the reference perturbs (its constants array, model.py l.16-36, l.46-56;
#: generate.py l.44-47), with their unperturbed values (E_Na, E_K, E_L from E_R = 0)
CONSTANTS = {
    "membrane.E_R": 0.0,
    "membrane.Cm": 1.0,
    "sodium_channel.g_Na": 120.0,
    "potassium_channel.g_K": 36.0,
    "leakage_current.g_L": 0.3,
    "sodium_channel.E_Na": -115.0,
    "potassium_channel.E_K": 12.0,
    "leakage_current.E_L": -10.613,
}
N_SMALL = 40
SMALL = {"source": "physiome", "generator": {"n_instances": N_SMALL}}


def _row() -> dict:
    ref = resources.files("ssmbench").joinpath("reference", "physiome_top50_config.csv")
    with ref.open("r", encoding="utf-8", newline="") as fh:
        rows = {r["code"]: r for r in csv.DictReader(fh)}
    return rows[NAME]


def _model():
    model, protocol = load_model_files(ENTRY, package_file(REL, "ssmbench").parent)
    return model, protocol


# --------------------------------------------------------------------------- settings
def test_settings_equal_the_csv_row():
    row = _row()
    cfg = resolve_settings(NAME, {})
    assert row["dataset"] == ENTRY["official"] == "hodgkin_huxley_1952_variant01"
    assert cfg["horizon"] == float(row["T"]) == 30.0
    assert cfg["n_time_points"] == int(row["N_t"]) == 100
    assert cfg["d_states"] == float(row["d_states"]) == 0.5
    assert cfg["d_constants"] == float(row["d_constants"]) == 0.3
    # the row's rand_start False is the tuning runs' (best_config.json: total_samples 100);
    # the archive's 2000 instances: generate_benchmark.py l.29 rand_start True
    assert row["rand_start"] == "False" and cfg["random_start"] is True
    assert cfg["n_instances"] == 2000 and cfg["mode"] == "generate"
    # params.yaml may still override it, per dataset
    over = {"generator": {"models": {NAME: {"horizon": 12.0}}}}
    assert resolve_settings(NAME, over)["horizon"] == 12.0


def test_catalog_and_zenodo_counterpart():
    info = PHYSIOME_DATASETS[NAME]
    assert (info["C"], info["task"], info["domain"]) == (4, "regression", "Physiome")
    assert list(PHYSIOME_DATASETS)[-1] == NAME == list(PHYSIOME_MODELS)[-1]
    locate_physiome(NAME, {})
    # in mode zenodo the same name is the archive's own HOD01 folder
    cfg = resolve_settings(NAME, {"mode": "zenodo"})
    assert zenodo_dataset(NAME, cfg) == "hodgkin_huxley_1952_variant01"


# --------------------------------------------------------------------------- the model
def test_states_and_the_eight_perturbed_constants():
    row = _row()
    model, protocol = _model()
    states = [s.qname() for s in model.states()]
    assert states == list(STATES) and len(states) == int(row["n_states"])
    assert model.initial_values(as_floats=True) == list(STATES.values())
    consts = perturbable_constants(model)
    assert sorted(v.qname() for v in consts) == sorted(CONSTANTS)
    assert len(consts) == int(row["n_constants"]) == 8
    for v in consts:
        assert float(v.eval()) == CONSTANTS[v.qname()], v.qname()
    # the stimulus is no constant: its level is bound to the protocol, its amplitude a literal
    assert model.get("environment.pace").binding() == "pace"
    assert protocol is not None and len(protocol.events()) == 1
    (event,) = protocol.events()
    assert (event.level(), event.start(), event.duration(), event.period()) == (1, 10, 0.5, 0)
    model.check_units(import_myokit().UNIT_STRICT)


def _hh_rates(y, c, i_stim):
    """The reference's rates (model.py l.61-74), written out from the 1952 formulas."""
    V, m, h, n = y
    am = 0.1 * (V + 25) / (math.exp((V + 25) / 10) - 1)
    bm = 4 * math.exp(V / 18)
    ah = 0.07 * math.exp(V / 20)
    bh = 1 / (math.exp((V + 30) / 10) + 1)
    an = 0.01 * (V + 10) / (math.exp((V + 10) / 10) - 1)
    bn = 0.125 * math.exp(V / 80)
    i_na = c["sodium_channel.g_Na"] * m**3 * h * (V - c["sodium_channel.E_Na"])
    i_k = c["potassium_channel.g_K"] * n**4 * (V - c["potassium_channel.E_K"])
    i_l = c["leakage_current.g_L"] * (V - c["leakage_current.E_L"])
    dv = -(-i_stim + i_na + i_k + i_l) / c["membrane.Cm"]
    return [dv, am * (1 - m) - bm * m, ah * (1 - h) - bh * h, an * (1 - n) - bn * n]


@pytest.mark.parametrize("pace", [0.0, 1.0])
@pytest.mark.parametrize(
    "state", [[0.0, 0.05, 0.6, 0.325], [-7.5, 0.2, 0.4, 0.5], [-95.0, 0.9, 0.1, 0.7], [20, 0, 1, 0]]
)
def test_rates_are_the_references(state, pace):
    model, _ = _model()
    got = model.evaluate_derivatives(state, inputs={"pace": pace})
    want = _hh_rates(state, CONSTANTS, -20.0 * pace)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def _run(protocol_on: bool) -> tuple[np.ndarray, np.ndarray]:
    myokit = import_myokit()
    model, protocol = _model()
    sim = myokit.Simulation(model, protocol if protocol_on else None)
    sim.set_tolerance(abs_tol=1e-6, rel_tol=1e-6)
    times = np.arange(0.0, 30.0, 0.05)
    d = sim.run(30.0, log=["membrane.V"], log_times=times)
    return times, np.asarray(d["membrane.V"])


def test_unperturbed_fires_after_the_pulse_and_not_before():
    t, V = _run(protocol_on=True)
    # 1952 convention: a depolarisation is negative; rest is V = 0
    assert np.abs(V[t < 10.0]).max() < 1.0  # at rest until the pulse
    after = (t > 10.5) & (t < 16.0)
    assert V[after].min() < -90.0  # the action potential (peak ~ -104 mV at ~12 ms)
    assert 10.5 < t[np.argmin(V)] < 14.0
    assert np.abs(V[t > 25.0]).max() < 15.0  # and back towards rest
    # without the pulse the unperturbed model stays at rest
    _, quiet = _run(protocol_on=False)
    assert np.abs(quiet).max() < 1.0


# --------------------------------------------------------------------------- generated
@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hod01")
    fetch_physiome(NAME, root / "raw", SMALL)
    folder = prepare_physiome(NAME, root / "raw", root / "prepared" / "physiome", SMALL)
    return root, folder


def test_small_dataset_prepares_with_the_four_states(generated):
    root, folder = generated
    ds = open_fold(folder, 0)
    meta = ds.meta
    assert meta["channels"] == list(STATES) and meta["C"] == 4
    assert meta["N"] + meta["n_dropped"] + meta["n_failed"] == N_SMALL
    X = np.load(ds.path / "X.npy")
    assert X.shape == (meta["N"], 4, meta["L"]) and np.isfinite(X).all()
    assert sorted(meta["model"]["perturbed_constants"]) == sorted(CONSTANTS)
    assert meta["model"]["official_counterpart"] == "hodgkin_huxley_1952_variant01"
    assert meta["generation"]["horizon"] == 30.0 and meta["generation"]["random_start"] is True
    prov = json.loads((root / "raw" / NAME / PROVENANCE).read_text())
    fname = Path(REL).name
    assert prov["source"] == "ssmbench" and prov["model_files"] == {fname: f"ssmbench/{REL}"}
    assert prov["raw_files"] == {f"{NAME}/{fname}": PINNED_SHA256[REL]}
    assert "kloetergensc/Physiome-ODE" in prov["source_url"]


# --------------------------------------------------------------------------- the pin
def test_the_pin_is_the_shipped_file():
    assert sha256_file(package_file(REL, "ssmbench")) == PINNED_SHA256[REL]


def _changed_copy(tmp_path, monkeypatch) -> Path:
    changed = tmp_path / "pkg" / REL
    changed.parent.mkdir(parents=True)
    shutil.copyfile(package_file(REL, "ssmbench"), changed)
    text = changed.read_text(encoding="utf-8").replace(
        "g_Na = 120 [mS/cm^2]", "g_Na = 12 [mS/cm^2]"
    )
    changed.write_text(text, encoding="utf-8")
    real = myokit_models.package_file

    def fake(rel, package="myokit"):
        return changed if (rel, package) == (REL, "ssmbench") else real(rel, package)

    monkeypatch.setattr(myokit_models, "package_file", fake)
    return changed


def test_the_pin_refuses_a_changed_file(tmp_path, monkeypatch):
    changed = _changed_copy(tmp_path, monkeypatch)
    with pytest.raises(DataError, match="PINNED_SHA256") as info:
        fetch_physiome(NAME, tmp_path / "raw", SMALL)
    msg = str(info.value)
    assert str(changed) in msg and sha256_file(changed) in msg and PINNED_SHA256[REL] in msg
    assert "git checkout" in msg
    assert not (tmp_path / "raw" / NAME / PROVENANCE).exists()


def test_a_copy_of_another_version_is_fetched_again(tmp_path):
    raw = tmp_path / "raw"
    fetch_physiome(NAME, raw, SMALL)
    dest = raw / NAME
    fname = Path(REL).name
    # an earlier version of our file, recorded with its own (then valid) sha256
    old = (dest / fname).read_text(encoding="utf-8") + "\n# an earlier version\n"
    (dest / fname).write_text(old, encoding="utf-8")
    prov = json.loads((dest / PROVENANCE).read_text())
    prov["raw_files"][f"{NAME}/{fname}"] = sha256_file(dest / fname)
    (dest / PROVENANCE).write_text(json.dumps(prov))
    again = fetch_physiome(NAME, raw, SMALL)
    assert again["raw_files"] == {f"{NAME}/{fname}": PINNED_SHA256[REL]}
    assert sha256_file(dest / fname) == PINNED_SHA256[REL]


def test_a_missing_own_file_is_named(tmp_path, monkeypatch):
    gone = tmp_path / "nowhere" / REL
    monkeypatch.setattr(myokit_models, "package_file", lambda rel, package="myokit": gone)
    for call in (lambda: locate_physiome(NAME, {}), lambda: fetch_physiome(NAME, tmp_path, {})):
        with pytest.raises(DataError, match="package-data") as info:
            call()
        assert str(gone) in str(info.value) and "pip install -e ." in str(info.value)
